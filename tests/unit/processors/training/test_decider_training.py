"""Training the decision stage: the token arithmetic equals the scorer's, the threshold is chosen for recall
first, and a whole run writes a model the decide step loads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dictionaries import vocab
from dictionaries.medical import medical_vocabulary
from processors.decide.cues import Cues
from processors.decide.features import Extractor
from processors.evaluation.gold import gold_from_records
from processors.evaluation.scoring import evaluate
from processors.pipeline import Note, Pipeline, PipelineConfig
from processors.training.decider import (
    KEEP_ALL,
    Corpus,
    build_table,
    choose_threshold,
    counts_at,
    token_max,
    train_decider,
)
from schemas.models import NoteIn, Span

RECORDS = [
    {"id": "a", "text": "Seen by Dr. Ann Lee on 3/14. LEVO off, CVP 12-14.",
     "spans": [{"start": 12, "end": 19, "label": "NAME"}, {"start": 23, "end": 27, "label": "DATE"}]},
    {"id": "b", "text": "Wife Mary called 617-555-0134. Monday 2/2 PEEP 5/5.",
     "spans": [{"start": 5, "end": 9, "label": "NAME"}, {"start": 17, "end": 29, "label": "PHONE"},
               {"start": 38, "end": 41, "label": "DATE"}]},
]
CANDIDATES = {
    "a": [("Ann Lee", "NAME", "ner"), ("Dr. Ann", "NAME", "dictionary"), ("3/14", "DATE", "regex"),
          ("LEVO", "NAME", "ner"), ("12-14", "DATE", "ner")],
    "b": [("Mary", "NAME", "ner"), ("617-555-0134", "PHONE", "regex"), ("Monday", "DATE", "ner"),
          ("2/2", "DATE", "regex"), ("5/5", "DATE", "ner"), ("PEEP", "ORGANIZATION", "ner")],
}


@pytest.fixture(scope="module")
def extractor() -> Extractor:
    return Extractor(Cues(vocab.cache_dir()), medical_vocabulary(vocab.cache_dir()))


def _detected(gold: list[object]) -> list[Note]:
    out = []
    for g in gold:
        text = g.text  # type: ignore[attr-defined]
        spans = [Span(start=text.index(s), end=text.index(s) + len(s), label=lab, source=src, score=0.7)
                 for s, lab, src in CANDIDATES[g.id]]  # type: ignore[attr-defined]
        out.append(Note(input=NoteIn(note_id=g.id, text=text), spans=tuple(spans)))  # type: ignore[attr-defined]
    return out


def test_when_candidates_are_kept_by_score_then_the_token_counts_equal_the_scorers(extractor: Extractor) -> None:
    gold = gold_from_records(RECORDS)
    detected = _detected(gold)
    table = build_table(gold, detected, extractor)
    assert len(table.rows) == 9  # the phone (a shape) and the weekday (policy: kept) are fixed
    assert table.y == [1, 1, 1, 0, 0, 1, 1, 0, 0]
    rng = np.random.default_rng(3)
    scores = rng.random(len(table.rows))
    best = token_max(table, scores)
    phi, skip, _ = table.tokens.arrays()
    for t in (KEEP_ALL, 0.2, 0.5, 0.8, 2.0):
        kept: dict[str, list[Span]] = {}
        k = 0
        for g, note in zip(gold, detected, strict=True):
            fixed, scored, _rows = extractor.split(note)
            keep = [note.spans[i] for i in fixed]
            for i in scored:
                keep += [note.spans[i]] if scores[k] >= t else []
                k += 1
            kept[g.id] = keep
        r = evaluate(gold, kept)
        assert counts_at(best, phi, skip, t) == (r.tp, r.fp, r.fn)


def test_when_a_threshold_is_chosen_then_it_is_the_highest_that_keeps_the_recall() -> None:
    best = np.array([0.9, 0.6, 0.3, 0.1, 0.7, 0.2, -np.inf])
    phi = np.array([True, True, True, False, False, False, True])
    skip = np.zeros(7, bool)
    # recall counts the token no candidate covers (the last): the candidates reach 3 of 4
    assert choose_threshold(best, phi, skip, 0.5) == 0.6  # 2 of 4 kept at 0.6
    assert choose_threshold(best, phi, skip, 0.99) == 0.3  # unreachable: the candidates' own recall, 3 of 4
    assert counts_at(best, phi, skip, 0.3) == (3, 1, 1)


def test_when_a_decider_is_trained_then_the_step_loads_and_runs_it(tmp_path: Path) -> None:
    from processors.synthetic.generator import generate

    gold = gold_from_records(generate(45, 77))
    report = train_decider([Corpus("synthetic", gold)], tmp_path / "m", steps=("regex", "dictionary", "recovery"),
                           k=3, rounds=20, extractor=Extractor(Cues(vocab.cache_dir()),
                                                               medical_vocabulary(vocab.cache_dir())))
    (corpus,) = report["corpora"]
    assert corpus["candidates"] > 100 and 0 < corpus["positives"] < corpus["candidates"]
    assert corpus["nested"]["recall"] >= 0.9 * corpus["nested"]["candidate_recall"]
    config = PipelineConfig(steps=("regex", "dictionary", "recovery", "decide", "ensemble"),
                            options={"decide": {"model_dir": str(tmp_path / "m")}})
    notes = Pipeline.from_config(config, cache_dir=vocab.cache_dir()).run([g.to_note_in() for g in gold[:5]])
    assert all(n.error is None for n in notes)
    assert sum(len(n.spans) for n in notes) > 0


def _stored_from_gold(gold: list[object], score: float, keep_every: int = 1) -> dict[str, list[dict[str, object]]]:
    """NER spans as a fold model would store them: the gold spans (every ``keep_every``-th) at ``score``."""
    return {g.id: [{"start": s.start, "end": s.end, "label": str(s.label), "score": score, "source": "ner"}  # type: ignore[attr-defined]
                   for k, s in enumerate(g.spans) if k % keep_every == 0]  # type: ignore[attr-defined]
            for g in gold}


def test_when_a_profile_gives_the_shipped_path_s_own_spans_then_its_threshold_is_the_shipped_one(
        tmp_path: Path) -> None:
    from processors.decide.model import load
    from processors.synthetic.generator import generate
    from processors.training.decider import profile_threshold

    gold = gold_from_records(generate(45, 78))
    corpora = [Corpus("synthetic", gold)]
    ex = Extractor(Cues(vocab.cache_dir()), medical_vocabulary(vocab.cache_dir()))
    stored = _stored_from_gold(gold, 0.6)
    steps = ("regex", "ner", "dictionary", "recovery")
    report = train_decider(corpora, tmp_path / "m", stored_ner=stored, steps=steps, k=3, rounds=20, extractor=ex)
    shipped = load(tmp_path / "m")
    same = profile_threshold(corpora, stored, shipped.calibration, stored_ner=stored, steps=steps, k=3, rounds=20,
                             extractor=ex)
    (corpus,) = report["corpora"]
    # the same spans on both paths: the same cross-validation, so the same nested figures and threshold
    assert same["nested"] == corpus["nested"]
    assert same["threshold_raw"] == report["threshold_raw"]
    assert same["decide_threshold"] == pytest.approx(shipped.threshold, abs=1e-6)
    # another path's spans (half the names missing, lower scores) are what the profile's figures are about
    other = profile_threshold(corpora, _stored_from_gold(gold, 0.2, keep_every=2), shipped.calibration,
                              stored_ner=stored, steps=steps, k=3, rounds=20, extractor=ex)
    assert other["candidates"] != same["candidates"]
    assert other["nested"] != same["nested"]


def test_when_cross_validating_then_each_fold_threshold_comes_from_its_inner_scores(extractor: Extractor) -> None:
    from processors.evaluation.folds import group_folds
    from processors.synthetic.generator import generate
    from processors.training.decider import cross_validate, detect

    gold = gold_from_records(generate(45, 77))
    table = build_table(gold, detect(gold, steps=("regex", "dictionary", "recovery")), extractor)
    fold_of_note = [0] * len(gold)
    for f, idx in enumerate(group_folds(gold, 3, 0)):
        for i in idx:
            fold_of_note[i] = f
    res = cross_validate(table, fold_of_note, 3, 0.95, np.ones(len(gold), dtype=bool), rounds=20)
    phi, skip, _ = table.tokens.arrays()
    cand_fold = np.asarray(fold_of_note)[np.asarray(table.note)]
    tok_fold = np.asarray(fold_of_note)[np.asarray(table.tokens.note_of_token)]
    assert len(res.inner) == 3
    for f, inner in enumerate(res.inner):
        assert not inner[cand_fold == f].any()  # the outer fold's own rows are never scored by its inner models
        rest = np.flatnonzero(cand_fold != f)
        best = token_max(table, inner[rest], rest)
        assert res.thresholds[f] == choose_threshold(best, phi, skip, 0.95, mask=tok_fold != f)
