"""How the LLM step's ``risky`` gate behaves on gold sets: the share of notes it sends at a threshold, and how
well its score ranks notes by the identifiers the pipeline WITHOUT the LLM misses.

    python scripts/llm_gate.py --gold physionet_dev=../shared/data/eval/physionet_deid_dev.jsonl:physionet \
        --gold synthetic=/tmp/synth_eval.jsonl: [--threshold 0.1] [-o scripts/results/llm_gate.json]

The default pipeline runs with the ``llm`` step in ``risky`` mode against the local OpenAI-compatible test
server (``tests/support/openai_test_server.py``; this is a dev script, it may use the tests' helpers) whose
model names no identifier: the notes it sends come back with nothing, so every output is the output of the
default pipeline without the LLM, and each note carries the gate score the step computed before recovery
(``NoteMetrics.llm.gate_score``) and the final residual risk (``NoteMetrics.risk.score``). Truth: the gold
identifiers the output did not fully remove (as ``scripts/fit_risk_cv.py`` counts them). Only aggregate
numbers are written (no note ids, no text).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "support"))

from openai_test_server import OpenAITestServer, Reply  # noqa: E402

from processors.evaluation import stats  # noqa: E402
from processors.evaluation.gold import load_gold, load_label_map  # noqa: E402
from processors.evaluation.lockbox import design_only  # noqa: E402
from processors.evaluation.scoring import evaluate_note  # noqa: E402
from streams.cli._util import span_record  # noqa: E402
from streams.cli.eval import run_pipeline  # noqa: E402


def measure(path: Path, labels: str | None, threshold: float) -> dict[str, Any]:
    # the design part only: the lockbox (processors.evaluation.lockbox) is scored by scripts/decider_cv.py
    gold = design_only(load_gold(path, load_label_map(labels) if labels else None))
    notes, rate = run_pipeline(gold, config=None, steps=None, batch_size=64, workers=1, with_metrics=True)
    gate: list[float] = []
    final: list[float] = []
    sent: list[bool] = []
    missed: list[bool] = []
    for g, n in zip(gold, notes, strict=True):
        if n.error is not None or n.metrics is None or n.metrics.llm is None or n.metrics.risk is None:
            raise SystemExit(f"a note failed in the pipeline ({n.error.code if n.error else 'no metrics'})")
        counts = evaluate_note(g, [span_record(s) for s in n.spans])
        missed.append(counts.entities > counts.entities_found)
        gate.append(n.metrics.llm.gate_score)
        final.append(n.metrics.risk.score)
        sent.append(n.metrics.llm.status != "skipped")
    with_missed = [s for s, m in zip(sent, missed, strict=True) if m]
    return {
        "notes": len(notes), "notes_with_missed": sum(missed), "notes_per_s": round(rate, 1),
        "threshold": threshold,
        "share_sent": round(sum(sent) / len(sent), 4),
        "share_of_notes_with_missed_sent": round(sum(with_missed) / len(with_missed), 4) if with_missed else None,
        "auroc_gate_score": stats.auroc(gate, missed),
        "auroc_final_risk_score": stats.auroc(final, missed),
        "spearman_gate_vs_final_risk": stats.spearman(gate, final),
        "mean_gate_score": round(sum(gate) / len(gate), 4),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gold", action="append", required=True, help="name=path:labelmap (labelmap may be empty)")
    ap.add_argument("--threshold", type=float, default=0.1, help="the gate (llm.risk_threshold; default 0.1)")
    ap.add_argument("-o", "--output", type=Path, default=REPO / "scripts/results/llm_gate.json")
    args = ap.parse_args()

    out: dict[str, Any] = {"date": datetime.date.today().isoformat(), "steps": "default + llm (risky)",
                           "sets": {}}
    empty = json.dumps({"identifiers": []})
    with OpenAITestServer(lambda body: Reply(empty)) as srv:
        os.environ.update({"DEID_LLM__MODE": "risky", "DEID_LLM__URL": srv.url, "DEID_LLM__MODEL": "none",
                           "DEID_LLM__RISK_THRESHOLD": str(args.threshold)})
        for spec in args.gold:
            name, _, rest = spec.partition("=")
            path, _, labels = rest.rpartition(":")
            out["sets"][name] = measure(Path(path), labels or None, args.threshold)
            print(name, json.dumps(out["sets"][name]), flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
