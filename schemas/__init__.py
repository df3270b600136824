"""Message models (topic contracts), labels, HL7 v2 mapping and JSON Schema export."""

from schemas.errors import ConfigError, DeidError, HL7ParseError, InputError, ProcessingError
from schemas.labels import DIRECT_LABELS, QUASI_LABELS, Label, Subtype, is_direct
from schemas.models import (
    Address,
    DeadLetter,
    DeidentifiedNote,
    Facility,
    NoteIn,
    Patient,
    PersonName,
    Provider,
    Relative,
    Span,
    Versions,
)

__all__ = [
    "Address", "ConfigError", "DIRECT_LABELS", "DeadLetter", "DeidError", "DeidentifiedNote", "Facility",
    "HL7ParseError", "InputError", "Label", "NoteIn", "Patient", "PersonName", "ProcessingError", "Provider",
    "QUASI_LABELS", "Relative", "Span", "Subtype", "Versions", "is_direct",
]
