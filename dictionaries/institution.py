"""A hospital's own dictionary: named term lists (providers, staff, clinics, abbreviations, sites) with
the label each list's matches get, stored as a folder and built from the hospital's CSV exports.

Folder layout (written by :func:`build_institution_dictionary`, read by :meth:`InstitutionDictionary.load`)::

    manifest.json     {"format": 1, "name", "version", "common_word_zipf",
                       "lists": {list: {"file", "label", "subtype", "score", "count"}},
                       "removed": {list: {"common_word": n, "too_short": n, "duplicate": n, "empty": n}}}
    providers.txt     one term per line (UTF-8); lines starting with "#" are comments
    clinics.txt ...   (a list file may also be a CSV with a ``term`` or ``name`` column)

``version`` is a hash of the lists' contents and labels, so the same input gives the same version and
any change of content gives a new one. The manifest holds counts only, never terms.

Accepted input columns (header names are case-insensitive; a ``.txt`` input is one term per line):

- people (``providers``, ``staff``): ``name`` or ``full_name`` ("Jane Q. Kowalski, MD", "Kowalski, Jane",
  "Dr. Jane Kowalski"), or ``first_name`` + ``last_name`` (optional ``middle_name``). Titles and
  credentials are stripped. Each person expands to "First Last", "First M. Last", "Last, First",
  "F. Last", and for providers "Dr. Last" / "Dr Last"; the surname alone only if not a common word.
- other lists (``clinics``, ``abbreviations``, ``locations``): ``name``, ``term``, ``full_name`` or
  ``abbreviation``. Entries that are common words or phrases ("Primary Care", "Main") are removed.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dictionaries.vocab import COMMON_WORD_ZIPF, is_common_term
from schemas.errors import ConfigError, InputError
from schemas.labels import Label, Subtype

MANIFEST = "manifest.json"
FORMAT = 1


@dataclass(frozen=True, slots=True)
class ListSpec:
    """How matches of one list are labelled."""

    label: Label
    subtype: Subtype | None
    score: float
    people: bool


#: The lists the builder knows, and their labels.
LIST_SPECS: dict[str, ListSpec] = {
    "providers": ListSpec(Label.NAME, Subtype.PROVIDER, 0.9, True),
    "staff": ListSpec(Label.NAME, None, 0.9, True),
    "clinics": ListSpec(Label.ORGANIZATION, Subtype.CLINIC, 0.9, False),
    "abbreviations": ListSpec(Label.ORGANIZATION, None, 0.85, False),
    "locations": ListSpec(Label.LOCATION, None, 0.85, False),
}

_TITLES = {"dr", "doctor", "mr", "mrs", "ms", "miss", "mx", "prof", "professor", "sr", "sister", "fr", "rev"}
_CREDENTIALS = {
    "md", "do", "rn", "lpn", "np", "pa", "pac", "pa-c", "phd", "pharmd", "dnp", "crna", "cnm", "cns", "aprn",
    "fnp", "fnp-bc", "dds", "dmd", "od", "dpm", "mph", "msn", "bsn", "facs", "facp", "facc", "mba", "ms", "ma",
    "lcsw", "msw", "rd", "pt", "dpt", "ot", "otr", "slp", "ccc-slp", "rph", "jr", "sr", "ii", "iii", "iv",
}
_NAME_COLUMNS = ("name", "full_name", "fullname", "term", "abbreviation")


@dataclass(frozen=True)
class TermList:
    name: str
    label: Label
    subtype: Subtype | None
    score: float
    terms: tuple[str, ...]


@dataclass(frozen=True)
class InstitutionDictionary:
    """A loaded institution dictionary folder."""

    name: str
    version: str
    path: Path
    lists: tuple[TermList, ...]

    @classmethod
    def load(cls, path: Path | str) -> InstitutionDictionary:
        folder = Path(path)
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"institution dictionary without a readable {MANIFEST} ({type(exc).__name__})") from None
        if manifest.get("format") != FORMAT:
            raise ConfigError(f"institution dictionary format {manifest.get('format')!r} is not {FORMAT}")
        lists: list[TermList] = []
        for list_name, meta in sorted(manifest.get("lists", {}).items()):
            try:
                label = Label(meta["label"])
                subtype = Subtype(meta["subtype"]) if meta.get("subtype") else None
                score = float(meta.get("score", 0.9))
                terms = _read_terms(folder / str(meta["file"]))
            except (KeyError, ValueError, OSError) as exc:
                raise ConfigError(f"institution list {list_name!r} is invalid ({type(exc).__name__})") from None
            lists.append(TermList(list_name, label, subtype, score, terms))
        version = str(manifest.get("version") or _version(lists))
        return cls(str(manifest.get("name") or folder.name), version, folder, tuple(lists))

    def entries(self) -> Iterator[tuple[str, TermList]]:
        """Every (term, list) pair."""
        for tl in self.lists:
            for term in tl.terms:
                yield term, tl


def _read_terms(path: Path) -> tuple[str, ...]:
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8-sig", newline="") as fh:
            rows = list(csv.DictReader(fh))
        if not rows:
            return ()
        col = next((c for c in rows[0] if c and c.strip().lower() in ("term", "name")), None)
        if col is None:
            raise ValueError("list CSV needs a 'term' or 'name' column")
        return tuple(t for t in ((r.get(col) or "").strip() for r in rows) if t)
    lines = path.read_text(encoding="utf-8").splitlines()
    return tuple(t for t in (ln.strip() for ln in lines) if t and not t.startswith("#"))


def _version(lists: list[TermList]) -> str:
    h = hashlib.sha256()
    for tl in sorted(lists, key=lambda t: t.name):
        h.update(f"{tl.name}\x1f{tl.label}\x1f{tl.subtype}\x1f{tl.score}\x1e".encode())
        for term in tl.terms:
            h.update(term.encode("utf-8") + b"\x1e")
    return h.hexdigest()[:16]


# --- building ------------------------------------------------------------------------------------


def _clean(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip(" \t,;")


def _split_person(raw: str) -> tuple[str, str, str] | None:
    """(first, middle, last) from a display name, without titles and credentials."""
    s = _clean(raw)
    if not s:
        return None
    if "," in s:
        head, _, tail = s.partition(",")
        tail_words = [w for w in tail.replace(",", " ").split() if w.strip(".").lower() not in _CREDENTIALS]
        if not tail_words:  # "Jane Kowalski, MD"
            s = head
        else:  # "Kowalski, Jane Q."
            words = [w for w in tail_words if w.strip(".").lower() not in _TITLES]
            head_words = head.split()
            if not words or not head_words:
                return None
            return words[0], " ".join(words[1:]), " ".join(head_words)
    words = [w for w in s.split() if w.strip(".").lower() not in _TITLES]
    while words and words[-1].strip(".").lower() in _CREDENTIALS:
        words.pop()
    if len(words) < 2:
        return ("", "", words[0]) if words else None
    return words[0], " ".join(words[1:-1]), words[-1]


def _person_forms(first: str, middle: str, last: str, *, doctor: bool) -> list[str]:
    forms: list[str] = []
    if first:
        forms.append(f"{first} {last}")
        if middle:
            forms.append(f"{first} {middle} {last}")
            forms.append(f"{first} {middle[0]}. {last}")
        forms.append(f"{last}, {first}")
        forms.append(f"{first[0]}. {last}")
    if doctor:
        forms.extend((f"Dr. {last}", f"Dr {last}"))
    return forms


def _read_rows(path: Path, people: bool) -> list[tuple[str, str, str] | str]:
    """Rows of an input file: (first, middle, last) for people, else the term."""
    if path.suffix.lower() == ".txt":
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
        values = [ln for ln in lines if ln and not ln.startswith("#")]
        if not people:
            return list(values)
        return [p for p in (_split_person(v) for v in values) if p is not None]
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        cols = {c.strip().lower(): c for c in (reader.fieldnames or []) if c}
        rows = list(reader)
    out: list[tuple[str, str, str] | str] = []
    if people and "last_name" in cols:
        for r in rows:
            last = _clean(r.get(cols["last_name"]) or "")
            first = _clean(r.get(cols.get("first_name", ""), "") or "")
            middle = _clean(r.get(cols.get("middle_name", ""), "") or "")
            if last:
                out.append((first, middle, last))
        return out
    col = next((cols[c] for c in _NAME_COLUMNS if c in cols), None)
    if col is None:
        wanted = "name, full_name or first_name+last_name" if people else "name, term or abbreviation"
        raise InputError(f"{path.name}: no usable column (expected {wanted}; found {len(cols)} columns)")
    for r in rows:
        value = _clean(r.get(col) or "")
        if not value:
            continue
        if people:
            person = _split_person(value)
            if person is not None:
                out.append(person)
        else:
            out.append(value)
    return out


def build_institution_dictionary(
    out_dir: Path | str,
    *,
    providers: Path | None = None,
    clinics: Path | None = None,
    abbreviations: Path | None = None,
    locations: Path | None = None,
    staff: Path | None = None,
    common_word_zipf: float = COMMON_WORD_ZIPF,
    min_len: int = 2,
    name: str | None = None,
) -> Path:
    """Build an institution dictionary folder from a hospital's CSV/TXT exports; returns the folder."""
    inputs = {"providers": providers, "staff": staff, "clinics": clinics, "abbreviations": abbreviations,
              "locations": locations}
    if not any(inputs.values()):
        raise ConfigError("give at least one list to build an institution dictionary from")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lists: list[TermList] = []
    removed: dict[str, dict[str, int]] = {}
    inputs_count: dict[str, int] = {}
    for list_name, src in inputs.items():
        if src is None:
            continue
        spec = LIST_SPECS[list_name]
        rows = _read_rows(Path(src), spec.people)
        inputs_count[list_name] = len(rows)
        stats = {"common_word": 0, "too_short": 0, "duplicate": 0, "empty": 0}
        terms: list[str] = []
        seen: set[str] = set()

        def add(term: str, *, filter_common: bool, stats: dict[str, int] = stats, terms: list[str] = terms,
                seen: set[str] = seen) -> None:
            term = _clean(term)
            key = term.lower()
            if not term:
                stats["empty"] += 1
            elif len(term) < min_len:
                stats["too_short"] += 1
            elif key in seen:
                stats["duplicate"] += 1
            elif filter_common and is_common_term(term, common_word_zipf):
                stats["common_word"] += 1
            else:
                seen.add(key)
                terms.append(term)

        for row in rows:
            if isinstance(row, tuple):
                first, middle, last = row
                # full-name forms are specific even when each part is a common word ("Will Green")
                for form in _person_forms(first, middle, last, doctor=list_name == "providers"):
                    add(form, filter_common=False)
                add(last, filter_common=True)
            else:
                add(row, filter_common=True)
        file_name = f"{list_name}.txt"
        (out / file_name).write_text("".join(t + "\n" for t in terms), encoding="utf-8")
        lists.append(TermList(list_name, spec.label, spec.subtype, spec.score, tuple(terms)))
        removed[list_name] = stats
    manifest = {
        "format": FORMAT,
        "name": name or out.name,
        "version": _version(lists),
        "common_word_zipf": common_word_zipf,
        "lists": {
            tl.name: {"file": f"{tl.name}.txt", "label": str(tl.label),
                      "subtype": str(tl.subtype) if tl.subtype else None, "score": tl.score,
                      "inputs": inputs_count[tl.name], "count": len(tl.terms)}
            for tl in lists
        },
        "removed": removed,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out
