"""The one reader of note files (schemas/readers.py): a table of file kinds giving the same notes through
``iter_inputs`` (the CLI) and ``streams.codec.records_from_path`` (the producer, decoded as the worker
decodes), and ``read_json_records`` (gold files)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from schemas.errors import DeidError, InputError
from schemas.models import NoteIn
from schemas.readers import InputFailure, RawItem, iter_inputs, iter_raw, read_json_records
from streams.codec import NOTE_ID_HEADER, InRecord, decode, records_from_path

HL7_A = ("MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240101120000||ORU^R01|MSG0001|P|2.5\r"
         "PID|1||MRN123^^^HOSP^MR||Doe^Jane||19800101|F\r"
         "OBX|1|TX|NOTE^Note||Seen today, doing well.\r")
HL7_B_NO_ID = ("MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240101120000||ORU^R01||P|2.5\r"  # MSH-10 empty
               "PID|1||MRN456^^^HOSP^MR||Roe^Rick||19700101|M\r"
               "OBX|1|TX|NOTE^Note||Follow up in two weeks.\r")


def note(note_id: str, text: str, mrn: str | None = None) -> dict[str, object]:
    rec: dict[str, object] = {"id": note_id, "text": text}
    if mrn is not None:
        rec["patient"] = {"mrn": mrn}
    return rec


def jsonl(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


N1 = json.dumps(note("n1", "First note.", "M1"))
N2 = json.dumps(note("n2", "Second note."))
N3 = note("n3", "Third note.", "M3")
N4 = note("n4", "Fourth note.")

#: name -> (files to write, the path to read (relative), notes in order, failures as (where, code))
CASES: dict[str, tuple[dict[str, str], str, list[str], list[tuple[str, str]]]] = {
    "jsonl": ({"notes.jsonl": jsonl(N1, "", N2)}, "notes.jsonl", ["n1", "n2"], []),
    "json object": ({"one.json": json.dumps(N3, indent=2)}, "one.json", ["n3"], []),
    "json array": ({"many.json": json.dumps([N3, N4], indent=2)}, "many.json", ["n3", "n4"], []),
    "json array, one element no object": ({"many.json": json.dumps([N3, "n4"])}, "many.json", ["n3"],
                                          [("many.json#2", "E103")]),
    "hl7 with 2 messages": ({"two.hl7": HL7_A + "\n" + HL7_B_NO_ID}, "two.hl7", ["MSG0001", "two-2"], []),
    "hl7 with 1 message": ({"one.HL7": HL7_B_NO_ID}, "one.HL7", ["one"], []),
    "folder mixing them": (
        {"in/b/notes.jsonl": jsonl(N1, N2), "in/a.json": json.dumps([N3, N4]), "in/c/two.er7": HL7_A + HL7_B_NO_ID,
         "in/README.md": "not an input", "in/readme.txt": "a text file that is not HL7\n",
         "in/d.JSON": json.dumps(note("n5", "Fifth note."))},
        "in", ["n3", "n4", "n1", "n2", "MSG0001", "two-2", "n5"], [("readme.txt#1", "E201")]),
    "bad line": ({"bad.jsonl": jsonl(N1, '{"id": "x", "text": ', "[1, 2]", '{"text": "no id"}', N2)},
                 "bad.jsonl", ["n1", "n2"], [("bad.jsonl:2", "E102"), ("bad.jsonl:3", "E103"),
                                             ("bad.jsonl:4", "E104")]),
    "json file holding JSONL": ({"lines.json": jsonl(N1, N2)}, "lines.json", [], [("lines.json", "E102")]),
    "empty hl7 file": ({"empty.hl7": "\n\n"}, "empty.hl7", [], [("empty.hl7", "E202")]),
    "missing path": ({}, "nowhere.jsonl", [], [("nowhere.jsonl", "E110")]),
}


@pytest.mark.parametrize("case", CASES)
def test_iter_inputs_gives_the_notes_and_the_failures_in_file_order(tmp_path: Path, case: str) -> None:
    files, target, ids, failures = CASES[case]
    write(tmp_path, files)
    items = list(iter_inputs(tmp_path / target))
    assert [i.note_id for i in items if isinstance(i, NoteIn)] == ids
    got = [(Path(f.where).name if f.code == "E110" else f.where, f.code) for f in items
           if isinstance(f, InputFailure)]
    assert got == failures


def _decoded(path: Path) -> tuple[list[NoteIn], list[str]]:
    """The worker's view of the produced records: notes, and the codes of those it would dead-letter."""
    notes, codes = [], []
    for offset, rec in enumerate(records_from_path(path)):
        try:
            notes.append(decode(InRecord("notes.raw", 0, offset, rec.key, rec.value, rec.headers), max_bytes=1 << 20))
        except DeidError as exc:
            codes.append(exc.code)
    return notes, codes


@pytest.mark.parametrize("case", CASES)
def test_records_from_path_gives_the_same_notes_as_iter_inputs(tmp_path: Path, case: str) -> None:
    files, target, ids, failures = CASES[case]
    write(tmp_path, files)
    path = tmp_path / target
    notes, codes = _decoded(path)
    assert notes == [i for i in iter_inputs(path) if isinstance(i, NoteIn)]
    assert [n.note_id for n in notes] == ids
    # a note or message that does not parse is published as is (the worker dead-letters it with the same
    # code); a file without any note or message (missing path, an empty HL7 file) gives no record
    assert codes == [code for _, code in failures if code not in ("E110", "E202")]


def test_records_are_keyed_by_patient_and_hl7_records_carry_the_fallback_note_id(tmp_path: Path) -> None:
    write(tmp_path, {"n.jsonl": jsonl(N1, N2), "two.hl7": HL7_A + HL7_B_NO_ID})
    recs = records_from_path(tmp_path)
    assert [r.key for r in recs] == [b"M1", b"n2", b"MRN123", b"MRN456"]  # no patient: the note id
    assert [dict(r.headers).get(NOTE_ID_HEADER) for r in recs] == [None, None, b"two-1", b"two-2"]
    assert [dict(r.headers)["deid-format"] for r in recs] == [b"json", b"json", b"hl7", b"hl7"]
    assert recs[0].value == N1.encode()  # JSONL lines are published as read


def test_a_file_without_notes_is_logged_by_name_and_code_and_skipped(tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path, {"n.jsonl": jsonl(N1)})
    (tmp_path / "latin1.hl7").write_bytes("Jane Doe, caf\u00e9".encode("latin-1"))  # not UTF-8, no MSH-18
    with caplog.at_level(logging.WARNING, logger="streams.codec"):
        recs = records_from_path(tmp_path)
    assert len(recs) == 1
    assert "latin1.hl7" in caplog.text and "E101" in caplog.text and "Jane" not in caplog.text


def test_iter_raw_names_each_item_by_line_or_number(tmp_path: Path) -> None:
    write(tmp_path, {"a.json": json.dumps([N3, N4]), "b.jsonl": jsonl(N1), "c.hl7": HL7_A})
    items = [i for i in iter_raw(tmp_path) if isinstance(i, RawItem)]
    assert [(i.where, i.format) for i in items] == [("a.json#1", "json"), ("a.json#2", "json"),
                                                     ("b.jsonl:1", "json"), ("c.hl7#1", "hl7")]
    assert json.loads(items[0].raw) == N3


# -- gold records ------------------------------------------------------------------------------------------


def test_read_json_records_reads_jsonl_json_and_folders_of_them(tmp_path: Path) -> None:
    write(tmp_path, {"g/a.jsonl": jsonl(N1, "", N2), "g/b.json": json.dumps([N3, N4]), "g/c.hl7": HL7_A,
                     "g/d.json": json.dumps(N3)})
    got = list(read_json_records(tmp_path / "g"))
    assert [w for w, _ in got] == ["a.jsonl:1", "a.jsonl:3", "b.json#1", "b.json#2", "d.json"]
    assert [r["id"] for _, r in got] == ["n1", "n2", "n3", "n4", "n3"]


def test_read_json_records_reads_a_named_file_of_any_suffix_as_jsonl(tmp_path: Path) -> None:
    write(tmp_path, {"gold.txt": jsonl(N1, N2)})
    assert [r["id"] for _, r in read_json_records(tmp_path / "gold.txt")] == ["n1", "n2"]


@pytest.mark.parametrize("files, target, code, message", [
    ({"g.jsonl": jsonl(N1, '{"id": "a", "text": "Ann"')}, "g.jsonl", "E102", r"g\.jsonl line 2: not valid JSON \(column"),
    ({"g.jsonl": jsonl('["Ann"]')}, "g.jsonl", "E103", r"g\.jsonl line 1: a record must be a JSON object"),
    ({"g.json": '[{"id": "a"}, "Ann"]'}, "g.json", "E103", r"g\.json item 2: a record must be a JSON object"),
    ({"g.json": '{"id": "a", "text": "Ann"'}, "g.json", "E102", r"g\.json: not valid JSON \(line 1 column"),
    ({}, "missing.jsonl", "E110", "does not exist"),
])
def test_read_json_records_raises_a_coded_error_naming_the_place_not_the_text(
    tmp_path: Path, files: dict[str, str], target: str, code: str, message: str
) -> None:
    write(tmp_path, files)
    with pytest.raises(InputError, match=message) as info:
        list(read_json_records(tmp_path / target))
    assert info.value.code == code
    assert "Ann" not in str(info.value)

