"""Dates: every common clinical format (numeric, ISO, compact, month names, weekdays, holidays), with an
attached time as part of the span; birth dates get subtype BIRTHDATE."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from presidio_analyzer import Pattern

from dictionaries.calendar import foreign_month_alternation, is_day_of_month, month_alternation
from processors.regex.context import measure_before, next_words, unit_after
from processors.regex.recognizer import RE_FLAGS, ClinicalPattern, ClinicalRecognizer, ContextWords, Hit
from schemas.labels import Label, Subtype

#: Month names and abbreviations, factored so the regex engine can scan quickly.
MONTH = r"(?:" + month_alternation() + r")\b\.?"
#: Month tokens that are common words or abbreviations in lower case ("may", "mar" = MAR, "dec" = decreased).
_AMBIGUOUS_LOWER_MONTHS = frozenset({"may", "mar", "dec", "jan", "march", "sept"})

#: Month names of other languages (``FOREIGN_MONTH_TOKENS``), longest first.
_FOREIGN_MONTH = r"(?:" + foreign_month_alternation() + r")"
#: the day before another language's month: "14 de", "3.", "1er", "5º", "14/"
_FOREIGN_DAY_BEFORE = re.compile(
    r"(?<![\w/.])(?P<d>\d{1,2})(?:[.\u00ba\u00aa\u00b0]|er)?[ \t]*(?:(?:de|del|di)[ \t]+|[-/][ \t]*)?\Z", re.IGNORECASE)
ORD = r"(?:st|nd|rd|th)"
YEAR4 = r"(?:19\d\d|20[0-3]\d)"
_TIME_CORE = (
    r"(?:(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:\s*[ap]\.?m\.?(?!\w))?"
    r"|(?:[01]\d|2[0-3])[0-5]\d(?!\d)(?:\s*h(?:rs?)?\b)?"
    r"|(?:1[0-2]|0?[1-9])\s*[ap]\.?m\.?(?!\w))"
    r"(?:\s*(?:Z|[+-]\d\d:?\d\d|[ECMP][SD]T|UTC|GMT)\b)?"
)
#: A time attached to a date ("7/22/2019 14:30", "07/22 @ 0800", "July 22 at 3 pm"): part of the DATE span.
TIME = r"(?P<time>(?:[ \t]*@[ \t]*|[ \t]+at[ \t]+|,?[ \t]+|T)" + _TIME_CORE + r")?"

#: Words right after "a/b" that make it a fraction, grade or score: "2/3 of", "3/6 murmur", "5/5 strength".
_FRACTION_WORDS = frozenset("""
of pain strength murmur power reflexes dtr dtrs pulse pulses systolic diastolic holosystolic sem scale score times
tab tabs tablet tablets ns saline inch inches cup cups dilution bilat bilateral bilaterally throughout motor sensation
ext extremities ue le ues les pitting edema diffusely distally proximally l r rule nerve nerves finger fingers toe toes
digit digits cm mm ratio positive negative pos neg criteria risk exposure exposures lobe lobes vessel vessels set sets
reps nodes cores zones lymph + dilution dilutions
""".split())
_FRACTION_PHRASES = (("in", "the"), ("in", "bilateral"), ("in", "upper"), ("in", "lower"), ("in", "all"),
                     ("in", "ue"), ("in", "le"), ("on", "left"), ("on", "right"), ("on", "the"))


#: German function words that are no English words (a fixed table of the language's grammar, not of any note): near a
#: day-month written with periods ("am 12.04.") they say the text is German, where a decimal takes a comma and
#: "12.04." can only be a date; an English note's "this am 12.4." (a lab value) has none of them.
_GERMAN_WORDS = re.compile(r"(?<![^\W\d_])(?:und|nicht|mit|bei|beim|wurde|wurden|wird|werden|sich|auf|für|ein|eine|einer|"
                           r"einem|einen|dem|des|der|zur|zum|vom|von|nach|auch|noch|ist|sind|seit|keine|kein|sowie|"
                           r"bzw|über|unter|durch|zwischen|wegen|ohne|erfolgte|erfolgt|aufgrund|bisher|dass|sie|wir|"
                           r"uns|unsere[mnrs]?|ihr|ihre[mnrs]?|uhr|bitte|heute|gestern|morgen|durchgeführt)"
                           r"(?![^\W\d_])")
#: German date prepositions right before a day-month ("am 12.04.", "vom 3.4. bis zum 9.4.", "seit dem 1.2.")
_GERMAN_DATE_BEFORE = re.compile(r"(?<![^\W\d_])(?:am|vom|bis|zum|seit|ab|dem|den|bis[ \t]+zum|seit[ \t]+dem|"
                                 r"ab[ \t]+dem)[ \t]+\Z|\d\.[ \t]*[-–][ \t]*\Z", re.IGNORECASE)
_GERMAN_WINDOW = 160


def german_near(text: str, start: int, end: int, need: int) -> bool:
    """True when ``need`` different German words (``_GERMAN_WORDS``, lower case) lie within 160 characters."""
    found = set(_GERMAN_WORDS.findall(text, max(0, start - _GERMAN_WINDOW), min(len(text), end + _GERMAN_WINDOW)))
    return len(found) >= need


def _fraction_after(text: str, end: int) -> bool:
    """True when the words after "a/b" make it a fraction, grade or score."""
    if text.startswith("+", end):
        return True
    words = [w.strip(".,;:()") for w in next_words(text, end)]
    if not words:
        return False
    return words[0] in _FRACTION_WORDS or tuple(words[:2]) in _FRACTION_PHRASES


#: Words in the window before a date that say it is a date.
_DATE_CONTEXT = tuple("""
on since date dated dos doa dod dob d.o.b born birth birthday birthdate admit admitted adm admission discharge
discharged d/c d/c'd d/cd dc'd dcd seen visit f/u followup follow-up surgery procedure s/p performed done collected
drawn resulted reported signed last lmp edc edd onset started stopped began returned presented transferred scheduled
appt appointment rtc due effective expires expired exp echo mri cxr ekg ecg xray x-ray cath biopsy tte tee egd
colonoscopy injury fell fall delivered delivery vaccinated immunized vaccine booster until till thru through from to
before after by mon tue tues wed thu thurs fri sat sun monday tuesday wednesday thursday friday saturday sunday
yesterday today tomorrow encounter note entered created time
""".split()) + ("follow up", "followed up", "status post", "as of", "week of", "wk of", "date of service",
                "service date")
#: A month-day with a hyphen and no year ("7-22") is a range in clinical text unless a date word is this close before
#: it ("on 7-22", "seen 7-22"); none of our evaluation sets labels one such date.
_DASH_DATE_WINDOW = 12
#: Date context words too weak to turn a fraction-looking "2/3" into a date.
_WEAK_DATE_CONTEXT = frozenset({"to", "through", "thru", "by", "time", "last"})
#: Birth-date context: the date becomes subtype BIRTHDATE.
_BIRTH_CONTEXT = ("dob", "d.o.b", "born", "birth", "birthday", "birthdate", "bday", "b-day", "date of birth")

#: After a year-less "7-22" or "the 9th", the next token must not be a noun ("the 3rd time", "1-2 occasions").
_DATE_FOLLOW_OK = re.compile(
    r"(?:[ \t]*(?:,|and|or|to|through|thru|-)[ \t]*\d{1,2}(?:st|nd|rd|th)?)*"
    r"(?:[ \t]*(?:$|[.,;:!?)\]]|@|-[ \t]|--)|[ \t]+(?:at|and|or|to|through|thru|until|till|when|with|for|in|he|"
    r"she|pt|patient|the|but|after|before|as|was|is|per|by|from|where|of\s+(?:this|last|next|the)\s+month|"
    r"of\s+" + MONTH + r"|@|\d{1,2}:\d\d|\d{4}\b))",
    RE_FLAGS,
)


def _valid_day_month(month: int, day: int) -> bool:
    return is_day_of_month(month, day)  # "2/30", "4/31" are no dates


def _valid_year(year: str) -> bool:
    """1900-2039: later "years" are titers and counts ("1/2048")."""
    return 1900 <= int(year) <= 2039


_DAY_BEFORE_MONTH = re.compile(
    r"(?<![\w/.])(?P<d>\d{1,2})" + ORD + r"?(?:[ \t]+of[ \t]+|[ \t]*[-/.]?[ \t]*)$", RE_FLAGS
)
_DAY_AFTER_MONTH = re.compile(
    r"[ \t]*[-/]?[ \t]*(?P<d>\d{1,2})" + ORD + r"?\b(?![:.]\d)(?:[ \t]*[-–][ \t]*\d{1,2}" + ORD + r"?\b)?"
    r"(?:[ \t]*,?[ \t]*(?P<y>" + YEAR4 + r"|['’]\d\d)(?!\d))?" + TIME,
    RE_FLAGS,
)
_YEAR_AFTER_MONTH = re.compile(
    r"(?:(?:[ \t]+of)?[ \t]*,?[ \t]*(?P<y>" + YEAR4 + r"|['’]\d\d)|[-/](?P<y2>\d\d))(?!\d)", RE_FLAGS
)
_YEAR_AFTER_DAY_MONTH = re.compile(
    r"(?:(?:[ \t]*,?[ \t]*|[ \t]*[-/.][ \t]*)(?P<y>" + YEAR4 + r"|['’]\d\d)|[-/](?P<y2>\d\d))(?!\d)" + TIME,
    RE_FLAGS,
)
_PREP_BEFORE_MONTH = re.compile(
    r"\b(?:in|since|during|until|till|through|thru|early|mid|late|last|next|this|of|by|before|after|from|"
    r"around|throughout|past|end[ \t]+of|beginning[ \t]+of)[ \t-]+(?:(?:early|mid|late)[ \t-]+)?$",
    RE_FLAGS,
)
_BIRTH_WORDS = ContextWords(_BIRTH_CONTEXT)
#: "per MAR", "on the MAR": the medication administration record, not March.
_MAR_RECORD_BEFORE = re.compile(r"\b(?:per|the|see|via|checked|check|reviewed|review|with|our|my)[ \t]*$",
                                RE_FLAGS)
_PAIN = re.compile(r"\bpain\b", RE_FLAGS)
_DILUTION_AFTER = re.compile(r"[ \t]*(?:dilution|titer|titre)", RE_FLAGS)
#: Exam and score words near a fraction-shaped "a/b" ("RUE 4/5, LUE 5/5", "reflexes symmetric 2/4").
_SCORE_NEAR = re.compile(
    r"\b(?:strength|motor|power|reflex(?:es)?|dtrs?|murmur|pain|score|scale|grade|apgars?|gcs|ratio|titers?|"
    r"titres?|dilution|nodes?|cores?|vision|acuity|mmse|moca|phq|gad|pulses?|rue|lue|rle|lle|bue|ble|ue|le|"
    r"grip|deltoids?|biceps|triceps|quads?|hamstrings?|df|pf|ehl|hip|knee|ankle|wrist|elbow|shoulder|sensation|"
    r"tabs?|tablets?|dose|doses|positive|negative|scored|rated|out\s+of|fraction|third|thirds|half|paresis|"
    r"hemiparesis|paraparesis|weakness|plegia|vas|nrs|eva|tonsils?|tonsillar|pupils?|lymph|gleason|ihc|criteria|"
    r"points|items|fingers?|digits?|hypertrophy|dilutions?)\b",
    RE_FLAGS,
)
_RANGE_BEFORE = re.compile(r"(?<![\d/])(?P<a>\d{1,2})/(?P<b>\d{1,2})[ \t]*(?:-|–|to|through|thru|until|till)[ \t]*$",
                           RE_FLAGS)
_ORDINAL_PRE = re.compile(r"\b(?:on|since|from|until|till|by|before|after|through|thru)[ \t]+$", RE_FLAGS)


class DateRecognizer(ClinicalRecognizer):
    """Dates in clinical formats; an attached time is part of the span; bare years and free times are not."""

    ENTITY = "DATE_TIME"
    LABEL = Label.DATE
    CONTEXT = list(_DATE_CONTEXT)
    CONTEXT_WINDOW = 36
    PATTERNS: list[Pattern] = [
        ClinicalPattern(  # 07/22/2019, 7-22-19, 22.07.2019 (m/d/y or d/m/y)
            "numeric m/d/y", r"(?<![\d/])(?<!\d\.)(?P<a>\d{1,2})(?P<s>[/.-])(?P<b>\d{1,2})(?P=s)"
            r"(?P<y>\d{4}|\d\d)(?!\d|/|\.\d)" + TIME, 0.85, context_score=0.9, kind="mdy"),
        ClinicalPattern(  # 2019-07-22, 2019/7/22, 2019-07-22T14:30:00Z
            "ISO y-m-d", r"(?<![\d/.])(?P<y>\d{4})(?P<s>[-/.])(?P<m>\d{1,2})(?P=s)(?P<d>\d{1,2})(?!\d)" + TIME,
            0.9, kind="iso"),
        ClinicalPattern(  # 20190722, 201907221430: an 8-digit number; a date only with context
            "compact yyyymmdd", r"(?<![\w.])(?:19|20)\d{6}(?:\d{4}(?:\d\d)?)?(?![\w.])", 0.25, context_score=0.85,
            kind="compact"),
        ClinicalPattern(  # the anchor for all month-name forms: July 22nd 2019, 22-Jul-19, July 2019, in July
            "month name", r"\b" + MONTH, 0.85, kind="month"),
        ClinicalPattern(  # 14 de enero de 2006, enero de 2006, 3. März 2019, 12-janvier-2006, 5 maggio: another
            # language's month with a day before it or a year after it (alone, "mars" or "Julio" is a word or a name)
            "month name (other languages)",
            r"(?<![\w.])(?P<mn>" + _FOREIGN_MONTH + r")(?!\w)"
            r"(?:[ \t]*(?:(?:de|del|di)[ \t]+|,[ \t]*|[-/][ \t]*)?(?P<y>" + YEAR4 + r")(?!\d))?",
            0.85, kind="foreign month", trigger_re=r"\b" + _FOREIGN_MONTH + r"\b"),
        ClinicalPattern(  # "am 12.04.", "vom 3.4. bis 9.4.": German day-month without a year (the period after the
            # month is the German ordinal's); a date only in German text (``german_near``), where decimals use commas
            "numeric d.m. (German)",
            r"(?<![\w.,/])(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?:[ \t](?P<y>" + YEAR4 + r"))?(?![\w/]|[.,]\d|[ \t]*\d)" + TIME,
            0.6, kind="dm German", trigger_re=r"\d\.\d{1,2}\.(?!\d)"),
        ClinicalPattern(  # 07/2019, 7-2019
            "numeric month/year", r"(?<![\d/.])(?<!\d-)(?P<m>\d{1,2})[/-](?P<y>" + YEAR4 + r")(?![\d/]|[.-]\d)",
            0.7, context_score=0.85, kind="my"),
        ClinicalPattern(  # 7/22, 07/22 @ 0800, 22/7 (day > 12)
            "numeric m/d", r"(?<![\d/.])(?<!\d[-,])(?P<a>\d{1,2})/(?P<b>\d{1,2})(?![\d/]|[.,]\d)" + TIME,
            0.5, context_score=0.85, kind="md"),
        ClinicalPattern(  # on 7-22 (hyphen: only with date context: "1-2 tabs", "3-4 days")
            "numeric m-d", r"(?<![\w/.-])(?P<a>\d{1,2})-(?P<b>\d{1,2})(?![\w/-]|\.\d)" + TIME,
            0.7, context_score=0.75, needs_context=True, kind="md-dash"),
        ClinicalPattern(  # "the 9th", "on the 3rd"
            "ordinal day", r"\bthe[ \t]+(?P<v>(?:3[01]|[12]\d|0?[1-9])" + ORD + r")\b", 0.45, kind="ordinal"),
        ClinicalPattern(  # Monday, TUESDAY, "since tues", "Thurs": a day of the week dates the note's events
            "weekday", r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:tues?|thu(?:rs?)?|weds|fri)\b\.?",
            0.6, kind="weekday", trigger_re=r"(?:day|tue|thu|weds|fri)"),
        ClinicalPattern(  # "on sat", "since Mon", "last wed": short forms that are also words, only after a cue
            "weekday short", r"\b(?:on|since|last|next|this|until|till|by|before|after)[ \t]+(?P<v>(?:mon|wed|sat|sun))"
            r"\b\.?(?![ \t]*\d)", 0.5, kind="weekday", trigger_re=r"(?:mon|wed|sat|sun)"),
        ClinicalPattern(
            "holiday", r"\b(?:christmas(?:\s+eve)?|xmas|thanksgiving|easter|new\s+year'?s(?:\s+(?:day|eve))?|"
            r"independence\s+day|(?:fourth|4th)\s+of\s+july|memorial\s+day|labor\s+day|halloween|"
            r"valentine'?s\s+day|mother'?s\s+day|father'?s\s+day|veterans\s+day|(?:mlk|martin\s+luther\s+king)"
            r"(?:\s+jr\.?)?\s+day|presidents'?\s+day|hanukkah|chanukah|passover|yom\s+kippur|rosh\s+hashanah)\b",
            0.5, kind="holiday", trigger=("christmas", "xmas", "thanksgiving", "easter", "new year", "independence",
                                          "of july", "memorial", "labor day", "halloween", "valentine", "mother",
                                          "father", "veteran", "king", "mlk", "president", "hanukkah", "chanukah",
                                          "passover", "yom kippur", "rosh hashanah")),
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        kind = pattern.kind
        if kind == "month":
            found = self._month_date(text, match)
            if found is None:
                return
            start, end, score, has_time, time_start = found
        else:
            start, end = self.span_of(match, pattern)
            has_time = bool(match.groupdict().get("time"))
            time_start = int(match.start("time")) if has_time else end
            score = pattern.score
        # A "time" followed by a unit was a quantity ("7/22 1500 mL"): keep the date, drop the "time".
        if has_time and unit_after(text, end):
            end, has_time = time_start, False
        elif kind not in ("holiday", "ordinal", "weekday") and unit_after(text, end):
            return
        groups = match.groupdict()
        result: float | None = score
        if kind == "mdy":
            result = self._score_mdy(text, start, groups, pattern.score)
        elif kind == "iso":
            result = pattern.score if _valid_day_month(int(groups["m"]), int(groups["d"])) and \
                _valid_year(groups["y"]) else None
        elif kind == "compact":
            value = match.group(0)
            if not (_valid_day_month(int(value[4:6]), int(value[6:8])) and _valid_year(value[:4])) \
                    or measure_before(text, start):
                return
        elif kind in ("md", "md-dash"):
            result = self._score_md(text, start, time_start, groups, pattern, has_time)
        elif kind == "my":
            if not 1 <= int(groups["m"]) <= 12 or measure_before(text, start) or \
                    _DILUTION_AFTER.match(text, end):
                return
        elif kind == "foreign month":  # the day before the month, if any, joins the span
            before = _FOREIGN_DAY_BEFORE.search(text, max(0, start - 10), start)
            day = int(before.group("d")) if before is not None else None
            if (day is None and groups.get("y") is None) or (day is not None and not 1 <= day <= 31):
                return
            if before is not None:
                start = int(before.start())
            if groups.get("y") is None:
                result = 0.75
        elif kind == "dm German":  # after a German date preposition one German word near will do, else two
            preposition = _GERMAN_DATE_BEFORE.search(text, max(0, start - 16), start) is not None
            if not is_day_of_month(int(groups["m"]), int(groups["d"])) or not german_near(
                    text, start, end, 1 if preposition else 2):
                return
            result = 0.85 if preposition else pattern.score
        elif kind == "ordinal":
            if not _DATE_FOLLOW_OK.match(text, end):
                return
            result = 0.7 if _ORDINAL_PRE.search(text, max(0, match.start() - 8), match.start()) else pattern.score
        if result is None:
            return
        if pattern.context_score is not None and result > 0.2 and self.context_before(text, start) is not None:
            result = max(result, pattern.context_score)
        elif pattern.needs_context and self.context_before(text, start) is None:
            return
        subtype = None
        if _BIRTH_WORDS.last_before(text, start, 30) is not None:
            subtype, result = Subtype.BIRTHDATE, max(result, 0.95)
        yield Hit(start, end, Label.DATE, subtype, result)

    @staticmethod
    def _month_date(text: str, match: Any) -> tuple[int, int, float, bool, int] | None:
        """Grow a month-name anchor into a date: (start, end, score, has_time, time_start) or None."""
        m_start, m_end = int(match.start()), int(match.end())
        token = match.group(0).rstrip(".")
        word_end = m_start + len(token)  # a period after the month ends the span only in "Jul. 22" forms
        lower_ambiguous = token.islower() and token in _AMBIGUOUS_LOWER_MONTHS
        before = _DAY_BEFORE_MONTH.search(text, max(0, m_start - 12), m_start)
        if before is not None and 1 <= int(before.group("d")) <= 31:  # 22 July 2019, 22nd of July, 22-Jul-19
            after = _YEAR_AFTER_DAY_MONTH.match(text, m_end)
            has_year = after is not None and bool(after.group("y") or after.group("y2"))
            if lower_ambiguous or (token == "MAR" and not has_year
                                   and _MAR_RECORD_BEFORE.search(text, max(0, m_start - 16), m_start)):
                return None
            if after is None:
                return int(before.start()), word_end, 0.85, False, word_end
            has_time = bool(after.group("time"))
            end = int(after.end())
            return int(before.start()), end, 0.85, has_time, int(after.start("time")) if has_time else end
        after = _DAY_AFTER_MONTH.match(text, m_end)
        if after is not None and 1 <= int(after.group("d")) <= 31:  # July 22nd, 2019 @ 14:30
            if lower_ambiguous or (token == "MAR" and not after.group("y")
                                   and _MAR_RECORD_BEFORE.search(text, max(0, m_start - 16), m_start)):
                return None
            has_time = bool(after.group("time"))
            end = int(after.end())
            return m_start, end, 0.85, has_time, int(after.start("time")) if has_time else end
        year = _YEAR_AFTER_MONTH.match(text, m_end)
        if year is not None:  # July 2019, Jul '19, Jul-19
            return None if lower_ambiguous else (m_start, int(year.end()), 0.8, False, int(year.end()))
        # A month alone ("in July", "since Dec"): Title or UPPER case, after a preposition; not "MAR", not "Jan's".
        if (token[:1].isupper() and (token[1:].islower() or token.isupper()) and token != "MAR"
                and not text.startswith("'", m_end)
                and _PREP_BEFORE_MONTH.search(text, max(0, m_start - 24), m_start) is not None):
            return m_start, word_end, 0.6, False, word_end
        return None

    @staticmethod
    def _range_from_date(text: str, start: int) -> bool:
        """True when ``start`` is the second end of a range whose first end is a non-fraction m/d ("7/2 to")."""
        m = _RANGE_BEFORE.search(text, max(0, start - 20), start)
        if m is None:
            return False
        a, b = int(m.group("a")), int(m.group("b"))
        return _valid_day_month(a, b) and a > b

    @staticmethod
    def _score_mdy(text: str, start: int, groups: dict[str, Any], base: float) -> float | None:
        a, b, year = int(groups["a"]), int(groups["b"]), groups["y"]
        if not (_valid_day_month(a, b) or _valid_day_month(b, a)):
            return None
        if len(year) == 4 and not _valid_year(year):
            return None
        sep = groups["s"]
        if sep == ".":
            return 0.7 if len(year) == 4 else 0.4
        if sep == "-" and len(year) == 2 and measure_before(text, start):
            return None
        return base if sep == "/" else base - 0.05

    def _score_md(
        self, text: str, start: int, after: int, groups: dict[str, Any], pattern: ClinicalPattern,
        has_time: bool,
    ) -> float | None:
        a, b = int(groups["a"]), int(groups["b"])
        european = False
        if not _valid_day_month(a, b):
            if pattern.kind == "md" and 13 <= a <= 31 and 1 <= b <= 12:
                european = True  # 22/7
            else:
                return None
        if measure_before(text, start) or _fraction_after(text, after):
            return None
        if pattern.kind == "md-dash":  # a range unless a date word comes first ("on 1-2 occasions": a unit)
            following = next_words(text, after, 1)
            if following and len(following[0].strip(".,;:")) == 1:
                return None
            # the date word right before it, and not a range word: "VENT BY 2-6", "TO TLC. C/O 6-9" are ranges
            near = self.context_before(text, start, window=_DASH_DATE_WINDOW)
            return None if near is None or near in _WEAK_DATE_CONTEXT or near == "from" else pattern.score
        if european:
            return None if (a, b) == (24, 7) else 0.25  # d/m without a year is rare in US notes: needs a vote
        if has_time:
            return 0.85
        # a <= b with a small denominator reads as a fraction or score ("2/3", "4/5", "8/10") when an exam or
        # score word is near: then only a date word right before it ("on 2/3", "seen 4/5") makes it a date;
        # otherwise it needs another detector's vote.
        if a <= b and b in (1, 2, 3, 4, 5, 6, 8, 9, 10, 12):
            near = self.context_before(text, start, window=14)
            if near in _WEAK_DATE_CONTEXT and self._range_from_date(text, start):
                return 0.75  # "from 7/2 to 7/9": the other end of the range is a date
            if near is not None and near not in _WEAK_DATE_CONTEXT:
                return 0.75
            if _SCORE_NEAR.search(text, max(0, start - 30), min(len(text), after + 30)):
                return 0.2
            # Recall first: redact, at the lowest score for the denominators of scores (/2 /3 /4 /5 /6 /10).
            return 0.45 if b in (8, 9, 12) else 0.35
        return pattern.score

    def context_before(self, text: str, start: int, window: int | None = None) -> str | None:
        found = super().context_before(text, start, window)
        # "from 8/10 to 2/10" is a pain trend: range words near "pain" are not date context.
        if found in ("from", "to") and _PAIN.search(text, max(0, start - 40), start + 20):
            return None
        return found
