"""The decide step (``step.py``): a learned keep/drop decision over every candidate span, its features
(``features.py``), the cues of the old recovery rules (``cues.py``) and its model file (``model.py``,
``models/``). Training lives in ``processors.training.decider``."""
