"""`deid` / `detect` on bad configuration and bad input (issue 27): configuration and path errors exit 2 before any
model loads, a failed run leaves an existing output file as it was, an empty input is an error (E111), blank text is
rejected with the code the Kafka path uses (E122), and an error's place names one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO
from typer.testing import CliRunner

from streams.cli import app
from streams.cli._util import EXIT_SOME_FAILED, EXIT_USAGE

KEEP = '{"note_id": "earlier run", "spans": []}\n'
NOTE = json.dumps({"note_id": "n1", "text": "Seen by Dr. Quillfeather on 03/14/2021 for chest pain."})
#: the same note as a gold record without spans
GOLD = json.dumps({"id": "n1", "text": json.loads(NOTE)["text"], "spans": []}) + "\n"


@pytest.fixture
def no_model_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building any pipeline step fails the test: the errors under test must come before."""
    import processors.leakcheck  # noqa: F401 - binds the real build_processor at import, before it is patched
    import processors.pipeline as pipeline

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("a pipeline step was built")

    monkeypatch.setattr(pipeline, "build_processor", refuse)


def _run(args: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(app, args)
    return res.exit_code, res.stderr


@pytest.mark.parametrize(("args", "env", "code"), [
    (["--steps", "regex,nope"], {}, "E301"),
    (["--mode", "surrogate"], {"DEID_SECRET": None}, "E300"),
    (["--mode", "dateshift"], {"DEID_SECRET": None}, "E300"),
])
def test_when_the_configuration_is_wrong_then_exit_2_before_any_model_and_the_output_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_model_loads: None, args: list[str],
        env: dict[str, str | None], code: str) -> None:
    for k, v in env.items():
        monkeypatch.delenv(k, raising=False) if v is None else monkeypatch.setenv(k, v)
    src = tmp_path / "in.jsonl"
    src.write_text(NOTE + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text(KEEP)
    rc, stderr = _run(["deid", str(src), "-o", str(out), *args])
    assert rc == EXIT_USAGE and f"[{code}]" in stderr
    assert out.read_text() == KEEP
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]  # no temporary file left


@pytest.mark.parametrize("command", ["deid", "detect"])
def test_when_the_input_path_is_missing_then_exit_2_before_any_model_and_no_output_is_created(
        tmp_path: Path, no_model_loads: None, command: str) -> None:
    out = tmp_path / "out.jsonl"
    rc, stderr = _run([command, str(tmp_path / "missing.jsonl"), "-o", str(out)])
    assert rc == EXIT_USAGE and "[E110]" in stderr and "missing.jsonl" in stderr
    assert not out.exists()


def test_when_the_input_file_is_empty_then_it_is_an_error_and_the_output_is_kept(
        tmp_path: Path, no_model_loads: None) -> None:
    src = tmp_path / "empty.jsonl"
    src.write_text("")
    out = tmp_path / "out.jsonl"
    out.write_text(KEEP)
    rc, stderr = _run(["deid", str(src), "-o", str(out)])
    assert rc == EXIT_USAGE and "[E111]" in stderr and "empty" in stderr
    assert out.read_text() == KEEP


def test_when_the_pipeline_fails_mid_run_then_the_existing_output_is_not_truncated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from schemas.errors import ProcessingError
    from streams.cli import engine

    def broken(*_a: object, **_k: object) -> object:
        yield from ()
        raise ProcessingError("the pipeline broke", code="E400")

    monkeypatch.setattr(engine, "run_notes", broken)
    src = tmp_path / "in.jsonl"
    src.write_text(NOTE + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text(KEEP)
    rc, stderr = _run(["detect", str(src), "-o", str(out), "--steps", "regex"])
    assert rc == 1 and "[E400]" in stderr
    assert out.read_text() == KEEP
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


def test_when_a_run_completes_then_the_output_is_replaced_with_the_usual_permissions(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(NOTE + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text(KEEP)
    out.chmod(0o644)
    rc, _ = _run(["detect", str(src), "-o", str(out), "--steps", "regex"])
    assert rc == 0
    assert [json.loads(x)["note_id"] for x in out.read_text().splitlines()] == ["n1"]
    assert out.stat().st_mode & 0o777 == 0o644


def test_when_a_note_is_blank_or_bad_json_then_each_is_reported_with_one_line_and_the_kafka_code(
        tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text(NOTE + "\nnot json\n" + json.dumps({"note_id": "blank", "text": " \t\n "}) + "\n")
    out = tmp_path / "out.jsonl"
    rc, stderr = _run(["detect", str(src), "-o", str(out), "--steps", "regex"])
    assert rc == EXIT_SOME_FAILED
    assert "bad.jsonl:2: [E102] invalid JSON at column 1" in stderr
    assert "line 1" not in stderr
    assert "bad.jsonl:3: [E122]" in stderr
    assert [json.loads(x)["note_id"] for x in out.read_text().splitlines()] == ["n1"]


def test_when_a_kafka_record_and_a_file_line_hold_blank_text_then_both_are_rejected_alike() -> None:
    from schemas.errors import InputError
    from schemas.readers import RawItem, parse_item
    from streams.codec import InRecord, decode

    raw = json.dumps({"note_id": "blank", "text": "   "}).encode()
    with pytest.raises(InputError) as from_file:
        parse_item(RawItem(file="f.jsonl", format="json", raw=raw, line=1))
    with pytest.raises(InputError) as from_kafka:
        decode(InRecord(topic="t", partition=0, offset=0, key=None, value=raw, headers=()), max_bytes=1 << 20)
    assert from_file.value.code == from_kafka.value.code == "E122"


@pytest.mark.parametrize(("config", "env", "says"), [
    ("worker:\n  batch_size: -3\n", {}, "worker.batch_size: Input should be greater than or equal to 1"),
    (None, {"DEID_WORKER__BATCH_SIZE": "-3"}, "worker.batch_size: Input should be greater than or equal to 1"),
    ("worker: [1, 2\n", {}, "must hold a YAML mapping"),
    # a variable that must hold JSON and does not
    (None, {"DEID_PIPELINE__OPTIONS": "Hunter2-Quillfeather not json"},
     'error parsing value for field "pipeline" from source "EnvSettingsSource"'),
    # a wrong value of a secret's field: the error names the field, never the value given
    ("kafka:\n  sasl_password: {value: Hunter2-Quillfeather}\n", {}, "kafka.sasl_password: Input should be a valid string"),
])
def test_when_a_settings_value_is_invalid_then_exit_2_naming_the_field_never_its_value_and_no_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_model_loads: None, config: str | None,
        env: dict[str, str], says: str) -> None:
    monkeypatch.delenv("DEID_CONFIG_FILE", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    src = tmp_path / "in.jsonl"
    src.write_text(NOTE + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text(KEEP)
    args = ["detect", str(src), "-o", str(out)]
    if config is not None:
        (tmp_path / "settings.yaml").write_text(config)
        args += ["--config", str(tmp_path / "settings.yaml")]
    rc, stderr = _run(args)
    flat = " ".join(stderr.split())  # rich wraps long lines
    assert rc == EXIT_USAGE and "[E300]" in flat and says in flat, stderr
    assert "Traceback" not in stderr and "Hunter2" not in stderr
    assert out.read_text() == KEEP


def _main(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI through its entry point's ``main()`` (CliRunner calls the app and bypasses it), in a fresh process."""
    environ = {k: v for k, v in os.environ.items() if k != "DEID_CONFIG_FILE"} | env
    return subprocess.run([sys.executable, "-m", "streams.cli", *args], cwd=REPO, env=environ, capture_output=True,
                          text=True, timeout=300)


def test_when_the_worker_is_given_its_input_as_an_output_then_it_exits_2_before_loading_or_connecting() -> None:
    # a clean note published back onto the input would be read again for ever; no broker runs here, and none is needed
    done = _main(["worker"], DEID_TOPICS__DEID="notes.raw", DEID_KAFKA__BOOTSTRAP_SERVERS="127.0.0.1:9")
    flat = " ".join(done.stderr.split())
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "config error [E300]" in flat and "topics.raw and topics.deid name the same topic" in flat, done.stderr
    assert "Traceback" not in done.stderr


def test_when_another_command_meets_an_invalid_setting_then_it_exits_2_with_the_config_error() -> None:
    # every command's configuration error reaches main()
    done = _main(["config", "show"], DEID_WORKER__BATCH_SIZE="0")
    flat = " ".join(done.stderr.split())
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "config error [E300]" in flat and "worker.batch_size" in flat and "Traceback" not in done.stderr


@pytest.mark.parametrize(("files", "extra", "says"), [
    ({}, [], "[E110]"),  # no gold file
    ({"gold.jsonl": '{"id": "a", "text": "short", "spans": [{"start": 5, "end": 9, "label": "NAME"}]}\n'}, [],
     "[E100] gold record 1: span [5, 9) outside the text"),
    ({"gold.jsonl": GOLD}, ["--pred", "{tmp}/absent.jsonl"], "[E110]"),
    ({"gold.jsonl": GOLD, "pred.jsonl": '{"note_id": "n1"\n'}, ["--pred", "{tmp}/pred.jsonl"],
     "[E102] pred.jsonl:1: invalid JSON"),
    ({"gold.jsonl": GOLD}, ["--labels", "nosuchmap"], "[E300] label map 'nosuchmap'"),
])
def test_when_eval_is_given_a_wrong_gold_predictions_or_label_map_then_exit_2_with_the_coded_error_before_any_model(
        tmp_path: Path, no_model_loads: None, files: dict[str, str], extra: list[str], says: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    rc, stderr = _run(["eval", "--gold", str(tmp_path / "gold.jsonl"), "--report", str(tmp_path / "report"),
                       *[a.format(tmp=tmp_path) for a in extra]])
    flat = " ".join(stderr.split())
    assert rc == EXIT_USAGE and says in flat and "Traceback" not in stderr, stderr
    assert not (tmp_path / "report").exists()


def test_when_a_command_raises_a_coded_error_then_main_prints_it_without_a_traceback_and_exits_1(
        tmp_path: Path) -> None:
    # --sweep re-applies the ensemble: without the ensemble step it is an InputError (E100) raised mid-command
    done = _main(["eval", "--gold", "tests/data/synthetic_small.jsonl", "--report", str(tmp_path / "report"),
                  "--steps", "regex", "--limit", "3", "--sweep", "ner=0.5", "--no-html"])
    flat = " ".join(done.stderr.split())
    assert done.returncode == 1, done.stderr
    assert "error [E100] --sweep needs the ensemble step" in flat and "Traceback" not in done.stderr


def test_when_produce_is_given_a_missing_file_then_exit_2_naming_it_before_any_broker_is_asked(tmp_path: Path) -> None:
    rc, stderr = _run(["produce", str(tmp_path / "missing.jsonl")])
    assert rc == EXIT_USAGE and "[E110]" in stderr and "missing.jsonl" in " ".join(stderr.split())
