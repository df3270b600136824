"""scripts/bench_ner_host.py: the NER step's host work with the forward pass replayed finds the model's own spans
and reports its time and parts (README, Speed: issue 26)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from paths import REPO


def test_when_the_forward_is_replayed_then_the_host_pass_finds_the_models_spans_and_is_timed(tmp_path: Path) -> None:
    out = tmp_path / "host.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_ner_host.py"), "--n", "6", "--rounds", "2",
                           "--windows", "4", "-o", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    # the script exits non-zero when the replayed pass's spans differ from the model's pass
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["notes"] == 6 and result["spans"] > 0 and len(result["host_s_rounds"]) == 2
    assert result["host_ms_per_note"] > 0 and result["host_notes_per_s_one_core"] > 0
    parts = result["share_of_host_time_profiled"]
    assert 0 < parts["pieces (the tokenizer or its fast path)"] <= parts["predict (the pieces, windows, copies)"] <= 1
    assert 0 < parts["spans_from_runs"] <= parts["decode_spans"] <= 1
