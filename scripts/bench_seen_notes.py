"""How much faster the pipeline runs notes it has already seen than notes it has not (its memos per word, per span and
the tokenizer's answer from the first): the size of the flattery in a benchmark whose notes repeat.

In one process, after a warm-up on other notes: the same set of notes every round (seen from the second pass on)
against a set never seen before in each round, taking turns, as the CLI runs them (``Pipeline.run_stream``). Until
2026-12-05 ``deidstream bench``'s notes repeated (2,000 held 282 distinct texts), and every bench figure was partly the
"seen" kind (README, Speed: "The bench notes repeated until 2026-12-05").

    python scripts/bench_seen_notes.py [--n 500] [--rounds 3] [-o scripts/results/bench_seen_notes.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_io import emit  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chars", type=int, default=1000)
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args()

    from processors.runtime import freeze_loaded
    from streams.cli._util import batched, build_pipeline
    from streams.cli.bench import fixed_length_notes
    from streams.settings import Settings

    settings = Settings()
    pipeline = build_pipeline(settings, settings.pipeline_config())

    def rate(notes: list) -> float:
        t0 = time.perf_counter()
        for _ in pipeline.run_stream(batched(notes, 64)):
            pass
        return round(len(notes) / (time.perf_counter() - t0), 1)

    rate(fixed_length_notes(args.n, args.chars, seed=100))  # warm-up on other notes
    freeze_loaded()
    same = fixed_length_notes(args.n, args.chars, seed=77)
    rate(same)  # seen once
    seen: list[float] = []
    new: list[float] = []
    for r in range(args.rounds):
        fresh = fixed_length_notes(args.n, args.chars, seed=200 + r)
        order = ((seen, same), (new, fresh)) if r % 2 == 0 else ((new, fresh), (seen, same))
        for out, notes in order:
            out.append(rate(notes))
    emit({"benchmark": "seen_notes", "date": datetime.now(UTC).isoformat(timespec="seconds"), "notes": args.n,
          "chars": args.chars, "rounds": args.rounds, "steps": pipeline.step_names, "cpu_count": os.cpu_count(),
          "seen_notes_per_s": seen, "new_notes_per_s": new,
          "seen_over_new": round(sum(seen) / sum(new), 3)}, args.output)


if __name__ == "__main__":
    main()
