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
On request only (``EXTRA_KINDS``): icu_shift (``processors.synthetic.icu``: ICU shift notes made mostly of
vitals, ventilator settings, blood gases, labs, drips and nursing jargon, in capitals, lower or sentence case,
with misspellings; month/two-digit-year dates and wards named after people are tagged).

Modules: this one assembles notes from the templates in ``data`` (slot resolvers, sections, gold spans)
and writes the records; ``people`` holds the name/place/hospital pools and the samplers of people and
patients; ``formats`` renders dates, phone numbers and identifiers. Reproducible byte-for-byte: one
``random.Random(seed)`` drives everything (per-note generators are seeded from it).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from processors.synthetic import data as D
from processors.synthetic.formats import (
    DATE_FORMATS,
    MONTH_YEAR_FORMATS,
    SHORT_DATE_FORMATS,
    WEEKDAY_NAMES,
    WEEKDAY_SHORT,
    dea,
    digits,
    format_date,
    npi,
    ordinal,
    phone_number,
    render_phone,
)
from processors.synthetic.icu import shift_note
from processors.synthetic.people import Org, PatientFacts, People, Person, Place
from schemas.labels import Label, Subtype

#: Note kinds and their default sampling weights (tuned for a mean length near 1,000 characters).
KIND_WEIGHTS: dict[str, float] = {
    "icu_nursing": 0.17, "discharge": 0.15, "progress": 0.20, "radiology": 0.13, "referral": 0.13,
    "telephone": 0.12, "query": 0.10,
}
KINDS: tuple[str, ...] = tuple(KIND_WEIGHTS)
#: Kinds made only on request (``kinds=[...]``), never in the default mix, so default sets stay as they were:
#: ``icu_shift`` (``processors.synthetic.icu``: real-style ICU nursing notes, mostly numbers and jargon).
EXTRA_KINDS: tuple[str, ...] = ("icu_shift",)

_SLOT = re.compile(r"\{(\w+)\}")


# ------------------------------------------------------------------------------------------------ pieces

@dataclass(frozen=True, slots=True)
class Phi:
    """A piece of note text that is gold PHI."""

    text: str
    label: Label
    subtype: Subtype | None = None


Piece = str | Phi


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


# ------------------------------------------------------------------------------------------------ notes

@dataclass
class _Builder:
    """Accumulates pieces; PHI pieces become spans at their exact offsets."""

    upper: bool = False
    lower: bool = False
    parts: list[str] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)
    pos: int = 0

    def add(self, piece: Piece) -> None:
        text = piece if isinstance(piece, str) else piece.text
        if self.upper:
            text = text.upper()
        elif self.lower:
            text = text.lower()
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

    def __init__(self, kind: str, rng: random.Random, people: People, patient: PatientFacts,
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
        return Org(name, (), place, phone_number(rng))

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
        zip_ = place.zip + (f"-{digits(rng, 4)}" if rng.random() < 0.15 else "")
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
            return ["the ", Phi(ordinal(d.day), Label.DATE)]
        return [Phi(format_date(d, "m/d"), Label.DATE)]

    def _s_mmyy(self) -> Phi:
        """A history date as month/two-digit year ("8/97", "08/97")."""
        d = self._around(-30 * 365, -200)
        return Phi(f"{d.month:02d}/{d.year % 100:02d}" if self.rng.random() < 0.3 else f"{d.month}/{d.year % 100:02d}",
                   Label.DATE)

    def _s_weekday(self) -> Phi:
        i = self._around(-6, -1).weekday()
        return Phi(WEEKDAY_NAMES[i] if self.rng.random() < 0.5 else WEEKDAY_SHORT[i], Label.DATE)

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
        return Phi(render_phone(self.patient.phone, self.rng), Label.PHONE)

    def _s_rel_phone(self) -> Phi:
        return Phi(render_phone(self.relative.phone, self.rng), Label.PHONE)

    def _s_clinic_phone(self) -> Phi:
        return Phi(render_phone(self.clinic.phone or phone_number(self.rng), self.rng), Label.PHONE)

    def _s_fax(self) -> Phi:
        return Phi(render_phone(phone_number(self.rng), self.rng), Label.PHONE, Subtype.FAX)

    def _s_pager(self) -> list[Piece]:
        rng = self.rng
        number = rng.choice((f"{rng.randint(1, 9)}-{digits(rng, 4)}", digits(rng, 5), f"#{digits(rng, 4)}",
                             render_phone(phone_number(rng), rng)))
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
        return Phi(rng.choice((digits(rng, 10), f"{digits(rng, 9)}-{rng.randint(0, 9)}", f"A{digits(rng, 8)}")),
                   Label.ID, Subtype.ACCOUNT)

    def _s_accession(self) -> Phi:
        rng = self.rng
        yy = self.today.year % 100
        return Phi(rng.choice((f"RAD-{yy:02d}-{digits(rng, 6)}", f"CT{yy:02d}{digits(rng, 6)}",
                               f"A{yy:02d}-{digits(rng, 5)}", digits(rng, 9))), Label.ID)

    def _s_npi(self) -> Phi:
        return Phi(npi(self.rng), Label.ID, Subtype.LICENSE)

    def _s_dea(self) -> Phi:
        return Phi(dea(self.rng, self.providers[0].family), Label.ID, Subtype.LICENSE)

    def _s_member(self) -> Phi:
        return Phi(self.patient.member_id, Label.ID, Subtype.HEALTHPLAN)

    def _s_serial(self) -> Phi:
        return Phi(f"{self.rng.choice(('PJN', 'RNZ', 'BLX'))}{digits(self.rng, 6)}H", Label.ID, Subtype.DEVICE)

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

    def _s_ward(self) -> Phi:
        """A ward or building named after a person, with its floor ("Keller 4")."""
        return Phi(f"{self.people.surname()} {self.rng.randint(1, 12)}", Label.LOCATION)

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
        return [{"id": npi(self.rng), "name": p.block(), "role": r} for p, r in zip(self.providers, roles, strict=True)]

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
    if note.kind == "icu_shift":
        lines, style = shift_note(rng)
        out = _Builder(upper=style == "upper", lower=style == "lower" and rng.random() < 0.5)
        for line in lines:
            note.render(line, out)
        return out
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
    unknown = sorted(set(chosen) - set(KINDS) - set(EXTRA_KINDS))
    if unknown:
        raise ValueError(f"unknown note kinds {unknown}; known: {list(KINDS + EXTRA_KINDS)}")
    weights = [KIND_WEIGHTS.get(k, 0.15) for k in chosen]
    master = random.Random(seed)
    people = People(master)
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
    """Write records one JSON object per line (UTF-8, stable key order); returns the count. The folder is made when
    missing (as ``detect`` / ``deid`` make their output's)."""
    count = 0
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("w", encoding="utf-8", newline="\n") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count
