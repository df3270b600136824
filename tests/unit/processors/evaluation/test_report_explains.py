"""The report explains itself (issue 28): a definition beside each metric, readable names, one unit per table,
thousands separators, the per-label drill-down with "n/a" for a label outside the gold's scheme, the notes with the
most errors (ids and counts; words only with --show-text), pass/fail against the README's targets, a plain sentence
when a no-gold metric does not track the truth, and the provenance carried from ``detect`` into ``eval --pred``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from html_tables import tables as _tables
from paths import DATA
from typer.testing import CliRunner

from processors.evaluation.glossary import METRICS, check_targets, tracking_sentences
from processors.evaluation.report import render_html
from streams.cli import app

FIXTURE = DATA / "synthetic_small.jsonl"
STEPS = "regex,dictionary,recovery,ensemble"


def _rep(**over: Any) -> dict[str, Any]:
    rep: dict[str, Any] = {
        "gold": "g.jsonl", "notes": 1200, "tokens": 123456, "labels": None, "precision": 0.9, "recall": 0.98,
        "f1": 0.94, "entity_recall": 0.95, "tp": 9800, "fp": 1089, "fn": 200, "entities": 4000, "entities_found": 3800,
        "bootstrap": {"resamples": 10, "ci95": {}}, "gold_labels": ["DATE", "NAME"],
        "per_label": {
            "NAME": {"gold_tokens": 5000, "gold_tokens_found": 4900, "pred_tokens": 5300, "pred_tokens_correct": 5000,
                     "recall": 0.98, "precision": 0.943, "f1": 0.961, "entities": 2000, "entity_recall": 0.97},
            "EMAIL": {"gold_tokens": 0, "gold_tokens_found": 0, "pred_tokens": 12, "pred_tokens_correct": 3,
                      "recall": None, "precision": 0.25, "f1": None, "entities": 0, "entity_recall": None},
        },
        "per_label_ci95": {},
    }
    rep.update(over)
    return rep


def test_when_a_label_is_outside_the_gold_scheme_then_its_row_says_n_a_and_counts_have_separators() -> None:
    rows = _tables(render_html(_rep(), [])).rows
    assert ["NAME", "5,000", "100", "5,300", "300", "0.980", "–", "0.943", "–", "0.961", "2,000", "0.970", "–"] in rows
    # EMAIL is not a gold label: no precision against gold (0.250 would be a made-up number), only its predictions
    assert ["EMAIL", "n/a", "n/a", "12", *["n/a"] * 9] in rows


def test_every_metric_the_report_names_has_a_readable_name_and_a_definition() -> None:
    for key in ("precision", "recall", "f1", "entity_recall", "lr", "lrdi", "lrqi", "alid", "lr_gold", "jsc", "nsdcg",
                "cire", "medical_term_retention", "number_retention", "word_retention", "risk_score"):
        m = METRICS[key]
        assert m.name and "_" not in m.name and len(m.definition) > 30, key


@pytest.mark.parametrize(("recall", "precision", "auroc", "expected"), [
    (0.98, 0.90, 0.80, {"recall": "pass", "precision": "pass", "risk_auroc": "pass"}),
    (0.96, 0.84, 0.70, {"recall": "fail", "precision": "fail", "risk_auroc": "fail"}),
    (0.97, 0.85, None, {"recall": "pass", "precision": "pass", "risk_auroc": "n/a"}),  # a target is inclusive
])
def test_when_targets_are_checked_then_each_is_pass_fail_or_n_a(recall: float, precision: float,
                                                                auroc: float | None, expected: dict[str, str]) -> None:
    summary = {"risk_vs_truth": {"auroc": auroc}, "retention_vs_truth": {
        "number_retention": {"mean_estimate": 0.97, "mean_truth": 0.95, "spearman": 0.8},
        "word_retention": {"mean_estimate": 0.99, "mean_truth": 0.95, "spearman": 0.5}}}
    rows = {r["key"]: r["status"] for r in check_targets({"recall": recall, "precision": precision,
                                                          "summary": summary})}
    assert {k: rows[k] for k in expected} == expected
    # number retention: 0.02 apart (<= 0.03) and rho 0.8; words: 0.04 apart and rho 0.5
    assert (rows["number_retention_gap"], rows["number_retention_spearman"]) == ("pass", "pass")
    assert (rows["word_retention_gap"], rows["word_retention_spearman"]) == ("fail", "fail")


def test_when_the_recall_proxy_does_not_track_true_recall_then_a_plain_sentence_says_so() -> None:
    weak = {"proxy_vs_true_recall": {"token_recall": {"pearson": 0.1, "spearman": 0.2, "n": 300}}}
    (sentence,) = tracking_sentences(weak)
    assert sentence.startswith("The recall proxy LR@t does not track true token recall") and "0.10" in sentence
    strong = {"proxy_vs_true_recall": {"token_recall": {"pearson": 0.8, "spearman": 0.7, "n": 300}}}
    assert tracking_sentences(strong) == []
    page = render_html(_rep(summary=None), [])
    assert "does not track" not in page


@pytest.fixture(scope="module")
def detected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("detect") / "pred.jsonl"
    res = CliRunner().invoke(app, ["detect", str(FIXTURE), "-o", str(out), "--steps", STEPS])
    assert res.exit_code == 0, res.output
    return out


def test_when_detect_writes_predictions_then_its_run_is_described_beside_them(detected: Path) -> None:
    run = json.loads(detected.with_name("pred.jsonl.run.json").read_text())
    assert run["profile"] == STEPS.replace(",", "-") and run["steps"] == STEPS.split(",")
    assert run["model"].startswith("none (no model step")  # never null
    assert len(run["config_hash"]) == 16 and run["date"].endswith("+00:00") and run["command"].startswith("deidstream")
    assert len(run["git_commit"]) == 40 or run["git_commit"].startswith("unknown")


def _eval(detected: Path, out: Path, *extra: str) -> tuple[dict[str, Any], str]:
    res = CliRunner().invoke(app, ["eval", "--gold", str(FIXTURE), "--pred", str(detected), "--report", str(out),
                                   "--bootstrap", "10", *extra])
    assert res.exit_code == 0, res.output
    return json.loads((out / "report.json").read_text()), (out / "report.html").read_text()


def test_when_eval_reads_predictions_then_the_report_carries_their_provenance_and_the_gold_hash(
    detected: Path, tmp_path: Path,
) -> None:
    rep, page = _eval(detected, tmp_path / "r")
    run = json.loads(detected.with_name("pred.jsonl.run.json").read_text())
    assert rep["provenance"] == run
    assert rep["gold_sha256"] == hashlib.sha256(FIXTURE.read_bytes()).hexdigest()
    rows = _tables(page).rows
    assert ["config hash", run["config_hash"]] in rows and ["profile (steps)", run["profile"]] in rows
    assert ["model id", run["model"]] in rows and ["gold file SHA-256", rep["gold_sha256"]] in rows
    assert ["date (UTC)", run["date"]] in rows


def test_when_the_predictions_have_no_provenance_then_the_model_still_is_not_null(detected: Path,
                                                                                   tmp_path: Path) -> None:
    bare = tmp_path / "bare.jsonl"
    bare.write_text(detected.read_text())
    rep, page = _eval(bare, tmp_path / "r")
    assert rep["provenance"]["model"].startswith("unknown (no bare.jsonl.run.json")
    assert "null" not in json.dumps(rep["provenance"]) and "None" not in page


def test_when_eval_lists_the_worst_notes_then_text_is_shown_only_with_show_text(detected: Path,
                                                                                tmp_path: Path) -> None:
    rep, page = _eval(detected, tmp_path / "plain")
    missed = rep["worst_notes"]["most_missed"]
    assert missed and all(set(r) == {"id", "tokens", "gold_tokens", "fn", "fp", "entities", "entities_missed"}
                          for r in missed)
    assert [r["fn"] for r in missed] == sorted((r["fn"] for r in missed), reverse=True)
    by_id = {r["id"]: r for r in rep["per_note"]}
    assert all(by_id[r["id"]]["fn"] == r["fn"] and by_id[r["id"]]["fp"] == r["fp"] for r in missed)
    shown, page_text = _eval(detected, tmp_path / "text", "--show-text")
    words = [w for r in shown["worst_notes"]["most_missed"] for w in r["words"]]
    assert len(words) == sum(r["fn"] for r in missed)  # one word per missed token
    distinctive = [w for w in words if len(w) >= 5 and not w.isdigit()]
    assert distinctive and all(w in page_text for w in distinctive)
    assert not any(w in page for w in distinctive)  # without the flag, the page holds none of them
