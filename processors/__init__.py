"""Pipeline steps: pure, synchronous, batch-capable functions of notes. Never imports ``streams``.

The steps, in their default order (``processors.pipeline.STEP_MODULES`` is the registry's table):

==========  ===========================  ===================================================================
step        where                        what it does
==========  ===========================  ===================================================================
regex       ``regex/``                   identifier shapes, one module per recognizer family
ner         ``ner/``                     fine-tuned transformer token classifier (``ner/models/``)
dictionary  ``dictionary/``              the message's own identifiers + institution / name / place lexicons
recovery    ``recovery.py``              un-tags certain medical terms and syntax; cuts edges off identifiers
decide      ``decide/``                  a learned, calibrated keep/drop decision over every candidate span
ensemble    ``ensemble.py``              overlap resolution (thresholds and votes when decide is off)
transform   ``transform/``               tag | per-patient surrogates | per-patient date shift
leakcheck   ``leakcheck.py``             re-scans the OUTPUT for identifiers
metrics     ``metrics/``                 recall proxy + clinical information retention per note
==========  ===========================  ===================================================================

Below the steps: ``pipeline.py`` (the Note, the Processor protocol, the registry, the Pipeline and the
policy steps share) and ``spans.py`` (span sources, overlap resolution, intervals, offset maps). A step
imports those, ``dictionaries`` and ``schemas``, never another step. Beside the steps, not steps:
``evaluation/`` (gold scoring, bootstrap, judges, report), ``synthetic/`` (the corpus generator) and
``training/`` (NER fine-tuning and pruning).
"""

from processors.pipeline import (
    DEFAULT_STEPS,
    PIPELINE_VERSION,
    STEP_MODULES,
    BuildContext,
    LeakFinding,
    Note,
    NoteError,
    Pipeline,
    PipelineConfig,
    Processor,
    Replacement,
    SharedPolicy,
    available_processors,
    build_processor,
    register,
)

__all__ = [
    "DEFAULT_STEPS", "PIPELINE_VERSION", "STEP_MODULES", "BuildContext", "LeakFinding", "Note", "NoteError",
    "Pipeline", "PipelineConfig", "Processor", "Replacement", "SharedPolicy", "available_processors",
    "build_processor", "register",
]
