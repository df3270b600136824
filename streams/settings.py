"""One pydantic-settings class: ``DEID_*`` environment variables (nested with ``__``), or a YAML file
named by ``DEID_CONFIG_FILE``. The Helm chart's values mirror these fields."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from processors.base import DEFAULT_SECRET, PipelineConfig


class TransformSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["tag", "surrogate", "dateshift"] = "tag"
    keep_years: bool = True
    redact_providers: bool = True


class Settings(BaseSettings):
    """Effective configuration of the CLI and the worker."""

    model_config = SettingsConfigDict(
        env_prefix="DEID_", env_nested_delimiter="__", extra="forbid", hide_input_in_errors=True
    )

    secret: SecretStr = Field(default=SecretStr(DEFAULT_SECRET), description="HMAC key for pseudonyms")
    cache_dir: Path = Field(default_factory=lambda: Path.home() / ".cache" / "deidstream")
    pipeline: PipelineConfig = Field(default_factory=PipelineConfig)
    transform: TransformSettings = Field(default_factory=TransformSettings)
    log_level: str = "INFO"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _YamlSource(settings_cls), file_secret_settings)

    def pipeline_config(self) -> PipelineConfig:
        """The pipeline config with transform policy folded into the transform step's options."""
        options = {k: dict(v) for k, v in self.pipeline.options.items()}
        options.setdefault("transform", {}).update(self.transform.model_dump())
        return self.pipeline.model_copy(update={"options": options})


class _YamlSource(PydanticBaseSettingsSource):
    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get("DEID_CONFIG_FILE")
        if not path:
            return {}
        data = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError("DEID_CONFIG_FILE must hold a YAML mapping")
        return data
