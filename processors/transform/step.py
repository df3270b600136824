"""The ``transform`` step: writes ``Note.output`` from the note's spans, and builds the output model.

Modes (DESIGN.md §4):

- ``tag``: each span becomes ``[LABEL]`` ("[NAME]", "[DATE]"). With ``keep_years`` (Safe Harbor allows
  years) a date that carries a year renders as ``[DATE 2019]`` (2-digit years expanded: "7/22/19" ->
  ``[DATE 2019]``), except birth dates whose year puts the patient over 89 (``[DATE]``).
- ``surrogate``: realistic replacements, the same for the same patient across notes, workers, restarts
  and replays (keyed by HMAC(secret, patient key + label + normalised original); see
  ``processors.transform.surrogates``). Dates are shifted as in ``dateshift``; ages over 89 become "90+".
  A surrogate given name keeps the person's sex: the patient's stated sex (HL7 PID-8, the JSON patient block, or
  the note: "a 67-year-old man") for the patient's name words, the name's own (SSA births) for the others.
- ``dateshift``: every date of a patient moves by the same HMAC-derived number of days (intervals and
  format kept); dates that cannot be parsed become ``[DATE]`` (counted in ``note.extra``); ages over 89
  become "90+"; every other label is tagged as in ``tag`` mode.

Provider names (subtype PROVIDER) are left verbatim when the pipeline policy's ``redact_providers`` is False. A span that
runs over several lines (the ensemble merges overlapping detections, e.g. an address block) is rendered
line by line, keeping the line breaks. In ``dateshift``/``surrogate`` a TIME span without a date in it
stays as is (a time of day is not a date element).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from processors.pipeline import DEFAULT_SECRET, BuildContext, Note, Replacement, register
from processors.spans import resolve_overlaps
from processors.transform.surrogates import (
    date_year,
    hmac_hex,
    shift_date_string,
    shift_days,
    surrogate_age,
    surrogate_for,
    warm_pools,
)
from schemas.errors import ConfigError, ProcessingError
from schemas.labels import Label, Subtype
from schemas.models import DeidentifiedNote, NoteIn, Span, Versions

logger = logging.getLogger(__name__)

__all__ = [
    "Render", "Transform", "apply_replacements", "build_output", "hmac_hex", "note_pseudonym",
    "patient_pseudonym", "shift_date_string", "shift_days", "surrogate_for", "tag_text",
]

Mode = Literal["tag", "surrogate", "dateshift"]
#: ``render(span, original) -> replacement``; None keeps the original text verbatim (no Replacement).
Render = Callable[[Span, str], str | None]
#: Safe Harbor: ages over 89 and the dates (year included) indicative of such an age are removed.
MAX_AGE = 89


def note_pseudonym(secret: bytes, note_id: str) -> str:
    return hmac_hex(secret, "note:" + note_id)[:20]


def patient_pseudonym(secret: bytes, patient_key: str) -> str:
    return hmac_hex(secret, "patient:" + patient_key)[:20]


def tag_text(span: Span, original: str, *, keep_years: bool) -> str:
    """``[LABEL]``; with ``keep_years`` a DATE with a year renders as ``[DATE 2019]``."""
    if span.label == Label.DATE and keep_years and span.subtype != Subtype.TIME:
        year = date_year(original)
        if year is not None and not (
            span.subtype == Subtype.BIRTHDATE and year < datetime.now(UTC).year - MAX_AGE
        ):
            return f"[DATE {year}]"
    return f"[{span.label}]"


def is_kept(span: Span, *, redact_providers: bool) -> bool:
    """Spans left verbatim by policy: provider names when ``redact_providers`` is False."""
    return not redact_providers and span.label == Label.NAME and span.subtype == Subtype.PROVIDER


def apply_replacements(
    text: str, spans: Sequence[Span], render: Render
) -> tuple[str, tuple[Replacement, ...]]:
    """Replace each span of ``text`` by ``render(span, text[span])``; returns the output and where each
    replacement landed in it. Overlapping spans are merged first (``resolve_overlaps``)."""
    ordered = sorted(spans, key=lambda s: (s.start, s.end))
    if any(a.end > b.start for a, b in zip(ordered, ordered[1:], strict=False)):
        ordered = resolve_overlaps(ordered)
    parts: list[str] = []
    reps: list[Replacement] = []
    pos = 0
    out_len = 0
    for span in ordered:
        if span.end > len(text):
            raise ProcessingError(f"span [{span.start}, {span.end}) is beyond the text ({len(text)} chars)")
        gap = text[pos:span.start]
        parts.append(gap)
        out_len += len(gap)
        original = text[span.start:span.end]
        new = render(span, original)
        if new is None:
            parts.append(original)
            out_len += len(original)
        else:
            parts.append(new)
            reps.append(Replacement(out_len, out_len + len(new), span))
            out_len += len(new)
        pos = span.end
    parts.append(text[pos:])
    return "".join(parts), tuple(reps)


_LINE_BREAK = re.compile(r"(\s*\n\s*)")


def per_line(render: Render) -> Render:
    """Render each line of a multi-line span on its own and keep the line breaks: merged spans (an
    address block) keep their layout, and each line gets a replacement of its own shape."""

    def wrapped(span: Span, original: str) -> str | None:
        if "\n" not in original:
            return render(span, original)
        out: list[str] = []
        for piece in _LINE_BREAK.split(original):
            if not piece or piece.isspace():
                out.append(piece)
                continue
            new = render(span, piece)
            if new is None:
                return None
            out.append(new)
        return "".join(out)

    return wrapped


def given_name_words(note: NoteIn) -> frozenset[str]:
    """Lowercase words the message gives as given or middle names (of the patient and the relatives)."""
    names = [] if note.patient is None else [*note.patient.names,
                                              *(r.name for r in note.patient.relatives if r.name is not None)]
    return frozenset(w.casefold() for n in names for part in (n.given, n.middle) if part for w in part.split())


def _people_words(note: NoteIn) -> tuple[list[str], frozenset[str]]:
    """(name words of the note's own people, for initials; lowercase patient/relative name words that a
    surrogate must never be)."""
    known: list[str] = []
    avoid: set[str] = set()
    patient = note.patient
    if patient is not None:
        for name in patient.names:
            words = name.parts()
            known.extend(words)
            avoid.update(w.casefold() for w in words)
        for rel in patient.relatives:
            if rel.name is not None:
                words = rel.name.parts()
                known.extend(words)
                avoid.update(w.casefold() for w in words)
    for prov in note.providers:
        if prov.name is not None:
            known.extend(prov.name.parts())
    return known, frozenset(avoid)


_SEX_WORDS = {"m": "M", "male": "M", "man": "M", "gentleman": "M", "boy": "M",
              "f": "F", "female": "F", "woman": "F", "lady": "F", "girl": "F"}
_AGE_MARK = r"(?:(?:years?|yrs?|months?|mos?|weeks?|wks?|days?)[ -]?old|y/?o|y\.o\.)"
_RACE = r"(?:(?:white|black|african[ -]american|hispanic|latino|latina|asian|caucasian)[ -])?"
#: "a 67-year-old man", "67 male", "54 yo F", "34 y/o white female", "67M"; "Sex: F", "Gender: male"
_SEX_IN_TEXT = re.compile(
    r"\b\d{1,3}[ -]?(?:" + _AGE_MARK + r"[ -]?)?" + _RACE + r"(?P<a>man|male|gentleman|boy|woman|female|lady|girl)\b"
    r"|\b\d{1,3}[ -]?" + _AGE_MARK + r"[ -]?(?P<c>[mf])\b"
    r"|\b\d{1,3}(?P<d>[MF])\b"
    r"|\b(?:sex|gender)[ \t]*[:=]?[ \t]*(?P<b>male|female|m|f)\b", re.IGNORECASE)


def stated_sex(note: NoteIn, text: str) -> str | None:
    """The patient's sex ("F" / "M") as the message states it (HL7 PID-8, the JSON patient block's ``sex``), else
    as the note states it ("a 67-year-old man", "Sex: F") when it states only one; None otherwise (a message sex of
    O, U, A or N also gives None)."""
    given = note.patient.sex if note.patient is not None else None
    if given and given.strip():
        return _SEX_WORDS.get(given.strip().casefold())
    found = {_SEX_WORDS[next(g for g in m.groups() if g).casefold()] for m in _SEX_IN_TEXT.finditer(text)
             if m.group("d") is None or m.group("d").isupper()}
    return found.pop() if len(found) == 1 else None


def patient_name_words(note: NoteIn, spans: Sequence[Span], text: str) -> frozenset[str]:
    """Lowercase name words of the patient: the message's patient names and the NAME spans typed PATIENT."""
    words: set[str] = set()
    if note.patient is not None:
        for name in note.patient.names:
            words.update(w.casefold() for w in name.parts())
    for s in spans:
        if s.label == Label.NAME and s.subtype == Subtype.PATIENT:
            words.update(w.casefold() for w in re.findall(r"[^\W\d_]+", text[s.start:s.end]))
    return frozenset(words)


@register("transform")
class Transform:
    """Write ``note.output`` and ``note.replacements`` (tag | surrogate | dateshift) and the pseudonyms."""

    name = "transform"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        mode: Mode = "tag"
        keep_years: bool = True
        max_shift_days: int = Field(default=365, ge=1, le=36500)
        min_shift_days: int = Field(default=1, ge=0)

        @model_validator(mode="after")
        def _check(self) -> Transform.Config:
            if self.min_shift_days > self.max_shift_days:
                raise ValueError("min_shift_days must be <= max_shift_days")
            return self

    @classmethod
    def check_options(cls, config: Config, ctx: BuildContext) -> None:
        """E300 for a surrogate or dateshift mode without a private secret (``pipeline.check_config`` asks before
        anything loads)."""
        if config.mode != "tag" and (ctx.secret_is_default or not ctx.secret):
            raise ConfigError(
                f"transform mode {config.mode!r} needs a private HMAC secret: set DEID_SECRET "
                "(surrogates and date shifts made with the default secret can be reversed)"
            )

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.check_options(config, ctx)
        if ctx.secret_is_default:
            logger.warning("transform: pseudonyms use the default secret; set DEID_SECRET in production")
        self.config = config
        self.redact_providers = ctx.policy.redact_providers
        self.secret = ctx.secret or DEFAULT_SECRET.encode()
        if config.mode == "surrogate":
            from dictionaries import vocab

            vocab.load(ctx.cache_dir)  # the pools come from the vocabularies of this cache folder
            warm_pools()

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        return [self.transform(n) for n in notes]

    def transform(self, note: Note) -> Note:
        cfg = self.config
        key = note.input.patient_key
        unparsed = 0

        if cfg.mode == "tag":
            def render(span: Span, original: str) -> str | None:
                if is_kept(span, redact_providers=self.redact_providers):
                    return None
                return tag_text(span, original, keep_years=cfg.keep_years)

        elif cfg.mode == "dateshift":
            days = shift_days(self.secret, key, cfg.min_shift_days, cfg.max_shift_days)

            def render(span: Span, original: str) -> str | None:
                nonlocal unparsed
                if is_kept(span, redact_providers=self.redact_providers):
                    return None
                if span.label == Label.DATE:
                    shifted = shift_date_string(original, days)
                    if shifted is None:
                        if span.subtype == Subtype.TIME:
                            return original  # a time of day alone is not a date element to shift
                        unparsed += 1
                        return "[DATE]"
                    return shifted
                if span.label == Label.AGE:
                    return surrogate_age(original) or "[AGE]"
                return f"[{span.label}]"

        else:
            days = shift_days(self.secret, key, cfg.min_shift_days, cfg.max_shift_days)
            known, avoid = _people_words(note.input)
            sex = stated_sex(note.input, note.text)
            patient_words = patient_name_words(note.input, note.spans, note.text) if sex else frozenset()
            given_words = given_name_words(note.input)

            def render(span: Span, original: str) -> str | None:
                nonlocal unparsed
                if is_kept(span, redact_providers=self.redact_providers):
                    return None
                new = surrogate_for(self.secret, key, span, original, shift=days, known_names=known,
                                    avoid=avoid, patient_words=patient_words, sex=sex, given_words=given_words)
                if span.label == Label.DATE and new == "[DATE]":
                    if span.subtype == Subtype.TIME:
                        return original  # a time of day alone is not a date element to shift
                    unparsed += 1
                return new

        output, reps = apply_replacements(note.text, note.spans, per_line(render))
        extra = dict(note.extra)
        if unparsed:
            logger.debug("transform: %d date span(s) not parsed, tagged instead", unparsed)
            extra["unparsed_dates"] = unparsed
        return note.replace(
            output=output,
            replacements=reps,
            note_pseudonym=note_pseudonym(self.secret, note.note_id),
            patient_pseudonym=patient_pseudonym(self.secret, key),
            extra=extra,
        )


def build_output(note: Note, *, mode: str, versions: Versions | None) -> DeidentifiedNote:
    """The clean output model of a transformed note (the only place that builds it).

    ``spans`` point into the OUTPUT text (where each replacement landed), so consumers can find the tags
    and surrogates; original offsets are not published. Raises ProcessingError if the note has not been
    transformed."""
    if note.output is None or note.note_pseudonym is None or note.patient_pseudonym is None:
        raise ProcessingError("note has no output: the transform step did not run")
    if mode not in ("tag", "surrogate", "dateshift"):
        raise ProcessingError(f"unknown transform mode {mode!r}")
    spans = tuple(
        Span(start=r.out_start, end=r.out_end, label=r.span.label, subtype=r.span.subtype,
             score=r.span.score, source=r.span.source)
        for r in note.replacements
        if r.out_end > r.out_start
    )
    mode_lit: Mode = "tag" if mode == "tag" else "surrogate" if mode == "surrogate" else "dateshift"
    return DeidentifiedNote(
        note_pseudonym=note.note_pseudonym,
        patient_pseudonym=note.patient_pseudonym,
        text=note.output,
        mode=mode_lit,
        spans=spans,
        leak=bool(note.leak),
        source_format=note.input.source_format,
        message_type=note.input.message_type,
        versions=versions,
    )
