"""The working note, the Processor protocol, the registry and the Pipeline.

A ``Note`` is immutable: each processor returns new notes (``dataclasses.replace``). Every span points
into the ORIGINAL text (``note.text``); only the transform step writes ``output``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from dictionaries import cache, vocab
from processors.profiles import DetectorProfile, ProfileName, resolve_profile
from schemas.errors import ConfigError, NoteTimeout, validation_summary
from schemas.models import NoteIn, Span, Versions

logger = logging.getLogger(__name__)

PIPELINE_VERSION = "0.1.0"
#: the interpreter's switch interval while a stream runs a step ahead (:meth:`Pipeline.run_stream`)
AHEAD_SWITCH_INTERVAL_S = 0.0005

#: The registry's rows: every step by name -> the module that registers it, in the default order, with
#: its role. Detectors (regex, the shipped NER model, dictionaries) add candidate spans; recovery drops
#: certain medical terms among them; decide keeps or drops each of the rest by a learned model; the ensemble
#: merges what is left into one labelled span per region;
#: transform writes the output; leakcheck re-scans it; metrics measures the note.
STEP_MODULES: dict[str, str] = {
    "regex": "processors.regex.step",            # identifier shapes (Presidio pattern recognizers as data)
    "ner": "processors.ner.step",                # fine-tuned transformer token classifier
    "dictionary": "processors.dictionary.step",  # the message's own identifiers + institution/name lists
    "llm": "processors.llm.step",                # optional: an LLM proposes missed identifier strings (add-only)
    "recovery": "processors.recovery",           # un-tag certain medical terms; cut edges that are no identifier
    "decide": "processors.decide.step",          # a learned keep/drop decision over every candidate span
    "ensemble": "processors.ensemble",           # thresholds, votes, overlap resolution
    "transform": "processors.transform.step",    # tag | surrogate | dateshift; builds the output
    "leakcheck": "processors.leakcheck",         # re-scan the OUTPUT for identifiers
    "metrics": "processors.metrics.step",        # recall proxy + clinical information retention
}

#: Optional steps: in the registry, not in the default order (``llm`` is turned on by the ``llm`` settings).
OPTIONAL_STEPS: frozenset[str] = frozenset({"llm"})
#: Default step order (STEP_MODULES less the optional steps). Without a model (or for the fastest CPU path)
#: drop "ner".
DEFAULT_STEPS: tuple[str, ...] = tuple(s for s in STEP_MODULES if s not in OPTIONAL_STEPS)


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


class SharedPolicy(BaseModel):
    """What several steps must agree on, set once for the pipeline (never read from another step's options).

    ``transform`` redacts providers or not, and ``leakcheck`` / ``metrics`` must judge the output by the same
    rule; ``dictionary`` finds the message's names with the name rules, and ``leakcheck`` must re-scan the
    output with the same rules to find what the dictionary would have found.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: providers' (clinicians') names are identifiers to remove
    redact_providers: bool = True
    #: name parts at or above this wordfreq Zipf value are common words (see dictionaries.vocab)
    common_word_zipf: float = Field(default=vocab.COMMON_WORD_ZIPF, ge=0, le=8)
    #: shorter name parts are ignored (initials are matched separately)
    min_name_len: int = Field(default=2, ge=1)
    #: notes in these languages (ISO 639-1, as :mod:`processors.language` identifies them) are served by the
    #: language's own models in the steps that have them (the NER step and the decide step): Spanish by a NER and a
    #: decision model trained with Spanish clinical text too. Empty: every note takes the default models
    language_routes: tuple[str, ...] = ("es",)

    @field_validator("language_routes")
    @classmethod
    def _known_languages(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if value:
            from processors.language import known_languages

            unknown = sorted(set(value) - known_languages())
            if unknown:
                raise ValueError(f"language_routes: unknown language code(s) {', '.join(unknown)}")
        return tuple(dict.fromkeys(value))


class PipelineConfig(BaseModel):
    """Which steps run, in which order, each step's options (validated by the step's own Config), and the
    policy the steps share."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    steps: tuple[str, ...] = DEFAULT_STEPS
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    policy: SharedPolicy = Field(default_factory=SharedPolicy)
    #: the detector profile (numeric path of the NER model and its thresholds, :mod:`processors.profiles`);
    #: ``auto``: by the device the NER step runs on
    profile: ProfileName = "auto"

    def config_hash(self) -> str:
        """Stable short hash of the effective config (no secrets in it): SecretStr options hash as their mask,
        URLs as :func:`mask_url` writes them, so rotating a password or key does not change the hash (changing
        the user, host or path does). The default profile (``auto``) is left out, so configs from before profiles
        keep their hash; the resolved profile is in the versions."""
        dumped = self.model_dump(mode="json")
        if dumped.get("profile") == "auto":
            del dumped["profile"]
        blob = json.dumps(mask_urls(dumped), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BuildContext:
    """What a step may know at construction besides its own options: the HMAC secret, the cache folder,
    which steps the pipeline runs, the shared policy, the config hash, and (once every step is built) the
    pipeline's versions. Never another step's options."""

    secret: bytes | None = None
    secret_is_default: bool = True
    cache_dir: Path = field(default_factory=cache.cache_dir)
    steps: tuple[str, ...] = ()
    policy: SharedPolicy = field(default_factory=SharedPolicy)
    config_hash: str = "none"
    #: the built pipeline's versions (model, dictionaries, config hash); None outside a Pipeline
    versions: Callable[[], Versions] | None = None
    #: the detector profile in use (resolved from ``PipelineConfig.profile``); None outside a Pipeline
    profile: DetectorProfile | None = None


class ProcessorFactory(Protocol):
    def __call__(self, options: Mapping[str, Any], ctx: BuildContext) -> Processor: ...


_REGISTRY: dict[str, ProcessorFactory] = {}
_CLASSES: dict[str, type[Any]] = {}


def register(name: str) -> Callable[[type[Any]], type[Any]]:
    """Class decorator: register a processor class by name (its module must be a row of STEP_MODULES).

    The class must have a nested pydantic ``Config`` model (its options, ``extra="forbid"``) and an
    ``__init__(self, config, ctx: BuildContext)``. It is built by ``build_processor(name, options, ctx)``.
    """

    def deco(cls: type[Any]) -> type[Any]:
        def factory(options: Mapping[str, Any], ctx: BuildContext) -> Processor:
            try:
                config = cls.Config.model_validate(dict(options))
            except ValidationError as exc:
                raise ConfigError(f"invalid options for step {name!r}: {validation_summary(exc)}",
                                  code="E303") from None
            proc: Processor = cls(config, ctx)
            return proc

        _REGISTRY[name] = factory
        _CLASSES[name] = cls
        cls.name = name
        return cls

    return deco


def available_processors() -> list[str]:
    return sorted(set(_REGISTRY) | set(STEP_MODULES))


def _load_step(name: str) -> None:
    """Import the module of step ``name`` on first use (E301 unknown step, E302 module not importable)."""
    if name not in _REGISTRY:
        module = STEP_MODULES.get(name)
        if module is None:
            raise ConfigError(f"unknown step {name!r}; available: {', '.join(available_processors())}",
                              code="E301")
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"step {name!r}: its module {module} cannot be imported ({type(exc).__name__}: "
                              f"{exc.name or 'unknown module'})", code="E302") from None
        if name not in _REGISTRY:
            raise ConfigError(f"step {name!r}: module {module} registers no step of that name", code="E302")


def build_processor(name: str, options: Mapping[str, Any], ctx: BuildContext) -> Processor:
    """Build the step ``name`` (importing its module on first use) with its own ``options``."""
    _load_step(name)
    return _REGISTRY[name](options, ctx)


def check_config(config: PipelineConfig, secret: SecretStr | str | None = None) -> None:
    """Raise the ConfigError that building the pipeline would raise for its configuration, without building a step
    (no model, no vocabulary loads): every step is registered (E301) and importable (E302), its options validate
    (E303), and its own ``check_options(config, ctx)`` classmethod, where it has one, passes (the transform step's secret,
    E300). Commands call it before they read inputs or load models, so a configuration error costs no time and
    touches no output file."""
    ctx = make_context(config, secret)
    for name in config.steps:
        _load_step(name)
        cls = _CLASSES.get(name)
        if cls is None:  # registered by hand (tests): only its factory knows
            continue
        try:
            options = cls.Config.model_validate(dict(config.options.get(name, {})))
        except ValidationError as exc:
            raise ConfigError(f"invalid options for step {name!r}: {validation_summary(exc)}", code="E303") from None
        check = getattr(cls, "check_options", None)
        if callable(check):
            check(options, ctx)


DEFAULT_SECRET = "deidstream-insecure-default-secret"

#: ``scheme://USERINFO@`` inside any text: the userinfo runs to the last ``@`` before the path (RFC 3986).
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s]*)@")
#: what stands for a masked password (or a masked user-only token)
MASK = "***"


def mask_url(text: str) -> str:
    """``text`` with the credentials of every URL in it masked: ``https://user:pw@host`` ->
    ``https://user:***@host``; a user-only userinfo (often a token: ``https://TOKEN@host``) -> ``https://***@host``.
    Text without ``scheme://...@`` is returned unchanged."""

    def repl(m: re.Match[str]) -> str:
        user, colon, _ = m.group("userinfo").partition(":")
        return f"{m.group('scheme')}{user}:{MASK}@" if colon else f"{m.group('scheme')}{MASK}@"

    return _URL_USERINFO.sub(repl, text) if "@" in text else text


def mask_urls(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with :func:`mask_url` applied to every string in it."""
    if isinstance(value, str):
        return mask_url(value)
    if isinstance(value, Mapping):
        return {k: mask_urls(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_urls(v) for v in value]
    return value


def url_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its userinfo, and ``(user, password)`` when it had one (for an Authorization header, so
    the password never sits in a URL that a library may log or put in an exception)."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=hostport)), (unquote(user), unquote(password))


def make_context(
    config: PipelineConfig, secret: SecretStr | str | None = None, cache_dir: Path | None = None,
    versions: Callable[[], Versions] | None = None,
) -> BuildContext:
    raw = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
    is_default = not raw or raw == DEFAULT_SECRET
    return BuildContext(
        secret=(raw or DEFAULT_SECRET).encode(), secret_is_default=is_default,
        cache_dir=cache_dir if cache_dir is not None else cache.cache_dir(), steps=tuple(config.steps),
        policy=config.policy, config_hash=config.config_hash(), versions=versions,
        profile=resolve_profile(config.profile, config.options.get("ner"), has_ner="ner" in config.steps),
    )


class Pipeline:
    """Runs processors in order over a batch. A processor that raises on a batch is retried note by
    note so only the failing note is marked (``Note.error``); later steps skip errored notes."""

    def __init__(self, processors: Sequence[Processor], config: PipelineConfig | None = None) -> None:
        self.processors = list(processors)
        self.config = config or PipelineConfig(steps=tuple(p.name for p in processors))
        self._versions: Versions | None = None
        #: the detector profile the steps were built with (None: built without a context)
        self.profile: DetectorProfile | None = None

    @classmethod
    def from_config(
        cls, config: PipelineConfig | None = None, *, secret: SecretStr | str | None = None,
        cache_dir: Path | None = None,
    ) -> Pipeline:
        config = config or PipelineConfig()
        built: list[Pipeline] = []
        ctx = make_context(config, secret, cache_dir, versions=lambda: built[0].versions())
        procs = [build_processor(step, config.options.get(step, {}), ctx) for step in config.steps]
        pipeline = cls(procs, config)
        pipeline.profile = ctx.profile
        built.append(pipeline)
        return pipeline

    def versions(self) -> Versions:
        """What the output headers and metrics name: the pipeline version, the model a step runs
        (``model_id``), every vocabulary a step loaded (``dictionary_versions()``), the config hash, and the
        LLM pass's model and prompt version (``llm_model_id``, ``llm_prompt_version``)."""
        if self._versions is None:
            model: str | None = None
            llm_model: str | None = None
            llm_prompt: str | None = None
            dictionaries: dict[str, str] = {}
            for proc in self.processors:
                try:
                    model = model or getattr(proc, "model_id", None)
                    llm_model = llm_model or getattr(proc, "llm_model_id", None)
                    llm_prompt = llm_prompt or getattr(proc, "llm_prompt_version", None)
                    report = getattr(proc, "dictionary_versions", None)
                    if callable(report):
                        dictionaries.update({str(k): str(v) for k, v in report().items()})
                except Exception as exc:  # noqa: BLE001 - versions are informative; never fail the pipeline
                    logger.warning("versions of step %s unavailable (%s)", proc.name, type(exc).__name__)
            self._versions = Versions(pipeline=PIPELINE_VERSION, model=model,
                                      dictionaries=dict(sorted(dictionaries.items())),
                                      config_hash=self.config.config_hash(), llm_model=llm_model,
                                      llm_prompt=llm_prompt,
                                      profile=self.profile.name if self.profile is not None else None)
        return self._versions

    def run(self, inputs: Sequence[NoteIn]) -> list[Note]:
        return self.run_notes([Note(input=n) for n in inputs])

    def run_notes(self, notes: Sequence[Note]) -> list[Note]:
        """Every step in order. Under a time budget (:func:`processors.budget.deadline`) the deadline is checked
        before each step (and by steps inside their long loops); past it :class:`NoteTimeout` propagates (the
        caller decides what becomes of the notes). Notes whose last step finished are returned even if it ended
        past the deadline: their work is done."""
        return self._run_steps(self.processors, list(notes))

    def _run_steps(self, procs: Sequence[Processor], notes: list[Note]) -> list[Note]:
        """``procs`` in order over the notes, the budget checked before each."""
        from processors import budget

        for proc in procs:
            budget.check(proc.name)
            notes = self._run_step(proc, notes)
        return notes

    def run_stream(self, batches: Iterable[Sequence[NoteIn]]) -> Iterator[list[Note]]:
        """``run`` of each batch in turn, with the step that can start ahead (the NER step's ``prefetch``: its int8
        windows on a CPU with two or more torch threads) started on the next batch while this thread runs the later
        steps of this one; then this thread helps it finish. On two cores the NER's model calls fill the core the
        later steps' Python leaves idle: detection ~1.2x, deid ~1.2x on the bench's synthetic notes, nothing measurable
        on the PhysioNet notes, whose later steps are light (``scripts/results/ner_ahead_criteria.md``).
        The interpreter's switch interval is 0.5 ms while the stream runs (Python's 5 ms let the NER thread wait
        for the lock between its windows), then restored. Each batch comes out as ``run`` gives it: every step sees
        the same notes, and no step's result for a note depends on the notes started beside it. Without such a step
        (GPU, unquantized, one thread) the batches run one after another. A consumer that stops early, or a step that
        raises, leaves no thread running."""
        from processors import budget

        k = next((i for i, proc in enumerate(self.processors) if callable(getattr(proc, "prefetch", None))), None)
        if k is None:
            for batch in batches:
                yield self.run(batch)
            return
        step, before, later = self.processors[k], self.processors[:k], self.processors[k + 1:]

        def head(batch: Sequence[NoteIn]) -> list[Note]:
            notes = self._run_steps(before, [Note(input=n) for n in batch])
            budget.check(step.name)
            return notes

        switch = sys.getswitchinterval()
        pending: Callable[[], list[Note]] | None = None
        try:
            sys.setswitchinterval(AHEAD_SWITCH_INTERVAL_S)
            it = iter(batches)
            first = next(it, None)
            if first is None:
                return
            current = self._run_step(step, head(first))
            for batch in it:
                upcoming = head(batch)
                pending = self._start(step, upcoming)
                done = self._run_steps(later, current)
                current = self._run_step(step, upcoming, pending)
                pending = None
                yield done
            yield self._run_steps(later, current)
        finally:
            if pending is not None:  # stopped early: no thread left running
                with contextlib.suppress(BaseException):
                    pending()
            sys.setswitchinterval(switch)

    @staticmethod
    def _start(step: Processor, notes: list[Note]) -> Callable[[], list[Note]] | None:
        """``step.prefetch`` of the notes without an error, the ones ``_run_step`` then runs (None: nothing started)."""
        live = [n for n in notes if n.error is None]
        prefetch = getattr(step, "prefetch", None)
        return prefetch(live) if live and prefetch is not None else None

    def _run_step(self, proc: Processor, notes: list[Note], started: Callable[[], list[Note]] | None = None,
                  ) -> list[Note]:
        """``proc`` over the notes without an error (a failing batch retried note by note); ``started``: the
        callable that finishes ``proc.prefetch`` of those notes (``_start``), used instead of ``process_batch``."""
        live_idx = [i for i, n in enumerate(notes) if n.error is None]
        if not live_idx:
            return notes
        live = [notes[i] for i in live_idx]
        t0 = time.perf_counter()
        try:
            if started is not None:
                done = started()
            else:
                done = proc.process_batch(live)
            if len(done) != len(live):
                raise RuntimeError("processor returned a different number of notes")
        except NoteTimeout as exc:  # the budget of the notes in hand is spent: no per-note retry
            if exc.stage is None:
                raise NoteTimeout(exc.budget_s, proc.name) from None
            raise
        except Exception as exc:
            logger.warning("processor %s failed on a batch of %d (%s); isolating per note",
                           proc.name, len(live), type(exc).__name__)
            done = [self._run_one(proc, n) for n in live]
        # a step started ahead: the time of finishing it here (helping, waiting, decoding), not of the part ahead
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
        except NoteTimeout as exc:
            if exc.stage is None:
                raise NoteTimeout(exc.budget_s, proc.name) from None
            raise
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
