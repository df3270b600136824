"""Byte-compare `deidstream deid` / `detect` outputs of two git revisions on the same inputs.

    .venv/bin/python scripts/compare_outputs.py REV_A REV_B [-o OUT_DIR] [--data ../shared/data/eval]

Each revision is checked out into its own worktree and run with this virtualenv's interpreter
(``PYTHONPATH`` = the worktree), the same secret and ``PYTHONHASHSEED=0``, over: 300 synthetic notes
(seed 9001), presidio_synth_v2 and the PhysioNet dev notes, in tag, surrogate and dateshift modes and
detect. Every output file is compared byte for byte; where two differ, they are compared again without
the fields that cannot agree across two runs or two revisions: ``metrics.stage_ms`` / ``metrics.total_ms``
(timings) and ``metrics.versions`` (it names the code: a moved file changes a dictionary's version hash).
Exit 0 when every file is identical up to those fields. Writes ``compare.json`` with the verdicts;
``OUT_DIR/cache-a`` and ``cache-b`` keep each revision's derived vocabularies for the next run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VOLATILE = ("stage_ms", "total_ms", "versions")


def run_revision(rev: str, out: Path, inputs: dict[str, Path], work: Path, cache: Path) -> None:
    tree = work / f"tree-{rev.replace('/', '_')}"
    subprocess.run(["git", "worktree", "add", "--detach", "-f", str(tree), rev], cwd=REPO, check=True,
                   capture_output=True)
    try:
        # each revision builds its vocabularies into its own cache folder (a vocabulary whose builder moved
        # has a new version, and a build removes the other versions of its cache files)
        env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0", DEID_CACHE_DIR=str(cache),
                   DEID_SECRET="compare-outputs-secret-not-for-production")
        cli = [sys.executable, "-m", "streams.cli"]
        out.mkdir(parents=True, exist_ok=True)
        for name, path in inputs.items():
            jobs = [("deid", m) for m in ("tag", "surrogate", "dateshift")] + [("detect", None)]
            for cmd, mode in jobs:
                target = out / f"{name}_{mode or cmd}.out"
                args = [*cli, cmd, str(path), "-o", str(target)] + (["--mode", mode] if mode else [])
                subprocess.run(args, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, capture_output=True)


def _stable(line: str) -> str:
    rec = json.loads(line)
    metrics = rec.get("metrics")
    if isinstance(metrics, dict):
        for key in VOLATILE:
            metrics.pop(key, None)
    return json.dumps(rec, sort_keys=True)


def compare(a: Path, b: Path) -> dict[str, str]:
    verdicts: dict[str, str] = {}
    for fa in sorted(a.glob("*.out")):
        fb = b / fa.name
        if fa.read_bytes() == fb.read_bytes():
            verdicts[fa.name] = "byte-identical"
            continue
        la, lb = fa.read_text().splitlines(), fb.read_text().splitlines()
        diff = [i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if _stable(x) != _stable(y)]
        if len(la) == len(lb) and not diff:
            verdicts[fa.name] = "identical except " + "/".join(VOLATILE)
        else:
            verdicts[fa.name] = f"DIFFERENT: {len(diff)} of {len(la)} lines (first {diff[:5]}), {len(lb)} lines in B"
    return verdicts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev_a")
    ap.add_argument("rev_b")
    ap.add_argument("-o", "--out", type=Path, default=Path("out/compare"))
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "eval")
    args = ap.parse_args()
    args.out = args.out.resolve()  # the revisions run in their own worktrees
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        synth = work / "synth.jsonl"
        subprocess.run([sys.executable, "-m", "streams.cli", "synth", "--n", "300", "--seed", "9001", "-o",
                        str(synth)], cwd=REPO, check=True, stderr=subprocess.DEVNULL)
        inputs = {"synthetic": synth, "presidio": args.data / "presidio_synth_v2.jsonl",
                  "physionet": args.data / "physionet_deid_dev.jsonl"}
        for rev, side in ((args.rev_a, "a"), (args.rev_b, "b")):
            run_revision(rev, args.out / side, inputs, work, args.out / f"cache-{side}")
    verdicts = compare(args.out / "a", args.out / "b")
    (args.out / "compare.json").write_text(json.dumps({"a": args.rev_a, "b": args.rev_b, "files": verdicts},
                                                      indent=2) + "\n")
    for name, verdict in verdicts.items():
        print(f"{name}: {verdict}")
    return 0 if all(not v.startswith("DIFFERENT") for v in verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
