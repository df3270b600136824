"""The NER step's host work alone: what a GPU worker's process does besides the model's forward pass (issue 26).

The model runs once over the notes (CPU, float32, the GPU path's batching: ``--windows`` windows a forward call) and
its logits are recorded; then the step's host work runs again with the forward calls replaying those logits, so only
the tokenizer, the windows, the copies into the notes, the decoding of spans and the step's filter are timed (best of
``--rounds``; a cProfile of one more round gives the parts). On a GPU node each process does this work on one core
while the GPU runs the forward passes: it bounds the notes/s one process can reach there.

    .venv/bin/python scripts/bench_ner_host.py [--n 256] [--chars 1000] [-o scripts/results/bench_ner_host.json]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import os
import platform
import pstats
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: the parts reported from the profile: (name, function's file suffix, function name)
PARTS = (("pieces (the tokenizer or its fast path)", "ner/pieces.py", "encode"),
         ("predict (the pieces, windows, copies)", "ner/step.py", "predict"),
         ("decode_spans", "ner/step.py", "decode_spans"), ("spans_from_runs", "ner/step.py", "spans_from_runs"),
         ("only_function_words", "ner/step.py", "only_function_words"))


class _Out:
    def __init__(self, logits: Any) -> None:
        self.logits = logits


class Recorder:
    """The model's forward, recording its logits in call order."""

    def __init__(self, model: Any) -> None:
        self.model, self.config, self.logits = model, model.config, []

    def __call__(self, input_ids: Any = None, attention_mask: Any = None, **cased: Any) -> _Out:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, **cased).logits
        self.logits.append(out.clone())
        return _Out(out)


class Replay:
    """The recorded logits in the same order, for the same calls: a forward that costs nothing."""

    def __init__(self, recorder: Recorder) -> None:
        self.config, self.logits, self.i = recorder.config, recorder.logits, 0

    def __call__(self, input_ids: Any = None, attention_mask: Any = None, **cased: Any) -> _Out:
        out = self.logits[self.i]
        if tuple(out.shape[:2]) != tuple(input_ids.shape):
            raise RuntimeError("replayed logits do not fit the call: the batches changed between passes")
        self.i += 1
        return _Out(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=256, help="notes")
    ap.add_argument("--chars", type=int, default=1000)
    ap.add_argument("--windows", type=int, default=256, help="windows a forward call (the GPU runs' batch)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args()

    from processors.runtime import pin_threads

    pin_threads(1)  # one core, as each of a GPU node's worker processes
    from processors.pipeline import BuildContext, Note, build_processor
    from streams.cli.bench import fixed_length_notes

    notes = [Note(input=n) for n in fixed_length_notes(args.n, args.chars)]
    # the step as it runs on a GPU, on the CPU's float32 path (unquantized: batches of many windows)
    ner = build_processor("ner", {"quantize": False, "batch_size": args.windows}, BuildContext())
    loaded = ner.model
    recorder = Recorder(loaded.model)
    object.__setattr__(ner, "model", dataclasses.replace(loaded, model=recorder, traced=None))
    t0 = time.perf_counter()
    reference = ner.process_batch(notes)
    forward_run_s = time.perf_counter() - t0
    replay = Replay(recorder)
    object.__setattr__(ner, "model", dataclasses.replace(loaded, model=replay, traced=None))
    times = []
    for _ in range(args.rounds):
        replay.i = 0
        t0 = time.perf_counter()
        out = ner.process_batch(notes)
        times.append(time.perf_counter() - t0)
    if [n.spans for n in out] != [n.spans for n in reference]:
        raise SystemExit("the replayed pass found other spans than the model's pass")
    replay.i = 0
    prof = cProfile.Profile()
    prof.enable()
    ner.process_batch(notes)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]  # parts overlap: predict holds the tokenizer
    profiled = sum(v[2] for v in stats.values())  # every function's own time: the profiled round's total
    parts: dict[str, float] = {}
    for name, suffix, func in PARTS:
        cum = sum(v[3] for (f, _, fn), v in stats.items() if f.endswith(suffix) and fn == func)
        parts[name] = round(cum / profiled, 3)
    best = min(times)
    result = {
        "script": "scripts/bench_ner_host.py", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(), "cpus": os.cpu_count(), "notes": args.n, "chars": args.chars,
        "windows_per_forward": args.windows, "model_id": loaded.model_id,
        "spans": sum(len(n.spans) for n in reference), "forward_pass_run_s": round(forward_run_s, 2),
        "host_s_rounds": [round(t, 4) for t in times], "host_ms_per_note": round(1000 * best / args.n, 3),
        "host_notes_per_s_one_core": round(args.n / best, 1),
        "share_of_host_time_profiled": parts,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
