"""NER throughput on a GPU (fp16 weights): notes/s and per-batch latency by batch size, on the same fixed-length
synthetic notes as scripts/bench_ner.py. Falls back to ``--device cpu`` for a dry run.

usage: python scripts/gpu_bench_ner.py [--n 2000] [--chars 1000] [--batch-sizes 16,32,64,128] [--device cuda] [-o FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from processors.ner import DEFAULT_MODEL_DIR, decode_spans, load_model, predict  # noqa: E402
from streams.bench import fixed_length_notes  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--chars", type=int, default=1000)
    ap.add_argument("--batch-sizes", default="16,32,64,128")
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args()

    import torch

    loaded = load_model(args.model_dir, args.device, False)
    texts = [n.text for n in fixed_length_notes(args.n, args.chars)]
    report: dict[str, Any] = {
        "benchmark": "ner_gpu", "device": args.device, "model": loaded.model_id, "notes": len(texts),
        "chars_per_note": round(statistics.mean(map(len, texts))), "max_length": args.max_length,
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"), "by_batch_size": {},
    }
    for bs in (int(b) for b in args.batch_sizes.split(",")):
        predict(loaded, texts[:bs], batch_size=bs, max_length=args.max_length)  # warm-up (kernels, allocator)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        latencies = []
        t0 = time.perf_counter()
        for i in range(0, len(texts), bs):
            t1 = time.perf_counter()
            chunk = texts[i: i + bs]
            for text, p in zip(chunk, predict(loaded, chunk, batch_size=bs, max_length=args.max_length), strict=True):
                decode_spans(text, p.offsets, p.probs, loaded.index)
            latencies.append(time.perf_counter() - t1)
        sec = time.perf_counter() - t0
        report["by_batch_size"][bs] = {
            "notes_per_s": round(len(texts) / sec, 1), "batch_ms_p50": round(1000 * statistics.median(latencies), 1),
            "batch_ms_max": round(1000 * max(latencies), 1),
        }
        print(bs, report["by_batch_size"][bs], file=sys.stderr)
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
