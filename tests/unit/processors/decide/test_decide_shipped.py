"""The shipped decision models in the default pipelines, on sentences of our own (not the dev notes' wording): the
exact spans that stay, and what the cues of the old rules still stop."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dictionaries import vocab
from processors.decide.model import DEFAULT_MODEL, NO_NER_MODEL, features_digest, load
from processors.pipeline import Pipeline, PipelineConfig
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


@pytest.mark.parametrize(("text", "expected"), [
    ("Call 617-555-0199 or write to ann.lee@example.org about MRN 00123456.",
     [("617-555-0199", "PHONE"), ("ann.lee@example.org", "EMAIL"), ("00123456", "ID")]),
    ("BP 120/80, HR 88, CVP 12. AC 600x12, PEEP 5.", []),
])
def test_when_the_pipeline_runs_without_ner_then_its_own_model_decides(
        no_ner: Pipeline, text: str, expected: list[tuple[str, str]]) -> None:
    assert _found(no_ner, text) == expected


@pytest.mark.parametrize("folder", [DEFAULT_MODEL, NO_NER_MODEL])
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
