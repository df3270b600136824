"""processors.metrics.step: the metrics processor, the NoteMetrics contract, retention of what the pipeline tagged,
plugins, and failure isolation."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from span_items import make_span as _span

from processors.metrics.step import Metrics
from processors.pipeline import Note, Pipeline, PipelineConfig
from schemas.metrics import NoteMetrics
from schemas.models import NoteIn, Patient, PersonName

# ------------------------------------------------------------------------------------------ the processor

PATIENT = Patient(mrn="E1499912", names=(PersonName(family="Kowalczyk", given="Marguerite"),),
                  phones=("934-364-2389",), birth_date="1931-04-13")
NOTE_TEXT = ("Marguerite Kowalczyk, MRN E1499912, DOB 04/13/1931, seen 7/22/2019.\n"
             "Hx type 2 diabetes mellitus on metformin 500 mg bid. No chest pain. Hgb 13.1.\n"
             "Call 934-364-2389 with questions. Kowalczyk agrees with the plan.\n")
IDENTIFIERS = ("Marguerite", "Kowalczyk", "E1499912", "04/13/1931", "7/22/2019", "934-364-2389")


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    steps = ("regex", "dictionary", "ensemble", "transform", "leakcheck", "metrics")
    return Pipeline.from_config(PipelineConfig(steps=steps))


@pytest.fixture(scope="module")
def processed(pipeline: Pipeline) -> Note:
    (note,) = pipeline.run([NoteIn(note_id="n-1", text=NOTE_TEXT, patient=PATIENT)])
    assert note.error is None
    return note


def test_when_a_note_is_processed_then_metrics_hold_the_recall_proxy_and_retention(processed: Note) -> None:
    m = processed.metrics
    assert isinstance(m, NoteMetrics)
    assert m.recall is not None and m.retention is not None
    assert m.recall.known >= 6 and m.recall.lr == 100.0 and m.recall.lrdi == 100.0 and m.recall.verbatim == 0
    r = m.retention
    # the medical terms, the dose and the lab value are untouched by the tags
    assert r.medical_terms >= 3 and r.medical_term_retention == 1.0
    assert r.number_retention == 1.0 and r.numbers >= 3
    assert r.jsc == 100.0 and r.nsdcg == 100.0 and r.classes >= 1 and r.classifier == "concepts"
    assert r.chunks >= 2 and r.chunks_clinical == 0 and r.cire == 1.0
    assert set(m.stage_ms) == {"regex", "dictionary", "ensemble", "transform", "leakcheck"}
    assert m.versions.pipeline and m.versions.config_hash and m.versions.dictionaries["medical"].startswith("med-")
    assert m.spans == sum(m.spans_by_label.values()) == sum(m.spans_by_source.values())
    assert m.leak is False and m.note_pseudonym == processed.note_pseudonym


def test_when_metrics_are_serialised_then_no_identifier_or_note_text_is_in_them(processed: Note) -> None:
    blob = json.dumps(processed.metrics.model_dump(mode="json"))
    for value in (*IDENTIFIERS, "n-1", "diabetes", "metformin"):
        # whole words only: a version hash may hold the letters ("jargon-1f5e..." holds "n-1")
        assert not re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", blob, re.IGNORECASE), value
    again = NoteMetrics.model_validate_json(blob)
    assert again == processed.metrics


def test_when_a_clinical_number_is_tagged_then_number_retention_and_cire_drop(processed: Note) -> None:
    lab = NOTE_TEXT.index("13.1")
    wrong = processed.spans + (_span(lab, lab + 4, "ID", source="regex"),)
    note = Note(input=processed.input, spans=tuple(sorted(wrong, key=lambda s: s.start)))
    out = Pipeline.from_config(PipelineConfig(steps=("transform", "metrics"))).run_notes([note])[0]
    r = out.metrics.retention
    # "13.1" is two tokens, as the gold scoring counts them; both are a lab value: lost, in clinical syntax
    assert r.numbers_lost == r.numbers_lost_clinical == 2 and r.numbers_kept == r.numbers - 2
    assert r.chunks_clinical == 1
    assert r.cire == pytest.approx((r.chunks - 1) / r.chunks)


def test_when_a_medical_term_is_tagged_then_term_retention_and_jsc_drop(processed: Note) -> None:
    start = NOTE_TEXT.index("metformin")
    note = Note(input=processed.input, spans=processed.spans + (_span(start, start + 9, "NAME"),))
    out = Pipeline.from_config(PipelineConfig(steps=("transform", "metrics"))).run_notes([note])[0]
    r = out.metrics.retention
    assert r.medical_terms_kept == r.medical_terms - 1
    assert r.nsdcg is not None and r.nsdcg < 100.0


def test_when_there_is_no_output_then_only_counts_are_reported() -> None:
    ctx_cfg = PipelineConfig(steps=("metrics",))
    proc = Pipeline.from_config(ctx_cfg).processors[0]
    assert isinstance(proc, Metrics)
    note = Note(input=NoteIn(note_id="x", text="Seen 7/22/2019."), spans=(_span(5, 14, "DATE"),))
    (out,) = proc.process_batch([note])
    assert out.metrics.recall is None and out.metrics.retention is None
    assert out.metrics.spans_by_label == {"DATE": 1} and out.metrics.chars == 15


def test_when_options_are_unknown_then_the_processor_refuses_them() -> None:
    from schemas.errors import ConfigError

    with pytest.raises(ConfigError):
        Pipeline.from_config(PipelineConfig(steps=("metrics",), options={"metrics": {"treshold": 0.9}}))
    with pytest.raises(ConfigError):
        Pipeline.from_config(PipelineConfig(steps=("metrics",), options={"metrics": {"classifier": "nope"}}))


def test_when_the_pipeline_missed_a_message_identifier_then_the_message_scan_finds_it_verbatim(processed: Note) -> None:
    phone = NOTE_TEXT.index("934-364-2389")
    kept = tuple(s for s in processed.spans if s.start != phone)
    assert len(kept) == len(processed.spans) - 1
    note = Note(input=processed.input, spans=kept)
    out = Pipeline.from_config(PipelineConfig(steps=("transform", "metrics"))).run_notes([note])[0]
    r = out.metrics.recall
    # no dictionary step ran, so the metrics step scans the message itself: the phone is known and still there
    assert r.verbatim == 1 and r.lrdi == 0.0 and r.removed == r.known - 1
    assert r.lr == pytest.approx(100 * (r.known - 1) / r.known)


PLUGIN = '''
from processors.metrics.cir import ArrayClassifier

def classifier(ctx):
    return ArrayClassifier("site-icd", ["I21", "E11"], lambda texts: [[2.0, 0.0] for _ in texts])

class Judge:
    name = "site-judge"
    def changed_meaning(self, pairs):
        return [True for _ in pairs]

def judge(ctx):
    return Judge()

class Broken:
    name = "broken"
    def logits(self, texts):
        raise RuntimeError("model server down")

def broken(ctx):
    return Broken()
'''


def test_when_a_site_plugs_in_a_classifier_and_a_judge_then_the_metrics_use_them(
        processed: Note, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "siteplug.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = PipelineConfig(steps=("metrics",), options={"metrics": {"classifier": "siteplug:classifier",
                                                                  "cire_judge": "siteplug:judge"}})
    (out,) = Pipeline.from_config(cfg).run_notes([processed.replace(metrics=None)])
    r = out.metrics.retention
    # softmax(2, 0) = (0.88, 0.12): both classes above thb = 0.05
    assert (r.classifier, r.cire_judge, r.jsc, r.nsdcg, r.classes) == ("site-icd", "site-judge", 100.0, 100.0, 2)
    assert r.chunks_clinical == r.chunks_changed > 0  # the fake judge calls every changed chunk clinical


def test_when_measuring_fails_then_the_note_keeps_counts_and_is_not_an_error(
        processed: Note, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "siteplug.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = PipelineConfig(steps=("metrics",), options={"metrics": {"classifier": "siteplug:broken"}})
    (out,) = Pipeline.from_config(cfg).run_notes([processed.replace(metrics=None)])
    assert out.error is None and out.metrics.retention is None and out.metrics.recall is None
    assert out.metrics.spans == len(processed.spans)
