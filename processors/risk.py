"""Residual risk: a no-gold estimate of the identifiers a note still holds after de-identification.

Shared core (like ``spans.py``: steps import it, it imports no step). One definition for the metrics step
(published on every note in ``NoteMetrics.risk``) and the optional LLM step (which scores the candidates right
after the decide step and sends only notes at or over its ``risk_threshold``): :func:`note_risk`
derives the inputs both steps give :func:`residual_risk` (medical-dictionary matches, medical syntax, the
clinical-word judge :class:`WordJudge`, loaded once per process by :func:`word_judge`), which is a pure function of
the original text, the final spans and what the pipeline knows about the text (vocabularies, the
message's own identifiers, the candidates it rejected, the NER model's sub-threshold mass when a detector
records it). It looks only at text NO final span covers, and counts there:

- ``names``: words of the first-name / surname lists that no vocabulary explains (not clinical vocabulary,
  not a common word, not a medical term), written capitalised or in an ALL-CAPS line;
- ``proper_nouns``: capitalised words (or acronyms in mixed-case text) of three letters or more that no
  vocabulary knows at all (no clinical or medical entry, near-zero general frequency): hospital and unit
  names, abbreviations of places, misspelled names;
- ``identifier_numbers``: numbers with an identifier cue of their own
  (``dictionaries.medical_syntax.identifier_cue``: date shapes, month names, phone shapes, long digit
  runs, "MRN" / "DOB" / "pager" before them, ages over 89) that are not clinical syntax
  (``measurement_value``, the medical syntax regexes);
- ``rejected_mass``: the scores of candidates the pipeline rejected (``note.dropped``) that are not medical
  terms or clinical numbers: after the decide step, the decision model's calibrated probability that each dropped
  candidate holds an identifier (so the mass is the expected number of identifiers among them); without it, the
  detectors' scores of candidates a threshold or vote turned down;
- ``ner_mass``: the NER model's entity probability below its threshold, when the note carries it
  (``Note.extra["ner_low_confidence_mass"]``), else 0;
- ``kchars``: the note's length in thousands of characters (longer notes hide more);
- ``detected``: the final spans (identifiers come in groups: a note with some has more).

``expected`` is a Poisson model of the missed identifiers, ``exp(intercept + sum w_k log1p(signal_k))``
(``RiskWeights``: hand-set priors; ``fit_weights`` and ``scripts/fit_risk_cv.py`` fit them on annotated notes,
cross-validated by patient);
``score = 1 - exp(-expected)`` is then the probability that at least one identifier was missed, and
``risky`` is ``score >= threshold``.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dictionaries import vocab
from dictionaries.medical import medical_syntax_spans
from dictionaries.medical_syntax import identifier_cue, measurement_value
from dictionaries.text import TOKEN, line_fact
from processors.spans import Intervals
from schemas.models import Span

#: general-text frequency below which a word is unknown to English (wordfreq Zipf; 0 = never seen)
UNKNOWN_ZIPF = 1.5


_LETTERS = re.compile(r"[A-Za-z]+")


class WordJudge:
    """Is a changed word clinical vocabulary, a common word, or a name? Built lazily: the clinical-word
    filter reads the ICD-10-CM and HPO texts once (seconds), and only notes with changed words need it."""

    def __init__(self, common_word_zipf: float, clinical_words: Callable[[], Any] | None = None) -> None:
        self.common_word_zipf = common_word_zipf
        self._factory = clinical_words

    @functools.cached_property
    def words(self) -> Any:
        if self._factory is not None:
            return self._factory()
        from dictionaries.jargon import clinical_words

        return clinical_words()

    @functools.cached_property
    def _names(self) -> tuple[dict[str, int], frozenset[str]]:
        bundle = vocab.load()
        return bundle.first_counts, frozenset(s.lower() for s in bundle.surnames)

    def is_jargon(self, word: str) -> bool:
        return bool(self.words.reason(word) == "jargon")

    def is_name(self, word: str) -> bool:
        first, last = self._names
        w = word.lower()
        return w in first or w in last


def caps_line(text: str, pos: int) -> bool:
    """Is the line around ``pos`` written mostly in capitals? Then case says nothing about names."""
    return line_fact(_caps, text, pos)


def _caps(line: str) -> bool:
    letters = "".join(_LETTERS.findall(line))
    return len(letters) >= 8 and sum(c.isupper() for c in letters) >= 0.8 * len(letters)


def medical_matches(text: str, vocab: Any, message: Intervals, spans: Sequence[Span] = (),
                    found: Sequence[Any] | None = None) -> list[Any]:
    """The original's medical-dictionary matches, without those on the message's own identifiers, those
    strictly inside a longer span ("mychart" in a URL, "behavioral" in a hospital name, "PM" in a
    date-time: parts of an identifier) and ambiguous ones (also names or places: "Iris", "Wilson") that a
    span covers: the detectors and recovery judged them names. A span that is exactly an unambiguous
    term still counts. ``found``: ``vocab.find(text)`` when the caller has it."""
    ranges = sorted((s.start, s.end) for s in spans)
    starts = [s for s, _ in ranges]
    longest = max((e - s for s, e in ranges), default=0)
    out = []
    for m in vocab.find(text) if found is None else found:
        if message.overlaps(m.start, m.end):
            continue
        # the spans that contain the match start between ``m.end - longest`` and ``m.start`` (bisect, not a scan of
        # every span per match: quadratic on notes dense with identifiers)
        near = ranges[bisect.bisect_left(starts, m.end - longest):bisect.bisect_right(starts, m.start)]
        inside = [e - s for s, e in near if m.end <= e]
        if inside and (m.ambiguous or max(inside) > m.end - m.start):
            continue
        out.append(m)
    return out


#: the signals, in the order of ``RiskWeights.coefficients``
SIGNALS: tuple[str, ...] = ("names", "proper_nouns", "identifier_numbers", "rejected_mass", "ner_mass", "kchars",
                            "detected")


@dataclass(frozen=True, slots=True)
class RiskWeights:
    """A Poisson model of the missed identifiers: ``expected = exp(intercept + sum_k w_k * log1p(signal_k))``.

    The defaults are priors set by hand (every signal raises the risk; length most, as longer notes hold
    more identifiers), NOT fitted: on the PhysioNet dev notes a Poisson fit cross-validated by patient group
    ranked notes worse than these priors (``scripts/fit_risk_cv.py``, ``scripts/results/risk_cv_physionet.json``:
    40 notes with a missed identifier are too few to fit seven weights). ``ner_mass`` has weight 0 until a
    detector records it. A site with annotated notes can fit its own (``fit_weights``)."""

    intercept: float = -4.0
    names: float = 0.3
    proper_nouns: float = 0.3
    identifier_numbers: float = 0.5
    rejected_mass: float = 0.5
    ner_mass: float = 0.0
    kchars: float = 1.0
    detected: float = 0.3

    @property
    def coefficients(self) -> tuple[float, ...]:
        return tuple(float(getattr(self, k)) for k in SIGNALS)


DEFAULT_WEIGHTS = RiskWeights()
#: the score from which a note is ``risky`` (the LLM step's gate)
RISKY_SCORE = 0.1


@dataclass(frozen=True, slots=True)
class RiskResult:
    names: int
    proper_nouns: int
    identifier_numbers: int
    rejected_mass: float
    ner_mass: float
    kchars: float
    detected: int
    expected: float
    score: float
    risky: bool

    def signals(self) -> tuple[float, ...]:
        return tuple(float(getattr(self, k)) for k in SIGNALS)


def risk_expected(signals: Sequence[float], weights: RiskWeights = DEFAULT_WEIGHTS) -> float:
    """Expected missed identifiers for the signals (in ``SIGNALS`` order)."""
    z = weights.intercept + sum(w * math.log1p(max(0.0, x)) for w, x in zip(weights.coefficients, signals,
                                                                             strict=True))
    return math.exp(min(z, 50.0))


def residual_risk(text: str, spans: Sequence[Span], *, judge: WordJudge, medical_terms: Sequence[Any] = (),
                  rejected: Sequence[Span] = (), message: Sequence[tuple[int, int]] = (),
                  ner_mass: float | None = None,
                  syntax: Callable[[str, int, int], Sequence[tuple[int, int, str]]] | None = None,
                  weights: RiskWeights = DEFAULT_WEIGHTS, threshold: float = RISKY_SCORE) -> RiskResult:
    """The residual-risk signals and score of one note (see the module docstring).

    ``spans``: the final spans; ``judge``: the clinical-word and name-list judge (shared with retention);
    ``medical_terms``: medical-dictionary matches of the original (``start``, ``end``, ``ambiguous``);
    ``rejected``: candidates the pipeline dropped; ``message``: the message's own identifiers (covered or
    not, they are the recall proxy's business); ``syntax(text, start, end)``: medical syntax spans."""
    covered = Intervals([*((s.start, s.end) for s in spans), *message])
    terms = Intervals((m.start, m.end) for m in medical_terms if not m.ambiguous)
    clinical_syntax = Intervals((s, e) for s, e, _k in (syntax(text, 0, len(text)) if syntax else ()))
    names = proper = 0
    runs: set[tuple[int, int]] = set()
    for m in TOKEN.finditer(text):
        a, b = m.span()
        if covered.overlaps(a, b):
            continue
        w = m.group()
        if any(map(str.isdigit, w)):
            if not clinical_syntax.overlaps(a, b) and not measurement_value(text, a, b):
                run = _number_run(text, a, b)
                if run not in runs and identifier_cue(text, *run) is not None:
                    runs.add(run)
            continue
        if len(w) < 2 or not w[0].isupper() or terms.overlaps(a, b):
            continue
        in_caps = w.isupper() and caps_line(text, a)
        title = w[1:].islower()
        if not (title or in_caps or (w.isupper() and len(w) >= 3)):
            continue
        if judge.words.reason(w) is not None or vocab.is_common_word(w, judge.common_word_zipf):
            continue
        if judge.is_name(w):
            names += 1
        elif len(w) >= 3 and vocab.zipf(w.lower()) < UNKNOWN_ZIPF:
            proper += 1
    clinical = Intervals([*((m.start, m.end) for m in medical_terms)])
    rejected_mass = 0.0
    # the regions counted so far, in order of start, with the prefix maximum of their ends (an overlap test in
    # O(log n), not a scan of every counted region per candidate)
    seen_starts: list[int] = []
    seen_max_end: list[int] = []
    for s in sorted(rejected, key=lambda s: (s.start, -s.score)):
        if covered.overlaps(s.start, s.end) or clinical.overlaps(s.start, s.end):
            continue
        if clinical_syntax.overlaps(s.start, s.end) or measurement_value(text, s.start, s.end):
            continue
        k = bisect.bisect_left(seen_starts, s.end)  # the counted regions that start before s ends
        if k and seen_max_end[k - 1] > s.start:
            continue  # one region counts once, by its strongest candidate
        seen_starts.append(s.start)
        seen_max_end.append(max(s.end, seen_max_end[-1]) if seen_max_end else s.end)
        rejected_mass += s.score
    numbers = len(runs)
    mass = float(ner_mass or 0.0)
    kchars = round(len(text) / 1000.0, 3)
    detected = len(spans)
    expected = risk_expected((names, proper, numbers, rejected_mass, mass, kchars, detected), weights)
    score = 1.0 - math.exp(-expected)
    return RiskResult(names, proper, numbers, round(rejected_mass, 6), round(mass, 6), kchars, detected,
                      round(expected, 6), round(score, 6), score >= threshold)


def recorded_ner_mass(extra: Mapping[str, Any]) -> float | None:
    """The NER model's sub-threshold entity mass when a detector recorded it on the note (``Note.extra``)."""
    mass = extra.get("ner_low_confidence_mass")
    return float(mass) if isinstance(mass, int | float) else None


def note_risk(text: str, spans: Sequence[Span], *, medical: Any, judge: WordJudge, rejected: Sequence[Span] = (),
              message: Sequence[Span] = (), ner_mass: float | None = None, matches: Sequence[Any] | None = None,
              weights: RiskWeights = DEFAULT_WEIGHTS, threshold: float = RISKY_SCORE) -> RiskResult:
    """:func:`residual_risk` of ``text`` with ``spans`` covering it, given the medical vocabulary ``medical``
    (``find``, ``genes``): its matches in the original (``matches`` when the caller already has them) and
    its medical syntax; ``message``: the message's own identifiers found in the original."""
    msg = [(s.start, s.end) for s in message]
    if matches is None:
        matches = medical_matches(text, medical, Intervals(msg), spans)

    def syntax(t: str, a: int, b: int) -> Sequence[tuple[int, int, str]]:
        return list(medical_syntax_spans(t, medical.genes, start=a, end=b))

    return residual_risk(text, spans, judge=judge, medical_terms=matches, rejected=rejected, message=msg,
                         syntax=syntax, ner_mass=ner_mass, weights=weights, threshold=threshold)


def word_judge(common_word_zipf: float, cache_dir: Path | None) -> WordJudge:
    """The :class:`WordJudge` of the metrics and LLM steps (``dictionaries.jargon.clinical_words`` builds the
    clinical-word filter once per process and cache folder)."""
    from dictionaries.jargon import clinical_words

    return WordJudge(common_word_zipf, lambda: clinical_words(cache_dir))


_SEPARATORS = "/.-:"


def _number_run(text: str, a: int, b: int) -> tuple[int, int]:
    """The run of digits, letters and separators around a number token ("8/12/91", "555-1234"): what a
    detector would tag, without separators at its ends (a full stop after "8/12.")."""
    lo, hi = a, b
    while lo > 0 and a - lo < 16 and (text[lo - 1].isalnum() or text[lo - 1] in _SEPARATORS):
        lo -= 1
    while hi < len(text) and hi - b < 16 and (text[hi].isalnum() or text[hi] in _SEPARATORS):
        hi += 1
    while lo < a and text[lo] in _SEPARATORS:
        lo += 1
    while hi > b and text[hi - 1] in _SEPARATORS:
        hi -= 1
    return lo, hi


def fit_weights(signals: Sequence[Sequence[float]], missed: Sequence[float], *, l2: float = 1.0) -> RiskWeights:
    """Poisson regression of the missed identifiers per note on ``log1p`` of the signals (``SIGNALS`` order),
    with an L2 penalty ``l2`` on the coefficients (not the intercept), by ``scipy.optimize.minimize``
    (L-BFGS-B, analytic gradient). Signals that never vary get weight 0."""
    import numpy as np
    from scipy.optimize import minimize

    x = np.log1p(np.clip(np.asarray(signals, dtype=np.float64), 0.0, None))
    y = np.asarray(missed, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != len(SIGNALS) or x.shape[0] != y.shape[0]:
        raise ValueError("signals must be (notes, len(SIGNALS)) and missed one value per note")
    used = np.ptp(x, axis=0) > 0
    xs = np.hstack([np.ones((x.shape[0], 1)), x[:, used]])
    penalty = np.r_[0.0, np.full(int(used.sum()), l2)]

    def loss(beta: Any) -> tuple[float, Any]:
        z = np.clip(xs @ beta, -50.0, 50.0)
        mu = np.exp(z)
        value = float(np.sum(mu - y * z) + 0.5 * np.sum(penalty * beta * beta))
        grad = xs.T @ (mu - y) + penalty * beta
        return value, grad

    start = np.zeros(xs.shape[1])
    start[0] = math.log(max(float(y.mean()), 1e-6))
    beta = minimize(loss, start, jac=True, method="L-BFGS-B").x
    coefs = iter(beta[1:])
    values = {k: (float(next(coefs)) if u else 0.0) for k, u in zip(SIGNALS, used, strict=True)}
    return RiskWeights(intercept=float(beta[0]), **values)
