"""`deidstream samples`: de-identify the sample HL7 messages and a few synthetic notes, print the result.

The offline counterpart of the streaming demo: no broker, the same Pipeline."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from schemas.models import NoteIn
from schemas.readers import iter_inputs

REPO = Path(__file__).resolve().parents[2]
DEFAULT_HL7_DIRS = (REPO.parent / "shared" / "data" / "hl7", REPO / "tests" / "data" / "hl7")


def sample_notes(hl7_dir: Path | None, n_hl7: int, n_synthetic: int, seed: int = 11) -> list[NoteIn]:
    """Up to ``n_hl7`` narrative-bearing HL7 messages plus ``n_synthetic`` generated notes."""
    from processors.synthetic.generator import generate

    notes: list[NoteIn] = []
    dirs = (hl7_dir,) if hl7_dir is not None else DEFAULT_HL7_DIRS
    for d in dirs:
        if d is not None and d.is_dir():
            for item in iter_inputs(d):
                if isinstance(item, NoteIn) and item.text.strip() and len(notes) < n_hl7:
                    notes.append(item)
            break
    for rec in generate(n_synthetic, seed):
        notes.append(NoteIn.model_validate({"id": rec["id"], "text": rec["text"], "patient": rec.get("patient")}))
    return notes


def show(console: Console, notes: list, max_chars: int = 900) -> None:  # type: ignore[type-arg]
    table = Table(title="de-identified notes", show_lines=False)
    for col in ("note", "format", "chars", "spans", "labels", "leak", "ms"):
        table.add_column(col)
    for note in notes:
        if note.error is not None:
            table.add_row(note.note_id, note.input.source_format, str(len(note.text)), "-",
                          f"error {note.error.code}", "-", "-")
            continue
        labels = Counter(str(s.label) for s in note.spans)
        ms = sum(v for _, v in note.stage_ms)
        table.add_row(note.note_id, note.input.source_format, str(len(note.text)), str(len(note.spans)),
                      ", ".join(f"{k}:{v}" for k, v in labels.most_common()), str(bool(note.leak)), f"{ms:.1f}")
    for note in notes[:6]:
        if note.output is None:
            continue
        body = note.output if len(note.output) <= max_chars else note.output[:max_chars] + " …"
        console.print(Panel(body, title=f"{note.note_id} ({note.input.message_type or note.input.source_format})",
                            expand=False))
    console.print(table)
