"""The shipped NER's spans on a GPU (issue 26, device profiles): run on the device after ``scripts/gpu_run.py``.

Reads the notes of the sets ``scripts/decider_cv.py measure`` scores (``.gpu/pack/eval_notes.jsonl.xz``, written by
``scripts/gpu_pack.py``), runs the NER step on CUDA in float16 (the ``gpu-fp16`` profile's path) and in float32, at
the candidate threshold, in batches of 64 notes as the CPU cache does (``decider_cv.ner_spans``), and writes one
gzip JSONL: a header (model id: folder and weights' sha256; threshold, GPU, seconds per dtype), then ``{"set", "id", "dtype", "spans"}``
(offsets, labels, scores; no text). Back on the development machine, ``decider_cv.py measure --gpu-spans FILE``
scores the gpu-fp16 profile on every set (the lockbox in aggregate only), with the decision stage as shipped.

    python scripts/gpu_spans.py --notes .gpu/pack/eval_notes.jsonl.xz -o $OUT/ner_spans_gpu.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=Path, required=True)
    ap.add_argument("--dtypes", default="float16,float32")
    ap.add_argument("--device", default="cuda", help="cuda (cpu: checks the script, tests/unit/scripts)")
    ap.add_argument("-o", "--output", type=Path, required=True)
    a = ap.parse_args()
    from decider_cv import ner_spans

    from processors.ner.step import DEFAULT_MODEL_DIR, model_id
    from processors.spans import NER_CANDIDATE_THRESHOLD
    from schemas.models import NoteIn

    rows: list[tuple[str, str, Any]] = []
    with lzma.open(a.notes, "rt", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            rows.append((r["set"], r["id"], NoteIn.model_validate(r["note"])))
    header: dict[str, Any] = {
        "model_id": model_id(DEFAULT_MODEL_DIR),
        "threshold": NER_CANDIDATE_THRESHOLD, "device": a.device, "notes": len(rows), "seconds": {}}
    try:
        import torch

        header["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        header["gpu"] = None
    results: dict[str, dict[str, Any]] = {}
    for dtype in a.dtypes.split(","):
        t0 = time.perf_counter()
        options = {"device": a.device, "dtype": dtype, "quantize": False,
                   "token_threshold": NER_CANDIDATE_THRESHOLD, "min_score": NER_CANDIDATE_THRESHOLD}
        # keys unique across sets: "set\tid"
        results[dtype] = ner_spans([(f"{s}\t{i}", note) for s, i, note in rows], options)
        header["seconds"][dtype] = round(time.perf_counter() - t0, 2)
        print(json.dumps({"dtype": dtype, "notes": len(rows), "spans": sum(map(len, results[dtype].values())),
                          "seconds": header["seconds"][dtype]}), flush=True)
    a.output.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(a.output, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(header) + "\n")
        for dtype, spans in results.items():
            for key, value in spans.items():
                name, note_id = key.split("\t", 1)
                fh.write(json.dumps({"set": name, "id": note_id, "dtype": dtype, "spans": value}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
