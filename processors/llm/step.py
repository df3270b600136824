"""The optional LLM pass (step ``llm``): an LLM proposes identifier strings the detectors may have missed.

Runs right after ``decide`` (``Settings.pipeline_config`` puts it there when ``llm.mode`` is ``always`` or
``risky``; in a pipeline without ``decide``, after the detectors and before ``recovery``). For each note it sends the text (notes longer than ``max_chars`` in
windows cut at line / sentence / word boundaries, overlapping by :data:`OVERLAP_CHARS`) with our prompt for
the note's language (``prompts/<lang>.yaml``, English when there is none) and asks, with a ``json_schema``
response format (vLLM enforces it with guided decoding; pydantic validates the answer either way), for the
identifier strings by type. Every returned string is located at ALL its occurrences in the ORIGINAL text,
case-insensitive, as whole words (:func:`locate`); each occurrence becomes a span with source ``llm`` and
score :data:`LLM_SCORE` (after ``decide`` they are kept as they are: add-only, recall first; in a pipeline
without ``decide`` the ensemble accepts ``llm`` spans at 0.5 and recovery un-tags medical terms among them). Strings found nowhere are
dropped and counted (``not_found``), strings shorter than :data:`MIN_CHARS` and ``AGE`` strings without an
age over 89 too (``rejected``). The step only ADDS spans: it never removes or edits a span.

Gating (``mode``): ``always`` sends every note; ``risky`` only notes whose gate score is at least
``risk_threshold``. The gate score is the residual-risk score (``processors/risk.py``, the one definition the
metrics step publishes as ``NoteMetrics.risk``) computed on the candidates present before the pass. After the
``decide`` step (where the settings put this step) the kept candidates cover the text and the dropped ones count
as rejected with the decision model's probability that they hold an identifier; in a pipeline without ``decide``,
candidates at or over their source's default ensemble threshold (``processors.spans.SOURCE_THRESHOLDS``), overlaps
merged, cover the text and the others count as rejected. It is recorded on every note
(``Note.extra["llm_gate_score"]`` and ``NoteMetrics.llm.gate_score``), sent or not.

Failure is data: a request that fails after the client's retries (timeout, connection, server_error,
refusal, malformed, truncated, ...: ``processors.llm.client.REASONS``) makes the note ``failed`` with that
reason; the note goes on without the LLM (the spans of its windows that did answer are kept). Once
``concurrency`` requests in a row could not reach the server (timeout or connection), the batch's remaining
requests are not sent and fail with the same reason, so a dead or hung server costs one round of timeouts
per batch. The outcome (:class:`schemas.metrics.LLMOutcome`, no text) is ``Note.extra["llm"]``; the metrics
step publishes it and the worker counts it (OpenTelemetry ``deid.llm.notes``).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from processors.llm.client import LLMClient, LLMError
from processors.pipeline import BuildContext, Note, register
from processors.risk import note_risk, recorded_ner_mass, word_judge
from processors.spans import SOURCE_THRESHOLDS, resolve_overlaps, sources_of
from schemas.labels import Label
from schemas.metrics import LLMOutcome
from schemas.models import Span

logger = logging.getLogger(__name__)

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
DEFAULT_LANGUAGE = "en"
#: the score of every ``llm`` span (the ensemble's ``llm`` threshold is 0.5: accepted on its own)
LLM_SCORE = 0.9
#: strings shorter than this are dropped (an initial matches every such letter of the note)
MIN_CHARS = 2
#: characters shared by consecutive windows of a long note (an identifier cut by one edge is whole in the other)
OVERLAP_CHARS = 200
#: ``AGE`` strings must hold an age at least this (Safe Harbor: ages over 89)
MIN_AGE = 90
#: reasons a note was not sent (besides the client's failure codes)
SKIP_REASONS = ("below_threshold", "empty_note")
_UNREACHABLE = frozenset({"timeout", "connection"})
_WORD_CHAR = re.compile(r"\w")
_EDGE_PUNCT = ".,;:!?\"'()[]{}"
_NUMBER = re.compile(r"\d+")


# -- the answer ------------------------------------------------------------------------------------------------

class Identifier(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    type: Label
    text: str


class Answer(BaseModel):
    """The JSON the model must answer with (its JSON schema is the request's ``response_format``)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    identifiers: list[Identifier]


# -- prompts ---------------------------------------------------------------------------------------------------

class Prompt(BaseModel):
    """One prompt file (``prompts/<language>.yaml``): versioned data, not code."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int = Field(ge=1)
    language: str = Field(min_length=2)
    system: str = Field(min_length=1)
    user: str = Field(min_length=1)
    types: dict[Label, str]

    def messages(self, text: str) -> list[dict[str, str]]:
        types = "\n".join(f"- {label.value}: {desc}" for label, desc in self.types.items())
        # plain replacement, not str.format: notes hold braces
        user = self.user.replace("{types}", types).replace("{text}", text)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


@functools.lru_cache(maxsize=2)
def load_prompts(folder: Path = PROMPT_DIR) -> Mapping[str, Prompt]:
    """Every prompt file of ``folder`` by language (validated; the file name is its language)."""
    prompts: dict[str, Prompt] = {}
    for path in sorted(folder.glob("*.yaml")):
        prompt = Prompt.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
        if prompt.language != path.stem:
            raise ValueError(f"prompt file {path.name} declares language {prompt.language!r}")
        prompts[prompt.language] = prompt
    if DEFAULT_LANGUAGE not in prompts:
        raise ValueError(f"no {DEFAULT_LANGUAGE}.yaml prompt in {folder}")
    return prompts


def prompt_version(prompts: Mapping[str, Prompt]) -> str:
    """``de:1,en:1,es:1,it:1``: what the output headers name (``deid-llm-prompt``)."""
    return ",".join(f"{lang}:{p.version}" for lang, p in sorted(prompts.items()))


def prompt_for(prompts: Mapping[str, Prompt], language: str | None) -> Prompt:
    """The prompt of the note's language (``es``, ``es-MX`` and ``ES`` alike), else English."""
    lang = (language or "").strip().lower().replace("_", "-").split("-")[0]
    return prompts.get(lang) or prompts[DEFAULT_LANGUAGE]


# -- windows and locating --------------------------------------------------------------------------------------

def windows(text: str, max_chars: int, overlap: int = OVERLAP_CHARS) -> list[tuple[int, int]]:
    """``[start, end)`` pieces of at most ``max_chars`` covering ``text``, consecutive ones overlapping by
    about ``overlap``; each cut at the last line break, else sentence end, else space of its second half."""
    n = len(text)
    if n <= max_chars:
        return [(0, n)]
    overlap = min(overlap, max_chars // 4)
    out: list[tuple[int, int]] = []
    start = 0
    while True:
        end = min(n, start + max_chars)
        if end < n:
            lo = start + max_chars // 2
            for sep in ("\n", ". ", " "):
                cut = text.rfind(sep, lo, end)
                if cut >= 0:
                    end = cut + len(sep)
                    break
        out.append((start, end))
        if end >= n:
            return out
        nxt = max(start + 1, end - overlap)
        space = text.find(" ", nxt, end)  # start the next window at a word
        start = space + 1 if space >= 0 else nxt


def _pattern(needle: str) -> re.Pattern[str] | None:
    parts = needle.split()
    if not parts:
        return None
    body = r"\s+".join(re.escape(p) for p in parts)  # the model may write a line break as a space
    pre = r"(?<!\w)" if _WORD_CHAR.match(parts[0][0]) else ""
    post = r"(?!\w)" if _WORD_CHAR.match(parts[-1][-1]) else ""
    return re.compile(pre + body + post, re.IGNORECASE)


def locate(text: str, needle: str) -> list[tuple[int, int]]:
    """Every occurrence of ``needle`` in ``text``: case-insensitive, whole words (no match inside a longer
    word; a needle that starts or ends with punctuation is bounded by that punctuation), any whitespace
    between its words. A needle found nowhere is tried once more without punctuation at its edges
    ("Smith." for "Smith,")."""
    for candidate in dict.fromkeys((needle.strip(), needle.strip().strip(_EDGE_PUNCT).strip())):
        if len(candidate) < MIN_CHARS:
            continue
        pattern = _pattern(candidate)
        found = [m.span() for m in pattern.finditer(text)] if pattern is not None else []
        if found:
            return found
    return []


def _acceptable(ident: Identifier) -> bool:
    text = ident.text.strip()
    if len(text.strip(_EDGE_PUNCT)) < MIN_CHARS:
        return False
    if ident.type == Label.AGE:
        return any(int(n) >= MIN_AGE for n in _NUMBER.findall(text) if len(n) <= 3)
    return True


# -- the step --------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Job:
    note: int
    text: str
    prompt: Prompt


@dataclass(frozen=True, slots=True)
class _Result:
    answer: Answer | None
    error: str | None
    ms: float


class _Breaker:
    """Counts requests in a row that could not reach the server; open once there are ``limit`` of them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.run = 0
        self.code: str | None = None
        self._lock = threading.Lock()

    def open_code(self) -> str | None:
        with self._lock:
            return self.code if self.run >= self.limit else None

    def record(self, error: str | None) -> None:
        with self._lock:
            if error in _UNREACHABLE:
                self.run += 1
                self.code = error
            else:
                self.run = 0


@register("llm")
class LLMStep:
    """Ask an LLM for the identifier strings of each (risky) note; add every occurrence as an ``llm`` span."""

    name = "llm"

    class Config(BaseModel):
        """Mirrors ``streams.settings.LLMSettings.step_options()``."""

        model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
        url: str = Field(min_length=1, description="base URL of the OpenAI-compatible API")
        model: str = Field(min_length=1, description="model name the server serves")
        mode: Literal["always", "risky"] = "risky"
        api_key: SecretStr | None = None
        timeout_s: float = Field(default=30.0, gt=0)
        concurrency: int = Field(default=8, ge=1, le=256)
        max_retries: int = Field(default=2, ge=0, le=10)
        risk_threshold: float = Field(default=0.1, ge=0.0, le=1.0)
        max_chars: int = Field(default=6000, ge=200)
        max_tokens: int = Field(default=512, ge=16)

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        from dictionaries.medical import medical_vocabulary

        self.config = config
        self.prompts = load_prompts()
        self.llm_model_id = config.model
        self.llm_prompt_version = prompt_version(self.prompts)
        self.client = LLMClient.from_settings(config)
        # the gate's inputs: the same vocabulary and word judge the metrics step gives the risk model
        self.medical = medical_vocabulary(ctx.cache_dir)
        self.words = word_judge(ctx.policy.common_word_zipf, ctx.cache_dir)
        #: after the decide step the candidates are decided: the kept ones cover the text, the dropped ones carry the
        #: decision model's probability of holding an identifier
        steps = ctx.steps
        self.after_decide = "decide" in steps and "llm" in steps and steps.index("decide") < steps.index("llm")

    def close(self) -> None:
        self.client.close()

    # -- gate -------------------------------------------------------------------------------------------------

    def gate_score(self, note: Note) -> float:
        """The residual-risk score of ``note`` before the pass (see the module docstring)."""
        covering: list[Span] = []
        rejected: list[Span] = list(note.dropped)
        for s in note.spans:
            thr = 0.0 if self.after_decide else min(SOURCE_THRESHOLDS.get(src, 0.5) for src in sources_of(s))
            (covering if s.score >= thr else rejected).append(s)
        message = [s for s in (*note.spans, *note.dropped) if "message" in sources_of(s)]
        try:
            r = note_risk(note.text, resolve_overlaps(covering), medical=self.medical, judge=self.words,
                          rejected=rejected, message=message, ner_mass=recorded_ner_mass(note.extra),
                          threshold=self.config.risk_threshold)
        except Exception as exc:  # noqa: BLE001 - a broken gate sends the note rather than failing it
            logger.warning("llm gate: scoring a note failed (%s); sending it", type(exc).__name__)
            return 1.0
        return r.score

    # -- batch ------------------------------------------------------------------------------------------------

    def _ask(self, job: _Job, breaker: _Breaker) -> _Result:
        code = breaker.open_code()
        if code is not None:  # the server did not answer the last `concurrency` requests: do not queue more
            return _Result(None, code, 0.0)
        t0 = time.perf_counter()
        try:
            answer = self.client.structured(job.prompt.messages(job.text), Answer, name="deid_identifiers",
                                            max_tokens=self.config.max_tokens)
            error = None
        except LLMError as exc:
            answer, error = None, exc.code
        breaker.record(error)
        return _Result(answer, error, (time.perf_counter() - t0) * 1000.0)

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        cfg = self.config
        scores = [self.gate_score(n) for n in notes]
        skipped: dict[int, str] = {}
        jobs: list[_Job] = []
        for i, note in enumerate(notes):
            if not note.text.strip():
                skipped[i] = "empty_note"
            elif cfg.mode == "risky" and scores[i] < cfg.risk_threshold:
                skipped[i] = "below_threshold"
            else:
                prompt = prompt_for(self.prompts, note.input.language)
                jobs.extend(_Job(i, note.text[a:b], prompt) for a, b in windows(note.text, cfg.max_chars))
        breaker = _Breaker(cfg.concurrency)
        results = self.client.map(lambda job: self._ask(job, breaker), jobs) if jobs else []
        per_note: dict[int, list[_Result]] = {}
        for job, res in zip(jobs, results, strict=True):
            per_note.setdefault(job.note, []).append(
                res if isinstance(res, _Result) else _Result(None, res.code, 0.0))
        out = []
        for i, note in enumerate(notes):
            if i in skipped:
                outcome = LLMOutcome(status="skipped", reason=skipped[i], mode=cfg.mode, gate_score=round(scores[i], 6),
                                     risk_threshold=cfg.risk_threshold)
                out.append(note.replace(extra={**note.extra, "llm": outcome, "llm_gate_score": scores[i]}))
            else:
                out.append(self._apply(note, per_note.get(i, []), scores[i]))
        failed = Counter(n.extra["llm"].reason for n in out if n.extra["llm"].status == "failed")
        if failed:
            logger.warning("llm: %d of %d notes went on without the LLM (%s)", sum(failed.values()), len(out),
                           ", ".join(f"{k}: {v}" for k, v in sorted(failed.items())))
        return out

    def _apply(self, note: Note, results: Sequence[_Result], score: float) -> Note:
        """The note with the spans of its answers added and its outcome recorded."""
        proposed: dict[tuple[str, Label], Identifier] = {}
        for res in results:
            for ident in res.answer.identifiers if res.answer is not None else ():
                proposed.setdefault((ident.text.strip().lower(), ident.type), ident)
        text = note.text
        new: dict[tuple[int, int, Label], Span] = {}
        located = not_found = rejected = 0
        for ident in proposed.values():
            if not _acceptable(ident):
                rejected += 1
                continue
            found = locate(text, ident.text)
            if not found:
                not_found += 1
                continue
            located += 1
            for a, b in found:
                new.setdefault((a, b, ident.type), Span(start=a, end=b, label=ident.type, score=LLM_SCORE,
                                                        source="llm"))
        errors = [r.error for r in results if r.error is not None]
        spans = sorted(new.values(), key=lambda s: (s.start, s.end, s.label))
        outcome = LLMOutcome(
            status="failed" if errors else "ok", reason=errors[0] if errors else None, mode=self.config.mode,
            gate_score=round(score, 6), risk_threshold=self.config.risk_threshold,
            windows=len(results), windows_failed=len(errors), proposed=len(proposed), located=located,
            not_found=not_found, rejected=rejected, spans=len(spans), ms=round(sum(r.ms for r in results), 3),
        )
        return note.replace(spans=note.spans + tuple(spans),
                            extra={**note.extra, "llm": outcome, "llm_gate_score": score})
