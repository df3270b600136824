"""Pure, synchronous, batch-capable steps over notes and spans. Never imports streams/."""

from processors.pipeline import (
    DEFAULT_STEPS,
    PIPELINE_VERSION,
    BuildContext,
    LeakFinding,
    Note,
    NoteError,
    Pipeline,
    PipelineConfig,
    Processor,
    Replacement,
    available_processors,
    build_processor,
    register,
)

__all__ = [
    "DEFAULT_STEPS", "PIPELINE_VERSION", "BuildContext", "LeakFinding", "Note", "NoteError", "Pipeline",
    "PipelineConfig", "Processor", "Replacement", "available_processors", "build_processor", "register",
]
