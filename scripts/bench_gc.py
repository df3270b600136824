"""The garbage collector's time while notes flow, with and without ``runtime.freeze_loaded`` after the first batch.

Fresh processes take turns (frozen, not frozen, ...), each builds the default detection pipeline, runs one batch (what
loads at first use loads then), freezes or not, and runs ``deidstream bench``'s 1,000-character synthetic notes in
batches of 64, timing every collection by generation (``gc.callbacks``). Each reports ms per note, the collections'
count and seconds, the objects left to the collector, and a digest of the spans (the same both ways).

    .venv/bin/python scripts/bench_gc.py [--n 1600] [--rounds 2] [-o scripts/results/bench_gc.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from bench_io import child_json, emit  # noqa: E402

CHILD = r'''
import gc, hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
freeze, n = sys.argv[2] == "1", int(sys.argv[3])
from processors.runtime import freeze_loaded
from streams.cli._util import batched, build_pipeline
from streams.cli.bench import fixed_length_notes
from streams.settings import Settings
settings = Settings()
cfg = settings.pipeline_config().model_copy(
    update={"steps": ("regex", "ner", "dictionary", "recovery", "decide", "ensemble")})
pipeline = build_pipeline(settings, cfg)
notes = fixed_length_notes(n, 1000, seed=7)
pipeline.run(notes[:64])
if freeze:
    freeze_loaded()
tracked = len(gc.get_objects())
stats = {g: [0, 0.0] for g in (0, 1, 2)}
began = {}
def timer(phase, info):
    if phase == "start":
        began["t"] = time.perf_counter()
    else:
        s = stats[info["generation"]]
        s[0] += 1
        s[1] += time.perf_counter() - began["t"]
gc.callbacks.append(timer)
digest = hashlib.sha256()
t0 = time.perf_counter()
for batch in batched(notes, 64):
    for note in pipeline.run(batch):
        digest.update(json.dumps([(s.start, s.end, str(s.label), s.score) for s in note.spans]).encode())
seconds = time.perf_counter() - t0
gc.callbacks.remove(timer)
print(json.dumps({"frozen": freeze, "notes": n, "ms_per_note": round(1000 * seconds / n, 3),
                  "tracked_objects": tracked,
                  "collections": {str(g): {"count": c, "seconds": round(s, 4)} for g, (c, s) in stats.items()},
                  "gc_ms_per_note": round(1000 * sum(s for _, s in stats.values()) / n, 4),
                  "spans_sha256": digest.hexdigest()}))
'''


def one(freeze: bool, n: int) -> dict[str, Any]:
    return child_json(CHILD, str(REPO), "1" if freeze else "0", str(n))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1600)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args()
    runs = []
    for _ in range(args.rounds):
        for freeze in (False, True):
            runs.append(one(freeze, args.n))
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    same = len({r["spans_sha256"] for r in runs}) == 1
    by = {mode: [r for r in runs if r["frozen"] is (mode == "frozen")] for mode in ("not_frozen", "frozen")}
    report = {"benchmark": "gc", "date": datetime.now(UTC).strftime("%Y-%m-%d"), "notes": args.n,
              "rounds": args.rounds, "identical_spans": same,
              "gc_ms_per_note": {k: [r["gc_ms_per_note"] for r in v] for k, v in by.items()},
              "full_collections": {k: [r["collections"]["2"] for r in v] for k, v in by.items()},
              "ms_per_note": {k: [r["ms_per_note"] for r in v] for k, v in by.items()}, "runs": runs}
    emit(report, args.output)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
