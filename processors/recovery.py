"""Medical-term recovery: un-tag candidate spans that are medical terms (DESIGN.md §3).

A candidate span is moved to ``note.dropped`` when medical matches in the ORIGINAL text cover it
(up to trivial punctuation or a possessive): a vocabulary term ("Bruce" in "Bruce protocol",
"Lasix", "NAD", "St. Jude valve") or well-formed medical syntax ("8/9" in "Apgar score 8/9",
"7578395" in "g.7578395G>C", "0630" in "meds at 0630"). Ambiguous terms (also person names or
places: "Allegra", "Foley", "CT") count only with medical context next to them ("Allegra 180 mg",
"started on Allegra", "Foley catheter").

Numbers in vitals / ventilator / lab context are clinical (``use_measures``): a span of digits,
separators and units from a ``measure_sources`` detector ("600x12", "7.38-33-169", "CVP 24-26", "SBP in
the 90's", "CPAP 5/5") next to a measurement label or unit is dropped unless it carries an identifier cue
of its own ("DOB", "MRN", "pager", "call", a full date): ``dictionaries.medical_syntax.measurement_value``.

Clinical words (``use_jargon``): a NAME / LOCATION / ORGANIZATION span whose every word is in the curated
clinical jargon and abbreviation list (``dictionaries/data/clinical_jargon.txt``, sources per section: "levo",
"vanco", "aline", "swan", "drsg", "rehab") is dropped, and so is a one-word span written in lower case or in
capitals (no case evidence of a name) that the clinical-word filter knows (``dictionaries.jargon``: the list,
one-word medical vocabulary terms, words of clinical text: "allergies", "kub") when no dictionary
found it (the dictionary applies the same filter with its own name evidence). The name-context rule below
still keeps "Dr. Foley", "dr. brown" and "Swan, RN".

Weak or generic detections: a lower-case name / place / organisation only the model found, scored below
``weak_lower_score``, needs evidence of its own (a title, an initial, a family or provider word, a credential, a
residence cue, an institution word, a neighbouring detection); an institution word with only describing words and
no case evidence is generic ("OUTSIDE HOSPITAL", ``use_generic_institutions``); a name made only of words for a
relative or a carer is none ("AUNTS", ``use_relation_words``). Each rule's config field says what counts.

Edges that are no identifier are cut off a span that stays (the words cut off go to ``note.dropped``): titles,
credentials and words after a name ("Drs' Ballou", "DR MANNING AWARE", ``use_name_edges``), and a ward or floor
number after a unit's name in a line that moves the patient ("transfer to QUARTERMAIN 2", ``use_ward_numbers``),
a part of the day written as a word beside a date ("8/27 pm", ``use_date_edges``), and a place's last word that is
a preposition or "or" ("BALTIMORE REHAB OR", ``use_place_edges``). The rest is checked again by the rules above.

Numbers the model reads as dates without a calendar's check: a DATE of digits no calendar can read ("x 3",
"140/60", ``use_shapeless``) and the model's piece of a larger number ("[140]/60", "07[-1530]",
``use_number_pieces``). A one-word name only a dictionary found where a drug goes (after a dose, in a list with a
known drug: "2mg Vit K", ``use_drug_lists``).

Never dropped: spans from a protected source (``span.source`` may be ``"a+b"`` after merges),
spans with an identifier shape (phone, email, URL, IP, SSN, ZIP), spans preceded by a title or
followed by a credential ("Dr. Parkinson", "Foley, RN"), and spans that repeat the message's own
identifiers (patient, relatives, providers) when ``protect_message_identifiers`` is on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from dictionaries import vocab
from dictionaries.calendar import CALENDAR_TOKENS, is_day_of_month
from dictionaries.jargon import ClinicalWords, clinical_words, jargon_version
from dictionaries.medical import (
    MAX_CHARS,
    MedicalMatch,
    MedicalVocabulary,
    gene_spans,
    medical_syntax_spans,
    medical_vocabulary,
)
from dictionaries.medical_syntax import attached_to_date, clinical_measures, measurement_value
from dictionaries.text import (
    FAMILY_CUES,
    NURSE_CREDENTIALS,
    PERSONAL_TITLES,
    PROVIDER_CUES,
    TITLES_DOCTOR,
    TITLES_OTHER,
    is_all_caps,
    line_around,
    line_bounds,
    name_context,
)
from processors.pipeline import BuildContext, Note, register
from schemas.labels import Label, Subtype
from schemas.models import NoteIn, PersonName, Span

logger = logging.getLogger(__name__)

#: Identifier shapes that are never un-tagged, whatever surrounds them.
_SHAPES = re.compile(
    r"[\w.+-]+@[\w-]+\.[\w.-]+"                                         # email
    r"|(?:https?://|www\.)\S+"                                          # URL
    r"|(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])"                      # IPv4
    r"|(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)"                                  # SSN
    r"|(?<!\d)(?:\+?1[-.\s]?)?\(?\d{3}\)?[-.\s]?\d{3}[-.\s]?\d{4}(?!\d)"  # phone, 10 digits
    r"|(?<![\d-])\d{3}[-.]\d{4}(?![\d-])",                              # phone, 7 digits with a separator
    re.IGNORECASE,
)
_ZIP = re.compile(r"\d{5}(?:-\d{4})?")
_NEVER_LABELS = frozenset({Label.EMAIL, Label.URL, Label.IP})
#: labels a clinical word is mistaken for; the words of a span, as the jargon list writes them
_JARGON_LABELS = frozenset({Label.NAME, Label.LOCATION, Label.ORGANIZATION})
_JARGON_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'/-]*")

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
_HAS_DIGIT = re.compile(r"\d")
_LETTER_RUN = re.compile(r"[^\W\d_]+(?:'s)?")
#: a word at least this frequent in general English (wordfreq Zipf) is a known word: "noon", "eve", "last"
_KNOWN_WORD_ZIPF = 3.0
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
#: misspelt by one edit too ("S DUAGHTER", "dauther")
_RELATION_WORDS = FAMILY_CUES | PROVIDER_CUES | frozenset(
    "chaplain pastor priest minister rabbi family relatives parents children kids hsb husb dtr".split())
_RELATION_LONG = tuple(w for w in _RELATION_WORDS if len(w) >= 5)
#: a generic institution phrase: an institution head word with only describing words beside it ("OUTSIDE
#: HOSPITAL", "prolonged hospital stay", "admitted to hosp", "funeral home"); "memorial" names hospitals
_GENERIC_HEADS = (frozenset(_INSTITUTION_WORDS.split("|")) - {"memorial"}) | frozenset(
    "hospitals clinics healthcare rehabilitation system institute group practice pharmacy".split())
_GENERIC_INNER = frozenset({"of", "and", "the", "at", "for", "a", "an"})
#: name edges (``use_name_edges``): a word of a name span (hyphenated and apostrophe names are one); titles and
#: credentials are no part of a name ("Drs' Ballou", "RABBI KLEIN", "s. roberto rrt"), nor is a conjunction at its
#: start ("& dauther") or a word after the name ("Dr Kearns paged", "DR MANNING AWARE", "Dr King has")
_NAME_EDGE_TOKEN = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*['\u2019]?|&")
#: a surname-list word this frequent is a function word after a name ("has", "and", "was"), not a surname
_FUNCTION_WORD_ZIPF = 6.0
#: a lower-case word after a capitalised name is a word of English at least this frequent ("paged" 2.5); rarer
#: ones are as often a name's own lower-case part in another language ("Novo mesto")
_LOWER_AFTER_NAME_ZIPF = 2.0
_NAME_TITLES = frozenset(PERSONAL_TITLES) | TITLES_DOCTOR | TITLES_OTHER
_NAME_CREDENTIALS = frozenset("md rn np rrt lpn cna crna msw lcsw pa do phd".split())
_NAME_JOINERS = frozenset({"and", "&", "or"})
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
#: a nurse's credential right after a word, without a comma ("Ostomy RN"; "Foley, RN" is a name)
_NURSE_AFTER = re.compile(r"[ \t]+(?:" + "|".join(sorted({*NURSE_CREDENTIALS, *map(str.upper, NURSE_CREDENTIALS)})) + r")\b")
#: a kind of unit before its number of one or two digits ("WARD 3", "pod 4B"): no name of its own (an army
#: post's "Unit 7194" has four digits)
_UNIT_WORDS = frozenset({"ward", "pod", "bay", "floor", "fl", "unit"})
_UNIT_NUMBER_AFTER = re.compile(r"[ \t]*\d{1,2}[A-Za-z]?\b(?![-/.:]?\d)")
_NOT_WARD = frozenset("apt apartment suite ste unit floor fl room rm box route rte hwy highway interstate exit no "
                      "number building bldg lot gate pier".split())
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
#: date edges (``use_date_edges``): a part of the day written as a word is no date element ("8/27 [pm]", "[eve]
#: 8/26", "9/20 [AM]"); a clock time is ("3/14 3:30 PM" stays whole), and so is a weekday (a policy of its own)
_DAY_PARTS = frozenset("am pm eve eves evening evenings morning mornings night nights noon midnight mn afternoon "
                       "afternoons tonight nite nites overnight noc nocs".split())
_DATE_EDGE_TOKEN = re.compile(r"\S+")
#: two clock times joined by a dash ("07-1600", "7p-7a"): one of them with a/p or of 3-4 digits (not "5-7")
_HOUR_RANGE = re.compile(r"(\d{1,4})([ap]m?)?-(\d{1,4})([ap]m?)?", re.IGNORECASE)
_CLOCK_TOKEN = re.compile(r"@?(?:\d{1,2}(?::\d{2})?|\d{3,4})(?:[ap]\.?m?\.?)?", re.IGNORECASE)
_DATE_MATERIAL = re.compile(r"\d|(?i:\b(?:" + "|".join(map(re.escape, sorted(CALENDAR_TOKENS, key=len, reverse=True))) + r")\b)")
#: a count, not a day: "7 of 14" (day 7 of a 14-day course)
_COUNT_OF = re.compile(r"\d{1,3}\s+(?i:of|out of)\s+\d{1,3}")
#: a clock time, or a range of them, in a DATE span ("11:00", "4:30-5:30pm", "10:15 a.m.")
_CLOCK_TIME = re.compile(
    r"(?<![\d:])(?:[01]?\d|2[0-3]):[0-5]\d(?:[ \t]?(?:-|to)[ \t]?(?:[01]?\d|2[0-3]):[0-5]\d)?"
    r"(?:[ \t]?[AaPp]\.?[Mm]\b\.?)?(?![\d:])")
#: detectors that read a date without checking the calendar: a number only they call a date must be readable
_MODEL_SOURCES = frozenset({"ner", "llm"})
#: the years a month/year or a full date of four-digit year is read with
_YEARS = (1900, 2100)
#: a bare number in this range may be an age over 89 the model called a date: kept
_AGE_OVER_89 = (90, 130)
#: a number cut out of a larger one (``use_number_pieces``): the span, what runs on after it, a run's characters
_NUMBER_PIECE = re.compile(r"[\d/.:-]*\d[\d/.:-]*")
_RUNS_ON = re.compile(r"\d|[/.:-]\d|[AaPp](?:\.?[Mm]\b|\b|-)")
_RUN_CHAR = re.compile(r"[\w/.:-]")
#: a drug's place (``use_drug_lists``): a dose right before the word, or a list of drugs around it ("Vano, Ceftaz,
#: Flagyl", "Procan/NAPA", "NPH and Reg"): list items of one word, joined by a comma, slash, "&", "+", "and" or "or"
_DOSE_BEFORE = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?[ \t]?(?:mg|mcg|gm?|u|units?|ml|cc|meq|mmol|tabs?|amps?)[ \t]*$", re.IGNORECASE)
_DRUG_KINDS = frozenset({"drug", "drug-brand"})
_ONE_WORD = re.compile(r"[^\W\d_]+\.?")
_LIST_GAP = r"[ \t]*(?:[,/&+]|(?i:and|or)\b)[ \t]*"
_LIST_ITEM_AFTER = re.compile(_LIST_GAP + r"([\w-]+)")
_LIST_ITEM_BEFORE = re.compile(r"([\w-]+)" + _LIST_GAP + r"$")
_LIST_REACH = 3
#: place edges (``use_place_edges``): words of a place span, and last words that are no part of a name
_PLACE_EDGE_TOKEN = re.compile(r"\S+")
_PLACE_TRAILING = frozenset({"at", "or", "on", "for", "to", "in", "with", "from", "by"})
_CAPS_TOKEN = re.compile(r"\b[A-Z][A-Z0-9]{2,9}\b")
_WORD = re.compile(r"[^\W\d_]{2,}")
_SYNTAX_REACH = 28  # a syntax match overlapping a span starts/ends within this many characters of it


def _windows(text: str, spans: Sequence[Span], reach: int) -> list[tuple[int, int]]:
    """Merged regions ``reach`` characters around the spans, widened to whitespace."""
    regions: list[list[int]] = []
    for s in sorted(spans, key=lambda sp: sp.start):
        lo, hi = max(0, s.start - reach), min(len(text), s.end + reach)
        while lo > 0 and not text[lo - 1].isspace():
            lo -= 1
        while hi < len(text) and not text[hi].isspace():
            hi += 1
        if regions and lo <= regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], hi)
        else:
            regions.append([lo, hi])
    return [(lo, hi) for lo, hi in regions]


def span_sources(span: Span) -> frozenset[str]:
    return frozenset(span.source.split("+"))


def has_identifier_shape(span: Span, text: str) -> bool:
    """True for spans that must never be un-tagged: email/URL/IP labels (not the model's "email" without an "@"),
    SSNs, and any span whose text holds a phone, email, URL, IP or SSN shape, or is a ZIP code."""
    surface = text[span.start:span.end].strip()
    if span.label == Label.EMAIL and "@" not in surface and span_sources(span) <= _MODEL_SOURCES:
        return False  # the model's "email" without an "@" ("DNR & [DNI]") has no email's shape
    if span.label in _NEVER_LABELS or span.subtype == Subtype.SSN:
        return True
    if "@" not in surface and "www." not in surface and "://" not in surface and not _HAS_DIGIT.search(surface):
        return False  # every shape below needs one of these
    return _identifier_shaped(surface)


def message_identifiers(note_in: NoteIn) -> tuple[frozenset[str], frozenset[str]]:
    """(name words, digit strings) carried by the message: patient, relatives, providers, facility."""
    words: set[str] = set()
    digits: set[str] = set()

    def add_name(name: PersonName | None) -> None:
        if name is not None:
            for part in name.parts():
                words.update(w.lower() for w in _WORD.findall(part))

    def add_value(value: str | None) -> None:
        if value:
            d = re.sub(r"\D", "", value)
            if len(d) >= 4:
                digits.add(d)

    p = note_in.patient
    if p is not None:
        for n in p.names:
            add_name(n)
        for v in (p.id, p.mrn, p.ssn, p.birth_date, *p.ids, *p.phones):
            add_value(v)
        for r in p.relatives:
            add_name(r.name)
            for v in r.phones:
                add_value(v)
    for prov in note_in.providers:
        add_name(prov.name)
        add_value(prov.id)
    if note_in.facility is not None and note_in.facility.name:
        words.update(w.lower() for w in _WORD.findall(note_in.facility.name) if w[:1].isupper())
    return frozenset(words), frozenset(digits)


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


def _common_word(word: str) -> bool:
    """A lower-case word of 3+ letters that is frequent in English and no name or place: not a first name,
    not a surname unless it is a very frequent word ("proud", "town", "sons" are Census surnames), not in the
    place gazetteer, not an institution word."""
    z = vocab.zipf(word)
    return (len(word) >= 3 and z >= _KNOWN_WORD_ZIPF and not vocab.is_first_name(word)
            and (z >= _COMMON_SURNAME_ZIPF or not vocab.is_surname(word)) and not vocab.is_place_name(word)
            and not _INSTITUTION_WORD.fullmatch(word))


def within_edits(word: str, choices: Sequence[str], edits: int) -> bool:
    """``word`` is at most ``edits`` edits from one of ``choices`` (Damerau-Levenshtein: swapping two neighbouring
    letters is one edit)."""
    from rapidfuzz import distance, process

    return process.extractOne(word, choices, scorer=distance.DamerauLevenshtein.distance,
                              score_cutoff=edits) is not None


def _relation_word(word: str) -> bool:
    """``word`` (lower case) names a relative or a carer: listed, a plural of one, or one edit (a transposition
    counts as one) from one of 5+ letters when it is in no name list."""
    if word in _RELATION_WORDS or (word.endswith("s") and word[:-1] in _RELATION_WORDS):
        return True
    return len(word) >= 5 and not vocab.is_name_word(word) and within_edits(word, _RELATION_LONG, 1)


def _edge_key(word: str) -> str:
    """A word of a name span as the edge lists write it: lower case, without a possessive or a quote ("Drs'" ->
    "drs", "DR'S" -> "dr")."""
    w = word.lower().replace("\u2019", "'")
    return w.removesuffix("'s").rstrip("'.")


def _after_name(word: str, caps_line: bool, capitalised_name: bool) -> bool:
    """``word`` ends a name span but is no part of the name: a credential; a function word or a lower-case English
    word in no name list after a capitalised name in mixed-case text ("Dr Kearns paged"); a word without case
    evidence (lower case, or on an ALL-CAPS line) that is a frequent English word in no first-name list and in the
    surname list only when it is a function word ("AWARE", "has"; "YOUNG", "Brown" stay)."""
    key = _edge_key(word)
    if key in _NAME_CREDENTIALS:
        return True
    if key in _NAME_JOINERS:  # the model cut a name short before the next one ("Smith and" | "Davis Orchestra")
        return False
    if len(key) < 2 or not key.isalpha() or not (word.islower() or caps_line):  # an initial, "o'hara", or a
        # capitalised word in mixed case
        return False
    z = vocab.zipf(key)
    if word.islower() and capitalised_name and not caps_line:  # "Kearns paged", "King has"; "Janet logan",
        # "Novo mesto" stay
        return z >= _FUNCTION_WORD_ZIPF or (z >= _LOWER_AFTER_NAME_ZIPF and not vocab.is_name_word(key)
                                            and key not in _NAME_PARTICLES)
    return (z >= _KNOWN_WORD_ZIPF and not vocab.is_first_name(key) and not vocab.is_place_name(key)
            and (z >= _FUNCTION_WORD_ZIPF or not vocab.is_surname(key)) and key not in _NAME_PARTICLES)


def _number_run(text: str, start: int, end: int) -> tuple[int, int, str]:
    """The run of word characters and separators around ``text[start:end]`` ("8/84" around "/84"): its offsets and
    its text without separators at its ends."""
    lo, hi = start, end
    while lo > 0 and _RUN_CHAR.match(text[lo - 1]):
        lo -= 1
    while hi < len(text) and _RUN_CHAR.match(text[hi]):
        hi += 1
    return lo, hi, text[lo:hi].strip("/.:-")


def _identifier_shaped(surface: str) -> bool:
    """``surface`` holds a phone, email, URL, IP or SSN shape, or is a ZIP code."""
    return bool(_SHAPES.search(surface) or _ZIP.fullmatch(surface))


def _readable_date(surface: str) -> bool:
    """``surface`` can be read as a date, or is no bare number: anything with a letter or another character, a
    year or a compact date (4, 6 or 8 digits), a possible age over 89, month/day or day/month ("5/5", "4-6"),
    month/year ("4/97", "8/1984"; not "07-1530"), year-month, three parts that make a day ("3/14/23",
    "2023-03-14") and a range of two days with a dash between them ("6/30-7/2"). Not: a single number of 1-3 digits
    ("[6]am", "x [3]"), pairs no calendar has ("140/60"), other runs of parts ("06/12/18/24", "24/06/12/18")."""
    if not _NUMBER_PIECE.fullmatch(surface):
        return True
    texts = [x for x in re.split(r"[/.-]", surface) if x]
    if not texts or not all(x.isdigit() for x in texts):
        return True
    n, size = [int(x) for x in texts], [len(x) for x in texts]

    def day(d: int, m: int) -> bool:
        return is_day_of_month(m, d)

    def year(y: int, digits: int) -> bool:  # "97", "1997"; not "1530" (a time)
        return digits == 2 or (digits == 4 and _YEARS[0] <= y <= _YEARS[1])

    if len(n) == 1:
        return size[0] in (4, 6, 8) or _AGE_OVER_89[0] <= n[0] <= _AGE_OVER_89[1]
    if len(n) == 2:
        a, b = n
        return day(a, b) or day(b, a) or (1 <= a <= 12 and year(b, size[1])) or (year(a, size[0]) and 1 <= b <= 12)
    if len(n) == 3:
        a, b, c = n
        if size[0] == 4:
            return year(a, 4) and day(c, b)
        return (day(b, a) or day(a, b)) and year(c, size[2])
    if len(n) == 4:  # a range of two days ("6/30-7/2"; not "24/06/12/18", times of a schedule)
        seps = re.findall(r"[/.-]+", surface.strip("/.-"))
        return (len(seps) == 3 and seps[1] == "-" and seps[0] == seps[2] != "-"
                and all(day(x, y) or day(y, x) for x, y in ((n[0], n[1]), (n[2], n[3]))))
    return False


def place_parts(start: int, end: int, text: str) -> tuple[int, int]:
    """``text[start:end]`` (a place or organisation) without a last word that is no part of a name
    (``use_place_edges``): a preposition or "or", a letter that starts "s/p", "w/", or a signed number ("-11"). At
    least one word stays."""
    words = [(m.start(), m.end()) for m in _PLACE_EDGE_TOKEN.finditer(text, start, end)]
    while len(words) > 1:
        lo, hi = words[-1]
        w = text[lo:hi].lower().rstrip(".,;:")
        if not (w in _PLACE_TRAILING or (len(w) == 1 and w.isalpha() and text[hi:hi + 1] == "/")
                or _SIGNED_NUMBER.fullmatch(w)):  # "St. Mary's [-11]AM": no place name ends in a signed number
            break
        words.pop()
    return (start, words[-1][1]) if words else (start, end)


def _day_part(token: str) -> bool:
    return token.lower().strip(".,;:()").replace(".", "") in _DAY_PARTS


def _without_blanks(text: str, lo: int, hi: int) -> tuple[int, int]:
    """``text[lo:hi]`` without the blanks at its ends (an empty range when it is all blanks)."""
    piece = text[lo:hi]
    return lo + len(piece) - len(piece.lstrip()), hi - len(piece) + len(piece.rstrip())


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
    if ("," in surface or _HAS_DIGIT.search(surface) or (words and _relation_word(_edge_key(words[-1][2])))
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
    words = [(m.start(), m.end(), m.group()) for m in _NAME_EDGE_TOKEN.finditer(text, span.start, span.end)]
    if len(words) < 2:
        return span.start, span.end
    caps_line = is_all_caps(line_around(text, span.start, span.end))
    g = words
    while len(g) > 1 and ((key := _edge_key(g[0][2])) in _NAME_TITLES or key in _NAME_JOINERS or _relation_word(key)
                          or (key == "s" and text[g[0][0] - 1:g[0][0]] in ("'", "\u2019"))):  # "DR'[S] Kerr"
        g = g[1:]
    capitalised = g[0][2][:1].isupper()
    n = len(g)
    while len(g) > 1 and (_after_name(g[-1][2], caps_line, capitalised)
                          or (len(g) < n and _edge_key(g[-1][2]) in _NAME_JOINERS)):  # "Kearns paged and aware"
        g = g[:-1]
    if len(g) == len(words):  # nothing cut: keep the span's own ends
        return span.start, span.end
    return g[0][0], g[-1][1]


def known_words(cw: ClinicalWords) -> tuple[str, ...]:
    """The words a misspelling is compared with: the most frequent English words and the clinical words."""
    from wordfreq import top_n_list

    english = (w for w in top_n_list("en", _MISSPELT_ENGLISH) if w.isalpha() and len(w) >= _MISSPELT_MIN_LEN - 1)
    clinical = (w for w in cw.known_words() if w.isalpha() and len(w) >= _MISSPELT_MIN_LEN - 1)
    return tuple(sorted({*english, *clinical}))


def near_known_word(word: str, known: Sequence[str]) -> bool:
    """``word`` (lower case) is one edit (two from 7 letters) from one of ``known``; swapping two neighbouring
    letters is one edit ("lentgh", "cahir")."""
    return within_edits(word, known, 2 if len(word) >= _MISSPELT_EDITS_LONG else 1)


@register("recovery")
class MedicalRecovery:
    """Move candidate spans that are medical terms to ``note.dropped`` (never protected sources)."""

    name = "recovery"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        protect_sources: list[str] = Field(default_factory=lambda: ["message"])
        use_syntax: bool = True
        context_window: int = Field(default=40, ge=0, le=400)
        protect_message_identifiers: bool = True
        #: numbers in vitals / ventilator / lab context ("BP 91-146/48-63", "AC 600x12", "ABG 7.38/33/169")
        #: are clinical unless they carry an identifier cue of their own; only spans of these sources (an LLM
        #: proposes such numbers as IDs or dates too)
        use_measures: bool = True
        measure_sources: list[str] = Field(default_factory=lambda: ["regex", "ner", "llm"])
        #: names / places / organisations made only of curated clinical jargon words are clinical (the curated
        #: list, plurals of its words, care-unit names such as "MICUB"; a two-letter word only in a place that is no
        #: state's code: two letters are as often initials or a state)
        use_jargon: bool = True
        #: detections without an identifier's shape:
        #: - a DATE with no digit and no month, weekday or holiday whose words are all known words or misspellings
        #:   of them ("last eve", "NOON", "tomorrow", "APROX": times of day and relative days are not dates), also
        #:   with clock times that are not right beside a date ("11:00 tomorrow", "4:30-5:30pm"); one word with a
        #:   past tense's "'d" after it ("dec'd": decreased);
        #: - a DATE of digits and separators from the model or an LLM that no calendar can read and no other
        #:   detection overlaps ("x 3", "140/60", "40/17-24", "06/12/18/24"; a bare number from 90 to 130 may be an
        #:   age and stays), or a count ("day 7 of 14");
        #: - an ordinal alone before a noun ("2ND DAY of admission") or "may" before a verb ("THIS MAY BE");
        #: - a PHONE of known words ("(Continued)") or of one or two digits with no other detection next to it ("# 8
        #:   ETT"), a signed number ("LOS -905": a fluid balance), or numbers joined by "and" / "or" / "to" none of
        #:   which is as long as a phone number ("at 0200 and 0415");
        #: - from the model alone: a NAME or ORGANIZATION without a letter ("from WARD 3"), a lone letter with no
        #:   other detection next to it, a street type alone ("NSR to ST": no street name, no saint's name; "Glen"
        #:   and state codes stay), a state's code alone as a place or organisation ("since MN", "nurse from the VA"; one
        #:   after "City," or before a ZIP, or after a word for a relative, stays), a kind of unit before its number
        #:   ("from WARD 3", "to Ward3": no unit's name)
        use_shapeless: bool = True
        #: a misspelt common or clinical word found only by the model ("tommorow", "owund", "codiene"): one word
        #: of 5+ letters in lower case (capitals in an ALL-CAPS line), in no name list, unknown to English, within
        #: one edit (two from 7 letters; two swapped letters are one) of a frequent English word or a clinical word
        #: ("LENTGH"); never after a title or an initial, before an institution word, or on a line of fewer than
        #: three words
        use_misspellings: bool = True
        #: a common English word the model alone took for a name, place or organisation, written in lower case
        #: ("tomatoes", "flying", "morgue", "waiting room"): every word of 3+ letters, frequent in English, in no
        #: first-name list and no place gazetteer, and no surname unless very frequent ("proud", "town"); never with
        #: an institution word in or after it ("memorial hospital") or after a title
        use_common_words: bool = True
        #: a lower-case name, place or organisation only the model found, scored below this, with no evidence of
        #: its own, is dropped (0 turns it off): in telegraphic lower-case notes the model takes misspellings and
        #: jargon for names ("pearl" for PERRL, "from ctic", "fem site"). A name's evidence: a title, an initial,
        #: a family or provider word before it, a credential or an age and sex after it, or the same word in a
        #: stronger name detection of the note; a place's or organisation's: a residence or work cue before it
        #: ("lives in"), an institution or unit word in or after it, or another detection next to it (an
        #: address). Fitted on the PhysioNet dev notes, cross-validated by patient group (README, Quality)
        weak_lower_score: float = Field(default=0.6, ge=0, le=1)
        #: an organisation or place without case evidence (lower case, or on an ALL-CAPS line) made of an
        #: institution word and words that only describe one: frequent English words, or misspellings of them (as
        #: ``use_misspellings`` tests a word), that are in no US hospital's name (the shipped CMS list) and no place
        #: ("OUTSIDE HOSPITAL", "PROLONGED HOSPITAL", "admitted to hosp", "FAMIL WENT HOME"); "MERCY HOSPITAL",
        #: "harbor hosp", "the general hospital" stay
        use_generic_institutions: bool = True
        #: a name made only of words for a relative or a carer ("AUNTS", "pt's pastor", "Hsb", "S DUAGHTER"): plurals
        #: and one-edit misspellings of 5+ letters (in no name list) count; kept after a title ("Dr. Brother")
        use_relation_words: bool = True
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
        #: a number the model cut out of a larger number ("[140]/60", "07[-1530]", "11:[20]"): a DATE or NAME of
        #: digits and separators only, from the model alone, that runs on into digits (or into the am / pm of a clock
        #: time), where the whole run is no date a calendar can read, or a clock time not right beside a date; a run
        #: with an identifier shape ("202232-4455", a phone) or another detection on the span keeps it
        use_number_pieces: bool = True
        #: a one-word name (or place, organisation) only a dictionary found, where a drug goes: right after a dose
        #: ("2mg Vit K", "2u Reg ins") or in a list with a drug the vocabulary knows ("receiving Vano, Ceftaz, Flagyl",
        #: "Procan/NAPA levels"); never after a title or with other name evidence (``name_context``)
        use_drug_lists: bool = True
        #: a name / place / organisation that is a line's heading: alone at the start of its line before a colon
        #: or a dash ("Service: Neurology", "GU: Foley", "GU- foley", "Reveiw of System:"), every word a clinical word, a very frequent
        #: English word, or a frequent English word or a misspelling of one in no surname list, and none a first
        #: name ("Alice: Who are you?", "Smith:" in a dialogue stay)
        use_headings: bool = True
        #: a one-word name / place / organisation that is one edit from a curated word of 4+ letters (two swapped
        #: letters are one), as an item of a telegraphic list whose item right before or after it is a curated word:
        #: the abbreviation misspelt into a name-list word ("MAE. PEARL." and "pearl, mae" for PERRL, "PERLA" for
        #: PERRLA); never after a title or with other name evidence
        use_jargon_lists: bool = True

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.config = config
        self.protected = frozenset(config.protect_sources)
        self.measure_sources = frozenset(config.measure_sources) if config.use_measures else frozenset()
        self.vocab: MedicalVocabulary = medical_vocabulary(ctx.cache_dir)
        self.clinical_words: ClinicalWords | None = clinical_words(ctx.cache_dir) if config.use_jargon else None
        self._known: tuple[str, ...] | None = None  # built on the first possible misspelling
        self._curated_long: tuple[str, ...] | None = None  # curated words a list item can be a misspelling of
        self._near_known: dict[str, bool] = {}  # words already compared with the known words (each costs ms)

    def dictionary_versions(self) -> dict[str, str]:
        out = {"medical": self.vocab.version}
        if self.measure_sources:
            out["clinical_measures"] = clinical_measures().version
        if self.clinical_words is not None:
            out["clinical_words"] = jargon_version()
        return out

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        return [self.process_note(n) for n in notes]

    def process_note(self, note: Note) -> Note:
        text = note.text
        candidates = [
            i for i, s in enumerate(note.spans)
            if not (span_sources(s) & self.protected) and not has_identifier_shape(s, text)
        ]
        if not candidates:
            return note
        if self.config.protect_message_identifiers:
            words, digits = message_identifiers(note.input)
            candidates = [i for i in candidates if not self._repeats_message(note.spans[i], text, words, digits)]
            if not candidates:
                return note
        spans = list(note.spans)
        cand_spans = [spans[i] for i in candidates]
        windows = _windows(text, cand_spans, MAX_CHARS)
        if sum(hi - lo for lo, hi in windows) > len(text) // 2:
            matches = self.vocab.scan(text)  # one pass beats many calls
        else:
            matches = [m for lo, hi in windows for m in self.vocab.scan(text, lo, hi)]
        syntax = self._syntax_near(text, cand_spans) if self.config.use_syntax else []
        drop: set[int] = set()
        cut: list[Span] = []
        extra: list[Span] = []  # the second and later names of a span split at "and" ("Daughters Ruth and Naomi")
        for i in candidates:
            span = spans[i]
            if self._drops(span, text, spans, matches, syntax):
                drop.add(i)
                continue
            if span.label in (Label.LOCATION, Label.ORGANIZATION):
                a, b = self._ward_name(span, text) if self.config.use_ward_numbers else (span.start, span.end)
                parts = [place_parts(a, b, text) if self.config.use_place_edges else (a, b)]
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
            # the span without its edges, checked again ("& dauther" -> "dauther": a relation word)
            pieces = [span.model_copy(update={"start": a, "end": b}) for a, b in parts]
            ends = [span.start, *(x for a, b in parts for x in (a, b)), span.end]
            for lo, hi in zip(ends[::2], ends[1::2], strict=True):  # what was cut off, without blanks
                lo, hi = _without_blanks(text, lo, hi)
                if hi > lo:
                    cut.append(span.model_copy(update={"start": lo, "end": hi}))
            spans[i] = pieces[0]
            if self._drops(spans[i], text, spans, matches, syntax):
                drop.add(i)
            for other in pieces[1:]:
                (cut if self._drops(other, text, spans, matches, syntax) else extra).append(other)
        if not drop and not cut:
            return note
        logger.debug("recovery dropped %d of %d candidate spans, cut %d pieces off spans", len(drop),
                     len(candidates), len(cut))
        kept = tuple(s for i, s in enumerate(spans) if i not in drop)
        if extra:
            kept = tuple(sorted((*kept, *extra), key=lambda s: (s.start, s.end)))
        gone = tuple(s for i, s in enumerate(spans) if i in drop)
        return note.replace(spans=kept, dropped=note.dropped + tuple(cut) + gone)

    @staticmethod
    def _ward_name(span: Span, text: str) -> tuple[int, int]:
        """``use_ward_numbers``: the unit's name without its ward or floor number ("QUARTERMAIN 2" -> "QUARTERMAIN")
        when the line moves the patient (``_WARD_CUE``); the span itself otherwise."""
        m = _WARD.fullmatch(text, span.start, span.end)
        unit = m.group(1).lower().rstrip(".") if m is not None else ""
        if m is None or unit in _NOT_WARD or unit in vocab.STREET_TYPE_WORDS:
            return span.start, span.end
        left = text[max(0, span.start - 64):span.start]
        if not (_WARD_CUE.search(left) or _WARD_MOVE_BEFORE.search(left) or _WARD_CUE_AFTER.match(text, span.end)):
            return span.start, span.end
        return m.start(1), m.end(1)

    def _drops(self, span: Span, text: str, spans: Sequence[Span], matches: Sequence[MedicalMatch],
               syntax: Sequence[tuple[int, int, str]]) -> bool:
        """One of the rules drops this candidate span."""
        return (self._is_measurement(span, text) or self._is_jargon(span, text)
                or self._is_shapeless(span, text, spans) or self._is_misspelt(span, text)
                or self._is_common_lower(span, text) or self._is_weak_lower(span, text, spans)
                or self._is_generic_institution(span, text) or self._is_relation(span, text)
                or self._is_number_piece(span, text, spans) or self._is_listed_drug(span, text, matches)
                or self._is_heading(span, text) or self._is_misspelt_list_item(span, text)
                or self._is_medical(span, text, matches, syntax))

    @staticmethod
    def _repeats_message(span: Span, text: str, words: frozenset[str], digits: frozenset[str]) -> bool:
        surface = text[span.start:span.end]
        if words and any(w.lower() in words for w in _WORD.findall(surface)):
            return True
        d = re.sub(r"\D", "", surface)
        return bool(digits) and len(d) >= 4 and d in digits

    def _syntax_near(self, text: str, spans: Sequence[Span]) -> list[tuple[int, int, str]]:
        """Medical syntax near the spans that could be syntax: the regexes run only in small windows
        around spans with digits (scanning whole notes would cost more than the rest of this step);
        spans with ALL-CAPS tokens are checked against the gene symbols."""
        genes = self.vocab.genes
        out: list[tuple[int, int, str]] = []
        numeric = [  # digits in or next to the span ("8/9", "RASS -2", "T 37.9 C")
            s for s in spans
            if _HAS_DIGIT.search(text, max(0, s.start - 12), s.end + 12)
            and not _FULL_DATE.fullmatch(text, s.start, s.end)
        ]
        for lo, hi in _windows(text, numeric, _SYNTAX_REACH):
            out.extend(medical_syntax_spans(text, genes, start=lo, end=hi))
        for s in spans:
            if _CAPS_TOKEN.search(text, s.start, s.end):
                out.extend((a, b, "gene") for a, b in gene_spans(text, genes, s.start, s.end + 16))
        return out

    def _is_measurement(self, span: Span, text: str) -> bool:
        """Digits, separators and units in vitals / ventilator / lab context, from a measure source
        (every source of a merged span must be one)."""
        sources = span_sources(span)
        return bool(sources) and sources <= self.measure_sources and measurement_value(text, span.start, span.end)

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

    def _is_shapeless(self, span: Span, text: str, spans: Sequence[Span]) -> bool:
        """A DATE made only of known words and no calendar word ("since NOON", "last eve"); a PHONE of one or two
        digits with no other candidate beside it ("intubated with # [[8]] ETT") or a signed number ("LOS [[-905]]");
        a lone letter from the model alone with no other candidate beside it ("Pt. A.", "grade 1 [[B]]"); a street
        type alone from the model ("NSR to [[ST]]")."""
        if not self.config.use_shapeless:
            return False
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
                if _HAS_DIGIT.search(clockless) or attached_to_date(text, span.start, span.end):
                    return False
                surface = clockless
            elif _HAS_DIGIT.search(surface):
                if _COUNT_OF.fullmatch(bare):  # "day 7 of 14" of a course
                    return span_sources(span) <= _MODEL_SOURCES
                glued = _GLUED_LETTERS.fullmatch(bare)
                if glued is not None and span_sources(span) <= _MODEL_SOURCES:  # "on [2ln]/p": a quantity and its unit
                    suffix = glued.group(1).lower()
                    return suffix not in _DATE_SUFFIXES and suffix not in CALENDAR_TOKENS
                run = _number_run(text, span.start, span.end)[2]  # the model's "/84" of "8/84" is read whole
                return (span_sources(span) <= _MODEL_SOURCES and not _readable_date(run) and not _identifier_shaped(run)
                        and not any(o.overlaps(span) for o in self._neighbours(span, spans)))
            words = _LETTER_RUN.findall(surface)
            if len(words) == 1 and _VERB_ENDING.match(text, span.end):
                return True  # a verb: "dec'd" is decreased, not December
            if len(words) == 1 and bare.rstrip(".").lower() in _CHART_MONTHS and (bare.islower() or bare.isupper()):
                lo, hi = line_bounds(text, span.start, span.end)
                near = text[max(lo, span.start - _NUMBER_NEAR):min(hi, span.end + _NUMBER_NEAR)]
                return (span_sources(span) <= _MODEL_SOURCES and not _HAS_DIGIT.search(near)
                        and _MONTH_CUE_BEFORE.search(text, lo, span.start) is None)
            if any(w.lower() in CALENDAR_TOKENS for w in words):
                return False
            if not words:
                return clockless != text[span.start:span.end]
            cw = self.clinical_words
            return all(len(w) > 1 and (vocab.zipf(w.lower()) >= _KNOWN_WORD_ZIPF
                                       or (cw is not None and cw.is_clinical(w))
                                       or (w.isascii() and self._misspelt_word(w.lower()))) for w in words)
        if span.label == Label.EMAIL:  # the model's "email" without an "@" (else no candidate) of known words:
            # an abbreviation ("DNR & [DNI]"); other words are a label mistaken on an address ("[ΠΑΦΟΣ] PA")
            cw = self.clinical_words
            words = _LETTER_RUN.findall(surface)
            return bool(words) and all(vocab.zipf(w.lower()) >= _KNOWN_WORD_ZIPF or (cw is not None and cw.is_clinical(w))
                                       for w in words)
        if span.label == Label.ID and span_sources(span) <= _MODEL_SOURCES and len(surface.strip(" \t.,;:#")) < 3:
            return True  # no record number has fewer than three characters ("ms[04]": morphine)
        if span.label == Label.PHONE:  # no phone, pager or extension has fewer than three digits; a signed
            # number is a fluid balance ("LOS -905"), unless the sign is a separator ("202232-4455") or a country
            # code before more of the number ("+44 20 ...")
            signed = _SIGNED_NUMBER.fullmatch(surface) and not text[max(0, span.start - 1):span.start].isalnum()
            if not _HAS_DIGIT.search(surface):  # a known word is no phone ("(Continued)"); a label mistaken on
                # a word of an address stays ("Box 1772 DPO [AE] 91410")
                words = _LETTER_RUN.findall(surface)
                return (bool(words) and all(vocab.zipf(w.lower()) >= _KNOWN_WORD_ZIPF for w in words)
                        and not self._neighbours(span, spans))
            if bool(signed or 0 < sum(c.isdigit() for c in surface) < 3) and not self._neighbours(span, spans):
                return True
            # numbers joined by "and", "or", "to" ("at 0200 and 0415": two times), none as long as a phone number;
            # other words between numbers are an address the model took for a phone ("376 Rakoczi ut 13")
            groups = [sum(c.isdigit() for c in m.group()) for m in _PHONE_DIGITS.finditer(surface)]
            digits = [m.start() for m in _HAS_DIGIT.finditer(surface)]
            between = _LETTER_RUN.findall(surface[digits[0]:digits[-1]])
            return (len(groups) > 1 and max(groups) < _PHONE_MIN_DIGITS and bool(between)
                    and all(w.lower() in _NUMBER_JOINERS for w in between))
        bare = surface.strip(" \t.")
        if (span.label in _JARGON_LABELS and bare.lower() in _UNIT_WORDS and _UNIT_NUMBER_AFTER.match(text, span.end)
                and not name_context(text, span.start, span.end)):
            return True  # a kind of unit and its number, no unit's name ("from [WARD] 3", "to [Ward]3")
        if span_sources(span) != {"ner"}:
            return False
        if span.label in (Label.LOCATION, Label.ORGANIZATION) and bare in _STATE_CODES:
            # a state's code alone is no place of its own ("since MN", "nurse from the VA"): the regex step reads one
            # only after "City," or before a ZIP, and so does this rule; after a word for a relative it is a
            # person's initials ("brother of MS")
            before = text[max(0, span.start - 24):span.start]
            relative = any(_relation_word(_edge_key(w)) for w in _LETTER_RUN.findall(before)[-2:])
            return not (before.rstrip().endswith(",") or relative or _DIGIT_AFTER.match(text, span.end))
        if span.label in (Label.NAME, Label.ORGANIZATION) and not _LETTER_RUN.search(surface):
            return True  # a person or an organisation has a name ("from WARD [3]")
        if span.label == Label.NAME and all(w.lower() in _NAME_TITLES for w in _LETTER_RUN.findall(surface)):
            return True  # titles alone name nobody ("MET C [DRS]", "called the [Dr]"; a span without letters went above)
        if (span.label in _JARGON_LABELS and bare.lower() in vocab.STREET_TYPE_WORDS
                and not (len(bare) > 2 and vocab.is_first_name(bare)) and not vocab.is_place_name(bare)):
            return True  # a street type or "St" alone ("NSR to ST", "converted to st"): no street, saint or place
        return len(bare) == 1 and bare.isalpha() and not self._neighbours(span, spans)

    @staticmethod
    def _neighbours(span: Span, spans: Sequence[Span]) -> list[Span]:
        """The other candidates overlapping ``span`` or within ``_NEIGHBOUR`` characters of it."""
        return [o for o in spans if o is not span and o.start <= span.end + _NEIGHBOUR and span.start <= o.end + _NEIGHBOUR]

    def _is_misspelt(self, span: Span, text: str) -> bool:
        cw = self.clinical_words
        if (not self.config.use_misspellings or cw is None or span_sources(span) != {"ner"}
                or span.label not in _JARGON_LABELS):
            return False
        word = text[span.start:span.end].strip(" .,;:")
        low = word.lower()
        if len(word) < _MISSPELT_MIN_LEN or not word.isalpha() or not word.isascii():
            return False
        line = line_around(text, span.start, span.end)
        if not (word.islower() or (word.isupper() and is_all_caps(line))):
            return False
        if len(line.split()) < 3 or vocab.zipf(low) >= _KNOWN_WORD_ZIPF or vocab.is_name_word(low):
            return False
        if (name_context(text, span.start, span.end) or _INITIAL_BEFORE.search(text, max(0, span.start - 8), span.start)
                or _INSTITUTION_AFTER.match(text, span.end)):
            return False
        return self._misspelt_word(low)

    def _is_common_lower(self, span: Span, text: str) -> bool:
        """Lower-case common English words that only the model found as a name, place or organisation: in
        mixed-case text a name is capitalised, and in lower-case text a name is still a name-list word."""
        if (not self.config.use_common_words or span_sources(span) != {"ner"}
                or span.label not in _JARGON_LABELS):
            return False
        surface = text[span.start:span.end].strip(" \t.,;:")
        words = _LETTER_RUN.findall(surface)
        if not words or not surface.islower() or vocab.is_place_name(surface):
            return False
        if _HAS_DIGIT.search(surface) or not all(_common_word(w) for w in words):
            return False
        return not (_INSTITUTION_AFTER.match(text, span.end) or name_context(text, span.start, span.end))

    def _is_weak_lower(self, span: Span, text: str, spans: Sequence[Span]) -> bool:
        """A lower-case name, place or organisation from the model alone, scored below ``weak_lower_score``,
        with no evidence of its own (see the config)."""
        if (span.score >= self.config.weak_lower_score or span_sources(span) != {"ner"}
                or span.label not in _JARGON_LABELS):
            return False
        surface = text[span.start:span.end]
        if not surface.islower():
            return False
        near = self._neighbours(span, spans)
        left = text[max(0, span.start - 32):span.start]
        if span.label != Label.NAME:
            return not (near or _PLACE_CUE_BEFORE.search(left) or _FACILITY_NEAR.search(text, span.start, span.end + 16))
        if any(o.overlaps(span) for o in near) or name_context(text, span.start, span.end):
            return False
        if (_INITIAL_BEFORE.search(left[-8:]) or _INITIAL_START.match(surface) or _PERSON_CUE_BEFORE.search(left)
                or _CREDENTIAL_LOWER_AFTER.match(text, span.end) or _AGE_SEX.search(text, span.start, span.end + 8)):
            return False
        word = surface.strip(" \t.,;:")
        return not any(o is not span and o.label == Label.NAME
                       and (o.score >= self.config.weak_lower_score or span_sources(o) != {"ner"})
                       and word in text[o.start:o.end].lower() for o in spans)

    def _is_number_piece(self, span: Span, text: str, spans: Sequence[Span]) -> bool:
        """``use_number_pieces``: digits and separators from the model alone that run on into more digits
        ("[140]/60") or into the am / pm of a clock time ("11:[20]pm"), where the whole run has no identifier shape
        and is no readable date (a clock time only beside a date), and no other detection is on it (the model's
        piece of a date the regex found whole is that date's vote)."""
        if (not self.config.use_number_pieces or span.label not in (Label.DATE, Label.NAME)
                or span_sources(span) != {"ner"} or not _NUMBER_PIECE.fullmatch(text, span.start, span.end)
                or any(o.overlaps(span) for o in spans if o is not span)):
            return False
        a, b = span.start, span.end
        left = a > 0 and (text[a - 1].isdigit() or (text[a - 1] in "/.:-" and a > 1 and text[a - 2].isdigit()))
        right = _RUNS_ON.match(text, b) is not None
        if not (left or right):
            return False
        lo, hi, whole = _number_run(text, a, b)
        if _identifier_shaped(whole) or _FULL_DATE.fullmatch(whole):
            return False
        if ":" in whole:  # a clock time: part of a date-time only right beside a date
            return not attached_to_date(text, lo, hi)
        return not _readable_date(whole)  # "/84" of "8/84" stays with its month

    def _is_listed_drug(self, span: Span, text: str, matches: Sequence[MedicalMatch]) -> bool:
        """``use_drug_lists``: a one-word dictionary name after a dose or in a list with a known drug."""
        if (not self.config.use_drug_lists or span.label not in _JARGON_LABELS or span_sources(span) != {"dictionary"}
                or not _ONE_WORD.fullmatch(text, span.start, span.end) or name_context(text, span.start, span.end)):
            return False
        if _DOSE_BEFORE.search(text, max(0, span.start - 16), span.start):
            return True
        drugs = [(m.start, m.end) for m in matches if m.kind in _DRUG_KINDS and not m.ambiguous]
        if not drugs:
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
        return any(a <= lo and hi <= b for lo, hi in items for a, b in drugs)

    def _is_generic_institution(self, span: Span, text: str) -> bool:
        if not self.config.use_generic_institutions or span.label not in (Label.ORGANIZATION, Label.LOCATION):
            return False
        surface = text[span.start:span.end]
        if not (surface.islower() or is_all_caps(line_around(text, span.start, span.end))):
            return False
        words = [w.lower() for w in _LETTER_RUN.findall(surface)]
        if not any(w in _GENERIC_HEADS for w in words):
            return False
        names = vocab.hospital_name_words()
        return all(w in _GENERIC_HEADS or w in _GENERIC_INNER
                   or (w not in names and not vocab.is_place_name(w) and (
                       vocab.zipf(w) >= _KNOWN_WORD_ZIPF or self._misspelt_word(w)))
                   for w in words)

    def _misspelt_word(self, word: str) -> bool:
        """``word`` (lower case) is a misspelt known word: 5+ letters, in no name list, unknown to English, near a
        frequent English or clinical word (``use_misspellings``' test without its span conditions)."""
        cw = self.clinical_words
        if (not self.config.use_misspellings or cw is None or len(word) < _MISSPELT_MIN_LEN
                or vocab.zipf(word) >= _KNOWN_WORD_ZIPF or vocab.is_name_word(word)):
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
        """``use_headings``: the span is its line's heading and made of heading words (see the option)."""
        if (not self.config.use_headings or span.label not in _JARGON_LABELS
                or text[text.rfind("\n", 0, span.start) + 1:span.start].strip(" \t")):
            return False
        mark = _HEADING_COLON.match(text, span.end)
        if mark is None:
            return False
        colon = ":" in mark.group()  # a misspelt heading word only before a colon ("Reveiw of System:")
        cw = self.clinical_words
        words = [w.lower() for w in _LETTER_RUN.findall(text, span.start, span.end)]

        def heading_word(w: str) -> bool:
            if vocab.is_first_name(w):
                return False
            if (cw is not None and cw.is_clinical(w)) or vocab.zipf(w) >= _HEADING_WORD_ZIPF:
                return True
            return not vocab.is_surname(w) and (vocab.zipf(w) >= _KNOWN_WORD_ZIPF
                                                or (colon and w.isascii() and self._misspelt_word(w)))

        return bool(words) and all(map(heading_word, words))

    def _is_misspelt_list_item(self, span: Span, text: str) -> bool:
        """``use_jargon_lists``: a curated word misspelt into a name-list word as an item of a list of curated words
        (see the option)."""
        cw = self.clinical_words
        if not self.config.use_jargon_lists or cw is None or span.label not in _JARGON_LABELS:
            return False
        word = text[span.start:span.end].strip(" .,;:")
        if len(word) < _LIST_MISSPELT_MIN_LEN or not word.isalpha():
            return False
        items = (_ITEM_BEFORE.search(text, max(0, span.start - 24), span.start), _ITEM_AFTER.match(text, span.end))
        if not any(m is not None and cw.is_curated(m.group(1)) for m in items) or name_context(text, span.start,
                                                                                                span.end):
            return False
        if self._curated_long is None:
            self._curated_long = tuple(sorted(w for w in cw.jargon if len(w) >= _LIST_MISSPELT_MIN_LEN and w.isalpha()))
        return within_edits(word.lower(), self._curated_long, 1)

    def _is_relation(self, span: Span, text: str) -> bool:
        if not self.config.use_relation_words or span.label != Label.NAME:
            return False
        words = _LETTER_RUN.findall(text, span.start, span.end)
        words = [w.lower().removesuffix("'s") for w in words if len(w) > 1]
        return bool(words) and all(map(_relation_word, words)) and not name_context(text, span.start, span.end)

    @staticmethod
    def _clinical_word(cw: ClinicalWords, span: Span, words: Sequence[str]) -> bool:
        """One word without case evidence (lower case or capitals), not a dictionary's find, that the
        clinical-word filter knows."""
        if len(words) != 1 or "dictionary" in span_sources(span):
            return False
        w = words[0]
        # two letters are as often initials or a state ("PA", "MS") as abbreviations
        if len(w) < 3 or not w.isalpha() or not (w.islower() or w.isupper()):
            return False
        return cw.reason(w) is not None

    def _is_medical(self, span: Span, text: str, matches: Sequence[MedicalMatch],
                    syntax: Sequence[tuple[int, int, str]]) -> bool:
        if name_context(text, span.start, span.end):
            return False
        window = self.config.context_window
        intervals: list[tuple[int, int]] = []
        for m in matches:
            if m.start >= span.end:
                break
            if m.end <= span.start:
                continue
            if m.ambiguous and not has_medical_context(text, m, window):
                continue
            intervals.append((m.start, m.end))
        for s, e, _kind in syntax:
            if s < span.end and e > span.start:
                intervals.append((s, e))
        return bool(intervals) and covered(text, span.start, span.end, intervals)
