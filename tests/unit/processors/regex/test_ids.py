"""regex step, IDs by context word and by shape, SSNs and credit cards; gene, lab and code names that
are not IDs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from schemas.labels import Label, Subtype

Expected = tuple[str, Label, Subtype | None]

ID = Label.ID

POSITIVE: list[tuple[str, list[Expected]]] = [
    # IDs by context word and by shape
    ("MRN: 12345678", [("12345678", ID, Subtype.MRN)]),
    ("MRN#A1234567", [("A1234567", ID, Subtype.MRN)]),
    ("Medical record number 00123456", [("00123456", ID, Subtype.MRN)]),
    ("Pt ID 556677", [("556677", ID, Subtype.MRN)]),
    ("Acct # 998877", [("998877", ID, Subtype.ACCOUNT)]),
    ("Encounter 4455667788", [("4455667788", ID, Subtype.ACCOUNT)]),
    ("CSN 123456789", [("123456789", ID, Subtype.ACCOUNT)]),
    ("Accession S19-12345", [("S19-12345", ID, None)]),
    ("Specimen ID: AB123456", [("AB123456", ID, None)]),
    ("Medicare ID 1EG4-TE5-MK73", [("1EG4-TE5-MK73", ID, Subtype.HEALTHPLAN)]),
    ("Policy #XYZ123456789", [("XYZ123456789", ID, Subtype.HEALTHPLAN)]),
    ("Member ID: W123456789", [("W123456789", ID, Subtype.HEALTHPLAN)]),
    ("DEA AB1234563", [("AB1234563", ID, Subtype.LICENSE)]),
    ("NPI 1234567893", [("1234567893", ID, Subtype.LICENSE)]),
    ("Driver's license # D1234567", [("D1234567", ID, Subtype.LICENSE)]),
    ("Pacemaker serial number PJN123456S", [("PJN123456S", ID, Subtype.DEVICE)]),
    ("Car VIN 1HGCM82633A004352", [("1HGCM82633A004352", ID, Subtype.VEHICLE)]),
    ("Order # 4477123", [("4477123", ID, None)]),
    ("Outside ref #A99812", [("A99812", ID, None)]),
    ("Sample A1234567 received.", [("A1234567", ID, None)]),
    ("Old chart 12345678 scanned.", [("12345678", ID, None)]),
    ("SSN 123-45-6789", [("123-45-6789", ID, Subtype.SSN)]),
    ("Social security number 078 05 1120.", [("078 05 1120", ID, Subtype.SSN)]),
    ("SSN: ***-**-1234", [("***-**-1234", ID, Subtype.SSN)]),
    ("Paid with card 4111 1111 1111 1111.", [("4111 1111 1111 1111", ID, Subtype.ACCOUNT)]),
    ("Outside film PA-123-4567 reviewed.", [("PA-123-4567", ID, None)]),  # a label-like prefix, a long group
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_when_identifier_then_tagged_with_exact_offsets(
    assert_tagged: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged(text, expected)


#: Gene variants, classification codes and lab values shaped like record numbers.
MUST_NOT_TAG: list[str] = [
    "TP53 g.7578395G>C", "C5-C6", "C5-6 disc", "CD4 count 350", "A1c 7.2", "rs1234567", "BRCA1", "CYP2D6*4",
    "HLA-B27", "FK506", "T2N0M0", "E11.9", "12-lead EKG", "#16 Foley", "on 2L NC", "1000000 units penicillin",
    "FEV1 1.2 L", "G2P1", "ICD-10 I10", "PHQ-9 score 12", "factor V Leiden, prothrombin G20210A",
    "BRAF V600E", "WBC 8.4 x 109/L",
    # a vital-sign label written onto its value or range
    "BP 106-195/54-92, HR-110-133 overnight", "RATE98-100, no ectopy", "SBP130-140 on drip",
]


@pytest.mark.parametrize("text", MUST_NOT_TAG + [t.upper() for t in MUST_NOT_TAG])
def test_when_medical_value_then_not_redacted(assert_not_redacted: Callable[[str], None], text: str) -> None:
    assert_not_redacted(text)
