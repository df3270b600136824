"""JSON on the worker's per-message path: the standard library's ``json`` against orjson, interleaved.

Per message the worker decodes a JSON note (``schemas.readers.parse_json_note``: JSON, then the pydantic
``NoteIn``) and encodes its ``notes.metrics`` record (``streams.codec.metrics_value``); the ``notes.deid`` value is
pydantic's own ``model_dump_json`` and is not part of this comparison. Each round times both variants over the same
notes, in alternating order, so a change in the machine's speed moves both alike; the ratio is taken per round and
its median reported. Before timing, every payload is checked to decode to the same value both ways and every metrics
record to hold the same JSON value both ways.

usage: python scripts/bench_codec.py [--n 300] [--rounds 15] [-o scripts/results/bench_codec.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402

from processors.pipeline import Pipeline, PipelineConfig  # noqa: E402
from processors.synthetic.generator import generate  # noqa: E402
from schemas.models import NoteIn  # noqa: E402
from schemas.readers import parse_json_note  # noqa: E402
from streams.codec import metrics_payload, metrics_value  # noqa: E402


def parse_with_json(raw: bytes) -> NoteIn:
    """The decoder before orjson: ``json.loads`` then the same validation."""
    return NoteIn.model_validate(json.loads(raw.decode("utf-8")))


def metrics_with_json(note: Any) -> bytes:
    """The metrics encoder before orjson."""
    return json.dumps(metrics_payload(note), separators=(",", ":")).encode()


def time_it(fn: Callable[[Any], Any], items: list[Any]) -> float:
    t0 = time.perf_counter()
    for x in items:
        fn(x)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("-o", "--output", type=Path, default=REPO / "scripts/results/bench_codec.json")
    args = ap.parse_args()

    records = generate(args.n, 13)
    payloads = [json.dumps({"note_id": r["id"], "text": r["text"], "patient": {"id": f"P-{i % 40}"}}).encode()
                for i, r in enumerate(records)]
    notes = Pipeline.from_config(PipelineConfig(steps=("regex", "ensemble", "transform"))).run(
        [parse_json_note(p) for p in payloads])

    # same values both ways
    for p in payloads:
        assert parse_json_note(p) == parse_with_json(p)
    for n in notes:
        assert json.loads(metrics_value(n)) == json.loads(metrics_with_json(n))

    cases: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], list[Any]]] = {
        "json_loads": (lambda p: json.loads(p.decode("utf-8")), lambda p: orjson.loads(p.decode("utf-8")), payloads),
        "decode_note": (parse_with_json, parse_json_note, payloads),
        "encode_metrics": (metrics_with_json, metrics_value, notes),
    }
    per_round: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    for r in range(args.rounds):
        for name, (old, new, items) in cases.items():
            if r % 2:
                t_new, t_old = time_it(new, items), time_it(old, items)
            else:
                t_old, t_new = time_it(old, items), time_it(new, items)
            per_round[name].append((t_old, t_new))

    def us(t: float) -> float:
        return round(t / args.n * 1e6, 2)

    results: dict[str, Any] = {}
    for name, rounds in per_round.items():
        olds = [o for o, _ in rounds]
        news = [n for _, n in rounds]
        results[name] = {
            "json_us_per_message_median": us(statistics.median(olds)),
            "orjson_us_per_message_median": us(statistics.median(news)),
            "speedup_median_of_rounds": round(statistics.median(o / n for o, n in rounds), 2),
        }
    per_msg_old = [a[0] + b[0] for a, b in zip(per_round["decode_note"], per_round["encode_metrics"], strict=True)]
    per_msg_new = [a[1] + b[1] for a, b in zip(per_round["decode_note"], per_round["encode_metrics"], strict=True)]
    results["decode_note_plus_encode_metrics"] = {
        "json_us_per_message_median": us(statistics.median(per_msg_old)),
        "orjson_us_per_message_median": us(statistics.median(per_msg_new)),
        "speedup_median_of_rounds": round(statistics.median(o / n for o, n in zip(per_msg_old, per_msg_new,
                                                                                   strict=True)), 2),
        "saved_us_per_message_median": round(statistics.median((o - n) / args.n * 1e6 for o, n in zip(
            per_msg_old, per_msg_new, strict=True)), 2),
    }
    out = {
        "what": "JSON per message on the worker path: json vs orjson, interleaved rounds",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "orjson": orjson.__version__,
                    "note": "shared 2-core machine, loaded by other jobs: compare the ratios, not the times"},
        "notes": args.n,
        "mean_payload_bytes": round(statistics.mean(len(p) for p in payloads)),
        "mean_metrics_bytes": round(statistics.mean(len(metrics_value(n)) for n in notes)),
        "rounds": args.rounds,
        "results": results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out["results"], indent=2))


if __name__ == "__main__":
    main()
