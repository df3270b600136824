"""Test helpers for the steps that judge candidate spans (recovery, the decide step's cues): a note with candidates
from (substring, label, source[, occurrence]) specs, and the surfaces of spans."""

from __future__ import annotations

from typing import Any

from processors.pipeline import Note
from schemas.models import NoteIn, Patient, Span

#: (substring, label, source[, occurrence]) -> a Span on the n-th occurrence of the substring.
SpanSpec = tuple[Any, ...]


def make_note(text: str, specs: list[SpanSpec], patient: Patient | None = None) -> Note:
    spans = []
    for spec in specs:
        sub, label, source = spec[:3]
        occurrence = spec[3] if len(spec) > 3 else 0
        start = -1
        for _ in range(occurrence + 1):
            start = text.index(sub, start + 1)
        spans.append(Span(start=start, end=start + len(sub), label=label, source=source))
    return Note(input=NoteIn(note_id="n1", text=text, patient=patient), spans=tuple(spans))


def surfaces(note: Note, spans: tuple[Span, ...]) -> list[str]:
    return [note.text[s.start:s.end] for s in spans]
