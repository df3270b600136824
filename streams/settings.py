"""One pydantic-settings class: ``DEID_*`` environment variables (nested with ``__``), or a YAML file
named by ``DEID_CONFIG_FILE`` (pydantic-settings' own YAML source; the environment wins over the file).
The Helm chart's values mirror these fields."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from dictionaries import cache
from processors.pipeline import DEFAULT_SECRET, PipelineConfig, mask_urls
from schemas.errors import ConfigError

#: How ``config show`` prints ``secret`` when none was set: pseudonyms and surrogates are then guessable.
INSECURE_DEFAULT_SHOWN = "INSECURE DEFAULT (built in; set DEID_SECRET from a Kubernetes Secret)"


class TransformSettings(BaseModel):
    """The transform step's output mode, as a top-level section (``DEID_TRANSFORM__MODE``). Whether
    providers' names are redacted is pipeline policy: ``pipeline.policy.redact_providers``."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["tag", "surrogate", "dateshift"] = "tag"
    keep_years: bool = True


class KafkaSettings(BaseModel):
    """Connection to the Kafka cluster (any Kafka-protocol broker; Tansu for local runs and tests)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    bootstrap_servers: str = Field(default="127.0.0.1:9092", description="comma-separated host:port list")
    client_id: str = "deidstream"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    ssl_cafile: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_password: SecretStr | None = None
    ssl_check_hostname: bool = True
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    #: Producer acks. Idempotence stays off: Tansu (the embedded broker) has no InitProducerId.
    acks: Literal["all", "1", "0"] = "all"
    #: Largest record produced or fetched (notes, DLQ records carrying the raw payload).
    max_request_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    request_timeout_s: float = Field(default=40.0, gt=0)

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_text(cls, v: Any) -> Any:
        return {-1: "all", "-1": "all"}.get(v, str(v)) if isinstance(v, int | str) else v

    def servers(self) -> list[str]:
        return [s.strip() for s in self.bootstrap_servers.split(",") if s.strip()]


#: A name Kafka accepts for a topic: letters, digits, ".", "_" and "-", at most 249 characters.
TOPIC_NAME = r"^[A-Za-z0-9._-]{1,249}$"


class TopicSettings(BaseModel):
    """The five topics: one kind of record each (the input, and the worker's four outputs), so five names."""

    model_config = ConfigDict(extra="forbid")
    raw: str = Field(default="notes.raw", pattern=TOPIC_NAME)
    deid: str = Field(default="notes.deid", pattern=TOPIC_NAME)
    metrics: str = Field(default="notes.metrics", pattern=TOPIC_NAME)
    dlq: str = Field(default="notes.dlq", pattern=TOPIC_NAME)
    quarantine: str = Field(default="notes.quarantine", pattern=TOPIC_NAME)
    #: Used when deidstream creates the topics (embedded broker, ``broker`` command, replay outputs).
    partitions: int = Field(default=4, ge=1)
    replication_factor: int = Field(default=1, ge=1)

    def all(self) -> list[str]:
        return [self.raw, self.deid, self.metrics, self.dlq, self.quarantine]

    @model_validator(mode="after")
    def _one_kind_each(self) -> TopicSettings:
        # the input among the outputs: the worker would read what it wrote, for ever; two outputs on one topic: its
        # readers (the warehouse, the DLQ's) would get records of another contract
        roles = ("raw", "deid", "metrics", "dlq", "quarantine")
        first: dict[str, str] = {}
        for role in roles:
            name = getattr(self, role)
            if name in (".", ".."):
                raise ValueError(f"topics.{role} cannot be {name!r} (Kafka refuses it)")
            if name in first:
                why = ("the worker would read its own output" if first[name] == "raw"
                       else "each topic holds one kind of record")
                raise ValueError(f"topics.{first[name]} and topics.{role} name the same topic: {why}")
            first[name] = role
        return self


class WorkerSettings(BaseModel):
    """The faust worker: consumer group, micro-batching, limits, liveness timeouts."""

    model_config = ConfigDict(extra="forbid")
    group_id: str = "deidstream"
    batch_size: int = Field(default=64, ge=1)
    batch_max_wait_s: float = Field(default=0.05, gt=0)
    #: Larger inputs go to the DLQ (code E121) instead of the pipeline.
    max_note_bytes: int = Field(default=1024 * 1024, ge=1)
    #: DLQ records keep the raw payload up to this size (larger ones keep topic/partition/offset only).
    dlq_max_payload_bytes: int = Field(default=8 * 1024 * 1024, ge=0)
    auto_offset_reset: Literal["earliest", "latest"] = "earliest"
    #: Longest a fetch may wait for data. Tansu answers a fetch only when this expires (it does not wake
    #: waiting fetches on new records), so it bounds the added latency; faust's own value is 1500 ms.
    fetch_max_wait_ms: int = Field(default=100, ge=10, le=5000)
    session_timeout_s: float = Field(default=30.0, gt=0)
    heartbeat_interval_s: float = Field(default=3.0, gt=0)
    rebalance_timeout_s: float = Field(default=30.0, gt=0)
    #: How long a batch's outputs may fail to be acknowledged before the worker exits (without
    #: committing: the batch is redelivered after restart).
    send_timeout_s: float = Field(default=120.0, gt=0)
    #: No bootstrap server accepting connections for this long: the worker exits (code 69) with a message
    #: instead of retrying forever; its uncommitted batch is redelivered after the restart.
    broker_timeout_s: float = Field(default=300.0, gt=0)
    #: At start, once its models are loaded, the worker lists the cluster's topics until its five configured
    #: topics (``topics.*``) exist, for at most this long (a topic-creating Job may still be running); any still
    #: missing then: it exits with code 78 naming them, instead of reading a mistyped input topic that a broker
    #: creating topics on first use makes for it, and idling there. 0 turns the check off (a cluster whose ACLs
    #: hide the topics from listing).
    topics_wait_s: float = Field(default=60.0, ge=0)
    #: Threads of the numeric libraries (torch, OpenMP, MKL) in each process; 0: the usable cores (CPU
    #: affinity, container quota) shared among the processes of this node (``--workers`` of the CLI; for the
    #: Kafka worker one process per container: see README "Several workers per node").
    threads: int = Field(default=0, ge=0)
    #: Per-note time budget: a note still in the pipeline after this long goes to the DLQ (code E422) and
    #: the partition moves on (checked between steps and between NER windows; see README "Time budget").
    #: Must be shorter than ``health.stuck_after_s``; 0 turns the budget off (liveness alone then bounds a note).
    note_timeout_s: float = Field(default=120.0, ge=0)


class HealthSettings(BaseModel):
    """Liveness / readiness over HTTP (faust's web server) and the consumer-lag gauge."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    #: Bind address; the Helm chart sets 0.0.0.0 so the kubelet's probes reach it.
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    #: A batch in the pipeline thread for longer than this makes ``/livez`` answer 503. Longer than the
    #: slowest batch (batch_size notes of max_note_bytes on the slowest device).
    stuck_after_s: float = Field(default=300.0, gt=0)
    #: How often consumer lag per partition is sampled for the ``deid.consumer.lag`` gauge.
    lag_interval_s: float = Field(default=10.0, gt=0)


class TelemetrySettings(BaseModel):
    """OpenTelemetry: traces and metrics. The SDK is set up only in streams/telemetry.py."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    exporter: Literal["none", "console", "otlp"] = "none"
    #: console exporter target: a file (JSON lines) instead of stdout.
    console_path: Path | None = None
    otlp_endpoint: str | None = Field(default=None, description="default: OTEL_EXPORTER_OTLP_ENDPOINT")
    otlp_protocol: Literal["http/protobuf", "grpc"] = "http/protobuf"
    otlp_headers: SecretStr | None = Field(default=None, description="k=v,k2=v2 (may hold API keys)")
    service_name: str = "deidstream"
    metrics_interval_s: float = Field(default=15.0, gt=0)


class LLMSettings(BaseModel):
    """The optional LLM pass (step ``llm``) and the LLM judges: any OpenAI-compatible server (``vllm serve``).

    ``mode``: ``off`` (default), ``always`` (every note) or ``risky`` (notes whose residual-risk score before
    the pass is at least ``risk_threshold``). ``always`` / ``risky`` with a ``url`` put the step into the
    pipeline (after ``decide``; without it, after the detectors, before ``recovery``) without editing
    ``pipeline.steps``."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    url: str = Field(default="", description="base URL of the OpenAI-compatible API, e.g. http://vllm:8000/v1")
    model: str = Field(default="", description="model name the server serves (vllm --served-model-name)")
    mode: Literal["off", "always", "risky"] = "off"
    api_key: SecretStr | None = Field(default=None, description="bearer token (vllm --api-key); never shown")
    timeout_s: float = Field(default=30.0, gt=0, description="per request, retries excluded")
    concurrency: int = Field(default=8, ge=1, le=256, description="requests in flight at once per worker")
    max_retries: int = Field(default=2, ge=0, le=10, description="retries with backoff (openai SDK) per request")
    risk_threshold: float = Field(default=0.1, ge=0.0, le=1.0, description="risky mode: the residual-risk gate")
    max_chars: int = Field(default=6000, ge=200, description="longest text per request; longer notes go in windows")
    max_tokens: int = Field(default=512, ge=16, description="longest answer per request")

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        v = v.strip()
        if v and not v.startswith(("http://", "https://")):
            raise ValueError("llm.url must start with http:// or https://")
        return v

    def enabled(self) -> bool:
        return self.mode != "off"

    def step_options(self) -> dict[str, Any]:
        """The ``llm`` step's options (the API key stays a SecretStr: masked in dumps and the config hash)."""
        return {"url": self.url, "model": self.model, "mode": self.mode, "api_key": self.api_key,
                "timeout_s": self.timeout_s, "concurrency": self.concurrency, "max_retries": self.max_retries,
                "risk_threshold": self.risk_threshold, "max_chars": self.max_chars, "max_tokens": self.max_tokens}


class Settings(BaseSettings):
    """Effective configuration of the CLI and the worker."""

    model_config = SettingsConfigDict(
        env_prefix="DEID_", env_nested_delimiter="__", extra="forbid", hide_input_in_errors=True
    )

    secret: SecretStr = Field(default=SecretStr(DEFAULT_SECRET), description="HMAC key for pseudonyms")
    cache_dir: Path = Field(default_factory=cache.cache_dir)
    pipeline: PipelineConfig = Field(default_factory=PipelineConfig)
    transform: TransformSettings = Field(default_factory=TransformSettings)
    log_level: str = "INFO"
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    topics: TopicSettings = Field(default_factory=TopicSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    health: HealthSettings = Field(default_factory=HealthSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)

    @model_validator(mode="after")
    def _budget_under_liveness(self) -> Settings:
        # a note over budget must reach the DLQ before /livez calls the worker stuck, or the restarted pod gets
        # the same note again (a restart loop)
        if 0 < self.health.stuck_after_s <= self.worker.note_timeout_s:
            raise ValueError(f"worker.note_timeout_s ({self.worker.note_timeout_s:g}) must be shorter than "
                             f"health.stuck_after_s ({self.health.stuck_after_s:g})")
        return self

    @model_validator(mode="after")
    def _llm_needs_server(self) -> Settings:
        if self.llm.enabled() and (not self.llm.url or not self.llm.model):
            raise ValueError(f"llm.mode is {self.llm.mode!r}: set llm.url and llm.model (DEID_LLM__URL, "
                             "DEID_LLM__MODEL), or DEID_LLM__MODE=off")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _yaml_source(settings_cls), file_secret_settings)

    def secret_is_default(self) -> bool:
        return self.secret.get_secret_value() in ("", DEFAULT_SECRET)

    def shown(self) -> dict[str, Any]:
        """The settings as ``config show`` prints them (and as anything else may log or hash them): secrets as
        ``**********``, the password of every URL in any field masked (``https://user:***@host``), and the
        built-in secret named as what it is (an insecure default), not as a masked value."""
        data: dict[str, Any] = mask_urls(self.model_dump(mode="json"))
        if self.secret_is_default():
            data["secret"] = INSECURE_DEFAULT_SHOWN
        return data

    def pipeline_config(self) -> PipelineConfig:
        """The pipeline config with the ``transform`` section folded into the transform step's options, and
        the ``llm`` section into the ``llm`` step's (the step is inserted after ``decide``, or, without it, before
        ``recovery``, when ``llm.mode`` is not ``off``)."""
        options = {k: dict(v) for k, v in self.pipeline.options.items()}
        options.setdefault("transform", {}).update(self.transform.model_dump())
        steps = tuple(self.pipeline.steps)
        if self.llm.enabled():
            options.setdefault("llm", {}).update(self.llm.step_options())
            if "llm" not in steps:
                steps = _insert_llm(steps)
        return self.pipeline.model_copy(update={"options": options, "steps": steps})


def _insert_llm(steps: tuple[str, ...]) -> tuple[str, ...]:
    """``steps`` with ``llm`` right after ``decide`` (its gate reads the decision stage's dropped candidates and their
    probabilities), or, in a pipeline without ``decide``, before ``recovery`` (or the first step after the
    detectors)."""
    if "decide" in steps:
        at = steps.index("decide") + 1
    else:
        after_detectors = ("recovery", "ensemble", "transform", "leakcheck", "metrics")
        at = next((i for i, s in enumerate(steps) if s in after_detectors), len(steps))
    return (*steps[:at], "llm", *steps[at:])


def _yaml_source(settings_cls: type[BaseSettings]) -> PydanticBaseSettingsSource:
    """The YAML file named by ``DEID_CONFIG_FILE`` (none: no file source)."""
    name = os.environ.get("DEID_CONFIG_FILE")
    path = Path(name) if name else None
    if path is not None and not path.is_file():
        raise ConfigError(f"DEID_CONFIG_FILE names no readable file: {path}")
    try:
        return YamlConfigSettingsSource(settings_cls, yaml_file=path)
    except (yaml.YAMLError, AttributeError, TypeError, ValueError) as exc:  # not YAML, or not a mapping
        raise ConfigError(f"DEID_CONFIG_FILE {path} must hold a YAML mapping ({type(exc).__name__})") from None
