"""Ages over 89 (Safe Harbor): "92 yo", "92-year-old", "age 95", "92M", "in her 90s", "ninety-two years old", and in the
other languages the regex step reads (Spanish, Catalan, Portuguese, Italian, French, German, Dutch): "92 años", "93
ans", "95 Jahre", "93-jährige", "Edad: 92"."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from presidio_analyzer import Pattern

from processors.regex.dates import german_near
from processors.regex.recognizer import RE_FLAGS, REGEX_CASED, ClinicalPattern, ClinicalRecognizer, Hit
from schemas.labels import Label

_VITALS_BEFORE = re.compile(
    r"\b(?:t|temp|temperature|tmax|tm|tc|febrile|fever|afebrile|hr|pulse|p|rr|sat|sats|spo2|o2|bp|wt|weight|"
    r"degrees?|glucose|bs|fsbs|bg|ra|room\s+air)\b[^.;\n]{0,12}$",
    RE_FLAGS,
)
_AFTER_SEX_NOT_AGE = re.compile(
    r"[ \t]*(?:°|deg|degrees|orally|oral|axillary|rectal|tympanic|temporal|po\b)", RE_FLAGS
)


_PACK_BEFORE = re.compile(r"\bpack[ \t-]*$", RE_FLAGS)

#: the number of an age over 89 (90-129; ``_is_age_over_89`` bounds it to 125)
_OVER_89 = r"(?P<v>(?:9|1[0-2])\d)"
#: units of time shorter than a year in those languages: "Edad: 95 días" is no age in years
_NOT_YEARS_AFTER = (r"(?![\d.,]\d)(?![ \t]*(?:d[ií]as?|d|semanas?|meses|mes|horas?|h|tagen?|wochen?|monate?n?|stunden?|"
                    r"jours?|semaines?|mois|heures?|giorni|settimane|mesi|ore|dias|meses|dagen?|weken|maanden|uur|m)\b)")


def _is_age_over_89(value: str) -> bool:
    return value.isdigit() and 90 <= int(value) <= 125


class AgeRecognizer(ClinicalRecognizer):
    """Ages over 89 (Safe Harbor): "92 yo", "92-year-old", "age 95", "aged 101", "92 y/o", "92M", "in her 90s".
    The span is the number only ("92"), so "-year-old" stays readable."""

    ENTITY = "AGE"
    LABEL = Label.AGE
    PATTERNS: list[Pattern] = [
        ClinicalPattern(
            "age + years", r"(?<![\w.,/-])(?P<v>(?:9|1[0-2])\d)(?:y\b|[ \t]*-?[ \t]*(?:y/o(?!\w)|y\.o\.?|yo\b|yrs?\b|"
            r"years?\b|year-old|yr-old|-?years?-?old))", 0.9, kind="years"),
        ClinicalPattern(
            "age word + number", r"\bage[ds]?[ \t]*(?:of[ \t]+|is[ \t]+|was[ \t]+|:[ \t]*|=[ \t]*)?"
            r"(?P<v>(?:9|1[0-2])\d)(?![\d.,]\d)(?![ \t]*(?:days?|d|weeks?|wks?|w|months?|mos?|mo|m|hours?|hrs?|h)"
            r"\b)", 0.9),
        ClinicalPattern(  # 92M, 92 F (age + sex shorthand): not a temperature ("T 98 F")
            "age + sex", r"(?<![\w.,/])(?P<v>(?:9|1[0-2])\d)[ \t]?(?:M|F)(?![\w°'])", 0.75, kind="sex", flags=REGEX_CASED),
        ClinicalPattern(
            "in her 90s", r"\bin[ \t]+(?:his|her|their)[ \t]+(?:(?:early|mid|late)[ \t-]*)?"
            r"(?P<v>(?:9|1[01])0['’]?s|nineties)\b", 0.7, kind="decade", trigger=("0s", "0's", "0’s", "nineties")),
        ClinicalPattern(
            "written age", r"\b(?P<v>(?:ninety|one[ \t]+hundred(?:[ \t]+and)?)(?:[ \t-]+(?:one|two|three|four|five|"
            r"six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|"
            r"twenty))?)[ \t-]+(?:years?[ \t-]+old|y/?o\b|yo\b)", 0.85, kind="written",
            trigger=("ninety", "hundred")),
        # the other languages (a fixed table of their words for years and age, not of any note's wording)
        ClinicalPattern(  # "92 años", "94 anys", "91 anos", "93 anni", "93 ans", "95 Jahre", "92 jaar"; not pack-years
            # ("95 años-paquete")
            "age + years (other languages)", r"(?<![\w.,/-])" + _OVER_89 + r"[ \t]*(?:años|anos|anys|anni|ans|"
            r"jahren?|jaar)(?![\w-])", 0.9, kind="years",
            trigger=("año", "ano", "any", "anni", "ans", "jahr", "jaar")),
        ClinicalPattern(  # "93-jährige", "92jähriger", "93-jarige"
            "age adjective (German, Dutch)", r"(?<![\w.,/-])" + _OVER_89 + r"[ \t]*-?[ \t]*(?:jährig|jarig)e?[nmrs]?"
            r"(?!\w)", 0.9, trigger=("jährig", "jarig")),
        ClinicalPattern(  # "(91 J.)", "91 J. alt": German text only (``german_near``); "120 J" is also joules
            "age + J. (German)", r"(?<![\w.,/-])" + _OVER_89 + r"[ \t]*J\.(?!\w)", 0.75, kind="german", trigger=("j.",)),
        ClinicalPattern(  # "Edad: 92", "edad de 94 años", "Alter: 95", "âge : 93", "Età: 91", "leeftijd: 92"
            "age word + number (other languages)",
            r"(?<![\w])(?:(?:edad|idade|edat)(?:[ \t]+de)?[ \t]*:?|(?:alter|âge|età|leeftijd)[ \t]*:)[ \t]*"
            + _OVER_89 + _NOT_YEARS_AFTER, 0.9, trigger=("edad", "idade", "edat", "alter", "âge", "età", "leeftijd")),
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        start, end = self.span_of(match, pattern)
        if pattern.kind not in ("decade", "written") and not _is_age_over_89(text[start:end]):
            return
        if pattern.kind == "sex" and (_VITALS_BEFORE.search(text, max(0, start - 24), start)
                                      or _AFTER_SEX_NOT_AGE.match(text, match.end())):
            return
        if pattern.kind == "years" and _PACK_BEFORE.search(text, max(0, start - 8), start):
            return
        if pattern.kind == "german" and not german_near(text, start, end, 1):
            return
        yield Hit(start, end, Label.AGE, None, pattern.score)
