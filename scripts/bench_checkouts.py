"""Two checkouts of the code (before and after a change that must not change output), taking turns in fresh processes
over the same notes: ms per note by step of the default pipeline, first pass (memos cold, as a worker starts).

A change to the code cannot be timed in one process against its former self; fresh processes that alternate, A B A B
..., move both alike when the machine drifts. Each process runs every step of the default pipeline over the notes in
batches of ``--batch-size`` and reports each step's ms per note and a digest of the output (spans, text, metrics less
their timings), which must be the same for both checkouts.

    git worktree add /tmp/before COMMIT
    python scripts/bench_checkouts.py --a /tmp/before --b . --rounds 3 -o scripts/results/bench_checkouts.json

Notes: ``deidstream bench``'s fixed-length synthetic notes (``--synthetic``, 1,000 characters) and, when ``../shared``
is there, the first notes of presidio_synth_v2 and MEDDOCAN dev (public synthetic and shared evaluation texts).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from bench_io import child_json, emit  # noqa: E402

SHARED = REPO.parent / "shared" / "data" / "eval"

#: one process: the checkout's pipeline over the notes (argv: checkout, synthetic, per shared file, batch size)
CHILD = r'''
import hashlib, json, sys, time
checkout, synthetic, shared, batch_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, checkout)
from pathlib import Path
from processors.pipeline import Note, Pipeline, PipelineConfig
from schemas.models import NoteIn
from streams.cli.bench import fixed_length_notes
notes = fixed_length_notes(synthetic, 1000)
eval_dir = Path(sys.argv[5])
for name in ("presidio_synth_v2", "meddocan_dev"):
    path = eval_dir / f"{name}.jsonl"
    if path.is_file():
        with path.open(encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if i >= shared:
                    break
                notes.append(NoteIn(note_id=f"{name}-{i}", text=json.loads(line)["text"]))
pipeline = Pipeline.from_config(PipelineConfig())
pipeline.run(notes[:4])
ms, digest = {}, hashlib.sha256()
for i in range(0, len(notes), batch_size):
    batch = [Note(input=n) for n in notes[i:i + batch_size]]
    for proc in pipeline.processors:
        t = time.perf_counter()
        batch = proc.process_batch(batch)
        ms[proc.name] = ms.get(proc.name, 0.0) + (time.perf_counter() - t) * 1000
    for n in batch:
        m = n.metrics.model_dump(mode="json", exclude={"stage_ms", "total_ms"}) if n.metrics is not None else None
        digest.update(json.dumps([[(s.start, s.end, str(s.label), s.subtype, s.score, s.source) for s in n.spans],
                                  n.output, n.leak, m], sort_keys=True, default=str).encode())
print(json.dumps({"notes": len(notes), "ms_per_note": {k: v / len(notes) for k, v in ms.items()},
                  "output_sha256": digest.hexdigest()}))
'''


def one(checkout: Path, args: argparse.Namespace) -> dict[str, Any]:
    return child_json(CHILD, str(checkout.resolve()), str(args.synthetic), str(args.shared), str(args.batch_size),
                      str(SHARED), what=f"{checkout}: the pipeline")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", type=Path, required=True, help="checkout A (before)")
    ap.add_argument("--b", type=Path, required=True, help="checkout B (after)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--synthetic", type=int, default=300)
    ap.add_argument("--shared", type=int, default=200, help="notes of each shared evaluation file")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    started = time.perf_counter()
    for _ in range(args.rounds):
        for key, checkout in (("a", args.a), ("b", args.b)):
            runs[key].append(one(checkout, args))
    digests = {r["output_sha256"] for rs in runs.values() for r in rs}
    steps = list(runs["a"][0]["ms_per_note"])
    median = {key: {s: round(statistics.median(r["ms_per_note"][s] for r in rs), 3) for s in steps}
              for key, rs in runs.items()}
    emit({"benchmark": "bench_checkouts", "date": datetime.now(UTC).isoformat(timespec="seconds"),
          "a": str(args.a), "b": str(args.b), "notes": runs["a"][0]["notes"], "rounds": args.rounds,
          "same_output": len(digests) == 1,
          "median_ms_per_note": median,
          "b_over_a": {s: round(median["b"][s] / median["a"][s], 3) for s in steps if median["a"][s] > 0},
          "runs": runs, "seconds": round(time.perf_counter() - started, 1)}, args.output)


if __name__ == "__main__":
    main()
