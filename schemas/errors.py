"""Coded errors. Messages name codes, segments, fields and offsets, never note content."""

from __future__ import annotations


class DeidError(Exception):
    """Base class: ``code`` is stable and documented; ``str(err)`` never contains note text."""

    code: str = "E000"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        if code is not None:
            self.code = code
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
