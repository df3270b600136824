"""The Helm chart's values mirror the settings: every settings field is in values.yaml (the rendered
ConfigMap loading back into Settings is tested in test_chart.py, through real Helm), and values.schema.json
is the one scripts/helm_values_schema.py generates from Settings."""

from __future__ import annotations

import importlib.util
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


def test_values_mirror_every_settings_field() -> None:
    settings = yaml.safe_load(VALUES.read_text())["settings"]
    assert _keys(settings) == _fields(Settings()) - SECRET_FIELDS


def test_values_schema_is_generated_from_settings() -> None:
    spec = importlib.util.spec_from_file_location("helm_values_schema", REPO / "scripts" / "helm_values_schema.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = json.loads((REPO / "helm" / "deidstream" / "values.schema.json").read_text())
    assert committed == json.loads(json.dumps(module.build_schema())), "run scripts/helm_values_schema.py"
    settings = committed["properties"]["settings"]["properties"]
    assert "secret" not in settings and set(settings) == {f for f in Settings.model_fields if f != "secret"}


def test_values_yaml_is_valid_against_the_schema() -> None:
    import jsonschema

    schema = json.loads((REPO / "helm" / "deidstream" / "values.schema.json").read_text())
    jsonschema.validate(yaml.safe_load(VALUES.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**yaml.safe_load(VALUES.read_text()), "image": {"repository": "d", "tag": "latest"}},
                            schema)
