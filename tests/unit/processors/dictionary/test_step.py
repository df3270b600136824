"""processors.dictionary.step (message identifiers + institution lists) and dictionaries.institution (builder),
on synthetic notes with the real vocabularies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from paths import DATA

from dictionaries import vocab
from dictionaries.institution import InstitutionDictionary, build_institution_dictionary
from dictionaries.message import find_message_identifiers
from processors.dictionary.step import DictionaryDetector
from processors.pipeline import BuildContext, Note, build_processor
from processors.spans import SOURCE_THRESHOLDS
from schemas.errors import ConfigError, InputError
from schemas.models import NoteIn, Span

DATA = DATA / "dictionaries"

PATIENT: dict[str, Any] = {
    "id": "P77001",
    "mrn": "MRN-0098765",
    "ssn": "123-45-6789",
    "names": [{"family": "Smith", "given": "John", "middle": "Quincy", "nicknames": ["Jack"]}],
    "birth_date": "19800101",
    "phones": ["(555) 123-4567"],
    "emails": ["john.smith@example.com"],
    "addresses": [{"street": "12 Oak Street", "city": "Springfield", "zip": "62704"}],
    "relatives": [{"name": {"family": "Okafor", "given": "Chidi"}, "relationship": "brother",
                   "phones": ["555-987-6543"]}],
}
PROVIDERS = [{"id": "NPI998877", "name": {"family": "Kowalski", "given": "Anna"}}]
FACILITY = {"name": "Riverside Heights Hospital"}


@pytest.fixture(scope="module")
def cache(cache_dir: Path) -> Path:
    """The run's cache folder (DEID_CACHE_DIR, see tests/conftest.py)."""
    return cache_dir


@pytest.fixture(scope="module")
def detector(cache: Path) -> DictionaryDetector:
    proc = build_processor("dictionary", {}, BuildContext(cache_dir=cache))
    assert isinstance(proc, DictionaryDetector)
    return proc


def _note(text: str, patient: dict[str, Any] | None = PATIENT) -> NoteIn:
    return NoteIn(note_id="n1", text=text, patient=patient, providers=PROVIDERS if patient else (),
                  facility=FACILITY if patient else None)


def _found(text: str, spans: list[Span]) -> dict[str, set[tuple[str, str | None]]]:
    out: dict[str, set[tuple[str, str | None]]] = {}
    for s in spans:
        out.setdefault(text[s.start:s.end], set()).add((str(s.label), s.subtype))
    return out


# --- (a) message identifiers ---------------------------------------------------------------------------

MESSAGE_CASES = [
    # (case, text, expected [(surface, label, subtype)], must not be found [surface])
    ("exact_title", "John Smith was seen today.", [("John", "NAME", "PATIENT"), ("Smith", "NAME", "PATIENT")], []),
    ("all_caps", "PT JOHN SMITH ADMITTED.", [("JOHN", "NAME", "PATIENT"), ("SMITH", "NAME", "PATIENT")], []),
    ("lower_full_name", "pt john smith 44M", [("john", "NAME", "PATIENT"), ("smith", "NAME", "PATIENT")], []),
    ("middle_and_nickname", "Quincy (goes by Jack) is here.",
     [("Quincy", "NAME", "PATIENT"), ("Jack", "NAME", "PATIENT")], []),
    ("fuzzy_typos", "Jonh Smyth called.", [("Jonh", "NAME", "PATIENT"), ("Smyth", "NAME", "PATIENT")], []),
    ("fuzzy_not_longer_name", "Mr. Johnson and Smithson visited.", [], ["Johnson", "Smithson"]),
    ("initial_and_surname", "J. Smith agreed to the plan.", [("J", "NAME", "PATIENT"), ("Smith", "NAME", "PATIENT")],
     []),
    ("initials_after_cue", "Pt initials: J.S. today.", [("J.S", "NAME", "PATIENT")], []),
    ("initials_alone_ignored", "JS was stable, QS dosing.", [], ["JS"]),
    ("phone_formats", "Call (555) 123-4567, 555.123.4567, 5551234567 or +1 555 123 4567.",
     [("(555) 123-4567", "PHONE", None), ("555.123.4567", "PHONE", None), ("5551234567", "PHONE", None),
      ("+1 555 123 4567", "PHONE", None)], []),
    ("phone_local_and_wrong", "Local 123-4567; other 555-123-4568.", [("123-4567", "PHONE", None)],
     ["555-123-4568"]),
    ("ssn_with_and_without_dashes", "SSN 123-45-6789 or 123456789.",
     [("123-45-6789", "ID", "SSN"), ("123456789", "ID", "SSN")], ["123-45"]),
    ("mrn_variants", "MRN-0098765 and MRN 0098765 and 0098765.",
     [("MRN-0098765", "ID", "MRN"), ("MRN 0098765", "ID", "MRN"), ("0098765", "ID", "MRN")], []),
    ("dob_formats",
     "DOB 01/01/1980; 1/1/80; 1980-01-01; 19800101; Jan 1, 1980; January 1st, 1980; 01-JAN-1980; 1 Jan 1980.",
     [("01/01/1980", "DATE", "BIRTHDATE"), ("1/1/80", "DATE", "BIRTHDATE"), ("1980-01-01", "DATE", "BIRTHDATE"),
      ("19800101", "DATE", "BIRTHDATE"), ("Jan 1, 1980", "DATE", "BIRTHDATE"),
      ("January 1st, 1980", "DATE", "BIRTHDATE"), ("01-JAN-1980", "DATE", "BIRTHDATE"),
      ("1 Jan 1980", "DATE", "BIRTHDATE")], []),
    ("other_dates_not_dob", "Seen 01/02/1980 and 1/1/81.", [], ["01/02/1980", "1/1/81"]),
    ("email_any_case", "Mail JOHN.SMITH@EXAMPLE.COM today.", [("JOHN.SMITH@EXAMPLE.COM", "EMAIL", None)],
     ["JOHN", "SMITH"]),
    ("address", "Lives at 12 Oak St., Springfield 62704-1234.",
     [("12 Oak St.", "LOCATION", "STREET"), ("Springfield", "LOCATION", "CITY"), ("62704-1234", "LOCATION", "ZIP")],
     []),
    ("relative", "Brother Chidi Okafor at 555-987-6543.",
     [("Chidi", "NAME", "RELATIVE"), ("Okafor", "NAME", "RELATIVE"), ("555-987-6543", "PHONE", None)], []),
    ("provider_and_facility", "Seen by Dr. Kowalski at Riverside Heights Hospital.",
     [("Kowalski", "NAME", "PROVIDER"), ("Riverside Heights Hospital", "ORGANIZATION", "HOSPITAL")], []),
]


@pytest.mark.parametrize(("case", "text", "expected", "absent"), MESSAGE_CASES, ids=[c[0] for c in MESSAGE_CASES])
def test_when_message_identifier_in_text_then_found(
    cache: Path, case: str, text: str, expected: list[tuple[str, str, str | None]], absent: list[str]
) -> None:
    spans = find_message_identifiers(text, _note(text))
    assert all(s.source == "message" and s.score == 1.0 for s in spans)
    found = _found(text, spans)
    for surface, label, subtype in expected:
        assert (label, subtype) in found.get(surface, set()), (surface, found)
    for surface in absent:
        assert surface not in found, (surface, found)


def test_when_fuzzy_off_then_typos_not_matched(cache: Path) -> None:
    text = "Jonh Smyth called."
    assert find_message_identifiers(text, _note(text), fuzzy=False) == []


def test_when_threshold_stricter_then_weaker_typo_dropped(cache: Path) -> None:
    text = "Jonh Smyth called."  # Jaro-Winkler: Jonh/John 93, Smyth/Smith 89
    found = _found(text, find_message_identifiers(text, _note(text), threshold=92))
    assert "Jonh" in found and "Smyth" not in found


WILL = {"names": [{"family": "Smith", "given": "Will"}], "mrn": "44556677"}
COMMON_NAME_CASES = [
    ("full_name", "Will Smith was admitted.", ["Will", "Smith"], []),
    ("title_case_mid_sentence", "Spoke with Will about the plan.", ["Will"], []),
    ("sentence_start_verb", "Will follow up in 2 weeks.", [], ["Will"]),
    ("lower_case_word", "We will see him.", [], ["will"]),
    ("caps_line_word", "PT STABLE. WILL CALL BACK IN AM. NO DISTRESS.", [], ["WILL"]),
    ("caps_line_full_name", "PT WILL SMITH STABLE OVERNIGHT. NO DISTRESS NOTED.", ["WILL", "SMITH"], []),
]


@pytest.mark.parametrize(("case", "text", "names", "absent"), COMMON_NAME_CASES, ids=[c[0] for c in COMMON_NAME_CASES])
def test_when_patient_named_with_common_word_then_only_name_uses_tagged(
    cache: Path, case: str, text: str, names: list[str], absent: list[str]
) -> None:
    found = _found(text, find_message_identifiers(text, _note(text, WILL)))
    for n in names:
        assert ("NAME", "PATIENT") in found.get(n, set()), (n, found)
    for a in absent:
        assert a not in found, (a, found)


JONES = {"names": [{"family": "Jones", "given": "Bryce"}],
         "relatives": [{"name": {"family": "Wood", "given": "Lois"}, "relationship": "wife"}]}
WOOD_MD = [{"name": {"family": "Wood", "given": "Lois", "middle": "W"}}]
WOOD = {"names": [{"family": "Wood", "given": "Lois"}]}
CAPS_COMMON_SURNAME_CASES = [
    # (case, text, patient, providers, expected [(surface, subtype)], absent): "Jones" and "Wood" are common words
    ("middle_initial", "PT BRYCE Z. JONES ADMITTED OVERNIGHT. NO DISTRESS.", JONES, [],
     [("BRYCE", "PATIENT"), ("JONES", "PATIENT")], []),
    ("title_and_middle_initial", "SEEN BY DR LOIS W. WOOD TODAY. PLAN REVIEWED.", {"names": JONES["names"]}, WOOD_MD,
     [("LOIS", "PROVIDER"), ("WOOD", "PROVIDER")], []),
    ("title_then_initial", "PT RESTING. SEEN BY DR W. WOOD TODAY.", {"names": JONES["names"]}, WOOD_MD,
     [("WOOD", "PROVIDER")], []),
    ("relationship_word", "PT RESTING. WIFE WOOD AT BEDSIDE.", JONES, [], [("WOOD", "RELATIVE")], []),
    ("common_word_alone", "WOOD CHIPS IN WOUND, IRRIGATED AND DRESSED.", WOOD, [], [], ["WOOD"]),
    ("one_letter_word_before", "FOUND A WOOD SPLINTER IN WOUND, REMOVED.", WOOD, [], [], ["WOOD", "A"]),
    ("other_part_not_adjacent", "LOIS RESTING. WOOD CHIPS REMOVED FROM WOUND.", WOOD, [], [("LOIS", "PATIENT")],
     ["WOOD"]),
]


@pytest.mark.parametrize(("case", "text", "patient", "providers", "expected", "absent"), CAPS_COMMON_SURNAME_CASES,
                         ids=[c[0] for c in CAPS_COMMON_SURNAME_CASES])
def test_when_common_word_surname_in_caps_line_then_tagged_only_next_to_name_or_title(
    cache: Path, case: str, text: str, patient: dict[str, Any], providers: list[dict[str, Any]],
    expected: list[tuple[str, str]], absent: list[str],
) -> None:
    note = NoteIn(note_id="n1", text=text, patient=patient, providers=providers)
    found = _found(text, find_message_identifiers(text, note))
    for surface, subtype in expected:
        assert ("NAME", subtype) in found.get(surface, set()), (surface, found)
    for surface in absent:
        assert surface not in found, (surface, found)


def test_when_note_has_no_message_block_then_no_message_spans(cache: Path) -> None:
    text = "John Smith 555-123-4567"
    assert find_message_identifiers(text, _note(text, None)) == []


# --- (b) institution lists ---------------------------------------------------------------------------------

LIST_CASES = [
    # (case, text, expected [(surface, label)], absent surfaces)
    ("rare_surname_mid_sentence", "Discussed with Kowalski and the team.", [("Kowalski", "NAME")], []),
    ("word_boundary", "Annual visit; Annabelle tolerated it.", [], ["Ann", "Annual"]),
    ("title_case_name", "Seen with Mark yesterday.", [("Mark", "NAME")], []),
    ("lower_case_word", "Please mark the site.", [], ["mark"]),
    ("common_word_alone", "Discussed with Will today; Green stool noted.", [], ["Will", "Green"]),
    ("common_word_after_title", "Mr. Green and Dr. Will Brown came.", [("Green", "NAME"), ("Will", "NAME"),
                                                                       ("Brown", "NAME")], []),
    ("first_last_pair", "Spoke to John Smith.", [("John", "NAME"), ("Smith", "NAME")], []),
    ("last_comma_first", "Kowalski, Jane reviewed.", [("Kowalski", "NAME"), ("Jane", "NAME")], []),
    ("family_cue", "His wife Mary called.", [("Mary", "NAME")], []),
    ("credential", "Signed: Xylander, PA-C", [("Xylander", "NAME")], []),
    ("apostrophe_surname", "Discussed with O'Brien today.", [("O'Brien", "NAME")], []),
    ("hospital", "Transferred to Sibley Memorial Hospital overnight.",
     [("Sibley Memorial Hospital", "ORGANIZATION")], []),
    ("hospital_short_form", "Records from St. Mary's arrived.", [("St. Mary's", "ORGANIZATION")], []),
    ("generic_phrase", "Follow up with Primary Care next week.", [], ["Primary Care"]),
    ("address_city_state", "Lives in Dothan, AL 36301.", [("Dothan", "LOCATION"), ("AL", "LOCATION")], []),
    ("credential_not_state", "Jane Kowalski, MD saw her.", [("Kowalski", "NAME")], ["MD"]),
    ("caps_cue", "FAMILY (WIFE MARY) CALLED. ROSE TO 120S W/ ACTIVITY.", [("MARY", "NAME")], ["ROSE"]),
    ("caps_abbreviation", "ASA 81 MG DAILY, TED HOSE ON, PEG FLUSHED.", [], ["ASA", "TED", "PEG"]),
    ("caps_title_like_abbreviation", "HX OF MS FLARE. SEEN BY DR OKAFOR.", [("OKAFOR", "NAME")], ["FLARE"]),
    ("unlisted_org_pattern", "Referred to Bayview Gastroenterology Specialists.",
     [("Bayview Gastroenterology Specialists", "ORGANIZATION")], []),
    ("country", "Recently returned from Vietnam.", [("Vietnam", "LOCATION")], []),
    ("inside_email", "Write to jane.kowalski@clinic.org today.", [], ["jane", "kowalski"]),
]


@pytest.mark.parametrize(("case", "text", "expected", "absent"), LIST_CASES, ids=[c[0] for c in LIST_CASES])
def test_when_institution_list_entry_in_text_then_tagged_on_word_boundaries(
    detector: DictionaryDetector, case: str, text: str, expected: list[tuple[str, str]], absent: list[str]
) -> None:
    spans = [s for s in detector.detect(_note(text, None)) if s.score >= 0.5]
    assert all(s.source == "dictionary" for s in spans)
    found = _found(text, spans)
    for surface, label in expected:
        assert any(lab == label for lab, _ in found.get(surface, set())), (surface, found)
    for surface in absent:
        assert surface not in found, (surface, found)


@pytest.mark.parametrize(("text", "orgs"), [
    ("Seen by Dr. John Hartley at Mercy Medical Center today.", ["Mercy Medical Center"]),
    ("Letter from Jane Poire, PhD at Sunrise Urology Medical Group.", ["Sunrise Urology Medical Group"]),
    ("Admitted to Sisters of Charity Hospital.", ["Sisters of Charity Hospital"]),
])
def test_when_at_joins_a_person_to_an_unlisted_org_then_the_org_span_starts_after_it(
    detector: DictionaryDetector, text: str, orgs: list[str]
) -> None:
    # "at" is not part of an organisation's name before its head: the span neither swallows the person (who would
    # be relabelled an organisation) nor the preposition
    spans = detector.detect(_note(text, None))
    found = sorted(text[s.start:s.end] for s in spans if s.label == "ORGANIZATION")
    assert set(orgs) <= set(found), found
    first = text.find(orgs[0])  # no organisation begins before the expected one ("Sisters of Charity" is listed)
    assert all(s.start >= first for s in spans if s.label == "ORGANIZATION"), found
    at = text.find(" at ")
    assert at < 0 or not any(s.start <= at + 1 < s.end for s in spans)


@pytest.mark.parametrize(("text", "org"), [
    # other languages name an institution head first: the head, capitalised words or a number, lower-case particles
    ("Servicio de Urología. 5ª planta. Hospital Universitario Virgen del Rocío. Avda. Manuel Siurot S/N",
     "Hospital Universitario Virgen del Rocío"),  # ends at the sentence's period
    ("Hospital Universitario Dr. Carlos J. Finlay. Cuba", "Hospital Universitario Dr. Carlos J. Finlay"),
    ("Correspondencia: Complexo Hospitalario de Ourense.", "Complexo Hospitalario de Ourense"),
    ("Ingresado en el Hospital 12 de Octubre, Madrid", "Hospital 12 de Octubre"),
    ("Verlegt ins Klinikum Rechts der Isar, München", "Klinikum Rechts der Isar"),
    ("in der Notaufnahme des Klinikums Nordstadt vor", "Klinikums Nordstadt"),  # German genitive
    ("Z.n. ACVB-OP im Herzzentrum Bad Oeynhausen.", "Herzzentrum Bad Oeynhausen"),
    # universities, faculties and institutes are named head first too
    ("Remitido por: Dr. X. Facultad de Odontología, Universidad de Granada. Spain", "Facultad de Odontología"),
    ("Responsable: Institut de Medicina Legal de Catalunya. Barcelona", "Institut de Medicina Legal de Catalunya"),
    ("ADMITTED FROM HOSPITAL QUIXAL BERNAT ED ON 1/14", None),  # capitals: "HOSPITAL" leads no unlisted name there
    ("Clínica Vistahermosa ED, Alicante", "Clínica Vistahermosa"),  # a unit after the name is no part of it
    # every word after the head a frequent English word: no name
    ("Hospital Day #4 - 6/6", None), ("Hospital Course: stable", None), ("HOSPITAL COURSE: STABLE", None),
    ("TRANSFERRED FROM OSH. HOSPITAL W SEVERE ISCHEMIC CARDIOMYOPATHY W CLASS IV", None),
])
def test_when_an_institution_is_named_head_first_then_the_head_and_its_name_are_one_organisation(
    detector: DictionaryDetector, text: str, org: str | None
) -> None:
    spans = detector.detect(_note(text, None))
    heads = [text[s.start:s.end] for s in spans if s.label == "ORGANIZATION"
             and text[s.start:s.end].split()[0].lower() in ("hospital", "complexo", "klinikum", "klinikums",
                                                             "herzzentrum", "clínica", "facultad", "institut")]
    assert heads == ([org] if org else []), heads


def test_when_lone_listed_name_in_caps_line_then_candidate_below_threshold_needs_a_vote(
    detector: DictionaryDetector,
) -> None:
    # no case evidence in capitals: the list match is a candidate, accepted only if another detector agrees
    text = "PT RESTING. NGUYEN AT BEDSIDE. WILL CALL BACK."
    spans = detector.detect(_note(text, None))
    nguyen = [s for s in spans if text[s.start:s.end] == "NGUYEN"]
    assert nguyen and all(s.label == "NAME" and s.score < SOURCE_THRESHOLDS["dictionary"] for s in nguyen)
    assert not any(text[s.start:s.end] in ("WILL", "PT") for s in spans)
    # with a cue it stands on its own
    cued = detector.detect(_note("PT RESTING. SPOKE WITH NGUYEN AT BEDSIDE.", None))
    assert any(s.score >= SOURCE_THRESHOLDS["dictionary"] and s.label == "NAME" for s in cued)


def test_when_no_ner_step_runs_then_a_lone_caps_name_stands_alone(cache: Path) -> None:
    # nothing could vote for it: the no-NER pipeline keeps the lone list word at its own threshold
    ctx = BuildContext(cache_dir=cache, steps=("regex", "dictionary", "recovery", "ensemble"))
    alone = build_processor("dictionary", {}, ctx)
    assert isinstance(alone, DictionaryDetector)
    text = "PT RESTING. NGUYEN AT BEDSIDE. WILL CALL BACK."
    spans = [s for s in alone.detect(_note(text, None)) if text[s.start:s.end] == "NGUYEN"]
    assert spans and all(s.score >= SOURCE_THRESHOLDS["dictionary"] for s in spans)


def test_when_single_name_then_scored_lower_than_name_pattern(detector: DictionaryDetector) -> None:
    text = "The plan suits Kowalski. Dr. Kowalski agreed."  # no cue before the first ("discussed with" is one)
    scores = sorted(s.score for s in detector.detect(_note(text, None)) if s.label == "NAME")
    assert scores[0] < 0.7 <= scores[-1]


def test_when_batch_processed_then_spans_added_and_kept(detector: DictionaryDetector) -> None:
    text = "John Smith, DOB 1/1/80, seen by Dr. Kowalski."
    prior = Span(start=0, end=4, label="NAME", score=0.3, source="ner")
    (out,) = detector.process_batch([Note(input=_note(text), spans=(prior,))])
    assert out.spans[0] == prior
    sources = {s.source for s in out.spans[1:]}
    assert sources == {"message", "dictionary"}
    assert all(text[s.start:s.end] for s in out.spans)


def test_when_message_disabled_then_only_lists(cache: Path) -> None:
    proc = build_processor("dictionary", {"message": False}, BuildContext(cache_dir=cache))
    assert isinstance(proc, DictionaryDetector)
    assert {s.source for s in proc.detect(_note("John Smith 555-123-4567"))} == {"dictionary"}


def test_when_unknown_option_then_config_error(cache: Path) -> None:
    with pytest.raises(ConfigError):
        build_processor("dictionary", {"fuzzy_treshold": 90}, BuildContext(cache_dir=cache))


# --- institution dictionary builder -------------------------------------------------------------------------


def _build(out: Path, **kw: Any) -> dict[str, Any]:
    path = build_institution_dictionary(
        out, providers=DATA / "providers.csv", staff=DATA / "staff.csv", clinics=DATA / "clinics.csv",
        abbreviations=DATA / "abbreviations.txt", locations=DATA / "locations.csv", **kw,
    )
    manifest: dict[str, Any] = json.loads((path / "manifest.json").read_text())
    return manifest


def test_when_built_then_manifest_counts_and_expanded_people(cache: Path, tmp_path: Path) -> None:
    m = _build(tmp_path / "inst")
    assert m["format"] == 1 and len(m["version"]) == 16
    assert set(m["lists"]) == {"providers", "staff", "clinics", "abbreviations", "locations"}
    providers = (tmp_path / "inst" / "providers.txt").read_text().splitlines()
    assert {"Jane Kowalski", "Jane Q. Kowalski", "Kowalski, Jane", "J. Kowalski", "Dr. Kowalski", "Kowalski",
            "Will Green", "Green, Will", "Dr. Green"} <= set(providers)
    assert "Green" not in providers  # a surname that is a common word is not listed alone
    staff = (tmp_path / "inst" / "staff.txt").read_text().splitlines()
    assert {"Adaeze Okonkwo", "Okonkwo, Adaeze", "Marisol Etxeberria", "Etxeberria"} <= set(staff)
    assert m["lists"]["providers"]["label"] == "NAME" and m["lists"]["providers"]["subtype"] == "PROVIDER"
    assert m["lists"]["providers"]["count"] == len(providers)


def test_when_built_then_common_words_removed_and_counted(cache: Path, tmp_path: Path) -> None:
    m = _build(tmp_path / "inst")
    clinics = (tmp_path / "inst" / "clinics.txt").read_text().splitlines()
    abbreviations = (tmp_path / "inst" / "abbreviations.txt").read_text().splitlines()
    assert "Primary Care" not in clinics and "Riverside Cardiology Clinic" in clinics
    assert "Main" not in abbreviations and "RCC" in abbreviations
    assert m["removed"]["clinics"]["common_word"] == 1
    assert m["removed"]["abbreviations"]["common_word"] == 1
    assert m["removed"]["providers"]["common_word"] == 1  # "Green" alone
    assert "Primary Care" not in json.dumps(m)  # counts only, no terms


def test_when_content_changes_then_version_changes(cache: Path, tmp_path: Path) -> None:
    v1 = _build(tmp_path / "a")["version"]
    assert _build(tmp_path / "b")["version"] == v1  # same content, same version
    src = tmp_path / "clinics.csv"
    shutil.copy(DATA / "clinics.csv", src)
    with src.open("a") as fh:
        fh.write("Lakeshore Dialysis Unit\n")
    path = build_institution_dictionary(tmp_path / "c", providers=DATA / "providers.csv", staff=DATA / "staff.csv",
                                        clinics=src, abbreviations=DATA / "abbreviations.txt",
                                        locations=DATA / "locations.csv")
    assert json.loads((path / "manifest.json").read_text())["version"] != v1


def test_when_input_has_no_usable_column_then_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("code,description\nX1,something\n")
    with pytest.raises(InputError):
        build_institution_dictionary(tmp_path / "out", clinics=bad)


def test_when_nothing_given_then_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        build_institution_dictionary(tmp_path / "out")


def test_when_institution_dir_loaded_then_its_terms_are_detected(cache: Path, tmp_path: Path) -> None:
    _build(tmp_path / "inst")
    inst = InstitutionDictionary.load(tmp_path / "inst")
    proc = build_processor("dictionary", {"institution_dirs": [str(tmp_path / "inst")]}, BuildContext(cache_dir=cache))
    assert isinstance(proc, DictionaryDetector)
    text = "Seen at RCC by Hiroshi Tanabe; wound care at Harborview Wound Center, Lakeshore Satellite Campus."
    found = _found(text, proc.detect(_note(text, None)))
    assert ("ORGANIZATION", None) in found["RCC"]
    assert ("NAME", "PROVIDER") in found["Hiroshi Tanabe"]
    assert ("ORGANIZATION", "CLINIC") in found["Harborview Wound Center"]
    assert ("LOCATION", None) in found["Lakeshore Satellite Campus"]
    versions = proc.dictionary_versions()
    assert versions["vocab"] == vocab.vocab_version()
    assert versions[f"institution:{inst.name}"] == inst.version
