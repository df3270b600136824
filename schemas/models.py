"""Topic contracts (pydantic v2). All models are frozen and hide input values in validation errors,
so a ValidationError never carries note text or identifiers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from schemas.labels import Label, check_subtype, is_direct

_FROZEN = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True, populate_by_name=True)
_FROZEN_LAX = ConfigDict(frozen=True, extra="ignore", hide_input_in_errors=True, populate_by_name=True)


class Span(BaseModel):
    """A detection: half-open ``[start, end)`` into the ORIGINAL note text, with provenance."""

    model_config = _FROZEN

    start: int = Field(ge=0)
    end: int = Field(gt=0)
    label: Label
    subtype: str | None = None
    score: float = Field(default=1.0, ge=0.0, le=1.0)
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> Span:
        if self.end <= self.start:
            raise ValueError("span end must be greater than start")
        check_subtype(self.label, self.subtype)
        return self

    @property
    def direct(self) -> bool:
        """True when this span is a direct identifier (name, phone, ID, email, SSN, MRN)."""
        return is_direct(self.label, self.subtype)

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end


class PersonName(BaseModel):
    """A person's name in parts (HL7 XPN order: family, given, middle, suffix, prefix)."""

    model_config = _FROZEN_LAX

    family: str | None = None
    given: str | None = None
    middle: str | None = None
    prefix: str | None = None
    suffix: str | None = None
    nicknames: tuple[str, ...] = ()

    def parts(self) -> list[str]:
        """Non-empty name parts (middle names split on spaces), without prefix/suffix titles."""
        out: list[str] = []
        for value in (self.given, self.middle, self.family, *self.nicknames):
            if value:
                out.extend(p for p in value.replace(",", " ").split() if p)
        return out


class Address(BaseModel):
    model_config = _FROZEN_LAX

    street: str | None = None
    other: str | None = None
    city: str | None = None
    state: str | None = None
    zip: str | None = None
    country: str | None = None
    county: str | None = None


class Relative(BaseModel):
    model_config = _FROZEN_LAX

    name: PersonName | None = None
    relationship: str | None = None
    ids: tuple[str, ...] = ()
    phones: tuple[str, ...] = ()
    emails: tuple[str, ...] = ()
    addresses: tuple[Address, ...] = ()


class Provider(BaseModel):
    model_config = _FROZEN_LAX

    id: str | None = None
    name: PersonName | None = None
    role: str | None = None


class Facility(BaseModel):
    model_config = _FROZEN_LAX

    name: str | None = None
    id: str | None = None
    address: Address | None = None


class Patient(BaseModel):
    """The identifiers a message carries about its patient (HL7 PID/NK1, or a JSON block)."""

    model_config = _FROZEN_LAX

    id: str | None = None
    mrn: str | None = None
    ids: tuple[str, ...] = ()
    names: tuple[PersonName, ...] = ()
    birth_date: str | None = None
    phones: tuple[str, ...] = ()
    emails: tuple[str, ...] = ()
    addresses: tuple[Address, ...] = ()
    ssn: str | None = None
    relatives: tuple[Relative, ...] = ()
    #: administrative sex as the sender gives it (HL7 PID-8, table 0001: F, M, O, U, A, N; or "female", "male"):
    #: a surrogate for the patient's given name keeps it
    sex: str | None = None

    @property
    def key(self) -> str | None:
        """Stable patient key for pseudonyms and HMAC-derived surrogates."""
        return self.id or self.mrn or (self.ids[0] if self.ids else None)


class NoteIn(BaseModel):
    """A clinical note entering the pipeline (value of ``notes.raw`` once decoded)."""

    model_config = _FROZEN_LAX

    note_id: str = Field(min_length=1, validation_alias=AliasChoices("note_id", "id"))
    text: str
    language: str = "en"
    patient: Patient | None = None
    providers: tuple[Provider, ...] = ()
    facility: Facility | None = None
    source_format: Literal["json", "hl7"] = "json"
    message_type: str | None = None

    @property
    def patient_key(self) -> str:
        """Patient key if the message names one, else the note id (then surrogates are per note)."""
        if self.patient is not None and self.patient.key:
            return self.patient.key
        return self.note_id


class Versions(BaseModel):
    """What produced an output: carried in Kafka headers and in the output body."""

    model_config = _FROZEN

    pipeline: str
    model: str | None = None
    dictionaries: dict[str, str] = Field(default_factory=dict)
    config_hash: str
    #: the optional LLM pass: the served model and the prompt files' versions (``en:1,es:1,...``)
    llm_model: str | None = None
    llm_prompt: str | None = None
    #: the detector profile: the NER model's numeric path and its thresholds (``cpu-int8``, ``cpu-fp32``,
    #: ``gpu-fp16``); None when no pipeline context named one
    profile: str | None = None


class DeidentifiedNote(BaseModel):
    """Value of ``notes.deid``: the clean note. Carries no original text and no original ids.

    ``spans`` are offsets into THIS (de-identified) ``text``: where each tag or surrogate landed, so
    no offsets or lengths of the original identifiers are published."""

    model_config = _FROZEN

    note_pseudonym: str
    patient_pseudonym: str
    text: str
    mode: Literal["tag", "surrogate", "dateshift"]
    spans: tuple[Span, ...] = ()
    leak: bool = False
    source_format: Literal["json", "hl7"] = "json"
    message_type: str | None = None
    versions: Versions | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class DeadLetter(BaseModel):
    """Value of ``notes.dlq``. ``reason`` is PHI-free; ``payload_b64`` keeps the raw input so nothing is
    lost (the DLQ topic needs the same access control as ``notes.raw``)."""

    model_config = _FROZEN

    code: str
    error_type: str
    reason: str
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    stage: str | None = None
    payload_b64: str | None = None
    pipeline_version: str | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
