"""Trials on the decision stage that did not ship (issue 25, 2026-11-28): what each does to nested design CV, over
several LightGBM seeds, so that nobody runs them again without a new idea.

The shipped configuration's figures come from ``scripts/decider_cv.py``; each trial here changes one thing on the
same training rows (the out-of-fold NER spans of the design notes, synthetic and MEDDOCAN train notes) and reports
the nested design-CV estimate (each fold's threshold chosen without it) and the out-of-fold false-positive tokens at
fixed recalls (0.97 / 0.975 / 0.98), which separate a better ranking from a moved threshold.

    .venv/bin/python scripts/decider_trials.py cv --trial T [--seeds 13,1,2,3] [-o scripts/results/decider_trials.json]
    # T: baseline, features, more_shift, abbreviations (abbreviated_weekdays, state_codes, ip_label), bag, language,
    # seed_ensemble, ner_noise, token_weights, spelling, section, relative_scores, design_weight_40, other_zipf,
    # monotone, corpus_convention, small_trees, tiny_trees, fewer_rounds, ner_probs, ner_probs_design_only
    # the same behind another NER (another seed or recipe: its out-of-fold file and its model on all design notes,
    # e.g. from scripts/ner_cv.py train/soup + unpack); --name keys the run in the output
    .venv/bin/python scripts/decider_trials.py cv --trial baseline --oof FILE.jsonl.gz --ner-model DIR --name N
    # ner_noise with the second rows from another out-of-fold file (default: the float32 path's)
    .venv/bin/python scripts/decider_trials.py cv --trial ner_noise --copy-oof FILE.jsonl.gz --name N
    # other rules for the folds' thresholds (recall targets, a cost of a missed token) on the shipped configuration
    .venv/bin/python scripts/decider_trials.py thresholds [--seeds 13,1,2,3]
    # the protocol's second step: the trial and the shipped configuration, each retrained with every seed, on every
    # set (the lockbox in aggregate), means over the seeds
    .venv/bin/python scripts/decider_trials.py lockbox-seeds --trial baseline|T [--seeds 13,1,2,3] [--oof F --ner-model D]
    # the one trial that reached the lockbox: retrain both models with it and score every set (aggregates only;
    # the shipped models stay untouched: the trial's go to a temporary folder)
    .venv/bin/python scripts/decider_trials.py lockbox --trial abbreviations

Trials:
- ``features``: 20 more features: the word before and after the candidate on its line (present, Zipf frequency,
  clinical word, name-list word, digit, case), the candidate's longest word elsewhere in the note (occurrences no
  candidate covers, in lower case, in all, and the best score of another candidate holding it), and a number's parts
  (how many, the first three values, the digits of the first two).
- ``more_shift``: 1,200 more synthetic ICU shift notes (seed 7005) as training rows, weight 1 and 5.
- ``abbreviations``: the weekday and state policies keep only what is written out ("Saturday", "Texas"); an
  abbreviation ("sat", a saturation; "CT", a scan; "NC", a nasal cannula) goes to the model like any candidate; and
  the NER's IP label without an address's shape ("98") no longer protects a candidate. ``abbreviated_weekdays``,
  ``state_codes`` and ``ip_label``: each of the three alone.
- ``bag``: the shipped model as the average of the inner fold models whose out-of-fold scores chose the threshold,
  instead of one model refitted on all rows.
- ``language``: one note-level column, the share of the note's words that are another language's function words,
  so that the trees can tell the Spanish training rows (MEDDOCAN) from the English ones.
- ``ner_noise``: the design notes' rows a second time, from the float32 path's out-of-fold NER spans (the same fold
  models unquantized: another draw of the NER's scores on the same notes) at weight 0, 10 and 20, the same patients in
  the same folds; the nested estimate is also given on the held-out patients' float32 rows. Does a decision model
  that has seen two draws of the NER's scores keep the identifiers of a third (a new NER model) better?
- ``spelling``: three columns for misspelt words ("LENTGH", "grandaughter", "Reveiw", "cahir"): the Zipf frequency of
  the most frequent English word one edit from a word of the candidate that is no word itself (all words, and words
  that are not first names: "Smtih" is one edit from "smith"), and the share of its words with such a neighbour.
- ``section``: one column per kind of section the candidate stands in (the last heading before it: "RESP:",
  "SOCIAL:", "A/P:"; ``SECTION_KINDS``), and one for none.
- ``design_weight_40``: the PhysioNet design notes' rows at weight 40 instead of 20 (chosen when presidio_synth_v2
  recall had no margin over its 0.92; it has some now).
- ``other_zipf``: the candidate's words' frequency in Spanish, German, French, Italian, Portuguese and Dutch
  (highest, lowest, highest less English), for the foreign sentence-initial nouns the English frequencies miss.
- ``monotone``: LightGBM's monotone constraints on the columns whose meaning fixes a direction (the NER's and the
  other detectors' scores, cues before and after, the old rules' cues and keep), the others free.
- ``relative_scores``: the candidate's NER score beside the note's other NER spans (its rank among them, its ratio
  to the best of its label, the note's median, how many score 0.5 or more); run behind three NER draws.
- ``corpus_convention``: not a change to ship but a figure: the weekday, state and institution-type-word
  conventions the PhysioNet annotators' way (README, "Policies, not fitting"), retrained and scored in design CV.
- ``small_trees``, ``tiny_trees``, ``fewer_rounds``: the learner's settings only (15 or 7 leaves with at least 40
  rows a leaf; 250 rounds instead of 500), through ``learner``, which ``monotone`` uses too.
- ``ner_probs``: six columns from the NER's word-piece probabilities instead of its decoded spans alone: over the
  candidate's words, the mean and lowest probability of its own label, the mean entity probability, the highest mean
  of another label; the entity probability of the word before and after it (a span's edges). The design notes' from
  their fold models (``decider_cv.py oof-probs``, kept in ``scripts/data``), the other corpora's from the shipped NER.
  ``ner_probs_design_only``: the same columns on the design rows only, missing (NaN) on the other corpora's.
- ``seed_ensemble``: every model the average of four LightGBM models that differ only in their seed (the run's
  seed + 0, 1000, 2000, 3000): less of the seed's noise in the scores and, perhaps, steadier fold thresholds.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import decider_cv as D  # noqa: E402

RESULTS = D.RESULTS / "decider_trials.json"
Extra = Callable[[Any, Sequence[int]], list[list[float]]]


# -- the trials' features ----------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W\d_][^\W_]*(?:['\u2019][^\W_]+)?|\d+(?:[.,/:-]\d+)*")
_ALPHA = re.compile(r"[^\W\d_]+")
_NUMS = re.compile(r"\d+")


def _word_case(w: str) -> float:
    if not w[:1].isalpha():
        return 0.0
    if w.islower():
        return 1.0
    if w.isupper() and len(w) > 1:
        return 3.0
    return 2.0 if w[:1].isupper() else 4.0


def _neighbour(w: str | None) -> list[float]:
    from dictionaries import vocab
    from dictionaries.jargon import clinical_words

    if w is None:
        return [0.0, 0.0, -1.0, -1.0, -1.0, -1.0]
    if w[:1].isdigit():
        return [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    lw = w.lower()
    return [1.0, vocab.zipf(lw), float(clinical_words().reason(w) is not None),
            float(vocab.is_first_name(lw) or vocab.is_surname(lw)), 0.0, _word_case(w)]


def neighbours(note: Any, idx: Sequence[int]) -> list[list[float]]:
    text, out = note.text, []
    for i in idx:
        s = note.spans[i]
        lo = text.rfind("\n", 0, s.start) + 1
        hi = text.find("\n", s.end)
        hi = len(text) if hi < 0 else hi
        left = [m for m in _WORD.finditer(text, max(lo, s.start - 40), s.start) if m.end() <= s.start]
        right = _WORD.search(text, s.end, min(hi, s.end + 40))
        out.append(_neighbour(left[-1].group() if left else None) + _neighbour(right.group() if right else None))
    return out


def elsewhere(note: Any, idx: Sequence[int]) -> list[list[float]]:
    text, spans, out = note.text, note.spans, []
    memo: dict[str, tuple[float, float, float]] = {}
    for i in idx:
        s = spans[i]
        words = [w for w in _ALPHA.findall(text, s.start, s.end) if len(w) >= 3]
        if not words:
            out.append([-1.0] * 4)
            continue
        key = max(words, key=len).lower()
        if key not in memo:
            occ = [(m.start(), m.end(), m.group()) for m in re.finditer(
                r"(?<![^\W_])" + re.escape(key) + r"(?![^\W_])", text, re.IGNORECASE)]
            uncovered = sum(1 for a, b, _ in occ if not any(x.start <= a and b <= x.end for x in spans))
            memo[key] = (float(uncovered), float(sum(g.islower() for _, _, g in occ)), float(len(occ)))
        best = max((o.score for k, o in enumerate(spans) if k != i and not (o.start < s.end and s.start < o.end)
                    and key in text[o.start:o.end].lower()), default=0.0)
        out.append([memo[key][0], memo[key][1], best, memo[key][2]])
    return out


def number_parts(note: Any, idx: Sequence[int]) -> list[list[float]]:
    out = []
    for i in idx:
        s = note.spans[i]
        nums = _NUMS.findall(note.text, s.start, s.end)
        if not nums:
            out.append([0.0] + [-1.0] * 5)
            continue
        vals = [float(min(int(x), 99999)) for x in nums[:3]] + [-1.0] * (3 - min(3, len(nums)))
        out.append([float(len(nums)), *vals, float(len(nums[0])), float(len(nums[1])) if len(nums) > 1 else -1.0])
    return out


@functools.lru_cache(maxsize=1)
def spelling_index() -> tuple[dict[str, tuple[str, ...]], dict[str, float]]:
    """English words of four letters or more (wordfreq's 60,000 most frequent), keyed by themselves and by each of
    their one-letter deletions: a word one insertion, deletion, substitution or transposition away from a query shares
    a key with one of the query's deletions (symmetric deletion, as SymSpell)."""
    from collections import defaultdict

    from wordfreq import top_n_list, zipf_frequency

    keys: dict[str, list[str]] = defaultdict(list)
    zipfs: dict[str, float] = {}
    for w in top_n_list("en", 60000):
        if len(w) < 4 or not w.isalpha():
            continue
        zipfs[w] = zipf_frequency(w, "en")
        for k in {w, *(w[:i] + w[i + 1:] for i in range(len(w)))}:
            keys[k].append(w)
    return {k: tuple(v) for k, v in keys.items()}, zipfs


def typo_of(word: str) -> tuple[float, float]:
    """(the Zipf frequency of the most frequent English word about one edit from ``word``, the same among words
    that are not first names), 0 when ``word`` is itself a word (Zipf >= 2.5), shorter than 4 letters or near
    nothing: "LENTGH" -> length, "grandaughter" -> granddaughter; "Wisniewski" -> nothing."""
    from dictionaries import vocab

    w = word.lower()
    if len(w) < 4 or not w.isalpha() or vocab.zipf(w) >= 2.5:
        return 0.0, 0.0
    keys, zipfs = spelling_index()
    near = {x for k in {w, *(w[:i] + w[i + 1:] for i in range(len(w)))} for x in keys.get(k, ())}
    near.discard(w)
    if not near:
        return 0.0, 0.0
    plain = [zipfs[x] for x in near if not vocab.is_first_name(x)]
    return max(zipfs[x] for x in near), max(plain, default=0.0)


def spelling(note: Any, idx: Sequence[int]) -> list[list[float]]:
    """Per candidate: the highest :func:`typo_of` of its words (both columns) and the share of its words of four
    letters or more that are one edit from an English word (a misspelt "dauther", "LAIBLE", "Reveiw")."""
    out = []
    for i in idx:
        s = note.spans[i]
        words = [w for w in _ALPHA.findall(note.text, s.start, s.end) if len(w) >= 4]
        if not words:
            out.append([-1.0, -1.0, -1.0])
            continue
        t = [typo_of(w) for w in words]
        out.append([max(a for a, _ in t), max(b for _, b in t), sum(a > 0 for a, _ in t) / len(words)])
    return out


#: The kinds of a note's sections, by the words their headings use (nursing notes' "RESP:", "NEURO-", "SOCIAL:",
#: "A/P:"); a candidate's section is the last heading before it.
SECTION_KINDS: dict[str, tuple[str, ...]] = {
    "resp": ("resp", "respiratory", "pulm", "pulmonary", "lungs", "lung", "vent", "ventilator", "airway",
             "breathing", "o2"),
    "cv": ("cv", "cvs", "cardiac", "cardio", "cardiovascular", "hemodynamics", "hemodynamic", "heart", "c/v"),
    "neuro": ("neuro", "neurologic", "neurological", "neuro/ms", "ms", "mental status", "cns"),
    "gi_gu": ("gi", "gu", "gi/gu", "renal", "abd", "abdomen", "i/o", "i&o", "fen", "nutrition", "endo", "lytes",
              "urine", "gu/renal"),
    "id_heme": ("id", "temp", "infectious disease", "heme", "hematology", "labs", "lab"),
    "skin_lines": ("skin", "integ", "integument", "wound", "wounds", "lines", "access", "iv access"),
    "social": ("social", "soc", "family", "dispo", "disposition", "psychosocial", "psych/social", "support",
               "contact", "s/w", "sw", "emotional", "coping", "pt/family", "family/social", "psych"),
    "plan": ("plan", "a/p", "assessment", "impression", "assess", "a", "p"),
    "history": ("hpi", "history", "pmh", "pmhx", "hx", "ros", "allergies", "meds", "medications", "events",
                "brief hpi", "past medical history"),
    "activity_pain": ("pain", "comfort", "activity", "mobility", "safety"),
}
_SECTION_OF = {w: k for k, words in SECTION_KINDS.items() for w in words}
#: a heading: one of those words (one letter only at a line's start) and ":" or a dash, at a line's start or after a
#: sentence's end or a wide gap
_HEADING = re.compile(
    r"(?:^|(?<=[.;]\s)|(?<=\s\s))[ \t>*-]*(?P<h>" + "|".join(
        re.escape(w) for w in sorted((w for w in _SECTION_OF if len(w) > 1), key=len, reverse=True))
    + r")[ \t]*(?::|-{1,2}(?![\w]))|^[ \t]*(?P<l>[ap])[ \t]*:", re.IGNORECASE | re.MULTILINE)
SECTION_NAMES = (*(f"section_{k}" for k in SECTION_KINDS), "section_none")


def sections(note: Any, idx: Sequence[int]) -> list[list[float]]:
    """Per candidate, one column per section kind (``SECTION_KINDS``), 1 for the kind of the last heading before it
    (``section_none``: no heading yet)."""
    import bisect

    heads = [(m.start(), _SECTION_OF[(m.group("h") or m.group("l")).lower()]) for m in _HEADING.finditer(note.text)]
    starts = [a for a, _ in heads]
    kinds = list(SECTION_KINDS)
    out = []
    for i in idx:
        k = bisect.bisect_right(starts, note.spans[i].start) - 1
        row = [0.0] * (len(kinds) + 1)
        row[kinds.index(heads[k][1]) if k >= 0 else len(kinds)] = 1.0
        out.append(row)
    return out


EXTRA_NAMES = (*(f"{side}_{k}" for side in ("prev", "next") for k in ("present", "zipf", "clinical", "name", "digit",
                                                                     "case")),
               "uncovered_same", "lower_same", "best_score_same", "all_same",
               "num_parts", "part1", "part2", "part3", "part1_digits", "part2_digits")


def all_extra(note: Any, idx: Sequence[int]) -> list[list[float]]:
    return [a + b + c for a, b, c in zip(neighbours(note, idx), elsewhere(note, idx), number_parts(note, idx),
                                         strict=True)]


@functools.lru_cache(maxsize=1)
def foreign_function_words() -> frozenset[str]:
    """The 60 most frequent words of Spanish, German, French, Italian, Portuguese and Dutch (wordfreq) that are rare
    in English (Zipf < 4: "que", "und", "het"; not "de", "die", "a")."""
    from wordfreq import top_n_list, zipf_frequency

    return frozenset(w for lang in ("es", "de", "fr", "it", "pt", "nl") for w in top_n_list(lang, 60)
                     if zipf_frequency(w, "en") < 4.0)


def note_language(note: Any, idx: Sequence[int]) -> list[list[float]]:
    """One note-level column: the share of the note's words that are another language's function words (PhysioNet
    notes 0-0.007, MEDDOCAN train notes 0.015-0.10): the trees can then tell the Spanish training rows from the
    English ones."""
    words = _ALPHA.findall(note.text.lower())
    share = sum(w in foreign_function_words() for w in words) / len(words) if words else 0.0
    return [[share] for _ in idx]


@contextlib.contextmanager
def abbreviations_to_model(parts: frozenset[str] = frozenset({"weekdays", "states", "ip"})) -> Iterator[None]:
    """The ``abbreviations`` trial's code, patched in for the duration (the shipped code is unchanged); ``parts``:
    which of its three changes (abbreviated weekdays, state codes, the NER's IP label) to make."""
    from dictionaries import vocab
    from dictionaries.calendar import WEEKDAYS
    from processors import shapes
    from processors.decide import features as F
    from schemas.labels import Label
    from schemas.models import Span

    codes = frozenset(code.lower() for _, code in vocab.us_states())

    def surface(span: Span, text: str) -> str:
        return " ".join(text[span.start:span.end].replace(".", " ").split()).strip(" ,;:").lower()

    def abbreviated_weekday(span: Span, text: str) -> bool:
        return any(w.lower().removesuffix("'s").rstrip(".") not in WEEKDAYS
                   for w in F.LETTER_RUN.findall(text, span.start, span.end))

    old_weekday, old_state, old_shape = F.weekday_only, F.state_or_country, shapes.has_identifier_shape
    if "weekdays" in parts:
        F.weekday_only = lambda span, text: old_weekday(span, text) and not abbreviated_weekday(span, text)
    if "states" in parts:
        F.state_or_country = lambda span, text: (old_state(span, text)
                                                 and "".join(surface(span, text).split()) not in codes)

    def shape(span: Span, text: str) -> bool:
        if span.label == Label.IP and shapes.sources_of(span) <= shapes.MODEL_SOURCES and not shapes.identifier_shaped(
                text[span.start:span.end].strip()):
            return False
        return old_shape(span, text)

    if "ip" in parts:
        shapes.has_identifier_shape = shape
    try:
        yield
    finally:
        F.weekday_only, F.state_or_country, shapes.has_identifier_shape = old_weekday, old_state, old_shape


@contextlib.contextmanager
def seed_ensemble(size: int = 4) -> Iterator[None]:
    """The ``seed_ensemble`` trial: every model (fold, inner fold, refit) is the average of ``size`` LightGBM models
    that differ only in their seed (the run's seed, +1000, +2000, ...), patched in for the duration."""
    from processors.training import decider as T

    old_fit, old_predict = T.fit, T.predict

    def fit(x: Any, y: Any, rounds: int = T.ROUNDS, params: Any = None, weight: Any = None) -> list[Any]:
        base = dict(params or T.PARAMS)
        seed = int(base.get("seed", 0))
        return [old_fit(x, y, rounds, {**base, "seed": seed + 1000 * k}, weight) for k in range(size)]

    def predict(models: list[Any], x: Any) -> Any:
        return np.mean([old_predict(m, x) for m in models], axis=0)

    T.fit, T.predict = fit, predict
    try:
        yield
    finally:
        T.fit, T.predict = old_fit, old_predict


#: the ``monotone`` trial's directions: a column whose rise can only raise (+1) or only lower (-1) the odds that a
#: candidate holds an identifier, by what the column means, not by what the data showed; the others free (0)
MONOTONE_UP = ("score", "ner_score", "regex_score", "dictionary_score", "n_sources", "above_source_threshold",
               "title_before", "kin_before", "credential_after", "place_cue_before", "institution_after",
               "date_cue_before", "same_word_named", "name_context", "rules_keep")
MONOTONE_DOWN = ("clinical_word", "curated", "medical_overlap", "measurement", "dose_before", "cue_measurement",
                 "cue_jargon", "cue_shapeless", "cue_misspelt", "cue_common_lower", "cue_weak_lower",
                 "cue_generic_institution", "cue_relation", "cue_number_piece", "cue_listed_drug", "cue_heading",
                 "cue_misspelt_list_item")


@contextlib.contextmanager
def monotone() -> Iterator[None]:
    """The ``monotone`` trial: LightGBM's monotone constraints on the columns of ``MONOTONE_UP`` / ``MONOTONE_DOWN``
    (the shipped columns and rows; only the learner's settings change), so no tree can learn that a higher NER
    score, a title before a name or a listed drug's cue moves a candidate the other way on some patients' notes."""
    from processors.training import decider as T

    names = list(T.FEATURES)
    unknown = set(MONOTONE_UP + MONOTONE_DOWN) - set(names)
    if unknown:
        raise SystemExit(f"monotone: no such columns {sorted(unknown)}")
    with learner(monotone_constraints=[1 if n in MONOTONE_UP else -1 if n in MONOTONE_DOWN else 0 for n in names]):
        yield


@contextlib.contextmanager
def learner(rounds: int | None = None, **params: Any) -> Iterator[None]:
    """A learner-settings trial: LightGBM's ``params`` over the shipped ones and ``rounds`` boosting rounds (None: the
    shipped count), patched in for the duration; rows, columns and policies unchanged."""
    from processors.training import decider as T

    old, old_rounds = dict(T.PARAMS), T.ROUNDS
    T.PARAMS.update(params)
    T.ROUNDS = rounds if rounds is not None else old_rounds
    try:
        yield
    finally:
        T.PARAMS.clear()
        T.PARAMS.update(old)
        T.ROUNDS = old_rounds


OTHER_ZIPF_NAMES = ("other_zipf_max", "other_zipf_min", "other_minus_english")
_OTHER_LANGS = ("es", "de", "fr", "it", "pt", "nl")


@functools.cache
def _other_zipf(word: str) -> tuple[float, float]:
    """(the highest Zipf frequency of ``word`` in Spanish, German, French, Italian, Portuguese, Dutch; in English)."""
    from wordfreq import zipf_frequency

    return max(zipf_frequency(word, lang) for lang in _OTHER_LANGS), zipf_frequency(word, "en")


def other_language_zipf(note: Any, idx: Sequence[int]) -> list[list[float]]:
    """How frequent the candidate's words are in the other languages the patterns read (``other_zipf``): the model
    reads English frequencies only, so "Varón", "Paciente", "Mujer" at a Spanish sentence's start look like names.
    The highest and lowest over its words of two letters or more, and the highest less its English frequency."""
    out = []
    for i in idx:
        s = note.spans[i]
        words = [w.lower() for w in _ALPHA.findall(note.text, s.start, s.end) if len(w) >= 2]
        if not words:
            out.append([-1.0, -1.0, 0.0])
            continue
        z = [_other_zipf(w) for w in words]
        out.append([max(o for o, _ in z), min(o for o, _ in z), max(o - e for o, e in z)])
    return out


#: the weight of the PhysioNet design notes' rows (the shipped 20; ``design_weight_40`` patches it)
DESIGN_WEIGHT: dict[str, float] = {"weight": 20.0}
#: the decide step's policies (``Extractor``'s options) and recovery's options for the table, for a trial's duration
POLICIES: dict[str, dict[str, bool]] = {"decide": {}, "recovery": {}}


@contextlib.contextmanager
def corpus_convention() -> Iterator[None]:
    """The ``corpus_convention`` trial: the three annotation conventions of README "Policies, not fitting" the
    PhysioNet annotators' way (weekdays and states kept in the text, so the policies drop their candidates; an
    institution's type word not cut from its name, so the model decides the name with it), in the training table and
    in the scoring of every fold: the design-CV figure of the configuration whose lockbox figure the README gives."""
    before = {k: dict(v) for k, v in POLICIES.items()}
    POLICIES["decide"].update(weekdays=False, states_countries=False)
    POLICIES["recovery"].update(institution_type_words=False)
    try:
        yield
    finally:
        POLICIES.clear()
        POLICIES.update(before)


@contextlib.contextmanager
def design_weight(weight: float) -> Iterator[None]:
    """The design notes' rows at ``weight`` for the trial's duration."""
    before = DESIGN_WEIGHT["weight"]
    DESIGN_WEIGHT["weight"] = weight
    try:
        yield
    finally:
        DESIGN_WEIGHT["weight"] = before


RELATIVE_NAMES = ("ner_rank_in_note", "ner_over_label_max", "ner_note_median", "ner_note_confident")


def relative_scores(note: Any, idx: Sequence[int]) -> list[list[float]]:
    """The candidate's NER score beside the note's other NER spans (``relative_scores``): its rank among them (0-1),
    its ratio to the best span of its label in the note, the note's median NER score and how many of its NER spans
    score 0.5 or more. New patients' identifiers score lower than the design notes' (README: fold models, 0.74-0.77
    against 0.78-0.86): a score read against the note's own may move less between patients."""
    from processors.spans import sources_of

    ner = [(s.label, s.score) for s in note.spans if "ner" in sources_of(s)]
    scores = np.sort(np.asarray([sc for _, sc in ner], dtype=np.float64))
    best_of: dict[Any, float] = {}
    for lab, sc in ner:
        best_of[lab] = max(best_of.get(lab, 0.0), sc)
    median = float(np.median(scores)) if scores.size else -1.0
    confident = float(np.sum(scores >= 0.5)) if scores.size else 0.0
    out = []
    for i in idx:
        s = note.spans[i]
        own = max([o.score for o in note.spans if "ner" in sources_of(o) and o.start < s.end and s.start < o.end],
                  default=0.0)
        rank = float(np.searchsorted(scores, own, side="right") / scores.size) if scores.size else -1.0
        top = best_of.get(s.label, 0.0)
        out.append([rank, own / top if top > 0 else -1.0, median, confident])
    return out


NER_PROB_NAMES = ("ner_p_label_mean", "ner_p_label_min", "ner_p_entity_mean", "ner_p_other_max", "ner_p_before",
                  "ner_p_after")
#: note id -> its word pieces' label probabilities (``decider_cv.py oof-probs`` for the design notes, the shipped
#: model's for the other corpora), and the labels' order; filled by :func:`load_ner_probs`
NER_PROBS: dict[str, Any] = {"labels": (), "notes": {}}
_TOKEN = re.compile(r"\w+")


def load_ner_probs(design_only: bool = False) -> None:
    """:data:`NER_PROBS` for the training corpora: the design notes' out of fold (``--probs``), the others' from the
    shipped NER (as their spans), or with ``design_only`` none (their columns then missing: :func:`ner_probs_design`)."""
    header, design = D.read_probs(PROBS_FILE["path"])
    NER_PROBS["labels"] = tuple(header["labels"])
    NER_PROBS["notes"] = dict(design)
    if design_only:
        return
    for c in D.training_corpora(DESIGN_WEIGHT["weight"])[1:]:
        labels, probs = D.shipped_probs(c.gold, c.name)
        if labels != NER_PROBS["labels"]:
            raise SystemExit(f"{c.name}: the shipped NER's labels {labels} are not the out-of-fold file's")
        NER_PROBS["notes"].update(probs)


def word_masses(text: str, pieces: Sequence[Sequence[int]], n_labels: int,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The note's words (``\\w+``: their starts and ends) and, per word, each label's probability: the highest of its
    stored pieces (0 where none was stored: entity probability under the floor)."""
    spans = [m.span() for m in _TOKEN.finditer(text)]
    starts = np.asarray([a for a, _ in spans], dtype=np.int64)
    ends = np.asarray([b for _, b in spans], dtype=np.int64)
    mass = np.zeros((len(spans), n_labels))
    if pieces and spans:
        for p in pieces:
            a, b = p[0], p[1]
            lo = int(np.searchsorted(ends, a, side="right"))
            hi = int(np.searchsorted(starts, b, side="left"))
            if hi > lo:
                mass[lo:hi] = np.maximum(mass[lo:hi], np.asarray(p[2:], dtype=np.float64) / D.PROB_UNIT)
    return starts, ends, mass


def ner_probs(note: Any, idx: Sequence[int]) -> list[list[float]]:
    """The NER's word-piece probabilities over each candidate (``ner_probs``): the mean and the lowest probability of
    the candidate's own label over its words, the mean entity probability, the highest mean of another label, and the
    entity probability of the word before and after it (-1 where there is none)."""
    labels = NER_PROBS["labels"]
    starts, ends, mass = word_masses(note.text, NER_PROBS["notes"][note.input.note_id], len(labels))
    entity = mass.sum(axis=1)
    out = []
    for i in idx:
        s = note.spans[i]
        lo = int(np.searchsorted(ends, s.start, side="right"))
        hi = int(np.searchsorted(starts, s.end, side="left"))
        if hi <= lo:
            out.append([-1.0] * len(NER_PROB_NAMES))
            continue
        inside = mass[lo:hi]
        own = labels.index(str(s.label)) if str(s.label) in labels else None
        means = inside.mean(axis=0)
        own_mean = float(means[own]) if own is not None else 0.0
        own_min = float(inside[:, own].min()) if own is not None else 0.0
        # probabilities are >= 0, so an initial 0 changes no maximum; it answers a model of one label
        other = float(np.delete(means, own).max(initial=0.0)) if own is not None else float(means.max(initial=0.0))
        before = float(entity[lo - 1]) if lo > 0 else -1.0
        after = float(entity[hi]) if hi < len(starts) else -1.0
        out.append([own_mean, own_min, float(entity[lo:hi].mean()), other, before, after])
    return out


def ner_probs_design(note: Any, idx: Sequence[int]) -> list[list[float]]:
    """:func:`ner_probs` on the notes :data:`NER_PROBS` holds (the design notes' out of fold), NaN (missing, to
    LightGBM) on the others (``ner_probs_design_only``: the columns learnt from the real notes alone)."""
    if note.input.note_id not in NER_PROBS["notes"]:
        return [[float("nan")] * len(NER_PROB_NAMES) for _ in idx]
    return ner_probs(note, idx)


@dataclass
class Trial:
    """One change against the shipped configuration: feature columns added (``extra``, named ``extra_names``),
    the ICU shift notes added at each of the weights ``more_shift`` (a run each), code patched in for its duration
    (``patch``), or the bag of inner fold models in place of the refitted one (``bag``)."""

    extra: Extra | None = None
    extra_names: tuple[str, ...] = ()
    more_shift: tuple[float, ...] = ()
    patch: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext
    bag: bool = False
    #: the design notes a second time as training rows, with the float32 path's out-of-fold NER spans (another draw
    #: of the NER's scores), at each of these weights (a run each; 0: the rows are scored, not learnt from)
    fp32_rows: tuple[float, ...] = ()
    #: each row weighs its corpus's weight x the tokens its decision moves (an identifier candidate: the identifier
    #: tokens it covers; another: all it covers; fixed tokens not counted; at least 1), so the learner's loss counts
    #: tokens as the scorer does instead of spans
    token_weight: bool = False


def token_weights(table: Any) -> Any:
    """Per candidate row, the tokens its keep / drop decision moves (:attr:`Trial.token_weight`)."""
    phi, _, fixed = table.tokens.arrays()
    return np.asarray([max(1, sum(1 for t in toks if not fixed[t] and (phi[t] or not y)))
                       for toks, y in zip(table.tokens.cand_tokens, table.y, strict=True)], dtype=np.float64)


TRIALS: dict[str, Trial] = {
    "baseline": Trial(),
    "features": Trial(extra=all_extra, extra_names=EXTRA_NAMES),
    "more_shift": Trial(more_shift=(1.0, 5.0)),
    "abbreviations": Trial(patch=abbreviations_to_model),
    # its three parts alone
    "abbreviated_weekdays": Trial(patch=functools.partial(abbreviations_to_model, frozenset({"weekdays"}))),
    "state_codes": Trial(patch=functools.partial(abbreviations_to_model, frozenset({"states"}))),
    "ip_label": Trial(patch=functools.partial(abbreviations_to_model, frozenset({"ip"}))),
    "bag": Trial(bag=True),
    "seed_ensemble": Trial(patch=seed_ensemble),
    "language": Trial(extra=note_language, extra_names=("note_foreign_share",)),
    "ner_noise": Trial(fp32_rows=(0.0, 10.0, 20.0)),
    "token_weights": Trial(token_weight=True),
    "spelling": Trial(extra=spelling, extra_names=("typo_zipf", "typo_zipf_not_first", "typo_share")),
    "section": Trial(extra=sections, extra_names=SECTION_NAMES),
    "relative_scores": Trial(extra=relative_scores, extra_names=RELATIVE_NAMES),
    "design_weight_40": Trial(patch=functools.partial(design_weight, 40.0)),
    "other_zipf": Trial(extra=other_language_zipf, extra_names=OTHER_ZIPF_NAMES),
    "monotone": Trial(patch=monotone),
    "corpus_convention": Trial(patch=corpus_convention),
    "small_trees": Trial(patch=functools.partial(learner, num_leaves=15, min_data_in_leaf=40)),
    "tiny_trees": Trial(patch=functools.partial(learner, num_leaves=7, min_data_in_leaf=40)),
    "fewer_rounds": Trial(patch=functools.partial(learner, rounds=250)),
    "ner_probs": Trial(extra=ner_probs, extra_names=NER_PROB_NAMES),
    "ner_probs_design_only": Trial(extra=ner_probs_design, extra_names=NER_PROB_NAMES),
}


# -- nested design CV on the trial's table -------------------------------------------------------------------------


FP32_COPY = "#fp32"


def other_ner() -> dict[str, str]:
    """The NER a run used instead of the shipped recipe's (``--oof``, ``--ner-model``), as recorded in the output."""
    return {"oof": str(D.OVERRIDE["oof"]), "model": str(D.OVERRIDE["ner_model"]),
            **({"other_oof": [str(f) for f in D.OVERRIDE["other_oof"]]} if D.OVERRIDE["other_oof"] else {})}
#: the design notes' out-of-fold NER probabilities (``--probs``; the ``ner_probs`` trial)
PROBS_FILE: dict[str, Path] = {"path": D.OOF_PROBS}
#: the out-of-fold file of the design notes' second rows (``--copy-oof``; default: the float32 path's)
COPY_OOF: dict[str, Path] = {"path": D.OOF_FP32}


def fp32_copy(gold: Sequence[Any]) -> list[Any]:
    """The design notes again under other ids (their float32 path's NER spans are stored under these), each with its
    patient: the same groups give the same folds, so no patient's copy trains a model that scores the patient."""
    import dataclasses

    return [dataclasses.replace(g, id=g.id + FP32_COPY) for g in gold]


def trial_table(extra: Extra | None, extra_shift: float | None, fp32_weight: float | None = None,
                ) -> tuple[Any, list[int], list[int], Any, Any]:
    """The training table of the shipped corpora (+ the ICU shift notes at ``extra_shift``; + the design notes again
    with the float32 path's out-of-fold NER spans at ``fp32_weight``, the same patients in the same folds), with
    ``extra``'s columns appended to each row: :func:`processors.training.decider.corpora_table`'s (table, each note's
    fold and corpus, each row's weight), and which notes choose the threshold."""
    from dictionaries.medical import medical_vocabulary
    from processors.decide.cues import Cues
    from processors.decide.features import Extractor
    from processors.evaluation.gold import gold_from_records
    from processors.spans import NER_CANDIDATE_THRESHOLD as threshold
    from processors.synthetic.generator import generate
    from processors.training.decider import Corpus, corpora_table

    if extra in (ner_probs, ner_probs_design):
        load_ner_probs(design_only=extra is ner_probs_design)
    corpora = D.training_corpora(DESIGN_WEIGHT["weight"])
    if extra_shift is not None:
        shift = gold_from_records(generate(1200, 7005, kinds=["icu_shift"]))
        corpora.append(Corpus("synthetic_shift_7005", shift, False, extra_shift))
    copies = fp32_copy(corpora[0].gold) if fp32_weight is not None else []
    if fp32_weight is not None:
        corpora.append(Corpus("physionet_design_fp32", copies, False, fp32_weight))
    extractor = Extractor(Cues(), medical_vocabulary(), **POLICIES["decide"])
    if extra is not None:
        split = extractor.split

        def split_extra(note: Any) -> tuple[list[int], list[int], list[list[float]]]:
            fixed, scored, rows = split(note)
            return fixed, scored, [r + e for r, e in zip(rows, extra(note, scored) if scored else [], strict=True)]

        object.__setattr__(extractor, "split", split_extra)
    stored = D.stored_for(corpora, threshold)
    if copies:
        _, fp32 = D.read_oof(COPY_OOF["path"])
        stored.update({c.id: fp32[g.id][str(threshold)] for c, g in zip(copies, corpora[0].gold, strict=True)})
    table, fold_of_note, corpus_of_note, weight = corpora_table(
        corpora, extractor, stored_ner=stored,
        options={"ner": D.ner_options(threshold), **({"recovery": POLICIES["recovery"]} if POLICIES["recovery"] else {})})
    choose = np.asarray([corpora[c].choose for c in corpus_of_note], dtype=bool)
    return table, fold_of_note, corpus_of_note, weight, choose


def at_recall(table: Any, oof: np.ndarray, design_tokens: np.ndarray) -> dict[str, dict[str, int]]:
    """Out-of-fold false-positive and missed tokens of the design notes at one threshold for each recall."""
    from processors.training import decider as T

    phi, skip, _ = table.tokens.arrays()
    best = T.token_max(table, oof)
    out = {}
    for target in (0.97, 0.975, 0.98):
        t = T.choose_threshold(best, phi, skip, target, mask=design_tokens)
        _, fp, fn = T.counts_at(best, phi, skip, t, design_tokens)
        out[str(target)] = {"fp": fp, "fn": fn}
    return out


def bagged_cv(table: Any, fold_of_note: Sequence[int], choose: Any, weight: Any, params: dict[str, Any],
              k: int = 5) -> tuple[Any, Any, list[float]]:
    """:func:`processors.training.decider.cross_validate` with each outer fold scored by the average of its inner
    fold models (those whose out-of-fold scores chose its threshold) instead of one model on its rows: (out-of-fold
    scores, the nested per-token decisions, each fold's threshold)."""
    from processors.training import decider as T

    x, y = table.x(), np.asarray(table.y, dtype=np.int64)
    cand_fold = np.asarray(fold_of_note)[np.asarray(table.note, dtype=np.int64)]
    tok_note = np.asarray(table.tokens.note_of_token, dtype=np.int64)
    tok_fold = np.asarray(fold_of_note)[tok_note]
    phi, skip, _ = table.tokens.arrays()
    oof = np.zeros(len(y))
    nested = np.full(len(phi), -np.inf)
    thresholds = []
    for f in range(k):
        out_c = cand_fold == f
        inner = np.zeros(len(y))
        for g in range(k):
            if g == f:
                continue
            rows = ~out_c & (cand_fold != g)
            model = T.fit(x[rows], y[rows], T.ROUNDS, params, weight=weight[rows])
            inner[cand_fold == g] = T.predict(model, x[cand_fold == g])
            oof[out_c] += T.predict(model, x[out_c]) / (k - 1)
        rest = np.flatnonzero(~out_c)
        t = T.choose_threshold(T.token_max(table, inner[rest], rest), phi, skip, T.DEFAULT_TARGET_RECALL,
                               mask=(tok_fold != f) & choose[tok_note])
        thresholds.append(t)
        held = np.flatnonzero(out_c)
        best_f = T.token_max(table, oof[held], held)
        nested[tok_fold == f] = np.where(best_f[tok_fold == f] >= t, np.inf, -np.inf)
    return oof, nested, thresholds


def nested_cv(table: Any, fold_of_note: Sequence[int], corpus_of_note: Sequence[int], weight: Any, choose: Any,
              seed: int, bag: bool, k: int = 5, fp32: int | None = None) -> dict[str, Any]:
    """The nested design-CV estimate with the LightGBM seed ``seed``: the shipped procedure
    (:func:`processors.training.decider.cross_validate`), or with ``bag`` :func:`bagged_cv`; ``fp32``: the index of
    the corpus of the design notes' float32 copy, scored nested too."""
    from processors.training import decider as T

    params = {**T.PARAMS, "seed": seed}
    if bag:
        oof, nested, thresholds = bagged_cv(table, fold_of_note, choose, weight, params, k)
    else:
        res = T.cross_validate(table, fold_of_note, k, T.DEFAULT_TARGET_RECALL, choose, T.ROUNDS, weight, params)
        oof, nested, thresholds = res.oof, res.nested_best, res.thresholds
    tok_corpus = np.asarray(corpus_of_note)[np.asarray(table.tokens.note_of_token, dtype=np.int64)]
    design = tok_corpus == 0
    s = T.summary(nested, table, 0.0, design, candidates=T.token_max(table, oof))
    out = {"seed": seed, "nested": {key: s[key] for key in ("precision", "recall", "fp", "fn")},
           "oof_at_recall": at_recall(table, oof, design), "fold_thresholds": [round(t, 4) for t in thresholds]}
    if fp32 is not None:
        # the same held-out patients with the other draw of the NER's scores, each fold's threshold as chosen above
        s = T.summary(nested, table, 0.0, tok_corpus == fp32, candidates=T.token_max(table, oof))
        out["nested_fp32_rows"] = {key: s[key] for key in ("precision", "recall", "fp", "fn")}
    return out


@contextlib.contextmanager
def trial_columns(names: Sequence[str]) -> Iterator[None]:
    """The training module's feature names with a trial's columns ``names`` appended, for the duration."""
    from processors.decide.features import FEATURES
    from processors.training import decider as T

    T.FEATURES = (*FEATURES, *names)
    try:
        yield
    finally:
        T.FEATURES = FEATURES


def save_run(path: str, name: str, t0: float, runs: list[dict[str, Any]], **extra: Any) -> None:
    """Write one run (date, seconds since ``t0``, the command, the other NER if any, ``extra``, ``runs``) under
    ``name`` into the JSON file ``path``, beside the runs already there."""
    out = json.loads(Path(path).read_text()) if Path(path).is_file() else {}
    out[name] = {"date": time.strftime("%Y-%m-%d"), "seconds": round(time.perf_counter() - t0),
                 "command": " ".join(["scripts/decider_trials.py", *sys.argv[1:]]),
                 **({"ner": other_ner()} if D.OVERRIDE["oof"] else {}), **extra, "runs": runs}
    Path(path).write_text(json.dumps(out, indent=1) + "\n")


def cv(args: argparse.Namespace) -> int:
    trial = TRIALS[args.trial]
    seeds = [int(s) for s in args.seeds.split(",")]
    runs: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    with trial.patch():
        variants: list[tuple[str, float | None]] = [
            *(("shift_weight", w) for w in trial.more_shift), *(("fp32_weight", w) for w in trial.fp32_rows)]
        for kind, weight in variants or [("", None)]:
            table, fold_of_note, corpus_of_note, row_weight, choose = trial_table(
                trial.extra, weight if kind == "shift_weight" else None, weight if kind == "fp32_weight" else None)
            if trial.token_weight:
                row_weight = row_weight * token_weights(table)
            with trial_columns(trial.extra_names):
                for seed in seeds:
                    r = nested_cv(table, fold_of_note, corpus_of_note, row_weight, choose, seed, trial.bag,
                                  fp32=max(corpus_of_note) if kind == "fp32_weight" else None)
                    if weight is not None:
                        r[kind] = weight
                    runs.append(r)
                    print(json.dumps(r), flush=True)
    save_run(args.output, args.name or args.trial, t0, runs,
             **({"copy_oof": str(COPY_OOF["path"])} if trial.fp32_rows else {}))
    return 0


def cost_threshold(best: np.ndarray, phi: np.ndarray, skip: np.ndarray, mask: np.ndarray, cost: float) -> float:
    """The score from which candidates are kept that minimises false-positive tokens + ``cost`` x missed tokens
    among ``mask``'s tokens (a cost rule in place of a recall target)."""
    sel = mask & ~skip
    order = np.argsort(-best[sel], kind="stable")
    scores, positive = best[sel][order], phi[sel][order]
    fp = np.cumsum(~positive)
    fn = positive.sum() - np.cumsum(positive)
    cut = np.r_[scores[1:] != scores[:-1], True] & np.isfinite(scores)
    i = np.flatnonzero(cut)[np.argmin((fp + cost * fn)[cut])]
    return float(scores[i])


def bootstrap_threshold(best: np.ndarray, phi: np.ndarray, skip: np.ndarray, mask: np.ndarray,
                        group_of_token: np.ndarray, target: float, draws: int = 200, seed: int = 0) -> float:
    """The median over ``draws`` bootstrap resamples of ``mask``'s patients of the highest score keeping token recall
    >= ``target`` (each patient drawn a Poisson(1) number of times): the recall target's threshold with the steep
    last tokens of one patient weighing as they would on average, not all or nothing."""
    sel = mask & phi & ~skip
    scores, groups = best[sel], group_of_token[sel]
    order = np.argsort(-scores, kind="stable")
    scores, groups = scores[order], groups[order]
    _, index = np.unique(groups, return_inverse=True)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(draws):
        w = rng.poisson(1.0, index.max() + 1)[index].astype(np.float64)
        if w.sum() == 0:
            continue
        reach = np.cumsum(w) >= target * w.sum() - 1e-9
        out.append(scores[int(np.argmax(reach))])
    return float(np.median(out))


RULES: tuple[tuple[str, float], ...] = (("recall", 0.97), ("recall", 0.975), ("recall", 0.98),
                                        *(("cost", c) for c in (5.0, 8.0, 10.0, 15.0, 20.0, 30.0)),
                                        ("bootstrap", 0.975), ("bootstrap", 0.98))


def threshold_rules(args: argparse.Namespace) -> int:
    """The shipped configuration's nested design CV with other rules for each fold's threshold (chosen, as shipped,
    on the inner folds' out-of-fold scores): recall targets, and a cost of a missed identifier token in
    false-positive tokens. Tells whether the thresholds' spread, not the ranking, costs precision."""
    trial = TRIALS[args.trial]
    if trial.more_shift or trial.fp32_rows or trial.bag or trial.token_weight:
        raise SystemExit(f"thresholds: {args.trial} changes the rows or the model, not the columns or the code")
    with trial.patch():
        table, fold_of_note, corpus_of_note, weight, choose = trial_table(trial.extra, None)
        with trial_columns(trial.extra_names):
            return _threshold_rules(args, table, fold_of_note, corpus_of_note, weight, choose)


def _threshold_rules(args: argparse.Namespace, table: Any, fold_of_note: Sequence[int],
                     corpus_of_note: Sequence[int], weight: Any, choose: Any) -> int:
    from processors.training import decider as T

    cand_fold = np.asarray(fold_of_note)[np.asarray(table.note, dtype=np.int64)]
    tok_note = np.asarray(table.tokens.note_of_token, dtype=np.int64)
    tok_fold = np.asarray(fold_of_note)[tok_note]
    design = np.asarray(corpus_of_note)[tok_note] == 0
    # each note's patient (the design notes come first, in design_gold's order; another corpus's note is its own)
    design_gold = D.design_gold()
    groups = {g: i for i, g in enumerate(dict.fromkeys(g.group for g in design_gold))}
    design_groups = [groups[g.group] for g in design_gold]
    note_group = np.asarray(design_groups + [len(groups) + i for i in range(len(fold_of_note) - len(design_groups))])
    tok_group = note_group[tok_note]
    phi, skip, _ = table.tokens.arrays()
    runs = []
    t0 = time.perf_counter()
    for seed in (int(s) for s in args.seeds.split(",")):
        res = T.cross_validate(table, fold_of_note, 5, T.DEFAULT_TARGET_RECALL, choose, T.ROUNDS, weight,
                               {**T.PARAMS, "seed": seed})
        oof, inner = res.oof, res.inner
        for kind, value in RULES:
            nested = np.full(len(phi), -np.inf)
            for f in range(5):
                rest = np.flatnonzero(cand_fold != f)
                best_inner = T.token_max(table, inner[f][rest], rest)
                mask = (tok_fold != f) & design
                if kind == "recall":
                    t = T.choose_threshold(best_inner, phi, skip, value, mask=mask)
                elif kind == "bootstrap":
                    t = bootstrap_threshold(best_inner, phi, skip, mask, tok_group, value)
                else:
                    t = cost_threshold(best_inner, phi, skip, mask, value)
                held = np.flatnonzero(cand_fold == f)
                best_f = T.token_max(table, oof[held], held)
                nested[tok_fold == f] = np.where(best_f[tok_fold == f] >= t, np.inf, -np.inf)
            tp, fp, fn = T.counts_at(nested, phi, skip, 0.0, design)
            r = {"seed": seed, "rule": kind, "value": value, "precision": round(tp / max(1, tp + fp), 4),
                 "recall": round(tp / max(1, tp + fn), 4), "fp": fp, "fn": fn}
            runs.append(r)
            print(json.dumps(r), flush=True)
    save_run(args.output, args.name or "threshold_rules", t0, runs)
    return 0


def lockbox_trial(name: str) -> Trial:
    """The trial ``name``, refused unless it keeps the shipped features and training rows (only its code is patched
    in): a lockbox score of anything else would not be the model that could ship."""
    trial = TRIALS[name]
    if trial.extra is not None or trial.bag or trial.more_shift:
        raise SystemExit(f"{name}: only a trial of the shipped features and training rows reaches the lockbox")
    return trial


def lockbox(args: argparse.Namespace) -> int:
    """Retrain both models with the trial's code into a temporary folder and score every set with them (the
    lockbox in aggregate), through ``decider_cv.py``'s own ``train`` and ``measure``."""
    trial = lockbox_trial(args.trial)
    with tempfile.TemporaryDirectory() as tmp, trial.patch():
        folder, no_ner, report = Path(tmp) / "decider", Path(tmp) / "decider-no-ner", Path(tmp) / "cv.json"
        for argv in (["train", "--out", str(folder), "--out-no-ner", str(no_ner), "--report", str(report)],
                     ["measure", "--decider", str(folder), "--cv-report", str(report), "-o", args.output]):
            sys.argv = ["decider_cv.py", *argv]
            if D.main():
                return 1
    out = json.loads(Path(args.output).read_text())
    out = {"trial": args.trial, "note": "the trial's code patched in (scripts/decider_trials.py); 'default' and the "
           "policy rows score the trial's retrained with-NER model, 'no_ner' the shipped no-NER model", **out}
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    return 0


SEEDS_RESULTS = D.RESULTS / "decider_lockbox_seeds.json"


def lockbox_seeds(args: argparse.Namespace) -> int:
    """The protocol's second step (scripts/results/QUALITY_HISTORY.md, "A tool for that protocol"): the trial's with-NER decision
    model retrained with each seed into a temporary folder, and the default pipeline with it scored on every set (the
    lockbox in aggregate: precision, recall, token counts), then the means over the seeds. The shipped models stay
    untouched; ``baseline`` is the shipped configuration through the same steps."""
    from processors.spans import NER_CANDIDATE_THRESHOLD as threshold

    trial = lockbox_trial(args.trial)
    seeds = [int(x) for x in args.seeds.split(",")]
    command = " ".join(["scripts/decider_trials.py", *sys.argv[1:]])  # before sys.argv is rewritten for decider_cv
    # another NER (its out-of-fold spans and its model; decider_cv's train resets the override from its arguments)
    ner = ([] if D.OVERRIDE["oof"] is None else
           ["--oof", str(D.OVERRIDE["oof"]), "--ner-model", str(D.OVERRIDE["ner_model"])])
    ner += [x for f in D.OVERRIDE["other_oof"] for x in ("--other-oof", str(f))]
    runs: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, trial.patch():
        # --no-lockbox: the sets that are no lockbox only (a NER recipe judged before any lockbox look)
        sets = D.eval_sets(threshold, golds={k: g for k, g in D.eval_golds().items()
                                             if not (args.no_lockbox and "lockbox" in k)})
        for seed in seeds:
            folder = Path(tmp) / f"decider-{seed}"
            sys.argv = ["decider_cv.py", "train", "--which", "with_ner", "--params", json.dumps({"seed": seed}),
                        "--out", str(folder), "--report", str(Path(tmp) / f"cv-{seed}.json"), *ner]
            if D.main():
                return 1
            options = {"ner": D.ner_options(threshold), "decide": {"model_dir": str(folder)}}
            runs[str(seed)] = {}
            for name, (gold, stored) in sets.items():
                a = D.aggregate(gold, D.run(gold, D.FULL, options, stored))
                runs[str(seed)][name] = {k: a[k] for k in ("precision", "recall", "tp", "fp", "fn")}
            print(json.dumps({seed: {k: (v["precision"], v["recall"], v["fp"], v["fn"])
                                     for k, v in runs[str(seed)].items()}}), flush=True)
    means = {name: {k: round(float(np.mean([runs[str(sd)][name][k] for sd in seeds])), 4)
                    for k in ("precision", "recall", "fp", "fn")} for name in runs[str(seeds[0])]}
    out = json.loads(Path(args.output).read_text()) if Path(args.output).is_file() else {}
    out[args.name or args.trial] = {
        "date": time.strftime("%Y-%m-%d"), "seconds": round(time.perf_counter() - t0),
        "command": command,
        "ner": other_ner() if ner else "shipped",
        "seeds": seeds, "runs": runs, "means": means}
    Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cv")
    c.add_argument("--trial", choices=sorted(TRIALS), required=True)
    c.add_argument("--seeds", default="13,1,2,3", help="LightGBM seeds (13: the shipped one)")
    c.add_argument("-o", "--output", default=str(RESULTS))
    c.add_argument("--copy-oof", type=Path, default=D.OOF_FP32,
                   help="ner_noise: the out-of-fold file of the second rows (default: the float32 path's; e.g. fold "
                        "models of another training seed)")
    tr = sub.add_parser("thresholds")
    tr.add_argument("--trial", choices=sorted(TRIALS), default="baseline",
                    help="a trial of added columns or patched code (default: the shipped configuration)")
    tr.add_argument("--seeds", default="13,1,2,3", help="LightGBM seeds (13: the shipped one)")
    tr.add_argument("-o", "--output", default=str(RESULTS))
    ls = sub.add_parser("lockbox-seeds")
    ls.add_argument("--trial", choices=sorted(TRIALS), required=True)
    ls.add_argument("--seeds", default="13,1,2,3", help="LightGBM seeds (13: the shipped one)")
    ls.add_argument("-o", "--output", default=str(SEEDS_RESULTS))
    ls.add_argument("--no-lockbox", action="store_true", help="leave out the lockbox sets (PhysioNet's and MEDDOCAN "
                    "dev's): the other sets only, e.g. for a NER recipe that design CV has not sent to the lockbox")
    lb = sub.add_parser("lockbox")
    lb.add_argument("--trial", choices=sorted(TRIALS), required=True)
    lb.add_argument("-o", "--output", default=str(D.RESULTS / "decider_trial_abbreviations_quality.json"))
    for p in (c, tr):
        p.add_argument("--probs", type=Path, default=D.OOF_PROBS, help="ner_probs: the design notes' out-of-fold NER "
                       "probabilities (decider_cv.py oof-probs)")
    for p in (c, ls, tr):
        p.add_argument("--name", default=None, help="the key of the run in the output (default: the trial's name)")
        p.add_argument("--oof", type=Path, default=None,
                       help="another NER's out-of-fold file of the design notes (default: the shipped recipe's)")
        p.add_argument("--ner-model", type=Path, default=None,
                       help="that NER's model on all design notes: the other corpora's and the sets' NER spans")
        p.add_argument("--other-oof", type=Path, action="append", default=[],
                       help="out-of-fold NER spans of another training corpus (decider_cv.py oof --notes FILE), for a "
                       "NER trained on it too, e.g. ner_cv.py train --meddocan-repeats (with --oof and --ner-model)")
    args = ap.parse_args()
    if getattr(args, "oof", None) is not None or getattr(args, "ner_model", None) is not None:
        if args.oof is None or args.ner_model is None:
            raise SystemExit("--oof and --ner-model go together: the out-of-fold spans and the model they stand for")
        D.OVERRIDE.update(oof=args.oof, ner_model=args.ner_model)
    if getattr(args, "other_oof", None):
        if args.oof is None:
            raise SystemExit("--other-oof goes with --oof and --ner-model: the NER those spans come from")
        D.OVERRIDE["other_oof"] = list(args.other_oof)
    if getattr(args, "probs", None) is not None:
        PROBS_FILE["path"] = args.probs
    if getattr(args, "copy_oof", None) is not None:
        COPY_OOF["path"] = args.copy_oof
    return {"cv": cv, "thresholds": threshold_rules, "lockbox": lockbox, "lockbox-seeds": lockbox_seeds}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
