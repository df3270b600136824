"""The Helm chart's values mirror the settings: every settings field is in values.yaml, in ``settings`` or (the
LLM server's fields) in the ``llm`` block, never in both (the rendered ConfigMap loading back into Settings
and the llm block's DEID_LLM__* variables are tested in test_chart.py, through real Helm), and
values.schema.json is the one scripts/helm_values_schema.py generates from Settings."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from paths import REPO, load_script

from streams.settings import Settings

VALUES = REPO / "helm" / "deidstream" / "values.yaml"
SECRET_FIELDS = {"secret", "kafka.ssl_password", "kafka.sasl_password", "telemetry.otlp_headers", "llm.api_key"}
#: the chart's ``llm`` block: value -> LLMSettings field (set as DEID_LLM__* by the worker Deployment)
LLM_BLOCK = {"url": "url", "model": "model", "mode": "mode", "riskThreshold": "risk_threshold",
             "timeoutS": "timeout_s", "concurrency": "concurrency"}


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
    values = yaml.safe_load(VALUES.read_text())
    in_block = {f"llm.{field}" for field in LLM_BLOCK.values()}
    assert _keys(values["settings"]) == _fields(Settings()) - SECRET_FIELDS - in_block
    assert set(LLM_BLOCK) <= set(values["llm"])


def test_the_llm_block_defaults_are_the_settings_defaults_but_mode() -> None:
    from streams.settings import LLMSettings

    block, defaults = yaml.safe_load(VALUES.read_text())["llm"], LLMSettings()
    assert block["enabled"] is False and block["mode"] == "risky"  # enabling the server turns the pass on
    for value, field in LLM_BLOCK.items():
        if value != "mode":
            assert block[value] == getattr(defaults, field), value
    settings = yaml.safe_load(VALUES.read_text())["settings"]["llm"]
    assert settings == {k: v for k, v in defaults.model_dump().items() if k in settings}


def test_values_schema_is_generated_from_settings() -> None:
    module = load_script("helm_values_schema")
    committed = json.loads((REPO / "helm" / "deidstream" / "values.schema.json").read_text())
    assert committed == json.loads(json.dumps(module.build_schema())), "run scripts/helm_values_schema.py"
    settings = committed["properties"]["settings"]["properties"]
    assert "secret" not in settings and set(settings) == {f for f in Settings.model_fields if f != "secret"}
    llm = committed["$defs"]["LLMSettings"]["properties"]
    assert "api_key" not in llm and not set(llm) & set(LLM_BLOCK.values())
    assert committed["properties"]["llm"]["properties"]["mode"]["enum"] == ["off", "always", "risky"]


def test_values_yaml_is_valid_against_the_schema() -> None:
    import jsonschema

    schema = json.loads((REPO / "helm" / "deidstream" / "values.schema.json").read_text())
    jsonschema.validate(yaml.safe_load(VALUES.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**yaml.safe_load(VALUES.read_text()), "image": {"repository": "d", "tag": "latest"}},
                            schema)


@pytest.mark.parametrize(("path", "value"), [
    (("settings", "llm", "mode"), "always"),        # in the llm block, not in settings
    (("settings", "llm", "api_key"), "key"),        # a secret: llm.apiKey names a Secret
    (("llm", "mode"), "sometimes"),
    (("llm", "riskThreshold"), 1.5),
    (("llm", "concurrency"), 0),
    (("llm", "timeoutS"), 0),
])
def test_when_llm_values_are_misplaced_or_out_of_range_then_the_schema_rejects_them(path: tuple[str, ...],
                                                                                    value: Any) -> None:
    import jsonschema

    schema = json.loads((REPO / "helm" / "deidstream" / "values.schema.json").read_text())
    values = yaml.safe_load(VALUES.read_text())
    target = values
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(values, schema)
