"""JSON Schema export of the topic contracts."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from schemas.models import DeadLetter, DeidentifiedNote, NoteIn, Span


def contract_models() -> dict[str, type[BaseModel]]:
    """The models whose JSON Schemas are published, by file stem."""
    models: dict[str, type[BaseModel]] = {
        "note_in": NoteIn,
        "span": Span,
        "deidentified_note": DeidentifiedNote,
        "dead_letter": DeadLetter,
    }
    try:  # NoteMetrics arrives with the metrics issue
        from schemas.metrics import NoteMetrics  # type: ignore[import-not-found,unused-ignore]

        models["note_metrics"] = NoteMetrics
    except ImportError:
        pass
    return models


def export_schemas(out_dir: Path) -> list[Path]:
    """Write one ``<name>.schema.json`` per contract model into ``out_dir``; return the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, model in contract_models().items():
        path = out_dir / f"{stem}.schema.json"
        schema = model.model_json_schema(mode="validation" if stem == "note_in" else "serialization")
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
