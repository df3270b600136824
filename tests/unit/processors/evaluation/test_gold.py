"""Gold notes: label maps (packaged and YAML), records mapped to our labels, and gold JSONL files."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import DATA

from processors.evaluation.gold import gold_from_records, load_gold, load_label_map
from processors.evaluation.scoring import evaluate
from schemas.errors import ConfigError, InputError

FIXTURE = DATA / "synthetic_small.jsonl"


# ----------------------------------------------------------------------------------------- label maps

RECORD = {"id": "p1", "text": "Dr. Ann Lee, 67, lives in Ohio",
          "spans": [{"start": 0, "end": 3, "label": "TITLE", "text": "Dr."},
                    {"start": 4, "end": 11, "label": "PERSON", "text": "Ann Lee"},
                    {"start": 13, "end": 15, "label": "AGE", "text": "67"},
                    {"start": 26, "end": 30, "label": "GPE", "text": "Ohio"}]}


def test_when_a_label_maps_to_none_then_its_spans_are_dropped() -> None:
    (note,) = gold_from_records([RECORD], {"PERSON": "NAME", "TITLE": None, "AGE": None, "GPE": "LOCATION/STATE"})
    assert [(s.text, s.label, s.subtype, s.source_label) for s in note.spans] == [
        ("Ann Lee", "NAME", None, "PERSON"), ("Ohio", "LOCATION", "STATE", "GPE")]


def test_when_labels_are_unmapped_then_the_error_lists_them() -> None:
    with pytest.raises(InputError, match=r"\['AGE', 'GPE', 'TITLE'\]"):
        gold_from_records([RECORD], {"PERSON": "NAME"})
    with pytest.raises(InputError, match="PERSON"):
        gold_from_records([RECORD], None)


@pytest.mark.parametrize("target", ["HUMAN", "NAME/ZIP", "LOCATION/NOPE"])
def test_when_a_map_target_is_not_our_label_then_config_error(target: str) -> None:
    with pytest.raises(ConfigError, match="invalid targets"):
        gold_from_records([RECORD], {"PERSON": target, "TITLE": None, "AGE": None, "GPE": None})


PRESIDIO_LABELS = ["PERSON", "STREET_ADDRESS", "GPE", "ORGANIZATION", "CREDIT_CARD", "DATE_TIME", "TITLE",
                   "PHONE_NUMBER", "AGE", "NRP", "EMAIL_ADDRESS", "ZIP_CODE", "DOMAIN_NAME", "IBAN_CODE", "US_SSN",
                   "IP_ADDRESS", "US_DRIVER_LICENSE"]
MEDDOCAN_LABELS = ["TERRITORIO", "FECHAS", "EDAD_SUJETO_ASISTENCIA", "NOMBRE_SUJETO_ASISTENCIA",
                   "NOMBRE_PERSONAL_SANITARIO", "SEXO_SUJETO_ASISTENCIA", "CALLE", "PAIS", "ID_SUJETO_ASISTENCIA",
                   "ID_TITULACION_PERSONAL_SANITARIO", "CORREO_ELECTRONICO", "ID_ASEGURAMIENTO", "HOSPITAL",
                   "FAMILIARES_SUJETO_ASISTENCIA", "INSTITUCION", "ID_CONTACTO_ASISTENCIAL", "NUMERO_TELEFONO",
                   "PROFESION", "NUMERO_FAX", "OTROS_SUJETO_ASISTENCIA", "CENTRO_SALUD", "ID_EMPLEO_PERSONAL_SANITARIO"]


@pytest.mark.parametrize("name, corpus_labels, expected", [
    ("presidio", PRESIDIO_LABELS, {"PERSON": "NAME", "TITLE": None, "NRP": None, "AGE": None, "US_SSN": "ID",
                                   "STREET_ADDRESS": "LOCATION", "DOMAIN_NAME": "URL", "CREDIT_CARD": "ID"}),
    ("meddocan", MEDDOCAN_LABELS, {"NOMBRE_SUJETO_ASISTENCIA": "NAME", "FECHAS": "DATE", "CALLE": "LOCATION",
                                   "SEXO_SUJETO_ASISTENCIA": None, "FAMILIARES_SUJETO_ASISTENCIA": None,
                                   "EDAD_SUJETO_ASISTENCIA": None, "NUMERO_FAX": "PHONE", "HOSPITAL": "ORGANIZATION",
                                   "OTROS_SUJETO_ASISTENCIA": "OTHER"}),
])
def test_when_loading_a_packaged_map_then_every_corpus_label_is_mapped(
        name: str, corpus_labels: list[str], expected: dict[str, str | None]) -> None:
    mapping = load_label_map(name)
    assert not set(corpus_labels) - set(mapping)
    assert {k: mapping[k] for k in expected} == expected


def test_when_loading_a_map_from_yaml_then_both_layouts_work(tmp_path: Path) -> None:
    wrapped, bare = tmp_path / "a.yaml", tmp_path / "b.yaml"
    wrapped.write_text("name: mine\nlabels:\n  PERSON: NAME/PATIENT\n  TITLE: null\n")
    bare.write_text("PERSON: NAME\n")
    assert load_label_map(wrapped) == {"PERSON": "NAME/PATIENT", "TITLE": None}
    assert load_label_map(str(bare)) == {"PERSON": "NAME"}
    with pytest.raises(ConfigError, match="neither packaged"):
        load_label_map("i2b2")


# ----------------------------------------------------------------------------------------- gold files

def test_when_loading_the_synthetic_fixture_then_gold_scores_itself_perfectly() -> None:
    gold = load_gold(FIXTURE)
    assert len(gold) == 30 and all(n.kind for n in gold)
    result = evaluate(gold, {n.id: n.spans for n in gold})
    assert (result.precision, result.recall, result.entity_recall, result.fn, result.fp) == (1.0, 1.0, 1.0, 0, 0)
    with_patient = [n.to_note_in() for n in gold if n.extra.get("patient")]
    assert with_patient and all(n.patient is not None and n.patient.mrn for n in with_patient)


@pytest.mark.parametrize("line, message", [
    ('{"id": "a", "text": "Ann", "spans": [{"start": 0, "end": 3, "label": "NAME", "text": "Bob"}]}',
     "span text differs"),
    ('{"id": "a", "text": "Ann", "spans": [{"start": 0, "end": 9, "label": "NAME"}]}', "outside the text"),
    ('{"id": "a", "text": "Ann"', "line 1: not valid JSON"),
    ('{"text": "Ann"}', "needs 'id' and 'text'"),
])
def test_when_a_gold_file_is_malformed_then_input_error_without_text(tmp_path: Path, line: str,
                                                                     message: str) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=message) as info:
        load_gold(path)
    assert "Bob" not in str(info.value) and "Ann" not in str(info.value)
