"""scripts/bench_ner_dtype.py: the NER step on two numeric paths, taking turns in one process (issue 25 item 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from paths import REPO, load_script


@pytest.fixture(scope="module")
def bench() -> Any:
    return load_script("bench_ner_dtype")


def test_when_a_configuration_is_written_then_it_names_the_model_and_the_path(bench: Any) -> None:
    assert bench.parse_config("shipped-int8::") == ("shipped-int8", None, None)
    assert bench.parse_config("larger:.gpu/models/Lfold0:bfloat16") == ("larger", ".gpu/models/Lfold0", "bfloat16")
    for bad in ("shipped", ":x:bfloat16", "a:b:int4", "a:b:c:d"):
        with pytest.raises(SystemExit, match="NAME:MODEL_DIR:DTYPE|DTYPE is empty"):
            bench.parse_config(bad)


def test_when_the_step_is_built_then_it_runs_on_the_path_asked_for(bench: Any) -> None:
    import torch

    int8, bf16 = bench.build(None, None), bench.build(None, "bfloat16")
    assert int8.model.quantized and not bf16.model.quantized
    assert {p.dtype for p in bf16.model.model.parameters()} == {torch.bfloat16}
    # the same weights on both paths: the same model id, and the same kind of spans on a note
    assert int8.model_id == bf16.model_id
    from processors.pipeline import Note
    from schemas.models import NoteIn

    note = Note(input=NoteIn(note_id="n", text="Seen by Dr. Alvarez at Mercy Hospital on 03/14/2021."))
    labels = [{s.label for s in step.process_batch([note])[0].spans} for step in (int8, bf16)]
    assert labels[0] and labels[0] == labels[1]


def test_when_two_paths_take_turns_then_each_round_has_a_rate_and_a_ratio(tmp_path: Path) -> None:
    out = tmp_path / "dtype.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_ner_dtype.py"), "--config", "a::",
                           "--config", "b::float32", "--n", "3", "--rounds", "2", "--warm", "1", "--chars", "300",
                           "-o", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    a, b = result["configs"]["a"], result["configs"]["b"]
    assert a["dtype"] == "int8 (quantized float32)" and b["dtype"] == "float32"
    assert len(a["notes_per_s"]) == len(b["notes_per_s"]) == 2 and min(a["notes_per_s"] + b["notes_per_s"]) > 0
    assert a["ratio_to_a"] == [1.0, 1.0]
    # the ratio is of the unrounded rates of the same round; the rates are written rounded to 0.01
    for r, x, y in zip(b["ratio_to_a"], a["notes_per_s"], b["notes_per_s"], strict=True):
        assert r == pytest.approx(y / x, rel=0.02)
