"""`deidstream detect` / `deid` end to end through the real CLI (typer runner, real processors),
and the PHI scan: nothing the code emitted (logs, stderr, errors) holds the notes' identifiers."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from paths import DATA
from typer.testing import CliRunner

from streams.cli import app
from streams.cli._util import EXIT_SOME_FAILED, metrics_summary

DATA = DATA / "cli"
#: identifiers of the test notes; none may appear in anything the program emitted except the output text fields
IDENTIFIERS = ["Zebediah", "Quarrington", "48213377", "Ottoline", "Farquharson", "617-555-0143", "zq@example.com",
               "Perpetua", "617-555-0199", "Hildegard", "Vanterpool", "Ignatius", "Pemberton", "Larkspur", "62704"]


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner()


def _read(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_when_detect_runs_on_jsonl_then_bad_lines_are_reported_by_number_and_skipped(
    runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "spans.jsonl"
    res = runner.invoke(app, ["detect", str(DATA / "notes.jsonl"), "-o", str(out)])
    assert res.exit_code == EXIT_SOME_FAILED, res.output
    for lineno in (4, 5, 6):
        assert f"notes.jsonl:{lineno}" in res.stderr
    recs = _read(out)
    assert [r["note_id"] for r in recs] == ["cli-1", "cli-2", "cli-3"]
    assert set(recs[0]) == {"note_id", "spans"}
    assert set(recs[0]["spans"][0]) == {"start", "end", "label", "subtype", "score", "source"}
    text = (DATA / "notes.jsonl").read_text().splitlines()
    note1 = json.loads(text[0])["text"]
    found = {note1[s["start"]:s["end"]] for s in recs[0]["spans"]}
    for ident in ("Zebediah", "Quarrington", "48213377", "03/14/2021", "617-555-0143", "zq@example.com",
                  "Ottoline", "Farquharson"):
        assert any(ident in f for f in found), ident
    for medical in ("Lasix", "Bruce", "120/80"):
        assert not any(medical in f for f in found), medical


@pytest.mark.parametrize("mode", ["tag", "dateshift", "surrogate"])
def test_when_deid_runs_then_output_has_no_identifiers_and_keeps_clinical_terms(
    runner: CliRunner, tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEID_SECRET", "test-secret-for-cli-only")
    out = tmp_path / "deid.jsonl"
    res = runner.invoke(app, ["deid", str(DATA / "notes.jsonl"), "-o", str(out), "--mode", mode])
    assert res.exit_code == EXIT_SOME_FAILED, res.output
    recs = _read(out)
    assert len(recs) == 3
    for rec in recs:
        assert {"note_id", "spans", "text", "leak"} <= set(rec)
        for ident in IDENTIFIERS:
            assert ident not in rec["text"], (mode, ident)
    assert "Lasix 40 mg" in recs[0]["text"] and "Bruce protocol" in recs[0]["text"]
    assert "K 4.1" in recs[1]["text"]


def test_when_surrogate_mode_has_default_secret_then_it_refuses(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEID_SECRET", raising=False)
    res = runner.invoke(app, ["deid", str(DATA / "notes.jsonl"), "-o", str(tmp_path / "x.jsonl"),
                              "--mode", "surrogate"])
    assert res.exit_code != 0
    assert "DEID_SECRET" in res.stderr


def test_when_input_is_hl7_folder_then_notes_come_out(runner: CliRunner, tmp_path: Path, shared_dir: Path) -> None:
    out = tmp_path / "hl7.jsonl"
    res = runner.invoke(app, ["deid", str(shared_dir / "data" / "hl7" / "linuxforhealth"), "-o", str(out)])
    assert res.exit_code in (0, EXIT_SOME_FAILED), res.output
    assert len(_read(out)) >= 1


def test_no_identifier_in_logs_or_errors(runner: CliRunner, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every command path with DEBUG logging, bad inputs included; scan all that was emitted."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("DEID_SECRET", "test-secret-for-cli-only")
    emitted = []
    for args in (["detect", str(DATA / "notes.jsonl"), "-o", str(tmp_path / "a.jsonl")],
                 ["deid", str(DATA / "notes.jsonl"), "-o", str(tmp_path / "b.jsonl"), "--mode", "surrogate"],
                 ["deid", str(DATA / "notes.jsonl"), "-o", str(tmp_path / "c.jsonl"), "--mode", "dateshift"]):
        res = runner.invoke(app, args)
        emitted.append(res.stdout + res.stderr)
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            emitted.append(repr(res.exception))
    emitted.append(caplog.text)
    emitted.extend(str(r.args) for r in caplog.records)
    blob = "\n".join(emitted)
    leaked = [i for i in IDENTIFIERS if i in blob]
    assert not leaked, f"identifiers in emitted logs/errors: {len(leaked)}"


def test_when_a_metrics_record_is_summarised_then_the_new_fields_are_in_one_line() -> None:
    record = {"n_spans": 2, "metrics": {
        "metrics_version": "2",
        "retention": {"number_retention": 0.9, "numbers_kept": 9, "numbers_lost": 1, "numbers_removed": 2,
                      "word_retention": 0.98, "words_lost": 3, "words_lost_clinical": 2, "words_removed": 4},
        "risk": {"score": 0.25, "expected": 0.2877, "risky": True}, "recall": {"lr": 100.0, "known": 3}}}
    assert metrics_summary(record) == (
        "metrics v2; numbers 0.900 (kept 9, lost 1, removed for a reason 2); words 0.980 (lost 3, clinical 2, "
        "removed for a reason 4); risk 0.250 (expected 0.288 missed, RISKY); recall proxy LR 100.000 of 3 known")
    assert metrics_summary({"n_spans": 2}) is None  # no metrics step: nothing to summarise
    record["metrics"]["llm"] = {"status": "failed", "reason": "timeout", "gate_score": 0.31, "spans": 0}
    assert (metrics_summary(record) or "").endswith("; llm failed:timeout (gate 0.310, 0 spans)")
