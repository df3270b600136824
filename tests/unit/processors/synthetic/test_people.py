"""Synthetic people and places: CMS/Census casing, hospital short forms, reproducible patients."""

from __future__ import annotations

import random
from datetime import date

import pytest

from processors.synthetic.people import People, _hospital_shorts, _title


@pytest.mark.parametrize("raw, expected", [
    ("ST JOSEPH'S HOSPITAL OF ATLANTA", "St Joseph's Hospital of Atlanta"),
    ("UCSF MEDICAL CENTER", "UCSF Medical Center"),
    ("MCDONALD", "McDonald"),
    ("SMITH-JONES", "Smith-Jones"),
    ("123 1ST ST STE 200", "123 1st St Ste 200"),
])
def test_when_a_cms_or_census_name_is_cased_then_it_reads_as_written(raw: str, expected: str) -> None:
    assert _title(raw) == expected


def test_when_a_hospital_has_a_long_name_then_its_short_forms_are_saint_and_initials() -> None:
    assert _hospital_shorts("St. Mary's Medical Center") == ("St. Mary's", "SMMC")
    assert _hospital_shorts("Mercy Hospital of the Valley") == ("MHV",)
    assert _hospital_shorts("Mercy Hospital") == ()


def test_when_sampling_a_patient_with_the_same_seed_then_it_is_the_same_patient() -> None:
    today = date(2020, 1, 1)
    assert People(random.Random(3)).patient(today) == People(random.Random(3)).patient(today)


def test_when_sampling_patients_then_ages_relatives_and_blocks_are_consistent() -> None:
    people = People(random.Random(11))
    today = date(2020, 1, 1)
    for _ in range(200):
        patient = people.patient(today)
        age = (today - patient.dob).days // 365.25
        assert 18 <= age <= 105
        assert 1 <= len(patient.relatives) <= 2
        if age > 61:
            assert not {r.relation for r in patient.relatives} & {"mother", "father"}
        block = patient.block()
        assert block["mrn"] == patient.mrn and block["ssn"] == patient.ssn
        assert block["names"][0]["family"] == patient.person.family
        assert "@" in patient.email and patient.address.zip.isdigit() and len(patient.address.zip) == 5
