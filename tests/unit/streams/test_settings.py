"""Settings from DEID_* env / YAML, and the committed JSON Schemas being up to date."""

from __future__ import annotations

import json
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
