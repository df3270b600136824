"""regex: identifier shapes for the HIPAA Safe Harbor categories.

Dates (every common clinical format, with attached times), phone/fax/pager numbers, MRNs and other IDs (by
context word and by shape), SSNs, credit cards, email, URL, IP, ZIP, street addresses, "City, ST 12345", and
ages over 89.

Recognizers are Presidio ``PatternRecognizer`` subclasses declared as data (``PATTERNS``, ``CONTEXT``, label and
subtype); the SSN, email, IP and credit-card ones inherit Presidio's predefined recognizers for their validation
(SSN invalidation, offline-TLD email check, ``ipaddress`` check, Luhn). Clinical checks look at the text AROUND a
match, which Presidio's ``validate_result`` cannot: "3/6" before "murmur" is a grade, "8/9" after "Apgar" a score,
"555-1234" followed by "mg" a range. The detector evaluates the recognizers' compiled patterns itself: Presidio's
AnalyzerEngine needs spaCy artifacts for context words and would cost ~100x the 1-2 ms per note budget. For speed,
patterns start on a cheap anchor (a digit, "@", a month name, a ZIP) and ``check`` extends the span around it.

Scores (the ensemble's default threshold for "regex" is 0.3): context-confirmed shapes 0.85-0.95, unambiguous
shapes 0.7-0.9, shape-only guesses 0.35-0.5, and ambiguous shapes that need a second detector's vote 0.2-0.25.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import regex
from presidio_analyzer import Pattern, PatternRecognizer
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    EmailRecognizer,
    IpRecognizer,
    UsSsnRecognizer,
)
from pydantic import BaseModel, ConfigDict, Field

from processors.pipeline import BuildContext, Note, register
from schemas.labels import Label, Subtype
from schemas.models import Span

logger = logging.getLogger(__name__)

SOURCE = "regex"
_FLAGS = regex.IGNORECASE | regex.MULTILINE
_CASED = regex.MULTILINE
# Small helper regexes run on short windows at one position: the stdlib engine has less per-call overhead.
_RE_FLAGS = re.IGNORECASE | re.MULTILINE
_RE_CASED = re.MULTILINE


# --------------------------------------------------------------------------------------------------------------
# Shared vocabulary (regex fragments)
# --------------------------------------------------------------------------------------------------------------

#: Month names and abbreviations, factored so the regex engine can scan quickly.
MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?"
)
#: Month tokens that are common words or abbreviations in lower case ("may", "mar" = MAR, "dec" = decreased).
_AMBIGUOUS_LOWER_MONTHS = frozenset({"may", "mar", "dec", "jan", "march", "sept"})

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

#: Units / count nouns: a number followed by one of these is a measurement, not an identifier.
_UNIT_WORDS = frozenset("""
mg mcg µg ug ng pg gm gms gram grams kg kgs lb lbs oz ml mls cc dl unit units iu meq mmol umol nmol mol mm cm km inch
inches ft mmhg cmh percent tab tabs tablet tablets cap caps capsule capsules pill pills puff puffs drop drops gtt gtts
spray sprays patch patches dose doses vial vials amp amps bag bags times hr hrs hour hours min mins minute minutes sec
secs second seconds day days wk wks week weeks mos month months yr yrs year years bpm beats breaths pts patients cells
copies episode episodes occasion occasions serving servings cup cups glasses beers drinks pack packs cigarettes steps
stairs blocks feet mile miles meters lesion lesions node nodes mosm kcal calories french fr gauge ga liter liters mph
degree degrees ui
""".split())
#: One-letter units count only when glued to the number ("3L", "5d", "10h", "2g").
_UNIT_LETTERS = frozenset("gldhmu")
_NEXT_WORD = re.compile(r"([ \t]*-?[ \t]*)(?:([^\W\d_]+)|([%°]))")
_NEXT_DIGIT = re.compile(r"[ \t]*\d")


def _unit_after(text: str, end: int) -> bool:
    """True when a unit or count noun follows ``end`` ("5 mg", "3-4 days", "2/3 tabs", "1500mL", "x 3")."""
    m = _NEXT_WORD.match(text, end)
    if m is None:
        return False
    if m.group(3):
        return True
    word = m.group(2).lower()
    if word in _UNIT_WORDS:
        return True
    if not m.group(1) and word in _UNIT_LETTERS:
        return True
    return word == "x" and _NEXT_DIGIT.match(text, m.end()) is not None


def _next_words(text: str, end: int, n: int = 2) -> list[str]:
    """The next ``n`` lower-case words after ``end`` (on the same line)."""
    line_end = text.find("\n", end, end + 40)
    return text[end:end + 40 if line_end < 0 else line_end].lower().split()[:n]


_MEASURE_TOKEN = re.compile(r"\d{1,4}(?:\.\d+)?(?P<u>[^\W\d_]+)")


def _is_measure_token(value: str) -> bool:
    """"500mg", "2L", "10units": a quantity, not an ID."""
    m = _MEASURE_TOKEN.fullmatch(value)
    return m is not None and (m.group("u").lower() in _UNIT_WORDS or m.group("u").lower() in _UNIT_LETTERS)


#: Measurement words immediately left of a number: "BP 120/80", "Apgar 8/9", "pain 8/10", "grade 3/6".
_MEASURE_WORDS = frozenset("""
bp b/p nibp abp sbp dbp map hr pulse p rr resp t temp tmax tm sat sats spo2 o2 fio2 peep ps tv vt gcs apgar apgars
grade gr strength motor power pain score scores ratio scale stage class murmur vision va acuity inr ptt k na cl co2
bun cr glu glucose hgb hb hct wbc plt a1c ldl hdl tg ast alt tsh ef lvef dose dosing titer titre dilution reflexes
dtr dtrs pulses i:e fev1 fvc lvot ga g para gravida mallampati nyha asa ecog kps rom mmse moca phq-9 phq9 gad-7 gad7
cd4 range approx approximately about ~ iop ct lot sig take takes taking give given glasgow h/h h&h nl normal ref
rue lue rle lle bue ble grip deltoid deltoids biceps triceps quads df pf ehl pugh child-pugh
""".split()) | {"blood pressure", "blood pressures", "heart rate", "gestational age"}

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


def _fraction_after(text: str, end: int) -> bool:
    """True when the words after "a/b" make it a fraction, grade or score."""
    if text.startswith("+", end):
        return True
    words = [w.strip(".,;:()") for w in _next_words(text, end)]
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
    _RE_FLAGS,
)

_STATE_ABBR = (
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY",
    "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH",
    "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY", "PR", "VI", "GU",
    "AS", "MP",
)
#: Abbreviations that are also credentials or clinical abbreviations in lists ("Smith, MD", "Cardiology, ID",
#: "NT, ND", "MRI, CT"): a state only when a ZIP follows.
_STATE_ABBR_AMBIGUOUS = frozenset({
    "MD", "PA", "MA", "OK", "HI", "ID", "CT", "OR", "IN", "MS", "CO", "PR", "ND", "AS", "GU", "VI",
})
#: Credentials after a name ("Carri Wood, MD"): never a state without a ZIP.
_CREDENTIALS = frozenset({"MD", "PA", "MA"})
#: Abbreviations that are also clinical abbreviations, but rarely after "Word, ": a state at a lower score.
_STATE_ABBR_WEAK = frozenset({"GA", "LA", "ME", "NE", "DE", "VA", "AL", "SC", "MP"})
_STATE_NAMES = (
    "Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware",
    "District of Columbia", "Florida", "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa", "Kansas",
    "Kentucky", "Louisiana", "Maine", "Maryland", "Massachusetts", "Michigan", "Minnesota", "Mississippi",
    "Missouri", "Montana", "Nebraska", "Nevada", "New Hampshire", "New Jersey", "New Mexico", "New York",
    "North Carolina", "North Dakota", "Ohio", "Oklahoma", "Oregon", "Pennsylvania", "Rhode Island",
    "South Carolina", "South Dakota", "Tennessee", "Texas", "Utah", "Vermont", "Virginia", "Washington",
    "West Virginia", "Wisconsin", "Wyoming", "Puerto Rico",
)


def _title_and_upper(words: Iterable[str]) -> str:
    """Case-sensitive alternation of each word in Title and UPPER case (for patterns compiled without I)."""
    forms: list[str] = []
    for w in sorted(set(words), key=len, reverse=True):
        for form in (w[:1].upper() + w[1:], w.upper()):
            if regex.escape(form) not in forms:
                forms.append(regex.escape(form))
    return "(?:" + "|".join(forms) + ")"


_STATE_NAME_RE = r"(?:" + "|".join(n.replace(" ", r"[ \t]+") for n in _STATE_NAMES) + r")"
# A city word: Title case ("Boston", "O'Fallon", "Winston-Salem") or ALL CAPS in nursing style.
_CITY_WORD = r"(?:St\.|Ft\.|Mt\.|[A-Z][a-z][A-Za-z'-]*|[A-Z]{3,})"
_CITY = _CITY_WORD + r"(?:[ \t]+(?:" + _CITY_WORD + r"|de|la|del|du)){0,3}"
_CITY_STOP = frozenset({
    "in", "at", "from", "to", "the", "of", "near", "lives", "living", "resides", "residing", "moved", "visiting",
    "born", "home", "and", "or", "pt", "patient", "address", "resident", "apt", "suite", "unit", "box",
    "seen", "called", "per", "mailing", "located", "dr", "mr", "mrs", "ms", "is", "was",
})
_STREET_SUFFIX = (
    "Street", "St", "Avenue", "Ave", "Av", "Road", "Rd", "Boulevard", "Blvd", "Drive", "Dr", "Lane", "Ln", "Way",
    "Court", "Ct", "Place", "Pl", "Terrace", "Ter", "Parkway", "Pkwy", "Highway", "Hwy", "Circle", "Cir",
    "Square", "Sq", "Trail", "Trl", "Plaza", "Plz", "Alley", "Aly", "Row", "Pike", "Loop", "Crescent", "Cres",
    "Expressway", "Expy", "Freeway", "Fwy", "Turnpike", "Tpke", "Causeway", "Broadway", "Heights", "Hts",
    "Commons", "Crossing", "Xing", "Gardens", "Grove", "Hollow", "Landing", "Meadows", "Ridge", "Cove",
    "Glen", "Mews", "Bend", "Manor",
)
_STREET_SUFFIX_SET = frozenset(s.lower() for s in _STREET_SUFFIX)
_UNIT_WORD = _title_and_upper(("Apt", "Apartment", "Unit", "Suite", "Ste", "Rm", "Room", "Fl", "Floor", "Bldg",
                               "Building", "Lot", "Trlr", "Dept"))
# Words that never belong to a street name (ALL-CAPS nursing text: "GIVEN 2 TABS BY MOUTH DR ...").
_NOT_STREET_WORD = (
    r"(?!(?:BY|TO|OF|IN|ON|AT|AND|OR|FOR|THE|WITH|PER|TABS?|MG|ML|PO|IV|IM|SQ|PRN|BID|TID|QID|QD|QHS|HRS?|"
    r"DAYS?|WEEKS?|TIMES|UNITS?|By|To|Of|In|On|At|And|Or|For|The|With|Per|Tabs?|Times|Days?|Weeks?|Units?)\b)"
)
_STREET_NAME_WORD = r"(?:" + _NOT_STREET_WORD + r"[A-Z][A-Za-z'.-]*|\d{1,3}(?:st|nd|rd|th|ST|ND|RD|TH))"
_DIRECTION = r"(?:N|S|E|W|NE|NW|SE|SW|North|South|East|West|NORTH|SOUTH|EAST|WEST)\.?"


# --------------------------------------------------------------------------------------------------------------
# Recognizer machinery
# --------------------------------------------------------------------------------------------------------------


_WORD = re.compile(r"[a-z0-9~]+(?:[/'.:&-][a-z0-9]+)*\.?|#")


class ContextWords:
    """Context phrases (lower case, single spaces) looked up among the words left of a position: a few set
    lookups, where a regex alternation of ~100 words would be tried at every character of the window."""

    def __init__(self, phrases: Iterable[str]) -> None:
        self.phrases = frozenset(phrases)
        #: last word -> the multi-word phrases ending with it, longest first
        self.multi: dict[str, list[tuple[int, str]]] = {}
        for p in sorted(self.phrases, key=lambda x: -x.count(" ")):
            if " " in p:
                self.multi.setdefault(p.rsplit(" ", 1)[1], []).append((p.count(" ") + 1, p))

    def last_before(
        self, text: str, start: int, window: int, skip: frozenset[str] = frozenset()
    ) -> str | None:
        """The context phrase closest to the left of ``start`` within ``window`` chars (ignoring the phrases in
        ``skip``), or None."""
        lo = max(0, start - window)
        while lo > 0 and text[lo - 1].isalnum():
            lo -= 1  # never start inside a word ("admissi|on")
        words: list[str] = _WORD.findall(text[lo:start].lower())
        for i in range(len(words) - 1, -1, -1):
            word = words[i]
            if word[-1] == "." and word not in self.phrases:
                word = word[:-1]
            for n, phrase in self.multi.get(word, ()):
                if i + 1 >= n and " ".join(words[i + 1 - n:i]) + " " + word == phrase and phrase not in skip:
                    return phrase
            if word in self.phrases and word not in skip:
                return word
        return None


class ClinicalPattern(Pattern):
    """A Presidio ``Pattern`` plus what a clinical recognizer needs.

    ``group``: the named group that becomes the span (default: group "v" when the regex has one, else the whole
    match), so context words can be part of the regex without being part of the span. ``context_score``: the
    score when a CONTEXT word is found left of the match; ``needs_context``: drop the match without one.
    ``kind``: a tag the recognizer's ``check`` dispatches on. ``trigger``: lower-case substrings one of which must
    occur in the text for the pattern to run at all; ``trigger_re``: a regex that must match the lower-cased
    text (keep it literal-led: these are cheap skips of whole scans). ``flags``: overrides the recognizer's flags.
    """

    def __init__(
        self, name: str, pattern: str, score: float, *, context_score: float | None = None,
        needs_context: bool = False, kind: str = "", group: str | None = None,
        trigger: tuple[str, ...] = (), trigger_re: str | None = None, flags: int | None = None,
    ) -> None:
        super().__init__(name, pattern, score)
        self.context_score = context_score
        self.needs_context = needs_context
        self.kind = kind
        self.group = group
        self.trigger = trigger
        self.trigger_re = re.compile(trigger_re) if trigger_re else None
        self.flags = flags


@dataclass(frozen=True, slots=True)
class Hit:
    """A raw detection before it becomes a ``Span``."""

    start: int
    end: int
    label: Label
    subtype: Subtype | None
    score: float


class ClinicalRecognizer(PatternRecognizer):
    """A Presidio ``PatternRecognizer`` mapped to our label/subtype, with cheap context scoring and clinical
    checks that may look at the text around a match. Subclasses are mostly declared data."""

    ENTITY: ClassVar[str] = "PHI"
    LABEL: ClassVar[Label] = Label.OTHER
    SUBTYPE: ClassVar[Subtype | None] = None
    PATTERNS: list[Pattern] = []
    #: Context words/phrases (lower case) looked up in the CONTEXT_WINDOW chars left of a match.
    CONTEXT: list[str] = []
    CONTEXT_WINDOW: ClassVar[int] = 32
    FLAGS: ClassVar[int] = _FLAGS

    def __init__(self) -> None:
        # Explicit base call: some subclasses also inherit a Presidio predefined recognizer (for its
        # validate_result / invalidate_result) whose __init__ takes other arguments.
        PatternRecognizer.__init__(
            self, supported_entity=self.ENTITY, name=type(self).__name__, patterns=list(self.PATTERNS),
            context=list(self.CONTEXT), global_regex_flags=self.FLAGS,
        )
        rules = [p if isinstance(p, ClinicalPattern) else ClinicalPattern(p.name, p.regex, p.score)
                 for p in self.PATTERNS]
        self._compiled = [(p, regex.compile(p.regex, self.FLAGS if p.flags is None else p.flags)) for p in rules]
        self._context = ContextWords(self.CONTEXT) if self.CONTEXT else None

    def find(self, text: str, lower: str | None = None) -> Iterator[Hit]:
        """All hits of this recognizer in ``text`` (``lower``: ``text.lower()``, shared across recognizers)."""
        lower = _lower(text) if lower is None else lower
        for pattern, compiled in self._compiled:
            if pattern.trigger and not any(t in lower for t in pattern.trigger):
                continue
            if pattern.trigger_re is not None and pattern.trigger_re.search(lower) is None:
                continue
            for match in compiled.finditer(text):
                yield from self.check(text, match, pattern)

    # -- hooks -------------------------------------------------------------------------------------------------

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        """Turn a regex match into hits. Default: Presidio's validate/invalidate hooks plus context scoring."""
        start, end = self.span_of(match, pattern)
        if end <= start:
            return
        score = self.presidio_score(text[start:end], pattern.score)
        if score is None:
            return
        context = self.context_before(text, start)
        if context is not None:
            score = max(score, pattern.context_score or score)
        elif pattern.needs_context:
            return
        yield Hit(start, end, self.LABEL, self.subtype_for(context), score)

    def presidio_score(self, value: str, score: float) -> float | None:
        """Presidio's ``validate_result`` (True: sure, False: drop) and ``invalidate_result`` (drop)."""
        valid = self.validate_result(value)
        if valid is False or self.invalidate_result(value):
            return None
        return max(score, 0.9) if valid else score

    def subtype_for(self, context: str | None) -> Subtype | None:
        return self.SUBTYPE

    # -- helpers -----------------------------------------------------------------------------------------------

    @staticmethod
    def span_of(match: Any, pattern: ClinicalPattern) -> tuple[int, int]:
        group = pattern.group or ("v" if "v" in match.re.groupindex else None)
        if group is None:
            return int(match.start()), int(match.end())
        return int(match.start(group)), int(match.end(group))

    def context_before(self, text: str, start: int, window: int | None = None) -> str | None:
        """The context word closest to the left of ``start`` (lower case), or None."""
        if self._context is None:
            return None
        return self._context.last_before(text, start, window or self.CONTEXT_WINDOW)


def _measure_before(text: str, start: int, window: int = 24) -> bool:
    """True when a measurement word sits right before ``start`` ("BP 120/80", "pain: 8/10", "Apgars 8/9")."""
    seg = text[max(0, start - window):start].lower().rstrip(" \t:=#")
    for filler in (" was", " is", " at"):
        if seg.endswith(filler):
            seg = seg[: -len(filler)].rstrip(" \t:=#")
    if not seg or seg[-1] in "\r\n":
        return False
    words = seg.split()[-2:]
    last = words[-1].lstrip("([{,;")
    return last in _MEASURE_WORDS or (len(words) == 2 and " ".join(words) in _MEASURE_WORDS)


def _valid_day_month(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31


def _valid_year(year: str) -> bool:
    """1900-2039: later "years" are titers and counts ("1/2048")."""
    return 1900 <= int(year) <= 2039


# --------------------------------------------------------------------------------------------------------------
# Dates
# --------------------------------------------------------------------------------------------------------------

_DAY_BEFORE_MONTH = re.compile(
    r"(?<![\w/.])(?P<d>\d{1,2})" + ORD + r"?(?:[ \t]+of[ \t]+|[ \t]*[-/.]?[ \t]*)$", _RE_FLAGS
)
_DAY_AFTER_MONTH = re.compile(
    r"[ \t]*[-/]?[ \t]*(?P<d>\d{1,2})" + ORD + r"?\b(?![:.]\d)(?:[ \t]*[-–][ \t]*\d{1,2}" + ORD + r"?\b)?"
    r"(?:[ \t]*,?[ \t]*(?P<y>" + YEAR4 + r"|['’]\d\d)(?!\d))?" + TIME,
    _RE_FLAGS,
)
_YEAR_AFTER_MONTH = re.compile(
    r"(?:(?:[ \t]+of)?[ \t]*,?[ \t]*(?P<y>" + YEAR4 + r"|['’]\d\d)|[-/](?P<y2>\d\d))(?!\d)", _RE_FLAGS
)
_YEAR_AFTER_DAY_MONTH = re.compile(
    r"(?:(?:[ \t]*,?[ \t]*|[ \t]*[-/.][ \t]*)(?P<y>" + YEAR4 + r"|['’]\d\d)|[-/](?P<y2>\d\d))(?!\d)" + TIME,
    _RE_FLAGS,
)
_PREP_BEFORE_MONTH = re.compile(
    r"\b(?:in|since|during|until|till|through|thru|early|mid|late|last|next|this|of|by|before|after|from|"
    r"around|throughout|past|end[ \t]+of|beginning[ \t]+of)[ \t-]+(?:(?:early|mid|late)[ \t-]+)?$",
    _RE_FLAGS,
)
_BIRTH_WORDS = ContextWords(_BIRTH_CONTEXT)
#: "per MAR", "on the MAR": the medication administration record, not March.
_MAR_RECORD_BEFORE = re.compile(r"\b(?:per|the|see|via|checked|check|reviewed|review|with|our|my)[ \t]*$",
                                _RE_FLAGS)
_PAIN = re.compile(r"\bpain\b", _RE_FLAGS)
_DILUTION_AFTER = re.compile(r"[ \t]*(?:dilution|titer|titre)", _RE_FLAGS)
#: Exam and score words near a fraction-shaped "a/b" ("RUE 4/5, LUE 5/5", "reflexes symmetric 2/4").
_SCORE_NEAR = re.compile(
    r"\b(?:strength|motor|power|reflex(?:es)?|dtrs?|murmur|pain|score|scale|grade|apgars?|gcs|ratio|titers?|"
    r"titres?|dilution|nodes?|cores?|vision|acuity|mmse|moca|phq|gad|pulses?|rue|lue|rle|lle|bue|ble|ue|le|"
    r"grip|deltoids?|biceps|triceps|quads?|hamstrings?|df|pf|ehl|hip|knee|ankle|wrist|elbow|shoulder|sensation|"
    r"tabs?|tablets?|dose|doses|positive|negative|scored|rated|out\s+of|fraction|third|thirds|half|paresis|"
    r"hemiparesis|paraparesis|weakness|plegia|vas|nrs|eva|tonsils?|tonsillar|pupils?|lymph|gleason|ihc|criteria|"
    r"points|items|fingers?|digits?|hypertrophy|dilutions?)\b",
    _RE_FLAGS,
)
_RANGE_BEFORE = re.compile(r"(?<![\d/])(?P<a>\d{1,2})/(?P<b>\d{1,2})[ \t]*(?:-|–|to|through|thru|until|till)[ \t]*$",
                           _RE_FLAGS)
_ORDINAL_PRE = re.compile(r"\b(?:on|since|from|until|till|by|before|after|through|thru)[ \t]+$", _RE_FLAGS)


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
        if has_time and _unit_after(text, end):
            end, has_time = time_start, False
        elif kind not in ("holiday", "ordinal", "weekday") and _unit_after(text, end):
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
                    or _measure_before(text, start):
                return
        elif kind in ("md", "md-dash"):
            result = self._score_md(text, start, time_start, groups, pattern, has_time)
        elif kind == "my":
            if not 1 <= int(groups["m"]) <= 12 or _measure_before(text, start) or \
                    _DILUTION_AFTER.match(text, end):
                return
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
        if sep == "-" and len(year) == 2 and _measure_before(text, start):
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
        if _measure_before(text, start) or _fraction_after(text, after):
            return None
        if pattern.kind == "md-dash":  # a range unless a date word comes first ("on 1-2 occasions": a unit)
            following = _next_words(text, after, 1)
            return None if following and len(following[0].strip(".,;:")) == 1 else pattern.score
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


# --------------------------------------------------------------------------------------------------------------
# Ages over 89
# --------------------------------------------------------------------------------------------------------------

_VITALS_BEFORE = re.compile(
    r"\b(?:t|temp|temperature|tmax|tm|tc|febrile|fever|afebrile|hr|pulse|p|rr|sat|sats|spo2|o2|bp|wt|weight|"
    r"degrees?|glucose|bs|fsbs|bg|ra|room\s+air)\b[^.;\n]{0,12}$",
    _RE_FLAGS,
)
_AFTER_SEX_NOT_AGE = re.compile(
    r"[ \t]*(?:°|deg|degrees|orally|oral|axillary|rectal|tympanic|temporal|po\b)", _RE_FLAGS
)


_PACK_BEFORE = re.compile(r"\bpack[ \t-]*$", _RE_FLAGS)


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
            "age + sex", r"(?<![\w.,/])(?P<v>(?:9|1[0-2])\d)[ \t]?(?:M|F)(?![\w°'])", 0.75, kind="sex", flags=_CASED),
        ClinicalPattern(
            "in her 90s", r"\bin[ \t]+(?:his|her|their|the)[ \t]+(?:(?:early|mid|late)[ \t-]*)?"
            r"(?P<v>(?:9|1[01])0['’]?s|nineties)\b", 0.7, kind="decade", trigger=("0s", "0's", "0’s", "nineties")),
        ClinicalPattern(
            "written age", r"\b(?P<v>(?:ninety|one[ \t]+hundred(?:[ \t]+and)?)(?:[ \t-]+(?:one|two|three|four|five|"
            r"six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|"
            r"twenty))?)[ \t-]+(?:years?[ \t-]+old|y/?o\b|yo\b)", 0.85, kind="written",
            trigger=("ninety", "hundred")),
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
        yield Hit(start, end, Label.AGE, None, pattern.score)


# --------------------------------------------------------------------------------------------------------------
# Phone, fax, pager
# --------------------------------------------------------------------------------------------------------------

_PHONE_TAIL = r"(?:[ \t]*(?:x|ext\.?|extension)[ \t]*\d{1,6})?"
_PHONE_END = r"(?![\w-]|\.\d)"
_PHONE_PREFIX = re.compile(r"(?<![\w.+-])(?:\+?1[ \t.-]?|\+1[ \t]*)$")


_DIGIT_BEFORE = re.compile(r"\d[ \t.-]*$")
_LABEL_BEFORE = re.compile(r"(?:\b([chwmofp])\b\)?|(#)|\b(no)\.?|\b(ph)|\b(at))[ \t]*[:.)]?[ \t]*$", _RE_FLAGS)
_RESULT_BEFORE = re.compile(r"(?:\d|%|/[a-z]{1,3}|\b(?:ref|range|normal|nl))[ \t]*$", _RE_FLAGS)
_ADJACENT_ONLY = frozenset({"c", "h", "w", "m", "o", "f", "p", "#", "no", "ph", "at"})
_CODE_PREFIX_BEFORE = re.compile(r"\b(?:omim|mim|pmid|doi)[ \t:#]*$", _RE_FLAGS)
#: Context words that are about telephones (for the any-grouping pattern, which needs one).
_PHONE_WORDS = frozenset("""
phone ph tel telephone tele cell cellphone mobile mob call called calls contact reach reached number pager pgr
beeper fax facsimile hotline voicemail vm dial callback messages answering desk""".split())


class PhoneRecognizer(ClinicalRecognizer):
    """Phone / fax / pager numbers (NANP, international with +, 7-digit, extensions, internal pagers)."""

    ENTITY = "PHONE_NUMBER"
    LABEL = Label.PHONE
    CONTEXT = list("""
phone ph tel telephone tele cell cellphone mobile mob home work office call called calls contact reach reached number
no # pager page paged pgr beeper beep fax facsimile ext extension hotline voicemail vm text txt dial line callback
messages answering desk at c h w m o f p""".split())
    CONTEXT_WINDOW = 28
    PATTERNS: list[Pattern] = [
        ClinicalPattern(  # (617) 555-1234
            "(NNN) NNN-NNNN", r"\(\d{3}\)[ \t]*\d{3}[ \t.-]?\d{4}" + _PHONE_TAIL + _PHONE_END, 0.85,
            context_score=0.95, kind="nanp"),
        ClinicalPattern(  # 617-555-1234, 617.555.1234, 617 555 1234 (score by separators in check)
            "NNN-NNN-NNNN", r"(?<![\w.+/])\d{3}(?P<s1>[ \t.-])\d{3}(?P<s2>[ \t.-])\d{4}" + _PHONE_TAIL
            + _PHONE_END, 0.8, context_score=0.95, kind="nanp"),
        ClinicalPattern(
            "international", r"(?<![\w+])\+\d{1,3}[ \t.-]?(?:\(\d{1,4}\)|\d{1,4})(?:[ \t.-]?\d{2,4}){2,4}"
            + _PHONE_TAIL + _PHONE_END, 0.7, context_score=0.9, trigger=("+",), kind="intl"),
        ClinicalPattern(  # "Mobile: 0496 46 46 70", "call me on (64) 3591-3246": any grouping, phone word required
            "grouped digits", r"(?<![\w.+/-])(?:\(\d{1,4}\)[ \t]?)?\d{2,5}(?:[ \t.-]\d{2,5}){1,4}" + _PHONE_END,
            0.2, context_score=0.85, needs_context=True, kind="grouped"),
        ClinicalPattern(
            "10 digits", r"(?<![\w.+/-])\d{10,11}" + _PHONE_END, 0.2, context_score=0.85, needs_context=True,
            kind="ten"),
        ClinicalPattern(
            "NNN-NNNN", r"(?<![\w.+/-])[2-9]\d{2}[.-]\d{4}" + _PHONE_TAIL + _PHONE_END, 0.35, context_score=0.85,
            kind="seven"),
        ClinicalPattern(
            "extension", r"\b(?:ext\.?|extension)[ \t]*(?P<v>\d{2,6})\b", 0.8, kind="ext"),
        ClinicalPattern(
            "pager", r"\b(?:pager|pgr|beeper|beep)[ \t]*(?:#|no\.?|number|num)?[ \t]*[:#]?[ \t]*"
            r"(?P<v>\d[\d-]{2,10}\d)(?![\w-])", 0.9, kind="pager", trigger=("pager", "pgr", "beep")),
        ClinicalPattern(  # "p03046", "P#6952": pager shorthand (never "P 88", a pulse)
            "p#", r"\bp(?:#[ \t]*|(?=\d{4,6}\b))(?P<v>\d{4,6})\b", 0.75, kind="pager"),
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        start, end = self.span_of(match, pattern)
        kind = pattern.kind
        if kind == "pager":
            yield Hit(start, end, Label.PHONE, Subtype.PAGER, pattern.score)
            return
        context = self.context_before(text, start)
        if kind == "ext":
            if not _unit_after(text, end):
                yield Hit(start, end, Label.PHONE, self.subtype_for(context), pattern.score)
            return
        # A formatted NANP number ("212-555-0187") is a phone even after a measurement word ("ref", "p"):
        # only the ambiguous shapes (7 digits, bare digit runs, loose groupings) yield to one.
        if context is None and (_unit_after(text, end) or (kind != "nanp" and _measure_before(text, start))):
            return
        digits = sum(c.isdigit() for c in text[start:end])
        if kind == "ten" and digits == 11 and text[start] != "1":
            return
        if kind in ("intl", "grouped") and not 7 + (kind == "intl") <= digits <= 15:
            return
        if kind == "intl" and _CODE_PREFIX_BEFORE.search(text, max(0, start - 8), start):
            return  # "OMIM +603967"
        if kind == "grouped" and context not in _PHONE_WORDS:
            return
        score = pattern.score
        if kind == "nanp":
            prefix = _PHONE_PREFIX.search(text, max(0, start - 4), start)
            if prefix is not None:
                start = int(prefix.start())
            elif start > 0 and text[start - 1] == "-":
                return  # the tail of a longer dash-separated number
            if "s1" in match.re.groupindex and (match.group("s1") != match.group("s2") or match.group("s1") in " \t"):
                score = 0.45  # "617 555 1234" / mixed separators: plausible, not certain
        if context is not None:
            score = max(score, pattern.context_score or score)
        elif pattern.needs_context:
            return
        if kind == "seven" and context is None:
            if _DIGIT_BEFORE.search(text, max(0, start - 4), start):
                return  # the tail of a longer number sequence
            if text[start - 1:start] == "(" and text[end:end + 1] == ")" and _RESULT_BEFORE.search(
                    text, max(0, start - 16), start - 1):
                score = 0.2  # "588 ng/dl (270-1734)": a reference range
        yield Hit(start, end, Label.PHONE, self.subtype_for(context), score)

    def subtype_for(self, context: str | None) -> Subtype | None:
        if context in ("fax", "facsimile", "f"):
            return Subtype.FAX
        if context in ("pager", "page", "paged", "pgr", "beeper", "beep", "p"):
            return Subtype.PAGER
        return None

    def context_before(self, text: str, start: int, window: int | None = None) -> str | None:
        # Single letters ("c: 555-1234", "(h)"), "#", "no", "ph" (also pH) and "at" count only right before it.
        label = _LABEL_BEFORE.search(text, max(0, start - 6), start)
        if label is not None:
            return next(g for g in label.groups() if g).lower()
        if self._context is None:
            return None
        return self._context.last_before(text, start, window or self.CONTEXT_WINDOW, _ADJACENT_ONLY)


# --------------------------------------------------------------------------------------------------------------
# IDs: by context word, by shape; SSN; credit cards
# --------------------------------------------------------------------------------------------------------------

#: ID context keywords: (lower-case keywords, subtype, strong, needs a marker). A strong keyword accepts short
#: tokens ("MRN 123"); a weak one needs 4+ characters with 3+ digits. Keywords that need a marker only count
#: when "#", "no", "number" or "id" follows ("chart #", "order no.", "case number").
_ID_KEYWORD_TABLE: tuple[tuple[str, Subtype | None, bool, bool], ...] = (
    ("license plate|plate|vin|vehicle id|vehicle identification number", Subtype.VEHICLE, True, False),
    ("mrn|medical record|medical records|med rec|patient id|pt id|pid|empi|mpi|medical record number",
     Subtype.MRN, True, False),
    ("mr|hospital|unit|chart|record|hosp", Subtype.MRN, True, True),
    ("acct|account|csn|fin|har|encounter|claim|invoice|billing", Subtype.ACCOUNT, True, False),
    ("enc|visit", Subtype.ACCOUNT, True, True),
    ("policy|member|subscriber|medicaid|medicare|mbi|hicn|beneficiary|payer id|member id|insurance id",
     Subtype.HEALTHPLAN, True, False),
    ("insurance|group|plan", Subtype.HEALTHPLAN, True, True),
    ("license|licence|lic|dea|npi|upin|ein|driver's license|drivers license|driver license|certificate|tax id",
     Subtype.LICENSE, True, False),
    ("dl|cert", Subtype.LICENSE, True, True),
    ("serial|s/n|sn|udi|implant id|device id|serial number", Subtype.DEVICE, True, False),
    ("device", Subtype.DEVICE, True, True),
    ("model|lot|catalog", Subtype.DEVICE, False, False),
    ("accession|specimen|requisition|specimen id|accession number", None, True, False),
    ("acc|spec|req", None, True, True),
    ("id|identifier|tracking|confirmation", None, False, False),
    ("sample|order|case|ref|reference|file", None, False, True),
)
#: Keywords that are IDs only in upper case ("MR #" vs "Mr.", "FIN" vs "fin", "SN", "DL").
_ID_KEYWORDS_UPPER = frozenset({"mr", "vin", "csn", "fin", "har", "mbi", "hicn", "dea", "npi", "upin", "ein", "dl",
                                "sn", "udi", "pid", "empi", "mpi"})
_ID_TOKEN = r"(?P<v>(?=[a-z0-9-]*\d)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?![\w-]|\.\d)"
_ID_TAIL = re.compile(
    r"(?P<sep>(?:[ \t]*(?:[#:=-]|(?:no\.?|num(?:ber)?\.?|id\.?|is)(?![a-z])))*)[ \t]*" + _ID_TOKEN, _RE_FLAGS
)
_ID_MARKER = re.compile(r"#|no|num|id", _RE_FLAGS)


@functools.cache
def _id_keyword_automaton() -> Any:
    """Aho-Corasick automaton over the ID keywords: one pass instead of a ~100-way regex alternation."""
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for words, subtype, strong, marker in _ID_KEYWORD_TABLE:
        for word in words.split("|"):
            automaton.add_word(word, (len(word), subtype, strong, marker))
    automaton.make_automaton()
    return automaton


_YEAR_ONLY = re.compile(r"(?:19|20)\d\d")
#: Gene variants that look like codes: nucleotide "G20210A", protein "V600E".
_MUTATION = re.compile(r"[ACGTU]\d+[ACGTU]|[A-Z]\d{1,4}[A-Z]")
#: Prefixes of non-patient codes that look like IDs (trials, dbSNP, PubMed, gene/protein accessions).
_CODE_PREFIX = re.compile(r"(?:NCT|RS|PMID|PMC|ISRCTN|NM|NP|NC|NR|XM|ENSG|ENST|HGNC|OMIM|MIM|ICD|CPT)\d", _RE_FLAGS)


def _looks_like_phone_or_date(value: str) -> bool:
    """Shapes other recognizers own (SSN 3-2-4, phone 3-3-4, dates): the generic digit-group ID skips them."""
    lengths = tuple(len(p) for p in value.split("-"))
    return lengths in ((3, 2, 4), (3, 3, 4), (4, 2, 2), (2, 2, 4), (1, 2, 4), (2, 1, 4), (2, 2, 2), (1, 1, 4),
                       (1, 2, 2), (2, 1, 2), (1, 1, 2))


class IdRecognizer(ClinicalRecognizer):
    """MRN / account / health plan / license / device / vehicle / other IDs after a context word, and
    identifier shapes without one (7+ digit numbers, letter+digit codes) at a lower score."""

    ENTITY = "ID"
    LABEL = Label.ID
    PATTERNS: list[Pattern] = [
        ClinicalPattern("# id", r"(?<![\w#&])#[ \t]*" + _ID_TOKEN, 0.75, kind="hash", trigger=("#",)),
        ClinicalPattern("long number", r"(?<![\w.,#/:-])\d{7,}(?![\w-]|[.,]\d)", 0.4, kind="shape"),
        ClinicalPattern(  # A1234567, AB-123-4567, S19-12345, 8F3K99217
            "letters + digits", r"(?<![\w.-])(?=[A-Z0-9-]*\d)(?=[A-Z0-9-]*[A-Z])[A-Z0-9][A-Z0-9-]{4,33}(?![\w-])",
            0.4, kind="code", flags=_CASED),
        ClinicalPattern(
            "digit groups", r"(?<![\w.-])\d{2,6}-\d{2,6}-\d{2,6}(?:-\d{1,6})?(?![\w-]|\.\d)", 0.35, kind="groups"),
    ]

    def find(self, text: str, lower: str | None = None) -> Iterator[Hit]:
        lower = _lower(text) if lower is None else lower
        yield from self._keyword_ids(text, lower)
        yield from super().find(text, lower)

    def _keyword_ids(self, text: str, lower: str) -> Iterator[Hit]:
        """IDs right after a context keyword ("MRN: 1234567", "acct # A-99812", "Medicare ID 1EG4TE5MK73")."""
        n = len(text)
        for last, (length, subtype, strong, needs_marker) in _id_keyword_automaton().iter(lower):
            kw_start, kw_end = last + 1 - length, last + 1
            if (kw_start > 0 and lower[kw_start - 1].isalnum()) or (kw_end < n and lower[kw_end].isalnum()):
                continue
            if lower[kw_start:kw_end] in _ID_KEYWORDS_UPPER and not text[kw_start:kw_end].isupper():
                continue
            tail = _ID_TAIL.match(text, kw_end)
            if tail is None or (needs_marker and not _ID_MARKER.search(tail.group("sep"))):
                continue
            hit = self._token_hit(text, tail.start("v"), tail.end("v"), subtype, strong, min_len=4)
            if hit is not None:
                yield hit

    @staticmethod
    def _token_hit(
        text: str, start: int, end: int, subtype: Subtype | None, strong: bool, min_len: int
    ) -> Hit | None:
        value = text[start:end]
        if _is_measure_token(value) or _unit_after(text, end) or _YEAR_ONLY.fullmatch(value):
            return None
        if strong:
            if len(value) < 3:
                return None
        elif len(value) < min_len or sum(c.isdigit() for c in value) < 3:
            return None
        return Hit(start, end, Label.ID, subtype, 0.9 if strong else 0.75)

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        start, end = self.span_of(match, pattern)
        value = text[start:end]
        kind = pattern.kind
        if kind == "hash":
            hit = self._token_hit(text, start, end, None, False, min_len=5)
            if hit is not None:
                yield hit
            return
        if _CODE_PREFIX.match(value) or _unit_after(text, end):
            return
        if kind == "code" and not self._code_shape(value):
            return
        if kind == "groups" and (_measure_before(text, start) or _looks_like_phone_or_date(value)):
            return
        yield Hit(start, end, Label.ID, None, pattern.score)

    @staticmethod
    def _code_shape(value: str) -> bool:
        """Letter+digit codes that look like record numbers, not gene names or lab codes ("CYP2D6", "T2N0M0")."""
        if _is_measure_token(value) or _MUTATION.fullmatch(value):
            return False
        digits = sum(c.isdigit() for c in value)
        letters = sum(c.isalpha() for c in value)
        if "-" in value:
            groups = value.split("-")
            return (digits >= 5 and all(groups) and value[0].isalpha()
                    and any(g.isdigit() and len(g) >= 3 for g in groups))
        if value[0].isalpha():
            lead = len(value) - len(value.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
            if lead <= 3 and value[lead:].isdigit():
                return len(value) - lead >= 5  # A1234567, MRN12345
        return len(value) >= 6 and digits >= 4 and letters >= 1


class SsnRecognizer(ClinicalRecognizer, UsSsnRecognizer):
    """SSNs (ID/SSN). Presidio's invalidation (000/666 area, placeholder numbers) lowers the score instead of
    dropping the match: a placeholder-looking SSN in a note is still redacted."""

    ENTITY = "US_SSN"
    LABEL = Label.ID
    SUBTYPE = Subtype.SSN
    CONTEXT = ["ssn", "ss", "ss#", "social security", "soc sec", "social", "ssn#"]
    PATTERNS: list[Pattern] = [
        ClinicalPattern("NNN-NN-NNNN", r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])", 0.85, context_score=0.95),
        ClinicalPattern("NNN NN NNNN", r"(?<![\w.-])\d{3}(?P<s>[ .])\d{2}(?P=s)\d{4}(?![\w-]|\.\d)", 0.5,
                        context_score=0.9),
        ClinicalPattern("9 digits", r"(?<![\w.-])\d{9}(?![\w-]|\.\d)", 0.2, context_score=0.9, needs_context=True,
                        trigger=("ssn", "ss#", "ss #", "social", "soc sec")),
        ClinicalPattern("masked", r"(?<![\w*-])(?:\*{3}|[xX]{3}|#{3})-?(?:\*{2}|[xX]{2}|#{2})-?\d{4}(?![\w-])", 0.8,
                        trigger=("***", "xxx", "###")),
    ]

    def presidio_score(self, value: str, score: float) -> float | None:
        if not value[:3].isdigit():
            return score  # masked form: Presidio's digit checks do not apply
        return 0.5 if self.invalidate_result(value) else score


class CreditCardIdRecognizer(ClinicalRecognizer, CreditCardRecognizer):
    """Credit card numbers (an account number under Safe Harbor): Presidio's pattern and Luhn check."""

    ENTITY = "CREDIT_CARD"
    LABEL = Label.ID
    SUBTYPE = Subtype.ACCOUNT
    replacement_pairs: list[tuple[str, str]] = [("-", ""), (" ", "")]  # Presidio's, for the Luhn check
    CONTEXT = ["credit", "card", "visa", "mastercard", "cc", "amex", "discover", "jcb", "diners", "maestro"]
    PATTERNS: list[Pattern] = [
        ClinicalPattern(
            "credit card", r"(?<![\w-])(?!1\d{12}(?!\d))(?:4\d{3}|5[0-5]\d{2}|6\d{3}|1\d{3}|3\d{3})[- ]?\d{3,4}[- ]?"
            r"\d{3,4}[- ]?\d{3,5}(?![\w-])", 0.5, context_score=0.95),
    ]

    def presidio_score(self, value: str, score: float) -> float | None:
        return 0.9 if self.validate_result(value) else None


# --------------------------------------------------------------------------------------------------------------
# Email, URL, IP
# --------------------------------------------------------------------------------------------------------------


@functools.cache
def _tld_extractor() -> Any:
    """tldextract with its bundled suffix list: the default extractor fetches the list from the network."""
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@functools.lru_cache(maxsize=4096)
def _has_public_suffix(domain: str) -> bool:
    return bool(_tld_extractor()(domain).fqdn)


_EMAIL_LOCAL = re.compile(r"(?<![\w.%+'-])[\w%+'-](?:[\w.%+'-]{0,62}[\w%+'-])?$")


class EmailIdRecognizer(ClinicalRecognizer, EmailRecognizer):
    """Email addresses: anchored on "@"; the domain is validated offline (Presidio's check, bundled TLD list)."""

    ENTITY = "EMAIL_ADDRESS"
    LABEL = Label.EMAIL
    PATTERNS: list[Pattern] = [  # anchored on "@"; check() grows the local part to the left
        ClinicalPattern("email domain", r"@\w+(?:-+\w+)*(?:\.\w+(?:-+\w+)*)+\b", 0.95, trigger=("@",)),
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        local = _EMAIL_LOCAL.search(text, max(0, match.start() - 64), match.start())
        if local is None:
            return
        if self.validate_result(match.group(0)[1:]):
            yield Hit(int(local.start()), int(match.end()), Label.EMAIL, None, pattern.score)

    def validate_result(self, pattern_text: str) -> bool:
        return _has_public_suffix(pattern_text.rpartition("@")[2].lower())


_TLDS = (
    "com|org|net|edu|gov|mil|int|io|ai|info|biz|health|care|clinic|hospital|app|dev|us|uk|ca|au|de|fr|nl|"
    "ch|se|es|be|dk|at|cz|pl|pt|br|mx|jp|cn|in|ru|eu|nz|ie|il|za|kr|sg|hk|tw|fi|gr|hu|ro|ee|si|cy|lu"
)
#: Bare-domain TLDs that are not also words or clinical abbreviations ("p.o", "d/c.in"); others need a path.
_TLDS_BARE_OK = frozenset({"com", "org", "net", "edu", "gov", "mil", "io", "info", "biz", "health", "uk", "ca",
                           "au", "de", "fr", "nl", "ch", "se", "es", "br", "mx", "jp", "cn", "ru", "eu", "nz", "za",
                           "cz", "dk", "gr", "hu", "ro", "ee", "si", "cy", "lu", "fi", "ie", "kr", "sg", "hk",
                           "tw", "pl", "care", "clinic", "hospital", "app", "dev"})
_DOMAIN_LEFT = re.compile(r"(?<![\w@./-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}"
                             r"[a-z0-9])?$", _RE_FLAGS)
_URL_PATH = re.compile(r"(?::\d{2,5})?(?:/[^\s<>\"'()\[\]{}]*)?", _RE_FLAGS)


class UrlRecognizer(ClinicalRecognizer):
    """URLs: with a scheme, with www., or bare domains on common TLDs (never the domain of an e-mail)."""

    ENTITY = "URL"
    LABEL = Label.URL
    PATTERNS: list[Pattern] = [
        ClinicalPattern("scheme url", r"\b(?:https?|s?ftp)://[^\s<>\"'()\[\]{}]+", 0.9, trigger=("://",)),
        ClinicalPattern("www url", r"(?<![\w@./-])www\d{0,3}\.[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:/[^\s<>\"'()]*)?", 0.9,
                        trigger=("www",)),
        ClinicalPattern(  # anchored on ".com" etc.; check() grows the domain to the left and the path to the right
            "bare domain", r"(?<=[a-z0-9])\.(?P<tld>" + _TLDS + r")\b(?!@|\.\w|-)", 0.6, kind="bare"),
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        start, end = int(match.start()), int(match.end())
        if pattern.kind == "bare":
            left = _DOMAIN_LEFT.search(text, max(0, start - 200), start)
            if left is None:
                return
            first = left.group(0).split(".")[0]
            path = _URL_PATH.match(text, end)
            end = int(path.end()) if path is not None else end
            tld = match.group("tld").lower()
            if (tld not in _TLDS_BARE_OK and end == match.end()) or len(first) < 2 or first.isdigit():
                return
            start = int(left.start())
        while end > start and text[end - 1] in ".,;:!?'\"":
            end -= 1  # trailing sentence punctuation is not part of the URL
        yield Hit(start, end, Label.URL, None, pattern.score)


_VERSION_BEFORE = re.compile(r"\bv(?:ersion)?[ \t]*$", _RE_FLAGS)


class IpIdRecognizer(ClinicalRecognizer, IpRecognizer):
    """IPv4 / IPv6 addresses: Presidio's patterns and its ``ipaddress`` invalidation."""

    ENTITY = "IP_ADDRESS"
    LABEL = Label.IP
    CONTEXT = ["ip", "ipv4", "ipv6", "address", "host", "server"]
    PATTERNS: list[Pattern] = [
        ClinicalPattern(p.name, p.regex, 0.7, context_score=0.95,
                        trigger_re=r"\.\d{1,3}\.\d{1,3}\." if p.name == "IPv4" else r":[0-9a-f]{0,4}:")
        for p in IpRecognizer.PATTERNS if p.score >= 0.5
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        if pattern.name == "IPv4" and _VERSION_BEFORE.search(text, max(0, match.start() - 9), match.start()):
            return  # software version "v1.2.3.4"
        yield from super().check(text, match, pattern)


# --------------------------------------------------------------------------------------------------------------
# Locations: ZIP, "City, ST 12345", street addresses, PO boxes
# --------------------------------------------------------------------------------------------------------------

_STATE_BEFORE_ZIP = re.compile(
    r"(?:(?P<city>\b" + _CITY + r"),[ \t]*)?\b(?P<state>(?:" + "|".join(_STATE_ABBR) + r")\b\.?|(?i:"
    + _STATE_NAME_RE + r")\b),?[ \t]+$",
    _RE_CASED,
)
_CITY_BEFORE = re.compile(r"\b" + _CITY + r"$", _RE_CASED)
_NAME_AFTER = re.compile(r"[ \t]+[A-Z][a-z]")
_NON_SPACE = re.compile(r"\S+")
_LEADING_NUMBER = re.compile(r"\d+[A-Z]?(?:-\d+)?")
_PLACE_PREP_BEFORE = re.compile(r"\b(?:in|from|to|near|at|of|outside|around|visiting|born)[ \t]+$", _RE_FLAGS)
#: "St." followed by a name is "Saint" ("ST. JUDE VALVE"), not the end of a street address.
_SAINT = re.compile(r"(?<=[Ss][Tt]\.)[ \t]+[A-Z]")
#: Capitalised words after "lives in" that are not places.
_NOT_A_CITY = frozenset("""
A AN THE HIS HER THEIR APARTMENT APT HOUSE HOME CONDO TRAILER SHELTER FACILITY SNF ALF NH NURSING ASSISTED GROUP
SECTION ROOM SENIOR PUBLIC HOUSING CARE LTC REHAB TOWN CITY COUNTY STATE AREA VA HOSPICE SAME BOARDING PRIVATE LOCAL
RURAL SUBURBAN DOWNTOWN INDEPENDENT INDEPENDENTLY JAIL PRISON MOTEL HOTEL CAR ICU ED ER HOSPITAL CLINIC MAY JUNE
APRIL AUGUST MARCH JULY JANUARY FEBRUARY SEPTEMBER OCTOBER NOVEMBER DECEMBER""".split())


class LocationRecognizer(ClinicalRecognizer):
    """ZIP codes (after a state or a ZIP word), "City, ST 12345" (CITY / STATE / ZIP spans), street addresses
    and PO boxes (STREET). A bare 5-digit number is not a ZIP (lab values)."""

    ENTITY = "LOCATION"
    LABEL = Label.LOCATION
    FLAGS = _CASED  # city and street names are capitalised words
    PATTERNS: list[Pattern] = [
        ClinicalPattern(  # anchored on the ZIP; check() looks left for the state and the city
            "city, state zip", r"(?<![\w.-])\d{5}(?:-\d{4})?(?![\w-]|\.\d)", 0.9, kind="csz"),
        ClinicalPattern(
            "city, state", r",[ \t]*(?P<state>" + "|".join(_STATE_ABBR) + r"|" + _STATE_NAME_RE
            + r")\b(?![ \t]*,?[ \t]*\d)(?![-'])", 0.55, kind="cs"),
        ClinicalPattern(
            "zip word", r"(?i:\bzip(?:[ \t]*code)?|\bpostal[ \t]+code|\bzipcode)[ \t]*[:#]?[ \t]*"
            r"(?P<v>\d{5}(?:-\d{4})?)(?![\d-])", 0.9, kind="zip", trigger=("zip", "postal")),
        ClinicalPattern(
            "street", r"(?<![\w.,/-])\d{1,6}[A-Z]?(?:-\d{1,4})?[ \t]+(?:" + _DIRECTION + r"[ \t]+)?(?:"
            + _STREET_NAME_WORD + r"[ \t]+){1,4}?" + _title_and_upper(_STREET_SUFFIX) + r"\b\.?(?:[ \t]+"
            + _DIRECTION + r"(?!\w))?(?:,?[ \t]*(?:" + _UNIT_WORD + r"\.?|#)[ \t]*#?[ \t]*[A-Z0-9-]{1,6}\b)?",
            0.8, kind="street"),
        ClinicalPattern(
            "po box", r"\b(?i:p\.?[ \t]?o\.?[ \t]*box|post[ \t]+office[ \t]+box|pob)[ \t]*#?[ \t]*\d{1,6}\b", 0.9,
            kind="pobox", trigger=("box", "pob")),
        ClinicalPattern(  # military addresses: "PSC 0413, Box 8144", "Unit 4719 Box 7394"
            "military box", r"\b(?i:psc|cmr|unit)[ \t]+\d{3,5},?[ \t]+(?i:box)[ \t]+\d{3,5}\b", 0.9, kind="pobox",
            trigger=("box",)),
        ClinicalPattern(  # "APO AE 09012": the ZIP of a military address
            "military zip", r"\b(?i:apo|fpo|dpo)[ \t]+(?i:aa|ae|ap)[ \t]+(?P<v>\d{5})\b", 0.9, kind="zip",
            trigger=("apo", "fpo", "dpo")),
        ClinicalPattern(  # "Apt. 595", "Suite 501" on their own
            "unit", r"\b(?:Apt|APT|Apartment|APARTMENT|Suite|SUITE|Ste|STE)\.?[ \t]*#?[ \t]*\d{1,5}[A-Z]?\b", 0.6,
            kind="pobox"),
        ClinicalPattern(  # "lives alone in Pearisburg", "home in Baton Rouge": a city without a state
            "lives in city", r"\b(?i:lives?|living|resides?|residing|moved|relocated|home)\b(?:[^.;:\n]|(?<=\b[A-Z])\.)"
            r"{0,48}?[ \t]"
            r"(?i:in)[ \t]+(?P<v>" + _CITY + r")", 0.5, kind="livesin",
            trigger=("live", "living", "resid", "moved", "relocated", "home")),
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        kind = pattern.kind
        start, end = self.span_of(match, pattern)
        if kind == "livesin":
            city = self._trim_city(text, start, end)
            if city is not None and text[city[0]:city[1]].split()[0].upper() not in _NOT_A_CITY:
                yield Hit(city[0], city[1], Label.LOCATION, Subtype.CITY, pattern.score)
            return
        if kind in ("street", "pobox", "zip"):
            number = _LEADING_NUMBER.match(text, start)
            if kind == "street" and (_measure_before(text, start, 12) or _SAINT.match(text, end)
                                     or _unit_after(text, number.end() if number else start)):
                return  # "BP 120 ...", "ST. JUDE VALVE", "40 MEQ KCL. ST."
            yield Hit(start, end, Label.LOCATION, Subtype.ZIP if kind == "zip" else Subtype.STREET, pattern.score)
            return
        if kind == "csz":
            left = _STATE_BEFORE_ZIP.search(text, max(0, start - 80), start)
            if left is None:
                return
            city_start, city_end = left.span("city")
            state_start, state_end = left.span("state")
            zip_hit = Hit(start, end, Label.LOCATION, Subtype.ZIP, pattern.score)
        else:  # "City, ST": the city is the capitalised words right before the comma
            state_start, state_end = match.span("state")
            city_match = _CITY_BEFORE.search(text, max(0, start - 60), start)
            if city_match is None:
                return
            city_start, city_end = city_match.span()
            zip_hit = None
            state = text[state_start:state_end]
            if text[city_start:city_end].isupper() and city_end - city_start < 4:
                return  # "her PCP, Nevada ...": an abbreviation, not a city
            if len(state) > 2 and _NAME_AFTER.match(text, state_end):
                return  # "Nevada Bianca Martinez": a first name
            if state in _CREDENTIALS:
                return  # "Carri Wood, MD": a credential unless a ZIP follows
            if state in _STATE_ABBR_AMBIGUOUS and (
                    not _PLACE_PREP_BEFORE.search(text, max(0, city_start - 16), city_start)
                    or (text[city_start:city_end].isupper() and city_end - city_start < 5)):
                return  # "Cardiology, ID", "IN NGT, CO": a state only after "lives in Boise, ID"
        if city_start >= 0:
            trimmed = self._trim_city(text, int(city_start), int(city_end))
            if trimmed is not None:
                weak = zip_hit is None and text[state_start:state_end] in _STATE_ABBR_WEAK
                yield Hit(trimmed[0], trimmed[1], Label.LOCATION, Subtype.CITY,
                          0.85 if zip_hit else 0.4 if weak else 0.55)
            elif zip_hit is None:
                return
        elif zip_hit is None:
            return
        weak = zip_hit is None and text[state_start:state_end] in _STATE_ABBR_WEAK
        yield Hit(int(state_start), int(state_end), Label.LOCATION, Subtype.STATE,
                  0.5 if zip_hit else 0.35 if weak else 0.45)
        if zip_hit is not None:
            yield zip_hit

    @staticmethod
    def _trim_city(text: str, start: int, end: int) -> tuple[int, int] | None:
        """Drop leading words that are not part of a city name ("Lives in Boston", "Main St Boston")."""
        words = list(_NON_SPACE.finditer(text, start, end))
        keep = 0
        for i, w in enumerate(words):
            token = w.group(0).lower().rstrip(".")
            if token in _CITY_STOP or (token in _STREET_SUFFIX_SET and i < len(words) - 1):
                keep = i + 1
        if keep >= len(words):
            return None
        return int(words[keep].start()), end


# --------------------------------------------------------------------------------------------------------------
# Engine and processor
# --------------------------------------------------------------------------------------------------------------

RECOGNIZER_CLASSES: tuple[type[ClinicalRecognizer], ...] = (
    DateRecognizer, AgeRecognizer, PhoneRecognizer, SsnRecognizer, IdRecognizer, CreditCardIdRecognizer,
    EmailIdRecognizer, UrlRecognizer, IpIdRecognizer, LocationRecognizer,
)


@functools.cache
def recognizers() -> tuple[ClinicalRecognizer, ...]:
    """The recognizers, compiled once per process."""
    return tuple(cls() for cls in RECOGNIZER_CLASSES)


def merge_same_label(hits: Iterable[Hit]) -> list[Hit]:
    """Drop hits contained in a hit of the same label; the container keeps the best score (and the subtype of
    the best-scored hit that has one). Overlaps across labels stay: the ensemble decides."""
    ordered = sorted(hits, key=lambda h: (h.start, -h.end, -h.score))
    kept: list[Hit] = []
    widest: dict[Label, int] = {}  # label -> index in kept of the hit reaching furthest right so far
    for hit in ordered:
        i = widest.get(hit.label)
        if i is not None and hit.end <= kept[i].end:  # kept[i] starts no later: it contains hit
            outer = kept[i]
            best = outer if outer.score >= hit.score else hit
            subtype = best.subtype or outer.subtype or hit.subtype
            kept[i] = Hit(outer.start, outer.end, outer.label, subtype, max(outer.score, hit.score))
            continue
        kept.append(hit)
        widest[hit.label] = len(kept) - 1
    return sorted(kept, key=lambda h: (h.start, h.end))


def _lower(text: str) -> str:
    """``text.lower()`` with the same length (a few characters lower-case to two; offsets must not move)."""
    lower = text.lower()
    if len(lower) == len(text):
        return lower
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


@register("regex")
class RegexDetector:
    """Identifier shapes (HIPAA Safe Harbor) as candidate spans with ``source="regex"``."""

    name = "regex"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        #: Labels to emit (None: all).
        entities: list[Label] | None = None
        #: Subtypes never emitted (e.g. ["STATE"]: Safe Harbor allows states).
        exclude_subtypes: list[Subtype] = Field(default_factory=list)
        #: Candidates below this score are not emitted at all (the ensemble applies its own threshold).
        min_score: float = Field(default=0.0, ge=0.0, le=1.0)

    def __init__(self, config: Config | None = None, ctx: BuildContext | None = None) -> None:
        self.config = config or self.Config()
        entities = self.config.entities
        self._recognizers = tuple(r for r in recognizers() if entities is None or r.LABEL in entities)

    def detect(self, text: str) -> list[Span]:
        """Candidate spans (offsets into ``text``), sorted by start; overlaps across labels are kept."""
        lower = _lower(text)
        hits: list[Hit] = []
        for rec in self._recognizers:
            hits.extend(rec.find(text, lower))
        excluded = self.config.exclude_subtypes
        return [
            Span(start=h.start, end=h.end, label=h.label, subtype=h.subtype, score=round(min(1.0, h.score), 3),
                 source=SOURCE)
            for h in merge_same_label(hits)
            if h.score >= self.config.min_score and (h.subtype is None or h.subtype not in excluded)
        ]

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        return [note.add_spans(self.detect(note.text)) for note in notes]
