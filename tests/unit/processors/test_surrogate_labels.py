"""The labels a surrogate depends on, through the default pipeline (real models, surrogate mode): a sample SSN is an
SSN, a named medical center an organisation, a city a location, an e-mail ends before the sentence's period, and a
patient stated to be a man keeps a man's given name (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dictionaries import vocab
from processors.pipeline import Note, Pipeline, PipelineConfig
from schemas.models import NoteIn, Patient, PersonName

SECRET = "unit-test-secret-for-surrogates-27"


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    cfg = PipelineConfig(options={"transform": {"mode": "surrogate"}})
    return Pipeline.from_config(cfg, secret=SECRET, cache_dir=vocab.cache_dir())


def _labels(note: Note) -> dict[str, tuple[str, str | None]]:
    return {note.text[s.start:s.end]: (str(s.label), s.subtype) for s in note.spans}


CASES: list[tuple[str, str, str, tuple[str, str | None]]] = [
    ("sample_ssn_after_ssn", "SSN 123-45-6789 on file.", "123-45-6789", ("ID", "SSN")),
    ("sample_ssn_after_number", "His number is 123-45-6789 on file.", "123-45-6789", ("ID", "SSN")),
    ("medical_center", "He was admitted to Saint Brennan Medical Center today.", "Saint Brennan Medical Center",
     ("ORGANIZATION", "HOSPITAL")),
    ("city_after_at", "She was seen at Springfield yesterday.", "Springfield", ("LOCATION", "CITY")),
    ("city_after_in", "Family lives in Springfield with her.", "Springfield", ("LOCATION", "CITY")),
    ("email_before_period", "Contact: john.smith@example.com.", "john.smith@example.com", ("EMAIL", None)),
]


@pytest.mark.parametrize(("text", "surface", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_when_the_pipeline_labels_an_identifier_then_a_surrogate_of_its_kind_can_replace_it(
    pipeline: Pipeline, text: str, surface: str, expected: tuple[str, str | None]
) -> None:
    (note,) = pipeline.run([NoteIn(note_id="n-1", text=text, patient=Patient(id="P-27"))])
    got = _labels(note)
    assert surface in got, got
    assert got[surface][0] == expected[0] and (expected[1] is None or got[surface][1] == expected[1]), got
    if expected[0] == "EMAIL":
        assert note.output is not None and note.output.endswith(".")  # the sentence keeps its period


def _given_name_sex(output: str, surrogate_start: int) -> str | None:
    return vocab.first_name_sex(output[surrogate_start:].split()[0].strip(",."))


@pytest.mark.parametrize(("given", "sex_field", "text_sex", "expected"), [
    ("Jordan", None, "a 67-year-old man", "M"),     # a name both sexes are given: the note says a man
    ("Jordan", None, "a 67-year-old woman", "F"),
    ("Jordan", "M", "a patient", "M"),              # HL7 PID-8 / the JSON patient block
    ("Casey", "F", "a patient", "F"),
    ("John", None, "a 67-year-old man", "M"),       # a man's name stays a man's
    ("John", None, "a patient", "M"),
])
def test_when_the_patients_sex_is_stated_then_the_surrogate_given_name_keeps_it(
    pipeline: Pipeline, given: str, sex_field: str | None, text_sex: str, expected: str
) -> None:
    text = f"{given} Quillon is {text_sex} admitted with chest pain. {given} reports dyspnea."
    patient = Patient(id="P-27", names=(PersonName(given=given, family="Quillon"),), sex=sex_field)
    (note,) = pipeline.run([NoteIn(note_id="n-1", text=text, patient=patient)])
    assert note.output is not None and given not in note.output and "Quillon" not in note.output
    assert _given_name_sex(note.output, 0) == expected, note.output


def test_when_the_demos_first_hl7_note_runs_then_its_address_parts_are_places_and_the_zip_a_zip(
    pipeline: Pipeline, shared_dir: Path
) -> None:
    from schemas.hl7 import parse_hl7

    path = shared_dir / "data" / "hl7" / "cdc-trusted-intermediary" / "CA__001_CA_OML_O21.hl7"
    (note,) = pipeline.run([parse_hl7(path.read_text(encoding="utf-8"))])
    got = _labels(note)
    assert got["94804"] == ("LOCATION", "ZIP") and got["Richmond"] == ("LOCATION", "CITY"), got
    assert all(label == "LOCATION" for label, _ in got.values()), got  # no code or ZIP read as an ID
    assert note.output is not None and "^" not in note.output and "94804" not in note.output
