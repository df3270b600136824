"""``deidstream bench-kafka --soak N`` on a small N (the recorded 10,000-note run is in the README): malformed
inputs end in the DLQ, every input comes out once (in = deid + quarantine + dlq), the worker is SIGKILLed
half-way and another takes over, and the report has rates, latency percentiles and RSS per worker."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def test_soak_run_accounts_for_every_input_across_a_worker_kill(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    proc = subprocess.run([sys.executable, "-m", "streams.cli", "bench-kafka", "--soak", "600", "--chars", "300",
                           "--steps", "regex,ensemble,transform,leakcheck", "--batch-size", "25",
                           # paced (about 10 s of input) so the kill lands mid-stream: unpaced, a fast host finished
                           # all 600 notes between two of the soak loop's checks; at 150 notes/s (4 s) a worker that
                           # took over 4 s to start met the whole backlog at once and was killed after the last note
                           "--rate", "60", "-o", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(out.read_text())
    assert r["records_in"] == 600 and r["malformed_in"] == 30
    assert r["in_equals_out"] and sum(r["out"].values()) == 600 and r["out"]["dlq"] == 30
    assert r["malformed_not_in_dlq_or_notes_in_dlq"] == 0 and r["inputs_in_several_topics"] == 0
    assert 0 < r["killed"]["at_notes_out"] < 600 and r["worker_exit_codes"][0] == -9
    assert r["duplicate_outputs"] <= 2 * r["batch_size"]  # at most the killed worker's two uncommitted batches
    assert len(r["rss_by_worker"]) == 2 and all(w["start_mib"] > 50 for w in r["rss_by_worker"].values())
    assert r["latency_ms"]["p50_ms"] <= r["latency_ms"]["p99_ms"] and r["notes_per_s"]["out"] > 0
