"""Gold notes and label maps: the shared eval JSONL format, mapped to our labels.

Gold files use the shared eval JSONL format ``{"id", "text", "spans": [{"start", "end", "label", "text"}]}``;
corpus labels are mapped to ours with a label map (``load_label_map``): a value is ``"LABEL"``,
``"LABEL/SUBTYPE"``, null (drop the label: not PHI under our policy, so a detection there is a false
positive) or ``IGNORE`` (leave its tokens out of precision and recall: e.g. PhysioNet's bare years, which
Safe Harbor allows and which the tag mode keeps, but which a detector may still flag as part of a date).

Without a map, labels that are not ours are kept as the gold's own labels (``load_gold(..., own_labels=True)``):
token precision and recall need no labels, and per-label recall is reported by the gold's labels.
A record's ``patient_group`` (a corpus's grouping of notes by patient) is kept as ``GoldNote.group`` for
cross-validation by patient.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from schemas.errors import ConfigError, InputError
from schemas.labels import Label, Subtype, check_subtype
from schemas.models import NoteIn

PACKAGED_MAPS: tuple[str, ...] = ("presidio", "meddocan", "physionet")
#: label-map target: the span's tokens count neither as identifiers nor as non-identifiers
IGNORE = "IGNORE"
#: record fields that describe the note for evaluation, not pipeline input
_META_FIELDS = ("id", "text", "spans", "kind", "patient_group")


@dataclass(frozen=True, slots=True)
class GoldSpan:
    start: int
    end: int
    label: str
    subtype: str | None = None
    text: str = ""
    source_label: str | None = None


@dataclass(frozen=True, slots=True)
class GoldNote:
    id: str
    text: str
    spans: tuple[GoldSpan, ...]
    kind: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: regions left out of scoring (label-map target IGNORE), half-open offsets
    ignored: tuple[tuple[int, int], ...] = ()
    #: the corpus's patient group, for cross-validation by patient (None when the corpus has none)
    group: str | None = None

    def to_note_in(self) -> NoteIn:
        """The note as pipeline input, with its structured blocks (patient, providers, ...) if any."""
        return NoteIn.model_validate({**self.extra, "note_id": self.id, "text": self.text})


# ------------------------------------------------------------------------------------------ label maps

def _parse_target(value: str) -> tuple[str, str | None]:
    label, _, subtype = value.partition("/")
    Label(label)
    if subtype:
        Subtype(subtype)
        check_subtype(label, subtype)
    return label, subtype or None


def _validate_map(mapping: Mapping[str, str | None], where: str) -> dict[str, str | None]:
    bad: list[str] = []
    for key, value in mapping.items():
        if value is None or value == IGNORE:
            continue
        try:
            _parse_target(str(value))
        except ValueError:
            bad.append(f"{key}: {value}")
    if bad:
        raise ConfigError(f"label map {where}: invalid targets {sorted(bad)}; use LABEL, LABEL/SUBTYPE, IGNORE or null")
    return {str(k): (None if v is None else str(v)) for k, v in mapping.items()}


def load_label_map(name_or_path: str | Path) -> dict[str, str | None]:
    """A corpus-label -> our-label map: a packaged one by name ("presidio", "meddocan") or a YAML file.

    The YAML holds a ``labels:`` mapping (or is that mapping itself); null targets drop the label.
    """
    if isinstance(name_or_path, str) and name_or_path in PACKAGED_MAPS:
        resource = importlib.resources.files("schemas") / "labelmaps" / f"{name_or_path}.yaml"
        raw = yaml.safe_load(resource.read_text(encoding="utf-8"))
        where = name_or_path
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise ConfigError(f"label map {str(name_or_path)!r} is neither packaged ({', '.join(PACKAGED_MAPS)})"
                              " nor a file")
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        where = path.name
    mapping = raw.get("labels", raw) if isinstance(raw, dict) else None
    if not isinstance(mapping, dict):
        raise ConfigError(f"label map {where}: expected a mapping of labels")
    return _validate_map(mapping, where)


# ------------------------------------------------------------------------------------------ gold

def gold_from_records(records: Iterable[Mapping[str, Any]], label_map: Mapping[str, str | None] | None = None,
                      *, own_labels: bool = False) -> list[GoldNote]:
    """Gold notes from already-parsed records (see ``load_gold``)."""
    targets: dict[str, tuple[str, str | None] | str | None] = {}
    if label_map is not None:
        checked = _validate_map(label_map, "argument")
        targets = {k: (v if v is None or v == IGNORE else _parse_target(v)) for k, v in checked.items()}
    notes: list[GoldNote] = []
    unmapped: set[str] = set()
    for n, rec in enumerate(records, start=1):
        try:
            note_id, text, raw_spans = str(rec["id"]), rec["text"], rec.get("spans") or []
        except (KeyError, TypeError):
            raise InputError(f"gold record {n}: needs 'id' and 'text'") from None
        if not isinstance(text, str):
            raise InputError(f"gold record {n}: 'text' must be a string")
        spans: list[GoldSpan] = []
        ignored: list[tuple[int, int]] = []
        for raw in raw_spans:
            start, end, source = int(raw["start"]), int(raw["end"]), str(raw["label"])
            if not 0 <= start < end <= len(text):
                raise InputError(f"gold record {n}: span [{start}, {end}) outside the text")
            if "text" in raw and raw["text"] is not None and text[start:end] != raw["text"]:
                raise InputError(f"gold record {n}: span text differs from text at offset {start}")
            target: tuple[str, str | None] | str | None
            if label_map is None:
                try:
                    target = _parse_target(source)
                except ValueError:
                    if own_labels:
                        spans.append(GoldSpan(start, end, source, None, text[start:end], source))
                    else:
                        unmapped.add(source)
                    continue
                sub = raw.get("subtype")
                if sub is not None:
                    target = (target[0], _parse_target(f"{target[0]}/{sub}")[1])
            elif source in targets:
                target = targets[source]
            else:
                unmapped.add(source)
                continue
            if target is None:
                continue
            if target == IGNORE:
                ignored.append((start, end))
                continue
            assert not isinstance(target, str)
            spans.append(GoldSpan(start, end, target[0], target[1], text[start:end], source))
        extra = {k: v for k, v in rec.items() if k not in _META_FIELDS}
        kind, group = rec.get("kind"), rec.get("patient_group")
        notes.append(GoldNote(note_id, text, tuple(sorted(spans, key=lambda s: (s.start, s.end))),
                              None if kind is None else str(kind), extra, tuple(sorted(ignored)),
                              None if group is None else str(group)))
    if unmapped:
        raise InputError(f"gold labels without a mapping: {sorted(unmapped)}")
    return notes


def load_gold(path: str | Path, label_map: Mapping[str, str | None] | None = None, *,
              own_labels: bool = False) -> list[GoldNote]:
    """Gold notes from a file in the shared eval format: JSONL, a JSON object or array, or a folder of them
    (``schemas.readers.read_json_records``: a bad line raises InputError naming the file and line).

    With ``label_map`` None the labels must already be ours (schemas.Label values, optional "subtype"), or,
    with ``own_labels``, labels that are not ours are kept as they are; otherwise every corpus label must be
    a key of the map (unmapped labels raise InputError listing them).
    """
    from schemas.readers import read_json_records

    return gold_from_records([rec for _, rec in read_json_records(path)], label_map, own_labels=own_labels)
