"""Locations: ZIP codes, "City, ST 12345" (CITY / STATE / ZIP spans), street addresses, PO boxes and cities
after "lives in"."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import Any

import regex
from presidio_analyzer import Pattern

from dictionaries import vocab
from dictionaries.calendar import MONTHS
from dictionaries.text import is_all_caps, line_fact
from processors.regex.context import measure_before, unit_after
from processors.regex.recognizer import (
    RE_CASED,
    RE_FLAGS,
    REGEX_CASED,
    ClinicalPattern,
    ClinicalRecognizer,
    Hit,
)
from schemas.labels import Label, Subtype

_STATE_ABBR = (
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY",
    "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH",
    "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY", "PR", "VI", "GU",
    "AS", "MP",
)
#: Abbreviations that are also credentials or clinical abbreviations in lists ("Smith, MD", "Cardiology, ID",
#: "NT, ND", "MRI, CT"): a state only when a ZIP follows.
_STATE_ABBR_AMBIGUOUS = frozenset({
    "MD", "PA", "MA", "OK", "HI", "ID", "CT", "OR", "IN", "MS", "CO", "PR", "ND", "AS", "GU", "VI", "MI",
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
_UNIT_WORD = _title_and_upper(("Apt", "Apartment", "Unit", "Suite", "Ste", "Rm", "Room", "Fl", "Floor", "Bldg",
                               "Building", "Lot", "Trlr", "Dept"))
# Words that never belong to a street name (ALL-CAPS nursing text: "GIVEN 2 TABS BY MOUTH DR ...").
_NOT_STREET_WORD = (
    r"(?!(?:BY|TO|OF|IN|ON|AT|AND|OR|FOR|THE|WITH|PER|TABS?|MG|ML|PO|IV|IM|SQ|PRN|BID|TID|QID|QD|QHS|HRS?|"
    r"DAYS?|WEEKS?|TIMES|UNITS?|By|To|Of|In|On|At|And|Or|For|The|With|Per|Tabs?|Times|Days?|Weeks?|Units?)\b)"
)
# a word ends in a period only as an abbreviation ("St.", "Mt."): "MOVES X 4 EXTREMITIES SPONTANEOUSLY. HEAD CT"
# is two sentences
_STREET_NAME_WORD = r"(?:" + _NOT_STREET_WORD + r"(?:[A-Z][A-Za-z'-]{0,2}\.|[A-Z](?:[A-Za-z'-]|\.(?=[A-Za-z]))*)|\d{1,3}(?:st|nd|rd|th|ST|ND|RD|TH))"
_DIRECTION = r"(?:N|S|E|W|NE|NW|SE|SW|North|South|East|West|NORTH|SOUTH|EAST|WEST)\.?"

#: the Italian particles inside a street's name ("Via delle Coste 41")
_IT_PARTICLE = r"(?:del|della|delle|dei|degli|dello|di|dell['\u2019])"
#: the one street pattern led by a word English uses too ("Via"): a unit after its number ("Via Foley 200 cc") is no
#: address ("Carretera ... M-608 Km 41" is one: the unit check stays off the other patterns)
_VIA_PATTERN = "street (via, ul.)"
_TRAILING_STREET_TYPE = "|".join(re.escape(t) for t in vocab.FOREIGN_TRAILING_STREET_TYPES)
_LEADING_STREET_TYPE = "|".join(re.escape(t) for t in vocab.FOREIGN_LEADING_STREET_TYPES)
_STREET_SUFFIX = "|".join(re.escape(t) for t in vocab.FOREIGN_STREET_SUFFIXES)
#: a word of the street's name: capitalised or not ("calle cartagena"), particles too ("de la", "del", "dos")
_FOREIGN_NAME_WORD = r"[^\W\d_][\w'\u2019.-]*"
#: Spanish words for a floor and a door after the number (``vocab.DOOR_WORDS``: "bajo", "izq.", "esc. 2", "pta. 3")
_DOOR_WORD = r"(?i:" + "|".join(re.escape(w) for w in sorted(vocab.DOOR_WORDS, key=lambda w: (-len(w), w))) + r")\.?"
#: one part of what follows the house number: a floor or door number ("2", "3º", "3.º"), a door word, a door letter
_HOUSE_PART = (r"(?:\d{1,2}(?:\.?[\u00ba\u00aa°])?(?:[ \t]*[A-Za-z](?![\w/]))?(?![\w/])|" + _DOOR_WORD
               + r"(?:[ \t]*\d{1,2}[\u00ba\u00aa°]?)?(?:[ \t]*[A-Za-z](?![\w/]))?(?![\w/])|[A-Z](?![\w/]))")
#: the house number (or "s/n": no number) after the name, "nº 2", and a floor and door ("3F", "6º A", "1C", "2º 1ª")
_FOREIGN_HOUSE = (r",?[ \t]*(?:n[\u00bao°]\.?[ \t]*)?(?:\d{1,4}[A-Za-z]?(?![\w/])|[Ss]/[Nn](?!\w))"
                  # up to three parts after a comma, a space or a dash, or after a period only before a digit:
                  # "8, 2, 1", "4, 10, A", "47 - 4º Dcha", "1, 3.º B", "3. 1A", "4 bajo A", "6, esc. 2, 2ºb"
                  r"(?:(?:,[ \t]*|[ \t]*-[ \t]*|[ \t]+|\.[ \t]*(?=\d))" + _HOUSE_PART + r"){0,3}")

#: a word of a place field's value: capitalised, with a period only after a place name's abbreviation ("Cdad. Real",
#: "Sta. Coloma"; "Boston. Pt", "Vigo. Bien" are two sentences)
_FIELD_PLACE_WORD = r"(?:(?:Cdad|Sta|Sto|Pto|Gral|St|Ste|Mt|Ft|S)\.|\p{Lu}[\w'-]*)"
_STATE_BEFORE_ZIP = re.compile(
    r"(?:(?P<city>\b" + _CITY + r"),[ \t]*)?\b(?P<state>(?:" + "|".join(_STATE_ABBR) + r")\b\.?|(?i:"
    + _STATE_NAME_RE + r")\b),?[ \t]+$",
    RE_CASED,
)
_CITY_BEFORE = re.compile(r"\b" + _CITY + r"$", RE_CASED)
_NAME_AFTER = re.compile(r"[ \t]+[A-Z][a-z]")
_NON_SPACE = re.compile(r"\S+")
_LEADING_NUMBER = re.compile(r"\d+[A-Z]?(?:-\d+)?")
#: not a house number: "4U REG SQ" (units of insulin), "1 ST DEGREE AV BLOCK" (an ordinal written apart)
_NOT_HOUSE_NUMBER = re.compile(r"\d+(?:[Uu]\b|[ \t]+(?:ST|ND|RD|TH|st|nd|rd|th)\b)")
_PLACE_PREP_BEFORE = re.compile(r"\b(?:in|from|to|near|at|of|outside|around|visiting|born)[ \t]+$", RE_FLAGS)
#: "St." followed by a name is "Saint" ("ST. JUDE VALVE"), not the end of a street address.
_SAINT = re.compile(r"(?<=[Ss][Tt]\.)[ \t]+[A-Z]")
#: Capitalised words after "lives in" that are not places.
_NOT_A_CITY = frozenset("""
A AN THE HIS HER THEIR APARTMENT APT HOUSE HOME CONDO TRAILER SHELTER FACILITY SNF ALF NH NURSING ASSISTED GROUP
SECTION ROOM SENIOR PUBLIC HOUSING CARE LTC REHAB TOWN CITY COUNTY STATE AREA VA HOSPICE SAME BOARDING PRIVATE LOCAL
RURAL SUBURBAN DOWNTOWN INDEPENDENT INDEPENDENTLY JAIL PRISON MOTEL HOTEL CAR ICU ED ER HOSPITAL CLINIC
""".split()) | frozenset(m.upper() for m in MONTHS)


@functools.cache
def _city_names() -> frozenset[str]:
    return frozenset(c.lower() for c in vocab.us_cities())


def _known_city(text: str, start: int, end: int) -> bool:
    """The capitalised words before the comma end in a gazetteer city ("... IN BOSTON, MA")."""
    words = text[start:end].lower().split()
    names = _city_names()
    return any(" ".join(words[i:]) in names for i in range(len(words)))


class LocationRecognizer(ClinicalRecognizer):
    """ZIP codes (after a state or a ZIP word), "City, ST 12345" (CITY / STATE / ZIP spans), street addresses
    and PO boxes (STREET). A bare 5-digit number is not a ZIP (lab values)."""

    ENTITY = "LOCATION"
    LABEL = Label.LOCATION
    FLAGS = REGEX_CASED  # city and street names are capitalised words
    PATTERNS: list[Pattern] = [
        ClinicalPattern(  # anchored on the ZIP; check() looks left for the state and the city
            "city, state zip", r"(?<![\w.-])\d{5}(?:-\d{4})?(?![\w-]|\.\d)", 0.9, kind="csz"),
        ClinicalPattern(
            "city, state", r",[ \t]*(?P<state>" + "|".join(_STATE_ABBR) + r"|" + _STATE_NAME_RE
            + r")\b(?![ \t]*,?[ \t]*\d)(?![-'])", 0.55, kind="cs"),
        ClinicalPattern(
            # (and other languages' labels of a five-digit postal code: "CP: 28001", "C.P. 28001", "código postal",
            # "PLZ 10115", "code postal")
            "zip word", r"(?:(?i:\bzip(?:[ \t]*code)?|\bpostal[ \t]+code|\bzipcode|\bc[óo]digo[ \t]+postal|"
            r"\bcode[ \t]+postal|\bcodice[ \t]+postale|\bpostleitzahl)|\bPLZ|\bC\.?P\.?)[ \t]*[:#]?[ \t]*"
            r"(?P<v>\d{5}(?:-\d{4})?)(?![\d-])", 0.9, kind="zip",
            trigger=("zip", "postal", "plz", "cp", "c.p", "digo", "postleitzahl")),
        ClinicalPattern(  # a form's address field: "Domicilio: C BIZKARRETA, 1. Bajo A", "Anschrift: Am Ring 4": the rest of
            # its line from a capital or a digit (a number in it, 80 characters at most), without its last period
            "address field", r"(?<![\w/])(?:(?i:domicilio|direcci[óo]n|adresse|anschrift|indirizzo|morada|endere[çc]o)"
            r"[ \t]*:[ \t]*(?=[\p{Lu}\d])|(?i:address)[ \t]*:[ \t]*(?=\d))"  # English: a house number first
            r"(?P<v>(?=[^\n]{0,60}\d)[^\n]{2,79}?)[ \t.]*$", 0.8,
            kind="addressfield", trigger=("domicilio", "direcci", "adresse", "anschrift", "indirizzo", "morada",
                                          "endere", "address")),
        ClinicalPattern(  # a form's place field: "Localidad/ Provincia: Alcalá de Guadaíra, Sevilla", "Ciudad: Toledo",
            # "Wohnort: Köln", "City: Boston": capitalised words (particles between them) up to the field's end
            "place field", r"(?<![\w/])(?i:localidad|provincia|municipio|ciudad|poblaci[óo]n|wohnort|ville|citt[àa]|"
            r"cidade|city|town)(?:[ \t]*/[ \t]*(?i:provincia|localidad))?[ \t]*:[ \t]*(?P<v>" + _FIELD_PLACE_WORD +
            r"(?:[ \t]+(?:(?:de|del|la|las|los|el|y|i|di|do|da|des|du|le|am|an|der)[ \t]+)*" + _FIELD_PLACE_WORD + r"){0,4}"
            r"(?:,[ \t]*(?!(?:PLZ|CP|C\.P)\b)" + _FIELD_PLACE_WORD + r"(?:[ \t]+" + _FIELD_PLACE_WORD + r"){0,2})?)", 0.8,
            kind="placefield",
            trigger=("localidad", "provincia", "municipio", "ciudad", "poblaci", "wohnort", "ville", "citt",
                     "cidade", "city", "town")),
        ClinicalPattern(
            "street", r"(?<![\w.,/-])\d{1,6}[A-Z]?(?:-\d{1,4})?[ \t]+(?:" + _DIRECTION + r"[ \t]+)?(?:"
            + _STREET_NAME_WORD + r"[ \t]+){1,4}?" + _title_and_upper(vocab.STREET_TYPES) + r"\b\.?(?:[ \t]+"
            + _DIRECTION + r"(?!\w))?(?:,?[ \t]*(?:" + _UNIT_WORD + r"\.?|#)[ \t]*#?[ \t]*[A-Z0-9-]{1,6}\b)?",
            0.8, kind="street"),
        ClinicalPattern(  # another language's street address: "Calle Dr. Joaquín Aznar Molina 2, 3F", "Rua Augusta 45",
            # "Hauptstraße 5": the street type, up to six words of its name, and a house number (or "s/n")
            "street (other languages)",
            r"(?<![\w/])(?:(?i:" + _LEADING_STREET_TYPE + r")(?<=[./]|\w(?=[ \t]))"
            r"|C/\.?(?=[ \t]*[^\W\d_][^\W\d_A-Z]))"  # "C/ Feixa Llarga", "C/. Piamonte"; not "c/o", "C/O SOB"
            r"[ \t]*(?:" + _FOREIGN_NAME_WORD + r"[ \t]+(?:-[ \t]+)?){0,5}?" + _FOREIGN_NAME_WORD + _FOREIGN_HOUSE
            + r"|(?<![\w-])[A-Z\u00c4\u00d6\u00dc][\w-]*(?i:" + _STREET_SUFFIX
            + r")(?<=\.|\w(?=[ \t]))[ \t]*\d{1,4}[a-z]?(?![\w/])",
            0.8, kind="street", trigger_re=r"(?:\b(?:" + _LEADING_STREET_TYPE
            + r")(?:[ \t]|(?<=[./]))|\bc/\.?[ \t]*[^\W\d_]{2}|\w(?:" + _STREET_SUFFIX
            + r")[ \t]*\d)"),
        ClinicalPattern(  # Hungarian order, the type after the name: "Rákóczi út 13", "hegyalja út 98",
            # "Árpád fejedelem útja 62"; a capitalised word may lead a second one
            "street (type after the name)",
            r"(?<![\w-])(?:\d{1,5}[ \t]+)?(?:\p{Lu}[\w'-]*[ \t]+(?:[\w'-]+[ \t]+)?|[\w'-]+[ \t]+)(?i:"
            + _TRAILING_STREET_TYPE + r")(?<=\.|\w(?=[ \t]))[ \t]*\d{1,4}[a-z]?(?![\w/])",
            0.8, kind="street", trigger_re=r"(?:^|[^\w])(?:" + _TRAILING_STREET_TYPE + r")[ \t]*\d"),
        ClinicalPattern(  # Italian "Via" and Polish "ul." lead an address only before a capitalised name and a
            # number ("Via Roma 131", "Via delle Coste 41", "ul. Jesionowa 127"; not "via PICC 2", "Via NGT 2")
            _VIA_PATTERN,
            r"(?<![\w/])(?:(?:Via|VIA)[ \t]+(?:" + _IT_PARTICLE + r"[ \t]*)?|ul\.[ \t]*)\p{Lu}\p{Ll}[\w'-]*"
            r"(?:[ \t]+(?:" + _IT_PARTICLE + r"|\p{Lu}[\w'-]*)){0,3}[ \t]+\d{1,4}[a-z]?(?![\w/])",
            0.8, kind="street", trigger=("via", "ul.")),
        ClinicalPattern(
            "po box", r"\b(?i:p\.?[ \t]?o\.?[ \t]*box|post[ \t]+office[ \t]+box|pob)[ \t]*#?[ \t]*\d{1,6}\b", 0.9,
            kind="pobox", trigger=("box", "pob")),
        ClinicalPattern(  # other languages' post-office boxes: "Apartado de Correos 20134", "Apdo. 12", "Postfach 1234",
            # "Caixa Postal 45", "Casella postale 7"; a bare "apartado 3" is a section of a report
            "po box (other languages)", r"\b(?i:apartado[ \t]+(?:de[ \t]+correos|postal)|apdo\.?|postfach|caixa[ \t]+postal|"
            r"casella[ \t]+postale|bo[iî]te[ \t]+postale)[ \t]*(?:n[\u00bao°]\.?[ \t]*)?#?[ \t]*\d{1,6}\b", 0.9,
            kind="pobox", trigger=("apartado", "apdo", "postfach", "postal")),
        ClinicalPattern(  # military addresses: "PSC 0413, Box 8144", "Unit 4719 Box 7394"
            "military box", r"\b(?i:psc|cmr|unit)[ \t]+\d{3,5},?[ \t]+(?i:box)[ \t]+\d{3,5}\b", 0.9, kind="pobox",
            trigger=("box",)),
        ClinicalPattern(  # "APO AE 09012": a military address's last line, its post office (APO, FPO, DPO) and
            # region (AA, AE, AP) where a city and a state would stand (USPS Publication 28), one span
            "military zip", r"\b(?i:apo|fpo|dpo)[ \t]+(?i:aa|ae|ap)[ \t]+\d{5}(?:-\d{4})?\b", 0.9,
            kind="military", trigger=("apo", "fpo", "dpo")),
        ClinicalPattern(  # the ship's line above it: "USNS Saibara", "uscgc aslakhanov" before "FPO AP 12428"
            "military ship", r"\b(?i:usns|usnv|uss|uscgc)[ \t]+[^\W\d_][\w'-]*(?:[ \t]+[^\W\d_][\w'-]*){0,2}"
            # (the next line, after a comma or a line break and a few marks: bounded, no backtracking over long runs)
            r"(?=[ \t]*[,\n][^\w\n]{0,6}(?:\n[^\w\n]{0,6})?(?i:fpo|apo|dpo)[ \t]+(?i:aa|ae|ap)[ \t]+\d{5})", 0.9,
            kind="pobox", trigger=("fpo", "apo", "dpo")),
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
        if kind == "addressfield":  # only where no street pattern reads the value: theirs are the finer spans
            if not any(rx.search(text, start, end) for p, rx in self._compiled if p.kind in ("street", "pobox")):
                yield Hit(start, end, Label.LOCATION, Subtype.STREET, pattern.score)
            return
        if kind == "placefield":  # the value without a sentence's period after an abbreviated last word ("Vigo.")
            yield Hit(start, end - 1 if text[end - 1] == "." else end, Label.LOCATION, Subtype.CITY, pattern.score)
            return
        if kind == "military":  # no subtype: a surrogate reads it as a place and a ZIP ("Phoenix 26070")
            yield Hit(start, end, Label.LOCATION, None, pattern.score)
            return
        if kind in ("street", "pobox", "zip"):
            number = _LEADING_NUMBER.match(text, start)
            if kind == "street" and (measure_before(text, start, 12) or _SAINT.match(text, end)
                                     or unit_after(text, number.end() if number else start)
                                     or (pattern.name == _VIA_PATTERN and unit_after(text, end))
                                     or _NOT_HOUSE_NUMBER.match(text, start)):
                return  # "BP 120 ...", "ST. JUDE VALVE", "40 MEQ KCL. ST.", "Via Foley 200 cc"
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
            if line_fact(is_all_caps, text, start) and not _known_city(text, city_start, city_end):
                return  # ALL-CAPS line, no case evidence: "LASIX, CO/CI", "BASES BILAT, CT" need a known city
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
            if token in _CITY_STOP or (token in vocab.STREET_TYPE_WORDS and i < len(words) - 1):
                keep = i + 1
        if keep >= len(words):
            return None
        return int(words[keep].start()), end
