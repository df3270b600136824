"""Cues: what the rule rounds of issue 10 knew about clinical text, as evidence for the decision stage.

Each cue is a predicate over one candidate span: "this span looks like something that is no identifier" for a
reason a rule once stated (a measurement, curated jargon, a number no calendar can read, a misspelt common word,
a line's heading, ...). The rules were hard drops in ``recovery``; fitted to the errors of the notes they were
scored on, they cost true dates and names on new patients (issue 25). Here they are features: the decision
stage (``processors.decide``) learns, cross-validated by patient, how much each is worth beside the detectors'
scores, the span's shape and its context. Each cue keeps its rule's description and examples.

``RULES`` names the cues in the order :meth:`Cues.flags` returns them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dictionaries import vocab
from dictionaries.calendar import CALENDAR_TOKENS
from dictionaries.jargon import ClinicalWords, clinical_words
from dictionaries.medical import MedicalMatch
from dictionaries.medical_syntax import attached_to_date, measurement_value
from dictionaries.text import (
    FAMILY_CUES,
    NURSE_CREDENTIALS,
    PROVIDER_CUES,
    is_all_caps,
    line_bounds,
    line_fact,
    name_context,
)
from processors.shapes import (
    HAS_DIGIT,
    KNOWN_WORD_ZIPF,
    LETTER_RUN,
    MODEL_SOURCES,
    NAME_TITLES,
    NUMBER_PIECE,
    WordIndex,
    edge_key,
    identifier_shaped,
    number_run,
    readable_date,
    relation_word,
    within_edits,
)
from processors.spans import ByStart, sources_of
from schemas.labels import Label
from schemas.models import Span

#: the cues, in the order :meth:`Cues.flags` returns them
RULES: tuple[str, ...] = (
    "measurement", "jargon", "shapeless", "misspelt", "common_lower", "weak_lower", "generic_institution",
    "relation", "number_piece", "listed_drug", "heading", "misspelt_list_item",
)

#: labels a clinical word is mistaken for; the words of a span, as the jargon list writes them
_JARGON_LABELS = frozenset({Label.NAME, Label.LOCATION, Label.ORGANIZATION})
_JARGON_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'/-]*")
#: a surname this frequent in English is a common word in lower case ("proud", "town", "sons")
_COMMON_SURNAME_ZIPF = 4.0
#: a misspelt word: at most this many edits from a known word (by the word's length), and that long at least
_MISSPELT_MIN_LEN = 5
_MISSPELT_EDITS_LONG = 7  # from this length two edits, below it one
_NEAR_KNOWN_CACHE = 50_000  # words whose misspelling test is remembered per recovery step
#: how many of the most frequent English words (wordfreq) a misspelling is compared with, besides clinical words
_MISSPELT_ENGLISH = 40_000
#: evidence of a person or a place beside an unknown word: an initial before it ("B. KARGAS"; not the "s" of a
#: possessive, "pt's"), an institution word after it ("HRBOR HOSP", "Mercy Clinic")
_INITIAL_BEFORE = re.compile(r"(?:^|[^\w.'\u2019])[A-Za-z]\.?[ \t]+$")
_INSTITUTION_WORDS = (r"hosp|hospital|clinic|center|centre|medical|med|memorial|health|rehab|nursing|house|home|"
                      r"college|university|county|city")
_INSTITUTION = r"(?:" + _INSTITUTION_WORDS + r")"
_INSTITUTION_AFTER = re.compile(r"[ \t]+" + _INSTITUTION + r"\b", re.IGNORECASE)
_INSTITUTION_WORD = re.compile(_INSTITUTION, re.IGNORECASE)
#: another candidate within this many characters of a lone letter, a one- or two-digit "phone" or a weak lower-case
#: detection makes it part of something larger (an initial before a surname, "K 1421" before a postcode, "+44"
#: before a number, a street name in an address)
_NEIGHBOUR = 3
_SIGNED_NUMBER = re.compile(r"\s*[+-]\s*\d{1,5}\s*")
#: the digits of one phone number: digit groups joined by separators only (no word between them)
_PHONE_DIGITS = re.compile(r"\d(?:[\d\s().+/-]*\d)?")
#: a phone number has at least this many digits (local numbers, 555-0134); pagers and extensions written
#: beside words are fewer, but a span of only shorter groups joined by a word is a list ("0200 and 0415")
_PHONE_MIN_DIGITS = 7
_NUMBER_JOINERS = frozenset({"and", "or", "to", "then"})
#: a past tense written with an apostrophe right after a word ("dec'd", "d/c'd"): a verb
_VERB_ENDING = re.compile(r"['\u2019](?:d|ed)\b", re.IGNORECASE)
#: the items of a telegraphic list next to a span: a word before it and a comma, period or semicolon, or one of
#: those and a word after it ("MAE. [PEARL].", "[pearl], mae"); a curated word misspelt in such a list is no name
_ITEM_BEFORE = re.compile(r"\b([A-Za-z][A-Za-z&/]*)[ \t]*[.,;][ \t]*\Z")
_ITEM_AFTER = re.compile(r"[ \t]*[.,;][ \t]*([A-Za-z][A-Za-z&/]*)\b")
#: a curated word this long or longer can be misspelt into a name-list word ("perrl" -> "pearl")
_LIST_MISSPELT_MIN_LEN = 4
#: what ends a line's heading right after a span: a colon, or a dash before the text ("GU- foley", "CV-stable",
#: the system-by-system headings of nursing notes; a misspelt word makes a heading only before a colon); a
#: surname-list word this frequent in English is a heading word ("Date", "Service", "Plan")
_HEADING_COLON = re.compile(r"[ \t]*(?::|-{1,2}(?=[ \t]*[A-Za-z(]))")
_HEADING_WORD_ZIPF = 5.0
#: two capital letters of a US state (``vocab.us_states``)
_STATE_CODES = frozenset(code for _name, code in vocab.us_states())
_DIGIT_AFTER = re.compile(r"[\s.,]*\d")
#: Dates with a year ("03/14/2023", "2023-03-14", "20140731") or a month name ("13 Oct 2018", "14th of
#: February") are never medical syntax: no syntax scan for them.
_FULL_DATE = re.compile(
    r"\s*(?:\d{1,2}[/.-]\d{1,2}[/.-](?:\d{2}|\d{4})|\d{4}-\d{1,2}-\d{1,2}|(?:19|20)\d{6}|"
    r"(?i:.*\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b.*))\s*"
)
#: evidence for a weak lower-case detection (``weak_lower_score``). A person: a family or provider word, or a
#: naming verb, right before it ("son jonathan", "nurse leslie", "calls me borna", "per d ross"); a credential
#: in lower case after it ("s. roberto rrt"); an age and sex after it ("joseph 81M", "pt ob 64F")
_PERSON_CUE_BEFORE = re.compile(
    r"\b(?:" + "|".join(sorted(FAMILY_CUES | PROVIDER_CUES)) + r"|per|named|called|calls me|name is)\W{0,3}$",
    re.IGNORECASE,
)
_CREDENTIAL_LOWER_AFTER = re.compile(r",?\s*(?:md|rn|np|rrt|lpn|cna|crna|msw|lcsw|pa-c)\b", re.IGNORECASE)
_AGE_SEX = re.compile(r"\b\d{1,3}\s*(?:y/?o|yo|[mf])\b", re.IGNORECASE)
_INITIAL_START = re.compile(r"[a-z]\.\s")
#: a place or organisation: a residence or work cue before it ("lives in rome", "works for vista health"), an
#: institution or hospital-unit word in or after it ("sacred heart hosp", "to gh cath lab")
_PLACE_CUE_BEFORE = re.compile(
    r"\b(?:lives?|living|works?|worked|moved|resides?|born|retired?)\s+(?:in|at|for|to|from|near)\s*$",
    re.IGNORECASE,
)
_FACILITY_NEAR = re.compile(r"\b(?:" + _INSTITUTION_WORDS + r"|er|ed|lab|icu|ccu|ward)\b", re.IGNORECASE)
#: words for a relative or a carer, never a name by themselves ("AUNTS", "pt's pastor", "Hsb is ENT physician");
#: a generic institution phrase: an institution head word with only describing words beside it ("OUTSIDE
#: HOSPITAL", "prolonged hospital stay", "admitted to hosp", "funeral home"); "memorial" names hospitals
_GENERIC_HEADS = (frozenset(_INSTITUTION_WORDS.split("|")) - {"memorial"}) | frozenset(
    "hospitals clinics healthcare rehabilitation system institute group practice pharmacy".split())
_GENERIC_INNER = frozenset({"of", "and", "the", "at", "for", "a", "an"})
#: a nurse's credential right after a word, without a comma ("Ostomy RN"; "Foley, RN" is a name)
_NURSE_AFTER = re.compile(r"[ \t]+(?:" + "|".join(sorted({*NURSE_CREDENTIALS, *map(str.upper, NURSE_CREDENTIALS)})) + r")\b")
#: a kind of unit before its number of one or two digits ("WARD 3", "pod 4B"): no name of its own (an army
#: post's "Unit 7194" has four digits)
_UNIT_WORDS = frozenset({"ward", "pod", "bay", "floor", "fl", "unit"})
_UNIT_NUMBER_AFTER = re.compile(r"[ \t]*\d{1,2}[A-Za-z]?\b(?![-/.:]?\d)")
#: a DATE that is no day: an ordinal alone with a noun after it ("the 2ND DAY of admission", "on 2nd wake up", "THE
#: 2ND THEN FELL OUT"; "on the 22nd." and "the 3rd of May" stay), and "may" as a verb ("THIS MAY BE", "pt may need")
_ORDINAL = re.compile(r"(?i:the\s+)?\d{1,2}(?i:st|nd|rd|th)")
#: a number glued to letters, as a unit is ("2ln/p": 2 l nasal prongs, "4L", "500cc"): a date or time glues only an
#: ordinal's ending, a clock's a / p / am / pm / h / hr, "noon", a decade's "s" or a month to its number
_GLUED_LETTERS = re.compile(r"\d+([A-Za-z]+)(?:/[A-Za-z]{1,3})?")
_DATE_SUFFIXES = frozenset("st nd rd th a p am pm h hr hrs noon s".split())
#: month abbreviations that are also chart abbreviations: "dec" decreased, "mar" the medication administration
#: record, "aug" augmentation (of a balloon pump), "feb" febrile. Alone, with no number near them on the line and no
#: date word before them ("with dec BS", "DEC U/O", "per MAR"), they are no month; "since dec", "dec 12" stay
_CHART_MONTHS = frozenset({"dec", "mar", "aug", "feb"})
_MONTH_CUE_BEFORE = re.compile(
    r"\b(?:in|on|since|until|till|by|from|of|early|late|mid|last|next|this|through|thru|to|before|after)"
    r"[ \t]*[.,]?[ \t]*\Z", re.IGNORECASE)
_NUMBER_NEAR = 4
_ORDINAL_NOUN_AFTER = re.compile(r"[ \t]+(?!(?i:of|at|on|in|and|or|to|through|thru|until|till|by|from)\b)([A-Za-z]{2,})\b")
_MAY_VERB_AFTER = re.compile(
    r"[ \t]+(?:not[ \t]+)?(?i:be|have|need|go|get|also|require|want|try|take|come|benefit|help|start|continue|cause|"
    r"return|develop|receive|do|make|see|feel|use|leave|stay|remain|move|change|improve|transfer|call|consider)\b")
#: a count, not a day: "7 of 14" (day 7 of a 14-day course)
_COUNT_OF = re.compile(r"\d{1,3}\s+(?i:of|out of)\s+\d{1,3}")
#: a clock time, or a range of them, in a DATE span ("11:00", "4:30-5:30pm", "10:15 a.m.")
_CLOCK_TIME = re.compile(
    r"(?<![\d:])(?:[01]?\d|2[0-3]):[0-5]\d(?:[ \t]?(?:-|to)[ \t]?(?:[01]?\d|2[0-3]):[0-5]\d)?"
    r"(?:[ \t]?[AaPp]\.?[Mm]\b\.?)?(?![\d:])")
#: what runs on after a number the model cut out of a larger one (``number_piece``)
_RUNS_ON = re.compile(r"\d|[/.:-]\d|[AaPp](?:\.?[Mm]\b|\b|-)")
#: a drug's place (``listed_drug``): a dose right before the word, or a list of drugs around it ("Vano, Ceftaz,
#: Flagyl", "Procan/NAPA", "NPH and Reg"): list items of one word, joined by a comma, slash, "&", "+", "and" or "or"
_DOSE_BEFORE = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?[ \t]?(?:mg|mcg|gm?|u|units?|ml|cc|meq|mmol|tabs?|amps?)[ \t]*$", re.IGNORECASE)
_DRUG_KINDS = frozenset({"drug", "drug-brand"})
_ONE_WORD = re.compile(r"[^\W\d_]+\.?")
_LIST_GAP = r"[ \t]*(?:[,/&+]|(?i:and|or)\b)[ \t]*"
_LIST_ITEM_AFTER = re.compile(_LIST_GAP + r"([\w-]+)")
_LIST_ITEM_BEFORE = re.compile(r"([\w-]+)" + _LIST_GAP + r"$")
_LIST_REACH = 3


def _common_word(word: str) -> bool:
    """A lower-case word of 3+ letters that is frequent in English and no name or place: not a first name,
    not a surname unless it is a very frequent word ("proud", "town", "sons" are Census surnames), not in the
    place gazetteer, not an institution word."""
    z = vocab.zipf(word)
    return (len(word) >= 3 and z >= KNOWN_WORD_ZIPF and not vocab.is_first_name(word)
            and (z >= _COMMON_SURNAME_ZIPF or not vocab.is_surname(word)) and not vocab.is_place_name(word)
            and not _INSTITUTION_WORD.fullmatch(word))



def known_words(cw: ClinicalWords) -> WordIndex:
    """The words a misspelling is compared with: the most frequent English words and the clinical words."""
    from wordfreq import top_n_list

    english = (w for w in top_n_list("en", _MISSPELT_ENGLISH) if w.isalpha() and len(w) >= _MISSPELT_MIN_LEN - 1)
    clinical = (w for w in cw.known_words() if w.isalpha() and len(w) >= _MISSPELT_MIN_LEN - 1)
    return WordIndex(sorted({*english, *clinical}))


def near_known_word(word: str, known: Sequence[str] | WordIndex) -> bool:
    """``word`` (lower case) is one edit (two from 7 letters) from one of ``known``; swapping two neighbouring
    letters is one edit ("lentgh", "cahir")."""
    return within_edits(word, known, 2 if len(word) >= _MISSPELT_EDITS_LONG else 1)



class Cues:
    """The cue predicates over candidate spans (see the module docstring). Built once per process: the clinical-word
    filter and the misspelling memo live here."""

    def __init__(self, cache_dir: Path | None = None, *, weak_lower_score: float = 0.6,
                 measure_sources: Sequence[str] = ("regex", "ner", "llm")) -> None:
        self.weak_lower_score = weak_lower_score
        self.measure_sources = frozenset(measure_sources)
        self.clinical_words: ClinicalWords | None = clinical_words(cache_dir)
        self._known: WordIndex | None = None  # built on the first possible misspelling
        self._curated_long: WordIndex | None = None  # curated words a list item can be a misspelling of
        self._near_known: dict[str, bool] = {}  # words already compared with the known words (each costs ms)
        #: the decide step's features of a candidate's characters alone, by surface (``features._surface``)
        self.surface_features: dict[str, Any] = {}

    def note(self, spans: Sequence[Span], matches: Sequence[MedicalMatch]) -> CueNote:
        """What the cues of one note's candidates share: build it once per note and pass it to :meth:`flags`."""
        return CueNote(spans, matches, self.weak_lower_score)

    def flags(self, span: Span, text: str, spans: Sequence[Span], matches: Sequence[MedicalMatch],
              measurement: bool | None = None, note: CueNote | None = None) -> tuple[bool, ...]:
        """Each cue of ``RULES`` for ``span`` among the note's candidates ``spans`` (``matches``: the medical
        vocabulary's matches around them; ``measurement``: ``measurement_value`` of the span when the caller has
        it; ``note``: :meth:`note` of ``spans`` and ``matches`` when the caller scores many candidates of the note:
        without it, each call builds its own, in O(n log n))."""
        if note is None:
            note = self.note(spans, matches)
        return (self._is_measurement(span, text, measurement), self._is_jargon(span, text),
                self._is_shapeless(span, text, note),
                self._is_misspelt(span, text), self._is_common_lower(span, text),
                self._is_weak_lower(span, text, note), self._is_generic_institution(span, text),
                self._is_relation(span, text), self._is_number_piece(span, text, note),
                self._is_listed_drug(span, text, note), self._is_heading(span, text),
                self._is_misspelt_list_item(span, text))

    def _is_measurement(self, span: Span, text: str, measurement: bool | None = None) -> bool:
        """Digits, separators and units in vitals / ventilator / lab context, from a measure source
        (every source of a merged span must be one)."""
        sources = sources_of(span)
        if not sources or not sources <= self.measure_sources:
            return False
        return measurement_value(text, span.start, span.end) if measurement is None else measurement

    def _is_jargon(self, span: Span, text: str) -> bool:
        """Every word of a NAME / LOCATION / ORGANIZATION span is curated clinical jargon, and no title or
        credential makes it a name ("Dr. Swan")."""
        cw = self.clinical_words
        if cw is None or span.label not in _JARGON_LABELS:
            return False
        words = _JARGON_TOKEN.findall(text, span.start, span.end)
        if not words:
            return False
        # two letters are as often a person's initials ("BM 73M") or a state's code ("Linville, NC") as an
        # abbreviation: the dictionary step keeps its name lists off them, this rule leaves such names and places
        curated = all(cw.is_curated(w) and not self._initials_or_state(w, span) for w in words)
        if not curated and not self._clinical_word(cw, span, words):
            return False
        if not name_context(text, span.start, span.end):
            return True
        # a nurse's credential after a curated word is a specialty, not a name ("Ostomy RN applied"), as the
        # dictionary step reads it; a title before it still makes a name ("Dr. Swan")
        return (curated and _NURSE_AFTER.match(text, span.end) is not None
                and not name_context(text[:span.end], span.start, span.end))

    @staticmethod
    def _initials_or_state(word: str, span: Span) -> bool:
        bare = word.strip(".'")
        return len(bare) == 2 and (span.label == Label.NAME or bare.upper() in _STATE_CODES)

    def _is_shapeless(self, span: Span, text: str, note: CueNote) -> bool:
        """A DATE made only of known words and no calendar word ("since NOON", "last eve"); a PHONE of one or two
        digits with no other candidate beside it ("intubated with # [[8]] ETT") or a signed number ("LOS [[-905]]");
        a lone letter from the model alone with no other candidate beside it ("Pt. A.", "grade 1 [[B]]"); a street
        type alone from the model ("NSR to [[ST]]")."""
        surface = text[span.start:span.end]
        if span.label == Label.DATE:
            bare = surface.strip(" \t.,")
            if _ORDINAL.fullmatch(bare):
                m = _ORDINAL_NOUN_AFTER.match(text, span.end)
                return m is not None and m.group(1).lower() not in CALENDAR_TOKENS
            if bare.lower() == "may":
                return _MAY_VERB_AFTER.match(text, span.end) is not None
            clockless = _CLOCK_TIME.sub(" ", surface)
            if clockless != surface:  # times of day ("11:00 tomorrow", "4:30-5:30pm"), unless right beside a date
                if HAS_DIGIT.search(clockless) or attached_to_date(text, span.start, span.end):
                    return False
                surface = clockless
            elif HAS_DIGIT.search(surface):
                if _COUNT_OF.fullmatch(bare):  # "day 7 of 14" of a course
                    return sources_of(span) <= MODEL_SOURCES
                glued = _GLUED_LETTERS.fullmatch(bare)
                if glued is not None and sources_of(span) <= MODEL_SOURCES:  # "on [2ln]/p": a quantity and its unit
                    suffix = glued.group(1).lower()
                    return suffix not in _DATE_SUFFIXES and suffix not in CALENDAR_TOKENS
                run = number_run(text, span.start, span.end)[2]  # the model's "/84" of "8/84" is read whole
                return (sources_of(span) <= MODEL_SOURCES and not readable_date(run) and not identifier_shaped(run)
                        and not any(o.overlaps(span) for o in note.neighbours(span)))
            words = LETTER_RUN.findall(surface)
            if len(words) == 1 and _VERB_ENDING.match(text, span.end):
                return True  # a verb: "dec'd" is decreased, not December
            if len(words) == 1 and bare.rstrip(".").lower() in _CHART_MONTHS and (bare.islower() or bare.isupper()):
                lo, hi = line_bounds(text, span.start, span.end)
                near = text[max(lo, span.start - _NUMBER_NEAR):min(hi, span.end + _NUMBER_NEAR)]
                return (sources_of(span) <= MODEL_SOURCES and not HAS_DIGIT.search(near)
                        and _MONTH_CUE_BEFORE.search(text, lo, span.start) is None)
            if any(w.lower() in CALENDAR_TOKENS for w in words):
                return False
            if not words:
                return clockless != text[span.start:span.end]
            cw = self.clinical_words
            return all(len(w) > 1 and (vocab.zipf(w.lower()) >= KNOWN_WORD_ZIPF
                                       or (cw is not None and cw.is_clinical(w))
                                       or (w.isascii() and self._misspelt_word(w.lower()))) for w in words)
        if span.label == Label.EMAIL:  # the model's "email" without an "@" (else no candidate) of known words:
            # an abbreviation ("DNR & [DNI]"); other words are a label mistaken on an address ("[ΠΑΦΟΣ] PA")
            cw = self.clinical_words
            words = LETTER_RUN.findall(surface)
            return bool(words) and all(vocab.zipf(w.lower()) >= KNOWN_WORD_ZIPF or (cw is not None and cw.is_clinical(w))
                                       for w in words)
        if span.label == Label.ID and sources_of(span) <= MODEL_SOURCES and len(surface.strip(" \t.,;:#")) < 3:
            return True  # no record number has fewer than three characters ("ms[04]": morphine)
        if span.label == Label.PHONE:  # no phone, pager or extension has fewer than three digits; a signed
            # number is a fluid balance ("LOS -905"), unless the sign is a separator ("202232-4455") or a country
            # code before more of the number ("+44 20 ...")
            signed = _SIGNED_NUMBER.fullmatch(surface) and not text[max(0, span.start - 1):span.start].isalnum()
            if not HAS_DIGIT.search(surface):  # a known word is no phone ("(Continued)"); a label mistaken on
                # a word of an address stays ("Box 1772 DPO [AE] 91410")
                words = LETTER_RUN.findall(surface)
                return (bool(words) and all(vocab.zipf(w.lower()) >= KNOWN_WORD_ZIPF for w in words)
                        and not note.neighbours(span))
            if bool(signed or 0 < sum(c.isdigit() for c in surface) < 3) and not note.neighbours(span):
                return True
            # numbers joined by "and", "or", "to" ("at 0200 and 0415": two times), none as long as a phone number;
            # other words between numbers are an address the model took for a phone ("376 Rakoczi ut 13")
            groups = [sum(c.isdigit() for c in m.group()) for m in _PHONE_DIGITS.finditer(surface)]
            digits = [m.start() for m in HAS_DIGIT.finditer(surface)]
            between = LETTER_RUN.findall(surface[digits[0]:digits[-1]])
            return (len(groups) > 1 and max(groups) < _PHONE_MIN_DIGITS and bool(between)
                    and all(w.lower() in _NUMBER_JOINERS for w in between))
        bare = surface.strip(" \t.")
        if (span.label in _JARGON_LABELS and bare.lower() in _UNIT_WORDS and _UNIT_NUMBER_AFTER.match(text, span.end)
                and not name_context(text, span.start, span.end)):
            return True  # a kind of unit and its number, no unit's name ("from [WARD] 3", "to [Ward]3")
        if sources_of(span) != {"ner"}:
            return False
        if span.label in (Label.LOCATION, Label.ORGANIZATION) and bare in _STATE_CODES:
            # a state's code alone is no place of its own ("since MN", "nurse from the VA"): the regex step reads one
            # only after "City," or before a ZIP, and so does this rule; after a word for a relative it is a
            # person's initials ("brother of MS")
            before = text[max(0, span.start - 24):span.start]
            relative = any(relation_word(edge_key(w)) for w in LETTER_RUN.findall(before)[-2:])
            return not (before.rstrip().endswith(",") or relative or _DIGIT_AFTER.match(text, span.end))
        if span.label in (Label.NAME, Label.ORGANIZATION) and not LETTER_RUN.search(surface):
            return True  # a person or an organisation has a name ("from WARD [3]")
        if span.label == Label.NAME and all(w.lower() in NAME_TITLES for w in LETTER_RUN.findall(surface)):
            return True  # titles alone name nobody ("MET C [DRS]", "called the [Dr]"; a span without letters went above)
        if (span.label in _JARGON_LABELS and bare.lower() in vocab.STREET_TYPE_WORDS
                and not (len(bare) > 2 and vocab.is_first_name(bare)) and not vocab.is_place_name(bare)):
            return True  # a street type or "St" alone ("NSR to ST", "converted to st"): no street, saint or place
        return len(bare) == 1 and bare.isalpha() and not note.neighbours(span)

    def _is_misspelt(self, span: Span, text: str) -> bool:
        """A misspelt common or clinical word found only by the model ("tommorow", "owund", "codiene"): one word of
        5+ letters in lower case (capitals in an ALL-CAPS line), in no name list, unknown to English, within one edit
        (two from 7 letters; two swapped letters are one) of a frequent English word or a clinical word ("LENTGH");
        never after a title or an initial, before an institution word, or on a line of fewer than three words."""
        cw = self.clinical_words
        if (cw is None or sources_of(span) != {"ner"}
                or span.label not in _JARGON_LABELS):
            return False
        word = text[span.start:span.end].strip(" .,;:")
        low = word.lower()
        if len(word) < _MISSPELT_MIN_LEN or not word.isalpha() or not word.isascii():
            return False
        if not (word.islower() or (word.isupper() and line_fact(is_all_caps, text, span.start, span.end))):
            return False
        if (line_fact(_word_count, text, span.start, span.end) < 3 or vocab.zipf(low) >= KNOWN_WORD_ZIPF
                or vocab.is_name_word(low)):
            return False
        if (name_context(text, span.start, span.end) or _INITIAL_BEFORE.search(text, max(0, span.start - 8), span.start)
                or _INSTITUTION_AFTER.match(text, span.end)):
            return False
        return self._misspelt_word(low)

    def _is_common_lower(self, span: Span, text: str) -> bool:
        """Lower-case common English words that only the model found as a name, place or organisation: in
        mixed-case text a name is capitalised, and in lower-case text a name is still a name-list word."""
        if (sources_of(span) != {"ner"}
                or span.label not in _JARGON_LABELS):
            return False
        surface = text[span.start:span.end].strip(" \t.,;:")
        words = LETTER_RUN.findall(surface)
        if not words or not surface.islower() or vocab.is_place_name(surface):
            return False
        if HAS_DIGIT.search(surface) or not all(_common_word(w) for w in words):
            return False
        return not (_INSTITUTION_AFTER.match(text, span.end) or name_context(text, span.start, span.end))

    def _is_weak_lower(self, span: Span, text: str, note: CueNote) -> bool:
        """A lower-case name, place or organisation from the model alone, scored below ``weak_lower_score``,
        with no evidence of its own: in telegraphic lower-case notes the model takes misspellings and jargon for
        names ("pearl" for PERRL, "from ctic", "fem site"). A name's evidence: a title, an initial, a family or
        provider word before it, a credential or an age and sex after it, or the same word in a stronger name
        detection of the note; a place's or organisation's: a residence or work cue before it ("lives in"), an
        institution or unit word in or after it, or another detection next to it (an address)."""
        if (span.score >= self.weak_lower_score or sources_of(span) != {"ner"}
                or span.label not in _JARGON_LABELS):
            return False
        surface = text[span.start:span.end]
        if not surface.islower():
            return False
        near = note.neighbours(span)
        left = text[max(0, span.start - 32):span.start]
        if span.label != Label.NAME:
            return not (near or _PLACE_CUE_BEFORE.search(left) or _FACILITY_NEAR.search(text, span.start, span.end + 16))
        if any(o.overlaps(span) for o in near) or name_context(text, span.start, span.end):
            return False
        if (_INITIAL_BEFORE.search(left[-8:]) or _INITIAL_START.match(surface) or _PERSON_CUE_BEFORE.search(left)
                or _CREDENTIAL_LOWER_AFTER.match(text, span.end) or _AGE_SEX.search(text, span.start, span.end + 8)):
            return False
        # the span itself is weak and from the model alone: never one of the note's strong names
        return not note.in_strong_name(surface.strip(" \t.,;:"), text)

    def _is_number_piece(self, span: Span, text: str, note: CueNote) -> bool:
        """``number_piece``: digits and separators from the model alone that run on into more digits
        ("[140]/60") or into the am / pm of a clock time ("11:[20]pm"), where the whole run has no identifier shape
        and is no readable date (a clock time only beside a date), and no other detection is on it (the model's
        piece of a date the regex found whole is that date's vote)."""
        if (span.label not in (Label.DATE, Label.NAME)
                or sources_of(span) != {"ner"} or not NUMBER_PIECE.fullmatch(text, span.start, span.end)
                or any(o is not span for o in note.spans.overlapping(span.start, span.end))):
            return False
        a, b = span.start, span.end
        left = a > 0 and (text[a - 1].isdigit() or (text[a - 1] in "/.:-" and a > 1 and text[a - 2].isdigit()))
        right = _RUNS_ON.match(text, b) is not None
        if not (left or right):
            return False
        lo, hi, whole = number_run(text, a, b)
        if identifier_shaped(whole) or _FULL_DATE.fullmatch(whole):
            return False
        if ":" in whole:  # a clock time: part of a date-time only right beside a date
            return not attached_to_date(text, lo, hi)
        return not readable_date(whole)  # "/84" of "8/84" stays with its month

    def _is_listed_drug(self, span: Span, text: str, note: CueNote) -> bool:
        """``listed_drug``: a one-word dictionary name after a dose or in a list with a known drug."""
        if (span.label not in _JARGON_LABELS or sources_of(span) != {"dictionary"}
                or not _ONE_WORD.fullmatch(text, span.start, span.end) or name_context(text, span.start, span.end)):
            return False
        if _DOSE_BEFORE.search(text, max(0, span.start - 16), span.start):
            return True
        if not len(note.drugs):
            return False
        items = []  # the list items beside the span, nearest first, on both sides
        pos = span.end
        for _ in range(_LIST_REACH):
            m = _LIST_ITEM_AFTER.match(text, pos)
            if m is None:
                break
            items.append((m.start(1), m.end(1)))
            pos = m.end()
        pos = span.start
        for _ in range(_LIST_REACH):
            m = _LIST_ITEM_BEFORE.search(text, max(0, pos - 40), pos)
            if m is None:
                break
            items.append((m.start(1), m.end(1)))
            pos = m.start(1)
        return any(a <= lo and hi <= b for lo, hi in items for a, b in note.drugs.near(lo, hi))

    def _is_generic_institution(self, span: Span, text: str) -> bool:
        """An organisation or place without case evidence (lower case, or on an ALL-CAPS line) made of an institution
        word and words that only describe one: frequent English words, or misspellings of them, in no US hospital's
        name (the shipped CMS list) and no place ("OUTSIDE HOSPITAL", "admitted to hosp", "FAMIL WENT HOME");
        "MERCY HOSPITAL", "harbor hosp", "the general hospital" do not fire."""
        if span.label not in (Label.ORGANIZATION, Label.LOCATION):
            return False
        surface = text[span.start:span.end]
        if not (surface.islower() or line_fact(is_all_caps, text, span.start, span.end)):
            return False
        words = [w.lower() for w in LETTER_RUN.findall(surface)]
        if not any(w in _GENERIC_HEADS for w in words):
            return False
        names = vocab.hospital_name_words()
        return all(w in _GENERIC_HEADS or w in _GENERIC_INNER
                   or (w not in names and not vocab.is_place_name(w) and (
                       vocab.zipf(w) >= KNOWN_WORD_ZIPF or self._misspelt_word(w)))
                   for w in words)

    def _misspelt_word(self, word: str) -> bool:
        """``word`` (lower case) is a misspelt known word: 5+ letters, in no name list, unknown to English, near a
        frequent English or clinical word (``misspelt``'s test without its span conditions)."""
        cw = self.clinical_words
        if (cw is None or len(word) < _MISSPELT_MIN_LEN
                or vocab.zipf(word) >= KNOWN_WORD_ZIPF or vocab.is_name_word(word)):
            return False
        found = self._near_known.get(word)
        if found is None:
            if self._known is None:
                self._known = known_words(cw)
            found = self._near_known[word] = near_known_word(word, self._known)
            if len(self._near_known) > _NEAR_KNOWN_CACHE:  # a worker runs for days: keep the memo bounded
                self._near_known.pop(next(iter(self._near_known)))
        return found

    def _is_heading(self, span: Span, text: str) -> bool:
        """``heading``: the span is its line's heading (alone at its start before a colon or a dash: "Service:",
        "GU- foley") and made of heading words (clinical or very frequent words; no first name, no surname that is no
        frequent word; a misspelt word only before a colon)."""
        if (span.label not in _JARGON_LABELS
                or not _BLANKS.fullmatch(text, line_bounds(text, span.start)[0], span.start)):
            return False
        mark = _HEADING_COLON.match(text, span.end)
        if mark is None:
            return False
        colon = ":" in mark.group()  # a misspelt heading word only before a colon ("Reveiw of System:")
        cw = self.clinical_words
        words = [w.lower() for w in LETTER_RUN.findall(text, span.start, span.end)]

        def heading_word(w: str) -> bool:
            if vocab.is_first_name(w):
                return False
            if (cw is not None and cw.is_clinical(w)) or vocab.zipf(w) >= _HEADING_WORD_ZIPF:
                return True
            return not vocab.is_surname(w) and (vocab.zipf(w) >= KNOWN_WORD_ZIPF
                                                or (colon and w.isascii() and self._misspelt_word(w)))

        return bool(words) and all(map(heading_word, words))

    def _is_misspelt_list_item(self, span: Span, text: str) -> bool:
        """``misspelt_list_item``: a one-word name / place / organisation one edit from a curated word of 4+ letters
        (two swapped letters are one), as an item of a telegraphic list whose item right before or after it is a
        curated word: the abbreviation misspelt into a name-list word ("MAE. PEARL." and "pearl, mae" for PERRL,
        "PERLA" for PERRLA); never after a title or with other name evidence."""
        cw = self.clinical_words
        if cw is None or span.label not in _JARGON_LABELS:
            return False
        word = text[span.start:span.end].strip(" .,;:")
        if len(word) < _LIST_MISSPELT_MIN_LEN or not word.isalpha():
            return False
        items = (_ITEM_BEFORE.search(text, max(0, span.start - 24), span.start), _ITEM_AFTER.match(text, span.end))
        if not any(m is not None and cw.is_curated(m.group(1)) for m in items) or name_context(text, span.start,
                                                                                                span.end):
            return False
        if self._curated_long is None:
            self._curated_long = WordIndex(
                sorted(w for w in cw.jargon if len(w) >= _LIST_MISSPELT_MIN_LEN and w.isalpha()))
        return within_edits(word.lower(), self._curated_long, 1)

    def _is_relation(self, span: Span, text: str) -> bool:
        """A name made only of words for a relative or a carer ("AUNTS", "pt's pastor", "Hsb", "S DUAGHTER"): plurals
        and one-edit misspellings of 5+ letters (in no name list) count; not after a title ("Dr. Brother")."""
        if span.label != Label.NAME:
            return False
        words = LETTER_RUN.findall(text, span.start, span.end)
        words = [w.lower().removesuffix("'s") for w in words if len(w) > 1]
        return bool(words) and all(map(relation_word, words)) and not name_context(text, span.start, span.end)

    @staticmethod
    def _clinical_word(cw: ClinicalWords, span: Span, words: Sequence[str]) -> bool:
        """One word without case evidence (lower case or capitals), not a dictionary's find, that the
        clinical-word filter knows."""
        if len(words) != 1 or "dictionary" in sources_of(span):
            return False
        w = words[0]
        # two letters are as often initials or a state ("PA", "MS") as abbreviations
        if len(w) < 3 or not w.isalpha() or not (w.islower() or w.isupper()):
            return False
        return cw.reason(w) is not None


def _word_count(line: str) -> int:
    return len(line.split())


_BLANKS = re.compile(r"[ \t]*")


class CueNote:
    """What the cues of one note's candidates share, built once per note (:meth:`Cues.note`): the candidates and the
    unambiguous drug matches indexed by start, and a memo of the words found in the note's strong name detections.
    With it each cue looks only at what lies near its candidate: scans over all candidates per candidate made the
    decide step quadratic on notes dense with identifiers."""

    def __init__(self, spans: Sequence[Span], matches: Sequence[MedicalMatch], weak_lower_score: float) -> None:
        self.spans: ByStart[Span] = ByStart(spans, _span_bounds)
        self.drugs: ByStart[tuple[int, int]] = ByStart(
            ((m.start, m.end) for m in matches if m.kind in _DRUG_KINDS and not m.ambiguous), _pair_bounds)
        self._weak_lower_score = weak_lower_score
        self._strong: list[tuple[int, int]] | None = None
        self._in_strong: dict[str, bool] = {}

    def neighbours(self, span: Span) -> list[Span]:
        """The other candidates overlapping ``span`` or within ``_NEIGHBOUR`` characters of it."""
        return [o for o in self.spans.near(span.start, span.end, _NEIGHBOUR) if o is not span]

    def in_strong_name(self, word: str, text: str) -> bool:
        """``word`` occurs (lower case) in one of the note's strong name candidates: a NAME scored at least
        ``weak_lower_score`` or found by another detector than the model."""
        found = self._in_strong.get(word)
        if found is None:
            if self._strong is None:
                self._strong = [(o.start, o.end) for o in self.spans.items if o.label == Label.NAME
                                and (o.score >= self._weak_lower_score or sources_of(o) != {"ner"})]
            found = self._in_strong[word] = any(word in text[a:b].lower() for a, b in self._strong)
        return found


def _span_bounds(span: Span) -> tuple[int, int]:
    return span.start, span.end


def _pair_bounds(pair: tuple[int, int]) -> tuple[int, int]:
    return pair
