"""Pipeline throughput benchmark (no Kafka): notes/s and per-note latency on fixed-length notes."""

from __future__ import annotations

import os
import platform
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from processors.pipeline import PIPELINE_VERSION, PipelineConfig
from schemas.models import NoteIn
from streams.settings import Settings


def fixed_length_notes(n: int, chars: int, seed: int = 2024) -> list[NoteIn]:
    """``n`` synthetic notes of about ``chars`` characters (synthetic notes joined/cut at a word boundary)."""
    from processors.synthetic.generator import generate

    pool = generate(max(50, n // 4), seed)
    notes: list[NoteIn] = []
    i = 0
    while len(notes) < n:
        text = ""
        patient = pool[i % len(pool)].get("patient")
        while len(text) < chars:
            text += pool[i % len(pool)]["text"] + "\n"
            i += 1
        cut = text.rfind(" ", 0, chars)
        notes.append(NoteIn(note_id=f"bench-{len(notes)}", text=text[: cut if cut > 0 else chars],
                            patient=patient))
    return notes


def bench_pipeline(
    settings: Settings, cfg: PipelineConfig, *, n: int, chars: int, workers: int = 1, batch_size: int = 64
) -> dict[str, Any]:
    from streams.cli import run_notes

    notes = fixed_length_notes(n, chars)
    warm = notes[: min(len(notes), batch_size)]
    list(run_notes(settings, cfg, warm, batch_size=batch_size, workers=1))  # load vocabularies / caches
    t0 = time.perf_counter()
    per_note_ms: list[float] = []
    stage_totals: dict[str, float] = {}
    done = 0
    for batch in run_notes(settings, cfg, notes, batch_size=batch_size, workers=workers):
        done += len(batch)
        for note in batch:
            per_note_ms.append(sum(ms for _, ms in note.stage_ms))
            for stage, ms in note.stage_ms:
                stage_totals[stage] = stage_totals.get(stage, 0.0) + ms
    elapsed = time.perf_counter() - t0
    return {
        "benchmark": "pipeline",
        "steps": list(cfg.steps),
        "notes": done,
        "chars_per_note": round(statistics.mean(len(x.text) for x in notes)),
        "workers": workers,
        "batch_size": batch_size,
        "seconds": round(elapsed, 3),
        "notes_per_s": round(done / elapsed, 1),
        "per_note_ms_mean": round(statistics.mean(per_note_ms), 3) if per_note_ms else None,
        "stage_ms_mean": {k: round(v / max(done, 1), 3) for k, v in stage_totals.items()},
        "cpu_count": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "pipeline_version": PIPELINE_VERSION,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
