"""metrics step: per-note recall proxy and clinical information retention."""
