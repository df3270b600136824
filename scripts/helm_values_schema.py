"""Write helm/deidstream/values.schema.json: the chart's own values, and ``settings`` as the JSON Schema of
streams.settings.Settings (pydantic's), less the secret fields (those come from Kubernetes Secrets only,
so the schema rejects them in values) and the ``llm`` fields that the chart's ``llm`` block sets (their
schemas move there, so each field has one place in values). tests/unit/helm keeps the committed file equal
to this output.

    python scripts/helm_values_schema.py            # rewrite the file
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
OUT = REPO / "helm" / "deidstream" / "values.schema.json"
#: Settings fields that never appear in values (section, field); the chart takes them from Secrets.
SECRET_FIELDS = (("", "secret"), ("KafkaSettings", "ssl_password"), ("KafkaSettings", "sasl_password"),
                 ("TelemetrySettings", "otlp_headers"), ("LLMSettings", "api_key"))
#: The chart's ``llm`` block (value -> LLMSettings field): the worker Deployment sets them as DEID_LLM__* only
#: when ``llm.enabled``, so they are not in ``settings.llm``.
LLM_BLOCK = {"url": "url", "model": "model", "mode": "mode", "riskThreshold": "risk_threshold",
             "timeoutS": "timeout_s", "concurrency": "concurrency"}


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": props}
    if required:
        out["required"] = required
    return out


STR = {"type": "string"}
BOOL = {"type": "boolean"}
INT0 = {"type": "integer", "minimum": 0}
INT1 = {"type": "integer", "minimum": 1}
MAP = {"type": "object"}
LIST = {"type": "array"}
SECRET_REF = _obj({"existingSecret": STR, "key": STR})
PROBE = _obj({"periodSeconds": INT1, "failureThreshold": INT1, "timeoutSeconds": INT1})
RESOURCES = _obj({"requests": MAP, "limits": MAP})
#: A pinned image tag: never empty, never "latest".
TAG = {"type": "string", "minLength": 1, "not": {"enum": ["latest", "Latest", "LATEST"]}}
IMAGE = _obj({"repository": {"type": "string", "minLength": 1}, "tag": TAG,
              "digest": {"type": "string", "pattern": "^(sha256:[a-f0-9]{64})?$"},
              "pullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]}}, ["repository", "tag"])


def chart_values() -> dict[str, Any]:
    return {
        "image": IMAGE,
        "imagePullSecrets": {"type": "array", "items": _obj({"name": STR})},
        "replicaCount": INT0,
        "serviceAccount": _obj({"create": BOOL, "name": STR, "annotations": MAP}),
        "podAnnotations": MAP,
        "podLabels": MAP,
        "priorityClassName": STR,
        "terminationGracePeriodSeconds": INT1,
        "secret": _obj({"existingSecret": {"type": "string", "minLength": 1}, "key": {"type": "string", "minLength": 1}},
                       ["existingSecret", "key"]),
        "kafkaAuth": _obj({
            "tls": _obj({"enabled": BOOL, "existingSecret": STR, "caKey": STR, "certKey": STR, "keyKey": STR,
                         "passwordKey": STR}),
            "sasl": _obj({"enabled": BOOL, "existingSecret": STR, "usernameKey": STR, "passwordKey": STR}),
        }),
        "telemetryAuth": _obj({"existingSecret": STR, "otlpHeadersKey": STR}),
        "extraSecretEnv": {"type": "array", "items": _obj(
            {"name": {"type": "string", "pattern": "^DEID_[A-Z0-9_]+$"}, "secretName": STR, "key": STR},
            ["name", "secretName", "key"])},
        "resources": RESOURCES,
        "gpu": _obj({"enabled": BOOL, "count": INT1, "resourceName": STR}),
        "nodeSelector": MAP,
        "tolerations": LIST,
        "affinity": MAP,
        "topologySpreadConstraints": LIST,
        "probes": _obj({"startup": PROBE, "liveness": PROBE, "readiness": PROBE}),
        "cache": _obj({"existingClaim": STR, "sizeLimit": STR}),
        "models": _obj({"existingClaim": STR, "mountPath": STR}),
        "podDisruptionBudget": _obj({"enabled": BOOL, "maxUnavailable": {"type": ["integer", "string"]}}),
        "topicsJob": _obj({"enabled": BOOL, "backoffLimit": INT0, "ttlSecondsAfterFinished": INT0}),
        "keda": _obj({"enabled": BOOL, "minReplicas": INT0, "maxReplicas": INT1, "lagThreshold": INT1,
                      "activationLagThreshold": INT0, "pollingInterval": INT1, "cooldownPeriod": INT0}),
        "networkPolicy": _obj({"enabled": BOOL, "kafkaPorts": {"type": "array", "items": INT1},
                               "kafkaCidrs": {"type": "array", "items": STR}, "otlpPort": INT1,
                               "probeFrom": LIST, "extraEgress": LIST}),
        "llm": _obj({"enabled": BOOL, **llm_block(), "apiKey": SECRET_REF}),
        "vllm": _obj({
            "enabled": BOOL, "image": IMAGE, "model": {"type": "string", "minLength": 1},
            "servedModelName": {"type": "string", "minLength": 1}, "gpus": INT1, "maxModelLen": INT1,
            "port": INT1, "extraArgs": {"type": "array", "items": STR}, "resources": RESOURCES,
            "cache": _obj({"existingClaim": STR, "sizeLimit": STR}), "hfToken": SECRET_REF,
            "readOnlyRootFilesystem": BOOL, "nodeSelector": MAP, "tolerations": LIST, "affinity": MAP,
        }),
    }


def llm_block() -> dict[str, Any]:
    """The ``llm`` block's settings values, with LLMSettings' own schemas for them."""
    from streams.settings import LLMSettings

    props = LLMSettings.model_json_schema()["properties"]
    # the chart's defaults differ (mode: risky once llm.enabled): keep the constraints, drop the annotations
    return {value: {k: v for k, v in props[field].items() if k not in ("default", "title")}
            for value, field in LLM_BLOCK.items()}


def settings_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    """(the ``settings`` property, its $defs) from Settings, secret fields and the ``llm`` block's removed."""
    from streams.settings import Settings

    schema = Settings.model_json_schema()
    defs: dict[str, Any] = schema.pop("$defs", {})
    for section, name in (*SECRET_FIELDS, *(("LLMSettings", f) for f in LLM_BLOCK.values())):
        target = schema if not section else defs[section]
        target["properties"].pop(name)
    schema.pop("title", None)
    return schema, defs


def build_schema() -> dict[str, Any]:
    settings, defs = settings_schema()
    props = chart_values()
    props["settings"] = settings
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": "deidstream chart values",
            **_obj(props, ["image", "secret", "settings"]), "$defs": defs}


def main() -> None:
    OUT.write_text(json.dumps(build_schema(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
