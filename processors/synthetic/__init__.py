"""The synthetic clinical corpus generator (``generator``) and its word lists (``data``). Not a step."""
