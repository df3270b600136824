"""The NER step's time per character under OpenMP's default (spinning) wait policy and ``OMP_WAIT_POLICY=PASSIVE``,
in fresh processes taking turns (the policy is read once, when torch loads its OpenMP runtime), with a hash of the
spans to show they are the same (issue 27: why the NER step cost 660-810 us per character on a loaded machine).

    .venv/bin/python scripts/bench_omp_wait.py [--rounds 2] [--contend 0,1] [-o scripts/results/bench_omp_wait.json]

Each process loads the shipped model (int8, torch's default thread count), runs one warm-up note, then the NER step
on one note each of 16 KB dense, 16 KB real and 64 KB dense (``scripts/bench_scaling.py``'s corpora). The load
average before each process is recorded: the default policy's threads spin while they wait for each other, which
costs little when every thread has a core and a lot when other processes hold the cores. ``--contend 0,1`` runs the
rounds once as the machine is, then with one busy-looping process beside them (another job holding a core, as on a
shared machine or a pod beside others on a node); the busy process is stopped after its rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = (("dense", 16384), ("real", 16384), ("dense", 65536))

CHILD = """
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[1] + "/scripts")
from bench_scaling import DEFAULT_REAL, DENSE_PASSAGE, corpus_text
from processors.ner import step as S
from processors.pipeline import BuildContext, Note
from schemas.models import NoteIn
ner = S.NER(S.NER.Config(), BuildContext())
ner.process_batch([Note(input=NoteIn(note_id="w", text=DENSE_PASSAGE * 4))])
out = {}
for corpus, size in json.loads(sys.argv[2]):
    text = corpus_text(corpus, size, DEFAULT_REAL)
    t0 = time.perf_counter()
    (n,) = ner.process_batch([Note(input=NoteIn(note_id="x", text=text))])
    dt = time.perf_counter() - t0
    h = hashlib.sha256(json.dumps([s.model_dump(mode="json") for s in n.spans]).encode()).hexdigest()[:16]
    out[f"{corpus}-{size}"] = {"seconds": round(dt, 3), "us_per_char": round(dt * 1e6 / len(text), 1),
                               "spans": len(n.spans), "spans_sha256": h}
import torch
out["torch_threads"] = torch.get_num_threads()
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--contend", default="0,1", help="busy-looping processes beside the runs, one setting per pass")
    ap.add_argument("-o", "--output", type=Path, default=REPO / "scripts" / "results" / "bench_omp_wait.json")
    args = ap.parse_args()
    runs = []
    for contend in [int(x) for x in args.contend.split(",")]:
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(contend)]
        try:
            runs += _rounds(args.rounds, contend)
        finally:
            for b in busy:
                b.kill()
                b.wait()
    same = all(len({run[f"{c}-{s}"]["spans_sha256"] for run in runs}) == 1 for c, s in CASES)
    out = {"benchmark": "omp_wait_policy", "cases": [f"{c}-{s}" for c, s in CASES], "runs": runs,
           "spans_identical": same, "cpu_count": os.cpu_count(),
           "date": datetime.now(UTC).strftime("%Y-%m-%d")}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2) + "\n")
    print(f"spans identical: {same}; wrote {args.output}")


def _rounds(rounds: int, contend: int) -> list[dict[str, object]]:
    runs: list[dict[str, object]] = []
    for r in range(rounds):
        for policy in ("default", "PASSIVE") if r % 2 == 0 else ("PASSIVE", "default"):
            env = dict(os.environ)
            env.pop("OMP_WAIT_POLICY", None)
            if policy != "default":
                env["OMP_WAIT_POLICY"] = policy
            env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
            load = [round(x, 2) for x in os.getloadavg()]
            proc = subprocess.run([sys.executable, "-c", CHILD, str(REPO), json.dumps(CASES)], env=env,
                                  capture_output=True, text=True, check=True)
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            runs.append({"round": r, "busy_processes": contend, "policy": policy, "load_average_before": load,
                         **result})
            print(f"busy={contend}", policy, load,
                  {k: v["us_per_char"] for k, v in result.items() if isinstance(v, dict)}, flush=True)
    return runs


if __name__ == "__main__":
    main()
