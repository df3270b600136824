"""Time per character of every pipeline step on one note of 1 KB to 1 MiB (issue 27: no step may grow faster than
n log n in the note's length or its number of candidates).

    .venv/bin/python scripts/bench_scaling.py [--sizes 1024,4096,...] [--corpora real,dense,dense_one_line]
                                              [-o scripts/results/bench_scaling.json]

Corpora (one note per size, each the first ``size`` characters of):
- ``real``: the PhysioNet dev notes concatenated in file order, repeated from the first past their ~0.9 MB
  (``--real``; their text is never written out);
- ``dense``: an invented passage thick with identifiers (names, MRN, dates, phone, e-mail, SSN, address), repeated,
  one line per passage;
- ``dense_one_line``: the same without line breaks (a note that is one line: line-based context must not rescan it).

Every step runs through ``Pipeline.run`` on the note alone, after a warm-up note; per step the result has seconds,
microseconds per character and that figure relative to the corpus's smallest size (1.0 = linear). The machine's
load average is recorded before and after (timings on a shared machine vary; compare ratios within one run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEFAULT_SIZES = (1024, 4096, 16384, 65536, 262144, 1048576)
DEFAULT_REAL = REPO.parent / "shared" / "data" / "eval" / "physionet_deid_dev.jsonl"
#: invented identifiers only
DENSE_PASSAGE = (
    "Pt John Smith (MRN 4478123, DOB 03/14/1962) seen 02/11/2019 at Saint Brennan Medical Center, "
    "Springfield, IL 62704. Call 217-555-0143 or jsmith@example.org. SSN 123-45-6789. "
    "Dr. Alice Moreno reviewed; f/u with Dr. Kevin O'Hara on 3/2/19. Metoprolol 25 mg BID.\n"
)


def corpus_text(name: str, size: int, real: Path) -> str:
    if name == "real":
        notes = [json.loads(line)["text"] for line in real.open(encoding="utf-8")]
        parts: list[str] = []
        total = 0
        while total < size:  # the notes in file order, again from the first when they run out (~0.9 MB in all)
            text = notes[len(parts) % len(notes)]
            parts.append(text)
            total += len(text) + 2
        return "\n\n".join(parts)[:size]
    passage = DENSE_PASSAGE if name == "dense" else DENSE_PASSAGE.replace("\n", " ")
    return (passage * (size // len(passage) + 1))[:size]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    ap.add_argument("--corpora", default="real,dense,dense_one_line")
    ap.add_argument("--steps", default=None, help="comma-separated steps (default: the settings' pipeline)")
    ap.add_argument("--real", type=Path, default=DEFAULT_REAL)
    ap.add_argument("-o", "--output", type=Path, default=REPO / "scripts" / "results" / "bench_scaling.json")
    args = ap.parse_args()

    from schemas.models import NoteIn
    from streams.cli._util import build_pipeline, load_settings, pipeline_config_for

    sizes = [int(s) for s in args.sizes.split(",")]
    settings = load_settings(None)
    cfg = pipeline_config_for(settings, detect_only=False, steps=args.steps)
    pipeline = build_pipeline(settings, cfg)
    pipeline.run([NoteIn(note_id="warm-up", text=DENSE_PASSAGE * 4)])
    load_before = os.getloadavg()
    results: dict[str, list[dict[str, object]]] = {}
    for corpus in args.corpora.split(","):
        rows: list[dict[str, object]] = []
        for size in sizes:
            text = corpus_text(corpus, size, args.real)
            t0 = time.perf_counter()
            (note,) = pipeline.run([NoteIn(note_id=f"{corpus}-{size}", text=text)])
            total = time.perf_counter() - t0
            if note.error is not None:
                raise SystemExit(f"{corpus} {size}: {note.error.code} in {note.error.stage}")
            steps = {name: ms / 1000.0 for name, ms in note.stage_ms}
            rows.append({"chars": len(text), "spans": len(note.spans),
                         "seconds": round(total, 3), "us_per_char": round(total * 1e6 / len(text), 3),
                         "steps_seconds": {k: round(v, 4) for k, v in steps.items()},
                         "steps_us_per_char": {k: round(v * 1e6 / len(text), 3) for k, v in steps.items()}})
            print(f"{corpus:15s} {len(text):>8d} chars {len(note.spans):>6d} spans {total:8.2f} s "
                  + " ".join(f"{k}={v * 1e6 / len(text):.1f}" for k, v in steps.items()), flush=True)
        base = rows[0]["steps_us_per_char"]
        assert isinstance(base, dict)
        for row in rows:
            per = row["steps_us_per_char"]
            assert isinstance(per, dict)
            row["steps_vs_smallest"] = {k: round(v / base[k], 2) if base.get(k) else None for k, v in per.items()}
        results[corpus] = rows
    out = {
        "benchmark": "scaling",
        "steps": list(cfg.steps),
        "sizes": sizes,
        "corpora": results,
        "note": "one note per size; us_per_char flat across sizes = linear; steps_vs_smallest = a step's time per "
                "character relative to the corpus's smallest size; real = PhysioNet dev notes concatenated (text "
                "not stored)",
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        # the numeric libraries' thread settings (OpenMP's wait policy decides the NER step's time on a loaded machine)
        "thread_env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "torch_threads": _torch_threads(),
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.output}")


def _torch_threads() -> int | None:
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else None


if __name__ == "__main__":
    main()
