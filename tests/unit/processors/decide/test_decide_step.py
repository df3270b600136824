"""The decide step's mechanics with a model of known behaviour (it drops what the jargon cue marks and keeps the
rest), and the model file's guards. The shipped model's decisions on sentences of our own: test_decide_shipped.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dictionaries import vocab
from processors.decide import model as decider_model
from processors.decide.features import FEATURES, INDEX
from processors.pipeline import BuildContext, Note, build_processor
from schemas.errors import ConfigError
from schemas.models import NoteIn, Patient, PersonName, Span


def _jargon_model(folder: Path) -> Path:
    """A booster whose score is high unless the jargon cue fires; the identity calibration; threshold 0.5."""
    import lightgbm

    rng = np.random.default_rng(0)
    x = rng.random((400, len(FEATURES)))
    x[:, INDEX["cue_jargon"]] = rng.integers(0, 2, 400)
    y = (x[:, INDEX["cue_jargon"]] == 0).astype(int)
    booster = lightgbm.train({"objective": "binary", "verbose": -1, "num_leaves": 4, "min_data_in_leaf": 5,
                              "seed": 1, "deterministic": True, "num_threads": 1},
                             lightgbm.Dataset(x, label=y), num_boost_round=20)
    return decider_model.save(folder, booster, ([0.0, 1.0], [0.0, 1.0]), 0.5,
                              {"model_id": "test-jargon", "sources": ["regex", "ner", "dictionary"]})


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _jargon_model(tmp_path_factory.mktemp("decider"))


def _step(model_dir: Path, **options: Any) -> Any:
    return build_processor("decide", {"model_dir": str(model_dir), **options},
                           BuildContext(cache_dir=vocab.cache_dir(), steps=("regex", "ner", "dictionary", "decide")))


def _note(text: str, specs: list[tuple[str, str, str]], patient: Patient | None = None) -> Note:
    spans = [Span(start=text.index(sub), end=text.index(sub) + len(sub), label=label, source=source, score=0.9)
             for sub, label, source in specs]
    return Note(input=NoteIn(note_id="n1", text=text, patient=patient), spans=tuple(spans))


def _surfaces(note: Note, spans: tuple[Span, ...]) -> list[str]:
    return [note.text[s.start:s.end] for s in spans]


def test_when_the_model_scores_a_candidate_low_then_it_is_dropped_with_its_probability(model_dir: Path) -> None:
    note = _note("LEVO WEANED OFF, SEEN BY SMITH.", [("LEVO", "NAME", "ner"), ("SMITH", "NAME", "ner")])
    (out,) = _step(model_dir).process_batch([note])
    assert _surfaces(out, out.spans) == ["SMITH"]
    assert _surfaces(out, out.dropped) == ["LEVO"]
    assert out.dropped[0].score < 0.5 and out.dropped[0].source == "ner" and out.dropped[0].label == "NAME"


@pytest.mark.parametrize(
    ("spec", "patient"),
    [
        (("LEVO", "NAME", "message"), None),  # a protected source
        (("LEVO", "NAME", "ner"), Patient(names=(PersonName(given="Levo", family="Ames"),))),  # the message's own name
        (("LEVO", "NAME", "llm"), None),  # a detector the model was not trained on: add-only
        (("LEVO 555-0134", "PHONE", "ner"), None),  # an identifier's shape
    ],
)
def test_when_a_candidate_is_protected_then_the_model_never_drops_it(
        model_dir: Path, spec: tuple[str, str, str], patient: Patient | None) -> None:
    note = _note("LEVO 555-0134 WEANED OFF.", [spec], patient)
    (out,) = _step(model_dir).process_batch([note])
    assert out.spans == note.spans and out.dropped == ()


def test_when_weekdays_are_policy_then_the_option_decides_them(model_dir: Path) -> None:
    note = _note("Seen Monday, LEVO off.", [("Monday", "DATE", "ner"), ("LEVO", "NAME", "ner")])
    (kept,) = _step(model_dir).process_batch([note])
    assert _surfaces(kept, kept.spans) == ["Monday"]
    (gone,) = _step(model_dir, weekdays=False).process_batch([note])
    assert gone.spans == ()
    assert sorted(_surfaces(gone, gone.dropped)) == ["LEVO", "Monday"]
    assert [s.score for s in gone.dropped if gone.text[s.start:s.end] == "Monday"] == [0.0]


@pytest.mark.parametrize(("text", "age"), [
    ("Historia actual: Varón de 69 años que consulta.", "de 69"),
    ("Paciente femenina de 30 años de edad.", "femenina de 30"),
    ("Paciente varón de 11 años de edad.", "varón de 11 años"),
    ("Varón de 42 años remitido.", "42"),
    ("Die 65-jährige Patientin.", "65-jährige"),
    ("A 45 yo man, seen today.", "45 yo"),
    # an age field's value, with or without the word for years; a report's opening run into the age
    ("País: España.\nEdad: 27 años Sexo: H.", "27"),
    ("País: España.\nEdad:25 años Sexo: M.", "25 años"),
    ("Age: 61 Sex: F Admitted: 3/14", "61"),
    ("Geschlecht: w. Alter: 57 J.", "57 J."),
    ("Edad: 27\nSexo: H", "Edad: 27"),
    ("Paciente varón de 64, ingresado.", "Paciente varón de 64"),
    ("Mujer de 41 años sin antecedentes.", "Mujer de 41"),
])
def test_when_a_candidate_is_only_an_age_up_to_89_then_the_policy_drops_it_and_no_other_row_changes(
        model_dir: Path, text: str, age: str) -> None:
    note = _note(text, [(age, "NAME", "ner"), ("LEVO", "NAME", "ner")] if "LEVO" in text else [(age, "NAME", "ner")])
    (out,) = _step(model_dir).process_batch([note])
    assert out.spans == () and [(_surfaces(out, out.dropped), [s.score for s in out.dropped])] == [([age], [0.0])]
    (kept,) = _step(model_dir, ages=True).process_batch([note])
    assert _surfaces(kept, kept.spans) == [age]


@pytest.mark.parametrize(("text", "span"), [
    ("Varón de 92 años que consulta.", "92"),  # over 89: an identifier (the regex step's AGE candidate)
    ("Rosa de 45 años ingresa.", "Rosa de 45"),  # a name beside it
    ("Hija de 45 años, madre de 28 años.", "madre de 28"),  # a kin word: the model's
    ("Seen at 45 Main Street, 3 years ago.", "45 Main"),  # no word for years after the number
    ("Room 45 in 2019 and 12 years later.", "45 in 2019"),  # two numbers
    ("País: España.\nEdad: 92 años Sexo: H.", "92"),  # over 89, after an age field's label too
    ("Cama: 27 Planta: 3", "27"),  # another field's number
    ("Edad: 27 años Sexo", "27 años Sexo"),  # more than the value
    ("Paciente 4478123 remitido.", "Paciente 4478123"),  # no age: a longer number
    ("Paciente Rosa 64 años.", "Paciente Rosa 64"),  # a name after the nouns
    ("Seen by Dr. Kearns 64", "Kearns 64"),  # a number after a name, no word for years, no label
])
def test_when_a_candidate_is_more_than_an_age_up_to_89_then_the_model_decides_it(
        model_dir: Path, text: str, span: str) -> None:
    from processors.decide.features import age_only

    note = _note(text, [(span, "NAME", "ner")])
    assert not age_only(note.spans[0], text)
    (out,) = _step(model_dir).process_batch([note])
    (kept,) = _step(model_dir, ages=True).process_batch([note])
    assert (out.spans, out.dropped) == (kept.spans, kept.dropped)  # the policy does not touch it
    assert [s.score for s in out.dropped] != [0.0]  # kept, or dropped by the model with its probability


def test_when_an_age_is_dropped_by_policy_then_the_other_candidates_rows_are_those_of_the_whole_note(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dictionaries.medical import medical_vocabulary
    from processors.decide import features
    from processors.decide.cues import Cues

    text = "Paciente varón de 64 años, vive en Albacete con su hija Lucía."
    note = _note(text, [("de 64", "NAME", "ner"), ("Albacete", "LOCATION", "ner"), ("Lucía", "NAME", "ner")])
    extractor = features.Extractor(Cues(vocab.cache_dir()), medical_vocabulary(vocab.cache_dir()))
    fixed, scored, rows = extractor.split(note)
    assert (fixed, scored) == ([], [1, 2])
    assert features.Extractor(extractor.cues, extractor.vocab, ages=True).split(note)[:2] == ([0], [1, 2])
    monkeypatch.setattr(features, "age_only", lambda span, text: False)  # the age scored as any candidate
    _, scored_all, rows_all = extractor.split(note)
    assert scored_all == [0, 1, 2] and rows_all[1:] == rows


def test_when_the_threshold_is_set_then_it_overrides_the_models(model_dir: Path) -> None:
    note = _note("SEEN BY SMITH.", [("SMITH", "NAME", "ner")])
    (out,) = _step(model_dir, threshold=1.0).process_batch([note])
    assert out.spans == () and _surfaces(out, out.dropped) == ["SMITH"]


def test_when_decide_runs_then_the_ensemble_only_merges(model_dir: Path) -> None:
    ctx = BuildContext(cache_dir=vocab.cache_dir(), steps=("ner", "decide", "ensemble"))
    ensemble = build_processor("ensemble", {}, ctx)
    note = _note("Seen by Ann Smith today.", [("Ann Smith", "NAME", "ner"), ("Smith", "NAME", "dictionary")])
    low = note.replace(spans=tuple(s.model_copy(update={"score": 0.01}) for s in note.spans))
    (out,) = ensemble.process_batch([low])
    assert [(out.text[s.start:s.end], s.source) for s in out.spans] == [("Ann Smith", "dictionary+ner")]
    plain = build_processor("ensemble", {}, BuildContext(cache_dir=vocab.cache_dir(), steps=("ner", "ensemble")))
    (judged,) = plain.process_batch([low])  # without decide: thresholds and votes (two sources agree here)
    assert [judged.text[s.start:s.end] for s in judged.spans] == ["Ann Smith"]


def test_when_the_model_folder_is_missing_or_stale_then_config_error(model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no decision model"):
        _step(tmp_path / "none")
    stale = tmp_path / "stale"
    stale.mkdir()
    for name in ("model.txt.xz", "decider.json"):
        (stale / name).write_bytes((model_dir / name).read_bytes())
    meta = json.loads((stale / "decider.json").read_text())
    meta["features_digest"] = "0" * 16
    (stale / "decider.json").write_text(json.dumps(meta))
    decider_model.load.cache_clear()
    with pytest.raises(ConfigError, match="other features"):
        _step(stale)


def test_when_surfaces_repeat_then_the_remembered_features_equal_the_computed_ones(
        model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from processors.decide import features

    specs = [("Smith", "NAME", "ner"), ("Monday", "DATE", "regex"), ("3/14", "DATE", "regex"),
             ("Mercy Hospital", "ORGANIZATION", "dictionary"), ("sat", "DATE", "ner")]
    first = _note("Mr. Smith seen Monday 3/14 at Mercy Hospital, sat 95%.", specs)
    second = _note("SMITH HAD NOTHING. Smith's wife: Monday? 3/14 from Mercy Hospital; sat up.", specs)
    fresh = _step(model_dir).extractor
    fresh.cues.surface_features.clear()
    alone = fresh.split(second)
    warm = _step(model_dir).extractor
    warm.split(first)
    assert {"Smith", "3/14", "Mercy Hospital"} <= set(warm.cues.surface_features)  # weekdays are kept by policy, unscored
    assert warm.split(second) == alone
    monkeypatch.setattr(features, "MEMO_SURFACES", 2)
    bounded = _step(model_dir).extractor
    bounded.cues.surface_features.clear()
    bounded.split(first)
    assert len(bounded.cues.surface_features) <= 2
    assert bounded.split(second) == alone


def test_when_a_folder_holds_the_plain_text_model_then_it_loads_as_the_compressed_one(
        model_dir: Path, tmp_path: Path) -> None:
    import lzma

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "model.txt").write_bytes(lzma.decompress((model_dir / "model.txt.xz").read_bytes()))
    (plain / "decider.json").write_bytes((model_dir / "decider.json").read_bytes())
    rows = np.random.default_rng(3).random((50, len(FEATURES))).tolist()
    assert np.array_equal(decider_model.load(plain).probability(rows), decider_model.load(model_dir).probability(rows))


SPANISH = ("La paciente Ann Smith, de 64 años, acude al servicio de urgencias por dolor torácico opresivo de dos horas "
           "de evolución, irradiado al brazo izquierdo y acompañado de sudoración profusa.")
ENGLISH = ("The patient Ann Smith, 64 years old, came to the emergency department with two hours of crushing chest "
           "pain radiating to the left arm, with profuse sweating.")


def _routed_step(model_dir: Path, route_dir: Path, routes: tuple[str, ...] = ("es",),
                 steps: tuple[str, ...] = ("regex", "ner", "dictionary", "decide")) -> Any:
    from processors.pipeline import SharedPolicy

    return build_processor("decide", {"model_dir": str(model_dir), "route_model_dirs": {"es": str(route_dir)}},
                           BuildContext(cache_dir=vocab.cache_dir(), steps=steps,
                                        policy=SharedPolicy(language_routes=routes)))


@pytest.fixture(scope="module")
def strict_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The jargon model with threshold 1.0: it drops every candidate it scores."""
    folder = _jargon_model(tmp_path_factory.mktemp("strict"))
    meta = json.loads((folder / "decider.json").read_text())
    meta.update(threshold=1.0, model_id="test-strict")
    (folder / "decider.json").write_text(json.dumps(meta))
    return folder


def test_when_a_note_reads_as_a_routed_language_then_that_languages_model_decides(
        model_dir: Path, strict_dir: Path) -> None:
    step = _routed_step(model_dir, strict_dir)
    spanish, english = _note(SPANISH, [("Ann Smith", "NAME", "ner")]), _note(ENGLISH, [("Ann Smith", "NAME", "ner")])
    out_es, out_en, out_es2 = step.process_batch([spanish, english, spanish])
    assert _surfaces(out_es, out_es.spans) == [] and _surfaces(out_es, out_es.dropped) == ["Ann Smith"]
    assert _surfaces(out_en, out_en.spans) == ["Ann Smith"] and out_en.dropped == ()
    assert out_es2 == out_es
    assert step.dictionary_versions()["decider"] == "test-jargon+es:test-strict"


@pytest.mark.parametrize(("routes", "steps"), [
    ((), ("regex", "ner", "dictionary", "decide")),
    (("es",), ("regex", "dictionary", "decide")),  # the routes' models learnt their NER's candidates: no NER, no route
])
def test_when_routing_is_off_or_there_is_no_ner_then_every_note_takes_the_default_model(
        model_dir: Path, strict_dir: Path, routes: tuple[str, ...], steps: tuple[str, ...]) -> None:
    step = _routed_step(model_dir, strict_dir, routes, steps)
    (out,) = step.process_batch([_note(SPANISH, [("Ann Smith", "NAME", "ner")])])
    assert _surfaces(out, out.spans) == ["Ann Smith"]
    assert step.routes == {}


def test_when_a_routed_language_has_no_model_then_config_error(model_dir: Path) -> None:
    from processors.pipeline import SharedPolicy

    with pytest.raises(ConfigError, match="no model for the routed language 'de'"):
        build_processor("decide", {"model_dir": str(model_dir)},
                        BuildContext(cache_dir=vocab.cache_dir(), steps=("regex", "ner", "decide"),
                                     policy=SharedPolicy(language_routes=("de",))))
