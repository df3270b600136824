"""scripts/gpu_spans.py on the CPU (float32: the path it runs in float16 on a GPU), and decider_cv's reader of its
file: spans per set and note, the same as the NER step's, and a file of another threshold refused."""

from __future__ import annotations

import gzip
import json
import lzma
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from paths import REPO, load_script

from processors.spans import NER_CANDIDATE_THRESHOLD
from schemas.models import NoteIn

NOTES = {
    "set_a": {"a1": "Seen by Dr. Maria Olsen on 03/14/2021 at Brookfield General Hospital.",
              "a2": "Vitals stable. Heparin drip continued."},
    "set_b": {"b1": "Call the daughter, Janet Kowalski, at 617-555-0142 before discharge."},
}


@pytest.fixture(scope="module")
def decider_cv() -> Any:
    return load_script("decider_cv")


@pytest.mark.slow
def test_when_spans_are_written_on_cpu_then_measure_reads_them_per_set_as_the_ner_step_gives_them(
        decider_cv: Any, tmp_path: Path) -> None:
    notes = tmp_path / "eval_notes.jsonl.xz"
    with lzma.open(notes, "wt", encoding="utf-8") as fh:
        for name, texts in NOTES.items():
            for note_id, text in texts.items():
                note = NoteIn(note_id=note_id, text=text).model_dump(mode="json")
                fh.write(json.dumps({"set": name, "id": note_id, "note": note}) + "\n")
    out = tmp_path / "spans.jsonl.gz"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_spans.py"), "--notes", str(notes),
                           "--device", "cpu", "--dtypes", "float32", "-o", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with gzip.open(out, "rt", encoding="utf-8") as fh:
        header = json.loads(next(fh))
    assert header["notes"] == 3 and header["threshold"] == NER_CANDIDATE_THRESHOLD and header["gpu"] is None
    gpu = decider_cv.read_gpu_file(out, NER_CANDIDATE_THRESHOLD)
    with pytest.raises(SystemExit, match="no spans in float16"):
        decider_cv.gpu_dtype(gpu, "float16", out)
    got = decider_cv.gpu_dtype(gpu, "float32", out)
    options = {"device": "cpu", "dtype": "float32", "quantize": False,
               "token_threshold": NER_CANDIDATE_THRESHOLD, "min_score": NER_CANDIDATE_THRESHOLD}
    for name, texts in NOTES.items():
        direct = decider_cv.ner_spans([(i, NoteIn(note_id=i, text=t)) for i, t in texts.items()], options)
        assert got[name] == direct
    found = {(s["start"], s["end"]) for s in got["set_a"]["a1"]}
    text = NOTES["set_a"]["a1"]
    assert (text.index("Maria"), text.index(" on ")) in found  # the name, found on this path too
    with pytest.raises(SystemExit, match="another NER model or threshold"):
        decider_cv.read_gpu_file(out, 0.03)
