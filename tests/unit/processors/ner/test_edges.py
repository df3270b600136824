"""A NER model's edge threshold (``edge_threshold`` in its ``deidstream_ner.json``): candidate spans cut to their
confident core, the edges candidates of their own (``split_edges``, ``edge_candidates``). Sentences of our own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from processors.ner.step import (
    ROUTE_MODEL_DIRS,
    decode_spans,
    edge_candidates,
    load_model,
    only_function_words,
    predict,
    split_edges,
)
from processors.pipeline import BuildContext, Note, SharedPolicy, build_processor
from schemas.errors import ConfigError
from schemas.labels import Label
from schemas.models import NoteIn, Span

ES_MODEL_DIR = ROUTE_MODEL_DIRS["es"]


def _span(text: str, part: str, label: Label = Label.NAME, score: float = 0.5) -> Span:
    start = text.index(part)
    return Span(start=start, end=start + len(part), label=label, score=score, source="ner")


def _pieces(text: str, spans: list[Span]) -> list[tuple[str, str, float]]:
    return [(text[s.start:s.end], str(s.label), s.score) for s in spans]


def test_when_a_span_holds_a_confident_part_then_it_is_cut_there_and_its_edges_stay_candidates() -> None:
    text = "Su hija Lucía Ortiz le acompaña."
    low = [_span(text, "Su hija Lucía Ortiz le", Label.LOCATION, 0.48)]
    high = [_span(text, "Lucía Ortiz", Label.NAME, 0.9)]
    assert _pieces(text, split_edges(text, low, high)) == [
        ("Su hija", "LOCATION", 0.48), ("Lucía Ortiz", "LOCATION", 0.9), ("le", "LOCATION", 0.48)]


def test_when_several_confident_parts_lie_inside_then_the_core_runs_from_the_first_to_the_last() -> None:
    text = "ingresado el Hospital Universitario de Salamanca por dolor"
    low = [_span(text, "el Hospital Universitario de Salamanca por", Label.ORGANIZATION, 0.6)]
    high = [_span(text, "Hospital Universitario", Label.ORGANIZATION, 0.7), _span(text, "Salamanca", Label.LOCATION, 0.8)]
    assert _pieces(text, split_edges(text, low, high)) == [
        ("el", "ORGANIZATION", 0.6), ("Hospital Universitario de Salamanca", "ORGANIZATION", 0.8),
        ("por", "ORGANIZATION", 0.6)]


def test_when_a_span_has_no_confident_part_or_is_all_confident_then_it_stays_whole() -> None:
    text = "Seen by Dr. Kearns, then Mercy Hospital."
    low = [_span(text, "Dr. Kearns", score=0.02), _span(text, "Mercy Hospital", Label.ORGANIZATION, 0.9)]
    high = [_span(text, "Mercy Hospital", Label.ORGANIZATION, 0.95)]
    assert split_edges(text, low, high) == low


def test_when_an_edge_is_only_separators_or_function_words_then_it_goes() -> None:
    text = "Transferred to the Mercy Hospital, in the evening"
    low = [_span(text, "the Mercy Hospital, in", Label.ORGANIZATION, 0.3)]
    high = [_span(text, "Mercy Hospital", Label.ORGANIZATION, 0.9)]
    assert _pieces(text, split_edges(text, low, high)) == [
        ("the", "ORGANIZATION", 0.3), ("Mercy Hospital", "ORGANIZATION", 0.9), ("in", "ORGANIZATION", 0.3)]
    assert only_function_words("the") and only_function_words("in")
    assert _pieces(text, edge_candidates(text, low, high)) == [("Mercy Hospital", "ORGANIZATION", 0.9)]
    assert len(edge_candidates(text, low, high, drop_function_words=False)) == 3


SPANISH = [
    "Paciente varón de 64 años, D. Rafael Ortiz Menéndez, ingresado el 14 de marzo de 2019 en el Hospital "
    "Universitario de Salamanca por dolor torácico. Su hija Lucía Ortiz le acompaña; teléfono 923 456 789.",
    "Informe remitido a la Dra. Carmen Villalobos Ruiz, Servicio de Cardiología, Hospital General de Albacete, "
    "C/ Mayor 12, 02001 Albacete. NHC 4478123.",
]


def _ner(**options: Any) -> Any:
    return build_processor("ner", options, BuildContext(policy=SharedPolicy(language_routes=())))


def _copy_without_edge(dest: Path, edge: Any = None) -> Path:
    shutil.copytree(ES_MODEL_DIR, dest)
    meta = json.loads((dest / "deidstream_ner.json").read_text())
    meta.pop("edge_threshold")
    if edge is not None:
        meta["edge_threshold"] = edge
    (dest / "deidstream_ner.json").write_text(json.dumps(meta))
    return dest


def test_when_the_spanish_route_model_names_an_edge_threshold_then_the_step_puts_out_the_split_candidates(
        tmp_path: Path) -> None:
    model = load_model(str(ES_MODEL_DIR), "cpu", True)
    assert model.edge_threshold == 0.08
    notes = [Note(input=NoteIn(note_id=f"n{i}", text=t)) for i, t in enumerate(SPANISH)]
    out = _ner(model_dir=str(ES_MODEL_DIR)).process_batch(notes)
    whole = _ner(model_dir=str(_copy_without_edge(tmp_path / "whole"))).process_batch(notes)
    for text, note, unsplit, p in zip(SPANISH, out, whole, predict(model, SPANISH), strict=True):
        low, high = (decode_spans(text, p.offsets, p.probs, model.index, token_threshold=t, min_score=t)
                     for t in (0.005, 0.08))
        low, high = ([s for s in x if not only_function_words(text[s.start:s.end])] for x in (low, high))
        assert note.spans == tuple(edge_candidates(text, low, high))
        assert unsplit.spans == tuple(low)  # without the model's edge threshold: the spans as decoded
    assert out[0].spans != whole[0].spans


def test_when_a_models_edge_threshold_is_not_a_probability_then_config_error(tmp_path: Path) -> None:
    folder = _copy_without_edge(tmp_path / "bad", edge=1.5)
    with pytest.raises(ConfigError, match="edge_threshold must be a number between 0 and 1"):
        load_model(str(folder), "cpu", False)
