"""Schemas, the Pipeline (registry, per-note error isolation) and the ensemble policy."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from processors import pipeline
from processors.ensemble import accept
from processors.pipeline import BuildContext, Note, Pipeline, PipelineConfig, build_processor, register
from processors.spans import clusters, resolve_overlaps
from schemas import ConfigError, NoteIn, Span
from schemas.labels import Label, is_direct


def span(start: int, end: int, label: str = "NAME", score: float = 0.9, source: str = "ner", **kw: object) -> Span:
    return Span(start=start, end=end, label=label, score=score, source=source, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"start": 5, "end": 5, "label": "NAME", "source": "x"},
        {"start": -1, "end": 5, "label": "NAME", "source": "x"},
        {"start": 0, "end": 5, "label": "NOT_A_LABEL", "source": "x"},
        {"start": 0, "end": 5, "label": "DATE", "subtype": "MRN", "source": "x"},
        {"start": 0, "end": 5, "label": "NAME", "source": "x", "score": 1.5},
    ],
)
def test_when_span_is_invalid_then_validation_error_hides_input(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError) as info:
        Span(**kwargs)  # type: ignore[arg-type]
    assert "input_value" not in str(info.value)


def test_when_note_in_has_id_alias_then_note_id_is_set_and_errors_hide_text() -> None:
    note = NoteIn.model_validate({"id": "n1", "text": "Seen by Dr. Zyxwv"})
    assert note.note_id == "n1" and note.patient_key == "n1"
    with pytest.raises(ValidationError) as info:
        NoteIn.model_validate({"id": "", "text": "Patient Qwertyuiop here"})
    assert "Qwertyuiop" not in str(info.value)


def test_when_models_are_frozen_then_assignment_fails() -> None:
    s = span(0, 3)
    with pytest.raises(ValidationError):
        s.start = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("label", "subtype", "direct"),
    [("NAME", None, True), ("PHONE", "FAX", True), ("ID", "MRN", True), ("DATE", None, False),
     ("LOCATION", "ZIP", False), ("ORGANIZATION", "HOSPITAL", False), ("AGE", None, False), ("EMAIL", None, True)],
)
def test_direct_and_quasi_identifier_split(label: str, subtype: str | None, direct: bool) -> None:
    assert is_direct(label, subtype) is direct


@pytest.mark.parametrize(
    ("spans", "expected"),
    [
        # disjoint spans stay as they are
        ([span(0, 4), span(10, 14, "DATE", source="regex")], [(0, 4, "NAME", "ner"), (10, 14, "DATE", "regex")]),
        # partial overlap -> union extent, provenance of both
        ([span(0, 4, score=0.6), span(2, 8, score=0.9, source="dictionary")], [(0, 8, "NAME", "dictionary+ner")]),
        # label by summed score: two NAME votes beat one stronger DATE
        ([span(0, 5, "NAME", 0.6), span(0, 5, "NAME", 0.6, source="dictionary"), span(0, 5, "DATE", 0.9, source="regex")],
         [(0, 5, "NAME", "dictionary+ner+regex")]),
        # touching spans (half-open) do not merge
        ([span(0, 4), span(4, 8)], [(0, 4, "NAME", "ner"), (4, 8, "NAME", "ner")]),
        # chain of overlaps merges into one
        ([span(0, 3), span(2, 6), span(5, 9)], [(0, 9, "NAME", "ner")]),
    ],
)
def test_resolve_overlaps_table(spans: list[Span], expected: list[tuple[int, int, str, str]]) -> None:
    got = [(s.start, s.end, str(s.label), s.source) for s in resolve_overlaps(spans)]
    assert got == expected


def test_when_low_score_span_has_agreement_then_it_is_accepted() -> None:
    weak_ner = span(0, 5, score=0.2)
    weak_dict = span(1, 5, score=0.2, source="dictionary")
    lonely = span(20, 25, score=0.2)
    acc, rej = accept([weak_ner, weak_dict, lonely], {"ner": 0.5, "dictionary": 0.5}, 0.5, min_votes=2)
    assert acc == [weak_ner, weak_dict] and rej == [lonely]
    assert len(clusters(acc)) == 1


class _Boom(Exception):
    pass


class _ExplodeOnMarker:
    """Raises on notes whose text contains a marker: the pipeline must isolate that note only."""

    name = "test_explode_on_marker"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        marker: str = "BOOM"

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.config = config

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        for n in notes:
            if self.config.marker in n.text:
                raise _Boom(n.text)  # the exception text holds note text: it must not leak
        return [n.add_spans([span(0, 1, source="test")]) for n in notes]


@pytest.fixture
def explode_on_marker(monkeypatch: pytest.MonkeyPatch) -> str:
    """The test step, registered for one test only (the registry is restored afterwards)."""
    monkeypatch.setitem(pipeline._REGISTRY, _ExplodeOnMarker.name, None)  # undo removes the entry
    register(_ExplodeOnMarker.name)(_ExplodeOnMarker)
    return _ExplodeOnMarker.name


def test_when_one_note_raises_then_only_that_note_is_marked_and_reason_has_no_text(
    caplog: pytest.LogCaptureFixture, explode_on_marker: str,
) -> None:
    pipe = Pipeline.from_config(PipelineConfig(steps=("test_explode_on_marker", "ensemble")))
    notes = pipe.run([NoteIn(note_id="a", text="fine note"), NoteIn(note_id="b", text="BOOM Zanzibarova"),
                      NoteIn(note_id="c", text="also fine")])
    assert [n.error is None for n in notes] == [True, False, True]
    bad = notes[1]
    assert bad.error is not None and bad.error.stage == "test_explode_on_marker"
    assert bad.error.error_type == "_Boom"
    assert "Zanzibarova" not in repr(bad.error) and "Zanzibarova" not in caplog.text
    assert [len(n.spans) for n in notes] == [1, 0, 1]
    assert [name for name, _ in notes[0].stage_ms] == ["test_explode_on_marker", "ensemble"]


def test_when_step_unknown_then_coded_config_error_lists_the_steps() -> None:
    with pytest.raises(ConfigError, match="unknown step 'no-such-step'") as info:
        build_processor("no-such-step", {}, BuildContext())
    assert info.value.code == "E301"
    assert "regex" in str(info.value)


def test_when_step_module_is_missing_then_coded_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(pipeline.STEP_MODULES, "ghost", "processors.no_such_module")
    with pytest.raises(ConfigError, match="cannot be imported") as info:
        build_processor("ghost", {}, BuildContext())
    assert info.value.code == "E302"


def test_when_step_module_registers_another_name_then_coded_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(pipeline.STEP_MODULES, "ghost", "processors.spans")
    with pytest.raises(ConfigError, match="registers no step") as info:
        build_processor("ghost", {}, BuildContext())
    assert info.value.code == "E302"


def test_when_options_invalid_then_coded_config_error_names_the_field_not_the_value() -> None:
    with pytest.raises(ConfigError, match="invalid options for step 'ensemble'") as info:
        Pipeline.from_config(PipelineConfig(steps=("ensemble",), options={"ensemble": {"nope": "s3cr3t-value"}}))
    assert info.value.code == "E303"
    assert "nope" in str(info.value) and "s3cr3t-value" not in str(info.value)


@pytest.mark.parametrize("step", sorted(pipeline.STEP_MODULES))
def test_every_registry_row_points_at_a_module_that_registers_that_step(step: str) -> None:
    importlib.import_module(pipeline.STEP_MODULES[step])
    assert step in pipeline._REGISTRY
    assert pipeline.DEFAULT_STEPS == tuple(s for s in pipeline.STEP_MODULES if s not in pipeline.OPTIONAL_STEPS)
    assert "llm" in pipeline.OPTIONAL_STEPS and "llm" not in pipeline.DEFAULT_STEPS


def test_config_hash_changes_with_options() -> None:
    a = PipelineConfig()
    b = PipelineConfig(options={"ensemble": {"min_votes": 3}})
    assert a.config_hash() == PipelineConfig().config_hash() != b.config_hash()


def test_labels_cover_the_issue_list() -> None:
    assert {x.value for x in Label} == {"NAME", "DATE", "AGE", "PHONE", "EMAIL", "ID", "LOCATION", "ORGANIZATION",
                                        "URL", "IP", "OTHER"}


def test_when_a_pipeline_is_built_then_its_versions_gather_every_steps_vocabularies_and_reach_the_metrics() -> None:
    config = PipelineConfig(steps=("regex", "dictionary", "recovery", "decide", "ensemble", "transform", "metrics"))
    pipe = Pipeline.from_config(config)
    versions = pipe.versions()
    assert set(versions.dictionaries) == {"vocab", "medical", "clinical_words", "clinical_measures", "decider"}
    assert versions.model is None and versions.config_hash == config.config_hash()
    (note,) = pipe.run([NoteIn(note_id="v", text="Seen 07/22/2019 for CHF.")])
    assert note.metrics is not None and note.metrics.versions == versions


def test_when_the_shared_policy_changes_then_the_config_hash_changes() -> None:
    from processors.pipeline import SharedPolicy

    assert (PipelineConfig().config_hash()
            != PipelineConfig(policy=SharedPolicy(redact_providers=False)).config_hash())
