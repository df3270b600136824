"""The message's own identifiers, found in any text: the patient-specific dictionary (DESIGN.md §3).

The identifiers a note carries about its patient, relatives, providers and facility (HL7 PID/NK1/PV1/OBR/
TXA, or the JSON patient block) are matched exactly (case-insensitive, word-bounded), fuzzily for name
parts (Jaro-Winkler, built for name typos: "Jonh" ~ "John" 93, "Smyth" ~ "Smith" 89), with initials,
phone digit sequences, SSNs with or without dashes and birth dates in common formats. The dictionary
step runs it on the original (source ``"message"``); the leak check re-runs it on the output and the
metrics step on the original when no dictionary step ran."""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from rapidfuzz.distance import JaroWinkler

from dictionaries import vocab
from dictionaries.calendar import MONTHS
from dictionaries.text import FAMILY_CUES, PROVIDER_CUES, TITLES_DOCTOR, TITLES_OTHER, TOKEN, NoteText
from schemas.labels import Label, Subtype
from schemas.models import Address, NoteIn, PersonName, Span

logger = logging.getLogger(__name__)

MESSAGE = "message"
_NON_DIGIT = re.compile(r"\D")
_NON_ALNUM = re.compile(r"[^0-9A-Za-z]")
_PREFIXED_NUMBER = re.compile(r"^([A-Za-z]+)(0*)(\d{5,})$")
_ISO_DATE = re.compile(r"^(\d{4})-?(\d{2})-?(\d{2})")
_US_DATE = re.compile(r"^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})$")
#: Bound of each per-value regex cache below. The message's values repeat across a patient's notes;
#: compiling them per note was the main cost of the message matcher (and overflows re's own cache).
_REGEX_CACHE = 4096
_PATIENT_CUES = frozenset({"pt", "patient", "name", "named"})


@dataclass
class _Person:
    subtype: Subtype
    parts: list[str]  # lower case, single words
    initials: list[str]  # e.g. ["js", "jms"]
    family: set[str]
_SUBTYPE_RANK = {Subtype.PATIENT: 0, Subtype.RELATIVE: 1, Subtype.PROVIDER: 2}
_STREET_SUFFIX = {
    "street": ("street", "st"), "st": ("street", "st"), "avenue": ("avenue", "ave", "av"), "ave": ("avenue", "ave", "av"),
    "road": ("road", "rd"), "rd": ("road", "rd"), "drive": ("drive", "dr"), "dr": ("drive", "dr"),
    "lane": ("lane", "ln"), "ln": ("lane", "ln"), "boulevard": ("boulevard", "blvd"), "blvd": ("boulevard", "blvd"),
    "court": ("court", "ct"), "ct": ("court", "ct"), "place": ("place", "pl"), "pl": ("place", "pl"),
    "terrace": ("terrace", "ter"), "circle": ("circle", "cir"), "cir": ("circle", "cir"),
    "highway": ("highway", "hwy"), "hwy": ("highway", "hwy"), "parkway": ("parkway", "pkwy"),
    "pkwy": ("parkway", "pkwy"), "square": ("square", "sq"), "way": ("way",), "trail": ("trail", "trl"),
}
_DIRECTIONS = {"n": ("n", "north"), "s": ("s", "south"), "e": ("e", "east"), "w": ("w", "west"),
               "north": ("n", "north"), "south": ("s", "south"), "east": ("e", "east"), "west": ("w", "west")}


def _split_parts(value: str | None, min_len: int) -> list[str]:
    if not value:
        return []
    return [w.lower() for w in TOKEN.findall(value) if len(w) >= min_len and not w.isdigit()]


def _person(name: PersonName, subtype: Subtype, min_len: int) -> _Person:
    parts: list[str] = []
    for raw in name.parts():
        for w in _split_parts(raw, min_len):
            if w not in parts:
                parts.append(w)
    given = _split_parts(name.given, 1)
    middle = _split_parts(name.middle, 1)
    family = _split_parts(name.family, 1)
    initials: list[str] = []
    if given and family:
        initials.append(given[0][0] + family[0][0])
        if middle:
            initials.append(given[0][0] + middle[0][0] + family[0][0])
    return _Person(subtype, parts, initials, set(_split_parts(name.family, min_len)))


def _bounded(text: str, start: int, end: int) -> bool:
    """``text[start:end]`` is not part of a longer word or number ("123-45" of "123-45-6789")."""
    if start > 0 and (text[start - 1].isalnum() or (text[start - 1] in ".-/" and start > 1
                                                      and text[start - 2].isalnum())):
        return False
    return not (end < len(text) and (text[end].isalnum() or (text[end] in ".-/" and end + 1 < len(text)
                                                              and text[end + 1].isalnum())))


def _find_digits(t: NoteText, key: str, phone: bool) -> list[tuple[int, int]]:
    """Where the digit sequence ``key`` occurs as a whole number, whatever the separators:
    "(555) 123-4567", "555.123.4567", "5551234567", "123-45-6789"."""
    text = t.text
    found = []
    for digits, pos in t.digit_runs():
        a = digits.find(key)
        while a >= 0:
            b = a + len(key)
            left_ok = a == 0 or not _joined(text, pos[a - 1], pos[a])
            if phone and a == 1 and digits[0] == "1":
                left_ok, a_start = True, pos[0]  # "1-555-123-4567", "+1 555 ...": country code
            else:
                a_start = pos[a]
            right_ok = b == len(digits) or not _joined(text, pos[b - 1], pos[b])
            if left_ok and right_ok:
                s, e = a_start, pos[b - 1] + 1
                if phone and s > 0 and text[s - 1] == "(" and ")" in text[s:e]:
                    s -= 1
                if phone and s > 0 and text[s - 1] == "+":
                    s -= 1
                if _bounded(text, s, e) or (s > 0 and text[s - 1] in "(+"):
                    found.append((s, e))
            a = digits.find(key, a + 1)
    return found


def _joined(text: str, p: int, q: int) -> bool:
    """Digits at p < q belong to one number: adjacent, or separated without blanks ("123-45")."""
    gap = text[p + 1:q]
    return not gap or not any(c.isspace() for c in gap) and ")" not in gap


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _id_regex(key: str) -> re.Pattern[str]:
    """An alphanumeric identifier with optional separators between its characters ("MRN-0098765")."""
    return re.compile(r"[\s.\-/]?".join(re.escape(c) for c in key), re.I)


def _literal_regex(value: str) -> re.Pattern[str]:
    """``value``'s words with any blanks, commas or dots between them, in any case."""
    words = value.split()
    # the same words in another case or spacing share one compiled pattern (ASCII only: lower-casing
    # can change a non-ASCII word's length)
    return _literal_regex_norm(tuple(w.lower() for w in words) if value.isascii() else tuple(words))


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _literal_regex_norm(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"[\s,.]+".join(re.escape(w) for w in words), re.I)


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _zip_regex(zip5: str) -> re.Pattern[str]:
    """A five-digit ZIP code, with or without its +4 extension."""
    return re.compile(re.escape(zip5) + r"(?:-\d{4})?(?!\d)")


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _initials_regex(initials: str) -> re.Pattern[str]:
    """Initials ("js") as "JS", "J.S.", "J. S." (capitals only)."""
    return re.compile(r"(?<![0-9A-Za-z])" + r"\.?\s?".join(re.escape(c) for c in initials.upper())
                      + r"\.?(?![0-9A-Za-z])")


def _finditer(rx: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """Matches of ``rx`` that are whole words (checked here: a leading look-behind would stop the
    regex engine's fast literal-prefix scan)."""
    return [m.span() for m in rx.finditer(text) if _bounded(text, m.start(), m.end())]


def _street_regex(street: str) -> re.Pattern[str] | None:
    """A street address with its usual abbreviations ("Street"/"St.", "North"/"N")."""
    return _street_regex_norm(tuple(w.lower() for w in TOKEN.findall(street)))


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _street_regex_norm(words: tuple[str, ...]) -> re.Pattern[str] | None:
    if len(words) < 2:
        return None
    pieces = []
    for k, w in enumerate(words):
        alts: tuple[str, ...] = (w,)
        if k == len(words) - 1 and w in _STREET_SUFFIX:
            alts = _STREET_SUFFIX[w]
        elif w in _DIRECTIONS:
            alts = _DIRECTIONS[w]
        pieces.append("(?:" + "|".join(re.escape(a) for a in alts) + r")\.?")
    return re.compile(r"[\s,.#]+".join(pieces), re.I)


def _parse_date(value: str) -> date | None:
    s = value.strip()
    m = _ISO_DATE.match(s)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    else:
        m = _US_DATE.match(s)
        if not m:
            return None
        mo, d, y = int(m.group(1)), int(m.group(2)), int(m.group(3))
    try:
        return date(y, mo, d)
    except ValueError:
        return None


def _dob_regex(value: str) -> re.Pattern[str] | None:
    """Every common rendering of one date: 1/1/1980, 01-01-80, 1980-01-01, 19800101, Jan 1, 1980,
    1st January 1980, 01-JAN-1980, January 1st, 1980 ..."""
    d = _parse_date(value)
    return None if d is None else _date_regex(d)


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _date_regex(d: date) -> re.Pattern[str]:
    m_num = rf"0?{d.month}" if d.month < 10 else str(d.month)
    d_num = rf"0?{d.day}" if d.day < 10 else str(d.day)
    d_ord = d_num + r"(?:st|nd|rd|th)?"
    yy = f"{d.year % 100:02d}"
    y_any = rf"(?:{d.year}|'?{yy})"
    full = MONTHS[d.month - 1]
    abbr = full[:3]
    mon = rf"(?:{full}|{abbr}\.?" + ("|sept\\.?" if d.month == 9 else "") + ")"
    forms = [
        rf"{m_num}(?P<s1>[/.\-]){d_num}(?P=s1){y_any}",
        rf"{d.year}(?P<s2>[/.\-]){m_num}(?P=s2){d_num}",
        rf"{d.year}{d.month:02d}{d.day:02d}",
        rf"{d.month:02d}{d.day:02d}{d.year}",
        rf"{mon}\s+{d_ord},?\s+{y_any}",
        rf"{d_ord}(?:\s+of)?\s+{mon},?\s+{y_any}",
        rf"{d_num}-{mon}-{y_any}",
    ]
    return re.compile("|".join(forms), re.I)


def _digits(value: str) -> str:
    return _NON_DIGIT.sub("", value)


def _alnum(value: str) -> str:
    return _NON_ALNUM.sub("", value)


def _collect(note: NoteIn, min_len: int) -> tuple[list[_Person], list[tuple[str, str, Label, Subtype | None]]]:
    """People (names) and the other identifiers as (kind, value, label, subtype)."""
    people: list[_Person] = []
    items: list[tuple[str, str, Label, Subtype | None]] = []
    p = note.patient

    def address(a: Address) -> None:
        if a.street:
            items.append(("street", a.street, Label.LOCATION, Subtype.STREET))
        if a.city:
            items.append(("city", a.city, Label.LOCATION, Subtype.CITY))
        if a.zip:
            items.append(("zip", a.zip, Label.LOCATION, Subtype.ZIP))
        if a.county:
            items.append(("city", a.county, Label.LOCATION, None))

    if p is not None:
        for nm in p.names:
            people.append(_person(nm, Subtype.PATIENT, min_len))
        for ident in (p.mrn, p.id):
            if ident:
                items.append(("id", ident, Label.ID, Subtype.MRN))
        for ident in p.ids:
            items.append(("id", ident, Label.ID, None))
        if p.ssn:
            items.append(("id", p.ssn, Label.ID, Subtype.SSN))
        for ph in p.phones:
            items.append(("phone", ph, Label.PHONE, None))
        for em in p.emails:
            items.append(("email", em, Label.EMAIL, None))
        for a in p.addresses:
            address(a)
        if p.birth_date:
            items.append(("dob", p.birth_date, Label.DATE, Subtype.BIRTHDATE))
        for rel in p.relatives:
            if rel.name is not None:
                people.append(_person(rel.name, Subtype.RELATIVE, min_len))
            for ph in rel.phones:
                items.append(("phone", ph, Label.PHONE, None))
            for em in rel.emails:
                items.append(("email", em, Label.EMAIL, None))
            for a in rel.addresses:
                address(a)
    for prov in note.providers:
        if prov.name is not None:
            people.append(_person(prov.name, Subtype.PROVIDER, min_len))
        if prov.id:
            items.append(("id", prov.id, Label.ID, None))
    if note.facility is not None:
        if note.facility.name:
            items.append(("org", note.facility.name, Label.ORGANIZATION, Subtype.HOSPITAL))
        if note.facility.address is not None:
            address(note.facility.address)
    return people, items


def _common_plain(word: str, threshold: float) -> bool:
    return vocab.is_common_word(word, threshold)


def find_message_identifiers(
    text: str, note: NoteIn, *, fuzzy: bool = True, threshold: int = 88,
    common_word_zipf: float = vocab.COMMON_WORD_ZIPF, min_name_len: int = 2,
) -> list[Span]:
    """Spans (source ``"message"``, score 1.0) of the identifiers that ``note`` carries (patient,
    relatives, providers, facility) wherever they occur in ``text`` (the note's text or an output).

    Names: exact word matches in any case for uncommon parts; parts that are common words ("Will",
    "May") only Title-case/ALL-CAPS or next to another part of the same name (in ALL-CAPS lines: only
    next to another part, a middle initial between allowed, or after a title/cue: "BRYCE Z. JONES",
    "DR LOIS W. WOOD", "WIFE WOOD"). Fuzzy: Jaro-Winkler >= ``threshold`` for capitalised
    words of >= 4 letters with the same first letter that are not themselves common words. Initials:
    "J. Smith", "J.S." or "JS" next to the surname or after "initials".
    """
    return find_message(NoteText(text), note, fuzzy, threshold, common_word_zipf, min_name_len)


def find_message(t: NoteText, note: NoteIn, fuzzy: bool, threshold: int, thr: float, min_len: int) -> list[Span]:
    people, items = _collect(note, min_len)
    out: list[Span] = []

    def span(s: int, e: int, label: Label, subtype: Subtype | None) -> None:
        out.append(Span(start=s, end=e, label=label, subtype=subtype, score=1.0, source=MESSAGE))

    # identifiers other than names
    for kind, value, label, subtype in items:
        for s, e in _match_item(t, kind, value, thr):
            span(s, e, label, subtype)

    if people:
        emails = [(s.start, s.end) for s in out if s.label == Label.EMAIL]
        _match_names(t, people, fuzzy, threshold, thr, span)
        inside = t.in_addresses()
        if emails or inside:  # "john.smith" of "john.smith@x.org" is part of an e-mail, not a name
            starts = {t.starts[i] for i in inside}
            out = [s for s in out if s.label != Label.NAME or not (
                s.start in starts or any(a <= s.start and s.end <= b for a, b in emails))]
    return dedupe(out)


def _match_item(t: NoteText, kind: str, value: str, thr: float) -> list[tuple[int, int]]:
    text = t.text
    if kind == "phone":
        digits = _digits(value)
        if len(digits) == 11 and digits.startswith("1"):
            digits = digits[1:]
        if len(digits) < 7:
            return []
        found = _find_digits(t, digits, True)
        if len(digits) == 10:  # the local number alone: "123-4567"
            found += [(a, b) for a, b in _find_digits(t, digits[3:], True)
                      if not any(x <= a and b <= y for x, y in found)]
        return found
    if kind == "id":
        key = _alnum(value)
        if len(key) < 4:
            return []
        if key.isdigit():
            return _find_digits(t, key, False)
        found = _finditer(_id_regex(key), text)
        m = _PREFIXED_NUMBER.match(key)
        if m:  # "MRN0012345" also as "0012345" / "12345"
            found += _find_digits(t, m.group(2) + m.group(3), False)
            if m.group(2):
                found += _find_digits(t, m.group(3), False)
        return found
    if kind == "email":
        return _finditer(_literal_regex(value.strip()), text)
    if kind == "zip":
        z = _digits(value)[:5]
        if len(z) < 5:
            return []
        return [m.span() for m in _zip_regex(z).finditer(text) if m.start() == 0 or not text[m.start() - 1].isdigit()]
    if kind == "street":
        street_rx = _street_regex(value)
        return _finditer(street_rx, text) if street_rx is not None else []
    if kind in ("city", "org"):
        v = value.strip()
        if len(v) < 3:
            return []
        common = vocab.is_common_term(v, thr)
        # a city named like a word ("Mobile", "Normal") only when capitalised
        return [(a, b) for a, b in _finditer(_literal_regex(v), text) if not common or text[a].isupper()]
    if kind == "dob":
        dob_rx = _dob_regex(value)
        return _finditer(dob_rx, text) if dob_rx is not None else []
    return []


def _match_names(t: NoteText, people: list[_Person], fuzzy: bool, threshold: int, thr: float, span: Any) -> None:
    n = len(t)
    part_of: dict[str, tuple[Subtype, int]] = {}
    for idx, person in enumerate(people):
        for w in person.parts:
            prev = part_of.get(w)
            if prev is None or _SUBTYPE_RANK[person.subtype] < _SUBTYPE_RANK[prev[0]]:
                part_of[w] = (person.subtype, idx)
    if not part_of:
        return
    by_initial: dict[str, list[str]] = {}
    for w in part_of:
        if len(w) >= 4:
            by_initial.setdefault(w[0], []).append(w)

    hit: list[tuple[Subtype, int, str] | None] = [None] * n  # subtype, person, part
    for i, w in enumerate(t.words):
        ref = part_of.get(w)
        if ref is not None:
            hit[i] = (ref[0], ref[1], w)
        elif fuzzy and len(w) >= 4 and t.is_cap(i) and w[0] in by_initial:
            best: tuple[float, str] | None = None
            for part in by_initial[w[0]]:
                if abs(len(part) - len(w)) > (2 if len(part) >= 8 else 1):
                    continue
                sim = JaroWinkler.normalized_similarity(w, part) * 100.0
                if sim >= threshold and (best is None or sim > best[0]):
                    best = (sim, part)
            if best is not None and not vocab.is_common_word(w, thr):
                ref = part_of[best[1]]
                hit[i] = (ref[0], ref[1], best[1])

    def initial(k: int) -> bool:
        """Word k is a one-letter capital written between two words ("Z." of "BRYCE Z. JONES")."""
        return 0 < k < n - 1 and len(t.words[k]) == 1 and t.surface(k).isupper() and not t.words[k].isdigit() \
            and t.adjacent(k - 1, k) and t.adjacent(k, k + 1)

    def neighbour(i: int) -> bool:
        """Another word of the same person's name right before or after word i, or one middle
        initial away ("BRYCE Z. JONES", "LOIS W. WOOD")."""
        h = hit[i]
        assert h is not None
        for j in (i - 2, i - 1, i + 1, i + 2):
            if 0 <= j < n and hit[j] is not None and hit[j][1] == h[1] and hit[j][2] != h[2]:  # type: ignore[index]
                lo, hi = min(i, j), max(i, j)
                if hi - lo == 2:
                    if initial(lo + 1):
                        return True
                    continue
                g = t.text[t.ends[lo]:t.starts[hi]]
                if g.strip(" ,.") == "" and len(g) <= 3:
                    return True
        return False

    def cue(i: int) -> bool:
        """A title, relationship or role word right before word i, or before its initial ("DR W. WOOD")."""
        k = i - 1
        if k > 0 and initial(k):
            k -= 1
        if k < 0:
            return False
        p = t.words[k]
        return (p in TITLES_DOCTOR or p in TITLES_OTHER or p in FAMILY_CUES or p in PROVIDER_CUES
                or p in _PATIENT_CUES)

    common_cache: dict[str, tuple[bool, bool]] = {}
    for i in range(n):
        h = hit[i]
        if h is None:
            continue
        subtype, _, part = h
        if part not in common_cache:
            common_cache[part] = (_common_plain(part, thr), vocab.is_common_term(part, thr))
        plain_common, term_common = common_cache[part]
        ok = True
        if t.is_lower(i) and plain_common:
            ok = neighbour(i)
        elif t.is_caps(i) and t.caps_line(i) and term_common:
            ok = neighbour(i) or cue(i)
        elif not t.is_cap(i) and not t.is_lower(i):
            ok = not plain_common or neighbour(i)
        elif plain_common and t.sentence_start(i) and len(t.words[i]) <= 4 and term_common:
            ok = neighbour(i) or cue(i)  # "Will follow up." for a patient named Will
        if ok:
            span(t.starts[i], t.ends[i], Label.NAME, subtype)

    # initials: "J. Smith", "J Q Smith" before a matched family name; "JS", "J.S." next to it or after "initials"
    for idx, person in enumerate(people):
        if not person.initials:
            continue
        fam_idx = [i for i in range(n) if hit[i] is not None and hit[i][1] == idx and hit[i][2] in person.family]  # type: ignore[index]
        given_initials = {ini[0] for ini in person.initials} | {ini[1] for ini in person.initials if len(ini) == 3}
        for j in fam_idx:
            k = j - 1
            while k >= 0 and len(t.words[k]) == 1 and t.surface(k).isupper() and t.words[k] in given_initials:
                g = t.text[t.ends[k]:t.starts[k + 1]]
                if g.strip(" .") != "" or len(g) > 3:
                    break
                span(t.starts[k], t.ends[k], Label.NAME, person.subtype)
                k -= 1
        for ini in person.initials:
            for m in _initials_regex(ini).finditer(t.text):
                before = t.text[max(0, m.start() - 30):m.start()].lower()
                near_family = any(abs(t.starts[j] - m.end()) <= 3 or abs(m.start() - t.ends[j]) <= 3 for j in fam_idx)
                if "initial" in before or near_family:
                    end = m.end() - (1 if m.group().endswith(".") and len(ini) > 1 else 0)
                    span(m.start(), max(end, m.start() + 1), Label.NAME, person.subtype)


def dedupe(spans: list[Span]) -> list[Span]:
    best: dict[tuple[int, int, Label], Span] = {}
    for s in spans:
        k = (s.start, s.end, s.label)
        cur = best.get(k)
        if cur is None or s.score > cur.score or (
            s.score == cur.score and _rank(s.subtype) < _rank(cur.subtype)
        ):
            best[k] = s
    return sorted(best.values(), key=lambda s: (s.start, s.end, s.label))


def _rank(subtype: str | None) -> int:
    if subtype is None:
        return 9
    try:
        return _SUBTYPE_RANK.get(Subtype(subtype), 5)
    except ValueError:
        return 5
