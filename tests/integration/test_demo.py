"""``deidstream demo`` end to end: its own broker and worker, then a clean stop and exit code 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_when_demo_runs_then_every_record_comes_out_and_it_exits_zero(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "streams.cli", "demo", "--hl7", str(REPO / "tests" / "data" / "hl7"),
         "--synthetic", "3", "--show", "2", "--timeout", "150"],
        cwd=REPO, capture_output=True, text=True, timeout=200,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    # 1 HL7 + 3 synthetic notes are de-identified, the malformed record is dead-lettered
    assert "summary: published=5 deid=4 quarantine=0 dlq=1 metrics=4 worker_exit=0" in out
    # each note's NoteMetrics: retention with lost / removed-for-a-reason counts and the residual risk
    assert "quality per note (notes.metrics, NoteMetrics)" in out and "residual risk: mean score" in out
    assert "Quillon" not in out  # the HL7 patient's name: its raw text is never shown, only the clean one
