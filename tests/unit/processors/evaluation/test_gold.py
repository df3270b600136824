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


# ------------------------------------------------------------------------------------------ IGNORE, own labels, groups

def _rec(text: str, spans: list[tuple[str, str]], **extra: object) -> dict[str, object]:
    out = []
    for sub, label in spans:
        start = text.index(sub)
        out.append({"start": start, "end": start + len(sub), "label": label, "text": sub})
    return {"id": "n1", "text": text, "spans": out, **extra}


def test_when_a_label_maps_to_ignore_then_its_tokens_leave_precision_and_recall() -> None:
    from processors.evaluation.gold import IGNORE, gold_from_records
    from processors.evaluation.scoring import evaluate_note

    rec = _rec("Seen by Dr Quill in 1998 for CABG.", [("Quill", "HCPName"), ("1998", "DateYear")])
    (note,) = gold_from_records([rec], {"HCPName": "NAME/PROVIDER", "DateYear": IGNORE})
    assert [s.label for s in note.spans] == ["NAME"] and note.ignored == ((20, 24),)
    found_year = evaluate_note(note, [{"start": 11, "end": 16, "label": "NAME"},
                                      {"start": 20, "end": 24, "label": "DATE"}])
    missed_year = evaluate_note(note, [{"start": 11, "end": 16, "label": "NAME"}])
    assert (found_year.tp, found_year.fp, found_year.fn) == (1, 0, 0)
    assert (missed_year.tp, missed_year.fp, missed_year.fn) == (1, 0, 0)
    assert found_year.tokens == missed_year.tokens == len("Seen by Dr Quill in 1998 for CABG".split()) - 1


def test_when_a_label_maps_to_null_then_a_detection_there_is_a_false_positive() -> None:
    from processors.evaluation.gold import gold_from_records
    from processors.evaluation.scoring import evaluate_note

    (note,) = gold_from_records([_rec("Pt is 45 yo.", [("45", "AGE")])], {"AGE": None})
    counts = evaluate_note(note, [{"start": 6, "end": 8, "label": "AGE"}])
    assert (counts.tp, counts.fp, counts.fn) == (0, 1, 0)


def test_when_labels_are_not_ours_and_no_map_then_own_labels_keep_them_and_strict_refuses() -> None:
    from processors.evaluation.gold import gold_from_records
    from schemas.errors import InputError

    rec = _rec("Wife Maude called.", [("Maude", "RelativeProxyName")])
    (note,) = gold_from_records([rec], None, own_labels=True)
    assert [(s.label, s.source_label) for s in note.spans] == [("RelativeProxyName", "RelativeProxyName")]
    with pytest.raises(InputError, match="without a mapping"):
        gold_from_records([rec], None)


def test_when_a_record_has_a_patient_group_then_it_is_the_notes_group_not_pipeline_input() -> None:
    from processors.evaluation.gold import gold_from_records

    (note,) = gold_from_records([_rec("BP 120/80.", [], patient_group=7)])
    assert note.group == "7" and "patient_group" not in note.extra
    assert note.to_note_in().text == "BP 120/80."


def test_the_physionet_map_is_packaged_and_leaves_bare_years_out() -> None:
    from processors.evaluation.gold import IGNORE, load_label_map

    mapping = load_label_map("physionet")
    assert mapping["DateYear"] == IGNORE and mapping["HCPName"] == "NAME/PROVIDER"
