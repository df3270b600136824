"""processors.dictionary.lexicon: the clinical-word filter of the name / place lists and name evidence in
ALL-CAPS lines (issue 10), on sentences written for these tests with the real vocabularies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from processors.dictionary.step import DictionaryDetector
from processors.pipeline import BuildContext, build_processor
from schemas.models import NoteIn, Span


@pytest.fixture(scope="module")
def detector(cache_dir: Path) -> DictionaryDetector:
    proc = build_processor("dictionary", {}, BuildContext(cache_dir=cache_dir))
    assert isinstance(proc, DictionaryDetector)
    return proc


@pytest.fixture(scope="module")
def unfiltered(cache_dir: Path) -> DictionaryDetector:
    proc = build_processor("dictionary", {"clinical_filter": False}, BuildContext(cache_dir=cache_dir))
    assert isinstance(proc, DictionaryDetector)
    return proc


def _names(text: str, spans: list[Span]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for s in spans:
        out.setdefault(text[s.start:s.end], set()).add(str(s.label))
    return out


JARGON_ALONE_CASES = [
    # (case, text, words that must not be tagged)
    ("caps_weaning", "WEANING TO PS 10. WEAN AS TOL.", ["WEANING", "WEAN", "TOL"]),
    ("mixed_levo", "levo at 0.1, Levo weaned off overnight.", ["levo", "Levo"]),
    ("caps_neo_gtt", "NEO GTT OFF. VANCO AND LEVO DOSED.", ["NEO", "VANCO", "LEVO"]),
    ("pacer_wires", "pacer wires capped. Pacer off.", ["pacer", "Pacer"]),
    ("caps_lines", "ALINE AND SWAN DC'D. LYTES REPLETED. BOLUS GIVEN.", ["ALINE", "SWAN", "LYTES", "BOLUS"]),
    ("title_case_lines", "Aline intact. Swan at 50 cm. Endo following.", ["Aline", "Swan", "Endo"]),
    ("medical_term", "Sternal incision clean. Lumen flushed. Stoma pink.", ["Sternal", "Lumen", "Stoma"]),
    ("clinical_text_word", "EDEMA 2+. SALIVA THICK.", ["EDEMA", "SALIVA"]),
    ("city_that_is_a_drug", "On 3 gtts, Nitro off at noon.", ["Nitro"]),
    ("caps_ms_title", "MS. TOLERATING EXTUBATION. MS GIVEN 2MG.", ["TOLERATING", "GIVEN"]),
    ("caps_credential_common_word", "WILL KEEP NP ON. PRIMARY CARE MD AWARE.", ["WILL", "KEEP", "CARE"]),
    # a nurse's specialty, a frequent word before a new clause: no name before the credential
    ("nurse_specialty", "INTEG: Stoma RN following. Ostomy RN applied a new pouch.", ["Stoma", "Ostomy"]),
    ("frequent_word_credential", "Spoke with son today. Also MD updated daughter.", ["Also"]),
    ("caps_lower_max_temp", "ID-max temp 98.6 rectal.", ["max", "temp"]),
    # a multi-word entry never spans a slash compound or a line break ("O'Very", "O'Skin" are surnames)
    ("slash_compound", "GU: U/O VERY LOW ALL NIGHT.", ["O VERY", "VERY"]),
    ("across_lines", "Strict I+O. \n\nSkin: intact.", ["O. \n\nSkin", "Skin"]),
    ("lower_ms_frequent_word", "back pain,ms given 2mg iv", ["given"]),
]


@pytest.mark.parametrize(("case", "text", "absent"), JARGON_ALONE_CASES, ids=[c[0] for c in JARGON_ALONE_CASES])
def test_when_clinical_word_alone_then_not_tagged(
    detector: DictionaryDetector, case: str, text: str, absent: list[str]
) -> None:
    found = _names(text, detector.detect(NoteIn(note_id="n1", text=text)))
    for word in absent:
        assert word not in found, (word, found)


NAME_EVIDENCE_CASES = [
    # (case, text, names that must be tagged, words that must not)
    ("caps_title", "DR SMITH AWARE OF K 3.1.", ["SMITH"], ["AWARE"]),
    ("caps_family_cue", "SPOKE WITH WIFE MARY. UPDATED ON PLAN.", ["MARY"], ["WIFE"]),
    ("title_then_clinical_first_name", "Seen by Dr. Neo Patel today.", ["Neo", "Patel"], []),
    ("lower_title_clinical_word", "dr. pica aware of labs.", ["pica"], []),
    ("caps_title_clinical_first_name", "DR NEO AWARE.", ["NEO"], []),
    ("family_cue_clinical_word", "Her husband Neo called.", ["Neo"], []),
    ("caps_contact_cue", "PER KOWALSKI OK TO EXTUBATE.", ["KOWALSKI"], ["OK"]),
    ("caps_spoke_with", "SPOKE WITH JOHN KOWALSKI TODAY.", ["JOHN", "KOWALSKI"], ["TODAY"]),
    ("caps_credential_after_pair", "NOTE BY MARY SMITH RN.", ["MARY", "SMITH"], ["RN"]),
    ("caps_credential_comma", "JUNE, RN", ["JUNE"], ["RN"]),
    ("credential_clinical_surname", "Seen by Sharp NP, June, RN and Brown, RN today.", ["Sharp", "June", "Brown"],
     ["NP"]),
    ("caps_title_second_word", "DR OKAFOR MET WITH FAMILY.", ["OKAFOR"], ["MET"]),
    ("caps_family_cue_second_word", "SON WILLIAM WENT HOME.", ["WILLIAM"], ["WENT"]),
    ("caps_mr_with_dot", "REFER TO MR. BENSKY.", ["BENSKY"], []),
    ("apostrophe_surname", "Seen by Dr. O'Brien today.", ["O'Brien"], []),
    ("lower_ms_surname", "ms garcia called back", ["garcia"], []),
    ("caps_contact_cue_initial", "AS PER J. BARNES: NO CHANGE.", ["J", "BARNES"], []),
    ("lower_contact_cue_initial", "map goal 65 per k kowalski.", ["k", "kowalski"], []),
]


ORG_CASES = [
    # (case, text, organisations that must be tagged, words that must not be)
    ("university_by_state", "Transfer per U Iowa protocol.", ["U Iowa"], []),
    ("university_of_code", "SEEN AT U OF MD MED CENTER", ["U OF MD"], []),
    ("rehab_after_city", "Discharged to Springfield Rehab today.", ["Springfield Rehab"], []),
    ("rehab_caps_city", "PLAN: TRANSFER TO DENVER REHAB", ["DENVER REHAB"], []),
    ("rehab_service", "Pulmonary Rehab referral. CARDIAC REHAB CONSULTED.", [], ["Pulmonary Rehab", "CARDIAC REHAB"]),
    ("slash_u", "U/O 30CC. I/O EVEN.", [], ["U", "O"]),
]


@pytest.mark.parametrize(("case", "text", "orgs", "absent"), ORG_CASES, ids=[c[0] for c in ORG_CASES])
def test_when_organisation_pattern_then_tagged(
    detector: DictionaryDetector, case: str, text: str, orgs: list[str], absent: list[str]
) -> None:
    found = _names(text, [s for s in detector.detect(NoteIn(note_id="n1", text=text)) if s.score >= 0.5])
    for org in orgs:
        assert "ORGANIZATION" in found.get(org, set()), (org, found)
    for word in absent:
        assert word not in found, (word, found)



@pytest.mark.parametrize(("case", "text", "names", "absent"), NAME_EVIDENCE_CASES,
                         ids=[c[0] for c in NAME_EVIDENCE_CASES])
def test_when_name_has_context_evidence_then_tagged(
    detector: DictionaryDetector, case: str, text: str, names: list[str], absent: list[str]
) -> None:
    found = _names(text, [s for s in detector.detect(NoteIn(note_id="n1", text=text)) if s.score >= 0.5])
    for name in names:
        assert "NAME" in found.get(name, set()), (name, found)
    for word in absent:
        assert word not in found, (word, found)


PATIENT: dict[str, Any] = {"id": "P1", "names": [{"family": "Swan", "given": "Levo"}]}


def test_when_message_names_are_clinical_words_then_message_matches_are_kept(detector: DictionaryDetector) -> None:
    # the message's own identifiers come from another matcher: the clinical filter never removes them
    text = "LEVO SWAN ADMITTED. levo gtt off, swan removed."
    spans = detector.detect(NoteIn(note_id="n1", text=text, patient=PATIENT))
    found = {(text[s.start:s.end], s.source) for s in spans}
    assert ("LEVO", "message") in found and ("SWAN", "message") in found


def test_when_filter_off_then_jargon_is_a_name_again(unfiltered: DictionaryDetector,
                                                      detector: DictionaryDetector) -> None:
    text = "Pacer wires capped, Endo following."
    assert "Pacer" in _names(text, unfiltered.detect(NoteIn(note_id="n1", text=text)))
    assert "Pacer" not in _names(text, detector.detect(NoteIn(note_id="n1", text=text)))
