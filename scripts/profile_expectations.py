"""The saved expectation of a detector profile: the NER step's spans on a fixed set of synthetic notes.

The unquantized float32 path on a CPU (``cpu-fp32``) stands in for the GPU in CI: tests/unit/processors/
test_profiles.py runs the NER step with that profile on the same notes and compares with the file this writes.
Regenerate it (and review the diff) only when the model or the decoding changes on purpose:

    python scripts/profile_expectations.py --profile cpu-fp32 -o tests/data/profiles/cpu-fp32_ner.jsonl

Notes: ``deidstream synth`` notes (seed 26, 24 notes; synthetic, no real identifiers). Each line: note id and
its spans (start, end, label, subtype, score rounded to 4 places).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SEED = 26
N_NOTES = 24


def expectation_notes() -> list[Any]:
    from processors.synthetic.generator import generate
    from schemas.models import NoteIn

    return [NoteIn(note_id=f"profile-{i}", text=r["text"]) for i, r in enumerate(generate(N_NOTES, SEED))]


def profile_spans(profile: str) -> list[dict[str, Any]]:
    """The NER step's spans (only that step) under ``profile`` on :func:`expectation_notes`."""
    from processors.pipeline import Pipeline, PipelineConfig

    pipeline = Pipeline.from_config(PipelineConfig(steps=("ner",), profile=profile))  # type: ignore[arg-type]
    out = []
    for note in pipeline.run(expectation_notes()):
        out.append({"note_id": note.note_id, "profile": pipeline.versions().profile, "spans": [
            [s.start, s.end, str(s.label), s.subtype and str(s.subtype), round(s.score, 4)] for s in note.spans]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="cpu-fp32")
    ap.add_argument("-o", "--output", type=Path, required=True)
    args = ap.parse_args()
    rows = profile_spans(args.profile)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} notes, {sum(len(r['spans']) for r in rows)} spans to {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
