"""dictionary step: the message's own identifiers and the institution / name / place lexicons."""
