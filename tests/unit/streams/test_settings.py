"""Settings from DEID_* env / YAML, and the committed JSON Schemas being up to date."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from paths import REPO

from schemas.export import export_schemas
from streams.settings import Settings


def test_when_env_sets_nested_fields_then_settings_and_pipeline_config_follow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEID_TRANSFORM__MODE", "dateshift")
    monkeypatch.setenv("DEID_PIPELINE__STEPS", '["regex", "ensemble"]')
    s = Settings()
    assert s.transform.mode == "dateshift"
    cfg = s.pipeline_config()
    assert cfg.steps == ("regex", "ensemble")
    assert cfg.options["transform"]["mode"] == "dateshift"


def test_when_yaml_file_given_then_it_is_read_and_env_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "deid.yaml"
    f.write_text("transform:\n  mode: surrogate\n  keep_years: false\nlog_level: DEBUG\n")
    monkeypatch.setenv("DEID_CONFIG_FILE", str(f))
    monkeypatch.setenv("DEID_LOG_LEVEL", "ERROR")
    s = Settings()
    assert s.transform.mode == "surrogate" and s.transform.keep_years is False and s.log_level == "ERROR"


def test_secret_is_not_printed() -> None:
    s = Settings(secret="s3cr3t-value-xyz")  # type: ignore[arg-type]
    assert "s3cr3t-value-xyz" not in repr(s) and "s3cr3t-value-xyz" not in s.model_dump_json()


def test_committed_json_schemas_match_the_models(tmp_path: Path) -> None:
    fresh = {p.name: json.loads(p.read_text()) for p in export_schemas(tmp_path)}
    committed_dir = REPO / "schemas" / "json"
    committed = {p.name: json.loads(p.read_text()) for p in committed_dir.glob("*.schema.json")}
    assert fresh == committed, "run `deidstream schemas export schemas/json` and commit the result"


# --- the llm section (issue 11) -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["always", "risky"])
def test_when_llm_mode_is_on_then_the_step_runs_before_recovery_with_the_sections_options(
    monkeypatch: pytest.MonkeyPatch, mode: str,
) -> None:
    monkeypatch.setenv("DEID_LLM__MODE", mode)
    monkeypatch.setenv("DEID_LLM__URL", "http://vllm:8000/v1")
    monkeypatch.setenv("DEID_LLM__MODEL", "served-model")
    monkeypatch.setenv("DEID_LLM__CONCURRENCY", "3")
    monkeypatch.setenv("DEID_LLM__RISK_THRESHOLD", "0.25")
    cfg = Settings().pipeline_config()
    assert cfg.steps == ("regex", "ner", "dictionary", "recovery", "decide", "llm", "ensemble", "transform", "leakcheck",
                         "metrics")
    opts = cfg.options["llm"]
    assert (opts["mode"], opts["url"], opts["model"], opts["concurrency"], opts["risk_threshold"]) == (
        mode, "http://vllm:8000/v1", "served-model", 3, 0.25)
    from processors.llm.step import LLMStep

    LLMStep.Config.model_validate(opts)  # the settings' options are exactly the step's options


def test_when_llm_mode_is_off_then_the_pipeline_has_no_llm_step() -> None:
    cfg = Settings().pipeline_config()
    assert "llm" not in cfg.steps and "llm" not in cfg.options


def test_when_llm_mode_is_risky_without_a_server_then_settings_fail_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEID_LLM__MODE", "risky")
    with pytest.raises(ValueError, match=r"set llm.url and llm.model \(DEID_LLM__URL, DEID_LLM__MODEL\)"):
        Settings()


def test_llm_api_key_is_never_shown_nor_hashed(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from streams.cli.kafka import config_show

    monkeypatch.setenv("DEID_LLM__MODE", "always")
    monkeypatch.setenv("DEID_LLM__URL", "http://vllm:8000/v1")
    monkeypatch.setenv("DEID_LLM__MODEL", "served-model")
    monkeypatch.setenv("DEID_LLM__API_KEY", "sk-live-5150")
    s = Settings()
    assert s.llm.api_key is not None and s.llm.api_key.get_secret_value() == "sk-live-5150"
    config_show()
    shown = capsys.readouterr().out
    assert "served-model" in shown and "sk-live-5150" not in shown
    cfg = s.pipeline_config()
    assert "sk-live-5150" not in json.dumps(cfg.model_dump(mode="json"), default=str)
    monkeypatch.setenv("DEID_LLM__API_KEY", "sk-other-key")
    assert Settings().pipeline_config().config_hash() == cfg.config_hash()



@pytest.mark.parametrize(("env", "says"), [
    ({"DEID_TOPICS__DEID": "notes.raw"}, "topics.raw and topics.deid name the same topic: the worker would read its own "
                                         "output"),
    ({"DEID_TOPICS__QUARANTINE": "notes.raw"}, "topics.raw and topics.quarantine name the same topic"),
    ({"DEID_TOPICS__DLQ": "notes.quarantine"}, "topics.dlq and topics.quarantine name the same topic: each topic holds "
                                               "one kind of record"),
    ({"DEID_TOPICS__METRICS": "notes.deid"}, "topics.deid and topics.metrics name the same topic"),
    ({"DEID_TOPICS__RAW": "notes raw"}, "String should match pattern"),
    ({"DEID_TOPICS__RAW": ""}, "String should match pattern"),
    ({"DEID_TOPICS__DLQ": ".."}, "topics.dlq cannot be '..'"),
])
def test_when_topics_collide_or_are_no_kafka_names_then_settings_fail_naming_them(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], says: str,
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValueError, match=re.escape(says)):
        Settings()


def test_when_the_topics_are_five_kafka_names_then_settings_take_them(monkeypatch: pytest.MonkeyPatch) -> None:
    names = {"RAW": "hosp-a.notes_raw", "DEID": "hosp-a.notes.deid.v2", "METRICS": "M", "DLQ": "a-b_c.d",
             "QUARANTINE": "x" * 249}
    for role, name in names.items():
        monkeypatch.setenv(f"DEID_TOPICS__{role}", name)
    assert Settings().topics.all() == [names[r] for r in ("RAW", "DEID", "METRICS", "DLQ", "QUARANTINE")]
