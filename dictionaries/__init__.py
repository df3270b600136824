"""Vocabulary data (shipped lists), loaders, and builders for institution dictionaries."""
