"""The shipped decision models in the default pipelines, on sentences of our own (not the dev notes' wording): the
exact spans that stay, and what the cues of the old rules still stop."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from dictionaries import vocab
from processors.decide.model import DEFAULT_MODEL, NO_NER_MODEL, ROUTE_MODELS, features_digest, load
from processors.pipeline import Note, Pipeline, PipelineConfig
from schemas.models import NoteIn

DETECT = ("regex", "ner", "dictionary", "recovery", "decide", "ensemble")
NO_NER = ("regex", "dictionary", "recovery", "decide", "ensemble")


@pytest.fixture(scope="module")
def default() -> Pipeline:
    return Pipeline.from_config(PipelineConfig(steps=DETECT), cache_dir=vocab.cache_dir())


@pytest.fixture(scope="module")
def no_ner() -> Pipeline:
    return Pipeline.from_config(PipelineConfig(steps=NO_NER), cache_dir=vocab.cache_dir())


def _found(pipeline: Pipeline, text: str) -> list[tuple[str, str]]:
    (note,) = pipeline.run([NoteIn(note_id="t", text=text)])
    assert note.error is None
    return [(text[s.start:s.end], str(s.label)) for s in note.spans]


@pytest.mark.parametrize(("text", "expected"), [
    ("Seen by Dr. Okafor on 3/14/2021; wife Linda can be reached at 617-555-0199.",
     [("Okafor", "NAME"), ("3/14/2021", "DATE"), ("Linda", "NAME"), ("617-555-0199", "PHONE")]),
    ("PT JOHN MCALLISTER 84M ADMITTED 3/14/2021 FROM MERCY HOSPITAL.",
     [("JOHN MCALLISTER", "NAME"), ("3/14/2021", "DATE"), ("MERCY HOSPITAL", "ORGANIZATION")]),
    ("NEURO: A&O X3, MAE, PERRL. RESP: CPAP 5/5, FIO2 40%. LEVO WEANED OFF. FOLEY TO GRAVITY.", []),
    ("Continue Lasix 40 mg IV BID. Bruce protocol stress test negative. Pain 4/10.", []),
    ("MRN 00123456, email ann.lee@example.org", [("00123456", "ID"), ("ann.lee@example.org", "EMAIL")]),
])
def test_when_the_default_pipeline_reads_a_note_then_it_keeps_exactly_the_identifiers(
        default: Pipeline, text: str, expected: list[tuple[str, str]]) -> None:
    assert _found(default, text) == expected


def test_when_lightgbm_predicts_on_several_threads_then_the_probabilities_are_those_of_one(default: Pipeline) -> None:
    """The step calls LightGBM on the process's pinned thread count (``runtime.numeric_threads``): rows are scored
    independently, so the numbers must be those of one thread, to the bit, on real candidates' rows."""
    from processors.synthetic.generator import generate

    steps = {p.name: p for p in default.processors}
    notes = [Note(input=NoteIn(note_id=f"s{i}", text=r["text"])) for i, r in enumerate(generate(12, 5))]
    for name in ("regex", "ner", "dictionary", "recovery"):
        notes = steps[name].process_batch(notes)
    decide = steps["decide"]
    rows = [row for n in notes for row in decide.extractor.split(n)[2]]
    assert len(rows) > 100
    x = np.asarray(rows, dtype=np.float64)
    one = decide.model.booster.predict(x, num_threads=1)
    many = decide.model.booster.predict(x, num_threads=2)
    assert one.tobytes() == many.tobytes()
    assert decide.model.raw(rows).tobytes() == one.tobytes()


@pytest.mark.parametrize(("text", "expected"), [
    ("Call 617-555-0199 or write to ann.lee@example.org about MRN 00123456.",
     [("617-555-0199", "PHONE"), ("ann.lee@example.org", "EMAIL"), ("00123456", "ID")]),
    ("BP 120/80, HR 88, CVP 12. AC 600x12, PEEP 5.", []),
])
def test_when_the_pipeline_runs_without_ner_then_its_own_model_decides(
        no_ner: Pipeline, text: str, expected: list[tuple[str, str]]) -> None:
    assert _found(no_ner, text) == expected


@pytest.mark.parametrize("folder", [DEFAULT_MODEL, NO_NER_MODEL, ROUTE_MODELS["es"]])
def test_when_a_shipped_model_is_read_then_it_is_documented_and_matches_the_code(folder: Any) -> None:
    meta = json.loads((folder / "decider.json").read_text())
    assert meta["features_digest"] == features_digest()
    assert 0.0 < meta["threshold"] < 1.0
    probability = meta["calibration"]["probability"]
    assert all(a < b for a, b in zip(probability, probability[1:], strict=False))
    card = (folder / "MODEL_CARD.md").read_text()
    assert meta["model_id"] in card and "lockbox" in card
    design = next(c for c in meta["training"]["corpora"] if c["name"] == "physionet_design")
    assert design["nested"]["recall"] >= 0.7 and design["notes"] == 850
    model = load(folder)
    assert model.threshold == meta["threshold"]


# -- the Spanish route (pipeline.policy.language_routes) ----------------------------------------------------------

SPANISH = [
    ("Paciente varón de 64 años, D. Rafael Ortiz Menéndez, ingresado el 14 de marzo de 2019 en el Hospital "
     "Universitario de Salamanca por dolor torácico. Su hija Lucía Ortiz le acompaña; teléfono 923 456 789.",
     ["Rafael Ortiz Menéndez", "14 de marzo de 2019", "Hospital Universitario de Salamanca", "Lucía Ortiz",
      "923 456 789"], ["dolor torácico"]),
    ("Informe remitido a la Dra. Carmen Villalobos Ruiz, Servicio de Cardiología, Hospital General de Albacete, "
     "C/ Mayor 12, 02001 Albacete. NHC 4478123.",
     ["Carmen Villalobos Ruiz", "Hospital General de Albacete", "C/ Mayor 12", "02001 Albacete", "4478123"],
     ["Servicio de Cardiología"]),
    ("Mujer de 71 años con antecedentes de hipertensión arterial y diabetes mellitus tipo 2 en tratamiento con "
     "metformina 850 mg cada 12 horas. Exploración: TA 150/90 mmHg, FC 88 lpm, saturación 96%.",
     [], ["71 años", "hipertensión arterial", "diabetes mellitus tipo 2", "metformina 850 mg cada 12 horas",
          "TA 150/90 mmHg, FC 88 lpm, saturación 96%"]),
]


@pytest.fixture(scope="module")
def spanish_pair() -> Pipeline:
    """The Spanish route's NER and decision models on every note (no routing)."""
    from processors.ner.step import ROUTE_MODEL_DIRS
    from processors.pipeline import SharedPolicy

    return Pipeline.from_config(PipelineConfig(
        steps=DETECT, policy=SharedPolicy(language_routes=()),
        options={"ner": {"model_dir": str(ROUTE_MODEL_DIRS["es"])}, "decide": {"model_dir": str(ROUTE_MODELS["es"])}}),
        cache_dir=vocab.cache_dir())


def _covered(text: str, spans: list[tuple[int, int]], part: str) -> float:
    """The share of ``part``'s characters (not blanks) inside some span."""
    start = text.index(part)
    chars = [i for i in range(start, start + len(part)) if not text[i].isspace()]
    return sum(any(a <= i < b for a, b in spans) for i in chars) / len(chars)


@pytest.mark.parametrize(("text", "identifiers", "clinical"), SPANISH)
def test_when_a_spanish_note_is_routed_then_its_pair_of_models_decides_and_every_identifier_goes(
        default: Pipeline, spanish_pair: Pipeline, text: str, identifiers: list[str], clinical: list[str]) -> None:
    (routed,) = default.run([NoteIn(note_id="t", text=text)])
    (alone,) = spanish_pair.run([NoteIn(note_id="t", text=text)])
    assert routed.spans == alone.spans and routed.dropped == alone.dropped
    spans = [(s.start, s.end) for s in routed.spans]
    assert [p for p in identifiers if _covered(text, spans, p) < 1.0] == []
    assert [p for p in clinical if _covered(text, spans, p) > 0.0] == []


@pytest.mark.parametrize(("text", "age", "kept"), [
    ("Varón de 92 años que ingresa por disnea. Su esposa, de 88 años, le acompaña.", "92", "88 años"),
    ("Paciente de 94 años con antecedentes de EPOC. Mujer de 71 años en la cama 2.", "94", "71 años"),
    ("Die 93-jährige Patientin wurde mit Dyspnoe aufgenommen, ihr 89-jähriger Ehemann begleitet sie.", "93",
     "89"),
    ("Homme de 93 ans hospitalisé pour chute, sa fille de 65 ans est présente.", "93", "65 ans"),
])
def test_when_a_note_in_another_language_gives_an_age_over_89_then_the_age_goes_and_younger_ages_stay(
        default: Pipeline, text: str, age: str, kept: str) -> None:
    (note,) = default.run([NoteIn(note_id="t", text=text)])
    spans = [(s.start, s.end) for s in note.spans]
    assert _covered(text, spans, age) == 1.0
    assert _covered(text, spans, kept) == 0.0


def test_when_a_spanish_report_opens_with_the_patients_age_then_the_age_stays(default: Pipeline) -> None:
    """The Spanish route's NER runs "Paciente varón de 64" into one NAME candidate (or, cut to its core, "de 64"); the
    decide step's ``ages`` policy drops such a candidate (``features.age_only``), so the decision model never keeps
    it."""
    text = SPANISH[0][0]
    (routed,) = default.run([NoteIn(note_id="t", text=text)])
    assert _covered(text, [(s.start, s.end) for s in routed.spans], "64 años") == 0.0
