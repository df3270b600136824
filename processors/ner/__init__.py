"""ner step: the fine-tuned transformer token classifier (``models/`` holds the shipped model)."""
