"""Coded errors and the one table of error codes (spaCy's ``Errors`` is the model).

Every code the project raises or dead-letters is a row of :data:`ERROR_CODES`: the exception class it
belongs to and what it means. The README's error table is checked against it. Messages name codes,
segments, fields, offsets and sizes, never note content.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pydantic import ValidationError


class DeidError(Exception):
    """Base class: ``code`` is stable and documented; ``str(err)`` never contains note text."""

    code: str = "E000"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        if code is not None:
            self.code = code
        if self.code not in ERROR_CODES:  # a programming error: every code has a row in the table
            raise KeyError(f"error code {self.code} is not in schemas.errors.ERROR_CODES")
        #: the message without its code prefix (PHI-free like the rest)
        self.reason = message
        super().__init__(f"[{self.code}] {message}")


class InputError(DeidError):
    """The input could not be decoded or validated (bad JSON, wrong encoding, missing field)."""

    code = "E100"


class HL7ParseError(InputError):
    """An HL7 v2 message is malformed. Names the segment and field, never the field's content."""

    code = "E200"

    def __init__(
        self, message: str, *, segment: str | None = None, field: int | None = None, code: str | None = None
    ) -> None:
        self.segment = segment
        self.field = field
        where = ""
        if segment is not None:
            where = f" (segment {segment}" + (f", field {field}" if field is not None else "") + ")"
        super().__init__(message + where, code=code)


class ConfigError(DeidError):
    """Settings are invalid or unsafe (e.g. surrogate mode with the default secret)."""

    code = "E300"


class ProcessingError(DeidError):
    """A processor failed on a note."""

    code = "E400"


class NoteTimeout(ProcessingError):
    """A note ran over its time budget (``worker.note_timeout_s``); ``stage`` names the step it was in."""

    code = "E422"

    def __init__(self, budget_s: float, stage: str | None = None) -> None:
        self.budget_s = budget_s
        self.stage = stage
        where = f" in step {stage}" if stage else ""
        super().__init__(f"note exceeded its time budget of {budget_s:g} s (worker.note_timeout_s){where}")


def validation_summary(exc: ValidationError, limit: int = 5, *, messages: bool = False) -> str:
    """A pydantic error as field paths and error types only ("patient.dob: date_from_datetime_parsing"), or with
    ``messages`` pydantic's messages instead of the types ("worker.batch_size: Input should be greater than or equal
    to 1"): never the input values, which may be note content or a secret."""
    key = "msg" if messages else "type"
    parts = [f"{'.'.join(str(p) for p in e.get('loc', ())) or '<root>'}: {e.get(key)}"
             for e in exc.errors(include_input=False, include_url=False, include_context=False)]
    return "; ".join(parts[:limit])


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One row of the table: the code, the exception class that carries it, and what it means."""

    code: str
    kind: type[DeidError]
    meaning: str


_ROWS: tuple[ErrorCode, ...] = (
    ErrorCode("E000", DeidError, "unclassified deidstream error"),
    # input: files, records, JSON notes
    ErrorCode("E100", InputError, "input could not be decoded or validated"),
    ErrorCode("E101", InputError, "input is not valid UTF-8 (nor the HL7 MSH-18 charset)"),
    ErrorCode("E102", InputError, "invalid JSON (line and column named)"),
    ErrorCode("E103", InputError, "a note must be a JSON object"),
    ErrorCode("E104", InputError, "not a valid note (field names and error types listed)"),
    ErrorCode("E110", InputError, "input path does not exist"),
    ErrorCode("E111", InputError, "input holds no note (an empty file, or a folder without input files)"),
    ErrorCode("E120", InputError, "empty Kafka record value (tombstone or zero bytes)"),
    ErrorCode("E121", InputError, "Kafka record larger than worker.max_note_bytes"),
    ErrorCode("E122", InputError, "the note's text is empty or whitespace only"),
    ErrorCode("E123", InputError, "record is neither JSON nor HL7 v2 (by header or content)"),
    # HL7 v2 (the segment and field are named, never their content)
    ErrorCode("E200", HL7ParseError, "malformed HL7 v2 message"),
    ErrorCode("E201", HL7ParseError, "HL7: empty payload or not an HL7 v2 message"),
    ErrorCode("E202", HL7ParseError, "HL7: no MSH segment first, or a file without messages"),
    ErrorCode("E203", HL7ParseError, "HL7: missing or unusable field separator / encoding characters"),
    ErrorCode("E204", HL7ParseError, "HL7: missing message type (MSH-9)"),
    ErrorCode("E205", HL7ParseError, "HL7: payload holds more than one message"),
    ErrorCode("E206", HL7ParseError, "HL7: a field could not be read (e.g. a control character in it)"),
    ErrorCode("E207", HL7ParseError, "HL7: no note id (TXA-12 and MSH-10 empty)"),
    ErrorCode("E208", HL7ParseError, "HL7: the message does not map to a valid note"),
    ErrorCode("E210", HL7ParseError, "HL7: message without narrative (no OBX TX/FT/long ST, no NTE)"),
    # configuration
    ErrorCode("E300", ConfigError, "configuration error (e.g. surrogate or dateshift mode with the default secret)"),
    ErrorCode("E301", ConfigError, "unknown pipeline step (the error lists the registered steps)"),
    ErrorCode("E302", ConfigError, "a registered pipeline step whose module cannot be imported"),
    ErrorCode("E303", ConfigError, "invalid options for a pipeline step (field paths and error types listed)"),
    ErrorCode("E305", ConfigError, "a listing, dump or training run would touch lockbox notes (scored in aggregate only)"),
    # processing
    ErrorCode("E400", ProcessingError, "a processor failed on a note (the note is reported, the rest continue)"),
    ErrorCode("E420", ProcessingError, "the worker could not encode a processed note"),
    ErrorCode("E421", ProcessingError, "the pipeline failed on a whole batch and on the note alone"),
    ErrorCode("E422", NoteTimeout, "the note ran over the worker's per-note time budget (worker.note_timeout_s)"),
)

#: code -> row; read-only.
ERROR_CODES: Mapping[str, ErrorCode] = MappingProxyType({row.code: row for row in _ROWS})
