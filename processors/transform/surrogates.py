"""Pure functions behind the transform: HMAC keys, date parsing and shifting, realistic surrogates.

Everything here is deterministic in ``(secret, patient_key, original)``: the same original gets the same
replacement for the same patient across notes, workers, restarts and replays, with no shared state.
Vocabulary pools (first names, surnames, cities, states, hospitals) come from ``dictionaries.vocab`` and
load once per process; a change of vocabulary version changes surrogates (by design: it is in the
version headers).
"""

from __future__ import annotations

import calendar
import functools
import hmac
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from dictionaries import vocab
from dictionaries.calendar import (
    FOREIGN_MONTH_NAMES,
    FOREIGN_MONTH_TOKENS,
    MONTHS,
    WEEKDAYS,
    foreign_month_alternation,
    foreign_months,
)
from dictionaries.text import fold_accents
from schemas.labels import Label, Subtype
from schemas.models import Span

# --------------------------------------------------------------------------------------------- HMAC


def hmac_hex(secret: bytes, msg: str) -> str:
    """Hex HMAC-SHA256 of ``msg`` under ``secret``."""
    return hmac.digest(secret, msg.encode("utf-8"), "sha256").hex()


def hmac_int(secret: bytes, msg: str) -> int:
    """A 64-bit integer derived from HMAC(secret, msg): the index source for pool picks."""
    return int(hmac_hex(secret, msg)[:16], 16)


def shift_days(secret: bytes, patient_key: str, lo: int, hi: int) -> int:
    """The patient's date shift in days: a NEGATIVE offset in ``-hi .. -lo`` from HMAC(secret,
    "shift:"+patient_key). Shifting back in time never produces future dates."""
    if lo < 0 or hi < lo:
        raise ValueError("shift range needs 0 <= lo <= hi")
    return -(lo + hmac_int(secret, "shift:" + patient_key) % (hi - lo + 1))


# -------------------------------------------------------------------------------------------- dates

#: a month's name: English (full or abbreviated) or another language's (``FOREIGN_MONTH_TOKENS``: "enero", "März")
_MON = (r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
        r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|"
        + foreign_month_alternation()
        + r")(?![^\W\d_])(?P<mdot>\.)?")
_Y4 = r"(?:1[89]\d\d|20\d\d|21\d\d)"
_ORD = r"(?P<ord>st|nd|rd|th)"
#: a day's ordinal before a month's name, French "1er" too ("1er mai 2019")
_ORD_DM = r"(?P<ord>st|nd|rd|th|er)"
#: Year-less dates are shifted inside this non-leap reference year (Feb 29 inside a leap one).
REFERENCE_YEAR = 2001
#: Month/year-only dates are shifted from this day of their month; year-only dates from July 2.
_MID_MONTH = 15

# (name, pattern): earlier = preferred on ties of start and length.
_DATE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx, re.IGNORECASE))
    for name, rx in (
        ("ymd", rf"(?<!\d)(?P<y>{_Y4})(?P<s1>[-/.])(?P<m>\d{{1,2}})(?P=s1)(?P<d>\d{{1,2}})(?!\d)"),
        ("compact", rf"(?<!\d)(?P<y>{_Y4})(?P<m>0[1-9]|1[0-2])(?P<d>0[1-9]|[12]\d|3[01])(?!\d)"),
        ("mdy", rf"(?<![\d/.-])(?P<m>\d{{1,2}})(?P<s1>[-/.])(?P<d>\d{{1,2}})(?P=s1)(?P<y>{_Y4}|\d\d)(?!\d)"),
        # "14 de enero de 2006", "3. März 2019", "3 de marzo del 2019" as well as "22 July 2019", "22-Jul-19"
        ("dmony", rf"(?<!\d)(?P<d>\d{{1,2}}){_ORD_DM}?(?P<s1>\s*-\s*|\s+of\s+|\s+de\s+|\s+|/|\.\s*)(?:the\s+)?{_MON}"
                  rf"(?:(?P<s2>,\s*|\s*-\s*|\s+de[l]?\s+|\s+|/)(?P<y>{_Y4}|'\d\d|\d\d))?(?![\d:])"),
        ("mony2", rf"(?<![\w]){_MON}(?P<s1>\s*'|-)(?P<y>\d\d)(?![\d:])"),
        ("mondy", rf"(?<![\w]){_MON}(?P<s1>\s*-\s*|\s+(?:the\s+)?|/)(?P<d>\d{{1,2}}){_ORD}?(?!\d)"
                  rf"(?:(?P<s2>,\s*|\s+|-|/)(?P<y>{_Y4}|'\d\d))?(?![\d:])"),
        ("mony4", rf"(?<![\w]){_MON}(?P<s1>\s+de[l]?\s+|,?\s+|-|/)(?P<y>{_Y4})(?![\d:])"),
        ("my", rf"(?<![\d/.-])(?P<m>0?[1-9]|1[0-2])(?P<s1>[-/.])(?P<y>{_Y4})(?![\d/.-])"),
        ("md", r"(?<![\d/.])(?P<m>\d{1,2})(?P<s1>[/-])(?P<d>\d{1,2})(?![\d/])"),
        ("dord", rf"(?<!\d)(?P<d>\d{{1,2}}){_ORD}(?![a-z])"),
        ("year", rf"(?<!\d)(?P<y>{_Y4})(?!\d)"),
    )
)
_PRIORITY = {name: i for i, (name, _) in enumerate(_DATE_PATTERNS)}
#: Patterns shifted only when they are the sole date in the string ("7/22 @ 2000": 2000 is a time).
_WEAK = frozenset({"year", "dord"})
_WEEKDAY_RE = re.compile(
    r"(?<![a-z])(mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?"
    r"|sat(?:urday)?|sun(?:day)?)(?![a-z])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class DateMatch:
    """A date found in a string: its extent, the parsed fields and what is needed to re-render it."""

    start: int
    end: int
    kind: str
    year: int | None
    month: int | None
    day: int | None
    m: re.Match[str]
    day_first: bool = False  # numeric date read as D/M/Y because the first field is > 12


def _pivot_year(two_digits: int) -> int:
    """Expand a 2-digit year: no later than next year (DOB "1/2/45" is 1945, "7/22/19" is 2019)."""
    this = datetime.now(UTC).year
    year = 2000 + two_digits
    return year if year <= this + 1 else year - 100


def _year_of(text: str | None) -> int | None:
    if text is None:
        return None
    digits = text.lstrip("'")
    return int(digits) if len(digits) == 4 else _pivot_year(int(digits))


def _month_of(name: str) -> int:
    low = name.lower()
    foreign = foreign_months(low)
    if foreign:
        return foreign[0][1]
    return next(i for i, full in enumerate(MONTHS, 1) if full.startswith(low[:3]))


def _foreign_language(template: str, context: str) -> str | None:
    """The language a foreign month name ``template`` is written in, None for an English one. A name several
    languages share is read by the date around it (``context``): "de" / "del" between its parts is Spanish (or
    Portuguese), a capitalised name German (its nouns are), a lower-case one French or Dutch; else the first
    language of ``FOREIGN_MONTH_NAMES`` that has it."""
    langs = [lang for lang, _ in foreign_months(template)]
    if len(langs) <= 1:
        return langs[0] if langs else None
    if re.search(r"\sdel?\s", context, re.IGNORECASE):
        for lang in ("es", "pt"):
            if lang in langs:
                return lang
    capital = template[:1].isupper() and not template.isupper()
    for lang in (("de",) if capital else ("fr", "nl")):
        if lang in langs:
            return lang
    return langs[0]


def _ascii_spelling(word: str, lang: str) -> str:
    """``word`` without accents, as a text that writes none would ("märz" -> "maerz", "février" -> "fevrier")."""
    if lang == "de":
        word = word.replace("ä", "ae").replace("ö", "oe").replace("ü", "ue")
    return fold_accents(word)


def _valid(year: int | None, month: int | None, day: int | None) -> bool:
    if month is not None and not 1 <= month <= 12:
        return False
    if day is None:
        return True
    if month is None:
        return 1 <= day <= 31
    ref = year if year is not None else 2000  # yearless: allow Feb 29
    return 1 <= day <= calendar.monthrange(ref, month)[1]


def _parse(kind: str, m: re.Match[str]) -> DateMatch | None:
    g = m.groupdict()
    year = _year_of(g.get("y"))
    day = int(g["d"]) if g.get("d") else None
    month: int | None
    if g.get("mon"):
        month = _month_of(g["mon"])
    elif g.get("m"):
        month = int(g["m"])
    else:
        month = None
    day_first = False
    if kind in ("mdy", "md") and month is not None and day is not None and month > 12 >= day:
        month, day, day_first = day, month, True  # 22/7/2019: day first
    if not _valid(year, month, day):
        return None
    return DateMatch(m.start(), m.end(), kind, year, month, day, m, day_first)


def find_dates(s: str) -> list[DateMatch]:
    """Non-overlapping date cores in ``s``, left to right (earliest start, then longest, then the
    pattern order wins). Weak cores (a bare year, "the 9th") count only when they are the only one."""
    cands: list[DateMatch] = []
    for kind, rx in _DATE_PATTERNS:
        for m in rx.finditer(s):
            dm = _parse(kind, m)
            if dm is not None:
                cands.append(dm)
    cands.sort(key=lambda c: (c.start, -(c.end - c.start), _PRIORITY[c.kind]))
    chosen: list[DateMatch] = []
    end = -1
    for c in cands:
        if c.start >= end:
            chosen.append(c)
            end = c.end
    strong = [c for c in chosen if c.kind not in _WEAK]
    return strong if strong else chosen[:1]


def _case_like(template: str, word: str) -> str:
    """``word`` in the case style of ``template``: ALL CAPS, lower, or Title."""
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template.islower():
        return word.lower()
    if template[:1].isupper():
        return word[:1].upper() + word[1:].lower() if word.isupper() or word.islower() else word
    return word


def _pad_style(text: str, others: Iterable[str], default: bool) -> bool:
    """Zero-pad a numeric field? "07" yes, "7" no; "12" takes the style of the other fields, else
    ``default`` (numeric dates: padded; "Jul 22": not)."""
    if len(text) == 1:
        return False
    if text.startswith("0"):
        return True
    for other in others:
        if len(other) == 1:
            return False
        if other.startswith("0"):
            return True
    return default


def _ordinal(day: int, template: str) -> str:
    if template.lower() == "er":  # French writes the first of a month "1er", the others bare
        return template if day == 1 else ""
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return suffix.upper() if template.isupper() else suffix


def _render_month(new: int, template: str, abbr_hint: bool, context: str = "") -> str:
    """Month ``new`` written as ``template`` is: its language, case, abbreviation, and accents if a spelling without
    them was used ("enero" -> "febrero", "MÄRZ" -> "APRIL", "janvier" -> "février", "fevrier" -> "janvier" -> ...,
    "Maerz" -> "Februar" / "Maerz")."""
    lang = _foreign_language(template, context)
    if lang is not None:
        word = FOREIGN_MONTH_NAMES[lang][new - 1]
        if template.lower().rstrip(".") not in FOREIGN_MONTH_NAMES[lang]:  # written without accents: "Maerz"
            word = _ascii_spelling(word, lang)
        return _case_like(template, word)
    full = MONTHS[new - 1]
    low = template.lower()
    if low == "may":
        abbreviate = abbr_hint
    else:
        abbreviate = len(low) < len(MONTHS[_month_of(low) - 1])
    if abbreviate:
        word = "sept" if (low == "sept" and new == 9) else full[:3]
    else:
        word = full
    return _case_like(template, word)


def _render_year(new: int, template: str) -> str:
    if template.startswith("'"):
        return f"'{new % 100:02d}"
    return f"{new % 100:02d}" if len(template) == 2 else f"{new:04d}"


def _shifted(dm: DateMatch, days: int) -> tuple[int | None, int | None, int | None]:
    """The new (year, month, day) of a date match; fields the original lacks stay None."""
    if dm.month is None and dm.day is not None:  # "the 9th": shift inside a 31-day cycle
        return None, None, (dm.day - 1 + days) % 31 + 1
    if dm.month is None:
        assert dm.year is not None
        new = date(dm.year, 7, 2) + timedelta(days=days)
        return new.year, None, None
    if dm.year is None:
        ref = 2000 if (dm.month, dm.day) == (2, 29) else REFERENCE_YEAR
        new = date(ref, dm.month, dm.day or _MID_MONTH) + timedelta(days=days)
        return None, new.month, new.day if dm.day is not None else None
    new = date(dm.year, dm.month, dm.day or _MID_MONTH) + timedelta(days=days)
    return new.year, new.month, new.day if dm.day is not None else None


def _render(dm: DateMatch, days: int) -> str:
    """Re-render a date match shifted by ``days``, in the same layout as the original."""
    year, month, day = _shifted(dm, days)
    m = dm.m
    g = m.groupdict()
    base = m.start()
    pieces: list[tuple[int, int, str]] = []  # (start, end, new text) relative to the match
    num_fields = [g[k] for k in ("m", "d") if g.get(k)]
    numeric = g.get("mon") is None
    if g.get("y") is not None and year is not None:
        pieces.append((m.start("y"), m.end("y"), _render_year(year, g["y"])))
    if g.get("m") is not None and month is not None:
        # in a day-first date the "m" group holds the day
        value = day if dm.day_first else month
        assert value is not None
        pad = _pad_style(g["m"], [t for t in num_fields if t is not g["m"]], numeric)
        pieces.append((m.start("m"), m.end("m"), f"{value:02d}" if pad else str(value)))
    if g.get("mon") is not None and month is not None:
        hint = bool(g.get("mdot")) or "-" in (g.get("s1") or "") or "-" in (g.get("s2") or "")
        pieces.append((m.start("mon"), m.end("mon"), _render_month(month, g["mon"], hint, m.group(0))))
    if g.get("d") is not None and day is not None:
        value = month if dm.day_first else day
        assert value is not None
        pad = _pad_style(g["d"], [t for t in num_fields if t is not g["d"]], numeric)
        pieces.append((m.start("d"), m.end("d"), f"{value:02d}" if pad else str(value)))
        if g.get("ord") is not None:
            pieces.append((m.start("ord"), m.end("ord"), _ordinal(day, g["ord"])))
    out = m.group(0)
    for start, end, new in sorted(pieces, reverse=True):
        out = out[: start - base] + new + out[end - base:]
    return out


def _render_weekday(template: str, days: int) -> str:
    idx = next(i for i, w in enumerate(WEEKDAYS) if w.startswith(template.lower()[:3]))
    full = WEEKDAYS[(idx + days) % 7]
    return _case_like(template, full if len(template) >= len(WEEKDAYS[idx]) else full[:3])


def shift_date_string(s: str, days: int) -> str | None:
    """Shift every date in ``s`` by ``days`` keeping its format (separators, zero-padding, month name
    case and abbreviation, ordinal suffix, 2- or 4-digit year, missing year); text around the dates
    (attached times, "on the") is kept; weekday names move with the shift ("Monday, July 22, 2019", or a
    weekday alone, "fri").
    Returns None when ``s`` holds no date this parser understands."""
    found = find_dates(s)
    if not found:
        # a weekday alone ("fri", "Wednesday") moves with the patient's dates
        return _shift_weekdays(s, days) if _WEEKDAY_RE.search(s) else None
    if _unread_date_material(s, found, digits=all(dm.kind in _WEAK for dm in found)):
        return None  # read in part: "14. Okt. 2019" (a bare year), "July 22 and Okt. 3" (a month not read)
    out: list[str] = []
    pos = 0
    for dm in found:
        out.append(_shift_weekdays(s[pos:dm.start], days))
        out.append(_render(dm, days))
        pos = dm.end
    out.append(_shift_weekdays(s[pos:], days))
    return "".join(out)


#: the first three letters of every month name, English or another language's, without accents ("okt", "dez", "fev")
_MONTH_PREFIXES = frozenset(fold_accents(w[:3]) for w in (*MONTHS, *FOREIGN_MONTH_TOKENS))
_LETTERS = re.compile(r"[^\W\d_]{3,}")


def _unread_date_material(s: str, found: Sequence[DateMatch], digits: bool) -> bool:
    """Outside the date cores ``found``, ``s`` holds a word that starts like a month's name in any language ("Okt.",
    "janv.", "Dez"), or with ``digits`` (only a bare year or a "9th" was read) any digit: a date the parser read only
    in part, which a shift would leave half in the clear. (Beside a full date, digits are a clock time: "7/22 14:30".)"""
    rest = s
    for dm in sorted(found, key=lambda d: d.start, reverse=True):
        rest = rest[:dm.start] + " " + rest[dm.end:]
    if digits and any(ch.isdigit() for ch in rest):
        return True
    return any(fold_accents(w[:3].lower()) in _MONTH_PREFIXES for w in _LETTERS.findall(rest))


def _shift_weekdays(text: str, days: int) -> str:
    if days % 7 == 0 or not text:
        return text
    return _WEEKDAY_RE.sub(lambda mm: _render_weekday(mm.group(0), days), text)


def date_year(s: str) -> int | None:
    """The (4-digit) year of the first date in ``s`` that has one, else None."""
    for dm in find_dates(s):
        if dm.year is not None:
            return dm.year
    return None


# ------------------------------------------------------------------------------------- surrogates

_TITLES = frozenset({
    "dr", "mr", "mrs", "ms", "miss", "mx", "prof", "md", "do", "rn", "np", "pa", "phd", "jr", "sr", "ii",
    "iii", "iv", "dds", "pharmd", "lpn", "cnp", "crna", "pac", "msn", "aprn", "facs", "facp", "mba", "mph",
})
#: A name word: "O'Brien" is one word, the possessive in "Smith's" is not part of it.
_NAME_TOKEN = re.compile(r"[^\W\d_]+(?:['\u2019](?![sS]\b)[^\W\d_]+)*")
_STREET_NAMES = (
    "Oak", "Maple", "Cedar", "Pine", "Elm", "Willow", "Birch", "Chestnut", "Walnut", "Spruce", "Hickory",
    "Magnolia", "Laurel", "Sycamore", "Aspen", "Juniper", "Poplar", "Dogwood", "Holly", "Linden",
    "Meadow", "Ridge", "Valley", "Lakeview", "Hillcrest", "Sunset", "Riverside", "Fairview", "Highland",
    "Brookside", "Orchard", "Garden", "Forest", "Prospect", "Union", "Franklin", "Jefferson", "Madison",
    "Lincoln", "Jackson", "Adams", "Monroe", "Harrison", "Grant", "Taylor", "Clinton", "Hamilton",
    "Church", "School", "Mill", "Spring", "Center", "Market", "Water", "Bridge", "Railroad", "Depot",
)
_STREET_WORDS = frozenset({
    "st", "street", "ave", "avenue", "av", "rd", "road", "dr", "drive", "ln", "lane", "blvd", "boulevard",
    "ct", "court", "pl", "place", "way", "ter", "terrace", "cir", "circle", "pkwy", "parkway", "hwy",
    "highway", "sq", "square", "trl", "trail", "apt", "apartment", "suite", "ste", "unit", "bldg", "floor",
    "fl", "rm", "room", "po", "p", "o", "box", "n", "s", "e", "w", "ne", "nw", "se", "sw", "north", "south",
    "east", "west", "and", "of", "the", "#",
    # other languages' street types ("Calle", "ul.", "út") and a military address's words ("PSC", "USNS")
    *(t.rstrip(".") for t in (*vocab.FOREIGN_LEADING_STREET_TYPES, *vocab.FOREIGN_TRAILING_STREET_TYPES)),
    "via", "ul", *vocab.MILITARY_ADDRESS_WORDS,
    # particles inside other languages' street names ("Calle de la Paz", "Via delle Coste"), and a Spanish address's
    # floor and door words ("bajo", "izq.", "esc."; after them a lone capital is the door: "Bajo A") and its "C" (calle)
    "de", "del", "la", "las", "los", "da", "do", "dos", "das", "di", "della", "delle", "dei", "degli", "des", "du",
    "c", *vocab.DOOR_WORDS,
})
_HOSPITAL_SMALL = frozenset({"of", "and", "the", "at", "for", "in", "on"})
_HOSPITAL_UPPER = frozenset({"ii", "iii", "iv", "va", "llc", "lp", "inc", "us", "usa", "nyu", "ucla", "ucsf"})
#: Pool sizes: the most frequent N entries of each vocabulary (realistic, and stable across versions).
FIRST_POOL = 2000
CITY_POOL = 1000
#: Surrogate surnames: frequent US surnames (US Census 2010 surname ranks, public domain), minus ones that
#: are English words ("Long", "Love"), first names, or medical eponyms ("Foley", "Graves", "Tanner").
#: A fixed list, not ``vocab.surnames()``: that list has no counts and is full of English words
#: ("Olives", "Feast"), and a fixed list keeps surrogates stable when the vocabularies are rebuilt.
SURNAMES: tuple[str, ...] = tuple("""
Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez
Anderson Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez Lewis
Robinson Walker Wright Scott Torres Nguyen Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell
Roberts Gomez Phillips Evans Diaz Parker Cruz Edwards Collins Reyes Stewart Morris Morales Rogers
Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly Howard Ramos Kim Cox Ward Richardson Watson
Brooks Chavez Wood Bennett Gray Mendoza Ruiz Hughes Price Alvarez Castillo Sanders Patel Myers Ross
Foster Jimenez Powell Jenkins Perry Sullivan Coleman Butler Henderson Barnes Gonzales Fisher Vasquez
Simmons Romero Patterson Alexander Hamilton Graham Reynolds Griffin Wallace Moreno West Cole Hayes
Bryant Herrera Gibson Ellis Tran Medina Aguilar Stevens Murray Ford Castro Owens Fernandez McDonald
Woods Vargas Chen Freeman Webb Tucker Guzman Burns Crawford Olson Simpson Porter Gordon Mendez Silva
Shaw Snyder Mason Dixon Munoz Hicks Holmes Palmer Wagner Black Robertson Boyd Stone Salazar Warren Mills
Meyer Schmidt Garza Daniels Ferguson Nichols Stephens Soto Weaver Ryan Gardner Payne Dunn Kelley Spencer
Hawkins Arnold Pierce Vazquez Hansen Peters Santos Hart Bradley Knight Elliott Cunningham Duncan
Armstrong Hudson Carroll Lane Riley Andrews Alvarado Delgado Berry Perkins Hoffman Johnston Matthews
Pena Richards Contreras Willis Carpenter Sandoval Guerrero Chapman Rios Estrada Ortega Watkins Greene
Nunez Wheeler Valdez Harper Burke Larson Santiago Maldonado Morrison Franklin Carlson Dominguez Carr
Lawson Jacobs O'Brien Lynch Singh Vega Montgomery Jensen Harvey Williamson Gilbert Sims Espinoza Howell
Wong Reid Hanson McCoy Garrett Burton Fuller Wang Welch Rojas Marquez Park Yang Padilla Walsh Bowman
Schultz Luna Fowler Mejia Davidson Acosta Brewer Holland Juarez Newman Pearson Curtis Cortez Schneider
Barrett Navarro Figueroa Keller Avila Wade Molina Hopkins Campos Barnett Bates Chambers Caldwell Beck
Lambert Miranda Byrd Craig Ayala Frazier Neal Carrillo Sutton Fleming Rhodes Shelton Schwartz Norris
Jennings Watts Duran Walters Cohen McDaniel Moran Parks Steele Vaughn Holt Deleon Barker Terry Hale Leon
Benson Haynes Horton Miles Lyons Pham Bush Thornton Wolfe Warner Cabrera McKinney Zimmerman Dawson Lara
Fletcher McCarthy Robles Cervantes Solis Erickson Reeves Chang Klein Salinas Fuentes Baldwin Velasquez
Hardy Higgins Aguirre Lin Cummings Chandler Sharp Barber Ochoa Robbins Liu Ramsey Griffith Blair
O'Connor Cardenas Pacheco Calderon Quinn Moss Swanson Chan Rivas Khan Rodgers Serrano Fitzgerald Rosales
Stevenson Christensen Manning Curry McLaughlin Harmon McGee Gross Doyle Garner Newton Burgess Reese
Walton Blake Trujillo Adkins Brady Goodman Roman Webster Goodwin Fischer Huang Potter Delacruz Montoya
Todd Hines Mullins Castaneda Malone Cannon Tate Mack Sherman Hubbard Hodges Zhang Guerra Valencia
Saunders Franco Rowe Gallagher Farmer Hammond Hampton Townsend Ingram Gallegos Clarke Barton Schroeder
Maxwell Waters Camacho Strickland Norman Parsons Harrington Glover Osborne Buchanan Casey Floyd Patton
Ibarra Suarez Bowers Orozco Salas Gibbs Andrade Bauer Conner Moody Escobar McGuire Lloyd Mueller French
Kramer McBride Pope Lindsey Velazquez Norton McCormick Flynn Yates Hogan Marsh Macias Villanueva Zamora
Pratt Owen Ballard Lang Brock Villarreal Drake Barrera Pineda Burnett Mercado Santana Shepherd Bautista
Ali Shaffer Trevino McKenzie Hess Olsen Cochran Morton Wilkins Petersen Briggs Shah Roth Nicholson
Holloway Lozano Rangel Hoover Arias Mora Valenzuela Bryan Meyers Weiss Underwood Greer Summers Carson
Morrow Clayton Whitaker Decker Yoder Collier Zuniga Carey Wilcox Melendez Poole Roberson Larsen Conley
Davenport Copeland Massey Lam Huff Rocha Cameron Pittman Huynh Randall Singleton Kirk Combs Mathis
Skinner Bradford Galvan Wall Boone Kirby Wilkinson Bridges Atkinson Velez Meza York Hodge Villa Abbott
Allison Tapia Gates Sosa Sweeney Farrell Wyatt Dalton Horn Barron Phelps Dickerson Heath Atkins Mathews
Bonilla Acevedo Benitez Zavala Hensley Cisneros Harrell Shields Rubio Huffman Choi Boyer Garrison Arroyo
Kane Hancock Callahan Dillon Cline Wiggins Grimes Arellano Melton O'Neill Savage Beltran Pitts Parrish
Ponce Booth Koch Ware Brennan McDowell Marks Cantu Humphrey Baxter Sawyer Clay Hutchinson Kaur Berg
Wiley Gilmore Russo Villegas Hobbs Wilkerson Ahmed Beard McClain Montes Mata Rosario Vang Henson O'Neal
Mosley McClure Beasley Stephenson Huerta Preston Vance Barry Johns Eaton Blackwell Dyer Macdonald
Solomon Guevara Stafford English Hurst Woodard Cortes Shannon Kemp Nolan McCullough Merritt Murillo
Salgado Kline Cordova Barajas Roach Rosas Winters Jacobson Lester Knox Bullock Kerr Leach Meadows Orr
Davila Whitehead Pruitt Kent Conway McKee Dejesus Marin Berger McIntyre Blankenship Gaines Palacios
Cuevas Bartlett Durham Dorsey McCall O'Donnell Stein Browning Stout Lowery Sloan McLean Hendricks
Calhoun Sexton Chung Gentry Hull Duarte Ellison Nielsen Gillespie Buck Middleton Sellers Leblanc Esparza
Hardin Bradshaw McIntosh Howe Livingston Morse Knapp Stark Bravo Noble Spears Weeks Corona Buckley
McFarland Hebert Enriquez Hickman Quintero Randolph Schaefer Walls Trejo Reilly Pennington Conrad Giles
Crosby Fitzpatrick Donovan Mahoney Medrano Hahn McMillan Bentley Peck Lucero Boyle Hanna Hurley Harding
McConnell Bernal Nava Ayers Everett Ventura Pugh Mayer Bender Shepard McMahon Landry Sampson Moses
Magana Blackburn Dunlap Gould Duffy Vaughan Herring McKay Espinosa Rivers Farley Friedman Potts Truong
Costa Correa Blevins Nixon Clements Fry Delarosa Benton Lugo Portillo Dougherty Crane Haley Phan
Villalobos Blanchard Horne Finley Quintana Esquivel Dodson Mullen Xiong Hayden Cano Levy Huber Richmond
Moyer Lim Frye Sheppard McCarty Avalos Booker Waller Parra Woodward Jaramillo Krueger Rasmussen Brandt
Peralta Donaldson Stuart Faulkner Maynard Galindo Coffey Estes Sanford Burch Maddox O'Connell Andersen
Spence McPherson Schmitt Stanton Leal Cherry Compton Dudley Sierra Pollard Alfaro Hester Proctor Hinton
Novak Madden McCann Terrell Jarvis Dickson Reyna Cantrell Hendrix Rollins Rowland Whitney Odom Daugherty
Tang Archer
""".split())


@functools.cache
def _first_pool() -> tuple[str, ...]:
    from dictionaries import vocab

    # SSA names by births; "Will", "Hope", "King" are common words: not as surrogates
    names = vocab.first_names()[: FIRST_POOL * 2]
    return tuple(n for n in names if len(n) >= 3 and n.isalpha() and not vocab.is_common_term(n))[:FIRST_POOL]


@functools.cache
def _first_pool_of(sex: str) -> tuple[str, ...]:
    """The first-name pool's names that SSA births give to one sex ("F" or "M")."""
    from dictionaries import vocab

    return tuple(n for n in _first_pool() if vocab.first_name_sex(n) == sex)


def _surname_pool() -> tuple[str, ...]:
    return SURNAMES


_SURNAME_SET = frozenset(n.casefold() for n in SURNAMES)


@functools.lru_cache(maxsize=65_536)
def _is_given_name(low: str) -> bool:
    """Does a name word take a first-name surrogate? Frequent surnames never ("Lee", "Taylor"); other
    words when used as first names more than their text frequency implies ("John" yes, "Smith" no)."""
    from dictionaries import vocab

    return low not in _SURNAME_SET and vocab.is_name_like(low)


@functools.cache
def _city_pool() -> tuple[str, ...]:
    from dictionaries import vocab

    return tuple(vocab.us_cities()[:CITY_POOL])


@functools.cache
def _state_pool() -> tuple[tuple[str, str], ...]:
    from dictionaries import vocab

    return tuple(vocab.us_states())


@functools.cache
def _hospital_pool() -> tuple[str, ...]:
    from dictionaries import vocab

    return tuple(sorted({_title_hospital(h.name) for h in vocab.hospitals() if h.name}))


def warm_pools() -> None:
    """Load every vocabulary pool now (at processor construction, not on the first note)."""
    _first_pool()
    _first_pool_of("F")
    _first_pool_of("M")
    _is_given_name("john")
    _city_pool()
    _state_pool()
    _hospital_pool()


def _title_hospital(name: str) -> str:
    """CMS names are ALL CAPS: "ST JOSEPH'S HOSPITAL OF ATLANTA" -> "St Joseph's Hospital of Atlanta"."""
    words = []
    for i, w in enumerate(name.split()):
        low = w.lower()
        if low in _HOSPITAL_UPPER:
            words.append(w.upper())
        elif i > 0 and low in _HOSPITAL_SMALL:
            words.append(low)
        else:
            words.append(w[:1].upper() + w[1:].lower())
    return " ".join(words)


def _pick(pool: Sequence[str], secret: bytes, key: str, avoid: frozenset[str] = frozenset()) -> str:
    """Deterministic pool entry for ``key``; skips entries in ``avoid`` (lowercase)."""
    n = len(pool)
    if n == 0:
        raise RuntimeError("empty surrogate pool")
    base = hmac_int(secret, key)
    for step in range(min(n, 64)):
        cand = pool[(base + step * 7919) % n]
        if cand.lower() not in avoid:
            return cand
    return pool[base % n]


def _norm(s: str) -> str:
    return " ".join(s.casefold().split())


@functools.lru_cache(maxsize=65_536)
def _person_word(
    secret: bytes, patient_key: str, word: str, avoid: frozenset[str], sex: str | None = None, given: bool = False
) -> str:
    """Surrogate for one name word: a first name if the word is used as one, else a surname (decided by
    the word alone, so it maps the same whether it appears alone or inside a full name). A first name keeps the
    person's sex: ``sex`` ("F" / "M") where the message or the note states it, else the name's own (SSA births:
    "John" a man's, "Mary" a woman's); a name both sexes are given ("Jordan") draws from the whole pool. ``given``:
    the message says the word is a given name ("Casey", which the name lists read as a surname)."""
    from dictionaries import vocab

    low = word.casefold()
    if not (given or _is_given_name(low)):
        return _pick(_surname_pool(), secret, f"name:{patient_key}:{low}", avoid | {low})
    sex = sex or vocab.first_name_sex(low)
    pool = _first_pool_of(sex) if sex in ("F", "M") else _first_pool()
    return _pick(pool or _first_pool(), secret, f"name:{patient_key}:{low}", avoid | {low})


def _initial(secret: bytes, patient_key: str, letter: str, known: dict[str, str]) -> str:
    """An initial maps to the initial of the surrogate of a known name starting with it (the note's own
    people), else to an HMAC-chosen letter."""
    up = letter.upper()
    if up in known:
        return known[up][:1].upper()
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[hmac_int(secret, f"initial:{patient_key}:{up}") % 26]


@functools.lru_cache(maxsize=4096)
def _known_initials(
    secret: bytes, patient_key: str, known_names: tuple[str, ...], avoid: frozenset[str],
    patient_words: frozenset[str] = frozenset(), sex: str | None = None, given_words: frozenset[str] = frozenset(),
) -> dict[str, str]:
    """Initial letter -> surrogate of the first known name with that initial (once per note)."""
    known: dict[str, str] = {}
    for k in known_names:
        if len(k) > 1 and k[:1].upper() not in known:
            low = k.casefold()
            known[k[:1].upper()] = _person_word(secret, patient_key, k, avoid, sex if low in patient_words else None,
                                                low in given_words)
    return known


def _is_title(word: str) -> bool:
    """Titles and degrees stay ("Dr.", "MD"); short ambiguous ones ("Do", "Pa") only in capitals."""
    low = word.casefold()
    return low in _TITLES and (len(low) > 2 or word.isupper() or low in ("dr", "mr", "ms", "jr", "sr"))


def surrogate_name(
    secret: bytes, patient_key: str, original: str, *, known_names: Sequence[str] = (),
    avoid: frozenset[str] = frozenset(), patient_words: frozenset[str] = frozenset(), sex: str | None = None,
    given_words: frozenset[str] = frozenset(),
) -> str:
    """Per-word name surrogate keeping case style, titles ("Dr.", "MD"), punctuation and initials.

    ``patient_words`` (lowercase) are the patient's name words and ``sex`` ("F" / "M") the patient's stated sex:
    a given name among them takes a surrogate of that sex; every other given name keeps its own. ``given_words``
    (lowercase): words the message gives as given names, which take a given-name surrogate."""
    avoid = avoid | {k.casefold() for k in known_names}
    known = _known_initials(secret, patient_key, tuple(known_names), avoid, patient_words, sex, given_words)
    out: list[str] = []
    pos = 0
    for m in _NAME_TOKEN.finditer(original):
        out.append(original[pos:m.start()])
        word = m.group(0)
        if _is_title(word) or _is_possessive_s(original, m.start(), word):
            new = word
        elif len(word) == 1:
            new = _initial(secret, patient_key, word, known)
            new = new if word.isupper() else new.lower()
        else:
            low = word.casefold()
            own = sex if low in patient_words else None
            new = _case_like(word, _person_word(secret, patient_key, word, avoid, own, low in given_words))
        out.append(new)
        pos = m.end()
    out.append(original[pos:])
    return "".join(out)


def _is_possessive_s(text: str, start: int, word: str) -> bool:
    """The "s" of "Smith's" (or "Smith’s"): part of the grammar, not an initial."""
    return word in ("s", "S") and start >= 2 and text[start - 1] in "'\u2019" and text[start - 2].isalpha()


def _stream(secret: bytes, key: str, n: int) -> list[int]:
    """``n`` pseudo-random bytes from HMAC(secret, key || counter)."""
    out: list[int] = []
    counter = 0
    while len(out) < n:
        out.extend(hmac.digest(secret, f"{key}#{counter}".encode(), "sha256"))
        counter += 1
    return out[:n]


def surrogate_shape(secret: bytes, patient_key: str, label: str, original: str) -> str:
    """Same shape: digits -> digits, letters -> letters (case kept), separators kept. Keyed by the
    alphanumerics only, so one number written two ways maps to one surrogate number written two ways.
    Phones keep a leading country code 1 and get NANP-valid area and exchange codes (first digit 2-9)."""
    core = [ch for ch in original if ch.isalnum()]
    key = "".join(core).upper()
    out = original
    for attempt in range(8):
        rnd = _stream(secret, f"shape:{patient_key}:{label}:{key}:{attempt}", len(core))
        new = []
        for ch, r in zip(core, rnd, strict=True):
            if ch.isdigit():
                new.append(str(r % 10))
            elif ch.isascii():
                letter = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[r % 26]
                new.append(letter if ch.isupper() else letter.lower())
            else:  # a non-ASCII letter
                new.append("X" if ch.isupper() else "x")
        if label == Label.PHONE:
            _nanp(core, new, rnd)
        elif label == "street-number" and new and new[0] == "0":
            new[0] = str(rnd[0] % 9 + 1)
        it = iter(new)
        out = "".join(next(it) if ch.isalnum() else ch for ch in original)
        if out != original:
            return out
    return out


def _nanp(core: Sequence[str], new: list[str], rnd: Sequence[int]) -> None:
    """Make a 10-digit (or 1 + 10-digit) US number look valid: keep the country code, area code and
    exchange start with 2-9."""
    if not all(ch.isdigit() for ch in core):
        return
    offset = 1 if len(core) == 11 and core[0] == "1" else 0
    if len(core) - offset != 10:
        return
    if offset:
        new[0] = "1"
    for pos in (offset, offset + 3):
        if new[pos] in "01":
            new[pos] = str(rnd[pos] % 8 + 2)


def surrogate_email(secret: bytes, patient_key: str, original: str) -> str:
    key = f"email:{patient_key}:{_norm(original)}"
    first = _pick(_first_pool(), secret, key + ":first").lower()
    last = _pick(_surname_pool(), secret, key + ":last").lower().replace("'", "").replace(" ", "")
    return f"{first}.{last}@example.org"


def surrogate_url(secret: bytes, patient_key: str, original: str) -> str:
    low = re.sub(r"^[a-z]+://", "", original.strip().lower())
    return "https://example.org/" + hmac_hex(secret, f"url:{patient_key}:{low}")[:10]


def surrogate_ip(secret: bytes, patient_key: str, original: str) -> str:
    """IPv4 from TEST-NET-1 (192.0.2.0/24), IPv6 from the documentation prefix 2001:db8::/32."""
    h = hmac_int(secret, f"ip:{patient_key}:{original.strip().lower()}")
    if ":" in original:
        return f"2001:db8::{h % 0xFFFF + 1:x}"
    return f"192.0.2.{h % 254 + 1}"


def surrogate_age(original: str) -> str | None:
    """Safe Harbor: ages over 89 aggregate into "90+" (the number is replaced, words around it kept);
    ages <= 89 are not identifiers and stay. None when the span holds no number."""
    m = re.search(r"\d+", original)
    if m is None:
        return None
    if int(m.group(0)) <= 89:
        return original
    return original[: m.start()] + "90+" + original[m.end():]


def _state_for(secret: bytes, patient_key: str, original: str) -> str:
    states = _state_pool()
    key = f"state:{patient_key}:{_norm(original)}"
    stripped = original.strip().rstrip(".")
    avoid = frozenset({_norm(stripped)})
    name, code = states[hmac_int(secret, key) % len(states)]
    for step in range(1, 8):
        if _norm(name) not in avoid and code.lower() not in avoid:
            break
        name, code = states[(hmac_int(secret, key) + step) % len(states)]
    if len(stripped) == 2:
        return code if stripped.isupper() else code.lower()
    return _case_like(stripped, name)


def _states_lookup() -> dict[str, str]:
    return {k: v for name, code in _state_pool() for k, v in ((name.lower(), name), (code.lower(), code))}


def _street(secret: bytes, patient_key: str, original: str) -> str:
    """Numbers -> same-shape digits; street/unit words (St, Ave, Apt, PO Box, N) kept; the name words
    replaced as one run by a pool street name."""
    key = f"street:{patient_key}:{_norm(original)}"
    name = _STREET_NAMES[hmac_int(secret, key) % len(_STREET_NAMES)]
    out: list[str] = []
    pos = 0
    replaced_run = False
    after_number = False  # the last token was a number or a floor / door word: a lone capital after it is a door
    for m in re.finditer(r"[^\W\d_]+|\d+", original):  # letters of any script: "Rákóczi" is one word
        out.append(original[pos:m.start()])
        tok = m.group(0)
        if tok.isdigit():
            out.append(surrogate_shape(secret, patient_key, "street-number", tok))
            replaced_run, after_number = False, True
        elif (tok.lower() in _STREET_WORDS or re.fullmatch(r"\d+(st|nd|rd|th)", tok.lower())
              or (len(tok) <= 2 and m.start() > 0 and original[m.start() - 1].isdigit())  # "3F", "12B": a door
              or (after_number and len(tok) == 1 and tok.isupper()  # "4, 2, B", "Bajo A": a door ends the address
                  and not original[m.end():].strip(" .,;"))):
            out.append(tok)
            replaced_run, after_number = False, tok.lower() in vocab.DOOR_WORDS or after_number and len(tok) <= 2
        elif not replaced_run:
            out.append(_case_like(tok, name))
            replaced_run = True
        else:
            # drop the rest of a multi-word street name (and the space before it)
            if out and out[-1].isspace():
                out.pop()
        pos = m.end()
    out.append(original[pos:])
    return "".join(out)


def surrogate_location(secret: bytes, patient_key: str, original: str, subtype: str | None) -> str:
    """Streets, cities, states, ZIPs and countries; a LOCATION span without subtype is split on commas
    and each part classified by shape (digits first: street; ZIP shape; state name/code; else city)."""
    if subtype == Subtype.ZIP:
        return surrogate_shape(secret, patient_key, "zip", original)
    if subtype == Subtype.STREET:
        return _street(secret, patient_key, original)
    plain = not any(ch.isdigit() for ch in original)  # a "city" with digits is a merged address
    if subtype == Subtype.STATE and plain:
        return _state_for(secret, patient_key, original)
    if subtype == Subtype.COUNTRY and plain:
        return original  # countries are not Safe Harbor identifiers
    if subtype == Subtype.CITY and plain and "," not in original:
        return _city(secret, patient_key, original)
    parts = re.split(r"(,\s*)", original)
    out = []
    states = _states_lookup()
    for part in parts:
        stripped = part.strip()
        if not stripped or re.fullmatch(r",\s*", part):
            out.append(part)
            continue
        lead = part[: len(part) - len(part.lstrip())]
        trail = part[len(part.rstrip()):]
        m = re.fullmatch(r"(?P<st>[A-Za-z][A-Za-z .]*?)\s+(?P<zip>\d{5}(?:-\d{4})?)", stripped)
        if m:  # "MA 02118"
            new = (_state_for(secret, patient_key, m.group("st")) if m.group("st").lower() in states
                   else _city(secret, patient_key, m.group("st")))
            new += stripped[m.end("st"):m.start("zip")] + surrogate_shape(secret, patient_key, "zip",
                                                                          m.group("zip"))
        elif re.fullmatch(r"\d{5}(?:-\d{4})?", stripped):
            new = surrogate_shape(secret, patient_key, "zip", stripped)
        elif stripped[:1].isdigit() or re.match(r"(?i)p\.?\s*o\.?\s*box", stripped):
            new = _street(secret, patient_key, stripped)
        elif stripped.lower().rstrip(".") in states:
            new = _state_for(secret, patient_key, stripped)
        else:
            new = _city(secret, patient_key, stripped)
        out.append(lead + new + trail)
    return "".join(out)


def _city(secret: bytes, patient_key: str, original: str) -> str:
    city = _pick(_city_pool(), secret, f"city:{patient_key}:{_norm(original)}", frozenset({_norm(original)}))
    return city.upper() if original.isupper() and len(original) > 1 else city


def surrogate_org(secret: bytes, patient_key: str, original: str) -> str:
    name = _pick(_hospital_pool(), secret, f"org:{patient_key}:{_norm(original)}", frozenset({_norm(original)}))
    if original.isupper() and len(original) > 3:
        return name.upper()
    return name


_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL_RE = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.)\S+|[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|edu|gov|io)(?:/\S*)?",
                     re.IGNORECASE)


def looks_like(text: str) -> Label | None:
    """The label an identifier's text has by its shape alone: EMAIL, URL, or PHONE for a run of >= 7
    digits that makes up most of it; None otherwise."""
    stripped = text.strip()
    if _EMAIL_RE.fullmatch(stripped):
        return Label.EMAIL
    if _URL_RE.fullmatch(stripped):
        return Label.URL
    digits = sum(ch.isdigit() for ch in stripped)
    alnum = sum(ch.isalnum() for ch in stripped)
    if digits >= 7 and digits * 2 > alnum:
        return Label.PHONE
    return None


def surrogate_for(
    secret: bytes, patient_key: str, span: Span, original: str, *, shift: int | None = None,
    known_names: Sequence[str] = (), avoid: frozenset[str] = frozenset(), patient_words: frozenset[str] = frozenset(),
    sex: str | None = None, given_words: frozenset[str] = frozenset(),
) -> str:
    """A realistic replacement for ``original`` (the text of ``span``) for this patient.

    ``shift`` is the patient's date shift (default: ``shift_days(secret, patient_key, 1, 365)``);
    ``known_names`` are the note's own people's name words (initials map to their surrogates' initials);
    ``avoid`` are lowercase words a name surrogate must not be (the patient's real name parts);
    ``patient_words``, ``sex``, ``given_words``: the patient's name words, stated sex and the message's given names
    (``surrogate_name``).
    Dates that cannot be parsed, and labels without a realistic form, become ``[LABEL]``."""
    label = Label(span.label)
    sub = span.subtype
    if label in (Label.LOCATION, Label.ORGANIZATION, Label.OTHER):
        # merged spans (the ensemble unions overlapping detections) may hold a URL, an email, a phone
        shaped = looks_like(original)
        if shaped is not None:
            label, sub = shaped, None
    if label == Label.NAME:
        return surrogate_name(secret, patient_key, original, known_names=known_names, avoid=avoid,
                              patient_words=patient_words, sex=sex, given_words=given_words)
    if label == Label.DATE:
        days = shift if shift is not None else shift_days(secret, patient_key, 1, 365)
        return shift_date_string(original, days) or "[DATE]"
    if label == Label.AGE:
        return surrogate_age(original) or "[AGE]"
    if label in (Label.PHONE, Label.ID):
        return surrogate_shape(secret, patient_key, str(label), original)
    if label == Label.EMAIL:
        return surrogate_email(secret, patient_key, original)
    if label == Label.URL:
        return surrogate_url(secret, patient_key, original)
    if label == Label.IP:
        return surrogate_ip(secret, patient_key, original)
    if label == Label.LOCATION:
        return surrogate_location(secret, patient_key, original, sub)
    if label == Label.ORGANIZATION:
        return surrogate_org(secret, patient_key, original)
    if any(ch.isdigit() for ch in original):
        return surrogate_shape(secret, patient_key, str(label), original)
    return f"[{label}]"
