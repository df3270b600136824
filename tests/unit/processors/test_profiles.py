"""Detector profiles: chosen by the device, carried into the steps, recorded in the versions and headers; the
unquantized float32 path on a CPU (standing in for the GPU in CI) matches its saved expectation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from paths import REPO

from processors.ner.step import NER, with_profile
from processors.pipeline import BuildContext, Pipeline, PipelineConfig, build_processor
from processors.profiles import PROFILES, DetectorProfile, resolve_profile
from schemas.errors import ConfigError
from streams.codec import version_headers

EXPECTATION = REPO / "tests" / "data" / "profiles" / "cpu-fp32_ner.jsonl"


@pytest.mark.parametrize(("name", "ner", "has_ner", "expected"), [
    ("auto", {"device": "cpu"}, True, "cpu-int8"),
    ("auto", {"device": "cpu", "quantize": False}, True, "cpu-fp32"),
    ("auto", {"device": "cuda"}, True, "gpu-fp16"),
    ("auto", {"device": "cuda:1"}, True, "gpu-fp16"),
    ("auto", {}, False, "cpu-int8"),
    ("cpu-fp32", {}, True, "cpu-fp32"),
    ("gpu-fp16", {"device": "cpu"}, True, "gpu-fp16"),
])
def test_when_a_profile_is_resolved_then_auto_follows_the_ner_device(name: str, ner: dict[str, Any], has_ner: bool,
                                                                      expected: str) -> None:
    assert resolve_profile(name, ner, has_ner=has_ner).name == expected


def test_when_no_gpu_is_present_then_auto_is_the_int8_cpu_path() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present here: auto is gpu-fp16 (covered by the device parametrization above)")
    assert resolve_profile("auto", {}).name == "cpu-int8"


def test_when_a_profile_is_unknown_then_config_error() -> None:
    with pytest.raises(ConfigError):
        resolve_profile("tpu-int4", {})
    with pytest.raises(ValueError):
        PipelineConfig(profile="tpu-int4")  # type: ignore[arg-type]


def test_when_the_profile_is_left_at_auto_then_the_config_hash_is_as_before_profiles() -> None:
    import hashlib

    cfg = PipelineConfig()
    dumped = cfg.model_dump(mode="json")
    del dumped["profile"]
    old = hashlib.sha256(json.dumps(dumped, sort_keys=True, default=str).encode()).hexdigest()[:16]
    assert cfg.config_hash() == old
    assert PipelineConfig(profile="cpu-fp32").config_hash() != old


def test_when_a_profile_carries_thresholds_then_the_ner_step_takes_them_unless_set_explicitly() -> None:
    own = DetectorProfile(name="test", device="cpu", dtype="float32", quantize=False, ner_token_threshold=0.4,
                          ner_min_score=0.5, decide_threshold=0.3)
    cfg = with_profile(NER.Config(), own)
    assert (cfg.device, cfg.dtype, cfg.quantize, cfg.token_threshold, cfg.min_score) == ("cpu", "float32", False,
                                                                                           0.4, 0.5)
    cfg = with_profile(NER.Config(token_threshold=0.2), own)
    assert (cfg.token_threshold, cfg.min_score) == (0.2, 0.5)
    today = with_profile(NER.Config(), PROFILES["gpu-fp16"])  # thresholds not fitted yet: today's
    assert (today.token_threshold, today.min_score) == (NER.Config().token_threshold, NER.Config().min_score)
    assert (today.device, today.dtype, today.quantize) == ("cuda", "float16", False)


@pytest.mark.parametrize("options", [{"quantize": False}, {"dtype": "float16"}, {"device": "cuda"}])
def test_when_a_ner_option_contradicts_the_profile_then_config_error(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="contradicts the detector profile cpu-int8"):
        with_profile(NER.Config(**options), PROFILES["cpu-int8"])


def test_when_the_decide_step_has_a_profile_threshold_then_it_keeps_by_it() -> None:
    own = DetectorProfile(name="test", device="cpu", dtype="float32", quantize=True, decide_threshold=0.42)
    step: Any = build_processor("decide", {}, BuildContext(steps=("regex", "ner", "decide"), profile=own))
    assert step.threshold == 0.42
    default: Any = build_processor("decide", {}, BuildContext(steps=("regex", "ner", "decide"),
                                                                profile=PROFILES["cpu-int8"]))
    assert default.threshold == default.model.threshold  # today's: the decision model's own
    explicit: Any = build_processor("decide", {"threshold": 0.7}, BuildContext(profile=own))
    assert explicit.threshold == 0.7


def test_when_the_fp32_cpu_path_runs_then_its_spans_match_the_saved_expectation() -> None:
    import sys

    sys.path.insert(0, str(REPO / "scripts"))
    from profile_expectations import profile_spans

    want = [json.loads(line) for line in EXPECTATION.read_text().splitlines()]
    got = profile_spans("cpu-fp32")
    assert [r["note_id"] for r in got] == [r["note_id"] for r in want]
    assert sum(len(r["spans"]) for r in want) > 100
    for g, w in zip(got, want, strict=True):
        assert g["profile"] == w["profile"] == "cpu-fp32"
        assert [s[:4] for s in g["spans"]] == [s[:4] for s in w["spans"]], g["note_id"]
        # scores: float32 sums may differ in the last bits with the thread count; 4 places are compared loosely
        assert [s[4] for s in g["spans"]] == pytest.approx([s[4] for s in w["spans"]], abs=2e-4)


def test_when_a_pipeline_is_built_then_its_profile_is_in_the_versions_and_the_headers() -> None:
    pipeline = Pipeline.from_config(PipelineConfig(steps=("ner",), profile="cpu-fp32"))
    versions = pipeline.versions()
    assert versions.profile == "cpu-fp32"
    assert ("deid-profile", b"cpu-fp32") in version_headers(versions)
    ner: Any = pipeline.processors[0]
    assert not ner.model.quantized and ner.profile == "cpu-fp32"
    no_ner = Pipeline.from_config(PipelineConfig(steps=("regex",)))
    assert no_ner.versions().profile == "cpu-int8"
