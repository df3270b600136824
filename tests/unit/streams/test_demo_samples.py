"""What the demo and ``samples`` publish (issue 27): one note per note id from the shared HL7 samples (they are
variants of a few messages that reuse their control ids), the messages that do not map kept for the DLQ."""

from __future__ import annotations

from pathlib import Path

from streams.cli.demo import SKIPPED, _hl7_note_id, sample_notes, sample_records


def test_when_the_demo_collects_the_shared_samples_then_each_note_id_is_published_once(shared_dir: Path) -> None:
    records, kinds = sample_records(shared_dir / "data" / "hl7", n_synthetic=2)
    hl7 = [r for r in records if dict(r.headers).get("deid-format") == b"hl7"]
    ids = [i for r in hl7 if (i := _hl7_note_id(r)) is not None]
    assert len(ids) == len(set(ids)) and len(ids) > 20
    assert kinds["hl7"] == len(hl7) and kinds[SKIPPED] > 0  # the shared samples do repeat ids
    assert len(hl7) > len(ids)  # messages that do not map stay: the demo shows them dead-lettered


def test_when_samples_collects_hl7_notes_then_their_ids_are_distinct(shared_dir: Path) -> None:
    notes = [n for n in sample_notes(shared_dir / "data" / "hl7", n_hl7=12, n_synthetic=0)]
    assert len(notes) == 12 and len({n.note_id for n in notes}) == 12
