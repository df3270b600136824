"""Medical syntax: well-formed medical values recognised by regexes declared as data (``SYNTAX_PATTERNS``).

HGVS variants, accessions, rsIDs, doses and units, vitals, scores, ratios, schedule times (not attached to
a date), frequencies, labs with values, vertebral levels, heart sounds and catalog drug codes; plus gene
symbols from a given set (``gene_spans``). Pure regex work: the gene set comes from the caller
(``dictionaries.medical.medical_syntax_spans`` defaults it to the medical vocabulary's genes).

``measurement_value`` tells whether a span of digits and separators is a clinical measurement (vitals,
ventilator settings, blood gases, labs) from the measurement labels and units of
``data/clinical_measures.txt`` around it, unless it carries an identifier cue of its own.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import importlib.resources
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dictionaries.calendar import MONTH_ABBREVIATIONS
from dictionaries.text import LONG_LINE, line_bounds, memo_per_span

_NUM = r"\d+(?:[.,]\d+)?"
_ROMAN = r"(?:IV|V?I{1,3}|V)"
# a unit belongs to its number only on the same line (blanks, never a line break): in "2817838255\ncc:"
# the number is an identifier and "cc" starts the next line
_UNIT = (
    r"(?:mg|mcg|\u00b5g|ug|ng|pg|gm?|kg|lbs?|oz|mL|ml|cc|dL|L|mEq|meq|mmol|\u00b5mol|umol|IU|units?|U|mIU|"
    r"mmHg|cmH2O|cm|mm|bpm|%|\u00b0[ \t]?[CF]|mAh|kcal|Gy|cGy|mSv|mCi|MBq|puffs?|tabs?|tablets?|caps?|"
    r"capsules?|drops?|gtts?|sprays?|patch(?:es)?|vials?|amps?|doses?)"
)
_PER = r"(?:/(?:kg|dL|L|mL|ml|hr?|min|day|d|dose|m2|24[ \t]?h))*"
#: a unit ends its word; "L" before an apostrophe and a letter is the elided article of the next word ("08907
#: L’Hospitalet": no litres), while plural units stay units ("330cc's", "2mg's/hr", "2 L's")
_UNIT_END = r"(?![\w]|(?<=\bL)['\u2019](?!s\b)[^\W\d_])"
_TIME = r"(?:[01]\d|2[0-3])[0-5]\d"
_CLOCK = r"(?:[01]?\d|2[0-3]):[0-5]\d(?:\s?[AaPp]\.?[Mm]\.?)?"
_HOUR = r"(?:1[0-2]|0?\d)(?::?[0-5]\d)?"  # "7", "7:30", "0730" / "1145" before am / pm
_MERIDIEM = r"(?:[AaPp]\.?[Mm]\.?|[AaPp]\.[Mm])(?![\w])"
#: one end of a range of times: a 24-hour time, a clock time, an hour with am / pm, noon or midnight
_RANGE_TIME = (rf"(?:{_TIME}(?![\d:])|{_CLOCK}"
               r"|(?:1[0-2]|0?\d)(?::?[0-5]\d)?\s?(?:[AaPp]\.?[Mm]\.?|(?i:noon|midnight))(?!\w)|(?i:noon|midnight)\b)")
_VITAL_NAMES = (
    "HR", "RR", "Heart rate", "heart rate", "Pulse", "pulse", "Resp rate", "resp rate", "Respiratory rate",
    "respiratory rate", "SpO2", "SaO2", "O2 sat", "O2 sats", "Temp", "Tmax", "Tm", "Temperature",
    "temperature", "Wt", "Weight", "weight", "Ht", "Height", "height", "BMI", "MAP", "CVP", "FiO2", "PEEP",
)
#: a saturation's value: any percentage, and without a percent sign only one no day of the month can be
_SAT_VALUE = r"(?:100|\d{1,2})(?:\.\d)?"
_SAT_HIGH = r"(?:100|3[2-9]|[4-9]\d)(?:\.\d)?"
_SCORE_NAMES = (
    "ECOG", "KPS", "Karnofsky", "MMSE", "MoCA", "SLUMS", "NIHSS", "RASS", "CIWA", "CIWA-Ar", "COWS", "PHQ-9",
    "PHQ9", "PHQ-2", "PHQ2", "GAD-7", "GAD7", "MELD", "MELD-Na", "CHA2DS2-VASc", "CHADS2", "HAS-BLED",
    "CURB-65", "Wells", "Braden", "Morse", "APACHE", "APACHE II", "APACHE IV", "qSOFA", "SOFA", "TIMI",
    "HEART", "Centor", "Alvarado", "Bishop", "EDSS", "Child-Pugh", "mRS", "FLACC", "Epworth", "AUDIT-C",
)
_CLASS_NAMES = (
    "NYHA", "Killip", "Mallampati", "ASA", "Tanner stage", "Fitzpatrick type", "Fitzpatrick skin type",
    "Hunt-Hess", "Hunt and Hess", "Fisher grade", "Salter-Harris", "FIGO", "WHO grade", "Rai stage",
    "Binet stage", "Clark level",
)
#: A number right after a score name is no score when a time unit or date follows ("Wells 2 weeks ago").
_NOT_A_SCORE = r"(?!\s*(?:days?|weeks?|wks?|months?|mos?|years?|yrs?|y/?o|hours?|hrs?|minutes?|mins?|[ap]\.?m\b)|[/:.]\d)"
_LAB_NAMES = (
    "Na", "Cl", "HCO3", "CO2", "BUN", "Cr", "Creat", "Glu", "Glucose", "glucose", "Ca", "Mg", "Phos", "PO4",
    "WBC", "Hgb", "Hb", "Hct", "Plt", "PLT", "Platelets", "platelets", "INR", "PTT", "aPTT", "AST", "ALT", "ALP",
    "Alk phos", "Alk Phos", "T bili", "T. bili", "Tbili", "T bili", "D bili", "Dbili", "Albumin", "albumin",
    "Alb", "Lipase", "lipase", "Amylase", "amylase", "Troponin", "troponin", "Troponin I", "Troponin T",
    "troponin I", "troponin T", "Trop", "trop", "TnI", "TnT", "hsTnT", "hs-TnT", "BNP", "NT-proBNP", "NTproBNP",
    "Lactate", "lactate", "CK", "CPK", "CRP", "ESR", "Procalcitonin", "procalcitonin", "PCT", "TSH", "FT4",
    "Free T4", "free T4", "T4", "T3", "A1c", "HbA1c", "HgbA1c", "LDL", "HDL", "TG", "Triglycerides",
    "triglycerides", "Cholesterol", "cholesterol", "Ferritin", "ferritin", "TIBC", "B12", "Folate", "folate",
    "Vitamin D", "vitamin D", "25-OH D", "PSA", "CEA", "CA-125", "CA125", "CA 19-9", "AFP", "hCG", "bhCG",
    "b-hCG", "pH", "pCO2", "pO2", "PaO2", "PaCO2", "Anion gap", "anion gap", "AG", "Osm", "osm", "eGFR", "GFR",
    "Uric acid", "uric acid", "Ammonia", "ammonia", "NH3", "LDH", "Haptoglobin", "haptoglobin", "Retic",
    "retic", "ANC", "MCV", "RDW", "Fibrinogen", "fibrinogen", "D-dimer", "D-Dimer", "Vanc trough",
    "vanc trough", "Vanco trough", "vanco trough", "Tacro level", "tacro level", "FK level", "Dig level",
    "dig level", "Lithium level", "lithium level",
)
#: Company prefixes of catalog drug codes ("AZD9291", "STI571"); two-letter ones need a hyphen
#: ("MK-3475") so that IDs such as "PF123456" stay identifiers. FK506 and RU486 are curated terms.
_DRUG_CODE_PREFIXES = (
    "STI", "AZD", "ABT", "BMS", "GSK", "JNJ", "AMG", "BAY", "TAK", "ONO", "INCB", "BIBF", "ARRY", "GDC", "PLX",
    "LGX", "LDK", "REGN", "MEDI", "CNTO",
)
_LEVEL = r"(?:C[1-8]|T1[0-2]|T[1-9]|L[1-5]|S[1-5])"  # vertebral / spinal-nerve levels


def _lower(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({n.lower() for n in names}))


def _alt(names: tuple[str, ...]) -> str:
    """Regex alternation of literal names as a character trie ("A(?:ST|LT)|..."): the regex engine
    then picks a branch by the first character instead of trying every name at every position."""
    trie: dict[str, Any] = {}
    for name in set(names):
        node = trie
        for ch in name:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        optional = "" in node
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if optional:
            return ("(?:" + body + ")?") if len(branches) == 1 else body + "?"
        return body

    return emit(trie)


@dataclass(frozen=True, slots=True)
class SyntaxPattern:
    """A recogniser as data. ``triggers``: the pattern can only match text containing one of these
    substrings (checked first, because scanning 30 regexes over every note is the expensive part);
    empty means always run. ``lowered``: triggers are checked against the lower-cased text."""

    kind: str
    regex: re.Pattern[str]
    triggers: tuple[str, ...] = ()
    lowered: bool = False


_DIGITS = tuple("0123456789")

#: Recognisers for well-formed medical syntax. Each match is a medical span (start, end, kind).
SYNTAX_PATTERNS: tuple[SyntaxPattern, ...] = (
    SyntaxPattern("variant", re.compile(
        r"(?:\b(?:N[MCGRPT]|X[MRP]|ENST|LRG)_?\d+(?:\.\d+)?(?:\([A-Za-z0-9-]+\))?:)?"
        r"\b[cgmnor]\.[-*]?\d+(?:[+-]\d+)?(?:_[-*]?\d+(?:[+-]\d+)?)?"
        r"(?:[ACGTNUacgtnu]+>[ACGTNUacgtnu]+|delins[ACGTNacgtn]+|del[ACGTNacgtn]*|dup[ACGTNacgtn]*|"
        r"ins[ACGTNacgtn]+|inv|=)"
    ), (">", "del", "dup", "ins", "inv", "=")),
    SyntaxPattern("variant", re.compile(
        r"(?:\b(?:NP|XP|ENSP)_?\d+(?:\.\d+)?:)?\bp\.\(?(?:[A-Z][a-z]{2}|[A-Z*])\d+"
        r"(?:_(?:[A-Z][a-z]{2}|[A-Z])\d+)?"
        r"(?:fs(?:\*|Ter|X)?\d*|delins(?:[A-Z][a-z]{2})+|del|dup|ins(?:[A-Z][a-z]{2})+|ext\*?\d*|"
        r"[A-Z][a-z]{2}|[A-Z*=])?\)?(?![\w.])"
    ), ("p.",)),
    SyntaxPattern("accession", re.compile(r"\b(?:N[MCGRP]|X[MRP])_\d{6,9}(?:\.\d{1,2})?\b"), ("_",)),
    SyntaxPattern("rsid", re.compile(r"rs(?<![A-Za-z0-9_]rs)\d{3,12}\b"), ("rs",)),
    SyntaxPattern("dose", re.compile(
        rf"(?<![\w.]){_NUM}(?:[ \t]?(?:-|to)[ \t]?{_NUM})?[ \t]?{_UNIT}{_PER}{_UNIT_END}"
    ), _DIGITS),
    SyntaxPattern("vital", re.compile(
        r"\b(?:BP|B/P|NIBP|ABP|SBP/DBP|[Bb]lood pressure)\s*(?:(?:of|was|is|:|=)\s*)?"
        r"(?:[5-9]\d|[12]\d\d)\s*/\s*(?:[2-9]\d|1[0-4]\d)(?!\d)"  # not a date: 50-299 over 20-149
        r"(?:\s*\(\d{2,3}\))?(?:\s*mm\s?Hg)?"
    ), ("BP", "B/P", "lood pressure")),
    SyntaxPattern("vital", re.compile(
        rf"\b(?i:{_alt(_VITAL_NAMES)})\s*(?:(?:of|was|is|:|=)\s*)?\d{{1,3}}(?:\.\d{{1,2}})?"
        r"(?:\s*(?:%|bpm|kg|lbs?|cm|mm\s?Hg|cmH2O)|\s?\u00b0?\s?[CF]\b)?(?!\d)"
    ), _lower(_VITAL_NAMES), True),
    # an oxygen saturation written "sat" ("ra sat 96-100%", "SAT 97", "sat-92-95%", "SAT > 92", "02 sat 97-99%"):
    # "sat" is also Saturday's abbreviation, so a reading must follow, a value no day of the month can be (32-100)
    # or one with a percent sign or a comparator; "Sat 3/14" and "Sat 12" stay weekdays
    SyntaxPattern("vital", re.compile(
        r"(?i:\b(?:(?:spo2|sao2|svo2|o2|02|pa|ra|mixed venous|pulse ox)[ \t]*)?sats?\b)"
        r"[ \t]*(?:(?:-|:|=|(?i:of|was|is|at))[ \t]*)?"  # one run of blanks at a time: linear on long runs
        rf"(?:(?:[<>]=?|\u2265|\u2264)[ \t]*{_SAT_VALUE}|{_SAT_VALUE}(?:[ \t]*(?:-|(?i:to))[ \t]*{_SAT_VALUE})?[ \t]*%"
        rf"|{_SAT_HIGH}(?:[ \t]*(?:-|(?i:to))[ \t]*{_SAT_VALUE})?)(?![\d/:.])"
    ), ("sat",), True),
    SyntaxPattern("vital", re.compile(
        r"\bT\s*(?::\s*)?(?:9[5-9]|10[0-6]|3[4-9]|4[0-2])(?:\.\d)?(?![\d])(?:\s?\u00b0?\s?[CF]\b)?"
    ), ("T ", "T:")),
    SyntaxPattern("score", re.compile(
        r"\b(?i:GCS|Glasgow(?: Coma (?:Scale|Score))?)\s*(?i:score\s*)?(?:(?i:of|was|is|:|=)\s*)?(?:1[0-5]|[3-9])T?"
        r"(?:\s*\(?\s*E\s?\d\s*,?\s*V\s?(?:\d|T)\s*,?\s*M\s?\d\s*\)?)?(?!\d)"
    ), ("gcs", "glasgow"), True),
    SyntaxPattern("score", re.compile(
        r"(?i:\bApgars?(?: scores?)?\s*(?:(?:of|were|was|are|:|=)\s*)?(?:10|\d)\s*(?:/|,|and|&)\s*(?:10|\d)"
        r"(?:\s*(?:/|,|and|&)\s*(?:10|\d))?(?!\d)(?:\s*at\s*1\s*(?:and|&|,)\s*5\s*min(?:utes)?)?)"
    ), ("apgar",), True),
    SyntaxPattern("score", re.compile(
        rf"\b(?i:{_alt(_CLASS_NAMES)})(?i: (?:functional )?(?:class|grade|stage|type|level|physical status|PS))?"
        rf"\s*(?:{_ROMAN}|[0-6])(?:\s?-\s?(?:{_ROMAN}|[0-6]))?[A-Ea-e]?E?(?![\w]){_NOT_A_SCORE}"
    ), _lower(_CLASS_NAMES), True),
    SyntaxPattern("score", re.compile(
        r"\b(?i:Gleason(?: score| grade| sum| pattern)?\s*(?:(?:of|:|=)\s*)?)(?:\d{1,2}\s*\(\s*\d\s*\+\s*\d\s*\)|"
        r"\d\s*\+\s*\d(?:\s*=\s*\d{1,2})?|\d{1,2})(?![\w])"
    ), ("gleason",), True),
    SyntaxPattern("score", re.compile(
        rf"\b(?i:{_alt(_SCORE_NAMES)})(?i: (?:score|class|scale|PS))?\s*(?:(?i:of|was|is|:|=)\s*)?"
        rf"(?:[-+]?\d{{1,3}}%?|[ABC])(?![\w]){_NOT_A_SCORE}"
    ), _lower(_SCORE_NAMES), True),
    SyntaxPattern("score", re.compile(r"RADS(?:\s*category)?\s*[0-6][ABCabc]?\b"), ("RADS",)),
    SyntaxPattern("score", re.compile(
        r"\b[pcy]?T(?:[0-4][a-d]?|is|x)\s?N(?:[0-3][a-c]?|x)\s?M(?:[01][a-c]?|x)\b"
    ), ("N0", "N1", "N2", "N3", "Nx")),
    SyntaxPattern("score", re.compile(
        r"\b[Pp]ain(?: score| level)?\s*(?:(?:of|:|=|is|was)\s*)?\d{1,2}\s*/\s*10\b|"
        r"(?<![\d/])\d{1,2}\s*/\s*10\s+(?:pain|on (?:the )?pain scale)\b"
    ), ("ain",)),
    SyntaxPattern("score", re.compile(
        r"\b(?:[Ss]trength|[Mm]otor|[Gg]rip)\s*(?:(?:is|of|:)\s*)?[0-5][+-]?\s*/\s*5\b|"
        r"(?<![\d/])[0-5][+-]?\s*/\s*5\s+(?:strength|motor|bilaterally|throughout|in (?:all|bilateral|upper|lower))"
    ), ("trength", "otor", "rip", "bilaterally", "throughout", " in ")),
    SyntaxPattern("score", re.compile(
        r"(?<![\d/])[1-6]\s*/\s*6\s+(?:(?:holo|pan|early|late|mid)-?\s*)?(?:systolic|diastolic|SEM|murmur)|"
        r"\b[Gg]rade\s*[1-6]\s*/\s*6\b"
    ), ("systolic", "diastolic", "SEM", "murmur", "rade")),
    SyntaxPattern("score", re.compile(
        r"(?<![\w+])[0-4]\+\s*(?:pitting\s+|non-?pitting\s+)?(?:edema|pulses?|reflexes|DTRs?|protein|ketones|"
        r"blood|bacteria|LE|glucose)\b|\bDTRs?\s*(?:(?:are|:)\s*)?[0-4]\+"
    ), ("+",)),
    SyntaxPattern("score", re.compile(
        r"\b(?:A\s?&\s?O|AAO|AO|A/O|[Aa]lert and oriented|[Oo]riented)\s*x\s*[1-4]\b"
    ), ("O", "oriented")),
    SyntaxPattern("score", re.compile(r"\b(?:MMSE|MoCA|SLUMS)\s*(?:(?:of|:|=)\s*)?\d{1,2}\s*/\s*30\b"),
                  ("MMSE", "MoCA", "SLUMS")),
    SyntaxPattern("ratio", re.compile(
        r"\b(?:I:E|FEV1/FVC|P/F|BUN/Cr|CD4/CD8|E/A|E/e'|A/G|AST/ALT|ALT/AST|LDL/HDL|UPCR|UACR|PaO2/FiO2)"
        r"(?: ratio)?\s*(?:(?:of|:|=|is|was)\s*)?\d+(?:\.\d+)?(?::\d+(?:\.\d+)?)?%?"
    ), ("I:E", "/", "UPCR", "UACR")),
    SyntaxPattern("ratio", re.compile(r"(?<![\d:])1:(?:\d{3,6})\b|\b[Tt]iters?\s*(?:of\s*)?1:\d{1,6}\b"), ("1:",)),
    SyntaxPattern("frequency", re.compile(
        r"\bq\s?\d{1,2}(?:\s?-\s?\d{1,2})?\s?(?:h|hr|hrs|hours?)\b|"
        r"\bq\.?\s?(?:am|pm|hs|d|od|day|shift|week|wk|month|min)\b\.?|"
        r"\b(?:b\.i\.d|t\.i\.d|q\.i\.d|q\.h\.s|p\.r\.n|q\.o\.d|q\.d)\.?(?![\w])",
        re.IGNORECASE,
    ), ("q", "b.i.d", "t.i.d", "p.r.n"), True),
    SyntaxPattern("time", re.compile(
        rf"(?:@|\b(?i:at|by|until|due|given|scheduled|dosed|administered|taken)\b)"
        rf"\s*(?:{_TIME}(?![\d:/])(?:\s*(?:h|hrs|hours)\b)?|{_CLOCK}(?![\d:/]))"
        rf"(?:\s*(?:,|and|&|/|or|-)\s*(?:{_TIME}(?![\d:/])|{_CLOCK}(?![\d:/])))*"
        r"(?!\s*[A-Z][a-z])"  # "at 2005 Main St" is an address, not a schedule
    ), _DIGITS),
    SyntaxPattern("time", re.compile(rf"(?<![\d:/.-]){_TIME}\s*(?:h|hrs|hours)\b"), _DIGITS),
    # a shift written as two 24-hour times ("NPN 0700-1930", "1900-0700"): no ID has that shape, and a
    # year range that also reads as times ("2010-2015") is no identifier either
    SyntaxPattern("time", re.compile(rf"(?<![\w:/.-]){_TIME}\s?-\s?{_TIME}(?![\w/-]|:\d)"), _DIGITS),
    # a range of times of day ("FROM 12NOON TO 1700", "from 2200 till 0600"): both ends are times, so "from"
    # and "to" are cue enough (an address has one number)
    SyntaxPattern("time", re.compile(
        rf"(?i:\bfrom)\s+{_RANGE_TIME}\s*(?i:to|till|until|-)\s*{_RANGE_TIME}(?![\w:/])"
    ), ("from",), True),
    # a time of day with am / pm needs no cue ("7 PM - 7 AM", "12am", "3:15-4:00pm"): times of day are no
    # Safe Harbor identifier; one attached to a date is part of a date-time (``attached_to_date``)
    SyntaxPattern("time", re.compile(
        rf"(?<![\w:/.-])(?:{_HOUR}(?:\s?(?:-|to|until)\s?))?{_HOUR}\s?{_MERIDIEM}"
        rf"(?:\s?(?:-|to|until)\s?{_HOUR}\s?{_MERIDIEM})?"
    ), ("am", "pm", "a.m", "p.m"), True),
    SyntaxPattern("lab", re.compile(
        rf"\b(?:{_alt(_LAB_NAMES)})(?: level)?\s*(?:(?:of|was|is|:|=|-)\s*)?(?:[<>\u2264\u2265]\s*)?(?<!\d)\d{{1,4}}"
        rf"(?:\.\d+)?(?!\d)(?:[ \t]*%|[ \t]?{_UNIT}{_PER})?{_UNIT_END}"
    ), _DIGITS),
    # potassium alone: one letter, so only values a potassium can have ("K 4.1", not "K 1421")
    SyntaxPattern("lab", re.compile(r"\bK\s*(?:(?:of|was|is|:|=)\s*)?(?:[<>]\s*)?[1-9](?:\.\d{1,2})?(?!\.?\d)"), ("K",)),
    SyntaxPattern("vertebra", re.compile(
        rf"\b{_LEVEL}\s*-\s*(?:{_LEVEL}|1[0-2]|[1-9])(?![\w-])|"
        rf"\b{_LEVEL}(?=\s*(?:vertebra|level|radiculopathy|nerve root|root|dermatome|fracture|disc|disk|"
        r"body|spinous|pedicle|lamina|foramen|compression|burst))"
    ), ("C", "T", "L", "S")),
    SyntaxPattern("exam", re.compile(r"\bS[1-4](?:\s*(?:(?:,|/|and|&)\s*)?S[1-4])+\b"), ("S1", "S2", "S3", "S4")),
    SyntaxPattern("drug-code", re.compile(
        rf"\b(?:(?:{_alt(_DRUG_CODE_PREFIXES)})-?\d{{3,8}}|(?:FK|RU|MK|PF|LY|DS)-\d{{3,8}})[A-Za-z]?\b"
    ), (*_DRUG_CODE_PREFIXES, "FK", "RU", "MK", "PF", "LY", "DS")),
)

_GENE_TOKEN = re.compile(r"\b[A-Z][A-Z0-9]{2,9}(?:-[A-Z0-9]{1,4})?\b")
_PROTEIN_SHORT = re.compile(r"\s?(?:p\.)?[ACDEFGHIKLMNPQRSTVWY]\d{1,4}(?:[ACDEFGHIKLMNPQRSTVWY*]|fs)\b")
_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE_BEFORE = re.compile(
    rf"(?:\b\d{{1,4}}[/-]\d{{1,2}}(?:[/-]\d{{2,4}})?|\b{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s*\d{{4}})?|"
    rf"\b\d{{1,2}}\s+{_MONTHS}(?:\s+\d{{4}})?|\b\d{{1,2}}[-/]?{_MONTHS}[-/]?\d{{2,4}})"  # 08-APR-2018, 08APR18
    rf"\s*(?:,|on|at|@|-)?\s*(?:at|@)?\s*$",
    re.IGNORECASE,
)
#: a date right after a time, joined by nothing or a comma ("0930, 3/14"); "at 1105 on 3/14" is a schedule
#: time of that day, not a date-time (synthetic notes and the PhysioNet annotators leave such a time out)
_DATE_AFTER = re.compile(
    rf"^\s*(?:,\s*)?(?:\d{{1,4}}[/-]\d{{1,2}}|{_MONTHS}\s+\d|\d{{1,2}}[-/ ]?{_MONTHS}[-/ ]?\d{{2,4}}\b)",
    re.IGNORECASE,
)


def attached_to_date(text: str, start: int, end: int) -> bool:
    """A time right after or before a date is part of a date-time (an identifier), not a schedule."""
    return bool(_DATE_BEFORE.search(text[max(0, start - 24):start]) or _DATE_AFTER.match(text[end:end + 16]))


def gene_spans(text: str, genes: frozenset[str], start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Gene symbols (case-sensitive, from ``genes``) in ``text[start:end]``, extended over a protein
    change written right after them ("BRAF V600E")."""
    stop = len(text) if end is None else min(end, len(text))
    out = []
    for m in _GENE_TOKEN.finditer(text, start, stop):
        if m.group() in genes:
            gene_end = m.end()
            tail = _PROTEIN_SHORT.match(text, gene_end, stop)
            if tail is not None:
                gene_end = tail.end()
            out.append((m.start(), gene_end))
    return out


@functools.lru_cache(maxsize=64)
def _active_patterns(text: str) -> tuple[int, ...]:
    """Indexes of the patterns whose triggers occur in ``text``: computed once per note, then every
    window of that note only runs these (trigger checks cost more than small-window scans)."""
    lowered = text.lower()
    return tuple(
        i for i, sp in enumerate(SYNTAX_PATTERNS)
        if not sp.triggers or any(t in (lowered if sp.lowered else text) for t in sp.triggers)
    )


def syntax_spans(
    text: str, genes: Iterable[str], *, start: int = 0, end: int | None = None
) -> list[tuple[int, int, str]]:
    """Regex-recognised medical syntax as sorted (start, end, kind): HGVS variants, accessions, rsIDs,
    doses and units, vitals, scores, ratios, schedule times not attached to a date, frequencies, labs
    with values, vertebral levels, heart sounds, catalog drug codes, and gene symbols from ``genes``.

    ``start``/``end`` limit the scan to ``text[start:end]`` (offsets stay into ``text``; look-behinds
    still see what precedes ``start``). A full 1,000-character note costs about 1 ms; the recovery
    step scans only small windows around candidate spans.
    """
    stop = len(text) if end is None else min(end, len(text))
    out: list[tuple[int, int, str]] = []
    for i in _active_patterns(text):
        sp = SYNTAX_PATTERNS[i]
        for m in sp.regex.finditer(text, start, stop):
            if sp.kind == "time" and attached_to_date(text, m.start(), m.end()):
                continue
            out.append((m.start(), m.end(), sp.kind))
    gene_set = genes if isinstance(genes, frozenset) else frozenset(genes)
    out.extend((s, e, "gene") for s, e in gene_spans(text, gene_set, start, stop))
    out.sort()
    return out


# ------------------------------------------------------------------------------ clinical measurements
#
# A number is a clinical measurement, not an identifier, when it is made only of digits, separators and
# units and sits after a measurement label (or before a unit) on the same line: "BP 91-146/48-63",
# "ABG 7.38/33/169", "AC 600x12", "CVP 24-26", "SBP in the 90's", "CPAP 5/5". The labels and units are
# data (``data/clinical_measures.txt``); the rules below say when such context is not enough: an
# identifier cue of its own ("DOB", "MRN", "pager", "call", "#"), an age cue ("in her 90s", "98 yo"), a
# full date (four-digit year, or a month name next to it), a lone year, five or more digits in a row,
# and values shaped like a date ("3/4", "8/22/19") unless a pair label is right before them ("CPAP 5/5")
# or a unit right after them.

MEASURES_FILE = "data/clinical_measures.txt"

#: the characters a measurement span may hold besides units and the decade suffix ("70's", "90s")
_MEASURE_CHARS = re.compile(r"[\d\s/\\.,:;x'\u2019~<>=+\-%()\[\]]*", re.IGNORECASE)
#: a value: optional comparator and sign, a number, an optional decade suffix ("90's") or percent
_MVAL = r"(?:[<>~]\s?)?[+-]?(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?|\.\d+)(?:\s?['\u2019]\s?s\b|s\b)?%?"
#: a run of values joined by separators: "7.38/33/169", "91-146/48-63", "600x12", "70'S-80'S", "5.57 to 5.46"
_RUN = re.compile(
    rf"(?<![\w.]){_MVAL}(?:(?:\s*(?:/|->|-+|x|:)\s*|\s+to\s+){_MVAL})*(?![\w])|"  # from a value
    rf"(?<=[\w)])(?:/|-){_MVAL}(?:(?:\s*(?:/|->|-+|x|:)\s*|\s+to\s+){_MVAL})*(?![\w])",  # a tail ("/48")
    re.IGNORECASE,
)
#: month/day, month/year or month/day/year: a date shape among measurement values ("3/4", "8/22/19",
#: "3-24-17"); a dashed pair ("8-14") is a range unless a date cue comes right before it ("since 8-15")
_DATE_SHAPED = re.compile(
    r"(?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01])(?:/\d{2})?|(?:0?[1-9]|1[0-2])/\d{2}|"
    r"(?:0?[1-9]|1[0-2])-(?:0?[1-9]|[12]\d|3[01])-\d{2}"
)
_DASHED_PAIR = re.compile(r"(?:0?[1-9]|1[0-2])-(?:0?[1-9]|[12]\d|3[01])")
#: a date with a four-digit year inside a value run: "3/4/1950", "2019-03-04", "3/2019"
_FULL_DATE_IN_RUN = re.compile(
    r"(?<![\d.])\d{1,2}[/.-](?:\d{1,2}[/.-])?(?:1[89]|20)\d\d(?![\d.])|(?<![\d.])(?:1[89]|20)\d\d[/.-]\d{1,2}[/.-]\d{1,2}(?!\d)"
)
_LONG_DIGITS = re.compile(r"\d{5,}")
#: a lone number that reads as a year ("Act of 2001"): a year is a date part, never taken for a value
_YEAR = re.compile(r"(?:1[89]|20)\d\d")
_MONTH = r"(?:" + "|".join(MONTH_ABBREVIATIONS) + r")[a-z]*\.?"  # "sept", "september": the [a-z]* tail
_MONTH_BEFORE = re.compile(rf"\b{_MONTH}[\s/-]*$", re.IGNORECASE)
_MONTH_AFTER = re.compile(rf"^(?:st|nd|rd|th)?[\s/-]*(?:of\s+)?{_MONTH}(?![a-z])", re.IGNORECASE)
_DAY = re.compile(r"(?:0?[1-9]|[12]\d|3[01])")
#: an identifier cue of the value's own: birth date, record numbers, phones, pagers, accounts, numbers
_ID_CUE = re.compile(
    r"(?:\b(?:dob|d\.o\.b|date of birth|birth\w*|born|b-?day|mrn|mr|medical record|record|chart|acct|account|"
    r"ssn|social security|id|phone|tel|telephone|cell|mobile|home|work|pager|page|paged|pg|beeper|beep|fax|"
    r"pgr|bpr|call|called|calling|reach|reached|contact|ext|extension|number|num|no\.|ref|reference|room|rm|bed|"
    r"apt|unit no|zip)\b|#\W*$)",
    re.IGNORECASE,
)
#: an age cue: "in her 90s", "aged 92", "98 yo"
_AGE_CUE_BEFORE = re.compile(r"\b(?:ages?|aged|his|her|their|pt is|patient is|is a|an?)\s*(?:mid|late|early)?\s*$",
                             re.IGNORECASE)
_AGE_CUE_AFTER = re.compile(r"^\s*-?\s*(?:yo\b|y/o|y\.o|yrs?\b|years?\b|-?year|yr old)", re.IGNORECASE)
#: a date cue right before a value: "on 3/4", "since 8-15"
_DATE_CUE = re.compile(r"\b(?:on|since|until|till|thru|dated?|from|by|before|after|post|s/p)\s*[:-]?\s*$",
                       re.IGNORECASE)
#: what may stand between a label and a value of a date shape ("CPAP 5/5", "PS of 10/5", "VENT: 5/5")
_ATTACHED = re.compile(r"^[\s:=\-]*(?:(?:of|is|was|now|remains|setting|settings|mode|ratio)\b[\s:=\-]*)?$",
                       re.IGNORECASE)
#: what may stand between a pair label and its value inside a list of settings, after the label:
#: other settings ("CPAP .5% 5/5", "SIMV/PS, 500X10, 40%, & 5/8", "IMV 700x10, 50% 8/5"): numbers,
#: percentages, rate x volume, separators and joining words; no date cue (checked before)
_SETTINGS_BETWEEN = re.compile(
    r"^(?:[\s:=,;&+\-]+|(?:of|is|was|now|remains|setting|settings|mode|ratio|and|with|w/|at)\b|"
    r"[<>~]?(?:\d+(?:\.\d+)?|\.\d+)(?:\s*%|\s*x\s*\d+)?)*$",
    re.IGNORECASE,
)
#: a count of positive cultures or bottles ("2/4 bl cx", "1/4 BLOOD CULTURES"): not a date
_COUNT_OF = re.compile(r"[1-4]/[2-4]")
_COUNT_AFTER = re.compile(r"^\s*(?:(?:blood|bld|bl)\.?\s*)?(?:cultures?|cx|bottles?|sets?)(?![a-z])", re.IGNORECASE)
#: a pain score out of ten next to the word pain ("PAIN #9/10", "3/10 INCISIONAL PAIN", "chest pain (7/10)")
_PAIN_SCORE = re.compile(r"(?:10|\d)/10")
_PAIN_BEFORE = re.compile(r"\bpain\b(?:\s*(?:score|level|scale|rating|rated|of|at|is|was|now|[=:#(-])\s*)*$",
                          re.IGNORECASE)
_PAIN_AFTER = re.compile(r"^\s*\)?\s*(?:[a-z]+\s+)?pain\b", re.IGNORECASE)
#: a common fraction ("1/2", "2/3", "3/4", "3/8") is an amount, not a date, in a quantity (or a range of them:
#: "crackles 1/3-1/2 up"). Before a fluid or strength word it is one even after "on" ("remains on 1/4 NS",
#: "3/4 strength", "1/4 st betadine"); before a unit or amount word ("1/2 gallon", "1/2 hr", "2/3 way up",
#: "1/2 tab"), in a mixed number or a size ("1 1/2 hours", '1"x1/2"') or after a dextrose solution ("D5 1/2")
#: when no date cue is before it; right after a dosing verb it is a part of a dose ("give 1/2 NPH", "held 1/2 dose")
_FRACTION_ONE = r"(?:1/[2348]|2/3|3/4|[357]/8)"
_FRACTION = re.compile(rf"{_FRACTION_ONE}(?:\s*-\s*{_FRACTION_ONE})?")
_FRACTION_FLUID_AFTER = re.compile(r"^\s*(?:ns|nss|normal saline|strength|str|st)(?![a-z])", re.IGNORECASE)
_FRACTION_AFTER = re.compile(
    r"^(?:\s*\"|\s*(?:way|up|of (?:the|a|an)\b|tabs?|tablets?|pills?|caps?|bottles?|doses?|amps?|gallons?|"
    r"cups?|glass(?:es)?|liters?|litres?|oz|tsp|tbsp|hours?|hrs?|minutes?|mins?|inch(?:es)?|cm|mm)(?![a-z]))",
    re.IGNORECASE,
)
_FRACTION_BEFORE = re.compile(r"(?:(?<![\d.])\d+\s+|\d\s*[\"']?\s*x\s*|\bd(?:5|10|50)w?\s*|"
                              r"\b(?:give|gives|gave|given|giving|take|takes|took|taking|hold|held|half)\s+)$",
                              re.IGNORECASE)
#: a pressure-support / PEEP (or flow-by) pair: small numbers on both sides of the slash
_VENT_PAIR = re.compile(r"(?P<a>\d{1,2})/(?P<b>\d{1,2})")
#: weaning or ventilation words right before a pair, or with at most two linking words ("weaning trial 5/5",
#: "wean down to 10/5", "flowby 6/3", "MASK VENTILATION 5/5"): a setting even after "on" (but "weaned,
#: extubated on 5/5" is a date); FiO2 or a mode right after it
#: ("remained on 5/5, 40%", "5/5 IPS/CPAP"), or a minute or tidal volume with its value ("on 5/5 with Ve 8.0")
_VENT_BEFORE = re.compile(
    r"\b(?:trial(?:ed|ing)?|wean(?:ed|ing|s)?|vent|ventilat\w*|cpap|bipap|psv?|ips|peep|fio2|fi02|mask|s?imv|"
    r"flow-?by|cmv|prvc|pressure\s+support)\b"
    r"(?:\W+(?:on|to|down|back|of|at|trial|settings?|now|remains|remained|is|was)){0,2}\W*$", re.IGNORECASE)
_VENT_AFTER = re.compile(r"^\W{0,4}(?:(?:with|and)\s+)?(?:\d{2,3}\s*%|ips\b|cpap\b|psv?\b|peep\b|fio2\b|"
                         r"(?:ve|mv|tv|vt|rsbi)\b\W{0,3}\d)", re.IGNORECASE)
#: how far before a value (same line) a label still names it: "LAST ABG ON 50% RATE 16 141/38/7.40"
MEASURE_REACH = 40


def _vent_pair(value: str) -> bool:
    m = _VENT_PAIR.fullmatch(value)
    return m is not None and int(m.group("a")) <= 30 and int(m.group("b")) <= 25


@dataclass(frozen=True, slots=True)
class ClinicalMeasures:
    """Measurement labels and units (``data/clinical_measures.txt``) as compiled regexes.

    All match lower-cased text. ``label``: any label on word boundaries, plurals included ("PADs");
    ``unit_in_surface``: a unit inside a value span, digits allowed right before it ("20cc");
    ``label_for_dates``: the labels whose values are slash pairs (flag ``pair``), the only ones trusted
    right before a date-shaped value; ``unit_after``: a unit right after a value; ``strong_unit_after``:
    the same without single-letter units ("4/5 L arm" is no measurement); ``version``: a hash of the file.
    """

    label: re.Pattern[str]
    unit_in_surface: re.Pattern[str]
    label_for_dates: re.Pattern[str]
    unit_after: re.Pattern[str]
    strong_unit_after: re.Pattern[str]
    version: str


def _entry_regex(entries: Iterable[str]) -> str:
    alts = sorted({re.sub(r"\\ ", r"\\s*", re.escape(e.lower())) for e in entries}, key=len, reverse=True)
    return "(?:" + "|".join(alts) + ")"


def parse_measures(text: str) -> dict[str, list[tuple[str, frozenset[str]]]]:
    """Sections of the measures file: {"label": [(entry, flags)], "unit": [...]}."""
    sections: dict[str, list[tuple[str, frozenset[str]]]] = {"label": [], "unit": []}
    current: str | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
            if current not in sections:
                raise ValueError(f"unknown section [{current}] in {MEASURES_FILE}")
            continue
        if current is None:
            raise ValueError(f"entry before any section in {MEASURES_FILE}")
        entry, *flags = line.split("\t")
        sections[current].append((entry.strip(), frozenset(f.strip() for f in flags if f.strip())))
    return sections


@functools.lru_cache(maxsize=1)
def clinical_measures() -> ClinicalMeasures:
    """The shipped measurement labels and units, compiled once."""
    raw = importlib.resources.files("dictionaries").joinpath(MEASURES_FILE).read_text(encoding="utf-8")
    sections = parse_measures(raw)
    labels = [e for e, _ in sections["label"]]
    date_labels = [e for e, flags in sections["label"] if "pair" in flags]
    units = [e for e, _ in sections["unit"]]
    strong = [u for u in units if len(u) > 1]
    b, a = r"(?<!\w)", r"(?:['\u2019]?s)?(?!\w)"  # plurals count: "PADs", "CVP's", "FSs"
    au = r"(?:['\u2019]s)?(?!\w)"  # "cc's", not "ls" for "l"
    return ClinicalMeasures(
        label=re.compile(b + _entry_regex(labels) + a),
        unit_in_surface=re.compile(r"(?<![^\W\d_])" + _entry_regex(units) + au),
        label_for_dates=re.compile(b + _entry_regex(date_labels) + a),
        unit_after=re.compile(r"^[ \t]?" + _entry_regex(units) + au),
        strong_unit_after=re.compile(r"^[ \t]?" + _entry_regex(strong) + au),
        version="cm-" + hashlib.sha256(raw.encode()).hexdigest()[:12],
    )


def _measure_surface(surface: str, units: re.Pattern[str]) -> bool:
    """Only digits, separators, units and decade suffixes, with at least one digit."""
    if not any(map(str.isdigit, surface)):
        return False
    rest = units.sub(" ", surface.lower())
    rest = re.sub(r"(?<=\d)\s?['\u2019]?\s?s\b|\bto\b", " ", rest)
    return bool(_MEASURE_CHARS.fullmatch(rest))


def _line_runs(text: str, line_start: int, line_end: int) -> list[tuple[int, int]]:
    """The value runs of the line ``text[line_start:line_end]`` (offsets into ``text``), in order."""
    return [m.span() for m in _RUN.finditer(text, line_start, line_end)]


#: a long text's line runs, found once per line (``text`` is hashed once per string object): a note without line
#: breaks is one line, and finding its runs per span made the measurement test quadratic in its length; a long note
#: thick with identifiers asks for the same line's runs for each of its spans
_memo_line_runs = functools.lru_cache(maxsize=16)(_line_runs)


def _run_around(text: str, line_start: int, line_end: int, start: int, end: int) -> tuple[int, int] | None:
    """The extent of the value runs of the line ``text[line_start:line_end]`` that overlap ``text[start:end]``."""
    runs = (_memo_line_runs if len(text) >= LONG_LINE else _line_runs)(text, line_start, line_end)
    lo: int | None = None
    hi = end
    # the runs do not overlap: their ends rise with their starts, so the first that ends after ``start`` is bisected
    for a, b in runs[bisect.bisect_right(runs, start, key=lambda r: r[1]):]:
        if a >= end:
            break
        lo = a if lo is None else lo
        hi = max(hi, b)
    if lo is None:
        return None
    return min(lo, start), hi


@memo_per_span
def measurement_value(text: str, start: int, end: int) -> bool:
    """True when ``text[start:end]`` is a clinical measurement value, not an identifier (memoised per span,
    ``dictionaries.text.memo_per_span``).

    The span must hold only digits, separators (``/ - . x : , '``, blanks), units and decade suffixes;
    its value run (the span widened over the values joined to it on its line: "/48" in "91-146/48-63")
    must follow a measurement label within ``MEASURE_REACH`` characters on the same line (no identifier
    or age cue between them), or be followed by a unit or a label. Never a measurement: a run with a
    date with a four-digit year, a lone year, a month name next to it, five or more digits in a row, an
    age cue ("in her 90's", "98 yo"), or an identifier cue between the label and the value ("HR 80,
    pager 12345"). Date-shaped runs ("3/4", "8/22/19") need a pair label right before them ("CPAP 5/5",
    "PS of 10/5") or a unit of more than one letter right after, and no date cue ("on", "since", "s/p")
    before them; common fractions count in quantities ("1/4 NS", "1/2 gallon", "1 1/2 hours", "D5 1/2"), and small pairs
    after a weaning or ventilation word or before FiO2 are pressure-support / PEEP settings ("weaning trial
    5/5", "remained on 5/5, 40%").
    """
    measures = clinical_measures()
    surface = text[start:end]
    if not _measure_surface(surface, measures.unit_in_surface):
        return False
    line_start, line_end = line_bounds(text, start, end)
    extent = _run_around(text, line_start, line_end, start, end)  # offsets into text, not a copy of a long line
    if extent is None:
        return False
    r0, r1 = extent
    run = text[r0:r1]
    if _FULL_DATE_IN_RUN.search(run) or _LONG_DIGITS.search(run) or _YEAR.fullmatch(run.strip()):
        return False
    lo = max(line_start, r0 - MEASURE_REACH)
    while lo > line_start and text[lo - 1].isalnum():  # whole words only: "lives" must not read as "VEs"
        lo -= 1
    left = text[lo:r0]
    right = text[r1:min(r1 + 16, line_end)]
    if _MONTH_BEFORE.search(left) or (_DAY.fullmatch(run.strip()) and _MONTH_AFTER.match(right)):
        return False  # "March 21", "21 Oct", "20th of October"
    if _AGE_CUE_BEFORE.search(left) or _AGE_CUE_AFTER.match(right):
        return False
    bare = run.strip().lstrip("/-+")
    date_shaped = bool(_DATE_SHAPED.fullmatch(bare))
    if _DASHED_PAIR.fullmatch(bare) and _DATE_CUE.search(left):
        return False
    if _FRACTION.fullmatch(bare) and (_FRACTION_FLUID_AFTER.match(right) or (
            not _DATE_CUE.search(left) and (_FRACTION_AFTER.match(right) or _FRACTION_BEFORE.search(left)))):
        return True  # "on 1/4 NS", "crackles 1/3-1/2 up", "1/2 gallon", "1 1/2 hours", "D5 1/2"
    if date_shaped and not _DATE_CUE.search(left) and (
            (_COUNT_OF.fullmatch(bare) and _COUNT_AFTER.match(right))
            or (_PAIN_SCORE.fullmatch(bare) and (_PAIN_BEFORE.search(left) or _PAIN_AFTER.match(right)))):
        return True  # "2/4 bl cx", "PAIN #9/10", "3/10 INCISIONAL PAIN"
    if date_shaped and _vent_pair(bare) and (_VENT_BEFORE.search(left) or _VENT_AFTER.match(right)):
        return True  # "weaning trial 5/5", "wean down to 10/5", "flowby 6/3", "remained on 5/5, 40%"
    low_left, low_right = left.lower(), right.lower()
    unit = measures.strong_unit_after if date_shaped else measures.unit_after
    labels = list((measures.label_for_dates if date_shaped else measures.label).finditer(low_left))
    if labels:
        between = low_left[labels[-1].end():]
        if _ID_CUE.search(between) or _AGE_CUE_BEFORE.search(between):
            return False
        if date_shaped:
            if _DATE_CUE.search(between):
                return False
            if _ATTACHED.match(between) or _SETTINGS_BETWEEN.match(between):
                return True
        else:
            return True
    if _ID_CUE.search(low_left[-12:]) or (date_shaped and _DATE_CUE.search(low_left)):
        return False
    if unit.match(low_right):
        return True
    after = re.match(r"^[\s:=(,-]*", low_right)
    rest = low_right[after.end() if after else 0:]
    if date_shaped:  # a pair label right after: "vent 5/5 psv", "10/5 PS"
        return bool(measures.label_for_dates.match(rest))
    return bool(measures.label.match(rest))


# ------------------------------------------------------------------------------ identifier cues
#
# The other side of ``measurement_value``: what makes a number an identifier whatever detector found it.
# The retention metric counts a number the output changed as clinical content lost unless the span around it
# has one of these (processors/metrics/retention.py); the residual-risk score counts untagged numbers that
# have one (processors/risk.py).

#: a phone number: 10 digits in groups (area code optional in brackets), or 7 with a separator
_PHONE = re.compile(r"(?<![\d.])(?:\+?1[-.\s]?)?\(?\d{3}\)?[-.\s]?\d{3}[-.\s]?\d{4}(?![\d.])|(?<![\d./-])\d{3}[-.]\d{4}(?![\d./-])")
#: a month/day shape anywhere in the span ("8/12", "8/12/91", "3-24-17", "2019-03-04")
_DATE_IN_SPAN = re.compile(
    r"(?<![\d.])(?:0?[1-9]|1[0-2])[/-](?:0?[1-9]|[12]\d|3[01])(?:[/-]\d{2}(?:\d{2})?)?(?![\d.]|/\d)|"
    r"(?<![\d.])(?:1[89]|20)\d\d-\d{1,2}-\d{1,2}(?!\d)"
)
_MONTH_IN_SPAN = re.compile(rf"\b{_MONTH}(?![a-z])", re.IGNORECASE)
#: an e-mail address, a URL or an IPv4 address: identifiers whatever surrounds them
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+|(?:https?://|www\.)\S+|(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])",
                      re.IGNORECASE)
#: a street address: a house number, capitalised words and a street suffix ("12 Oak Street", "400 W Main St")
_STREET = re.compile(
    r"(?<![\d.])\d{1,6}[A-Za-z]?\s+(?:[A-Z][\w'.-]*\s+){1,4}(?:Street|St|Avenue|Ave|Road|Rd|Drive|Dr|Lane|Ln|Way|"
    r"Court|Ct|Boulevard|Blvd|Circle|Cir|Place|Pl|Parkway|Pkwy|Terrace|Highway|Hwy|Square|Sq|Trail|Route)\b\.?"
)
#: an ordinal day ("the 12th", "3rd of May"): a day of a date inside a span
_ORDINAL_DAY = re.compile(r"(?<![\d.])(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)\b", re.IGNORECASE)
#: an age over 89 with its cue ("92 yo", "aged 95"): a Safe Harbor identifier
_OLD_AGE = re.compile(r"(?<!\d)(?:9\d|1[01]\d)(?!\d)")


@memo_per_span
def identifier_cue(text: str, start: int, end: int) -> str | None:
    """Why the numbers of ``text[start:end]`` (a detected span) are an identifier, or None (memoised per span,
    ``dictionaries.text.memo_per_span``).

    Kinds: ``"address"`` (an e-mail address, a URL, an IPv4 address, a street address), ``"date"`` (a
    month name, an ordinal day, a month/day shape or a full date in the span, "8/12", "March 3"),
    ``"phone"`` (a phone shape), ``"long-digits"`` (five or more digits in a row: record numbers, ZIP
    codes), ``"id-cue"`` (an identifier word right before it on its line: "DOB", "MRN", "pager", "#",
    ...) and ``"age"`` (an age over 89 with an age cue). A value that ``measurement_value`` calls a
    measurement ("CPAP 5/5") is not a date; clock times, decimals and ranges without these cues are no
    identifier (times of day are not Safe Harbor identifiers).
    """
    surface = text[start:end]
    if _ADDRESS.search(surface) or _STREET.search(surface):
        return "address"
    line_start = line_bounds(text, start)[0]
    left = text[max(line_start, start - 24):start]
    if _ID_CUE.search(left) or (_ID_CUE.search(surface) and re.search(r"\d", surface)):
        return "id-cue"
    if _PHONE.search(surface):
        return "phone"
    if _LONG_DIGITS.search(surface):
        return "long-digits"
    if _FULL_DATE_IN_RUN.search(surface) or (_MONTH_IN_SPAN.search(surface) and re.search(r"\d", surface)):
        return "date"
    if _ORDINAL_DAY.search(surface) or _MONTH_BEFORE.search(left) or _MONTH_AFTER.match(text[end:end + 16]):
        return "date"  # "March 21": the month outside the span
    for m in _DATE_IN_SPAN.finditer(surface):
        if not measurement_value(text, start + m.start(), start + m.end()):
            return "date"
    old = _OLD_AGE.search(surface)
    if old is not None and (_AGE_CUE_AFTER.match(text[start + old.end():start + old.end() + 16])
                            or _AGE_CUE_BEFORE.search(text[max(line_start, start + old.start() - 24):start + old.start()])):
        return "age"
    return None
