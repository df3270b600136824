"""Detector profiles: one per numeric path of the NER model, each with its own thresholds.

The same weights give different probabilities on different numeric paths: dynamic int8 on a CPU
(``cpu-int8``, the path the thresholds were fitted on), float32 on a CPU (``cpu-fp32``: the unquantized
path, which stands in for the GPU in CI) and float16 on a GPU (``gpu-fp16``). A profile names the path
(device, dtype, quantization) and carries the thresholds that belong to it: the NER candidate cut
(``ner_token_threshold``, ``ner_min_score``) and the decision stage's keep threshold (``decide_threshold``;
None: the decision model's own). The pipeline setting ``profile`` picks one (``auto``: by the device the NER
step runs on); its name is recorded in the output headers (``deid-profile``) and the metrics' versions.

The thresholds of all profiles equal the ``cpu-int8`` ones. ``cpu-fp32``'s own decision threshold was fitted on
the same nested cross-validation (``scripts/decider_cv.py profile``; the fold NER models' float32 out-of-fold spans,
``processors.training.decider.profile_threshold``): 0.161 against the model's 0.115. The lockbox did not confirm it
(recall 0.974 -> 0.965, 6 -> 8 missed identifier tokens, for precision 0.789 -> 0.807;
``scripts/results/profile_thresholds.json``), so it is not set here. ``gpu-fp16`` was measured on an H100
(``scripts/gpu_spans.py``, ``scripts/results/profile_gpu_fp16.json``): its spans are the float32 path's but for 19
of 23,430 on the evaluation sets, and its scores on every set equal ``cpu-fp32``'s, so it keeps the same thresholds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from schemas.errors import ConfigError

ProfileName = Literal["auto", "cpu-int8", "cpu-fp32", "gpu-fp16"]
PROFILE_NAMES: tuple[str, ...] = get_args(ProfileName)


class DetectorProfile(BaseModel):
    """A numeric path of the NER model and the thresholds fitted on its outputs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    #: ``cpu`` or ``cuda`` (the NER step's device)
    device: Literal["cpu", "cuda"]
    dtype: Literal["float32", "float16", "bfloat16"]
    #: dynamic int8 quantization of the linear layers (CPU, float32 only)
    quantize: bool
    #: the NER step's cut on this path (``token_threshold``, ``min_score``); None: the step's default
    #: (``processors.spans.NER_CANDIDATE_THRESHOLD``)
    ner_token_threshold: float | None = Field(default=None, gt=0, le=1)
    ner_min_score: float | None = Field(default=None, ge=0, le=1)
    #: the decision stage's keep threshold on this path; None: the decision model's own
    decide_threshold: float | None = Field(default=None, ge=0, le=1)


#: The profiles. Thresholds: None (today's, fitted on ``cpu-int8``) for every path until each is fitted.
PROFILES: dict[str, DetectorProfile] = {
    "cpu-int8": DetectorProfile(name="cpu-int8", device="cpu", dtype="float32", quantize=True),
    "cpu-fp32": DetectorProfile(name="cpu-fp32", device="cpu", dtype="float32", quantize=False),
    "gpu-fp16": DetectorProfile(name="gpu-fp16", device="cuda", dtype="float16", quantize=False),
}


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_profile(name: str, ner_options: Mapping[str, Any] | None = None, *, has_ner: bool = True) -> DetectorProfile:
    """The profile ``name`` names; ``auto``: ``gpu-fp16`` when the NER step runs on CUDA (its ``device`` option,
    ``auto``: CUDA when available), else ``cpu-int8`` (``cpu-fp32`` when its ``quantize`` option is off).
    Without a NER step, ``auto`` is ``cpu-int8`` (no model runs; torch is not imported)."""
    if name != "auto":
        try:
            return PROFILES[name]
        except KeyError:
            raise ConfigError(f"unknown detector profile {name!r}; one of {', '.join(PROFILE_NAMES)}") from None
    options = dict(ner_options or {})
    if not has_ner:
        return PROFILES["cpu-int8"]
    device = str(options.get("device", "auto"))
    on_cuda = device.startswith("cuda") or (device == "auto" and _cuda_available())
    if on_cuda:
        return PROFILES["gpu-fp16"]
    return PROFILES["cpu-int8"] if options.get("quantize", True) else PROFILES["cpu-fp32"]
