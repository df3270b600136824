"""Features of a candidate span for the decision stage: what the detectors said, what the span looks like, what
the vocabularies know of its words, what stands around it, and the cues of the old rules (``cues.RULES``).

One row per candidate, numbers only (``FEATURES`` names the columns; categorical columns hold small integer
codes, ``CATEGORICAL``). Nothing here reads a gold label: the same function builds training rows and the rows
the step scores at run time, so training and serving cannot drift apart.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from dictionaries import vocab
from dictionaries.calendar import MONTH_TOKENS, WEEKDAY_TOKENS
from dictionaries.jargon import ClinicalWords
from dictionaries.medical import MAX_CHARS, MedicalMatch, MedicalVocabulary
from dictionaries.medical_syntax import measurement_value
from dictionaries.text import (
    FAMILY_CUES,
    NURSE_CREDENTIALS,
    PERSONAL_TITLES,
    PROVIDER_CUES,
    TOKEN,
    ends_here,
    is_all_caps,
    line_bounds,
    name_context,
)
from processors.decide.cues import RULES, CueNote, Cues
from processors.pipeline import Note
from processors.shapes import (
    HAS_DIGIT,
    LETTER_RUN,
    field_label_before,
    message_identifiers,
    number_run,
    protected,
    readable_date,
    windows,
)
from processors.spans import SOURCE_THRESHOLDS, sources_of
from schemas.labels import Label, Subtype
from schemas.models import Span

#: the detectors whose candidates the model scores (others, e.g. an LLM's, are kept: add-only)
SOURCES: tuple[str, ...] = ("regex", "ner", "dictionary")
LABEL_CODES: dict[str, int] = {str(lab): i for i, lab in enumerate(Label)}
SUBTYPE_CODES: dict[str | None, int] = {None: 0, **{str(s): i + 1 for i, s in enumerate(Subtype)}}

_WORD_TOKEN = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?")
_CLOCK = re.compile(r"(?<![\d:])(?:[01]?\d|2[0-3]):[0-5]\d(?![\d:])|\b\d{1,4}\s?(?:[ap]\.?m\b|[ap]\b)", re.IGNORECASE)
_FULL_DATE = re.compile(r"\d{1,2}[/.-]\d{1,2}[/.-](?:\d{2}|\d{4})\b|\b\d{4}-\d{1,2}-\d{1,2}\b")
_TITLE_BEFORE = ends_here(r"\b(?:" + "|".join(PERSONAL_TITLES) + r")\.?[ \t]*\Z", re.IGNORECASE)
_KIN_BEFORE = ends_here(r"\b(?:" + "|".join(sorted(FAMILY_CUES)) + r")(?:'s)?\W{0,3}\Z", re.IGNORECASE)
_PROVIDER_BEFORE = ends_here(r"\b(?:" + "|".join(sorted(PROVIDER_CUES)) + r"|per|by|with|from)\W{0,3}\Z",
                             re.IGNORECASE)
_CREDENTIAL_AFTER = re.compile(
    r",?[ \t]*(?:md|m\.d\.|rn|np|rrt|lpn|cna|crna|msw|lcsw|pa-c|pa|do|phd|" + "|".join(NURSE_CREDENTIALS) + r")\b",
    re.IGNORECASE)
_PLACE_CUE_BEFORE = ends_here(
    r"\b(?:lives?|living|works?|worked|moved|resides?|born|retired?|home|from|to|at|in|near|visit\w*)\W{0,3}\Z",
    re.IGNORECASE)
_INSTITUTION_AFTER = re.compile(
    r"[ \t]+(?:hosp\w*|clinic\w*|cent(?:er|re)|medical|med|memorial|health|rehab\w*|nursing|house|home|"
    r"college|university|county|general|institute)\b", re.IGNORECASE)
_UNIT_NEAR = re.compile(r"\b(?:ward|unit|floor|bed|room|rm|pod|bay|icu|micu|sicu|ccu|csru|ed|er|or)\b",
                        re.IGNORECASE)
_DATE_CUE_BEFORE = ends_here(
    r"\b(?:on|since|until|till|by|from|of|dated?|admit\w*|adm|discharg\w*|d/c|dob|born|birth\w*|last|next|"
    r"seen|visit\w*|through|thru|to|before|after)\W{0,3}\Z", re.IGNORECASE)
_DOSE_BEFORE = ends_here(r"\d+(?:\.\d+)?[ \t]?(?:mg|mcg|gm?|u|units?|ml|cc|meq|mmol|tabs?|amps?|l|lpm)\W{0,2}\Z",
                         re.IGNORECASE)
_VERB_BEFORE = ends_here(
    r"\b(?:give|gave|given|start\w*|restart\w*|resum\w*|tak\w*|on|receiv\w*|continu\w*|increas\w*|decreas\w*|"
    r"titrat\w*|held|hold\w*|d/c'?d?|dc'?d|bolus\w*|drip|gtt|infus\w*|wean\w*|placed|insert\w*)\W{0,3}\Z",
    re.IGNORECASE)
_AGE_SEX_AFTER = re.compile(r"\W{0,3}\d{1,3}\s*(?:y/?o|yo|[mf])\b", re.IGNORECASE)
_HEADING_AFTER = re.compile(r"[ \t]*(?::|-{1,2}(?=[ \t]*[A-Za-z(]))")
#: a line of an address: a house or postal number beside a street type, a comma-separated place, or a postal box
_ADDRESS_LINE = re.compile(
    r"\b\d{1,6}\s+[^\W\d_][\w.'-]*(?:\s+[^\W\d_][\w.'-]*){0,3}\s*,|\b(?:box|apt|suite|ste|p\.?o\.?)\s*#?\s*\d|"
    r"\b\d{4,6}\b[^\n]{0,40},|,\s*[A-Z]{2}\s+\d{5}\b", re.IGNORECASE)
_NUMBER_BEFORE = ends_here(r"\d[\W]{0,2}\Z")
_NUMBER_AFTER = re.compile(r"\W{0,2}\d")
_LETTERS = re.compile(r"[A-Za-z]")
_UPPER = re.compile(r"[A-Z]")

FEATURES: tuple[str, ...] = (
    # what the detectors said
    "label", "subtype", "src_regex", "src_ner", "src_dictionary", "n_sources", "score", "ner_score", "regex_score",
    "dictionary_score", "n_overlapping", "overlap_label_agrees", "near_candidates", "overlap_sources",
    "above_source_threshold",
    # what the span looks like
    "chars", "words", "digits", "letters", "digit_share", "upper_share", "has_slash", "has_dash", "has_colon",
    "has_dot", "has_comma", "readable_date", "number_only", "clock_time", "full_date", "month_word", "weekday_word",
    "case", "line_caps", "line_words", "at_line_start", "heading_after", "multi_line",
    # what the vocabularies know of its words
    "min_zipf", "max_zipf", "mean_zipf", "first_name", "surname", "place", "hospital_word", "clinical_word",
    "curated", "unknown_word", "non_ascii", "medical_overlap", "medical_ambiguous", "measurement",
    # what stands around it
    "name_context", "title_before", "kin_before", "provider_cue_before", "credential_after", "place_cue_before",
    "institution_after", "unit_near", "date_cue_before", "dose_before", "verb_before", "age_sex_after",
    "number_before", "number_after", "same_word_named", "repeats", "address_line",
    # the note
    "note_kchars", "note_caps_share", "note_candidates",
    # the cues of the old rules, and the old policy they made with the ensemble's thresholds and votes
    *(f"cue_{r}" for r in RULES), "rules_keep",
)
CATEGORICAL: tuple[str, ...] = ("label", "subtype", "case")
INDEX: dict[str, int] = {name: i for i, name in enumerate(FEATURES)}


@dataclass(frozen=True)
class NoteView:
    """What the features of one note's candidates share, computed once per note: the text, all candidates (and an
    index of them by start), the medical vocabulary's matches around them, and note-level numbers."""

    text: str
    spans: tuple[Span, ...]
    matches: tuple[MedicalMatch, ...]
    kchars: float
    caps_share: float
    starts: tuple[int, ...]
    by_start: tuple[int, ...]
    longest: int
    surfaces: Counter[str]
    named: Counter[str]
    match_starts: tuple[int, ...]
    lines: dict[tuple[int, int], tuple[float, float, float]] = field(default_factory=dict)
    #: what a row holds that depends on the candidate's offsets alone, by (start, end): several detectors'
    #: candidates often share them (:func:`row`)
    shapes: dict[tuple[int, int], _Shape] = field(default_factory=dict)

    @classmethod
    def of(cls, text: str, spans: Sequence[Span], matches: Sequence[MedicalMatch]) -> NoteView:
        letters = len(_LETTERS.findall(text))
        caps = len(_UPPER.findall(text)) / letters if letters else 0.0
        order = sorted(range(len(spans)), key=lambda k: spans[k].start)
        surfaces = Counter(text[s.start:s.end].lower() for s in spans)
        # words of the note's confident names: a weak name elsewhere that repeats one is the same person
        named = Counter(w for s in spans if _confident_name(s) for w in {
            x.lower().removesuffix("'s") for x in LETTER_RUN.findall(text, s.start, s.end)})
        ordered = tuple(sorted(matches, key=lambda m: m.start))
        return cls(text, tuple(spans), ordered, len(text) / 1000.0, caps,
                   tuple(spans[k].start for k in order), tuple(order),
                   max((s.end - s.start for s in spans), default=0), surfaces, named, tuple(m.start for m in ordered))

    def medical(self, start: int, end: int) -> list[MedicalMatch]:
        """The medical matches overlapping ``[start, end)``."""
        lo = bisect.bisect_left(self.match_starts, start - MAX_CHARS)
        hi = bisect.bisect_left(self.match_starts, end)
        return [m for m in self.matches[lo:hi] if m.end > start]

    def line(self, lo: int, hi: int) -> tuple[float, float, float]:
        """(ALL-CAPS, words, an address line) of the line ``text[lo:hi]``, once per line of the note."""
        found = self.lines.get((lo, hi))
        if found is None:
            line = self.text[lo:hi]
            found = self.lines[(lo, hi)] = (float(is_all_caps(line)), float(len(line.split())),
                                            float(_ADDRESS_LINE.search(line) is not None))
        return found

    def around(self, i: int, reach: int = 0) -> list[int]:
        """Indexes of the other candidates that overlap ``spans[i]`` or lie within ``reach`` characters of it."""
        span = self.spans[i]
        lo = bisect.bisect_left(self.starts, span.start - self.longest - reach)
        hi = bisect.bisect_right(self.starts, span.end + reach)
        return [k for k in self.by_start[lo:hi] if k != i
                and self.spans[k].start <= span.end + reach and span.start <= self.spans[k].end + reach]


def _confident_name(span: Span) -> bool:
    return span.label == Label.NAME and (span.score >= 0.5 or "ner" not in sources_of(span))


def _case(surface: str) -> int:
    """0 no letters, 1 lower, 2 capitalised words, 3 capitals, 4 mixed."""
    words = LETTER_RUN.findall(surface)
    if not words:
        return 0
    if all(w.islower() for w in words):
        return 1
    if all(w.isupper() for w in words if len(w) > 1) and any(len(w) > 1 for w in words):
        return 3
    if all(w[:1].isupper() and (len(w) == 1 or w[1:].islower() or w[1:] == "'s") for w in words):
        return 2
    return 4


def _word_shares(words: Sequence[str], cw: ClinicalWords | None) -> tuple[float, ...]:
    """The shares of ``words`` that are first names, surnames, places, hospital-name words, clinical words, curated
    jargon, and unknown words (3+ letters, Zipf < 1.5), in one pass over the words."""
    if not words:
        return (0.0,) * 7
    hospital = vocab.hospital_name_words()
    counts = [0] * 7
    for w in words:
        reason = cw.reason(w) if cw is not None else None
        for k, hit in enumerate((vocab.is_first_name(w), vocab.is_surname(w), vocab.is_place_name(w), w in hospital,
                                 reason is not None, reason in ("jargon", "care-unit"),
                                 len(w) > 2 and vocab.zipf(w) < 1.5)):
            counts[k] += hit
    return tuple(c / len(words) for c in counts)


@dataclass(frozen=True, slots=True)
class _Shape:
    """The part of a feature row that depends on the candidate's offsets and the note alone, not on its label,
    sources or score: the features from ``chars`` to ``number_after`` (``before``), ``repeats`` to
    ``note_candidates`` (``after``), and what the label-dependent features need of the text."""

    before: tuple[float, ...]
    after: tuple[float, ...]
    measure: bool
    last_word: str | None


#: how many span surfaces :func:`_surface` remembers before it starts over (a stream's surfaces are unbounded), and
#: the longest it remembers: about 1.3 KiB an entry, at most ~11 MiB
MEMO_SURFACES = 1 << 13
MEMO_SURFACE_CHARS = 64
#: what :func:`_surface` answers: three runs of features, whether there is a digit, the last word
SurfaceFeatures = tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...], bool, str | None]


def _surface(surface: str, cues: Cues) -> SurfaceFeatures:
    """The features of a span that depend on its characters alone, in three runs of ``_Shape.before`` (``chars`` to
    ``has_comma``, ``number_only`` to ``case``, ``multi_line`` to ``non_ascii``), whether it has a digit, and its last
    word (lower case). Remembered per surface of up to ``MEMO_SURFACE_CHARS`` in ``cues.surface_features`` (beside the
    clinical-word filter they depend on): names, dates, numbers and abbreviations recur within and across notes (7,633
    surfaces for 21,979 candidate offsets in 700 evaluation notes)."""
    memo: dict[str, SurfaceFeatures] = cues.surface_features
    found = memo.get(surface)
    if found is not None:
        return found
    cw = cues.clinical_words
    words = _WORD_TOKEN.findall(surface)
    alpha = [w.lower().removesuffix("'s") for w in LETTER_RUN.findall(surface)]
    digits = sum(map(str.isdigit, surface))
    letters = sum(map(str.isalpha, surface))
    uppers = sum(map(str.isupper, surface))
    has_digit = HAS_DIGIT.search(surface) is not None
    zipfs = [vocab.zipf(w) for w in alpha if len(w) > 1] or [0.0]
    first = (
        float(len(surface)), float(len(words)), float(digits), float(letters),
        digits / max(1, digits + letters), uppers / max(1, letters), float("/" in surface), float("-" in surface),
        float(":" in surface), float("." in surface), float("," in surface))
    second = (
        float(not letters and has_digit),
        float(_CLOCK.search(surface) is not None), float(_FULL_DATE.search(surface) is not None),
        float(any(w in MONTH_TOKENS for w in alpha)), float(any(w in WEEKDAY_TOKENS for w in alpha)),
        _case(surface))
    third = (
        float("\n" in surface), min(zipfs), max(zipfs), sum(zipfs) / len(zipfs),
        *_word_shares(alpha, cw),
        0.0 if surface.isascii() else sum(1 for c in surface if c.isalpha() and not c.isascii()) / max(1, letters))
    found = (first, second, third, has_digit, alpha[-1] if alpha else None)
    if len(surface) <= MEMO_SURFACE_CHARS:
        if len(memo) >= MEMO_SURFACES:
            memo.clear()
        memo[surface] = found
    return found


def _shape(view: NoteView, a: int, b: int, cues: Cues) -> _Shape:
    text, spans = view.text, view.spans
    surface = text[a:b]
    first, second, third, has_digit, last_word = _surface(surface, cues)
    lo, hi = line_bounds(text, a, b)
    caps_line, line_words, address_line = view.line(lo, hi)
    run = number_run(text, a, b)[2] if has_digit else ""
    left = text[max(0, a - 40):a]
    right = text[b:b + 40]
    med = view.medical(a, b)
    repeats = view.surfaces[surface.lower()] - 1
    measure = measurement_value(text, a, b)
    before = (
        *first, float(readable_date(run)) if run else -1.0, *second, caps_line, line_words,
        float(not text[lo:a].strip()), float(_HEADING_AFTER.match(text, b) is not None), *third,
        float(bool(med)), float(any(m.ambiguous for m in med)), float(measure),
        float(name_context(text, a, b)), float(_TITLE_BEFORE.search(left) is not None),
        float(_KIN_BEFORE.search(left) is not None), float(_PROVIDER_BEFORE.search(left) is not None),
        float(_CREDENTIAL_AFTER.match(right) is not None), float(_PLACE_CUE_BEFORE.search(left) is not None),
        float(_INSTITUTION_AFTER.match(right) is not None), float(_UNIT_NEAR.search(text, max(lo, a - 24), min(hi, b + 24))
                                                                  is not None),
        float(_DATE_CUE_BEFORE.search(left) is not None), float(_DOSE_BEFORE.search(left) is not None),
        float(_VERB_BEFORE.search(left) is not None), float(_AGE_SEX_AFTER.match(right) is not None),
        float(_NUMBER_BEFORE.search(left) is not None), float(_NUMBER_AFTER.match(right) is not None),
    )
    after = (float(min(repeats, 10)), address_line, view.kchars, view.caps_share, float(len(spans)))
    return _Shape(before, after, measure, last_word)


def row(view: NoteView, i: int, cues: Cues, cue_note: CueNote | None = None) -> list[float]:
    """The feature row (``FEATURES`` order) of candidate ``view.spans[i]`` (``cue_note``: ``cues.note`` of the view's
    spans and matches, built once per note by the caller that scores all its candidates). What depends on the
    offsets alone is computed once per (start, end) of the note (:class:`_Shape`)."""
    text, spans = view.text, view.spans
    span = spans[i]
    a, b = span.start, span.end
    srcs = sources_of(span)
    near_idx = view.around(i, 3)
    overlapping = [span, *(spans[k] for k in near_idx if spans[k].start < b and a < spans[k].end)]
    best: dict[str, float] = {}
    for o in overlapping:
        for s in sources_of(o):
            best[s] = max(best.get(s, 0.0), o.score)
    others = overlapping[1:]
    agrees = -1.0 if not others else float(any(o.label == span.label for o in others))
    # the ensemble's own rule (a source's default threshold, or a second source's vote) as evidence
    threshold = min(SOURCE_THRESHOLDS.get(src, 0.5) for src in srcs)
    near = len(near_idx) - len(others)
    shape = view.shapes.get((a, b))
    if shape is None:
        shape = view.shapes[(a, b)] = _shape(view, a, b, cues)
    named = 0.0
    if shape.last_word is not None and span.label == Label.NAME:
        named = float(view.named[shape.last_word] - _confident_name(span) > 0)
    flags = cues.flags(span, text, spans, view.matches, shape.measure, cue_note)
    out = [
        LABEL_CODES[str(span.label)], SUBTYPE_CODES.get(span.subtype, 0), float("regex" in srcs), float("ner" in srcs),
        float("dictionary" in srcs), float(len(srcs)), span.score, best.get("ner", 0.0), best.get("regex", 0.0),
        best.get("dictionary", 0.0), float(len(others)), agrees, float(near), float(len(best)),
        float(span.score >= threshold),
        *shape.before, named, *shape.after,
        *(float(f) for f in flags),
        float(not any(flags) and (span.score >= threshold or len(best) >= 2)),
    ]
    return out


@functools.cache
def _states_and_countries() -> frozenset[str]:
    return frozenset(x.lower() for pair in vocab.us_states() for x in pair) | frozenset(
        c.lower() for c in vocab.countries())


def state_or_country(span: Span, text: str) -> bool:
    """A place that is only a US state's name or code or a country's name ("Texas", "MD", "Dominican Republic")."""
    if span.label != Label.LOCATION:
        return False
    surface = " ".join(text[span.start:span.end].replace(".", " ").split()).strip(" ,;:").lower()
    return surface in _states_and_countries()


def weekday_only(span: Span, text: str) -> bool:
    """Every word of the span is a weekday's name ("Monday", "tues")."""
    words = LETTER_RUN.findall(text, span.start, span.end)
    return bool(words) and all(w.lower().rstrip(".") in WEEKDAY_TOKENS for w in words)


#: the words for years after an age, in English and the other languages the patterns read ("45 años", "93 ans",
#: "57 Jahre", "65-jährige", "45 yo")
_YEARS_WORD = re.compile(r"[ \t]*-?[ \t]*(?:años|año|anos|ano|anys|any|anni|anno|ans|an|jahren?|jaar|years?|yrs?|"
                         r"yo|y/o|y\.o\.|(?:jährig|jarig)e?[nmrs]?)(?![^\W_])", re.IGNORECASE)
_YEARS_WORDS = frozenset("años año anos ano anys any anni anno ans an jahre jahren jaar years year yrs yr yo y o".split())


def age_only(span: Span, text: str) -> bool:
    """``span`` is only an age up to 89 (the ``ages`` policy): one number up to 89 that a word for years follows in
    the text ("45 años", "57 Jahre", "65-jährige", "45 yo"), that an age field's label introduces ("Edad: 27", "Age:
    45"; ``vocab.AGE_FIELD_LABELS``), or that ends a span starting with the other languages' nouns for a patient
    ("Paciente varón de 64"), and nothing else in the span but that word or label, the nouns for a patient, words of
    a sex and lower-case particles ("de 69", "femenina de 30", "varón de 11 años"). Safe Harbor: no identifier (an
    age over 89 is the regex step's AGE candidate)."""
    words = list(TOKEN.finditer(text, span.start, span.end))
    numbers = [m for m in words if m.group().isdigit()]
    if len(numbers) != 1 or len(numbers[0].group()) > 2 or int(numbers[0].group()) > 89:
        return False
    number, labelled = numbers[0], False
    for m in words:
        w = m.group().lower()
        if m is number:
            continue
        if w in vocab.AGE_FIELD_LABELS and m.end() < number.start():
            labelled = True
        elif not (w in _YEARS_WORDS or w in vocab.PERSON_NOUNS or w in vocab.SEX_VALUES or w == "j"
                  or (m.group().islower() and w in vocab.OTHER_FUNCTION_WORDS) or w.startswith(("jährig", "jarig"))):
            return False
    if not labelled and number is words[0]:
        labelled = field_label_before(text, span.start) in vocab.AGE_FIELD_LABELS
    return bool(labelled or _YEARS_WORD.match(text, number.end())
                or (number is words[-1] and words[0].group().lower() in vocab.PERSON_NOUNS))


@dataclass(frozen=True)
class Extractor:
    """Splits a note's candidates into those no model may drop (protected sources, identifier shapes, the
    message's own identifiers, detectors the model does not know, weekdays kept by policy), those the policies drop
    (weekdays, states and countries, ages up to 89, each by its option) and those the model scores, with their
    feature rows. The decide step and its training use the same one."""

    cues: Cues
    vocab: MedicalVocabulary
    protected: frozenset[str] = frozenset({"message"})
    protect_message: bool = True
    weekdays: bool = True
    known: frozenset[str] = frozenset(SOURCES)
    states_countries: bool = True
    ages: bool = False

    def split(self, note: Note) -> tuple[list[int], list[int], list[list[float]]]:
        """(candidates kept without the model, candidates the model scores, their feature rows). A weekday-only
        candidate under ``weekdays=False``, a state or country under ``states_countries=False``, or an age up to 89
        under ``ages=False`` (``age_only``), is in neither list: the policy drops it. The other candidates' rows are
        computed with every candidate of the note present, so a policy changes no other candidate's row."""
        text = note.text
        message = message_identifiers(note.input) if self.protect_message else None
        fixed: list[int] = []
        scored: list[int] = []
        for i, s in enumerate(note.spans):
            if protected(s, text, self.protected, message) or not sources_of(s) <= self.known:
                fixed.append(i)
            elif weekday_only(s, text):
                if self.weekdays:
                    fixed.append(i)
            elif state_or_country(s, text):
                if self.states_countries:
                    fixed.append(i)
            elif age_only(s, text):
                if self.ages:
                    fixed.append(i)
            else:
                scored.append(i)
        if not scored:
            return fixed, [], []
        cands = [note.spans[i] for i in scored]
        matches = [m for lo, hi in windows(text, cands, MAX_CHARS) for m in self.vocab.scan(text, lo, hi)]
        view = NoteView.of(text, note.spans, matches)
        cue_note = self.cues.note(view.spans, view.matches)
        return fixed, scored, [row(view, i, self.cues, cue_note) for i in scored]
