"""Offline evaluation against gold: scoring, bootstrap CIs, the judge panel and the report. Not a step."""
