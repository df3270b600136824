"""HL7 v2 -> NoteIn mapping (schemas/hl7.py): shared samples, a synthetic MDM^T02, malformed input."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path

import hl7
import pytest
from paths import DATA, SHARED

from schemas.errors import DeidError, HL7ParseError, InputError
from schemas.hl7 import (
    Delimiters,
    _guard,
    iter_hl7_file,
    looks_like_hl7,
    parse_hl7,
    split_messages,
    unescape,
)
from schemas.models import Address, NoteIn, PersonName

HERE = Path(__file__).resolve()
FIXTURE = DATA / "hl7" / "mdm_t02_discharge.hl7"
SHARED_HL7 = SHARED / "data" / "hl7"

#: Everything the fixture's PID / NK1 carry: none of it may appear in an error.
IDENTIFIERS = ("Quillon", "Marisol", "Ardith", "Fairweather", "Tobias", "MRN4471902", "998-31-4421",
               "ALT-55120", "OLD-30917", "ACCT-2024-88131", "VT-D4410821", "19720415", "Larkspur",
               "Tillbrook", "05099", "555-0143", "5550178", "5550199", "marisol.q@example.org")

EXPECTED_TEXT = (
    "DISCHARGE SUMMARY\n"
    "Patient: Marisol Quillon, MRN MRN4471902, DOB 04/15/1972.\n"
    "\n"
    "Admitted 03/10/2024 for chest pain&SOB; troponin neg x2.\n"
    "Seen by Dr. Okonkwo-Reyes | cardiology; Bruce protocol ^ stage 3.\n"
    "Follow-up with Dr. Vantassel in 2 weeks.\n"
    "Plan:\n"
    "1. Aspirin 81 mg daily\n"
    "2. Call (802) 555-0143 if symptoms recur.\n"
    "Low-salt diet, no caf\u00e9 au lait \\ no alcohol.\n"
    "Spouse Tobias Quillon at bedside, agrees with plan.\n"
    "Dictated by Sage Pemberton; signed electronically."
)

#: ORU^R01 samples that carry only coded / numeric results: no narrative, so E210 (dead-lettered).
NO_NARRATIVE = {
    "Test__Automated__002_Staging_ORU_O01_short_linked_to_001_ORM.hl7",
    "Test__Automated__004_CA_ORU_R01_leading_zeroes.hl7",
    "Test__Automated__005_CA_ORU_R01_no_leading_zeroes.hl7",
    "Test__Automated__006_CA_ORU_R01_LOINC.hl7",
    "Test__Automated__008_ORU_R01_micro_character_encoding.hl7",
    "Test__e2e__results__002_1_ORU_R01_short_linked_to_003_ORM_O01_short.hl7",
}


def fixture_text() -> str:
    return FIXTURE.read_text(encoding="utf-8")


def with_cr(text: str) -> str:
    return "\r".join(text.splitlines())


def replace_segment(text: str, prefix: str, new: str | None) -> str:
    """The fixture with the segment starting with ``prefix`` replaced (or removed when ``new`` is None)."""
    lines = [(new if ln.startswith(prefix) else ln) for ln in text.splitlines()]
    return "\r".join(ln for ln in lines if ln is not None)


def naive_fields(message: str, segment: str) -> list[str] | None:
    """Independent of the code under test: the first ``segment`` split on "|"."""
    for line in re.split(r"\r\n|\r|\n", message):
        if line.startswith(segment + "|"):
            return line.split("|")
    return None


def _sample_files(types: tuple[str, ...]) -> list[Path]:
    if not SHARED_HL7.is_dir():
        return []
    out = []
    for path in sorted(SHARED_HL7.rglob("*.hl7")):
        msh = naive_fields(path.read_text(encoding="utf-8", errors="replace"), "MSH")
        if msh is not None and len(msh) > 8 and msh[8].startswith(types):
            out.append(path)
    return out


def assert_no_identifiers(err: BaseException) -> None:
    blob = str(err) + repr(err) + repr(err.args)
    leaked = [i for i in IDENTIFIERS if i in blob]
    assert not leaked, f"identifiers in error text: {leaked}"
    assert err.__cause__ is None and err.__context__ is None


@pytest.fixture(scope="module")
def mdm() -> NoteIn:
    return parse_hl7(fixture_text())


# --- shared samples ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", _sample_files(("ORU^R01", "MDM^T02")), ids=lambda p: p.name[:60])
def test_when_sample_is_oru_or_mdm_then_it_maps_with_patient_names_or_has_no_narrative(
    path: Path, shared_dir: Path
) -> None:
    messages = list(iter_hl7_file(path))
    assert len(messages) == 1
    if path.name in NO_NARRATIVE:
        with pytest.raises(HL7ParseError) as exc:
            parse_hl7(messages[0], note_id=path.stem)
        assert exc.value.code == "E210"
        return
    note = parse_hl7(messages[0], note_id=path.stem)
    assert note.source_format == "hl7" and note.message_type in ("ORU^R01", "MDM^T02")
    assert note.text.strip() and note.text == note.text.strip("\n")
    pid = naive_fields(messages[0], "PID")
    assert pid is not None and note.patient is not None
    first = pid[5].split("~")[0].split("^")
    family, given = first[0].split("&")[0], first[1] if len(first) > 1 else ""
    assert any(n.family == (family or None) and n.given == (given or None) for n in note.patient.names)


@pytest.mark.parametrize("name, code", [
    ("sample_unix.hl7", "E203"),  # MSH-2 is "^~\\&": the escape and sub-component characters clash
    ("Natus__001_Natus_ACK.hl7", "E210"),
    ("Other__001_ADT_A01.hl7", "E210"),
    ("Test__Message__msh_present_but_missing_msh-2.hl7", "E203"),
    ("Test__Message__msh_present_but_missing_msh-9.hl7", "E204"),
    ("Test__Message__msh_present_but_missing_all_fields.hl7", "E203"),
    ("Test__Message__empty.hl7", "E202"),
    ("Test__Automated__011_ORM_R01_nte_segment_mapping.hl7", None),  # ORM with NTE narrative
    ("Test__Results__005_AL_ORU_R01_NBS_Simplified_0_initial_message.hl7", None),  # FHS/BHS envelope
])
def test_when_sample_is_other_or_broken_then_outcome_is_as_documented(
    name: str, code: str | None, shared_dir: Path
) -> None:
    path = next(SHARED_HL7.rglob(name))
    try:
        notes = [parse_hl7(m) for m in iter_hl7_file(path)]
    except DeidError as err:
        assert err.code == code
        return
    assert code is None and len(notes) == 1 and notes[0].text


# --- the synthetic MDM^T02 -----------------------------------------------------------------------------


def test_when_mdm_has_multiline_tx_then_text_is_joined_in_order_with_escapes_decoded(mdm: NoteIn) -> None:
    assert mdm.text == EXPECTED_TEXT


def test_when_mdm_is_mapped_then_header_fields_come_from_msh_and_txa(mdm: NoteIn) -> None:
    assert mdm.note_id == "DOC-NBM-0000731"  # TXA-12 wins over MSH-10 and the caller's id
    assert mdm.message_type == "MDM^T02"
    assert mdm.source_format == "hl7"
    assert mdm.facility is not None
    assert (mdm.facility.name, mdm.facility.id) == ("NORTHBRIDGE MEM", "2.16.840.1.999.1")


def test_when_mdm_is_mapped_then_pid_fills_the_patient_block(mdm: NoteIn) -> None:
    p = mdm.patient
    assert p is not None
    assert p.mrn == "MRN4471902" and p.id == "MRN4471902" and p.key == "MRN4471902"
    assert p.ids == ("MRN4471902", "998-31-4421", "ALT-55120", "OLD-30917", "ACCT-2024-88131", "VT-D4410821")
    assert p.names == (
        PersonName(family="Quillon", given="Marisol", middle="Ardith", prefix="Ms."),
        PersonName(family="Quillon-Fairweather", given="Mari"),
    )
    assert p.birth_date == "19720415"
    assert p.addresses == (Address(street="418 Larkspur Hollow Rd", other="Apt 3B", city="Tillbrook", state="VT",
                                   zip="05099", country="USA", county="Orrin County"),)
    assert p.phones == ("(802) 555-0143", "(802) 5550178 x12")
    assert p.emails == ("marisol.q@example.org",)
    assert p.ssn == "998-31-4421"
    assert p.sex == "F"  # PID-8: a surrogate for her given name stays a woman's name


def test_when_mdm_has_nk1_then_relatives_carry_name_relationship_address_phones(mdm: NoteIn) -> None:
    rels = mdm.patient.relatives
    assert [(r.name, r.relationship) for r in rels] == [
        (PersonName(family="Fairweather"), "mother (maiden name)"),  # PID-6
        (PersonName(family="Quillon", given="Tobias", middle="R"), "Spouse"),
    ]
    spouse = rels[1]
    assert spouse.phones == ("(802) 5550199", "(802) 555-0111")
    assert spouse.addresses == (Address(street="418 Larkspur Hollow Rd", city="Tillbrook", state="VT", zip="05099"),)


def test_when_mdm_has_pv1_and_txa_then_providers_carry_roles(mdm: NoteIn) -> None:
    got = [(p.role, p.id, p.name.family if p.name else None) for p in mdm.providers]
    assert got == [
        ("attending", "4410", "Okonkwo-Reyes"),  # leading blank of PV1-7 stripped
        ("referring", "5520", "Vantassel"),
        ("admitting", "6630", "Lindqvist"),
        ("primary activity provider", "4410", "Okonkwo-Reyes"),
        ("originator", "7781", "Pemberton"),
        ("transcriptionist", "8812", "Halloran"),
        ("authenticator", "4410", "Okonkwo-Reyes"),
        ("distributed copies", "5520", "Vantassel"),
    ]
    assert mdm.providers[0].name == PersonName(family="Okonkwo-Reyes", given="Adaeze", prefix="Dr.")


@pytest.mark.parametrize("transform", [
    pytest.param(lambda t: t.replace("\n", "\r"), id="cr"),
    pytest.param(lambda t: t.replace("\n", "\r\n"), id="crlf"),
    pytest.param(lambda t: "\x0b" + t.replace("\n", "\r") + "\x1c\r", id="mllp"),
    pytest.param(lambda t: "\ufeff\n  " + t + "\n\n", id="bom-and-blank-lines"),
    pytest.param(lambda t: t.encode("utf-8"), id="utf8-bytes"),
    pytest.param(lambda t: ("FHS|^~\\&\nBHS|^~\\&\n" + t + "\nBTS|1\nFTS|1").encode(), id="batch-envelope"),
])
def test_when_framing_or_line_endings_differ_then_the_note_is_the_same(
    transform: Callable[[str], str | bytes], mdm: NoteIn
) -> None:
    assert parse_hl7(transform(fixture_text())) == mdm


def test_when_latin1_bytes_declare_msh18_then_they_decode() -> None:
    text = with_cr(fixture_text()).replace("UNICODE UTF-8", "8859/1").replace("Sage Pemberton", "Jos\u00e9 Pe\u00f1a")
    note = parse_hl7(text.encode("latin-1"))
    assert note.text.endswith("Dictated by Jos\u00e9 Pe\u00f1a; signed electronically.")


@pytest.mark.parametrize("txa, msh10, given, expected", [
    ("TXA|1|DS|TX|||||||||DOC-9^NBM", "CTRL-1", "given-1", "DOC-9"),
    (None, "CTRL-1", "given-1", "CTRL-1"),
    (None, "", "given-1", "given-1"),
])
def test_when_ids_are_present_or_absent_then_note_id_falls_back_in_order(
    txa: str | None, msh10: str, given: str, expected: str
) -> None:
    text = replace_segment(fixture_text(), "TXA|", txa).replace("CTRL-20240314-0001", msh10)
    assert parse_hl7(text, note_id=given).note_id == expected


def test_when_message_has_no_pid_then_patient_is_none_and_msh4_empty_falls_back_to_pv1_3() -> None:
    text = replace_segment(fixture_text(), "PID|", None)
    text = replace_segment(text, "NK1|", None).replace("NORTHBRIDGE MEM^2.16.840.1.999.1^ISO", "")
    note = parse_hl7(text)
    assert note.patient is None
    assert note.facility is not None and (note.facility.name, note.facility.id) == ("NBM Main", "2.16.840.1.999.2")


def test_when_tx_value_has_raw_line_breaks_then_they_continue_the_segment() -> None:
    text = with_cr(fixture_text()).replace("DISCHARGE SUMMARY", "DISCHARGE SUMMARY\nsecond line\n\nafter a blank")
    note = parse_hl7(text)
    assert note.text.startswith("DISCHARGE SUMMARY\nsecond line\n\nafter a blank\nPatient: ")


@pytest.mark.parametrize("value_type, value, narrative", [
    ("ST", "Negative", False),
    ("ST", "12345678901234567890123456", False),  # long but no letter
    ("ST", "Specimen hemolyzed; please redraw", True),
    ("ST", "exactly twenty chars", False),  # 20 characters: not over the threshold
    ("TX", "Neg", True),
    ("FT", "Neg", True),
    ("NM", "Specimen hemolyzed; please redraw", False),
    ("CWE", "260373001^Detected^SCT", False),
])
def test_when_obx_value_type_varies_then_narrative_rule_applies(value_type: str, value: str, narrative: bool) -> None:
    msg = f"MSH|^~\\&|LAB|FAC|||20240101||ORU^R01|C1|P|2.5.1\rOBX|1|{value_type}|X^Y^L|1|{value}||||||F"
    if narrative:
        assert parse_hl7(msg).text == value
    else:
        with pytest.raises(HL7ParseError) as exc:
            parse_hl7(msg)
        assert exc.value.code == "E210"


# --- malformed input -----------------------------------------------------------------------------------

FIX = with_cr(fixture_text())
MSH = FIX.split("\r", 1)[0]


@pytest.mark.parametrize("payload, code, segment, field", [
    pytest.param(MSH[:60] + "\r" + FIX.split("\r", 1)[1], "E204", "MSH", 9, id="truncated-msh"),
    pytest.param("Marisol Quillon MRN4471902 seen 04/15/1972 at 418 Larkspur Hollow Rd", "E201", None, None,
                 id="prose"),
    pytest.param('{"note_id": "n1", "text": "Marisol Quillon MRN4471902"}', "E201", None, None, id="json"),
    pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + FIX.encode()[:200], "E101", None, None, id="binary"),
    pytest.param(FIX.replace("Marisol^Ardith", "Marisol\x00^Ardith"), "E206", "PID", 5, id="nul-in-pid5"),
    pytest.param(FIX.replace("UNICODE UTF-8", "").replace("Quillon", "Quill\u00f3n").encode("latin-1"),
                 "E101", None, None, id="latin1-undeclared"),
    pytest.param(FIX.split("\r", 1)[1], "E202", None, None, id="no-msh"),
    pytest.param(FIX.replace("MSH|^~\\&|", "MSH|^~^&|", 1), "E203", "MSH", 2, id="repeated-delimiter"),
    pytest.param(FIX.replace("MSH|^~\\&|", "MSHA^~\\&A", 1), "E201", None, None, id="alnum-separator"),
    pytest.param(FIX.replace("|MDM^T02^MDM_T02|", "||", 1), "E204", "MSH", 9, id="no-message-type"),
    pytest.param(FIX + "\r" + FIX, "E205", None, None, id="two-messages"),
    pytest.param("\r".join(s for s in FIX.split("\r") if not s.startswith(("OBX|", "NTE|"))), "E210", None, None,
                 id="no-narrative"),
    pytest.param(replace_segment(FIX, "TXA|", None).replace("CTRL-20240314-0001", ""), "E207", "MSH", 10,
                 id="no-note-id"),
])
def test_when_message_is_malformed_then_coded_error_names_place_not_content(
    payload: str | bytes, code: str, segment: str | None, field: int | None
) -> None:
    with pytest.raises(InputError) as exc:
        parse_hl7(payload)
    err = exc.value
    assert err.code == code
    if segment is not None:
        assert isinstance(err, HL7ParseError) and (err.segment, err.field) == (segment, field)
        assert f"segment {segment}" in str(err) and f"field {field}" in str(err)
    assert_no_identifiers(err)


def test_when_a_field_read_raises_then_error_is_e206_without_the_original_text() -> None:
    def read() -> str:
        raise ValueError("Marisol Quillon MRN4471902")

    with pytest.raises(HL7ParseError) as exc:
        _guard("PID", 5, read)
    assert exc.value.code == "E206" and (exc.value.segment, exc.value.field) == ("PID", 5)
    assert "ValueError" in str(exc.value)
    assert_no_identifiers(exc.value)


# --- detection, file splitting, escapes ----------------------------------------------------------------


@pytest.mark.parametrize("payload, expected", [
    ("MSH|^~\\&|A", True),
    (b"MSH|^~\\&|A", True),
    (b"\xef\xbb\xbf\x0b\r\nMSH|^~\\&|A", True),
    ("\ufeff  MSH|^~\\&|A", True),
    ("FHS|^~\\&|A", True),
    ('{"note_id": "x", "text": "MSH"}', False),
    ("MSHA|", False),
    ("PID|1||123", False),
    ("", False),
    (b"\x00\x01MSH|", False),
])
def test_when_payload_is_checked_then_looks_like_hl7_answers(payload: str | bytes, expected: bool) -> None:
    assert looks_like_hl7(payload) is expected


@pytest.mark.parametrize("sep", ["\r", "\n", "\r\n"])
def test_when_file_holds_several_messages_then_each_is_yielded_with_cr_separators(sep: str, tmp_path: Path) -> None:
    one = sep.join(fixture_text().splitlines())
    path = tmp_path / "batch.hl7"
    path.write_bytes(("FHS|^~\\&" + sep + one + sep + sep + one.replace("CTRL-20240314-0001", "CTRL-2") + sep
                      + "FTS|2" + sep).encode())
    messages = list(iter_hl7_file(path))
    assert len(messages) == 2
    assert all(m.startswith("MSH|") and "\n" not in m and "FTS" not in m for m in messages)
    assert [parse_hl7(m).text for m in messages] == [EXPECTED_TEXT, EXPECTED_TEXT]


@pytest.mark.parametrize("content, code", [(b"", "E202"), (b"\r\n \n", "E202"), (b"FHS|^~\\&\rFTS|0", "E202"),
                                           (b"MSH|^~\\&|A|\xff\xfe", "E101")])
def test_when_file_has_no_message_or_bad_bytes_then_it_raises(content: bytes, code: str, tmp_path: Path) -> None:
    path = tmp_path / "x.hl7"
    path.write_bytes(content)
    with pytest.raises(InputError) as exc:
        list(iter_hl7_file(path))
    assert exc.value.code == code


def test_when_text_precedes_first_msh_then_it_is_its_own_item_and_fails_alone() -> None:
    items = split_messages("stray note line\n" + fixture_text())
    assert len(items) == 2
    with pytest.raises(HL7ParseError) as exc:
        parse_hl7(items[0])
    assert exc.value.code == "E201"
    assert parse_hl7(items[1]).text == EXPECTED_TEXT


@pytest.mark.parametrize("raw, expected", [
    ("a\\F\\b\\S\\c\\T\\d\\R\\e\\E\\f", "a|b^c&d~e\\f"),
    ("one\\.br\\two", "one\ntwo"),
    ("one\\.sp2\\two", "one\n\ntwo"),
    ("one\\.sk3\\two", "one   two"),
    ("\\.fi\\one\\.nf\\", "one"),
    ("line\\X0D0A\\next", "line\r\nnext"),
    ("caf\\XC3A9\\", "caf\u00e9"),
    ("\\H\\bold\\N\\ text", "bold text"),
    ("keep \\Zlocal\\ as is", "keep \\Zlocal\\ as is"),
    ("bad hex \\XZZ\\ kept", "bad hex \\XZZ\\ kept"),
    ("C:\\temp unterminated", "C:\\temp unterminated"),
    ("no escapes at all", "no escapes at all"),
])
def test_when_value_has_escapes_then_unescape_decodes_them(raw: str, expected: str) -> None:
    assert unescape(raw) == expected


def test_when_delimiters_are_custom_then_unescape_uses_them() -> None:
    d = Delimiters(field="#", component="!", repetition="$", escape="/", subcomponent="%")
    assert unescape("a/F/b/S/c/E/d/.br/e", d) == "a#b!c/d\ne"


def test_when_message_type_is_free_text_then_the_no_narrative_error_does_not_echo_it() -> None:
    msg = "MSH|^~\\&|LAB|FAC|||20240101||Marisol Quillon|C1|P|2.5.1\rPID|1||MRN4471902^^^H^MR||Quillon^Marisol"
    with pytest.raises(HL7ParseError) as exc:
        parse_hl7(msg)
    assert exc.value.code == "E210"
    assert_no_identifiers(exc.value)


# --- the hl7 package: structure, delimiters, logging ---------------------------------------------------


def test_when_delimiters_are_custom_then_hl7_package_structure_maps_the_same_note(mdm: NoteIn) -> None:
    table = str.maketrans("|^~\\&", "#!$?%")
    note = parse_hl7(fixture_text().translate(table))
    assert note.text == EXPECTED_TEXT.translate(table)
    assert (note.patient, note.providers, note.facility, note.note_id) == (
        mdm.patient, mdm.providers, mdm.facility, mdm.note_id)


#: Escape sequences that hl7.util.unescape logs with the whole field: empty, unknown, bad hex, charset
#: switches (and ``\.spx\``, on which it raises a ValueError that quotes the value).
LOGGED_ESCAPES = "\\\\ \\Zq\\ \\XZZ\\ \\C2842\\ \\M2442\\"
BAD_ESCAPES = LOGGED_ESCAPES + " \\.spx\\"


def test_when_message_has_bad_escapes_then_no_log_record_carries_its_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    text = (with_cr(fixture_text())
            .replace("Quillon^Marisol^Ardith", f"Quillon {BAD_ESCAPES}^Marisol^Ardith")
            .replace("DISCHARGE SUMMARY", f"DISCHARGE SUMMARY for Marisol Quillon MRN4471902 {BAD_ESCAPES}")
            .replace("Dictated by Sage Pemberton;", f"Dictated by Sage Pemberton {BAD_ESCAPES} for Quillon;"))
    with caplog.at_level(logging.DEBUG):
        note = parse_hl7(text)
    assert note.text.startswith("DISCHARGE SUMMARY for Marisol Quillon MRN4471902 \\")
    assert any(r.name == "schemas.hl7" for r in caplog.records)  # DEBUG records are being captured
    blob = caplog.text + "".join(f"{r.getMessage()}{r.args!r}{r.exc_text}" for r in caplog.records)
    assert not [i for i in IDENTIFIERS if i in blob]


def test_when_hl7_package_unescape_logs_then_the_record_is_withheld(caplog: pytest.LogCaptureFixture) -> None:
    import schemas.hl7  # noqa: F401  (importing it guards the hl7 package's loggers)

    message = hl7.parse(with_cr(fixture_text()))
    with caplog.at_level(logging.DEBUG):
        message.unescape(f"Marisol Quillon MRN4471902 {LOGGED_ESCAPES}")
    assert len(caplog.records) >= 4  # the package did log: the guard, not silence, keeps the content out
    blob = caplog.text + "".join(f"{r.getMessage()}{r.args!r}{r.exc_info!r}" for r in caplog.records)
    assert not [i for i in IDENTIFIERS if i in blob]


# --- readable narrative (issue 27) ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "text"), [
    ("LA25402-1^Heel Stick^LN", "Heel Stick"),  # a coded answer: its display text
    ("HOSPITALIZED^Still In Hospital^99TNH", "Still In Hospital"),  # a local code system
    ("5901 Lakeside Avenue^^Richmond^CA^94804", "5901 Lakeside Avenue, Richmond, CA, 94804"),
    ("BATES^JOHN", "BATES, JOHN"),
    ("SMITH^JOHN^A", "SMITH, JOHN, A"),  # a name, not a code: nothing left out
    ("Seen by Dr. Okonkwo \\S\\ stage 3", "Seen by Dr. Okonkwo ^ stage 3"),  # an escaped ^ is text
])
def test_when_a_narrative_value_has_components_then_they_are_joined_as_readable_text(value: str, text: str) -> None:
    msg = f"MSH|^~\\&|LAB|FAC|||20240101||ORU^R01|C1|P|2.5.1\rOBX|1|TX|X^Y^L|1|{value}||||||F"
    assert parse_hl7(msg).text == text


def test_when_the_shared_samples_are_mapped_then_no_narrative_shows_component_separators(shared_dir: Path) -> None:
    from schemas.readers import iter_inputs

    notes = [n for n in iter_inputs(shared_dir / "data" / "hl7") if isinstance(n, NoteIn)]
    assert len(notes) > 30
    assert [n.note_id for n in notes if "^" in n.text] == []
    first = next(n for n in notes if n.note_id == "121121")  # the demo's first note: a coded ST and an address
    assert first.text == "5901 Lakeside Avenue, Richmond, CA, 94804"
