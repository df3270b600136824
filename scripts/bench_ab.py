"""Two pipeline configurations in ONE process, taking turns over the same notes: ms per note, by step.

Runs of a benchmark minutes apart differ on a shared machine by more than a small change costs; taking turns in one
process moves both alike. Each configuration is the detect pipeline with its own step options (JSON, as
``DEID_PIPELINE__OPTIONS``):

    python scripts/bench_ab.py \\
        --a '{"ner": {"token_threshold": 0.03, "min_score": 0.03}, "decide": {"model_dir": "../old/processors/decide/models/decider"}}' \\
        --b '{}' --notes 400 --rounds 4 -o scripts/results/bench_ab.json

Notes: ``deidstream synth`` notes (seed ``--seed``; synthetic, no real identifiers).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_io import emit  # noqa: E402

STEPS = ("regex", "ner", "dictionary", "recovery", "decide", "ensemble")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="step options of configuration A (JSON)")
    ap.add_argument("--b", required=True, help="step options of configuration B (JSON)")
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--notes", type=int, default=400)
    ap.add_argument("--seed", type=int, default=4244)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("-o", "--output", type=Path, default=None)
    args = ap.parse_args()

    from processors.pipeline import Pipeline, PipelineConfig
    from processors.synthetic.generator import generate
    from schemas.models import NoteIn

    steps = tuple(args.steps.split(","))
    configs = {"a": json.loads(args.a), "b": json.loads(args.b)}
    pipelines = {k: Pipeline.from_config(PipelineConfig(steps=steps, options=v)) for k, v in configs.items()}
    notes = [NoteIn(note_id=r["id"], text=r["text"]) for r in generate(args.notes, args.seed)]
    for p in pipelines.values():
        p.run(notes[:args.batch_size])  # warm-up
    step_ms = {k: Counter() for k in pipelines}
    wall = Counter()
    spans = Counter()
    for _ in range(args.rounds):
        for k, p in pipelines.items():
            t0 = time.perf_counter()
            for i in range(0, len(notes), args.batch_size):
                for n in p.run(notes[i:i + args.batch_size]):
                    spans[k] += len(n.spans)
                    for step, ms in n.stage_ms:
                        step_ms[k][step] += ms
            wall[k] += time.perf_counter() - t0
    runs = args.rounds * len(notes)
    out = {
        "benchmark": "a/b in one process, taking turns", "notes": len(notes), "seed": args.seed, "rounds": args.rounds,
        "steps": list(steps), "options": configs,
        "ms_per_note": {k: round(wall[k] * 1000 / runs, 3) for k in pipelines},
        "step_ms_per_note": {k: {s: round(v / runs, 3) for s, v in step_ms[k].items()} for k in pipelines},
        "spans_per_note": {k: round(spans[k] / runs, 2) for k in pipelines},
        "b_vs_a": round(wall["b"] / wall["a"], 4),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    emit(out, args.output)


if __name__ == "__main__":
    main()
