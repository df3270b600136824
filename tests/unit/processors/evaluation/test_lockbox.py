"""The lockbox: a fixed part of the dev corpora, decided per patient, refused by listings and training, scored by
``deidstream eval --lockbox`` in aggregate only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from processors.evaluation.gold import GoldNote, gold_from_records
from processors.evaluation.lockbox import SHARE, in_lockbox, lockbox_key, refuse_lockbox, split
from schemas.errors import ConfigError
from streams.cli import app


def _physionet(group: int, n: int = 1) -> list[dict[str, object]]:
    return [{"id": f"physionet-deid-{group}-{k}", "patient_group": group, "text": "Pt seen by Dr. Ames on 3/14.",
             "spans": [{"start": 14, "end": 18, "label": "HCPName"}, {"start": 22, "end": 26, "label": "Date"}]}
            for k in range(1, n + 1)]


def _boxed_group() -> int:
    return next(g for g in range(1, 200) if in_lockbox(_physionet(g)[0]))


def _design_group() -> int:
    return next(g for g in range(1, 200) if not in_lockbox(_physionet(g)[0]))


def test_when_notes_share_a_patient_then_they_share_a_side() -> None:
    for group in range(1, 60):
        sides = {in_lockbox(r) for r in _physionet(group, 4)}
        assert len(sides) == 1


def test_when_about_a_fifth_of_the_patients_is_drawn_then_the_share_holds() -> None:
    drawn = sum(in_lockbox(_physionet(g)[0]) for g in range(1, 2001))
    assert abs(drawn / 2000 - SHARE) < 0.03


def test_when_a_corpus_has_no_lockbox_then_no_note_is_in_it() -> None:
    assert lockbox_key("synth-9001-0001", None) is None
    assert lockbox_key("meddocan-S0004-1", None, "train") is None
    assert lockbox_key("meddocan-S0004-1", None, "dev") == "meddocan:meddocan-S0004-1"
    assert not in_lockbox({"id": "note-1", "patient_group": 3, "text": "x"})


def test_when_records_and_gold_notes_are_the_same_then_membership_agrees() -> None:
    records = [r for g in range(1, 40) for r in _physionet(g)]
    gold = gold_from_records(records, {"HCPName": "NAME", "Date": "DATE"})
    assert [in_lockbox(r) for r in records] == [in_lockbox(g) for g in gold]
    design, box = split(gold)
    assert box and design and len(design) + len(box) == len(gold)
    assert all(isinstance(n, GoldNote) for n in box)


def test_when_a_listing_would_touch_the_lockbox_then_it_is_refused_without_naming_notes() -> None:
    boxed = _physionet(_boxed_group(), 2)
    with pytest.raises(ConfigError) as err:
        refuse_lockbox(boxed + _physionet(_design_group()), "a listing")
    assert err.value.code == "E305"
    assert "2 notes" in str(err.value)
    assert "physionet-deid" not in str(err.value)
    refuse_lockbox(_physionet(_design_group()), "a listing")  # design notes pass


def test_when_training_data_holds_lockbox_notes_then_training_refuses(tmp_path: Path) -> None:
    from processors.training.ner import read_examples

    path = tmp_path / "train.jsonl"
    rows = _physionet(_design_group(), 2) + _physionet(_boxed_group(), 1)
    for r in rows:
        r["spans"] = [{"start": 14, "end": 18, "label": "NAME"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError, match="E305"):
        read_examples([path])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    assert len(read_examples([path])) == 2


def test_when_the_real_dev_file_is_split_then_the_fixed_share_comes_out(shared_dir: Path) -> None:
    from processors.evaluation.gold import load_gold, load_label_map

    gold = load_gold(shared_dir / "data/eval/physionet_deid_dev.jsonl", load_label_map("physionet"))
    design, box = split(gold)
    assert (len(box), len({g.group for g in box}), len({g.group for g in gold})) == (174, 16, 81)
    assert not {g.group for g in box} & {g.group for g in design}


def test_when_eval_scores_the_lockbox_then_only_aggregates_are_written(tmp_path: Path) -> None:
    boxed, design = _physionet(_boxed_group(), 2), _physionet(_design_group(), 3)
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in boxed + design))
    pred = tmp_path / "pred.jsonl"
    pred.write_text("".join(json.dumps({"note_id": r["id"], "spans": [{"start": 14, "end": 18, "label": "NAME"}]})
                            + "\n" for r in boxed + design))
    runner = CliRunner()
    args = ["eval", "--gold", str(gold), "--labels", "physionet", "--pred", str(pred), "--no-metrics"]
    # --show-text asks for the words of the worst notes: the lockbox ignores it (no per-note rows, ids or text)
    res = runner.invoke(app, [*args, "--report", str(tmp_path / "box"), "--lockbox", "--show-text"])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "box" / "report.json").read_text())
    assert (rep["notes"], rep["tp"], rep["fn"]) == (2, 2, 4)  # "Ames" found, "3/14" (two tokens) missed
    assert "per_note" not in rep and "worst_notes" not in rep and not (tmp_path / "box" / "report.html").exists()
    assert rep["per_label"]["DATE"]["gold_tokens"] == 4  # the per-label drill-down is aggregate: it stays
    dumped = json.dumps(rep) + res.output
    assert "physionet-deid" not in dumped and "Ames" not in dumped and "3/14" not in dumped
    res = runner.invoke(app, [*args, "--report", str(tmp_path / "design")])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "design" / "report.json").read_text())
    assert rep["notes"] == 3 and "2 lockbox notes left out" in res.output
    assert {row["id"] for row in rep["per_note"]} == {r["id"] for r in design}
    assert {row["id"] for row in rep["worst_notes"]["most_missed"]} <= {r["id"] for r in design}
