"""Passwords written inside URL settings (``telemetry.otlp_endpoint``, ``llm.url``, any URL in
``pipeline.options``) are masked everywhere the settings show up: ``config show``, the config hash (which is
computed over the masked URL, so rotating the password does not change it), the OTLP exporters (the password goes
into an ``Authorization`` header, never a URL the exporter keeps), the LLM client's repr, logs, output headers and
telemetry. A planted password is searched for in everything emitted."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from processors.pipeline import Pipeline, mask_url, url_credentials
from streams import telemetry
from streams.broker import free_port
from streams.codec import InRecord
from streams.settings import INSECURE_DEFAULT_SHOWN, Settings
from streams.worker import BatchProcessor, finish_batch

PASSWORD = "Pl4nted-S3cret-pw"
USER = "svc-deid"


@pytest.mark.parametrize(("text", "shown"), [
    (f"https://{USER}:{PASSWORD}@collector:4318", f"https://{USER}:***@collector:4318"),
    (f"http://{USER}:{PASSWORD}@vllm:8000/v1", f"http://{USER}:***@vllm:8000/v1"),
    (f"https://{PASSWORD}@vllm/v1", "https://***@vllm/v1"),  # a user-only userinfo is usually a token
    ("https://u:p@ss@host/x?y=a@b", "https://u:***@host/x?y=a@b"),  # userinfo runs to the last @ before the path
    ("http://vllm:8000/v1", "http://vllm:8000/v1"),
    ("mail me at someone@example.org", "mail me at someone@example.org"),  # no scheme://: no URL
    (f"a http://a:{PASSWORD}@h1, b grpc://b:{PASSWORD}@h2", "a http://a:***@h1, b grpc://b:***@h2"),
])
def test_when_a_url_has_a_password_then_mask_url_hides_only_the_password(text: str, shown: str) -> None:
    assert mask_url(text) == shown


def test_when_a_url_has_credentials_then_url_credentials_splits_them_off() -> None:
    assert url_credentials(f"https://{USER}:{PASSWORD}@collector:4318/x") == (
        "https://collector:4318/x", (USER, PASSWORD))
    assert url_credentials("https://collector:4318") == ("https://collector:4318", None)


def _plant(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, llm_port: int) -> None:
    monkeypatch.setenv("DEID_TELEMETRY__OTLP_ENDPOINT", f"https://{USER}:{PASSWORD}@collector.example:4318")
    monkeypatch.setenv("DEID_LLM__URL", f"http://{USER}:{PASSWORD}@127.0.0.1:{llm_port}/v1")
    monkeypatch.setenv("DEID_LLM__MODEL", "served-model")
    monkeypatch.setenv("DEID_LLM__MODE", "always")
    monkeypatch.setenv("DEID_LLM__MAX_RETRIES", "0")
    monkeypatch.setenv("DEID_LLM__TIMEOUT_S", "2")
    # a URL inside a step's options (YAML) is masked too
    cfg = tmp_path / "deid.yaml"
    cfg.write_text(f"pipeline:\n  options:\n    llm:\n      url: http://{USER}:{PASSWORD}@127.0.0.1:{llm_port}/v1\n")
    monkeypatch.setenv("DEID_CONFIG_FILE", str(cfg))


def test_when_url_settings_hold_a_password_then_config_show_masks_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str],
) -> None:
    from streams.cli.kafka import config_show

    _plant(monkeypatch, tmp_path, free_port())
    config_show()
    shown = capsys.readouterr().out
    assert PASSWORD not in shown
    assert f"https://{USER}:***@collector.example:4318" in shown
    assert shown.count(f"http://{USER}:***@127.0.0.1:") == 2  # llm.url and pipeline.options.llm.url
    # the built-in secret reads as an insecure default, not as a masked value
    assert f"secret: {INSECURE_DEFAULT_SHOWN}" in shown and "**********" not in shown.split("secret:")[1].split("\n")[0]


def test_when_a_secret_is_set_then_config_show_masks_it(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from streams.cli.kafka import config_show

    monkeypatch.setenv("DEID_SECRET", "a-real-secret-4471")
    config_show()
    shown = capsys.readouterr().out
    assert "a-real-secret-4471" not in shown and "secret: '**********'" in shown and "INSECURE" not in shown


def test_the_config_hash_is_computed_over_the_masked_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEID_LLM__MODE", "always")
    monkeypatch.setenv("DEID_LLM__MODEL", "served-model")

    def hash_for(url: str) -> str:
        monkeypatch.setenv("DEID_LLM__URL", url)
        return Settings().pipeline_config().config_hash()

    base = hash_for(f"http://{USER}:{PASSWORD}@vllm:8000/v1")
    assert hash_for(f"http://{USER}:another-password@vllm:8000/v1") == base  # the password's text is not hashed
    assert hash_for(f"http://{USER}:***@vllm:8000/v1") == base  # the hash input is the masked URL
    assert hash_for(f"http://other-user:{PASSWORD}@vllm:8000/v1") != base  # the user is configuration
    assert hash_for("http://vllm:9000/v1") != base


def test_when_the_otlp_endpoint_holds_a_password_then_the_exporter_gets_it_in_a_header_only() -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter",
                        reason="the OTLP/HTTP exporter is an optional dependency")
    from streams.settings import TelemetrySettings

    settings = TelemetrySettings(exporter="otlp", otlp_endpoint=f"https://{USER}:{PASSWORD}@collector:4318")
    exporter: Any = telemetry._span_exporter(settings)
    assert exporter is not None
    assert PASSWORD not in json.dumps(vars(exporter), default=repr)  # not in the endpoint nor any attribute
    headers = telemetry._otlp_headers(settings)
    assert headers is not None and headers["Authorization"].startswith("Basic ")
    assert telemetry._otlp_endpoint(settings) == "https://collector:4318"
    exporter.shutdown()


def test_when_url_settings_hold_a_password_then_no_log_header_or_telemetry_shows_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    """A worker batch with the LLM step on (its server down, so it logs its failures) and telemetry in memory:
    the password is in no log record, no output header, no span or metric, and no repr of the LLM client."""
    _plant(monkeypatch, tmp_path, free_port())
    settings = Settings()
    cfg = settings.pipeline_config().model_copy(update={"steps": ("regex", "llm", "ensemble", "transform", "leakcheck")})
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    caplog.set_level(logging.DEBUG)
    telemetry.setup(settings.telemetry, span_exporter=exporter, metric_reader=reader)
    try:
        pipeline = telemetry.traced(Pipeline.from_config(cfg, secret=settings.secret, cache_dir=settings.cache_dir))
        processor = BatchProcessor(pipeline, max_note_bytes=4096)
        note = {"id": "n-1", "text": "Seen on 03/04/2021, call 919-555-0142."}
        record = InRecord("notes.raw", 0, 1, b"k", json.dumps(note).encode(), (), 1_700_000_000_000)
        result = processor.process([record])

        class _Acked:
            async def send(self, out: Any) -> Any:
                fut = asyncio.get_running_loop().create_future()
                fut.set_result(None)
                return fut

        asyncio.run(finish_batch(result, _Acked(), send_timeout_s=5.0))
        llm = next(p for p in pipeline.processors if p.name == "llm")
        emitted = [repr(getattr(llm, "inner", llm).client)]
        emitted += [f"{k}={v!r}" for o in result.outcomes for out in o.outputs for k, v in out.headers]
        emitted += [r.getMessage() for r in caplog.records]
        emitted += [s.to_json() for s in exporter.get_finished_spans()]
        data = reader.get_metrics_data()
        emitted.append(data.to_json() if data is not None else "")
    finally:
        telemetry.shutdown(timeout_s=2.0)
    assert any("deid-config-hash" in e for e in emitted) and any("llm" in e for e in emitted)
    assert any(f"{USER}:***@" in e for e in emitted)  # the client's repr shows the masked URL
    for text in emitted:
        assert PASSWORD not in text, text
