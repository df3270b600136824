"""Medical-term recovery: un-tag candidate spans that are certainly medical terms (DESIGN.md §3), and cut off a
candidate's edges that are no part of an identifier.

Recovery keeps only what is certain (issue 25). A candidate span is moved to ``note.dropped`` when medical matches
in the ORIGINAL text cover it (up to trivial punctuation or a possessive): a vocabulary term ("Bruce" in "Bruce
protocol", "Lasix", "NAD", "St. Jude valve") or well-formed medical syntax ("8/9" in "Apgar score 8/9", "7578395"
in "g.7578395G>C", "0630" in "meds at 0630"). Ambiguous terms (also person names or places: "Allegra", "Foley",
"CT") count only with medical context next to them ("Allegra 180 mg", "started on Allegra", "Foley catheter").
Also dropped: a form's labels and a sex field's value ("Apellidos:", "Sexo: H", ``use_field_labels``), another
language's particle standing alone ("de", ``use_lone_particles``) and its nouns for a patient ("Varón de",
"Paciente", ``use_person_nouns``). Everything else the rule rounds of issue 10 knew (measurements, jargon, numbers no
calendar reads, misspellings, headings, ...) is evidence for the decision stage, not a hard drop:
``processors.decide.cues``.

Edges that are no identifier are cut off a span that stays (the words cut off go to ``note.dropped``): titles,
credentials and words after a name ("Drs' Ballou", "DR MANNING AWARE", a department's head: "Jorge Planelles Gómez
Servicio de", ``use_name_edges``), and a ward or floor
number after a unit's name in a line that moves the patient ("transfer to QUARTERMAIN 2", ``use_ward_numbers``),
a part of the day written as a word beside a date ("8/27 pm", ``use_date_edges``), what a phone span holds past a
line break (``use_phone_edges``) and a place's last word that is a preposition or "or" ("BALTIMORE REHAB OR") or a
department's name before a hospital's ("Servicio de Nefrología, Hospital ...", ``use_place_edges``). What is left of a span is checked again against the medical terms.

Never dropped or cut: spans from a protected source (``span.source`` may be ``"a+b"`` after merges), spans with an
identifier shape (phone, email, URL, IP, SSN, ZIP), spans preceded by a title or followed by a credential ("Dr.
Parkinson", "Foley, RN"), and spans that repeat the message's own identifiers (patient, relatives, providers) when
``protect_message_identifiers`` is on (``processors.shapes``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from dictionaries import vocab
from dictionaries.calendar import CALENDAR_TOKENS
from dictionaries.medical import (
    MAX_CHARS,
    MedicalMatch,
    MedicalVocabulary,
    gene_spans,
    medical_syntax_spans,
    medical_vocabulary,
)
from dictionaries.text import fold_accents, is_all_caps, line_fact, name_context
from processors.pipeline import BuildContext, Note, register
from processors.shapes import (
    HAS_DIGIT,
    KNOWN_WORD_ZIPF,
    NAME_TITLES,
    edge_key,
    field_label_before,
    message_identifiers,
    protected,
    relation_word,
    repeats_message,
    windows,
)
from processors.spans import ByStart, sources_of
from schemas.labels import Label
from schemas.models import Span

logger = logging.getLogger(__name__)

#: Medical context right before an ambiguous term ("started on Allegra", "h/o Crohn").
_LEFT_CONTEXT = re.compile(
    r"\b(?:started on|start(?:ed)?|restart(?:ed)?|resumed?|taking|takes|take|is on|was on|remains on|"
    r"currently on|been on|given|receiv(?:ed|ing)|prescrib(?:ed|e)|continued?|discontinued?|stop(?:ped)?|"
    r"held|hold(?:ing)?|d/c(?:'?d)?|dc'?d|titrat\w+|increased?|decreased?|switch(?:ed)? (?:to|from)|"
    r"changed? to|allerg\w*(?: to)?|intoleran\w*(?: to)?|s/p|h/o|hx of|history of|r/o|rule out|dose of|"
    r"trial of|course of|placed|insert(?:ed)?|remov(?:ed|al of)|exchanged?|repeat|obtain(?:ed)?|"
    r"order(?:ed)?|check(?:ed)?|positive|negative|mg of|tabs? of|via|through)"
    r"\s*[:-]?\s*(?:the|a|an|his|her|their|po|iv|oral)?\s*$",
    re.IGNORECASE,
)
#: Medical context right after an ambiguous term ("Allegra 180 mg", "Foley catheter", "CT head").
_RIGHT_CONTEXT = re.compile(
    r"^(?:'s)?\s*(?:[:,(]\s*)?(?:"
    r"\d+(?:\.\d+)?\s*(?:mg|mcg|g|gm|ml|units?|u|meq|mmol|%|tabs?|tablets?|caps?|capsules?|puffs?|drops?|"
    r"sprays?|patch)\b"
    r"|\d+(?:\.\d+)?/\d{3}(?!\d)"  # combination strengths ("Norco 5/325"); dates never have 3 digits there
    r"|\(?[+]\)?|\(-\)"
    r"|(?:po|iv|im|sq|subq|sc|sl|pr|inh|ivpb|ivp|gtt|drip|bid|tid|qid|qd|daily|nightly|qhs|qam|qpm|prn|"
    r"q\d+h?|weekly|xr|er|sr|cr|xl|odt|hct|tablets?|tabs?|capsules?|caps?|injection|infusion|inhaler|nebs?|"
    r"cream|ointment|gel|lotion|solution|suspension|elixir|syrup|drops|patch|sign|signs|test|tests|testing|"
    r"maneuver|reflex|reflexes|phenomenon|syndrome|disease|palsy|crisis|procedure|operation|repair|"
    r"resection|score|scale|class|grade|criteria|stage|staging|protocol|valve|valves|catheter|cath|line|"
    r"tube|drain|shunt|pump|stent|filter|device|collar|splint|bag|lift|boot|positive|negative|pos|neg|"
    r"head|chest|abd|abdomen|pelvis|neck|brain|spine|c-spine|sinus|sinuses|scan|angio\w*|a/p|c/a/p|w/o?|"
    r"with contrast|without contrast|guided|portal|message|inbox)\b)",
    re.IGNORECASE,
)
_TRIVIAL = re.compile(r"[\s.,;:!?\"'()\[\]{}/-]*(?:['\u2019]s)?[\s.,;:!?\"'()\[\]{}/-]*")
_SIGNED_NUMBER = re.compile(r"\s*[+-]\s*\d{1,5}\s*")
#: a phone number has at least this many digits (local numbers, 555-0134); pagers and extensions written
#: beside words are fewer, but a span of only shorter groups joined by a word is a list ("0200 and 0415")
_PHONE_MIN_DIGITS = 7
#: Dates with a year ("03/14/2023", "2023-03-14", "20140731") or a month name ("13 Oct 2018", "14th of
#: February") are never medical syntax: no syntax scan for them.
_FULL_DATE = re.compile(
    r"\s*(?:\d{1,2}[/.-]\d{1,2}[/.-](?:\d{2}|\d{4})|\d{4}-\d{1,2}-\d{1,2}|(?:19|20)\d{6}|"
    r"(?i:.*\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b.*))\s*"
)
#: name edges (``use_name_edges``): a word of a name span (hyphenated and apostrophe names are one); titles and
#: credentials are no part of a name ("Drs' Ballou", "RABBI KLEIN", "s. roberto rrt"), nor is a conjunction at its
#: start ("& dauther") or a word after the name ("Dr Kearns paged", "DR MANNING AWARE", "Dr King has")
_NAME_EDGE_TOKEN = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*['\u2019]?|&")
#: a surname-list word this frequent is a function word after a name ("has", "and", "was"), not a surname
_FUNCTION_WORD_ZIPF = 6.0
#: a lower-case word after a capitalised name is a word of English at least this frequent ("paged" 2.5); rarer
#: ones are as often a name's own lower-case part in another language ("Novo mesto")
_LOWER_AFTER_NAME_ZIPF = 2.0
_NAME_CREDENTIALS = frozenset("md rn np rrt lpn cna crna msw lcsw pa do phd".split())
#: the label of a record's field right after a name ("Re: Rosalee Smith, DOB 01/15/1939", "Johnson, Ronald  MRN
#: 4619898"): a form's word, never part of a person's name, in any case
_FIELD_LABELS = vocab.RECORD_LABELS
#: a credential written with dots at a name span's end, whole or cut short by the model ("J. Anderson M.D..",
#: "Poire, Ph.D.", "Ducret, M" of "Ducret, M.D."): read on into the text, its letters are looked up
_DOTTED_CREDENTIAL = re.compile(r"[\s,]+([A-Za-z]{1,2}(?:\.[A-Za-z]{1,2}){0,2}\.*)\s*\Z")
_DOTTED_READ_ON = re.compile(r"[A-Za-z.]{0,6}")  # matches at any position (possibly empty)
_NAME_JOINERS = frozenset({"and", "&", "or"})
#: the word that links a department's head to its speciality ("Servicio de", "Servei d'", "Abteilung für")
_DEPARTMENT_LINKS = frozenset({"de", "del", "d", "di", "da", "do", "für"})
#: a speciality's name in Spanish (and Catalan, Portuguese, Italian), first in a department's name or after its "de":
#: "Urología", "Pediatria", "Cirugía", "Medicina", "Urgencias"; not a surname's "de Armas"
_SPECIALTY = re.compile(r"[A-ZÁÉÍÓÚ]\w*[ií]a|Medicina|Urgencias")
_WORD = re.compile(r"[^\W_]+")
#: a name span right after "Word, " is the end of a list or a firm's name; one before a number on its line is a street
_LIST_BEFORE = re.compile(r",[ \t]*\Z")
_NUMBER_AFTER = re.compile(r"[^\n,.;:!?\d]{0,16}\d+(?![\d.:/])")  # a house number, not "K 3.1" or "at 10:30"
#: particles that belong to a surname in lower case ("Ludwig van Beethoven", "Maria de la Cruz")
_NAME_PARTICLES = frozenset("van von der den de del della di da dos das du la le bin ibn al el st".split())
#: a ward or floor number after a unit's name ("transfer to QUARTERMAIN 2", "from Ward3"): a place name of one word
#: and a number of one or two digits, when the line moves the patient between units; the number is no identifier
#: (a house number is: "lives at Puruntie 82" has no such cue)
_WARD = re.compile(r"([^\W\d_][\w'.-]*?)[ \t]*(\d{1,2}[A-Za-z]?)\.?")
_WARD_CUE = re.compile(
    r"\b(?:transfer\w*|trans|tx|xfer\w*|admit\w*|adm|received|recieved|sent|arriv\w*|brought|moved?|dispo\w*|"
    r"plan)\b[^\n]{0,40}$", re.IGNORECASE)
#: "to" / "from" right before the unit's name moves the patient too ("to quartermain 2 at 1000", "code called to
#: Fenwick 6"); a house number has "at" or "on" ("lives at Puruntie 82")
_WARD_MOVE_BEFORE = re.compile(r"\b(?:to|from)[ \t]+\Z", re.IGNORECASE)
_WARD_CUE_AFTER = re.compile(r"[^\n]{0,24}\bbeds?\b", re.IGNORECASE)
#: a number right before the name: a house number before its street ("arrived at 17224 Verbraut 66"), no unit
_HOUSE_NUMBER_BEFORE = re.compile(r"\d+[A-Za-z]?[ \t]+\Z")
_NOT_WARD = frozenset("apt apartment suite ste unit floor fl room rm box route rte hwy highway interstate exit no "
                      "number building bldg lot gate pier".split())
#: date edges (``use_date_edges``): a part of the day written as a word is no date element ("8/27 [pm]", "[eve]
#: 8/26", "9/20 [AM]"); a clock time is ("3/14 3:30 PM" stays whole), and so is a weekday (a policy of its own)
_DAY_PARTS = frozenset("am pm eve eves evening evenings morning mornings night nights noon midnight mn afternoon "
                       "afternoons tonight nite nites overnight noc nocs".split())
_DATE_EDGE_TOKEN = re.compile(r"\S+")
#: two clock times joined by a dash ("07-1600", "7p-7a"): one of them with a/p or of 3-4 digits (not "5-7")
_HOUR_RANGE = re.compile(r"(\d{1,4})([ap]m?)?-(\d{1,4})([ap]m?)?", re.IGNORECASE)
_CLOCK_TOKEN = re.compile(r"@?(?:\d{1,2}(?::\d{2})?|\d{3,4})(?:[ap]\.?m?\.?)?", re.IGNORECASE)
_DATE_MATERIAL = re.compile(r"\d|(?i:\b(?:" + "|".join(map(re.escape, sorted(CALENDAR_TOKENS, key=len, reverse=True))) + r")\b)")
#: place edges (``use_place_edges``): words of a place span, and last words that are no part of a name
_PLACE_EDGE_TOKEN = re.compile(r"\S+")
#: a form's field label at a span's start (a colon after it, or a dash or slash glued to the value: "nhc-739146"),
#: and at its end (a colon after it in the text: "Rosa Jiménez NºCol: 28 28")
_LEADING_LABEL = re.compile(
    r"[^\w]*(?P<w>(?i:" + "|".join(re.escape(p) for p in sorted(vocab.FORM_FIELD_PHRASES, key=len, reverse=True))
    + r")(?![^\W\d_])|[^\W\d_]+)[ \t]*(?::|[-/](?=\w))[ \t]*")
_TRAILING_LABEL = re.compile(r"(?<![^\W\d_])(?P<w>[^\W\d_]+)[^\w]*\Z")  # a word's start: linear time
_LABEL_END = re.compile(r"[ \t]*:")
#: a line that starts with a form's label: words only (no digit), blanks, "/" or "-" between them, then a colon
#: ("Localidad/ Provincia:", "Fecha de ingreso:", "Phone:"); the label's end is the colon's start
_LINE_LABEL = re.compile(r"[ \t]*[^\W\d_]+(?:(?:[ \t]*[/-][ \t]*|[ \t]+)[^\W\d_]+){0,4}(?=[ \t]*:)")
#: the type words of an institution's name (``institution_type_words``)
_TYPE_WORDS = frozenset("hospital hospitals hosp medical center centre ctr clinic clinics health healthcare system "
                        "institute rehab rehabilitation nursing home hospice infirmary facility care".split())
_PLACE_TRAILING = frozenset({"at", "or", "on", "for", "to", "in", "with", "from", "by"})
_SYNTAX_REACH = 28  # a syntax match overlapping a span starts/ends within this many characters of it
_CAPS_TOKEN = re.compile(r"\b[A-Z][A-Z0-9]{2,9}\b")


def covered(text: str, start: int, end: int, intervals: Sequence[tuple[int, int]]) -> bool:
    """True when ``intervals`` cover ``text[start:end]`` except trivial punctuation or a possessive,
    and cover at least one letter or digit of it."""
    pos = start
    touched = False
    for s, e in sorted(intervals):
        if e <= pos or s >= end:
            continue
        if s > pos and not _TRIVIAL.fullmatch(text[pos:s]):
            return False
        seg_start, seg_end = max(s, start), min(e, end)
        if any(c.isalnum() for c in text[seg_start:seg_end]):
            touched = True
        pos = max(pos, e)
        if pos >= end:
            break
    if pos < end and not _TRIVIAL.fullmatch(text[pos:end]):
        return False
    return touched


def has_medical_context(text: str, m: MedicalMatch, window: int) -> bool:
    """Context that makes an ambiguous term medical: a trigger right before or right after it,
    within ``window`` characters on the same line."""
    left = text[max(0, m.start - window):m.start]
    left = left[left.rfind("\n") + 1:]
    right = text[m.end:m.end + window]
    nl = right.find("\n")
    if nl >= 0:
        right = right[:nl]
    return bool(_LEFT_CONTEXT.search(left) or _RIGHT_CONTEXT.match(right))


def _after_name(word: str, caps_line: bool, capitalised_name: bool) -> bool:
    """``word`` ends a name span but is no part of the name: a credential or a record's field label ("DOB"); a
    function word or a lower-case English word in no name list after a capitalised name in mixed-case text ("Dr
    Kearns paged"); a word without case evidence (lower case, or on an ALL-CAPS line) that is a frequent English
    word in no first-name list and in the surname list only when it is a function word ("AWARE", "has"; "YOUNG",
    "Brown" stay)."""
    key = edge_key(word)
    if key in _NAME_CREDENTIALS or key in _FIELD_LABELS:
        return True
    if key in _NAME_JOINERS:  # the model cut a name short before the next one ("Smith and" | "Davis Orchestra")
        return False
    if word == "a" and capitalised_name and not caps_line:  # "Laszlo Smith is a": the article (initials are capitals)
        return True
    if len(key) < 2 or not key.isalpha() or not (word.islower() or caps_line):  # an initial, "o'hara", or a
        # capitalised word in mixed case
        return False
    z = vocab.zipf(key)
    if word.islower() and capitalised_name and not caps_line:  # "Kearns paged", "King has"; "Janet logan",
        # "Novo mesto" stay
        return z >= _FUNCTION_WORD_ZIPF or (z >= _LOWER_AFTER_NAME_ZIPF and not vocab.is_name_word(key)
                                            and key not in _NAME_PARTICLES)
    return (z >= KNOWN_WORD_ZIPF and not vocab.is_first_name(key) and not vocab.is_place_name(key)
            and (z >= _FUNCTION_WORD_ZIPF or not vocab.is_surname(key)) and key not in _NAME_PARTICLES)


def place_parts(start: int, end: int, text: str) -> tuple[int, int]:
    """``text[start:end]`` (a place or organisation) without a last word that is no part of a name
    (``use_place_edges``): a preposition or "or", a letter that starts "s/p", "w/", a signed number ("-11"), or one
    of a hospital's units ("GH [ED]", "VAMC [ICU]"; not a capitalised "Ed", a name). At least one word stays. A
    department's name before a hospital's is cut off too (:func:`department_before`)."""
    start = department_before(start, end, text)
    words = [(m.start(), m.end()) for m in _PLACE_EDGE_TOKEN.finditer(text, start, end)]
    while len(words) > 1:
        lo, hi = words[-1]
        raw = text[lo:hi].rstrip(".,;:")
        w = raw.lower()
        if not (w in _PLACE_TRAILING or (len(w) == 1 and w.isalpha() and text[hi:hi + 1] == "/")
                or (w in vocab.HOSPITAL_UNITS and (raw.isupper() or raw.islower()))
                or _SIGNED_NUMBER.fullmatch(w)):  # "St. Mary's [-11]AM": no place name ends in a signed number
            break
        words.pop()
    return (start, words[-1][1]) if words else (start, end)


def department_before(start: int, end: int, text: str) -> int:
    """Where a hospital's name starts in ``text[start:end]`` when a department's name comes first ("[Servicio de
    Nefrología,] Hospital Universitario Central de Asturias", "[de Urología] Hospital Universitario Doctor Peset"): the
    span starts with a department's head (``vocab.DEPARTMENT_HEADS``), a speciality's word (one ending in "-ía",
    "Medicina", "Urgencias"; no name: "María José Gómez Hospital ..." stays), or "de" and one, and a capitalised
    hospital head (``vocab.HOSPITAL_HEADS``) follows. ``start`` otherwise."""
    words = [(m.start(), m.group()) for m in _WORD.finditer(text, start, end)]
    if len(words) < 2:
        return start
    first = words[0][1]
    head = first[:1].isupper() and first.lower() in vocab.DEPARTMENT_HEADS
    if not (head or _specialty(first) or (first in _DEPARTMENT_LINKS and _specialty(words[1][1]))):
        return start
    for at, w in words[1:]:
        if w.lower() in vocab.HOSPITAL_HEADS and w[:1].isupper():
            return at
    return start


_BLANKS = re.compile(r"[ \t]*")


def lone_particles(spans: Sequence[Span], candidates: Sequence[int], text: str) -> set[int]:
    """Of ``candidates`` (indexes into ``spans``), those made only of one lower-case particle of the other languages
    (``vocab.OTHER_FUNCTION_WORDS``) with no span of ``spans`` beside them, only blanks between
    (``use_lone_particles``)."""
    particles = [i for i in candidates if (w := text[spans[i].start:spans[i].end]).islower()
                 and w in vocab.OTHER_FUNCTION_WORDS]
    if not particles:  # the common case: no neighbours to look up
        return set()
    out: set[int] = set()
    order = sorted(range(len(spans)), key=lambda i: (spans[i].start, spans[i].end))
    pos = {i: k for k, i in enumerate(order)}
    for i in particles:
        s = spans[i]
        k = pos[i]
        before = spans[order[k - 1]] if k > 0 else None
        after = spans[order[k + 1]] if k + 1 < len(order) else None
        if before is not None and (before.end > s.start or _BLANKS.fullmatch(text, before.end, s.start)):
            continue
        if after is not None and (after.start < s.end or _BLANKS.fullmatch(text, s.end, after.start)):
            continue
        out.add(i)
    return out


def person_nouns_only(span: Span, text: str) -> bool:
    """``span`` is made only of the other languages' nouns for a patient or a person and lower-case particles
    between them ("Varón", "Mujer de", "Paciente"; ``use_person_nouns``)."""
    words = _WORD.findall(text, span.start, span.end)
    return (bool(words) and words[0].lower() in vocab.PERSON_NOUNS
            and all(w.lower() in vocab.PERSON_NOUNS or (w.islower() and w in vocab.OTHER_FUNCTION_WORDS)
                    for w in words))


def _specialty(word: str) -> bool:
    """``word`` names a medical speciality in those languages (``_SPECIALTY``) and is no name ("María", "García")."""
    if _SPECIALTY.fullmatch(word) is None:
        return False
    return not (vocab.is_name_word(word) or vocab.is_name_word(fold_accents(word)))


def without_type_words(start: int, end: int, text: str) -> tuple[int, int]:
    """``text[start:end]`` (a place or organisation) without the type words at its end ("Mercy Medical Center" ->
    "Mercy"; the ``institution_type_words`` policy); at least one word stays."""
    words = [(m.start(), m.end()) for m in _PLACE_EDGE_TOKEN.finditer(text, start, end)]
    while len(words) > 1 and text[words[-1][0]:words[-1][1]].lower().strip(".,;:'") in _TYPE_WORDS:
        words.pop()
    return (start, words[-1][1]) if words else (start, end)


def field_label_parts(start: int, end: int, text: str) -> tuple[int, int]:
    """``text[start:end]`` without the labels of a form's fields at its ends (``use_field_labels``;
    ``vocab.FORM_FIELD_LABELS``): a label that a colon follows, or a dash or slash glued to the value ("Apellidos:
    De Miguel", "nhc-739146", "Rosa Jiménez NºCol: 28 28"), and, of any words, the start of the next line's label
    that the span ran into across a line break (a line of words that a colon closes: "Calle Cuba, 1, 3 B.\nLocalidad"
    of "Localidad/ Provincia:"). An empty range (``start, start``) when the span holds nothing but labels; the span
    itself when nothing is cut."""
    a, b = start, end
    # the next line's label, which a span ran into across the line break ("Calle Cuba, 1, 3 B.\n[Localidad]" of
    # "Localidad/ Provincia: Málaga"): a line that starts with words and a colon is a form's label, whatever its words
    brk = text.rfind("\n", a, b)
    if brk > a and (m := _LINE_LABEL.match(text, brk + 1)) is not None and m.end() >= b:
        b = brk
    while (m := _LEADING_LABEL.match(text, a, min(len(text), b + 24))) and _is_label(m.group("w")):
        if m.start("w") >= b:
            break
        a = m.end()
        if a >= b:
            return start, start
    while ((m := _TRAILING_LABEL.search(text, a, b)) and m.group("w").lower() in vocab.FORM_FIELD_LABELS
           and _LABEL_END.match(text, m.end("w"))):
        b = m.start("w")
    # the start of a label that runs on past the span's end ("Valencia [E]-mail:", "Natalia del Valle [Correo]
    # electrónico:"): the label's, not the value's
    if ((m := _TRAILING_LABEL.search(text, a, b)) and m.start("w") > a
            and (n := _LEADING_LABEL.match(text, m.start("w"), min(len(text), b + 24))) is not None
            and n.start("w") == m.start("w") and n.end("w") > b and _is_label(n.group("w"))):
        b = m.start("w")
    if (a, b) == (start, end):
        return start, end
    a, b = _without_blanks(text, a, b)
    while b > a and not text[b - 1].isalnum() and text[b - 1] not in ".)'\u2019":
        b -= 1
    return (a, b) if b > a and any(c.isalnum() for c in text[a:b]) else (start, start)


def _is_label(word: str) -> bool:
    w = word.lower()
    return w in vocab.FORM_FIELD_LABELS or w in vocab.FORM_FIELD_PHRASES


def sex_field_value(start: int, end: int, text: str) -> bool:
    """``text[start:end]`` is the value of a form's sex field ("Sexo: H", "Sex: F", "Geschlecht: weiblich"): it
    names a sex, which identifies no one (MEDDOCAN's sex label is no identifier under our policy either)."""
    value = text[start:end].strip(" .,;").lower()
    if value not in vocab.SEX_VALUES:
        return False
    return field_label_before(text, start) in vocab.SEX_FIELD_LABELS


def _holds_message(pieces: Sequence[Span], text: str,
                   message: tuple[frozenset[str], frozenset[str]] | None) -> bool:
    """One of ``pieces`` (what an edge rule would cut) repeats the message's own identifiers: not to be cut."""
    return message is not None and any(repeats_message(p, text, *message) for p in pieces)


def _day_part(token: str) -> bool:
    return token.lower().strip(".,;:()").replace(".", "") in _DAY_PARTS


def _without_blanks(text: str, lo: int, hi: int) -> tuple[int, int]:
    """``text[lo:hi]`` without the blanks at its ends (an empty range when it is all blanks)."""
    piece = text[lo:hi]
    return lo + len(piece) - len(piece.lstrip()), hi - len(piece) + len(piece.rstrip())


def _gaps(span: Span, parts: Sequence[tuple[int, int]], text: str) -> list[Span]:
    """What lies in ``span`` outside ``parts`` (ordered ranges inside it), without blanks, as spans like ``span``."""
    ends = [span.start, *(x for a, b in parts for x in (a, b)), span.end]
    return [span.model_copy(update={"start": lo, "end": hi}) for lo, hi in
            (_without_blanks(text, a, b) for a, b in zip(ends[::2], ends[1::2], strict=True)) if hi > lo]


def line_pieces(start: int, end: int, text: str) -> list[tuple[int, int]]:
    """``text[start:end]`` split at its line breaks: one range a line that holds a letter or digit, without the blanks
    at its ends (the whole range when it holds no line break)."""
    if "\n" not in text[start:end]:
        return [(start, end)]
    out = []
    for m in re.finditer(r"[^\n]+", text[start:end]):
        lo, hi = _without_blanks(text, start + m.start(), start + m.end())
        if hi > lo and any(c.isalnum() for c in text[lo:hi]):
            out.append((lo, hi))
    return out or [(start, end)]


def phone_line(span: Span, text: str) -> tuple[int, int]:
    """A PHONE span that crosses a line break: only its line with a whole phone number's digits when the other
    lines hold at most two ("204-555-0162 \\n 2)"); the span itself otherwise."""
    if "\n" not in text[span.start:span.end]:
        return span.start, span.end
    lines = [(m.start(), m.end(), sum(c.isdigit() for c in m.group()))
             for m in re.finditer(r"[^\n]+", text[span.start:span.end])]
    full = [x for x in lines if x[2] >= _PHONE_MIN_DIGITS]
    if len(full) != 1 or any(x[2] > 2 for x in lines if x is not full[0]):
        return span.start, span.end
    return _without_blanks(text, span.start + full[0][0], span.start + full[0][1])


def _shift_hours(token: str) -> bool:
    """``token`` is a range of two clock times ("07-1600", "7p-7a", "0700-1900"): a shift, not a date."""
    m = _HOUR_RANGE.fullmatch(token.rstrip(".,;:"))
    if m is None or not (m.group(2) or m.group(4) or len(m.group(1)) >= 3 or len(m.group(3)) >= 3):
        return False
    return all(int(h[:-2] or "0") <= 24 and int(h[-2:]) < 60 if len(h) >= 3 else int(h) <= 24
               for h in (m.group(1), m.group(3)))


def date_parts(span: Span, text: str) -> tuple[int, int]:
    """The part of a DATE span that is a date (``use_date_edges``): the one line of it with a digit or a calendar
    word when it crosses a line break, without a part of the day written as a word at either end ("8/27 pm" ->
    "8/27"; "3/14 3:30 PM" stays, a clock time is part of a date-time) and without a shift's hours after it
    ("8/12/91 07-1600": a range of hours, no moment). The span itself when nothing is cut or nothing with a
    date would be left."""
    a, b = span.start, span.end
    if "\n" in text[a:b]:
        lines = [m for m in re.finditer(r"[^\n]+", text[a:b]) if _DATE_MATERIAL.search(m.group())]
        if len(lines) != 1:
            return span.start, span.end
        a, b = a + lines[0].start(), a + lines[0].end()
    words = [(m.start(), m.end(), m.group()) for m in _DATE_EDGE_TOKEN.finditer(text, a, b)]
    g = words
    while len(g) > 1 and _day_part(g[0][2]) and not _CLOCK_TOKEN.fullmatch(g[1][2]):
        g = g[1:]
    while len(g) > 1 and ((_day_part(g[-1][2]) and not _CLOCK_TOKEN.fullmatch(g[-2][2])) or _shift_hours(g[-1][2])):
        g = g[:-1]
    if not g or not any(_DATE_MATERIAL.search(w) for _, _, w in g):
        return span.start, span.end
    return g[0][0], g[-1][1]


def name_pieces(span: Span, text: str) -> list[tuple[int, int]]:
    """A NAME span's names when it joins two or more with "and", "&" or "or" ("Ruth and Naomi", "PELLETIER AND
    OKAFOR"): a conjunction is no part of a person's name. Not in a span with a comma or a digit, right after
    "Word, ", before a number on its line, or ending in a word for a relative: a firm's or a street's name
    ("Glover, Ruiz and Armstrong", "Rua and Paseo 46", "Thomas and Sons"). A conjunction at an edge is
    ``name_parts``' to cut."""
    words = [(m.start(), m.end(), m.group()) for m in _NAME_EDGE_TOKEN.finditer(text, span.start, span.end)]
    surface = text[span.start:span.end]
    if ("," in surface or HAS_DIGIT.search(surface) or (words and relation_word(edge_key(words[-1][2])))
            or _LIST_BEFORE.search(text, max(0, span.start - 4), span.start) or _NUMBER_AFTER.match(text, span.end)):
        # "Glover, Ruiz and Armstrong" (a firm), "Leon and Eyrarodda 66", "Rua and Paseo 46" (streets), "Thomas
        # and Sons"
        return [(span.start, span.end)]
    out: list[tuple[int, int]] = []
    lo = span.start
    for k, (_a, _b, w) in enumerate(words):
        if 0 < k < len(words) - 1 and w.lower() in _NAME_JOINERS:
            out.append((lo, words[k - 1][1]))
            lo = words[k + 1][0]
    if not out:
        return [(span.start, span.end)]
    return [*out, (lo, span.end)]


def name_parts(span: Span, text: str) -> tuple[int, int]:
    """The part of a NAME span that is a name: titles, conjunctions and words for a relative or carer before it
    and words after it that are no name (``_after_name``) cut off. At least one word stays; a span of one word,
    or one with nothing to cut, is returned whole."""
    end = span.end
    dotted = _DOTTED_CREDENTIAL.search(text, span.start, end)
    if dotted:
        more = _DOTTED_READ_ON.match(text, end)
        read_on = text[dotted.start(1):end] + (more.group() if more else "")
        if ("." in read_on and re.sub(r"[^a-z]", "", read_on.lower()) in _NAME_CREDENTIALS
                and _NAME_EDGE_TOKEN.search(text, span.start, dotted.start())):
            end = dotted.start()
    words = [(m.start(), m.end(), m.group()) for m in _NAME_EDGE_TOKEN.finditer(text, span.start, end)]
    if len(words) < 2:
        return span.start, end
    caps_line = line_fact(is_all_caps, text, span.start, end)
    g = words
    while len(g) > 1 and ((key := edge_key(g[0][2])) in NAME_TITLES or key in _NAME_JOINERS or relation_word(key)
                          or (key == "s" and text[g[0][0] - 1:g[0][0]] in ("'", "\u2019"))):  # "DR'[S] Kerr"
        g = g[1:]
    capitalised = g[0][2][:1].isupper()
    # a department's head after the name, its complement outside the span ("Jorge Planelles Gómez [Servicio de]"):
    # what follows is the department's ("Servicio de Urología"), a span that runs on into it is left whole
    if len(g) > 2 and edge_key(g[-1][2]) in _DEPARTMENT_LINKS and edge_key(g[-2][2]) in vocab.DEPARTMENT_HEADS:
        g = g[:-2]
    elif len(g) > 1 and edge_key(g[-1][2]) in vocab.DEPARTMENT_HEADS:
        g = g[:-1]
    n = len(g)
    while len(g) > 1 and (_after_name(g[-1][2], caps_line, capitalised)
                          or (len(g) < n and edge_key(g[-1][2]) in _NAME_JOINERS)):  # "Kearns paged and aware"
        g = g[:-1]
    if len(g) == len(words):  # nothing cut: keep the span's own ends
        return span.start, end
    return g[0][0], g[-1][1]




@register("recovery")
class MedicalRecovery:
    """Move candidate spans that are medical terms to ``note.dropped`` (never protected sources)."""

    name = "recovery"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        protect_sources: list[str] = Field(default_factory=lambda: ["message"])
        #: medical-vocabulary terms (ICD-10-CM/PCS, drugs, HPO, the curated eponyms) and medical syntax ("Apgar 8/9",
        #: "g.7578395G>C") that cover a candidate drop it
        use_terms: bool = True
        use_syntax: bool = True
        context_window: int = Field(default=40, ge=0, le=400)
        protect_message_identifiers: bool = True
        #: a name span's edges: titles, conjunctions and words for a relative or carer before the name,
        #: credentials and words that are no name after it ("Drs' Ballou", "RABBI KLEIN", "Dr Kearns
        #: paged", "DR MANNING AWARE", "s. roberto rrt") are cut off, and a span joining two names with "and" / "&"
        #: / "or" is split ("Daughters Ruth and Naomi"; not a firm's or street's name: "Glover, Ruiz and Armstrong",
        #: "Thomas and Sons", "Rua and Paseo 46"); the words cut off go to ``note.dropped``
        use_name_edges: bool = True
        #: a ward or floor number after a unit's name in a line that moves the patient ("transfer to QUARTERMAIN 2",
        #: "from Ward3", "to quartermain 2 when bed available") is cut off the place: one word and one or two
        #: digits; a house number ("lives at Puruntie 82") has no such cue and stays
        use_ward_numbers: bool = True
        #: a date span's edges that are no date element are cut off: a part of the day written as a word before or
        #: after the date ("8/27 pm", "eve 8/26", "9/20 AM"; a clock time stays: "3/14 3:30 PM"), a shift's hours
        #: after it ("8/12/91 07-1600"), and whatever a span holds past a line break without a date in it ("11/30
        #: \\n\\nPMH")
        use_date_edges: bool = True
        #: what a phone span holds past a line break beside a whole phone number is cut off ("204-555-0162 \\n 2)")
        use_phone_edges: bool = True
        #: a place's or organisation's last word when it is a preposition or "or" ("reisterstown hospital at",
        #: "BALTIMORE REHAB OR", "Fairview Hospital for") or the letter of "s/p", "w/" ("Good Sam s/p MI") is cut off;
        #: "of" and "and" stay ("the corner of", "Smith and": the model stopped inside a longer name)
        use_place_edges: bool = True
        #: a person's or an organisation's span that runs across a line break ("Edgar F. Gonzalez \\n Medical Record #",
        #: "Russell Regional Hospital \\n DISCHARGE SUMMARY") is split there: each line a candidate of its own for the
        #: decision stage (no gold NAME or ORGANIZATION span of the dev sets holds a line break; an address does, so
        #: places stay whole); a split drops nothing by itself
        use_line_breaks: bool = True
        #: the labels of a form's fields at a candidate's ends are cut off ("Apellidos: De Miguel Rivera", "Rosa
        #: Jiménez NºCol: 28 28", "nhc-739146"; ``vocab.FORM_FIELD_LABELS``, in the languages the patterns read), a
        #: candidate made only of them is dropped, and so is the value of a form's sex field ("Sexo: H", "Sex: F")
        use_field_labels: bool = True
        #: a candidate made only of one lower-case particle of the other languages (``vocab.OTHER_FUNCTION_WORDS``:
        #: "de", "del", "la", "y") with no other candidate beside it (only blanks between) is dropped: beside a name
        #: or a place it is theirs ("Maria [de] la Cruz" split by the model), alone it is a sentence's word
        use_lone_particles: bool = True
        #: a candidate made only of the other languages' nouns for a patient or a person (``vocab.PERSON_NOUNS``:
        #: "Varón", "Mujer de", "Paciente"), with lower-case particles between, is dropped: a report's "Varón de 64
        #: años" names no one
        use_person_nouns: bool = True
        #: policy: the type word after an institution's name ("Mercy [Medical Center]", "Memorial [Hospital]") is part
        #: of the identifier and is removed with it (the synthetic and general-English sets annotate it so; the
        #: PhysioNet annotators left it out). False cuts trailing type words off a place or organisation while a name
        #: word stays (README, Quality: precision with and without)
        institution_type_words: bool = True

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.config = config
        self.protected = frozenset(config.protect_sources)
        self.vocab: MedicalVocabulary = medical_vocabulary(ctx.cache_dir)

    def dictionary_versions(self) -> dict[str, str]:
        return {"medical": self.vocab.version}

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        return [self.process_note(n) for n in notes]

    def process_note(self, note: Note) -> Note:
        text = note.text
        message = message_identifiers(note.input) if self.config.protect_message_identifiers else None
        spans, between = self._line_split(note.spans, text) if self.config.use_line_breaks else (list(note.spans), [])
        if len(spans) != len(note.spans) or between:
            note = note.replace(spans=tuple(spans), dropped=note.dropped + tuple(between))
        # guarded: protected only because they repeat the message's identifiers ("Peyton Flores reports"): never
        # dropped, but their edges are cut as any candidate's when what is cut holds none of the message's identifiers
        candidates: list[int] = []
        guarded: set[int] = set()
        for i, s in enumerate(spans):
            if not protected(s, text, self.protected, None):
                (guarded.add(i) if message is not None and repeats_message(s, text, *message)
                 else candidates.append(i))
        if not candidates and not guarded:
            return note
        # candidates dropped whole before any other rule looks at them (no edge of theirs is cut)
        alone = lone_particles(spans, candidates, text) if self.config.use_lone_particles else set()
        if self.config.use_person_nouns:
            alone |= {i for i in candidates if person_nouns_only(spans[i], text)}
        cand_spans = [spans[i] for i in candidates]
        regions = windows(text, cand_spans, MAX_CHARS) if self.config.use_terms else []
        if sum(hi - lo for lo, hi in regions) > len(text) // 2:
            matches = self.vocab.scan(text)  # one pass beats many calls
        else:
            matches = [m for lo, hi in regions for m in self.vocab.scan(text, lo, hi)]
        syntax = self._syntax_near(text, cand_spans) if self.config.use_syntax else []
        # indexed by start: each candidate looks only at the terms and syntax on it (a scan of all of them per
        # candidate made the step quadratic on notes dense with identifiers)
        found = _Found(ByStart(matches, _bounds), ByStart(syntax, lambda x: (x[0], x[1])))
        drop: set[int] = set(alone)
        cut: list[Span] = []
        extra: list[Span] = []  # the second and later names of a span split at "and" ("Daughters Ruth and Naomi")
        for i in sorted((*candidates, *guarded)):
            if i in alone:
                continue
            span = spans[i]
            keep = i in guarded  # no medical drop for a span that repeats the message
            if not keep and self._is_medical(span, text, found):
                drop.add(i)
                continue
            if self.config.use_field_labels:
                if not keep and sex_field_value(span.start, span.end, text):
                    drop.add(i)
                    continue
                a, b = field_label_parts(span.start, span.end, text)
                if (a, b) != (span.start, span.end):
                    if b <= a:
                        if not keep:
                            drop.add(i)
                            continue
                    else:
                        gaps = _gaps(span, [(a, b)], text)
                        if not (keep and _holds_message(gaps, text, message)):
                            cut += gaps
                            span = spans[i] = span.model_copy(update={"start": a, "end": b})
            if span.label in (Label.LOCATION, Label.ORGANIZATION):
                a, b = self._ward_name(span, text) if self.config.use_ward_numbers else (span.start, span.end)
                a, b = place_parts(a, b, text) if self.config.use_place_edges else (a, b)
                parts = [(a, b) if self.config.institution_type_words else without_type_words(a, b, text)]
            elif span.label == Label.NAME and self.config.use_name_edges:
                parts = [name_parts(span.model_copy(update={"start": lo, "end": hi}), text)
                         for lo, hi in name_pieces(span, text)]
            elif span.label == Label.DATE and self.config.use_date_edges:
                parts = [date_parts(span, text)]
            elif span.label == Label.PHONE and self.config.use_phone_edges:
                parts = [phone_line(span, text)]
            else:
                continue
            if parts == [(span.start, span.end)]:
                continue
            # the span without its edges, checked again ("Dr. Lasix" -> "Lasix": a drug)
            pieces = [span.model_copy(update={"start": a, "end": b}) for a, b in parts]
            gaps = _gaps(span, parts, text)
            if keep and _holds_message(gaps, text, message):
                continue
            cut += gaps  # what was cut off, without blanks
            spans[i] = pieces[0]
            if not keep and self._is_medical(spans[i], text, found):
                drop.add(i)
            for other in pieces[1:]:
                (cut if not keep and self._is_medical(other, text, found) else extra).append(other)
        if not drop and not cut and not extra:
            return note
        logger.debug("recovery dropped %d of %d candidate spans, cut %d pieces off spans", len(drop),
                     len(candidates), len(cut))
        kept = tuple(s for i, s in enumerate(spans) if i not in drop)
        if extra:
            kept = tuple(sorted((*kept, *extra), key=lambda s: (s.start, s.end)))
        gone = tuple(s for i, s in enumerate(spans) if i in drop)
        return note.replace(spans=kept, dropped=note.dropped + tuple(cut) + gone)

    def _line_split(self, spans: Sequence[Span], text: str) -> tuple[list[Span], list[Span]]:
        """``use_line_breaks``: each NAME or ORGANIZATION span (but a protected source's) that runs across a line
        break as one span a line (the same label, source and score), and what lay between them that is no blank.
        A span that repeats the message's identifiers is split too: its lines that hold them stay protected."""
        out: list[Span] = []
        between: list[Span] = []
        for span in spans:
            if (span.label not in (Label.NAME, Label.ORGANIZATION) or "\n" not in text[span.start:span.end]
                    or sources_of(span) & self.protected):
                out.append(span)
                continue
            parts = line_pieces(span.start, span.end, text)
            out += [span.model_copy(update={"start": a, "end": b}) for a, b in parts]
            between += _gaps(span, parts, text)
        return out, between

    @staticmethod
    def _ward_name(span: Span, text: str) -> tuple[int, int]:
        """``use_ward_numbers``: the unit's name without its ward or floor number ("QUARTERMAIN 2" -> "QUARTERMAIN")
        when the line moves the patient (``_WARD_CUE``) and no house number stands before it; the span itself
        otherwise."""
        m = _WARD.fullmatch(text, span.start, span.end)
        unit = m.group(1).lower().rstrip(".") if m is not None else ""
        if m is None or unit in _NOT_WARD or unit in vocab.STREET_TYPE_WORDS:
            return span.start, span.end
        left = text[max(0, span.start - 64):span.start]
        if _HOUSE_NUMBER_BEFORE.search(left):
            return span.start, span.end
        if not (_WARD_CUE.search(left) or _WARD_MOVE_BEFORE.search(left) or _WARD_CUE_AFTER.match(text, span.end)):
            return span.start, span.end
        return m.start(1), m.end(1)


    def _syntax_near(self, text: str, spans: Sequence[Span]) -> list[tuple[int, int, str]]:
        """Medical syntax near the spans that could be syntax: the regexes run only in small windows
        around spans with digits (scanning whole notes would cost more than the rest of this step);
        spans with ALL-CAPS tokens are checked against the gene symbols."""
        genes = self.vocab.genes
        out: list[tuple[int, int, str]] = []
        numeric = [  # digits in or next to the span ("8/9", "RASS -2", "T 37.9 C")
            s for s in spans
            if HAS_DIGIT.search(text, max(0, s.start - 12), s.end + 12)
            and not _FULL_DATE.fullmatch(text, s.start, s.end)
        ]
        for lo, hi in windows(text, numeric, _SYNTAX_REACH):
            out.extend(medical_syntax_spans(text, genes, start=lo, end=hi))
        for s in spans:
            if _CAPS_TOKEN.search(text, s.start, s.end):
                out.extend((a, b, "gene") for a, b in gene_spans(text, genes, s.start, s.end + 16))
        return out


    def _is_medical(self, span: Span, text: str, found: _Found) -> bool:
        if name_context(text, span.start, span.end):
            return False
        window = self.config.context_window
        intervals: list[tuple[int, int]] = []
        for m in found.matches.overlapping(span.start, span.end):
            if m.ambiguous and not has_medical_context(text, m, window):
                continue
            intervals.append((m.start, m.end))
        intervals.extend((s, e) for s, e, _kind in found.syntax.overlapping(span.start, span.end))
        return bool(intervals) and covered(text, span.start, span.end, intervals)


def _bounds(m: MedicalMatch) -> tuple[int, int]:
    return m.start, m.end


@dataclass(frozen=True, slots=True)
class _Found:
    """The medical terms and the medical syntax found around a note's candidates, indexed by start."""

    matches: ByStart[MedicalMatch]
    syntax: ByStart[tuple[int, int, str]]
