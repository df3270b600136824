"""The latency the LLM pass adds per note, against the local OpenAI-compatible test server.

    python scripts/bench_llm.py [--n 200] [--chars 1000] [--rounds 5] [-o scripts/results/bench_llm.json]

The default pipeline (all default steps) runs over the same synthetic notes (``deidstream bench``'s
fixed-length notes) without the ``llm`` step, with it in ``always`` mode (every note sent) and in ``risky`` mode
(the default threshold), taking turns in ``--rounds`` rounds (the order alternates) so drift in the machine's
speed moves all alike. The server (``tests/support/openai_test_server.py`` in a child process: this dev script
uses the tests' helper; vLLM cannot run on these machines) answers at once with a deterministic model that names the first two
capitalised words of each window, so the numbers are the pass's own cost (gate score, prompt, HTTP and JSON
through the openai SDK, locating) and not a model's inference time, which a real server adds on top.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "support"))

from openai_test_server import OpenAITestServer, Reply, user_text  # noqa: E402

from processors.pipeline import DEFAULT_STEPS, Pipeline, PipelineConfig  # noqa: E402
from streams.cli.bench import fixed_length_notes  # noqa: E402

_CAP = re.compile(r"\b[A-Z][a-z]{2,}\b")


def backend(body: dict[str, Any]) -> Reply:
    text = user_text(body).split("<<<", 1)[-1]
    names = _CAP.findall(text)[:2]
    return Reply(json.dumps({"identifiers": [{"type": "NAME", "text": n} for n in names]}))


def _serve(queue: Any) -> None:
    """The test server in its own process (so its HTTP handling does not share the pipeline's GIL)."""
    with OpenAITestServer(backend) as srv:
        queue.put(srv.url)
        while True:
            time.sleep(3600)


def run(pipeline: Pipeline, notes: list[Any], batch_size: int) -> tuple[float, list[Any]]:
    t0 = time.perf_counter()
    out = []
    for i in range(0, len(notes), batch_size):
        out.extend(pipeline.run(notes[i:i + batch_size]))
    return time.perf_counter() - t0, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--chars", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("-o", "--output", type=Path, default=REPO / "scripts/results/bench_llm.json")
    args = ap.parse_args()

    notes = fixed_length_notes(args.n, args.chars)
    steps = list(DEFAULT_STEPS)
    with_llm = (*steps[: steps.index("recovery")], "llm", *steps[steps.index("recovery"):])
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    server = ctx.Process(target=_serve, args=(queue,), daemon=True)
    server.start()
    try:
        llm = {"url": queue.get(timeout=30), "model": "bench", "max_retries": 0}
        pipelines = {
            "without_llm": Pipeline.from_config(PipelineConfig(steps=tuple(steps))),
            "llm_always": Pipeline.from_config(PipelineConfig(steps=with_llm, options={"llm": {**llm,
                                                                                               "mode": "always"}})),
            "llm_risky": Pipeline.from_config(PipelineConfig(steps=with_llm, options={"llm": {**llm,
                                                                                              "mode": "risky"}})),
        }
        for p in pipelines.values():  # warm: vocabularies, the model, the HTTP pool
            run(p, notes[: args.batch_size], args.batch_size)
        names = list(pipelines)
        seconds: dict[str, list[float]] = {k: [] for k in names}
        llm_stage: dict[str, list[float]] = {k: [] for k in names if k != "without_llm"}
        request_ms: list[float] = []
        sent: dict[str, list[float]] = {k: [] for k in names if k != "without_llm"}
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else reversed(names):
                s, out = run(pipelines[name], notes, args.batch_size)
                seconds[name].append(s)
                if name != "without_llm":
                    llm_stage[name].append(statistics.mean(dict(n.stage_ms)["llm"] for n in out))
                    outcomes = [n.metrics.llm for n in out]
                    sent[name].append(sum(o.status != "skipped" for o in outcomes) / len(outcomes))
                    if name == "llm_always":
                        request_ms.extend(o.ms / max(o.windows, 1) for o in outcomes)
    finally:
        server.terminate()
        server.join(5)

    def per_note_ms(name: str) -> float:
        return round(statistics.median(seconds[name]) * 1000.0 / args.n, 3)

    base = per_note_ms("without_llm")
    result = {
        "benchmark": "llm pass against the local test server (instant deterministic model)",
        "date": datetime.date.today().isoformat(), "notes": args.n, "chars_per_note": args.chars,
        "rounds": args.rounds, "batch_size": args.batch_size, "steps_without_llm": steps,
        "steps_with_llm": list(with_llm), "concurrency": 8, "cpu_count": os.cpu_count(),
        "per_note_ms_median_of_rounds": {k: per_note_ms(k) for k in names},
        "added_per_note_ms": {k: round(per_note_ms(k) - base, 3) for k in names if k != "without_llm"},
        "llm_stage_ms_per_note_mean": {k: round(statistics.mean(v), 3) for k, v in llm_stage.items()},
        "request_ms_p50_p95": [round(statistics.quantiles(request_ms, n=20)[i], 3) for i in (9, 18)],
        "share_sent": {k: round(statistics.mean(v), 4) for k, v in sent.items()},
        "rounds_seconds": {k: [round(x, 3) for x in v] for k, v in seconds.items()},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("per_note_ms_median_of_rounds", "added_per_note_ms",
                                              "llm_stage_ms_per_note_mean", "request_ms_p50_p95", "share_sent")},
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
