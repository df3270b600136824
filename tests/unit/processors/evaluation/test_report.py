"""`deidstream eval` end to end on the synthetic fixture, checked against an independent token count, and
the report helpers (per-label bootstrap, correlations, summaries)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from html_tables import tables as _tables
from paths import DATA, REPO
from typer.testing import CliRunner

from processors.evaluation.report import correlation, label_bootstrap, render_html, summarise, write_reports
from processors.evaluation.scoring import LabelCounts
from schemas.errors import ConfigError
from streams.cli import app

FIXTURE = DATA / "synthetic_small.jsonl"
WORD = re.compile(r"[^\W_]+")


def independent_counts(gold_path: Path, pred_path: Path, mapping: dict[str, Any] | None = None,
                       limit: int | None = None) -> dict[str, Any]:
    """Token TP/FN/FP and entity counts recomputed from the files, without processors.evaluation.scoring.
    ``mapping``: corpus label -> our label (null drops the span), as in the label-map YAML."""
    preds = {}
    for line in pred_path.read_text().splitlines():
        rec = json.loads(line)
        preds[rec["note_id"]] = [(s["start"], s["end"]) for s in rec["spans"]]
    tp = fn = fp = ents = found = 0
    name_gold = name_found = 0
    for line in gold_path.read_text().splitlines()[:limit]:
        rec = json.loads(line)
        if mapping is not None:
            rec["spans"] = [dict(s, label=mapping[s["label"]]) for s in rec["spans"] if mapping[s["label"]]]
        toks = [m.span() for m in WORD.finditer(rec["text"])]
        pred = preds.get(str(rec["id"]), [])

        def hit(a: int, b: int, spans: list[tuple[int, int]]) -> bool:
            return any(s < b and a < e for s, e in spans)

        gold = [(s["start"], s["end"]) for s in rec["spans"]]
        for a, b in toks:
            g, p = hit(a, b, gold), hit(a, b, pred)
            tp += g and p
            fn += g and not p
            fp += p and not g
        for s in rec["spans"]:
            inside = [(a, b) for a, b in toks if a < s["end"] and s["start"] < b]
            if inside:
                ents += 1
                found += all(hit(a, b, pred) for a, b in inside)
            if s["label"] == "NAME":
                for a, b in inside:
                    name_gold += 1
                    name_found += hit(a, b, pred)
    return {"recall": tp / (tp + fn), "precision": tp / (tp + fp), "entity_recall": found / ents,
            "name_recall": name_found / name_gold, "tp": tp, "fn": fn, "fp": fp}


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval")
    result = CliRunner().invoke(app, ["eval", "--gold", str(FIXTURE), "--report", str(out), "--steps",
                                      "regex,dictionary,recovery,ensemble", "--bootstrap", "50",
                                      "--judges", "entity,partial,string"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def report(report_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((report_dir / "report.json").read_text())
    return data


def test_when_eval_runs_then_recall_agrees_with_an_independent_token_count(report_dir: Path,
                                                                          report: dict[str, Any]) -> None:
    ind = independent_counts(FIXTURE, report_dir / "predictions.jsonl")
    assert (report["tp"], report["fn"], report["fp"]) == (ind["tp"], ind["fn"], ind["fp"])
    assert round(report["recall"], 3) == round(ind["recall"], 3)
    assert round(report["precision"], 3) == round(ind["precision"], 3)
    assert round(report["entity_recall"], 3) == round(ind["entity_recall"], 3)
    assert round(report["per_label"]["NAME"]["recall"], 3) == round(ind["name_recall"], 3)
    assert report["notes"] == 30 and report["recall"] > 0.8


def test_when_eval_runs_then_per_label_cis_bracket_the_point_estimates(report: dict[str, Any]) -> None:
    cis = report["per_label_ci95"]
    assert set(cis) == set(report["per_label"])
    for label, c in report["per_label"].items():
        ci = cis[label]["recall"]
        if c["recall"] is not None and c["gold_tokens"] >= 20:
            assert ci[0] - 1e-9 <= c["recall"] <= ci[1] + 1e-9, label
    lo, hi = report["bootstrap"]["ci95"]["recall"]
    assert lo <= report["recall"] <= hi and report["bootstrap"]["resamples"] == 50


def test_when_eval_runs_then_cir_and_recall_proxy_are_summarised(report: dict[str, Any]) -> None:
    s = report["summary"]
    for key in ("mean_jsc", "mean_nsdcg", "mean_cire", "mean_medical_term_retention", "mean_number_retention"):
        assert s["cir"][key] is not None
    assert 0 <= s["cir"]["mean_cire"] <= 1 and 0 <= s["cir"]["mean_jsc"] <= 100
    med = s["medical_terms"]
    assert med["terms"] > 0 and 0 <= med["destroyed_outside_gold"] <= med["destroyed"] <= med["terms"]
    assert med["share_destroyed"] == pytest.approx(med["destroyed"] / med["terms"])
    corr = s["proxy_vs_true_recall"]["token_recall"]
    assert corr["n"] > 20 and (corr["pearson"] is None or -1 <= corr["pearson"] <= 1)
    rows = report["per_note"]
    assert len(rows) == 30 and all("lr" in r and "token_recall" in r for r in rows if r["entities"])
    # the metric's number retention against the gold truth (non-identifier number tokens kept)
    truth = s["retention_vs_truth"]["number_retention"]
    assert truth["n"] > 20 and 0 <= truth["mean_truth"] <= 1 and 0 <= truth["mean_estimate"] <= 1
    assert all(r["number_retention_true"] is None or 0 <= r["number_retention_true"] <= 1 for r in rows)
    words = s["retention_vs_truth"]["word_retention"]
    assert words["n"] == 30 and 0 <= words["mean_estimate"] <= 1 and 0 <= words["mean_truth"] <= 1
    # the residual-risk score on every note, against the gold identifiers the output did not fully remove
    risk = s["risk_vs_truth"]
    assert risk["notes"] == 30 and risk["notes_with_missed"] == sum(1 for r in rows if r["missed_entities"] > 0)
    assert all(0 <= r["risk_score"] <= 1 and r["risk_expected"] >= 0 for r in rows)
    assert risk["auroc"] is None or 0 <= risk["auroc"] <= 1
    # lr_gold is the string-based recall over gold entities; both it and LR are percentages
    assert all(0 <= r["lr_gold"] <= 100 for r in rows if r.get("lr_gold") is not None)
    assert report["versions"]["dictionaries"]["medical"].startswith("med-")


def test_when_judges_run_then_the_panel_is_reported(report: dict[str, Any]) -> None:
    panel = report["judges"]
    assert panel["judges"] == ["entity", "partial", "string"]
    assert panel["tp"] + panel["fn"] + panel["discarded"] >= report["entities"]
    assert set(panel["agreement_with_majority"]) == {"entity", "partial", "string"}


def test_when_eval_runs_then_the_html_report_is_self_contained(report_dir: Path) -> None:
    page = (report_dir / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 4
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert "Per label" in page and "Pearson" in page and "Judge panel" in page
    assert "No-gold estimates against the truth from gold" in page and "AUROC (missed identifier)" in page


def test_when_predictions_are_given_then_a_single_entity_judge_matches_entity_recall(
        report_dir: Path, report: dict[str, Any], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "--gold", str(FIXTURE), "--pred", str(report_dir / "predictions.jsonl"),
                                      "--report", str(tmp_path), "--no-metrics", "--judges", "entity", "--no-html"])
    assert result.exit_code == 0, result.output
    again = json.loads((tmp_path / "report.json").read_text())
    assert again["recall"] == report["recall"] and again["predictions"] == "predictions.jsonl"
    assert "summary" not in again and not (tmp_path / "report.html").exists()
    assert again["judges"]["recall"] == pytest.approx(report["entity_recall"])


def test_when_predictions_are_given_with_metrics_then_outputs_are_rebuilt(report_dir: Path, report: dict[str, Any],
                                                                         tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "--gold", str(FIXTURE), "--pred", str(report_dir / "predictions.jsonl"),
                                      "--report", str(tmp_path), "--limit", "5", "--no-html"])
    assert result.exit_code == 0, result.output
    rows = json.loads((tmp_path / "report.json").read_text())["per_note"]
    # the same spans give the same output: the string-based recall over gold entities is unchanged
    assert [r["lr_gold"] for r in rows] == [r["lr_gold"] for r in report["per_note"][:5]]
    assert all(r["lr"] is not None and r["cire"] is not None for r in rows if r["entities"])


def test_when_presidio_sentences_are_scored_with_a_label_map_then_recall_agrees_too(shared_dir: Path,
                                                                                   tmp_path: Path) -> None:
    import yaml

    gold = shared_dir / "data" / "eval" / "presidio_synth_v2.jsonl"
    result = CliRunner().invoke(app, ["eval", "--gold", str(gold), "--labels", "presidio", "--limit", "150",
                                      "--report", str(tmp_path), "--steps", "regex,dictionary,recovery,ensemble",
                                      "--no-html"])
    assert result.exit_code == 0, result.output
    rep = json.loads((tmp_path / "report.json").read_text())
    mapping = yaml.safe_load((REPO / "schemas" / "labelmaps" / "presidio.yaml")
                             .read_text())["labels"]
    ind = independent_counts(gold, tmp_path / "predictions.jsonl", mapping, limit=150)
    assert (rep["tp"], rep["fn"], rep["fp"]) == (ind["tp"], ind["fn"], ind["fp"])
    assert round(rep["recall"], 3) == round(ind["recall"], 3) and rep["notes"] == 150


# ------------------------------------------------------------------------------------------ helpers

def _counts(gold: int, found: int, ents: int = 1, ents_found: int = 1) -> LabelCounts:
    return LabelCounts(gold_tokens=gold, gold_tokens_found=found, pred_tokens=found, pred_tokens_correct=found,
                       entities=ents, entities_found=ents_found)


def test_when_every_note_is_alike_then_the_label_interval_collapses() -> None:
    per_note = [{"NAME": _counts(4, 3)} for _ in range(10)]
    ci = label_bootstrap(per_note, n=20, seed=1)
    assert ci["NAME"]["recall"] == (pytest.approx(0.75), pytest.approx(0.75))
    assert ci["NAME"]["precision"] == (1.0, 1.0)


def test_when_notes_differ_then_the_label_interval_is_deterministic_and_ordered() -> None:
    per_note = [{"NAME": _counts(2, 2)}, {"NAME": _counts(2, 0)}, {"NAME": _counts(2, 1)}, {"DATE": _counts(3, 3)}]
    a, b = label_bootstrap(per_note, n=200, seed=7), label_bootstrap(per_note, n=200, seed=7)
    assert a == b
    lo, hi = a["NAME"]["recall"]  # type: ignore[misc]
    assert 0.0 <= lo < 0.5 < hi <= 1.0


def test_when_labels_are_bootstrapped_then_the_intervals_are_those_of_the_hand_written_bootstrap() -> None:
    # values printed by the pure-Python per-label bootstrap that numpy replaced (same seed, same draws)
    per_note = [{"NAME": LabelCounts(4, i % 5, 3, i % 4, 2, i % 3),
                 **({"DATE": LabelCounts(3, 3 - i % 2, 3, 3, 1, 1 - i % 2)} if i % 3 else {})} for i in range(12)]
    assert label_bootstrap(per_note, n=150, seed=2) == {
        "DATE": {"recall": (0.7126488095238096, 0.9523809523809523), "precision": (1.0, 1.0),
                 "f1": (0.8322154471544715, 0.975609756097561),
                 "entity_recall": (0.13794642857142858, 0.8571428571428571)},
        "NAME": {"recall": (0.2234375, 0.6458333333333334), "precision": (0.32569444444444445, 0.6743055555555557),
                 "f1": (0.295159478885894, 0.5942320325844174),
                 "entity_recall": (0.2916666666666667, 0.7197916666666669)}}
    assert label_bootstrap([], n=10) == {}
    with pytest.raises(ValueError):
        label_bootstrap(per_note, alpha=0.0)


def test_when_rows_are_summarised_then_means_and_shares_are_hand_values() -> None:
    rows = [
        {"lr": 100.0, "token_recall": 1.0, "entity_recall": 1.0, "lr_gold": 100.0, "jsc": 100.0, "cire": 1.0,
         "medical_terms": 10, "medical_terms_destroyed": 1, "medical_terms_destroyed_wrongly": 0, "leak": False},
        {"lr": 50.0, "token_recall": 0.5, "entity_recall": 0.5, "lr_gold": 40.0, "jsc": 50.0, "cire": 0.5,
         "medical_terms": 10, "medical_terms_destroyed": 3, "medical_terms_destroyed_wrongly": 2, "leak": True},
        {"lr": 80.0, "token_recall": 0.9, "entity_recall": None, "lr_gold": None, "jsc": None, "cire": None,
         "medical_terms": 0, "medical_terms_destroyed": 0, "medical_terms_destroyed_wrongly": 0},
    ]
    s = summarise(rows)
    assert s["cir"]["mean_jsc"] == 75.0 and s["cir"]["mean_cire"] == 0.75 and s["cir"]["mean_nsdcg"] is None
    assert s["recall_proxy"]["mean_lr"] == pytest.approx(230 / 3) and s["recall_proxy"]["notes_with_leak"] == 1
    assert s["medical_terms"] == {"terms": 20, "destroyed": 4, "destroyed_outside_gold": 2, "share_destroyed": 0.2,
                                  "share_destroyed_outside_gold": 0.1}
    # (1.0, 1.0), (0.5, 0.5), (0.8, 0.9): ranks agree -> Spearman 1
    corr = s["proxy_vs_true_recall"]["token_recall"]
    assert corr["n"] == 3 and corr["spearman"] == pytest.approx(1.0) and corr["pearson"] > 0.9
    assert corr["mean_abs_diff"] == pytest.approx(0.1 / 3)
    assert correlation(rows, "lr", "entity_recall", 0.01)["n"] == 2


def test_when_estimates_are_compared_with_the_truth_then_the_summary_holds_hand_values() -> None:
    rows = [
        {"number_retention": 1.0, "number_retention_true": 0.9, "word_retention": 0.99, "word_retention_true": 1.0,
         "risk_score": 0.1, "risk_expected": 0.1, "risky": False, "missed_entities": 0},
        {"number_retention": 0.8, "number_retention_true": 0.7, "word_retention": 0.9, "word_retention_true": 0.8,
         "risk_score": 0.6, "risk_expected": 0.9, "risky": True, "missed_entities": 2},
        {"number_retention": None, "number_retention_true": 1.0, "word_retention": 0.95, "word_retention_true": 0.9,
         "risk_score": 0.3, "risk_expected": 0.4, "risky": False, "missed_entities": 1},
        {"number_retention": 0.9, "number_retention_true": 0.85, "word_retention": 1.0, "word_retention_true": 1.0,
         "risk_score": 0.2, "risk_expected": 0.2, "risky": True, "missed_entities": 0},
    ]
    s = summarise(rows)
    num = s["retention_vs_truth"]["number_retention"]
    # the means are over the notes where both are defined (not the third)
    assert num["n"] == 3 and num["mean_estimate"] == pytest.approx(0.9) and num["mean_truth"] == pytest.approx(0.8166667)
    assert num["spearman"] == pytest.approx(1.0) and num["mean_abs_diff"] == pytest.approx(0.25 / 3)
    risk = s["risk_vs_truth"]
    # positives score 0.6 and 0.3, negatives 0.1 and 0.2: every pair ordered right
    assert risk["auroc"] == pytest.approx(1.0) and risk["notes_with_missed"] == 2
    assert risk["risky_share"] == 0.5 and risk["missed_notes_flagged"] == 0.5
    assert risk["expected_vs_missed"]["mean_truth"] == 0.75


def test_when_a_report_has_no_metrics_then_the_html_still_renders() -> None:
    rep = {"gold": "g.jsonl", "notes": 1, "tokens": 3, "labels": None, "precision": 1.0, "recall": 0.5, "f1": 0.667,
           "entity_recall": 0.0, "bootstrap": {"resamples": 10, "ci95": {"recall": [0.4, 0.6]}},
           "per_label": {"NAME": {"gold_tokens": 2, "recall": 0.5, "precision": 1.0, "f1": 0.667, "entities": 1,
                                  "entity_recall": 0.0}},
           "per_label_ci95": {"NAME": {"recall": [0.4, 0.6]}}}
    page = render_html(rep, [])
    assert page.count("data:image/png;base64,") == 1 and "0.400–0.600" in page


def test_when_a_report_renders_then_its_tables_carry_the_numbers() -> None:
    rep = {"gold": "g.jsonl", "notes": 1, "tokens": 3, "labels": "presidio", "precision": 1.0, "recall": 0.5,
           "f1": 0.667, "entity_recall": 0.0, "bootstrap": {"resamples": 10, "ci95": {"recall": [0.4, 0.6]}},
           "per_label": {"NAME": {"gold_tokens": 2, "recall": 0.5, "precision": None, "f1": 0.667, "entities": 1,
                                  "entity_recall": 0.0}},
           "per_label_ci95": {"NAME": {"recall": [0.4, 0.6], "entity_recall": None}},
           "judges": {"judges": ["entity", "string"], "threshold": 0.5, "tp": 3, "fn": 1, "fp": 2, "tp_pred": 0,
                      "discarded": 1, "precision": 0.6, "recall": 0.75,
                      "agreement_with_majority": {"entity": 1.0, "string": 0.8}},
           "notes_per_s": 12.5}
    page = render_html(rep, [])
    tables = _tables(page)
    assert tables.headings == ["deidstream evaluation: g.jsonl", "Against the quality targets", "Overall (shares, 0–1)",
                               "Per label (counts in tokens; metrics as shares)", "Judge panel", "Provenance"]
    rows = tables.rows
    targets = rows[:8]
    assert targets[0] == ["target", "required", "measured", "result", "from"]
    assert targets[1][:4] == ["token recall (generous)", ">= 0.97", "0.500", "fail"]
    assert targets[2][:4] == ["token precision", ">= 0.85", "1.000", "pass"]
    assert all(r[3] == "n/a" for r in targets[3:])  # no per-note metrics in this report
    overall = rows[8:13]
    assert [r[:3] for r in overall] == [
        ["metric", "value", "95% CI"],
        ["Token precision", "1.000", "–"], ["Token recall (generous)", "0.500", "0.400–0.600"],
        ["Token F1", "0.667", "–"], ["Entity recall (conservative)", "0.000", "–"],
    ]
    assert all(len(r[3]) > 20 for r in overall[1:])  # a definition beside each metric
    assert rows[13:15] == [
        ["label", "gold tokens", "missed (FN)", "predicted tokens", "false positives", "recall", "recall CI",
         "precision", "precision CI", "F1", "entities", "entity recall", "entity recall CI"],
        ["NAME", "2", "–", "–", "–", "0.500", "0.400–0.600", "–", "–", "0.667", "1", "0.000", "–"],
    ]
    assert rows[15:20] == [
        ["TP", "FN", "FP", "TP (not in gold)", "discarded", "precision", "recall"],
        ["3", "1", "2", "0", "1", "0.600", "0.750"],
        ["judge", "agreement with majority"], ["entity", "1.000"], ["string", "0.800"],
    ]
    assert ["notes per second (this run)", "12.5"] in rows and ["gold file", "g.jsonl"] in rows
    assert "1 notes, 3 tokens; labels: presidio; source: pipeline; bootstrap: 10 resamples over notes." in page
    assert "judges: entity, string; a verdict needs more than 0.50 of the votes." in page
    assert "<pre>" not in page and "{&#34;" not in page  # no raw JSON dump


def test_when_the_panel_has_llm_judges_then_the_html_shows_votes_and_why_they_abstained() -> None:
    rep = {"gold": "g.jsonl", "notes": 1, "tokens": 3, "bootstrap": {}, "per_label": {},
           "judges": {"judges": ["entity", "llm:m@vllm:8000"], "threshold": 0.5, "items": 5, "tp": 2, "fn": 1,
                      "fp": 1, "tp_pred": 0, "discarded": 1, "precision": 0.667, "recall": 0.667,
                      "agreement_with_majority": {"entity": 1.0, "llm:m@vllm:8000": 0.5},
                      "per_judge": {"entity": {"votes": 5, "abstained": 0, "agreement": 1.0},
                                    "llm:m@vllm:8000": {"votes": 2, "abstained": 3, "agreement": 0.5, "samples": 3,
                                                        "abstentions": {"split": 1, "timeout": 2}}}}}
    page = render_html(rep, [])
    rows = _tables(page).rows
    at = rows.index(["judge", "agreement with majority", "votes", "abstained", "why abstained", "samples per item"])
    assert rows[at:at + 3] == [
        ["judge", "agreement with majority", "votes", "abstained", "why abstained", "samples per item"],
        ["entity", "1.000", "5", "0", "–", "–"],
        ["llm:m@vllm:8000", "0.500", "2", "3", "split 1, timeout 2", "3"],
    ]
    assert "Discarded: items" in page


def test_when_report_values_hold_markup_then_the_html_escapes_them() -> None:
    rep = {"gold": "<script>alert(1)</script>.jsonl", "notes": 1, "tokens": 1, "labels": "a&b",
           "precision": None, "recall": None, "f1": None, "entity_recall": None, "bootstrap": {},
           "per_label": {}}
    page = render_html(rep, [])
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;.jsonl" in page
    assert "labels: a&amp;b" in page and "data:image/png" not in page
    assert _tables(page).headings[0] == "deidstream evaluation: <script>alert(1)</script>.jsonl"


@pytest.mark.parametrize("missing", ["jinja2", "matplotlib"])
def test_when_a_report_library_is_missing_then_the_html_error_says_how_to_install_it(
        missing: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # import fails; monkeypatch restores the module
    rep = {"gold": "g.jsonl", "per_label": {}}
    with pytest.raises(ConfigError, match=rf"{missing}.*pip install 'deidstream\[report\]'"):
        render_html(rep, [])
    # report.json needs neither
    assert write_reports(rep, [], tmp_path, html_report=False) == [tmp_path / "report.json"]


def test_when_gold_labels_have_no_map_then_eval_scores_them_by_their_own_labels(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    text = "Wife Maude Quackenbush called 617-555-0143 on 3/4/2019 re: CABG in 1998."
    spans = [("Maude Quackenbush", "RelativeProxyName"), ("617-555-0143", "Phone"), ("3/4/2019", "Date"),
             ("1998", "DateYear")]
    rec = {"id": "g1", "text": text, "spans": [
        {"start": text.index(s), "end": text.index(s) + len(s), "label": lab, "text": s} for s, lab in spans]}
    gold.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    # with the per-note metrics and the HTML report, as `deidstream eval` runs by default
    result = CliRunner().invoke(app, ["eval", "--gold", str(gold), "--report", str(tmp_path / "r"), "--steps",
                                      "regex,dictionary,recovery,ensemble"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r" / "report.html").is_file()
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    assert rep["labels"] == "gold's own"
    (row,) = rep["per_note"]
    assert row["lr_gold"] is not None  # the gold's own labels through the recall proxy too
    assert rep["per_label"]["Phone"]["recall"] == 1.0 and rep["per_label"]["Date"]["recall"] == 1.0
    # without a map every gold label is an identifier: the bare year (not tagged by regex) is a miss
    assert rep["per_label"]["DateYear"]["recall"] == 0.0 and rep["recall"] == 8 / 9


def test_when_sweeping_a_threshold_then_the_report_holds_one_row_per_value_and_the_default_row_agrees(
        tmp_path: Path) -> None:
    steps = "regex,dictionary,recovery,ensemble"
    result = CliRunner().invoke(app, ["eval", "--gold", str(FIXTURE), "--report", str(tmp_path / "r"), "--steps",
                                      steps, "--no-metrics", "--sweep", "regex=0.3,0.99"])
    assert result.exit_code == 0, result.output
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    rows = rep["sweep"]["rows"]
    assert [r["threshold"] for r in rows] == [0.3, 0.99] and rep["sweep"]["source"] == "regex"
    # 0.3 is the ensemble's default for regex: that row is the report's own result
    assert rows[0]["precision"] == rep["precision"] and rows[0]["recall"] == rep["recall"]
    assert rows[1]["recall"] <= rows[0]["recall"] and rows[1]["fp"] <= rows[0]["fp"]
    assert "Precision-recall trade-off" in (tmp_path / "r" / "report.html").read_text()
    bad = CliRunner().invoke(app, ["eval", "--gold", str(FIXTURE), "--report", str(tmp_path / "s"), "--steps", steps,
                                   "--no-metrics", "--sweep", "regex"])
    assert bad.exit_code == 2
