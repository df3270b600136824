"""The Helm chart through real Helm (helm-sdkpy's Go library): lint of chart copies whose values.yaml is
each variant (default, GPU, LLM on, TLS/SASL on, KEDA on), rendering of each variant (tests/support/
fake_kube.py), what the manifests must hold, the render-time checks, Kubernetes schema validation of the
manifests, and checkov on them (every finding fixed, or skipped in the template with a reason)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from checkov_runner import run_checkov
from fake_kube import lint, render
from paths import REPO

from streams.settings import Settings

CHART = REPO / "helm" / "deidstream"
BASE = yaml.safe_load((CHART / "values.yaml").read_text())


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


GPU = {"image": {"tag": "0.1.0-cuda"}, "gpu": {"enabled": True, "count": 1},
       "nodeSelector": {"nvidia.com/gpu.present": "true"},
       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
       "settings": {"pipeline": {"options": {"ner": {"device": "cuda"}}}}}
LLM = {"llm": {"enabled": True, "apiKey": {"existingSecret": "llm-key", "key": "api-key"}},
       "vllm": {"enabled": True, "gpus": 2, "model": "Qwen/Qwen2.5-7B-Instruct"},
       "networkPolicy": {"enabled": True}}
TLS_SASL = {"kafkaAuth": {"tls": {"enabled": True, "existingSecret": "kafka-tls", "caKey": "ca.crt",
                                  "certKey": "tls.crt", "keyKey": "tls.key", "passwordKey": "key-password"},
                          "sasl": {"enabled": True, "existingSecret": "kafka-sasl"}},
            "telemetryAuth": {"existingSecret": "otlp", "otlpHeadersKey": "headers"},
            "settings": {"kafka": {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                                   "bootstrap_servers": "kafka-0.kafka:9093,kafka-1.kafka:9093"},
                         "telemetry": {"exporter": "otlp", "otlp_endpoint": "http://otel-collector:4318"}},
            "networkPolicy": {"enabled": True, "kafkaCidrs": ["10.20.0.0/16"]}, "topicsJob": {"enabled": True}}
KEDA = {"keda": {"enabled": True, "minReplicas": 1, "maxReplicas": 8}, "kafkaAuth": TLS_SASL["kafkaAuth"],
        "settings": _merge(TLS_SASL["settings"], {"topics": {"partitions": 8}})}
VARIANTS: dict[str, dict[str, Any]] = {"default": {}, "gpu": GPU, "llm": LLM, "tls_sasl": TLS_SASL, "keda": KEDA}


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {name: render(CHART, over) for name, over in VARIANTS.items()}


def _one(objs: list[dict[str, Any]], kind: str, suffix: str = "") -> dict[str, Any]:
    (obj,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)
              and (suffix or not o["metadata"]["name"].endswith("-vllm"))]
    return obj


def _worker(objs: list[dict[str, Any]]) -> dict[str, Any]:
    return _one(objs, "Deployment", "-deidstream")["spec"]["template"]["spec"]["containers"][0]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_when_values_yaml_is_a_variant_then_helm_lint_passes(variant: str, tmp_path: Path) -> None:
    chart = tmp_path / "deidstream"
    shutil.copytree(CHART, chart)
    (chart / "values.yaml").write_text(yaml.safe_dump(_merge(BASE, VARIANTS[variant])))
    result = lint(chart)
    assert result["TotalChartsLinted"] == 1
    problems = [m for m in result["Messages"] or [] if m["Severity"] >= 2]  # 2 warning, 3 error
    assert not problems and not result["Errors"], result


def test_when_values_break_the_schema_then_lint_reports_it(tmp_path: Path) -> None:
    chart = tmp_path / "deidstream"
    shutil.copytree(CHART, chart)
    (chart / "values.yaml").write_text(yaml.safe_dump(_merge(BASE, {"image": {"tag": "latest"}})))
    result = lint(chart)
    assert any(m["Severity"] == 3 for m in result["Messages"] or []), result


@pytest.mark.parametrize(("over", "message"), [
    ({"image": {"tag": "latest"}}, "tag"),
    ({"settings": {"secret": "inline-hmac-key"}}, "secret"),
    ({"settings": {"kafka": {"sasl_password": "pw"}}}, "sasl_password"),
    ({"settings": {"transform": {"mode": "blur"}}}, "mode"),
    ({"keda": {"enabled": True, "maxReplicas": 9}}, "keda.maxReplicas must not exceed settings.topics.partitions"),
    ({"terminationGracePeriodSeconds": 100}, "terminationGracePeriodSeconds must be longer"),
    ({"kafkaAuth": {"tls": {"enabled": True}}}, "security_protocol SSL or SASL_SSL"),
    ({"settings": {"kafka": {"security_protocol": "SASL_SSL"}}}, "needs kafkaAuth.sasl"),
    ({"gpu": {"enabled": True}}, "CUDA image"),
    ({"vllm": {"enabled": True}}, "vllm.enabled needs llm.enabled"),
    ({"llm": {"enabled": True}}, "llm.enabled needs llm.url"),
    ({"llm": {"enabled": True, "url": "http://llm.example:8000/v1"}}, "llm.enabled needs llm.model"),
])
def test_when_values_are_unsafe_or_inconsistent_then_helm_refuses_to_render(over: dict[str, Any], message: str) -> None:
    import helm_sdkpy

    with pytest.raises(helm_sdkpy.HelmError) as exc:
        render(CHART, over)
    assert message in str(exc.value)


def test_configmap_holds_every_setting_and_loads_back_into_the_same_settings(
        rendered: dict[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch) -> None:
    data = _one(rendered["tls_sasl"], "ConfigMap")["data"]
    for name, value in data.items():
        monkeypatch.setenv(name, value)
    loaded = Settings()
    values = _merge(BASE, TLS_SASL)["settings"]
    assert loaded.kafka.max_request_bytes == values["kafka"]["max_request_bytes"]  # not 1.6777216e+07
    assert loaded.kafka.security_protocol == "SASL_SSL" and loaded.kafka.sasl_mechanism == "SCRAM-SHA-512"
    assert loaded.pipeline.steps == tuple(values["pipeline"]["steps"])
    assert loaded.health.host == "0.0.0.0" and loaded.health.stuck_after_s == values["health"]["stuck_after_s"]
    assert loaded.worker.model_dump() == values["worker"]
    assert not any("PASSWORD" in k or k == "DEID_SECRET" or "HEADERS" in k for k in data)


def test_worker_deployment_default(rendered: dict[str, list[dict[str, Any]]]) -> None:
    objs = rendered["default"]
    assert {o["kind"] for o in objs} == {"ConfigMap", "Deployment", "ServiceAccount", "PodDisruptionBudget"}
    dep = _one(objs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = _worker(objs)
    assert dep["spec"]["replicas"] == 2
    assert c["image"] == "deidstream:0.1.0" and c["args"] == ["worker"]
    assert pod["terminationGracePeriodSeconds"] > BASE["settings"]["health"]["stuck_after_s"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/livez" and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["startupProbe"]["httpGet"]["port"] == "health"
    assert c["ports"][0]["containerPort"] == BASE["settings"]["health"]["port"]
    assert pod["securityContext"]["runAsNonRoot"] and c["securityContext"]["readOnlyRootFilesystem"]
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert _env(c)["DEID_SECRET"] == {"secretKeyRef": {"name": "deidstream-hmac", "key": "secret"}}
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert {BASE["settings"]["cache_dir"], "/tmp"} <= mounts
    assert "nvidia.com/gpu" not in json.dumps(dep)
    pdb = _one(objs, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    assert _one(objs, "ServiceAccount")["automountServiceAccountToken"] is False


def test_gpu_variant_requests_a_gpu_on_gpu_nodes(rendered: dict[str, list[dict[str, Any]]]) -> None:
    objs = rendered["gpu"]
    pod = _one(objs, "Deployment")["spec"]["template"]["spec"]
    c = _worker(objs)
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1 and c["resources"]["limits"]["memory"] == "4Gi"
    assert c["image"] == "deidstream:0.1.0-cuda"
    assert pod["nodeSelector"] == GPU["nodeSelector"] and pod["tolerations"] == GPU["tolerations"]


def test_llm_variant_runs_a_pinned_vllm_server_and_wires_the_worker_to_it(
        rendered: dict[str, list[dict[str, Any]]]) -> None:
    objs = rendered["llm"]
    vdep = _one(objs, "Deployment", "-vllm")
    vc = vdep["spec"]["template"]["spec"]["containers"][0]
    assert vc["image"] == f"vllm/vllm-openai:{BASE['vllm']['image']['tag']}" and BASE["vllm"]["image"]["tag"] != "latest"
    assert vc["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert vc["args"][vc["args"].index("--model") + 1] == "Qwen/Qwen2.5-7B-Instruct"
    assert vc["args"][vc["args"].index("--tensor-parallel-size") + 1] == "2"
    svc = _one(objs, "Service", "-vllm")
    assert svc["spec"]["selector"] == vdep["spec"]["selector"]["matchLabels"]
    env = _env(_worker(objs))
    assert env["DEID_LLM__URL"] == f"http://{svc['metadata']['name']}:8000/v1"
    assert env["DEID_LLM__MODEL"] == BASE["vllm"]["servedModelName"]
    assert env["DEID_LLM__API_KEY"] == {"secretKeyRef": {"name": "llm-key", "key": "api-key"}}
    assert _env(vc)["VLLM_API_KEY"] == env["DEID_LLM__API_KEY"]
    # the llm block's defaults: the pass runs on risky notes
    assert (env["DEID_LLM__MODE"], env["DEID_LLM__RISK_THRESHOLD"], env["DEID_LLM__TIMEOUT_S"],
            env["DEID_LLM__CONCURRENCY"]) == ("risky", "0.1", "30", "8")
    egress = _one(objs, "NetworkPolicy", "-deidstream")["spec"]["egress"]
    assert any(r.get("to", [{}])[0].get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/component")
               == "vllm" for r in egress)


def test_when_llm_points_at_an_external_server_then_the_worker_settings_load_with_the_llm_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    over = {"llm": {"enabled": True, "url": "https://llm.example/v1", "model": "deid-judge", "mode": "always",
                    "riskThreshold": 0.25, "timeoutS": 12.5, "concurrency": 3},
            "settings": {"llm": {"max_retries": 1}}}
    objs = render(CHART, over)
    assert not [o for o in objs if o["metadata"]["name"].endswith("-vllm")]  # no vLLM server of our own
    env = _env(_worker(objs))
    assert "DEID_LLM__API_KEY" not in env  # no apiKey Secret named
    for name, value in {**_one(objs, "ConfigMap")["data"], **env}.items():
        if isinstance(value, str):  # values, not secretKeyRefs (DEID_SECRET)
            monkeypatch.setenv(name, value)
    llm = Settings().llm
    assert (llm.url, llm.model, llm.mode, llm.risk_threshold, llm.timeout_s, llm.concurrency, llm.max_retries) == (
        "https://llm.example/v1", "deid-judge", "always", 0.25, 12.5, 3, 1)
    assert "llm" in Settings().pipeline_config().steps


def test_when_llm_is_off_then_the_worker_gets_no_llm_server(rendered: dict[str, list[dict[str, Any]]],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env(_worker(rendered["default"]))
    assert not [k for k in env if k.startswith("DEID_LLM__")]
    data = _one(rendered["default"], "ConfigMap")["data"]
    assert {k for k in data if k.startswith("DEID_LLM__")} == {"DEID_LLM__MAX_RETRIES", "DEID_LLM__MAX_CHARS",
                                                               "DEID_LLM__MAX_TOKENS"}
    for name, value in data.items():
        monkeypatch.setenv(name, value)
    assert Settings().llm.mode == "off" and "llm" not in Settings().pipeline_config().steps


def test_tls_sasl_variant_references_secrets_and_never_inlines_them(rendered: dict[str, list[dict[str, Any]]]) -> None:
    objs = rendered["tls_sasl"]
    c = _worker(objs)
    env = _env(c)
    assert env["DEID_KAFKA__SSL_CAFILE"] == "/etc/deidstream/kafka-tls/ca.crt"
    assert env["DEID_KAFKA__SSL_KEYFILE"] == "/etc/deidstream/kafka-tls/tls.key"
    assert env["DEID_KAFKA__SSL_PASSWORD"] == {"secretKeyRef": {"name": "kafka-tls", "key": "key-password"}}
    assert env["DEID_KAFKA__SASL_USERNAME"] == {"secretKeyRef": {"name": "kafka-sasl", "key": "username"}}
    assert env["DEID_KAFKA__SASL_PASSWORD"] == {"secretKeyRef": {"name": "kafka-sasl", "key": "password"}}
    assert env["DEID_TELEMETRY__OTLP_HEADERS"] == {"secretKeyRef": {"name": "otlp", "key": "headers"}}
    pod = _one(objs, "Deployment")["spec"]["template"]["spec"]
    assert {"name": "kafka-tls", "secret": {"secretName": "kafka-tls", "defaultMode": 0o440}} in pod["volumes"]
    assert not [o for o in objs if o["kind"] == "Secret"]  # the chart creates no Secret
    job = _one(objs, "Job")
    jc = job["spec"]["template"]["spec"]["containers"][0]
    assert jc["args"] == ["create-topics"] and _env(jc)["DEID_KAFKA__SASL_PASSWORD"] == env["DEID_KAFKA__SASL_PASSWORD"]
    assert job["metadata"]["name"].endswith("-topics-1")  # one per revision
    egress = _one(objs, "NetworkPolicy", "-deidstream")["spec"]["egress"]
    assert {"ipBlock": {"cidr": "10.20.0.0/16"}} in [t for r in egress for t in r.get("to", [])]
    assert any(p["port"] == 4318 for r in egress for p in r["ports"])


def test_keda_variant_scales_on_lag_within_the_partition_count(rendered: dict[str, list[dict[str, Any]]]) -> None:
    objs = rendered["keda"]
    dep = _one(objs, "Deployment")
    assert "replicas" not in dep["spec"]  # KEDA owns the replica count
    so = _one(objs, "ScaledObject")
    assert so["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"]
    assert so["spec"]["maxReplicaCount"] == 8 <= KEDA["settings"]["topics"]["partitions"]
    (trigger,) = so["spec"]["triggers"]
    meta = trigger["metadata"]
    assert trigger["type"] == "kafka" and meta["topic"] == "notes.raw" and meta["consumerGroup"] == "deidstream"
    assert meta["sasl"] == "scram_sha512" and meta["tls"] == "enable"
    auth = _one(objs, "TriggerAuthentication")
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
    assert {p["parameter"] for p in auth["spec"]["secretTargetRef"]} == {"username", "password", "ca", "cert", "key",
                                                                           "keyPassword"}


def test_rendered_manifests_are_valid_kubernetes_objects(rendered: dict[str, list[dict[str, Any]]]) -> None:
    import kubernetes_validate

    for variant, objs in rendered.items():
        for obj in objs:
            if obj["apiVersion"].startswith("keda.sh/"):
                continue  # a CRD: no schema in kubernetes-validate
            clean = copy.deepcopy(obj)
            for k in ("uid", "resourceVersion", "creationTimestamp"):
                clean["metadata"].pop(k, None)
            kubernetes_validate.validate(clean, "1.30", strict=True)  # raises on any error
            assert variant


def test_checkov_finds_nothing_unjustified_in_the_rendered_chart(
        rendered: dict[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    for variant, objs in rendered.items():
        (tmp_path / f"{variant}.yaml").write_text(yaml.safe_dump_all(objs))
    result = run_checkov(["-d", str(tmp_path), "--framework", "kubernetes"])
    failed = sorted({(f["check_id"], f["resource"]) for f in result["failed"]})
    assert not failed, failed
    assert result["passed"] > 100
    assert result["skipped"]
    for skip in result["skipped"]:
        assert len(skip.get("check_result", {}).get("suppress_comment") or "") > 20, skip["check_id"]  # a reason
