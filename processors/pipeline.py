"""The working note, the Processor protocol, the registry and the Pipeline.

A ``Note`` is immutable: each processor returns new notes (``dataclasses.replace``). Every span points
into the ORIGINAL text (``note.text``); only the transform step writes ``output``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from schemas.errors import ConfigError
from schemas.models import NoteIn, Span

logger = logging.getLogger(__name__)

PIPELINE_VERSION = "0.1.0"

#: Default step order. Detectors (regex, the shipped NER model, dictionaries) add candidate spans; recovery
#: drops medical terms among them; the ensemble merges what is left into one labelled span per region;
#: transform writes the output. Without a model (or for the fastest CPU path) drop "ner".
DEFAULT_STEPS: tuple[str, ...] = (
    "regex", "ner", "dictionary", "recovery", "ensemble", "transform", "leakcheck", "metrics",
)


@dataclass(frozen=True, slots=True)
class Replacement:
    """Where a span's replacement landed in the output: ``[out_start, out_end)`` in ``Note.output``."""

    out_start: int
    out_end: int
    span: Span


@dataclass(frozen=True, slots=True)
class LeakFinding:
    """A possible identifier found in the OUTPUT by the leak check. Offsets into ``Note.output``;
    ``kind`` is ``"message"`` (the message's own identifiers) or ``"shape"`` (an identifier shape)."""

    out_start: int
    out_end: int
    kind: str
    label: str


@dataclass(frozen=True, slots=True)
class NoteError:
    """A per-note failure as data (the stream routes it to the DLQ). ``reason`` holds no note text."""

    code: str
    error_type: str
    stage: str
    reason: str


@dataclass(frozen=True, slots=True)
class Note:
    """A note in flight through the pipeline."""

    input: NoteIn
    spans: tuple[Span, ...] = ()
    dropped: tuple[Span, ...] = ()
    output: str | None = None
    replacements: tuple[Replacement, ...] = ()
    leak: bool | None = None
    leak_findings: tuple[LeakFinding, ...] = ()
    error: NoteError | None = None
    note_pseudonym: str | None = None
    patient_pseudonym: str | None = None
    metrics: Any | None = None
    stage_ms: tuple[tuple[str, float], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.input.text

    @property
    def note_id(self) -> str:
        return self.input.note_id

    def replace(self, **changes: Any) -> Note:
        return dataclasses.replace(self, **changes)

    def add_spans(self, spans: Sequence[Span]) -> Note:
        return dataclasses.replace(self, spans=self.spans + tuple(spans))


@runtime_checkable
class Processor(Protocol):
    """One pipeline step. Must be pure with respect to its inputs and safe to call from a worker thread."""

    name: str

    def process_batch(self, notes: Sequence[Note]) -> list[Note]: ...


def default_cache_dir() -> Path:
    """``DEID_CACHE_DIR`` if set, else ``~/.cache/deidstream`` (derived vocabularies live here)."""
    env = os.environ.get("DEID_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "deidstream"


@dataclass(frozen=True)
class BuildContext:
    """What processors may need at construction: the HMAC secret, a cache folder, and the whole config."""

    secret: bytes | None = None
    secret_is_default: bool = True
    cache_dir: Path = field(default_factory=lambda: default_cache_dir())
    config: PipelineConfig | None = None


class ProcessorFactory(Protocol):
    def __call__(self, options: Mapping[str, Any], ctx: BuildContext) -> Processor: ...


_REGISTRY: dict[str, ProcessorFactory] = {}
_LAZY_MODULES: dict[str, str] = {
    "regex": "processors.regex.step",
    "dictionary": "processors.dictionary.step",
    "recovery": "processors.recovery",
    "ensemble": "processors.ensemble",
    "transform": "processors.transform.step",
    "leakcheck": "processors.leakcheck",
    "ner": "processors.ner.step",
    "llm": "processors.llm",
    "metrics": "processors.metrics.step",
    "presidio_spacy": "processors.presidio_spacy",
}

def register(name: str) -> Callable[[type[Any]], type[Any]]:
    """Class decorator: register a processor class by name.

    The class must have a nested pydantic ``Config`` model (its options, ``extra="forbid"``) and an
    ``__init__(self, config, ctx: BuildContext)``. It is built by ``build_processor(name, options, ctx)``.
    """

    def deco(cls: type[Any]) -> type[Any]:
        def factory(options: Mapping[str, Any], ctx: BuildContext) -> Processor:
            try:
                config = cls.Config.model_validate(dict(options))
            except Exception as exc:  # pydantic ValidationError; hide_input_in_errors on the models
                raise ConfigError(f"invalid options for processor {name!r}: {exc}") from None
            proc: Processor = cls(config, ctx)
            return proc

        _REGISTRY[name] = factory
        cls.name = name
        return cls

    return deco


def available_processors() -> list[str]:
    return sorted(set(_REGISTRY) | set(_LAZY_MODULES))


def build_processor(name: str, options: Mapping[str, Any], ctx: BuildContext) -> Processor:
    if name not in _REGISTRY and name in _LAZY_MODULES:
        import importlib

        importlib.import_module(_LAZY_MODULES[name])
    if name not in _REGISTRY:
        raise ConfigError(f"unknown processor {name!r}; available: {', '.join(available_processors())}")
    return _REGISTRY[name](options, ctx)


class PipelineConfig(BaseModel):
    """Which steps run, in which order, and each step's options (validated by the step's own Config)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    steps: tuple[str, ...] = DEFAULT_STEPS
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def config_hash(self) -> str:
        """Stable short hash of the effective config (no secrets in it)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


DEFAULT_SECRET = "deidstream-insecure-default-secret"


def make_context(
    config: PipelineConfig, secret: SecretStr | str | None = None, cache_dir: Path | None = None
) -> BuildContext:
    raw = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
    is_default = not raw or raw == DEFAULT_SECRET
    kwargs: dict[str, Any] = {}
    if cache_dir is not None:
        kwargs["cache_dir"] = cache_dir
    return BuildContext(
        secret=(raw or DEFAULT_SECRET).encode(), secret_is_default=is_default, config=config, **kwargs
    )


class Pipeline:
    """Runs processors in order over a batch. A processor that raises on a batch is retried note by
    note so only the failing note is marked (``Note.error``); later steps skip errored notes."""

    def __init__(self, processors: Sequence[Processor], config: PipelineConfig | None = None) -> None:
        self.processors = list(processors)
        self.config = config or PipelineConfig(steps=tuple(p.name for p in processors))

    @classmethod
    def from_config(
        cls, config: PipelineConfig | None = None, *, secret: SecretStr | str | None = None,
        cache_dir: Path | None = None,
    ) -> Pipeline:
        config = config or PipelineConfig()
        ctx = make_context(config, secret, cache_dir)
        procs = [build_processor(step, config.options.get(step, {}), ctx) for step in config.steps]
        return cls(procs, config)

    def run(self, inputs: Sequence[NoteIn]) -> list[Note]:
        return self.run_notes([Note(input=n) for n in inputs])

    def run_notes(self, notes: Sequence[Note]) -> list[Note]:
        current = list(notes)
        for proc in self.processors:
            current = self._run_step(proc, current)
        return current

    def _run_step(self, proc: Processor, notes: list[Note]) -> list[Note]:
        live_idx = [i for i, n in enumerate(notes) if n.error is None]
        if not live_idx:
            return notes
        live = [notes[i] for i in live_idx]
        t0 = time.perf_counter()
        try:
            done = proc.process_batch(live)
            if len(done) != len(live):
                raise RuntimeError("processor returned a different number of notes")
        except Exception as exc:
            logger.warning("processor %s failed on a batch of %d (%s); isolating per note",
                           proc.name, len(live), type(exc).__name__)
            done = [self._run_one(proc, n) for n in live]
        per_note_ms = (time.perf_counter() - t0) * 1000.0 / len(live)
        out = list(notes)
        for i, note in zip(live_idx, done, strict=True):
            out[i] = note.replace(stage_ms=note.stage_ms + ((proc.name, per_note_ms),))
        return out

    @staticmethod
    def _run_one(proc: Processor, note: Note) -> Note:
        try:
            (res,) = proc.process_batch([note])
            return res
        except Exception as exc:
            code = getattr(exc, "code", "E400")
            logger.error("processor %s failed on one note: %s (code %s)", proc.name, type(exc).__name__, code)
            return note.replace(
                error=NoteError(code=str(code), error_type=type(exc).__name__, stage=proc.name,
                                reason=f"processor {proc.name} raised {type(exc).__name__}")
            )

    @property
    def step_names(self) -> list[str]:
        return [p.name for p in self.processors]
