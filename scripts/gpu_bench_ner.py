"""NER stage throughput on a GPU: notes/s and per-batch latency by batch size and dtype, with the FLOP estimate
and the achieved fraction of the card's peak. Same fixed-length synthetic notes as scripts/bench_ner.py.

For every dtype (fp16, bf16) and batch size (32-512 notes a call): ``predict`` + ``decode_spans`` over all
notes, after a warm-up call. FLOPs = 2 x (non-embedding parameters) x (word pieces run, padding included);
achieved TFLOP/s over the forward time alone (CUDA events around the model calls) and over the whole stage
(tokenizing, windows, decoding on the CPU), each as a fraction of the card's dense fp16/bf16 peak
(``--peak-tflops``, else looked up by the GPU's name). ``--device cpu --dtypes float32`` is a dry run
(tested in tests/unit/test_gpu_bench.py); the numbers in the README come from a CUDA run.

usage: python scripts/gpu_bench_ner.py [--n 4096] [--chars 1000] [--batch-sizes 32,64,128,256,512]
           [--dtypes float16,bfloat16] [--device cuda] [--peak-tflops X] [-o FILE]
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

from processors.ner.step import DEFAULT_MODEL_DIR, decode_spans, load_model, predict  # noqa: E402

#: dense (no sparsity) fp16/bf16 tensor-core peaks from the vendors' data sheets, TFLOP/s
PEAK_TFLOPS = {"H200": 989.4, "H100 SXM": 989.4, "H100 80GB HBM3": 989.4, "H100 PCIe": 756.0, "H100 NVL": 835.0,
               "A100": 312.0, "L40S": 362.0, "L4": 121.0, "A10": 125.0, "T4": 65.0}


def peak_for(gpu_name: str | None) -> float | None:
    if not gpu_name:
        return None
    for key, value in PEAK_TFLOPS.items():  # most specific names first
        if key.lower() in gpu_name.lower():
            return value
    return None


class TimedModel:
    """Wraps the model so the forward calls alone are timed (CUDA events on a GPU, wall clock on a CPU)
    and the word pieces they ran (padding included) are counted."""

    def __init__(self, model: Any, device: str) -> None:
        self.model, self.device, self.config = model, device, model.config
        self.forward_s = 0.0
        self.pieces = 0

    def __call__(self, input_ids: Any, attention_mask: Any = None, **cased: Any) -> Any:
        import torch

        self.pieces += int(input_ids.numel())
        if self.device.startswith("cuda"):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, **cased)
            end.record()
            torch.cuda.synchronize()
            self.forward_s += start.elapsed_time(end) / 1000
        else:
            t0 = time.perf_counter()
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, **cased)
            self.forward_s += time.perf_counter() - t0
        return out


def run(texts: list[str], model_dir: str, device: str, dtypes: list[str], batch_sizes: list[int],
        max_length: int, peak_tflops: float | None) -> dict[str, Any]:
    import dataclasses

    import torch

    gpu = torch.cuda.get_device_name(0) if device.startswith("cuda") else None
    peak = peak_tflops or peak_for(gpu)
    report: dict[str, Any] = {
        "benchmark": "ner_gpu", "device": device, "gpu": gpu, "peak_tflops": peak, "notes": len(texts),
        "chars_per_note": round(statistics.mean(map(len, texts))), "max_length": max_length,
        "torch": torch.__version__, "date": datetime.now(UTC).strftime("%Y-%m-%d"), "runs": [],
    }
    for dtype in dtypes:
        loaded = load_model(model_dir, device, False, dtype)
        params = sum(p.numel() for n, p in loaded.model.named_parameters() if "embeddings" not in n)
        report.setdefault("model", loaded.model_id)
        report["non_embedding_params"] = params
        for bs in batch_sizes:
            timed = TimedModel(loaded.model, device)
            # traced=None: the timed wrapper must see every call (a GPU model is never traced anyway)
            measured = dataclasses.replace(loaded, model=timed, traced=None)
            predict(measured, texts[:bs], batch_size=bs, max_length=max_length)  # warm-up: kernels, allocator
            timed.forward_s, timed.pieces = 0.0, 0
            latencies, spans = [], 0
            t0 = time.perf_counter()
            for i in range(0, len(texts), bs):
                t1 = time.perf_counter()
                chunk = texts[i: i + bs]
                for text, p in zip(chunk, predict(measured, chunk, batch_size=bs, max_length=max_length), strict=True):
                    spans += len(decode_spans(text, p.offsets, p.probs, loaded.index))
                latencies.append(time.perf_counter() - t1)
            sec = time.perf_counter() - t0
            flops = 2.0 * params * timed.pieces
            row = {
                "dtype": dtype, "batch_size": bs, "notes_per_s": round(len(texts) / sec, 1),
                "batch_ms_p50": round(1000 * statistics.median(latencies), 2),
                "batch_ms_p95": round(1000 * sorted(latencies)[int(0.95 * (len(latencies) - 1))], 2),
                "batch_ms_max": round(1000 * max(latencies), 2), "forward_s": round(timed.forward_s, 4),
                "stage_s": round(sec, 4), "pieces": timed.pieces, "gflop": round(flops / 1e9, 2),
                "tflops_forward": round(flops / timed.forward_s / 1e12, 3) if timed.forward_s else None,
                "tflops_stage": round(flops / sec / 1e12, 3), "spans": spans,
            }
            if peak:
                row["peak_fraction_forward"] = round(row["tflops_forward"] / peak, 4) if row["tflops_forward"] else None
                row["peak_fraction_stage"] = round(row["tflops_stage"] / peak, 4)
            report["runs"].append(row)
            print(json.dumps(row), file=sys.stderr)
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--chars", type=int, default=1000)
    ap.add_argument("--batch-sizes", default="32,64,128,256,512")
    ap.add_argument("--dtypes", default="float16,bfloat16")
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--peak-tflops", type=float, default=None)
    ap.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    ap.add_argument("-o", "--output", type=Path)
    ap.add_argument("--notes", type=Path, default=None,
                    help="read the note texts from this JSONL ({'text': ...} per line; e.g. written by --write-notes "
                         "on a machine with the full install) instead of generating them here")
    ap.add_argument("--write-notes", type=Path, default=None, help="write the generated notes here and exit")
    args = ap.parse_args(argv)

    if args.notes is not None:
        with args.notes.open(encoding="utf-8") as fh:
            texts = [json.loads(line)["text"] for line in fh if line.strip()][: args.n]
    else:
        from streams.cli.bench import fixed_length_notes

        texts = [n.text for n in fixed_length_notes(args.n, args.chars)]
    if args.write_notes is not None:
        with args.write_notes.open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps({"text": t}) + "\n" for t in texts)
        return {"notes": len(texts), "written": str(args.write_notes)}
    report = run(texts, args.model_dir, args.device, [d.strip() for d in args.dtypes.split(",")],
                 [int(b) for b in args.batch_sizes.split(",")], args.max_length, args.peak_tflops)
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")
    return report


if __name__ == "__main__":
    main()
