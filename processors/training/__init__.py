"""NER fine-tuning and feed-forward pruning. Not a step."""
