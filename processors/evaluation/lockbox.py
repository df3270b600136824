"""The lockbox: a fixed part of the dev corpora that is scored, never read (issue 25).

Rules fitted to the errors of the notes they are scored on do not carry to new patients: the PhysioNet dev
notes' cross-validated figure said recall 0.977, the held-out half of the corpus 0.945. So about 20% of the dev
patients form a lockbox. Its notes are only ever scored in aggregate (precision, recall, fp / fn counts per
label); no error listing, span dump, per-note row or example of a lockbox note is printed or written, and no
model that ships (the NER, the decision stage) is trained on them. Every quality figure is reported as design
CV and lockbox side by side; a change whose design gain the lockbox does not confirm does not ship.

Membership is a function of the note alone, so it holds for any file or subset of a corpus: a salted SHA-256
of the note's patient (PhysioNet's ``patient_group``) or, for a corpus without patients (MEDDOCAN dev), of the
note id, read as a number in [0, 1), is below ``SHARE``. The salt was fixed before any split was looked at and
is the only one tried: 16 of the 81 PhysioNet dev patients (174 of 1,024 notes), 56 of the 250 MEDDOCAN dev
notes. Notes of other corpora (synthetic, presidio_synth_v2, a hospital's own files) have no lockbox.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from processors.evaluation.gold import GoldNote
from schemas.errors import ConfigError

SALT = "deidstream-lockbox-1"
SHARE = 0.2

N = TypeVar("N", GoldNote, Mapping[str, Any])


def lockbox_key(note_id: str, group: object | None, split: object | None = None) -> str | None:
    """The unit a corpus's lockbox is drawn by (its patient, or the note), None for a corpus without one."""
    if note_id.startswith("physionet-deid-") and group is not None:
        return f"physionet:{group}"
    if note_id.startswith("meddocan-") and split == "dev":
        return f"meddocan:{note_id}"
    return None


def _unit(key: str) -> float:
    return int.from_bytes(hashlib.sha256(f"{SALT}:{key}".encode()).digest()[:8], "big") / 2**64


def in_lockbox(note: GoldNote | Mapping[str, Any]) -> bool:
    """True for a note of a dev corpus's lockbox (a ``GoldNote`` or a raw record of the shared eval format)."""
    if isinstance(note, GoldNote):
        key = lockbox_key(note.id, note.group, note.extra.get("split"))
    else:
        key = lockbox_key(str(note.get("id", "")), note.get("patient_group"), note.get("split"))
    return key is not None and _unit(key) < SHARE


def split(notes: Sequence[N]) -> tuple[list[N], list[N]]:
    """(design notes, lockbox notes), each in input order."""
    design: list[N] = []
    box: list[N] = []
    for n in notes:
        (box if in_lockbox(n) else design).append(n)
    return design, box


def design_only(notes: Sequence[N]) -> list[N]:
    return split(notes)[0]


def refuse_lockbox(notes: Iterable[GoldNote | Mapping[str, Any]], what: str) -> None:
    """Raise before ``what`` (a listing, a dump, a training run) touches a lockbox note. The message names how
    many, never which."""
    n = sum(1 for note in notes if in_lockbox(note))
    if n:
        raise ConfigError(f"{what}: {n} notes belong to the lockbox, which is scored in aggregate only and never "
                          "listed, dumped or trained on (processors.evaluation.lockbox)", code="E305")
