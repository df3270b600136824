"""scripts/gpu_bench_ner.py on the CPU (a dry run: no GPU here): the report has a row per dtype and batch
size, and its FLOP estimate is 2 x non-embedding parameters x word pieces run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from paths import load_script


@pytest.fixture(scope="module")
def bench() -> Any:
    return load_script("gpu_bench_ner")


@pytest.mark.slow
def test_when_run_on_cpu_then_each_batch_size_reports_rate_latency_and_flops(bench: Any, tmp_path: Path) -> None:
    out = tmp_path / "gpu.json"
    report = bench.main(["--n", "12", "--chars", "300", "--batch-sizes", "4,8", "--dtypes", "float32",
                         "--device", "cpu", "--peak-tflops", "2.0", "-o", str(out)])
    assert json.loads(out.read_text()) == report
    assert [(r["dtype"], r["batch_size"]) for r in report["runs"]] == [("float32", 4), ("float32", 8)]
    params = report["non_embedding_params"]
    assert 1e6 < params < 30e6
    for row in report["runs"]:
        assert row["notes_per_s"] > 0 and row["batch_ms_p50"] > 0 and row["pieces"] >= 12 * 50
        assert row["gflop"] == round(2 * params * row["pieces"] / 1e9, 2)
        assert 0 < row["forward_s"] <= row["stage_s"]
        assert row["peak_fraction_stage"] == round(row["tflops_stage"] / 2.0, 4)
        assert row["spans"] > 0
    # the same notes give the same spans whatever the batch size
    assert report["runs"][0]["spans"] == report["runs"][1]["spans"]


@pytest.mark.parametrize(("name", "peak"), [
    ("NVIDIA H100 80GB HBM3", 989.4), ("NVIDIA H100 PCIe", 756.0), ("NVIDIA H200", 989.4), ("NVIDIA L4", 121.0),
    ("NVIDIA A100-SXM4-80GB", 312.0), ("Some Future GPU", None), (None, None),
])
def test_when_the_gpu_is_named_then_its_peak_is_looked_up(bench: Any, name: str | None, peak: float | None) -> None:
    assert bench.peak_for(name) == peak
