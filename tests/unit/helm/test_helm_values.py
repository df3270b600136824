"""The Helm chart's values mirror the settings: every settings field is in values.yaml, and the DEID_*
variables the chart's flattening rule produces load back into the same Settings."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from paths import REPO

from streams.settings import Settings

VALUES = REPO / "helm" / "deidstream" / "values.yaml"
SECRET_FIELDS = {"secret", "kafka.ssl_password", "kafka.sasl_password", "telemetry.otlp_headers"}


def _fields(model: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for name, _info in type(model).model_fields.items():
        value = getattr(model, name)
        key = prefix + name
        if hasattr(value, "model_fields") and name != "pipeline":
            out |= _fields(value, key + ".")
        else:
            out.add(key)
    return out


def _keys(values: dict[str, Any], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for k, v in values.items():
        if isinstance(v, dict) and k != "pipeline":
            out |= _keys(v, prefix + k + ".")
        else:
            out.add(prefix + k)
    return out


def _flatten(values: dict[str, Any], prefix: str = "DEID_") -> dict[str, str]:
    """The same rule as templates/_helpers.tpl (deidstream.env)."""
    env: dict[str, str] = {}
    for k, v in values.items():
        name = prefix + k.upper()
        if v is None:
            continue
        if isinstance(v, dict) and k != "options":
            env.update(_flatten(v, name + "__"))
        elif isinstance(v, (list, dict)):
            env[name] = json.dumps(v)
        else:
            env[name] = str(v).lower() if isinstance(v, bool) else str(v)
    return env


def test_values_mirror_every_settings_field() -> None:
    settings = yaml.safe_load(VALUES.read_text())["settings"]
    assert _keys(settings) == _fields(Settings()) - SECRET_FIELDS


def test_values_load_back_into_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = yaml.safe_load(VALUES.read_text())["settings"]
    for name, value in _flatten(settings).items():
        monkeypatch.setenv(name, value)
    loaded = Settings()
    assert loaded.pipeline.steps == tuple(settings["pipeline"]["steps"])
    assert loaded.worker.batch_size == settings["worker"]["batch_size"]
    assert loaded.topics.raw == settings["topics"]["raw"]
    assert loaded.transform.mode == settings["transform"]["mode"]
