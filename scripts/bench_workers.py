"""``detect`` with 1 and N worker processes on the same notes: notes/s, each process's load time, same output.

Each run is a fresh Python process (as ``deidstream detect --workers N`` is), so every run pays the imports
and the model loading the way a user's run does; the runs of the different worker counts alternate
(1, 2, 1, 2, ...) so that a machine shared with other work disturbs them alike. Reported per run: the wall
time of the whole run (start to last note), notes/s over it, notes/s once every process was ready (the
steady rate), each process's load time and threads, the load average before and after, and the sha256 of
the output (spans only, no note text); the summary takes the median of the rounds and states whether every
output was byte-identical.

    python scripts/bench_workers.py --input ../shared/data/eval/physionet_deid_dev.jsonl \\
        --workers 1,2 --rounds 3 -o scripts/results/bench_workers.json
    python scripts/bench_workers.py --input ../shared/data/eval/physionet_deid_dev.jsonl \\
        --step-threads 1,2 --rounds 3 -o scripts/results/bench_step_threads.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_io import emit  # noqa: E402


def one_run(input_path: Path, workers: int, batch_size: int, out_path: Path) -> dict[str, Any]:
    """One ``detect`` run in this process (spans only, written to ``out_path``); its numbers."""
    from schemas.models import NoteIn
    from schemas.readers import iter_inputs
    from streams.cli._util import load_settings, note_record, pipeline_config_for, run_notes, steady_rate

    started = time.monotonic()
    settings = load_settings(None)
    cfg = pipeline_config_for(settings, detect_only=True)
    notes = [n for n in iter_inputs(input_path) if isinstance(n, NoteIn)]
    loads: list[dict[str, Any]] = []
    done: list[tuple[float, int]] = []
    digest = hashlib.sha256()
    with out_path.open("w", encoding="utf-8") as out:
        for batch in run_notes(settings, cfg, notes, batch_size=batch_size, workers=workers, stats=loads):
            for note in batch:
                line = json.dumps(note_record(note, with_text=False), ensure_ascii=False) + "\n"
                out.write(line)
                digest.update(line.encode())
            done.append((time.monotonic(), len(batch)))
    wall = done[-1][0] - started if done else 0.0
    rate = steady_rate(done, loads)
    return {
        "workers": workers, "notes": len(notes), "batch_size": batch_size, "wall_s": round(wall, 2),
        "notes_per_s": round(len(notes) / wall, 2) if wall else None,
        "steady_notes_per_s": round(rate, 2) if rate else None,
        "processes": [{"threads": s["threads"], "load_s": s["load_s"]} for s in loads],
        "output_sha256": digest.hexdigest(),
    }


def run_child(input_path: Path, workers: int, batch_size: int) -> dict[str, Any]:
    """:func:`one_run` in a fresh interpreter (what a ``detect`` command costs, imports included)."""
    with tempfile.TemporaryDirectory() as tmp:
        load_before = os.getloadavg()[0]
        proc = subprocess.run(
            [sys.executable, __file__, "--one", "--input", str(input_path), "--workers", str(workers),
             "--batch-size", str(batch_size), "--out-spans", str(Path(tmp) / "spans.jsonl")],
            cwd=REPO, capture_output=True, text=True, check=False,
        )
        if proc.returncode != 0:
            raise SystemExit(f"run with {workers} workers failed:\n{proc.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        result["loadavg_1m_before"] = round(load_before, 2)
        result["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
        return result


def step_threads(input_path: Path, thread_counts: list[int], rounds: int, batch_size: int) -> dict[str, Any]:
    """Each step's milliseconds per note in ONE process with torch on 1 and on N threads (rounds interleaved, same
    notes), and what that allows N processes of one thread each: with t_k the time per note on k threads, one process
    runs 1 / t_N notes/s and N processes at most N / t_1, so N worker processes can be at most ``t_N * N / t_1``
    times faster than one (less, when they contend for memory or cache)."""
    import torch

    from schemas.models import NoteIn
    from schemas.readers import iter_inputs
    from streams.cli._util import build_pipeline, load_settings, pipeline_config_for

    settings = load_settings(None)
    pipeline = build_pipeline(settings, pipeline_config_for(settings, detect_only=True))
    notes = [n for n in iter_inputs(input_path) if isinstance(n, NoteIn)]
    pipeline.run(notes[:batch_size])  # warm-up
    per: dict[int, list[dict[str, float]]] = {t: [] for t in thread_counts}
    for _ in range(rounds):
        for threads in thread_counts:
            torch.set_num_threads(threads)
            totals: dict[str, float] = {}
            for k in range(0, len(notes), batch_size):
                for note in pipeline.run(notes[k:k + batch_size]):
                    for step, ms in note.stage_ms:
                        totals[step] = totals.get(step, 0.0) + ms
            per[threads].append({step: ms / len(notes) for step, ms in totals.items()})
    steps = list(per[thread_counts[0]][0])
    medians = {t: {step: round(statistics.median(r[step] for r in rs), 3) for step in steps} for t, rs in per.items()}
    total = {t: round(sum(m.values()), 3) for t, m in medians.items()}
    one, n = thread_counts[0], thread_counts[-1]
    return {
        "notes": len(notes), "rounds": rounds, "ms_per_note_median": {str(t): m for t, m in medians.items()},
        "total_ms_per_note": {str(t): v for t, v in total.items()},
        f"ceiling_{n}_processes_vs_1": round(total[n] * n / (total[one] * 1.0), 3) if one == 1 else None,
    }


def summarise(runs: list[dict[str, Any]], counts: list[int]) -> dict[str, Any]:
    by = {w: [r for r in runs if r["workers"] == w] for w in counts}
    summary: dict[str, Any] = {}
    for w, rs in by.items():
        steady = [r["steady_notes_per_s"] for r in rs if r["steady_notes_per_s"]]
        summary[str(w)] = {
            "notes_per_s_median": statistics.median(r["notes_per_s"] for r in rs),
            "steady_notes_per_s_median": statistics.median(steady) if steady else None,
            "wall_s_median": statistics.median(r["wall_s"] for r in rs),
            "load_s_median": statistics.median(p["load_s"] for r in rs for p in r["processes"]),
        }
    base = summary[str(counts[0])]
    for w in counts[1:]:
        s = summary[str(w)]
        s["speedup_wall"] = round(s["notes_per_s_median"] / base["notes_per_s_median"], 3)
        if s["steady_notes_per_s_median"] and base["steady_notes_per_s_median"]:
            s["speedup_steady"] = round(s["steady_notes_per_s_median"] / base["steady_notes_per_s_median"], 3)
    summary["identical_output"] = len({r["output_sha256"] for r in runs}) == 1
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", type=Path, required=True, help="JSONL notes (the PhysioNet dev notes)")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts (the first is the base)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each worker count, interleaved")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("-o", "--output", type=Path, help="write the result JSON here")
    ap.add_argument("--step-threads", default=None, metavar="1,N",
                    help="instead: each step's ms per note in one process on 1 and N torch threads, and the ceiling "
                         "it sets on N worker processes")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out-spans", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_run(args.input, int(args.workers), args.batch_size, args.out_spans)))
        return
    if args.step_threads:
        result = {"benchmark": "detect steps in one process, torch threads 1 vs N, interleaved",
                  "input": args.input.name, "cpus": os.cpu_count(),
                  **step_threads(args.input, [int(t) for t in args.step_threads.split(",")], args.rounds,
                                 args.batch_size)}
        emit(result, args.output)
        return
    counts = [int(w) for w in args.workers.split(",")]
    runs = []
    for r in range(args.rounds):
        for w in counts:
            res = run_child(args.input, w, args.batch_size)
            runs.append(res)
            print(f"round {r + 1}: {w} workers: {res['notes_per_s']} notes/s over {res['wall_s']} s, steady "
                  f"{res['steady_notes_per_s']}, loads {[p['load_s'] for p in res['processes']]} s, load avg "
                  f"{res['loadavg_1m_before']} -> {res['loadavg_1m_after']}", file=sys.stderr)
    result = {
        "benchmark": "detect --workers N (default pipeline, detect steps), fresh process per run, interleaved",
        "input": args.input.name, "cpus": os.cpu_count(), "rounds": args.rounds,
        "summary": summarise(runs, counts), "runs": runs,
    }
    emit(result, args.output)


if __name__ == "__main__":
    main()
