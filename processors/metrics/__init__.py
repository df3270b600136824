"""metrics step: per-note recall proxy (``proxy``) and clinical information retention (``cir``); the step
itself in ``step``."""
