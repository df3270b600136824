"""scripts/decider_cv.py: the aggregates ``fold-ners`` writes (the command itself runs for minutes on the fold models:
README, Quality)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from paths import REPO, load_script

from processors.evaluation.gold import GoldNote, GoldSpan

sys.path.insert(0, str(REPO / "scripts"))  # decider_cv imports ner_cv beside it
cv = load_script("decider_cv")


def _span(start: int, end: int, score: float) -> dict[str, object]:
    return {"start": start, "end": end, "label": "NAME", "score": score}


def test_when_the_ner_scores_are_summed_up_then_spans_touching_an_identifier_count_as_identifiers() -> None:
    text = "Seen by SMITH and Jones today with WARD staff."
    smith, jones, ward = text.index("SMITH"), text.index("Jones"), text.index("WARD")
    gold = [GoldNote(id="a", text=text, spans=(GoldSpan(smith, smith + 5, "NAME"), GoldSpan(jones, jones + 5, "NAME")))]
    stored = {"a": [_span(smith, smith + 5, 0.9), _span(jones - 4, jones + 2, 0.3),  # overlaps "Jones": an identifier
                    _span(ward, ward + 4, 0.6), _span(0, 4, 0.01)]}
    out = cv.score_stats(gold, stored)
    assert out["identifier"]["spans"] == 2 and out["other"]["spans"] == 2
    assert out["identifier"]["mean"] == 0.6 and out["identifier"]["share_at_0.5"] == 0.5
    assert out["other"]["mean"] == round((0.6 + 0.01) / 2, 4) and out["other"]["share_at_0.5"] == 0.5
    assert out["other"]["q50"] == round((0.6 + 0.01) / 2, 4)
    # a note without NER spans adds nothing; no spans at all: counts only
    assert cv.score_stats(gold, {}) == {"identifier": {"spans": 0}, "other": {"spans": 0}}


def _oof(path: Path, spans: dict[str, dict[str, list[dict[str, object]]]]) -> Path:
    import gzip
    import json

    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"thresholds": [0.03, 0.005], "recipe": path.stem}) + "\n")
        for i, s in spans.items():
            fh.write(json.dumps({"id": i, "fold": 0, "spans": s}) + "\n")
    return path


def _ner(start: int, end: int, score: float) -> dict[str, object]:
    return {**_span(start, end, score), "source": "ner"}


def test_when_two_ners_out_of_fold_files_are_scored_then_their_union_finds_what_either_found(
        monkeypatch: Any, tmp_path: Path) -> None:
    import argparse
    import json

    text = "Seen by SMITH and Jones today."
    smith, jones = text.index("SMITH"), text.index("Jones")
    gold = [GoldNote(id="a", text=text, spans=(GoldSpan(smith, smith + 5, "NAME"), GoldSpan(jones, jones + 5, "NAME")))]
    monkeypatch.setattr(cv, "design_gold", lambda: gold)
    one = _oof(tmp_path / "one.jsonl.gz", {"a": {"0.03": [], "0.005": [_ner(smith, smith + 5, 0.01)]}})
    two = _oof(tmp_path / "two.jsonl.gz", {"a": {"0.03": [], "0.005": [_ner(smith, smith + 5, 0.02),
                                                                      _ner(0, 4, 0.01)]}})
    out = tmp_path / "scores.json"
    args = argparse.Namespace(files=[str(one), str(two)], thresholds="0.03,0.005,0.5", union=True, output=str(out))
    assert cv.oof_score(args) == 0
    got = json.loads(out.read_text())
    assert got["files"][str(one)]["0.005"] == {"precision": 1.0, "recall": 0.5, "fp": 0, "fn": 1}
    assert got["files"][str(two)]["0.005"] == {"precision": 0.5, "recall": 0.5, "fp": 1, "fn": 1}
    assert got["files"][str(one)]["0.03"]["fn"] == 2 and "0.5" not in got["files"][str(one)]  # only thresholds both have
    # a token both found counts once
    assert got["union"]["0.005"] == {"precision": 0.5, "recall": 0.5, "fp": 1, "fn": 1}


def test_when_an_out_of_fold_file_holds_some_folds_only_then_scoring_takes_the_common_notes_and_training_refuses_it(
        monkeypatch: Any, tmp_path: Path) -> None:
    import argparse
    import gzip
    import json

    import pytest

    text = "Seen by SMITH today."
    smith = text.index("SMITH")
    gold = [GoldNote(id=i, text=text, spans=(GoldSpan(smith, smith + 5, "NAME"),)) for i in ("a", "b")]
    monkeypatch.setattr(cv, "design_gold", lambda: gold)
    full = _oof(tmp_path / "full.jsonl.gz", {"a": {"0.005": [_ner(smith, smith + 5, 0.5)]}, "b": {"0.005": []}})
    probe = tmp_path / "probe.jsonl.gz"
    with gzip.open(probe, "wt", encoding="utf-8") as fh:  # oof --folds 0: note b's fold was not run
        fh.write(json.dumps({"thresholds": [0.005], "folds_written": [0]}) + "\n")
        fh.write(json.dumps({"id": "a", "fold": 0, "spans": {"0.005": []}}) + "\n")
    out = tmp_path / "scores.json"
    assert cv.oof_score(argparse.Namespace(files=[str(full), str(probe)], thresholds="0.005", union=False,
                                           output=str(out))) == 0
    got = json.loads(out.read_text())
    assert got["notes"] == 1  # note b is left out of both, not counted as the probe's miss
    assert got["files"][str(full)]["0.005"] == {"precision": 1.0, "recall": 1.0, "fp": 0, "fn": 0}
    assert got["files"][str(probe)]["0.005"] == {"precision": None, "recall": 0.0, "fp": 0, "fn": 1}
    with pytest.raises(SystemExit, match="folds \\[0\\] only"):
        cv.read_oof(probe)
    assert set(cv.read_oof(full)[1]) == {"a", "b"}


def test_when_ners_out_of_fold_files_are_averaged_then_each_span_scores_the_mean_of_the_best_overlaps(
        tmp_path: Path) -> None:
    import argparse

    one = _oof(tmp_path / "one.jsonl.gz", {"a": {"0.005": [_ner(0, 5, 0.9), _ner(10, 14, 0.006)]}})
    two = _oof(tmp_path / "two.jsonl.gz", {"a": {"0.005": [_ner(0, 8, 0.6), _ner(20, 24, 0.3)]}})
    out = tmp_path / "mean.jsonl.gz"
    assert cv.oof_mean(argparse.Namespace(files=[str(one), str(two)], threshold=0.005, out=str(out))) == 0
    header, rows = cv.read_oof(out)
    assert header["thresholds"] == [0.005]
    # (0, 5) and (0, 8) overlap: both score (0.9 + 0.6) / 2, the first file's of the tie is kept, the other left
    # out; a span one file alone found scores half its score, and under the threshold it is dropped (0.006 / 2)
    assert [(s["start"], s["end"], s["score"]) for s in rows["a"]["0.005"]] == [(0, 5, 0.75), (20, 24, 0.15)]


def test_when_rules_are_ablated_over_seeds_then_each_cell_is_the_rule_off_against_all_on_and_then_their_mean() -> None:
    def run(fp: int, fn: int) -> dict[str, Any]:
        return {"lockbox": {"fp": fp, "fn": fn}, "seconds": 1.0}

    seed_a = {"all_on": run(50, 4), "use_terms": run(53, 4), "use_syntax": run(54, 3)}
    seed_b = {"all_on": run(48, 3), "use_terms": run(55, 5), "use_syntax": run(48, 3)}
    a, b = cv.ablation_table(seed_a), cv.ablation_table(seed_b)
    # without the rule 3 more false positives and no identifier more found: the rule removes 3, loses none
    assert a["use_terms"]["lockbox"] == {"identifier_tokens_lost": 0, "false_positive_tokens_removed": 3}
    # one identifier found without the rule: the rule loses it
    assert a["use_syntax"]["lockbox"] == {"identifier_tokens_lost": 1, "false_positive_tokens_removed": 4}
    assert b["use_terms"]["lockbox"] == {"identifier_tokens_lost": -2, "false_positive_tokens_removed": 7}
    assert "seconds" not in a["use_terms"]
    mean = cv.mean_table([a, b])
    assert mean["use_terms"]["lockbox"] == {"identifier_tokens_lost": -1.0, "false_positive_tokens_removed": 5.0}
    assert mean["use_syntax"]["lockbox"] == {"identifier_tokens_lost": 0.5, "false_positive_tokens_removed": 2.0}


def test_when_another_corpus_has_out_of_fold_spans_then_its_training_rows_take_them_and_a_stray_file_is_refused(
        monkeypatch: Any, tmp_path: Path) -> None:
    import pytest

    from processors.training.decider import Corpus

    def notes(*ids: str) -> list[GoldNote]:
        return [GoldNote(id=i, text="x", spans=()) for i in ids]

    corpora = [Corpus("physionet_design", notes("p1"), True), Corpus("synthetic", notes("s1"), False),
               Corpus("meddocan_train", notes("m1", "m2"), False)]
    monkeypatch.setattr(cv, "stored_at", lambda t: {"p1": [_ner(0, 1, 0.5)]})
    monkeypatch.setattr(cv, "shipped_ner", lambda gold, t, name: {g.id: [_ner(0, 1, 0.9)] for g in gold})
    oof = _oof(tmp_path / "meddocan.jsonl.gz", {"m1": {"0.005": [_ner(0, 1, 0.2)]}, "m2": {"0.005": []}})
    monkeypatch.setitem(cv.OVERRIDE, "other_oof", [oof])
    stored = cv.stored_for(corpora, 0.005)
    # MEDDOCAN train from the fold models that did not train on each note; synthetic from the all-notes model
    assert stored == {"p1": [_ner(0, 1, 0.5)], "s1": [_ner(0, 1, 0.9)], "m1": [_ner(0, 1, 0.2)], "m2": []}
    with pytest.raises(SystemExit, match="no spans at NER threshold 0.01"):
        cv.stored_for(corpora, 0.01)
    stray = _oof(tmp_path / "stray.jsonl.gz", {"zz": {"0.005": []}})
    monkeypatch.setitem(cv.OVERRIDE, "other_oof", [oof, stray])
    with pytest.raises(SystemExit, match="covers no training corpus"):
        cv.stored_for(corpora, 0.005)


def test_when_two_sets_share_a_cache_name_then_each_note_runs_once_and_each_set_gets_its_own_notes(
        monkeypatch: Any, tmp_path: Path) -> None:
    # the NER itself is stood in for: this is the cache's bookkeeping (the NER's spans do not depend on a batch's
    # other notes: tests/unit/processors/ner)
    runs: list[list[str]] = []

    def fake_ner(notes: Any, options: Any, routes: Any = ()) -> dict[str, list[dict[str, object]]]:
        runs.append([i for i, _ in notes])
        return {i: [_ner(0, 1, 0.5 if i.startswith("t") else 0.7)] for i, _ in notes}

    monkeypatch.setattr(cv, "ner_spans", fake_ner)
    monkeypatch.setattr(cv, "REPO", tmp_path)
    train = [GoldNote(id=f"t{k}", text="x", spans=()) for k in range(3)]
    held = [GoldNote(id=f"e{k}", text="x", spans=()) for k in range(2)]
    assert set(cv.shipped_ner(train, 0.005, "synthetic", True)) == {"t0", "t1", "t2"}
    assert cv.shipped_ner(held, 0.005, "synthetic", True) == {"e0": [_ner(0, 1, 0.7)], "e1": [_ner(0, 1, 0.7)]}
    assert cv.shipped_ner(train, 0.005, "synthetic", True)["t1"] == [_ner(0, 1, 0.5)]
    assert cv.shipped_ner(train + held, 0.005, "synthetic", True).keys() == {"t0", "t1", "t2", "e0", "e1"}
    assert runs == [["t0", "t1", "t2"], ["e0", "e1"]]  # the third and fourth calls ran nothing


def test_when_the_policys_routes_are_measured_then_the_ner_runs_routed_and_caches_apart(
        monkeypatch: Any, tmp_path: Path) -> None:
    seen: list[tuple[str, ...]] = []

    def fake_ner(notes: Any, options: Any, routes: Any = ()) -> dict[str, list[dict[str, object]]]:
        seen.append(tuple(routes))
        return {i: [_ner(0, 1, 0.9 if routes else 0.4)] for i, _ in notes}

    monkeypatch.setattr(cv, "ner_spans", fake_ner)
    monkeypatch.setattr(cv, "REPO", tmp_path)
    notes = [GoldNote(id="m0", text="x", spans=())]
    assert cv.shipped_ner(notes, 0.005, "meddocan", True) == {"m0": [_ner(0, 1, 0.4)]}
    monkeypatch.setitem(cv.OVERRIDE, "routes", ("es",))
    assert cv.shipped_ner(notes, 0.005, "meddocan", True) == {"m0": [_ner(0, 1, 0.9)]}
    assert seen == [(), ("es",)]
    names = sorted(p.name for p in (tmp_path / ".gpu/ner_cache").iterdir())
    assert len(names) == 2 and sum("+es-" in n for n in names) == 1
