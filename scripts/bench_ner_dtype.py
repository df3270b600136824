"""The NER step on one numeric path against another, interleaved in one process (issue 25 item 2: a larger encoder
in bfloat16 on a CPU with AMX against the shipped model on its int8 path).

Each configuration is the ``ner`` step built outside a pipeline (no detector profile: a profile names the int8 and
float32 paths only), over the same kind of notes as ``deidstream bench`` (``fixed_length_notes``: synthetic, about
``--chars`` characters, no text repeated); every round gives each configuration notes of its own, and the
configurations take turns within the round, so a busy moment of the host falls on all of them alike. Reported:
notes/s per round, the median, and each configuration's ratio to the first one's in the same round.

    .venv/bin/python scripts/bench_ner_dtype.py --config shipped-int8:: \\
        --config larger-bf16:.gpu/models/Lfold0:bfloat16 [--n 200 --rounds 5] [-o FILE]

A configuration is NAME:MODEL_DIR:DTYPE; an empty MODEL_DIR is the shipped model, an empty DTYPE the int8 path
(quantized float32), otherwise the model unquantized in that dtype.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def parse_config(text: str) -> tuple[str, str | None, str | None]:
    """NAME:MODEL_DIR:DTYPE -> (name, model folder or None for the shipped one, dtype or None for int8)."""
    parts = text.split(":")
    if len(parts) != 3 or not parts[0]:
        raise SystemExit(f"--config {text!r}: NAME:MODEL_DIR:DTYPE (empty MODEL_DIR: the shipped model; empty "
                         "DTYPE: int8)")
    name, model_dir, dtype = parts
    if dtype not in ("", "float32", "bfloat16", "float16"):
        raise SystemExit(f"--config {text!r}: DTYPE is empty (int8), float32, bfloat16 or float16")
    return name, model_dir or None, dtype or None


def build(model_dir: str | None, dtype: str | None, batch_size: int | None = None) -> Any:
    """The ``ner`` step on that path, built without a pipeline (so without a detector profile); ``batch_size``: the
    windows a model call on the float paths (1: one window a call, side by side on one intra-op thread each, as the
    int8 path always runs; None: the step's default)."""
    from processors.ner.step import NER
    from processors.pipeline import BuildContext

    options: dict[str, Any] = {"quantize": dtype is None, "dtype": dtype or "auto"}
    if batch_size is not None:
        options["batch_size"] = batch_size
    if model_dir:
        options["model_dir"] = model_dir
    return NER(NER.Config(**options), BuildContext())


def cpu_flags() -> list[str]:
    """The matrix and vector extensions /proc/cpuinfo names (AMX, AVX-512 VNNI / BF16 / FP16), if it is there."""
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return []
    return sorted(f for f in flags.split(":", 1)[1].split() if f.startswith(("amx", "avx512_bf16", "avx512_fp16",
                                                                          "avx512_vnni", "avx_vnni")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", action="append", required=True, help="NAME:MODEL_DIR:DTYPE (repeat; the first is "
                    "the reference of the ratios)")
    ap.add_argument("--n", type=int, default=200, help="notes a configuration a round")
    ap.add_argument("--chars", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warm", type=int, default=16, help="notes each configuration runs before the rounds")
    ap.add_argument("--batch-size", type=int, default=None, help="windows a model call on the float paths (default: "
                    "the step's; the int8 path runs one a call whatever it is)")
    ap.add_argument("-o", "--output", default=None)
    args = ap.parse_args()
    configs = [parse_config(c) for c in args.config]
    if len({c[0] for c in configs}) != len(configs):
        raise SystemExit("--config: each NAME once")

    from processors.pipeline import Note
    from streams.cli.bench import fixed_length_notes

    steps = {name: build(model_dir, dtype, args.batch_size) for name, model_dir, dtype in configs}
    # notes of their own for every configuration and round (and the warm-up): no step answers a note it has seen
    need = len(configs) * (args.rounds * args.n + args.warm)
    notes = iter(fixed_length_notes(need, args.chars))

    def take(k: int) -> list[Any]:
        return [Note(input=next(notes)) for _ in range(k)]

    for step in steps.values():
        step.process_batch(take(args.warm))
    rates: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, step in steps.items():
            batch = take(args.n)
            t0 = time.perf_counter()
            for i in range(0, len(batch), 64):
                step.process_batch(batch[i:i + 64])
            rates[name].append(len(batch) / (time.perf_counter() - t0))
    first = configs[0][0]
    out: dict[str, Any] = {
        "what": "the ner step alone, notes/s, configurations taking turns in one process, notes never seen",
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "command": " ".join(["scripts/bench_ner_dtype.py",
                                                                                      *sys.argv[1:]]),
        "host": {"cpus": os.cpu_count(), "machine": platform.machine(), "cpu_flags": cpu_flags(),
                 "torch_threads": __import__("torch").get_num_threads()},
        "n": args.n, "chars": args.chars, "rounds": args.rounds, "batch_size": args.batch_size,
        "configs": {name: {"model_dir": model_dir, "dtype": dtype or "int8 (quantized float32)",
                           "model_id": steps[name].model_id, "notes_per_s": [round(r, 2) for r in rates[name]],
                           "median": round(statistics.median(rates[name]), 2),
                           "ratio_to_" + first: [round(r / f, 3) for r, f in zip(rates[name], rates[first],
                                                                                  strict=True)]}
                    for name, model_dir, dtype in configs},
    }
    print(json.dumps(out, indent=1))
    if args.output:
        Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
