"""Reading notes from files for the CLI: JSONL (one note per line), .hl7 files, or a folder of them.

Each item is either a NoteIn or an InputFailure naming where it came from and a PHI-free reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from schemas.errors import DeidError
from schemas.models import NoteIn

HL7_SUFFIXES = {".hl7", ".txt", ".er7"}


@dataclass(frozen=True, slots=True)
class InputFailure:
    """An input that could not become a note. ``where`` is a file name and line/message number."""

    where: str
    code: str
    reason: str


def validation_reason(exc: ValidationError) -> str:
    """Field paths and error types only (the models hide input values)."""
    parts = []
    for err in exc.errors(include_input=False, include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or "<root>"
        parts.append(f"{loc}: {err.get('type')}")
    return "invalid note: " + "; ".join(parts[:5])


def failure_reason(exc: DeidError) -> str:
    """The error's message without its "[Exxx] " prefix: the CLI prints ``InputFailure.code`` itself."""
    return exc.reason


def parse_json_note(raw: str | bytes) -> NoteIn:
    """Decode one JSON note. Raises schemas.errors.InputError with a PHI-free message."""
    from schemas.errors import InputError

    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise InputError(f"input is not valid UTF-8 (byte {exc.start})", code="E101") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON at line {exc.lineno} column {exc.colno}", code="E102") from None
    if not isinstance(data, dict):
        raise InputError("a note must be a JSON object", code="E103")
    try:
        return NoteIn.model_validate(data)
    except ValidationError as exc:
        raise InputError(validation_reason(exc), code="E104") from None


def _iter_jsonl(path: Path) -> Iterator[NoteIn | InputFailure]:
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                yield parse_json_note(raw)
            except DeidError as exc:
                yield InputFailure(f"{path.name}:{lineno}", exc.code, failure_reason(exc))


def _iter_hl7(path: Path) -> Iterator[NoteIn | InputFailure]:
    from schemas.hl7 import iter_hl7_file, parse_hl7

    try:
        messages = list(iter_hl7_file(path))
    except DeidError as exc:
        yield InputFailure(path.name, exc.code, failure_reason(exc))
        return
    for i, msg in enumerate(messages, start=1):
        try:
            yield parse_hl7(msg, note_id=f"{path.stem}-{i}" if len(messages) > 1 else path.stem)
        except DeidError as exc:
            yield InputFailure(f"{path.name}#{i}", exc.code, failure_reason(exc))


def iter_inputs(path: Path) -> Iterator[NoteIn | InputFailure]:
    """Notes from a JSONL file, an HL7 file, or a folder (recursively: *.jsonl and HL7 files, sorted)."""
    if path.is_dir():
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            if child.suffix == ".jsonl" or child.suffix.lower() in HL7_SUFFIXES:
                yield from iter_inputs(child)
        return
    if not path.exists():
        yield InputFailure(str(path), "E110", "input path does not exist")
        return
    if path.suffix == ".jsonl" or path.suffix == ".json":
        yield from _iter_jsonl(path)
    else:
        yield from _iter_hl7(path)
