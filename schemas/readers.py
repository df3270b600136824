"""Reading notes from files: the one reader of JSON, JSONL and HL7 v2 inputs (the CLI, the producer and
gold loading all go through :func:`iter_raw`).

What a path gives (a file, or a folder walked recursively in sorted path order, where only files with the
suffixes of :data:`INPUT_SUFFIXES` are read, in any letter case):

==============================  =========================================================================
``.jsonl``                      one note per non-blank line
``.json``                       ONE JSON document: an object is one note, an array is a list of notes
                                (JSONL content in a ``.json`` file is invalid JSON: name it ``.jsonl``)
``.hl7``, ``.er7``, ``.txt``    HL7 v2: one or more messages (``schemas.hl7.iter_hl7_file``)
==============================  =========================================================================

A file named directly with another suffix is read as HL7 (gold files: as JSONL, see
:func:`read_json_records`).

:func:`iter_raw` yields one :class:`RawItem` per note or message (its format and its bytes, not parsed),
or an :class:`InputFailure` for a file that gives none (missing path, unreadable file, an HL7 file without
a message). :func:`iter_inputs` parses the items into ``NoteIn``; ``streams.codec.records_from_path``
publishes them as Kafka records; :func:`read_json_records` reads gold/training records. Every failure
names its place (``notes.jsonl:4`` line 4, ``notes.json#2`` the second note of an array, ``batch.hl7#3``
the third message of a file; names relative to the folder walked) and a PHI-free reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import ValidationError

from schemas.errors import DeidError, InputError, validation_summary
from schemas.models import NoteIn

JSON_SUFFIXES = (".jsonl", ".json")
HL7_SUFFIXES = (".hl7", ".er7", ".txt")
#: The files a folder walk reads (lower case; matched case-insensitively).
INPUT_SUFFIXES = JSON_SUFFIXES + HL7_SUFFIXES

Format = Literal["json", "hl7"]
FileKind = Literal["jsonl", "json", "hl7"]


@dataclass(frozen=True, slots=True)
class InputFailure:
    """An input that could not become a note. ``where`` is a file name and line/message number."""

    where: str
    code: str
    reason: str


@dataclass(frozen=True, slots=True)
class RawItem:
    """One note or message as read from a file, not parsed yet.

    ``raw``: a JSONL line or a ``.json`` file's bytes as read (an array's elements re-encoded as UTF-8
    JSON); an HL7 message as UTF-8 with ``\\r`` segment separators. ``line``: the JSONL line number;
    ``item``: the note's number (from 1) in a ``.json`` array or an HL7 file. ``fallback_id``: the note id
    of an HL7 message that names none (TXA-12 and MSH-10 empty): the file stem, ``-n`` when the file holds
    several messages."""

    file: str
    format: Format
    raw: bytes
    line: int | None = None
    item: int | None = None
    fallback_id: str | None = None

    @property
    def where(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}"
        if self.item is not None:
            return f"{self.file}#{self.item}"
        return self.file

    @property
    def place(self) -> str:
        """``where`` in words, for error messages: ``gold.jsonl line 3``, ``gold.json item 2``."""
        if self.line is not None:
            return f"{self.file} line {self.line}"
        if self.item is not None:
            return f"{self.file} item {self.item}"
        return self.file


def failure_reason(exc: DeidError) -> str:
    """The error's message without its "[Exxx] " prefix: the CLI prints ``InputFailure.code`` itself."""
    return exc.reason


def _json_document(raw: str | bytes, *, one_line: bool = False) -> Any:
    """The decoded JSON value. Raises InputError E101 (not UTF-8) or E102 (line and column named; the column only
    for ``one_line``, a JSONL line, whose place already names its line)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise InputError(f"input is not valid UTF-8 (byte {exc.start})", code="E101") from None
    try:
        return orjson.loads(text)  # the hot path of every JSON note; its JSONDecodeError is json's
    except json.JSONDecodeError as exc:
        at = f"column {exc.colno}" if one_line else f"line {exc.lineno} column {exc.colno}"
        raise InputError(f"invalid JSON at {at}", code="E102") from None


def parse_json_note(raw: str | bytes, *, one_line: bool = False) -> NoteIn:
    """Decode one JSON note (``one_line``: a JSONL line). Raises schemas.errors.InputError with a PHI-free message."""
    data = _json_document(raw, one_line=one_line)
    if not isinstance(data, dict):
        raise InputError("a note must be a JSON object", code="E103")
    try:
        return NoteIn.model_validate(data)
    except ValidationError as exc:
        raise InputError("invalid note: " + validation_summary(exc), code="E104") from None


def check_note(note: NoteIn) -> NoteIn:
    """What every note must satisfy beyond its schema, on every path in (files and Kafka records alike): text that
    is not only blanks (E122)."""
    if not note.text.strip():
        raise InputError("note text is empty", code="E122")
    return note


# -- the walk ----------------------------------------------------------------------------------------------


def file_kind(path: Path, suffixes: tuple[str, ...] = INPUT_SUFFIXES, other: FileKind = "hl7") -> FileKind:
    """How a file is read, by its suffix; ``other`` for a suffix outside ``suffixes``."""
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        return other
    if suffix == ".jsonl":
        return "jsonl"
    if suffix == ".json":
        return "json"
    return "hl7"


def input_files(path: Path, suffixes: tuple[str, ...] = INPUT_SUFFIXES) -> list[Path]:
    """The files under a folder with one of ``suffixes`` (any letter case), recursively, sorted."""
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in suffixes)


def _jsonl_items(path: Path, name: str) -> Iterator[RawItem]:
    with path.open("rb") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                yield RawItem(name, "json", line.strip(), line=lineno)


def _json_items(path: Path, name: str) -> Iterator[RawItem]:
    raw = path.read_bytes().strip()
    try:
        data = _json_document(raw)
    except InputError:  # one (malformed) note: parsing it reports the line and column
        data = None
    if isinstance(data, list):
        for i, element in enumerate(data, start=1):
            yield RawItem(name, "json", json.dumps(element, ensure_ascii=False).encode("utf-8"), item=i)
    else:
        yield RawItem(name, "json", raw)


def _hl7_items(path: Path, name: str) -> Iterator[RawItem]:
    from schemas.hl7 import iter_hl7_file

    messages = list(iter_hl7_file(path))
    for i, msg in enumerate(messages, start=1):
        fallback = f"{path.stem}-{i}" if len(messages) > 1 else path.stem
        yield RawItem(name, "hl7", msg.encode("utf-8"), item=i, fallback_id=fallback)


def _file_items(path: Path, name: str, kind: FileKind) -> Iterator[RawItem | InputFailure]:
    reader = _jsonl_items if kind == "jsonl" else _json_items if kind == "json" else _hl7_items
    try:
        items = list(reader(path, name))
    except DeidError as exc:  # e.g. an HL7 file without a message (a README.txt beside the messages)
        yield InputFailure(name, exc.code, failure_reason(exc))
        return
    except OSError as exc:
        yield InputFailure(name, "E100", f"cannot read the file ({type(exc).__name__})")
        return
    yield from items


def iter_raw(path: Path, *, suffixes: tuple[str, ...] = INPUT_SUFFIXES,
             other: FileKind = "hl7") -> Iterator[RawItem | InputFailure]:
    """Every note or message in ``path`` (a file, or a folder: its files with ``suffixes``, recursively,
    sorted), unparsed; an InputFailure for a file that gives none (E110 for a missing path)."""
    path = Path(path)
    if path.is_dir():
        for child in input_files(path, suffixes):
            yield from _file_items(child, child.relative_to(path).as_posix(), file_kind(child, suffixes, other))
        return
    if not path.exists():
        yield InputFailure(str(path), "E110", "input path does not exist")
        return
    yield from _file_items(path, path.name, file_kind(path, suffixes, other))


# -- notes and records -------------------------------------------------------------------------------------


def parse_item(item: RawItem) -> NoteIn:
    """The note in an item. Raises InputError / HL7ParseError (coded, PHI-free)."""
    if item.format == "json":
        return check_note(parse_json_note(item.raw, one_line=item.line is not None))
    from schemas.hl7 import parse_hl7

    return check_note(parse_hl7(item.raw, note_id=item.fallback_id))


def iter_inputs(path: Path) -> Iterator[NoteIn | InputFailure]:
    """Notes from a JSONL, JSON or HL7 file, or a folder of them (see the module docstring); an
    InputFailure, in place, for each note or file that could not be read."""
    for item in iter_raw(path):
        if isinstance(item, InputFailure):
            yield item
            continue
        try:
            yield parse_item(item)
        except DeidError as exc:
            yield InputFailure(item.where, exc.code, failure_reason(exc))


def read_json_records(path: str | Path, *, suffixes: tuple[str, ...] = JSON_SUFFIXES
                      ) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for every JSON object in a JSONL or JSON file, or a folder of them (gold and
    training files: the same walk and ``.json`` rule as notes; a file named directly with another suffix
    is JSONL). Raises InputError at the first line or item that is not a JSON object: E102 invalid JSON,
    E103 not an object (the place is named: ``gold.jsonl line 3: ...``), E110 missing path."""
    for item in iter_raw(Path(path), suffixes=suffixes, other="jsonl"):
        if isinstance(item, InputFailure):
            raise InputError(f"{item.where}: {item.reason}", code=item.code)
        try:
            data = json.loads(item.raw)
        except UnicodeDecodeError as exc:
            raise InputError(f"{item.place}: not valid UTF-8 (byte {exc.start})", code="E101") from None
        except json.JSONDecodeError as exc:
            at = f"column {exc.colno}" if item.line is not None else f"line {exc.lineno} column {exc.colno}"
            raise InputError(f"{item.place}: not valid JSON ({at})", code="E102") from None
        if not isinstance(data, dict):
            raise InputError(f"{item.place}: a record must be a JSON object", code="E103")
        yield item.where, data
