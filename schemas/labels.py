"""Identifier labels, subtypes, and the direct / quasi-identifier split (DESIGN.md §5)."""

from __future__ import annotations

from enum import StrEnum


class Label(StrEnum):
    """The coarse identifier class of a span."""

    NAME = "NAME"
    DATE = "DATE"
    AGE = "AGE"
    PHONE = "PHONE"
    EMAIL = "EMAIL"
    ID = "ID"
    LOCATION = "LOCATION"
    ORGANIZATION = "ORGANIZATION"
    URL = "URL"
    IP = "IP"
    OTHER = "OTHER"


class Subtype(StrEnum):
    """Finer class of a span; optional. Each subtype belongs to one label (see SUBTYPE_LABEL)."""

    # NAME
    PATIENT = "PATIENT"
    PROVIDER = "PROVIDER"
    RELATIVE = "RELATIVE"
    # DATE
    BIRTHDATE = "BIRTHDATE"
    TIME = "TIME"
    # PHONE
    FAX = "FAX"
    PAGER = "PAGER"
    # ID
    MRN = "MRN"
    SSN = "SSN"
    ACCOUNT = "ACCOUNT"
    LICENSE = "LICENSE"
    HEALTHPLAN = "HEALTHPLAN"
    DEVICE = "DEVICE"
    VEHICLE = "VEHICLE"
    # LOCATION
    STREET = "STREET"
    CITY = "CITY"
    STATE = "STATE"
    ZIP = "ZIP"
    COUNTRY = "COUNTRY"
    # ORGANIZATION
    HOSPITAL = "HOSPITAL"
    CLINIC = "CLINIC"
    EMPLOYER = "EMPLOYER"


SUBTYPE_LABEL: dict[Subtype, Label] = {
    Subtype.PATIENT: Label.NAME,
    Subtype.PROVIDER: Label.NAME,
    Subtype.RELATIVE: Label.NAME,
    Subtype.BIRTHDATE: Label.DATE,
    Subtype.TIME: Label.DATE,
    Subtype.FAX: Label.PHONE,
    Subtype.PAGER: Label.PHONE,
    Subtype.MRN: Label.ID,
    Subtype.SSN: Label.ID,
    Subtype.ACCOUNT: Label.ID,
    Subtype.LICENSE: Label.ID,
    Subtype.HEALTHPLAN: Label.ID,
    Subtype.DEVICE: Label.ID,
    Subtype.VEHICLE: Label.ID,
    Subtype.STREET: Label.LOCATION,
    Subtype.CITY: Label.LOCATION,
    Subtype.STATE: Label.LOCATION,
    Subtype.ZIP: Label.LOCATION,
    Subtype.COUNTRY: Label.LOCATION,
    Subtype.HOSPITAL: Label.ORGANIZATION,
    Subtype.CLINIC: Label.ORGANIZATION,
    Subtype.EMPLOYER: Label.ORGANIZATION,
}

#: Direct identifiers name a person on their own (DESIGN.md §5: name, phone, ID, email, SSN, MRN).
DIRECT_LABELS: frozenset[Label] = frozenset({Label.NAME, Label.PHONE, Label.ID, Label.EMAIL})
#: Quasi-identifiers identify in combination (location, date, age > 89, institution, URL, IP).
QUASI_LABELS: frozenset[Label] = frozenset(
    {Label.LOCATION, Label.DATE, Label.AGE, Label.ORGANIZATION, Label.URL, Label.IP, Label.OTHER}
)


def is_direct(label: Label | str, subtype: Subtype | str | None = None) -> bool:
    """True when a span of this label/subtype is a direct identifier."""
    if subtype == Subtype.SSN or subtype == Subtype.MRN:
        return True
    return Label(label) in DIRECT_LABELS


def check_subtype(label: Label | str, subtype: Subtype | str | None) -> None:
    """Raise ValueError when ``subtype`` does not belong to ``label``."""
    if subtype is None:
        return
    # members as they are: calling the enum on one of its members costs more than the rest of the check
    owner = SUBTYPE_LABEL.get(subtype if isinstance(subtype, Subtype) else Subtype(subtype))
    if owner is not None and owner != (label if isinstance(label, Label) else Label(label)):
        raise ValueError(f"subtype {subtype} belongs to label {owner}, not {label}")
