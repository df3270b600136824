"""Cues: what the old recovery rules knew, now evidence for the decision stage (``processors.decide.cues``).

Each table is a rule's old table: ``dropped`` lists the candidates that recovery drops (certain medical terms) or
on which a cue fires, the rest stay without a cue. Spans are built directly (no dependency on the detectors)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from candidate_notes import SpanSpec, make_note, surfaces

from dictionaries import vocab
from dictionaries.medical import medical_vocabulary
from processors.decide.cues import RULES, Cues
from processors.pipeline import BuildContext, Note, build_processor
from processors.shapes import message_identifiers, protected
from schemas.models import Patient, PersonName


class Judge:
    """Recovery, then the cues: a candidate on which a cue fires moves to ``dropped`` (the old rules' behaviour,
    to test what each cue recognises)."""

    def __init__(self) -> None:
        ctx = BuildContext(cache_dir=vocab.cache_dir())
        self.recovery = build_processor("recovery", {}, ctx)
        self.cues = Cues(vocab.cache_dir())
        self.vocab = medical_vocabulary(vocab.cache_dir())

    def fired(self, note: Note) -> list[set[str]]:
        """The cues that fire on each of ``note``'s spans (none on a protected span)."""
        message = message_identifiers(note.input)
        matches = self.vocab.scan(note.text)
        return [set() if protected(s, note.text, frozenset({"message"}), message) else
                {r for r, f in zip(RULES, self.cues.flags(s, note.text, note.spans, matches), strict=True) if f}
                for s in note.spans]

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        out = []
        for note in self.recovery.process_batch(notes):
            fired = self.fired(note)
            out.append(note.replace(spans=tuple(s for s, f in zip(note.spans, fired, strict=True) if not f),
                                    dropped=note.dropped + tuple(s for s, f in zip(note.spans, fired, strict=True)
                                                                 if f)))
        return out


@pytest.fixture(scope="module")
def recovery() -> Judge:
    return Judge()


def dropped_surfaces(recovery: Judge, text: str, specs: list[SpanSpec]) -> list[str]:
    """The sorted surfaces of the candidates recovery drops or a cue fires on."""
    note = recovery.process_batch([make_note(text, specs)])[0]
    return sorted(surfaces(note, note.dropped))


def test_when_cues_are_computed_then_one_flag_per_rule(recovery: Judge) -> None:
    note = make_note("LEVO WEANED OFF. Seen by Dr. Swan.", [("LEVO", "NAME", "ner"), ("Swan", "NAME", "ner")])
    fired = recovery.fired(note)
    assert fired == [{"jargon"}, set()]
    assert len(recovery.cues.flags(note.spans[0], note.text, note.spans, [])) == len(RULES)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("Vent: AC 600x12, FiO2 40%, PEEP 5.", [("600x12", "ID", "regex")], ["600x12"]),
        ("VENT: AC 600X12, FIO2 40%, PEEP 5.", [("600X12", "ID", "regex")], ["600X12"]),
        ("ABG on settings: 7.38-33-169.", [("7.38-33-169", "PHONE", "ner")], ["7.38-33-169"]),
        ("abg on settings: 7.38/33/169.", [("33/169", "DATE", "ner")], ["33/169"]),
        ("CVP 24-26, SBP in the 90's.", [("24-26", "DATE", "ner"), ("90's", "AGE", "regex")], ["24-26", "90's"]),
        ("cvp 24-26, sbp in the 90's.", [("24-26", "DATE", "ner"), ("90's", "AGE", "regex")], ["24-26", "90's"]),
        ("HR 70'S-80'S, MAPS 68-80'S.", [("70'S-80'S", "DATE", "ner"), ("68-80'S", "IP", "ner")], ["70'S-80'S"]),
        ("Weaned to CPAP 5/5, PSV 15/5 overnight.", [("5/5", "DATE", "regex"), ("15/5", "DATE", "ner")],
         ["5/5", "15/5"]),
        ("BP 91-146/48-63 on neo.", [("/48", "DATE", "ner"), ("91-146", "PHONE", "ner")], ["/48", "91-146"]),
    ],
)
def test_when_number_is_in_vitals_vent_or_lab_context_then_it_is_dropped_with_its_label_and_source(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    note = make_note(text, specs)
    (out,) = recovery.process_batch([note])
    assert sorted(surfaces(out, out.dropped)) == sorted(dropped)
    originals = {(s.start, s.end): s for s in note.spans}
    for d in out.dropped:  # moved unchanged: the metrics and the leak check read label and source
        assert originals[(d.start, d.end)] == d
    assert len(out.spans) + len(out.dropped) == len(note.spans)


@pytest.mark.parametrize(
    ("text", "specs"),
    [
        ("HR 80, BP 120/80. DOB 3/4/1950.", [("3/4/1950", "DATE", "regex")]),
        ("hr 80, bp 120/80. dob 3/4/50.", [("3/4/50", "DATE", "ner")]),
        ("HR 80. MRN 1234567.", [("1234567", "ID", "regex")]),
        ("SBP 100, call 617-555-1234 if lower.", [("617-555-1234", "PHONE", "regex")]),
        ("HR 80 when seen 3/4/2019.", [("3/4/2019", "DATE", "regex")]),
        ("HR 80, pager 12345.", [("12345", "PHONE", "ner")]),
        ("K 3.9 on 3/4, WBC 16.0 8/22.", [("3/4", "DATE", "regex"), ("8/22", "DATE", "ner")]),
        ("Pt in her 90's, SBP 100.", [("90's", "AGE", "regex")]),
        ("CVP 24-26 overnight.", [("24-26", "DATE", "message")]),
        ("CVP 24-26 overnight.", [("24-26", "DATE", "dictionary")]),     # not a measure source
        ("CVP 24-26 overnight.", [("24-26", "DATE", "dictionary+ner")]),
        ("CVP 8, patient ID 12-14 on the chart.", [("12-14", "ID", "regex")]),
    ],
)
def test_when_number_has_an_identifier_cue_or_source_then_it_is_kept(
    recovery: Judge, text: str, specs: list[SpanSpec]
) -> None:
    note = make_note(text, specs)
    (out,) = recovery.process_batch([note])
    assert out.dropped == ()
    assert out.spans == note.spans


def test_when_measure_sources_are_configured_then_only_those_sources_get_the_cue() -> None:
    cues = Cues(vocab.cache_dir(), measure_sources=["regex"])
    # "12-14" reads as a date (December 14): only the measure cue fires on it
    note = make_note("CVP 12-14, AC 600x12.", [("12-14", "DATE", "ner"), ("600x12", "ID", "regex")])
    flags = [dict(zip(RULES, cues.flags(s, note.text, note.spans, []), strict=True))["measurement"]
             for s in note.spans]
    assert flags == [False, True]


def test_when_a_number_repeats_the_patients_own_identifier_then_it_is_kept(recovery: Judge) -> None:
    patient = Patient(names=(PersonName(given="Ann", family="Lee"),), mrn="1461")
    note = make_note("CK 1461 this am.", [("1461", "ID", "ner")], patient=patient)
    (out,) = recovery.process_batch([note])
    assert out.dropped == ()

@pytest.mark.parametrize(
    ("case", "text", "specs", "dropped"),
    [
        ("drip_shorthand", "LEVO WEANED OFF, VANCO GIVEN.", [("LEVO", "NAME", "ner"), ("VANCO", "NAME", "ner")],
         ["LEVO", "VANCO"]),
        ("line_as_place", "aline d/c'd, swan remains.", [("aline", "LOCATION", "ner"), ("swan", "NAME", "ner")],
         ["aline", "swan"]),
        ("service_as_org", "Screened by rehab today.", [("rehab", "ORGANIZATION", "ner+dictionary")], ["rehab"]),
        ("title_keeps_name", "Spoke with Dr. Swan about the plan.", [("Swan", "NAME", "ner")], []),
        ("credential_keeps_name", "Plan reviewed with Foley, RN.", [("Foley", "NAME", "ner")], []),
        ("not_all_jargon", "Levo started by Smith.", [("Levo started by Smith", "NAME", "ner")], []),
        ("dates_untouched", "Levo on Monday.", [("Monday", "DATE", "ner")], []),
        ("message_protected", "Neo at bedside.", [("Neo", "NAME", "message")], []),
        ("lower_clinical_word", "allergies: nkda. kub done.", [("allergies", "NAME", "ner"), ("kub", "NAME", "ner")],
         ["allergies", "kub"]),
        ("caps_clinical_word", "KUB DONE, ALLERGIES NKDA.", [("KUB", "ORGANIZATION", "ner")], ["KUB"]),
        ("title_case_is_evidence", "Seen by Allergies today.", [("Allergies", "NAME", "ner")], []),
        ("title_keeps_lower", "seen by dr. brown today.", [("brown", "NAME", "ner")], []),
        ("dictionary_find_kept", "kub done.", [("kub", "NAME", "dictionary")], []),
        ("not_clinical", "amber at bedside.", [("amber", "NAME", "ner")], []),
        ("nurse_specialty", "Stoma RN saw the site today.", [("Stoma", "NAME", "ner")], ["Stoma"]),
        ("title_before_credential", "Seen by Dr. Swan RN today.", [("Swan", "NAME", "ner")], []),
        ("care_unit", "TSICUB NURSING NOTE 7P-7A", [("TSICUB", "NAME", "ner")], ["TSICUB"]),
        ("acronym_plural", "Tolerating POs and sips.", [("POs", "NAME", "dictionary")], ["POs"]),
        ("device_eponym", "Temp 35.1, Bair hugger on.", [("Bair", "NAME", "dictionary")], ["Bair"]),
        # two letters are as often initials or a state's code as an abbreviation
        ("initials_stay", "BM 73M S/P FALL AT HOME.", [("BM", "NAME", "ner")], []),
        ("state_code_stays", "Lives in Duluth, MN 55802.", [("MN", "LOCATION", "regex")], []),
        ("two_letter_place", "BLOOD FROM OG, NGT TO LWS.", [("OG", "LOCATION", "ner")], ["OG"]),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v and len(v) < 30 else "",
)
def test_when_span_is_only_curated_jargon_then_dropped_unless_name_evidence(
    recovery: Judge, case: str, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("NPN CCU 7 PM - 7 AM. S/P stent.", [("7 PM", "DATE", "ner"), ("7 AM", "DATE", "ner+regex")],
         ["7 PM", "7 AM"]),
        ("Negative 500 cc since 12am.", [("12am", "DATE", "ner")], ["12am"]),
        ("Extubated 3/14 at 10 am.", [("3/14 at 10 am", "DATE", "ner")], []),  # a date-time: an identifier
        ("Extubated 3/14 at 10 am.", [("3/14", "DATE", "regex")], []),
    ],
)
def test_when_date_span_is_a_time_of_day_then_dropped_unless_attached_to_a_date(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # a date needs digits, a month, a weekday or a holiday: times of day and relative days are not dates
        ("FAMILY VISITING TILL MIDNIGHT.", [("MIDNIGHT", "DATE", "ner")], ["MIDNIGHT"]),
        ("Son called last eve.", [("last eve", "DATE", "ner")], ["last eve"]),
        ("TF ON HOLD SINCE NOON FOR TEE.", [("NOON", "DATE", "ner+regex")], ["NOON"]),
        ("VISITORS STAYED UNTILL APPROXAMATELY 9.", [("APPROXAMATELY", "DATE", "ner")], ["APPROXAMATELY"]),
        ("Dopamine weaned then dec'd further.", [("dec", "DATE", "ner")], ["dec"]),  # decreased
        ("Seen on dec 3 in clinic.", [("dec", "DATE", "ner")], []),
        ("Dialysis Monday.", [("Monday", "DATE", "ner")], []),
        ("Home since Christmas.", [("Christmas", "DATE", "ner")], []),
        ("ON QUARTERMAIN 6.", [("QUARTERMAIN", "DATE", "ner")], []),  # an unknown word: maybe a place
        ("Discharged 3/4.", [("3/4", "DATE", "ner")], []),
        # a count, a phone without a digit, a name or organisation without a letter (the model's alone)
        ("Day 7 of 14 of the antibiotic course.", [("7 of 14", "DATE", "ner")], ["7 of 14"]),
        ("(Continued) on the next page", [("Continued", "PHONE", "ner")], ["Continued"]),
        ("Box 2210 DPO AE 30412", [("AE", "PHONE", "ner"), ("30412", "PHONE", "ner")], []),
        ("Came up from WARD 5 today.", [("5", "ORGANIZATION", "ner")], ["5"]),
        ("Came up from WARD 5 today.", [("WARD", "LOCATION", "ner")], ["WARD"]),
        ("Back to Ward3 when stable.", [("Ward", "LOCATION", "ner")], ["Ward"]),
        ("Mail to Unit 7194 Box 5854", [("Unit", "LOCATION", "ner")], []),  # an army post's unit
        ("Up from WARD 4 for a swan.", [("WARD", "LOCATION", "ner+dictionary")], ["WARD"]),
        ("Seen by Dr. Ward 3 times", [("Ward", "NAME", "ner+dictionary")], []),  # a title: a person
        ("Nursing 7a-7p: slept well.", [("7", "NAME", "ner")], ["7"]),
        ("Came up from WARD 5 today.", [("5", "ORGANIZATION", "ner+dictionary")], []),
        # clock times with known words only, unless right beside a date (a date-time)
        ("Care conference moved to 14:30 tomorrow.", [("14:30 tomorrow", "DATE", "ner")], ["14:30 tomorrow"]),
        ("Visit window:3:15-4:45pm daily", [("3:15-4:45pm", "DATE", "ner")], ["3:15-4:45pm"]),
        ("Extubated 3/14 10:30 am.", [("10:30 am", "DATE", "ner")], []),
        ("Seen 10:30 Monday.", [("10:30 Monday", "DATE", "ner")], []),
        # an ordinal alone before a noun, "may" before a verb: no day
        ("PNEUMONIA ON 2ND DAY OF ADMISSION.", [("2ND", "DATE", "ner+regex")], ["2ND"]),
        ("cooperative on 2nd wake up", [("2nd", "DATE", "ner")], ["2nd"]),
        ("THINKS THIS MAY BE R/T LEVO.", [("MAY", "DATE", "regex")], ["MAY"]),
        ("pt may not need the line", [("may", "DATE", "ner")], ["may"]),
        ("Lasix 20 mg IV on the 22nd. Has been checking.", [("the 22nd", "DATE", "ner")], []),
        ("Seen the 3rd of May.", [("3rd", "DATE", "ner")], []),
        ("Clinic on the 5th at 10am.", [("5th", "DATE", "ner")], []),
        ("Due the 14th April.", [("14th", "DATE", "ner")], []),
        ("Seen May 5 in clinic.", [("May", "DATE", "ner")], []),
        ("May was a hard month.", [("May", "DATE", "ner")], []),
        # a lone letter only the model found, with no other detection beside it
        ("drew arm up to face x1. A. Bowel sounds present.", [("A", "NAME", "ner")], ["A"]),
        ("Seen by Z. Miller today.", [("Z", "NAME", "ner"), ("Miller", "NAME", "ner")], []),
        ("Seen by Z. today.", [("Z", "NAME", "ner+dictionary")], []),
        # a street type alone: no street name, no saint's name, no place
        ("HR up to 120s, sinus rhythm to ST with activity.", [("ST", "LOCATION", "ner")], ["ST"]),
        ("converted from afib to st overnight", [("st", "LOCATION", "ner")], ["st"]),
        ("Lives in Helena, MT with her son.", [("MT", "LOCATION", "ner")], []),  # a state code
        # a state's code alone (midnight, the VA): not after "City," or before a ZIP, not a relative's initials
        ("Net negative 900 cc since MN, goal even.", [("MN", "LOCATION", "ner")], ["MN"]),
        ("Nurse from the VA called back.", [("VA", "ORGANIZATION", "ner")], ["VA"]),
        ("Mail to Duluth MN 55802.", [("MN", "LOCATION", "ner")], []),
        ("Visited by the brother of MS today.", [("MS", "LOCATION", "ner")], []),
        ("Net negative 900 cc since MN.", [("MN", "LOCATION", "ner+dictionary")], []),
        ("Brother Glen visited.", [("Glen", "NAME", "ner")], []),  # a first name
        ("Lives on Oak St near the park.", [("St", "LOCATION", "ner+regex")], []),  # not the model's alone
        # a "phone" of one or two digits alone, or a signed number (a fluid balance)
        ("Intubated with # 8 ETT, 22 at the lip.", [("8", "PHONE", "ner")], ["8"]),
        ("LOS -905 at midnight, goal even.", [("-905", "PHONE", "ner")], ["-905"]),
        ("Wife (202232-4455) in to visit.", [("-4455", "PHONE", "ner")], []),  # a separator, not a sign
        # an email without its "@", a record number of fewer than three characters (the model's alone)
        ("Code status: DNR & DNI, comfort only.", [("DNI", "EMAIL", "ner")], ["DNI"]),
        ("Gave ms04 2 mg for pain.", [("04", "ID", "ner")], ["04"]),
        ("Write to kay@example.org", [("kay@example.org", "EMAIL", "ner")], []),
        ("Office at 12 Odos Ermou Apt. 3 ΠΑΦΟΣ PA", [("ΠΑΦΟΣ PA", "EMAIL", "ner")], []),  # an address's words
        ("Bed 04 assigned.", [("04", "ID", "regex")], []),
        ("Call +44 20 7946 0958 after six.", [("+44", "PHONE", "ner"), ("20 7946 0958", "PHONE", "ner")], []),
        # numbers joined by "and" / "to", none as long as a phone number: times, not a phone
        ("Boluses x2 at 0200 and 0415 overnight.", [("0200 and 0415", "PHONE", "ner")], ["0200 and 0415"]),
        ("Address: 12 Varga ut 4 Suite 9", [("12 Varga ut 4", "PHONE", "ner")], []),  # other words: an address
        ("Call 617-555-0134 or 0199.", [("617-555-0134 or 0199", "PHONE", "ner")], []),
        # a number glued to letters that no date or time has: a quantity and its unit
        ("Weaned to 3ln/c overnight, sats fine.", [("3ln", "DATE", "ner")], ["3ln"]),
        ("Given 4amp of bicarb.", [("4amp", "DATE", "ner")], ["4amp"]),
        ("Seen on the 3rd, again 12noon and at 5p.", [("3rd", "DATE", "ner"), ("12noon", "DATE", "ner"),
                                                    ("5p", "DATE", "ner")], []),
        ("Born 3Mar, seen 1990s.", [("3Mar", "DATE", "ner"), ("1990s", "DATE", "ner")], []),
        ("Weaned to 3ln/c overnight.", [("3ln", "DATE", "ner+regex")], []),  # not the model's alone
        # a chart month ("dec": decreased, "MAR": the administration record) alone, no number or date word near
        ("Lungs with dec breath sounds at bases.", [("dec", "DATE", "ner")], ["dec"]),
        ("ALL DOSES CHARTED PER MAR. NO PRN NEEDED.", [("MAR", "DATE", "ner")], ["MAR"]),
        ("ALL DOSES CHARTED ON MAR 3.", [("MAR", "DATE", "ner")], []),
        ("Last colonoscopy in dec, normal.", [("dec", "DATE", "ner")], []),
        ("Stent placed dec 12 at the OSH.", [("dec", "DATE", "ner")], []),
        ("Stent placed 12-Aug here.", [("Aug", "DATE", "ner")], []),
        ("Plan was set in Dec, unchanged.", [("Dec", "DATE", "ner")], []),
        # titles alone name nobody
        ("FAMILY MET WITH DRS TODAY, UPDATED.", [("DRS", "NAME", "ner")], ["DRS"]),
        ("Paged the Dr. on call.", [("Dr.", "NAME", "ner")], ["Dr."]),
        ("Paged Dr. Okafor.", [("Okafor", "NAME", "ner")], []),
    ],
)
def test_when_span_has_no_identifier_shape_then_dropped(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("Meeting arranged for tommorow afternoon with family.", [("tommorow", "NAME", "ner")], ["tommorow"]),
        ("ALLERGIES: tomatoes, codiene and latex", [("codiene", "NAME", "ner")], ["codiene"]),
        ("DOES NOT HAVE O.R. PRIVELAGES HERE", [("PRIVELAGES", "ORGANIZATION", "ner")], ["PRIVELAGES"]),
        # two neighbouring letters swapped count as one edit
        ("no drainage from owund noted", [("owund", "NAME", "ner")], ["owund"]),
        ("FAMILY TALKED AT LENGHT WITH THE TEAM", [("LENGHT", "NAME", "ner")], ["LENGHT"]),
        # kept: a name list word, person or place evidence, a short line, a mixed-case line's capitals,
        # another detector's vote, one edit too many for a short word
        ("lorrie morales is a 70 yr old", [("morales", "NAME", "ner")], []),
        ("seen by dr. dobroth at 3 am", [("dobroth", "NAME", "ner")], []),
        ("REMAINS AS PER B. KARGAS TODAY", [("KARGAS", "NAME", "ner")], []),
        ("URINE OUTPUT FROM HRBOR HOSP. HE WAS", [("HRBOR", "LOCATION", "ner")], []),
        ("Suite 245\nFURLING\nAustria", [("FURLING", "LOCATION", "ner")], []),
        ("Pt seen by Tommorow today.", [("Tommorow", "NAME", "ner")], []),
        ("Meeting arranged for tommorow afternoon with family.", [("tommorow", "NAME", "ner+dictionary")], []),
        ("no drainage from wxunt noted", [("wxunt", "NAME", "ner")], []),
    ],
)
def test_when_span_is_a_misspelt_known_word_then_dropped_unless_name_evidence(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("Asked for his guitar from home.", [("guitar", "NAME", "ner")], ["guitar"]),
        ("Son brings puzzles on weekends.", [("puzzles", "NAME", "ner")], ["puzzles"]),
        ("Family asked to stay in the waiting room.", [("waiting room", "LOCATION", "ner")], ["waiting room"]),
        ("We are proud of him.", [("proud", "NAME", "ner")], ["proud"]),  # a Census surname, and a common word
        # kept: a first name, a rarer surname, a place, an institution word, a title, capitals, other sources
        ("Visited by pearl and her sons.", [("pearl", "NAME", "ner")], []),
        ("Seen by dr. hall this am.", [("hall", "NAME", "ner")], []),
        ("Daughter flew in from rome.", [("rome", "LOCATION", "ner")], []),
        ("Transferred from memorial hospital.", [("memorial hospital", "ORGANIZATION", "ner")], []),
        ("Transferred from memorial yesterday.", [("memorial", "ORGANIZATION", "ner")], []),
        ("Going home to Spring Valley.", [("Spring Valley", "LOCATION", "ner")], []),
        ("Lives on church street.", [("church street", "LOCATION", "ner+regex")], []),
        ("Lives at 88 street road.", [("88 street", "LOCATION", "ner")], []),
    ],
)
def test_when_span_is_lower_case_common_words_then_dropped_unless_name_or_place(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # cardiology, ward and staff abbreviations in capitals (dictionaries/data/medical_curated.txt)
        ("PMH: CAD, AVR 2001, AMI w/ shock.", [("AVR", "NAME", "ner"), ("AMI", "NAME", "ner")], ["AVR", "AMI"]),
        ("ADMITTED FROM THE EW WITH RAPID AF.", [("EW", "LOCATION", "ner")], ["EW"]),
        ("TRANSFERRED FROM OSH FOR CATH.", [("OSH", "ORGANIZATION", "ner")], ["OSH"]),
        ("LINE PULLED BY HO. EF 45%.", [("HO", "NAME", "ner"), ("EF", "NAME", "ner")], ["HO", "EF"]),
        # the same letters written as a name stay a name
        ("Visited by Ami and her brother.", [("Ami", "NAME", "ner")], []),
        ("Dr. Ho saw him this morning.", [("Ho", "NAME", "ner")], []),
    ],
)
def test_when_span_is_a_capitals_abbreviation_then_dropped(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


def scored_note(text: str, specs: list[tuple[str, str, str, float]]) -> Note:
    """``make_note`` with a score per span: (substring, label, source, score)."""
    note = make_note(text, [spec[:3] for spec in specs])
    return note.replace(spans=tuple(span.model_copy(update={"score": spec[3]})
                                    for span, spec in zip(note.spans, specs, strict=True)))


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # lower case, the model's alone, scored below 0.6, no evidence: dropped
        ("neuro: alert, mae, pearl, follows commands", [("pearl", "NAME", "ner", 0.3)], ["pearl"]),
        ("plan: try to wean off vent tonight", [("vent", "LOCATION", "ner", 0.3)], ["vent"]),
        ("all lines out from the fem site", [("fem", "ORGANIZATION", "ner", 0.1)], ["fem"]),
        # scored higher, in Title case, or found by another detector too: kept
        ("neuro: alert and calm, pearl follows commands", [("pearl", "NAME", "ner", 0.9)], []),
        ("Neuro: alert and calm, Pearl follows commands", [("Pearl", "NAME", "ner", 0.3)], []),
        ("spoke with wolfe about the plan", [("wolfe", "NAME", "ner", 0.3), ("wolfe", "NAME", "dictionary", 0.6)],
         []),
        # a person's evidence: a title, an initial, a family or provider word, a credential, an age and sex, the
        # same name in a stronger detection
        ("seen by dr. dobson this am", [("dobson", "NAME", "ner", 0.3)], []),
        ("plan to extubate in am. s. roberts rrt", [("s. roberts", "NAME", "ner", 0.3)], []),
        ("son jonas called for an update", [("jonas", "NAME", "ner", 0.3)], []),
        ("called back per carol about the dose", [("carol", "NAME", "ner", 0.3)], []),
        ("line placed by kim rn at noon", [("kim", "NAME", "ner", 0.3)], []),
        ("family called and pt's visi was in", [("visi", "NAME", "ner", 0.3)], ["visi"]),  # a possessive: no initial
        ("joseph 81m with chf, here for diuresis", [("joseph", "NAME", "ner", 0.3)], []),
        ("Spoke with Radu Crosson today. later radu called back.",
         [("Radu Crosson", "NAME", "dictionary", 0.6), ("radu", "NAME", "ner", 0.3)], []),
        # a place's: a residence or work cue, an institution or unit word, another detection beside it
        ("her daughter lives in rome now", [("rome", "LOCATION", "ner", 0.3)], []),
        ("taken to gh cath lab, no stent", [("gh", "ORGANIZATION", "ner", 0.2)], []),
        ("lives at 12 elm st with wife", [("12", "LOCATION", "ner", 0.9), ("elm", "LOCATION", "ner", 0.3)], []),
    ],
)
def test_when_weak_lower_case_detection_has_no_evidence_then_dropped(
    recovery: Judge, text: str, specs: list[tuple[str, str, str, float]], dropped: list[str]
) -> None:
    note = recovery.process_batch([scored_note(text, specs)])[0]
    assert sorted(surfaces(note, note.dropped)) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("2 PIVS PLACED AT OUTSIDE HOSPITAL. A-LINE IN CCU.", [("OUTSIDE HOSPITAL", "ORGANIZATION", "ner")],
         ["OUTSIDE HOSPITAL"]),
        ("SHE HAD A PROLONGED HOSPITAL STAY LAST YEAR.", [("PROLONGED HOSPITAL", "ORGANIZATION", "dictionary")],
         ["PROLONGED HOSPITAL"]),
        ("pt admitted to hosp last week with sob", [("hosp", "ORGANIZATION", "ner")], ["hosp"]),
        ("returned call to funeral home re: arrangements", [("funeral home", "ORGANIZATION", "ner")],
         ["funeral home"]),
        # a misspelt describing word counts as one ("FAMIL" for "family")
        ("PT RESTING. FAMLY LEFT FOR HOME AT 2000.", [("FAMLY LEFT FOR HOME", "ORGANIZATION", "dictionary")],
         ["FAMLY LEFT FOR HOME"]),
        # a word of a hospital's name, a place, or case evidence: an institution's name
        ("TRANSFERRED FROM MERCY HOSPITAL FOR CATH.", [("MERCY HOSPITAL", "ORGANIZATION", "ner")], []),
        ("went to harbor hosp with abd pain", [("harbor hosp", "ORGANIZATION", "ner")], []),
        ("ADMITTED TO BOSTON HOSPITAL LAST WEEK.", [("BOSTON HOSPITAL", "ORGANIZATION", "ner")], []),
        ("ADMITTED TO KERNAN HOSPITAL LAST WEEK.", [("KERNAN HOSPITAL", "ORGANIZATION", "ner")], []),
        ("Lines were placed at Outside Hospital before transfer.", [("Outside Hospital", "ORGANIZATION", "ner")],
         []),
    ],
)
def test_when_institution_phrase_is_generic_then_dropped(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("SOCIAL: MOTHER, AUNTS, GIRLFRIEND IN TODAY.", [("AUNTS", "NAME", "ner")], ["AUNTS"]),
        ("family here. Hsb is a retired teacher.", [("Hsb", "NAME", "ner")], ["Hsb"]),
        ("PT'S DUAGHTER IS HEALTH CARE PROXY.", [("DUAGHTER", "NAME", "ner")], ["DUAGHTER"]),
        ("CHAPLAIN VISITED. FAMILY AWARE.", [("CHAPLAIN", "NAME", "dictionary+ner")], ["CHAPLAIN"]),
        ("Consult per Dr. Brother this am.", [("Brother", "NAME", "dictionary")], []),  # a title: a surname
        ("Daughter Paula called.", [("Paula", "NAME", "ner")], []),
        ("Spoke with France about the plan.", [("France", "NAME", "dictionary")], []),  # a name, not "fiance"
    ],
)
def test_when_name_is_only_relation_words_then_dropped(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


def test_when_name_edges_are_cut_then_the_rest_is_still_checked(recovery: Judge) -> None:
    # "son & dauther": once the conjunction is cut, the misspelt relation word alone is no name
    text = "SOCIAL-son & dauther visited."
    note = recovery.process_batch([make_note(text, [("& dauther", "NAME", "ner")])])[0]
    assert not note.spans
    assert sorted(surfaces(note, note.dropped)) == ["&", "dauther"]


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # a date of digits no calendar can read, from the model alone
        ("awake, oriented x 3, follows commands", [("3", "DATE", "ner")], ["3"]),
        ("THEY HAD 4: TWO SONS AND TWO DAUGHTERS", [("4", "DATE", "ner")], ["4"]),
        ("Pressures 152/64 overnight, improved.", [("152/64", "DATE", "ner")], ["152/64"]),
        ("Insulin on a 06/12/18/24 schedule.", [("06/12/18/24", "DATE", "ner")], ["06/12/18/24"]),
        ("Checks on a 22/04/10/16 schedule.", [("22/04/10/16", "DATE", "ner")], ["22/04/10/16"]),  # two "dates"
        # readable dates stay, so do a possible age over 89, the regex's finds and a piece of another detection
        ("Arm fracture 4/97, healed.", [("4/97", "DATE", "ner")], []),
        ("Ventilated 5/28-6/1 for pneumonia.", [("5/28-6/1", "DATE", "ner")], []),
        ("Seen 5/5 in clinic.", [("5/5", "DATE", "ner")], []),
        ("Seen 2023-03 in clinic.", [("2023-03", "DATE", "ner")], []),
        ("She turned 97 last week.", [("97", "DATE", "ner")], []),
        ("Pressures 152/64 overnight.", [("152/64", "DATE", "regex")], []),
        ("Short of breath 4/6 at home.", [("4/6", "DATE", "regex"), ("6", "DATE", "ner")], []),
    ],
)
def test_when_date_of_digits_is_no_calendar_date_then_dropped(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # the model's piece of a larger number or of a clock time
        ("Seen 11:20pm by the team.", [("20", "DATE", "ner")], ["20"]),
        ("note from the unit 07-1530 follows", [("-1530", "DATE", "ner")], ["-1530"]),
        ("Signed 11:20 by the resident.", [("20", "DATE", "ner")], ["20"]),
        # the whole run has an identifier shape, no run-on, another detection on it, not the model's alone
        ("Wife (202232-4455) in to visit.", [("202232", "DATE", "ner")], []),
        ("CAD, MI 6/91, HTN", [("/91", "DATE", "ner")], []),  # the month/year it is a piece of is a date
        ("Arm fracture fx4/97, healed.", [("4/97", "DATE", "ner")], []),
        ("Short of breath 4/6 at home.", [("4/6", "DATE", "regex"), ("4/", "DATE", "ner")], []),
        ("note from the unit 07-1530 follows", [("-1530", "DATE", "ner+regex")], []),
    ],
)
def test_when_span_is_a_piece_of_a_larger_number_then_dropped(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # a one-word dictionary name where a drug goes: after a dose, in a list with a known drug
        ("Sugar 240, gave 4u Reg insulin per scale.", [("Reg", "NAME", "dictionary")], ["Reg"]),
        ("Given 5mg Vit K IV for the INR.", [("Vit", "NAME", "dictionary")], ["Vit"]),
        ("Receiving Kef, Zosyn, Flagyl for now.", [("Kef", "NAME", "dictionary")], ["Kef"]),
        ("Levels of Digoxin/Napa pending.", [("Napa", "NAME", "dictionary")], ["Napa"]),
        # name evidence, no drug beside it, not a list, the model's own find
        ("Lasix given, Dr. Kef aware.", [("Kef", "NAME", "dictionary")], []),
        ("White, Willis and Hoffman signed it.", [("Hoffman", "NAME", "dictionary")], []),
        ("Lasix given. Mark called after.", [("Mark", "NAME", "dictionary")], []),
        ("Given 5mg Vit K IV for the INR.", [("Vit", "NAME", "dictionary+ner")], []),
    ],
)
def test_when_dictionary_name_stands_where_a_drug_goes_then_dropped(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("Ordered by Dr Ames\nService: Cardiology", [("Service", "ORGANIZATION", "dictionary")], ["Service"]),
        ("\n  Reveiw of Sytems:\n  Neuro: intact", [("Reveiw of Sytems", "ORGANIZATION", "dictionary")],
         ["Reveiw of Sytems"]),
        ("Resp: on 2L.\nGU: foley draining well", [("GU", "NAME", "ner")], ["GU"]),
        # a dash ends a system-by-system heading too; a hyphenated name or a number after the dash is no heading
        ("Neuro- alert.\nGU- foley to gravity", [("GU", "NAME", "ner")], ["GU"]),
        ("Resp- clear.\nGU-foley draining", [("GU", "NAME", "ner")], ["GU"]),
        ("Mary-Ellen Okafor called back", [("Mary", "NAME", "dictionary")], []),
        ("Okafor - 617-555-0134 (daughter)", [("Okafor", "NAME", "ner")], []),
        # a misspelt heading word makes a heading only before a colon
        ("\n  Reveiw of Sytems- all negative", [("Reveiw of Sytems", "ORGANIZATION", "dictionary")], []),
        # a first name or a surname before the colon is a speaker or a signature; not a heading when something
        # comes before it on the line or no colon follows
        ("Grace: Are you awake?\nNurse: Yes.", [("Grace", "NAME", "dictionary+ner")], []),
        ("Smith: I will call back.", [("Smith", "NAME", "ner")], []),
        ("Kristiána: Who is there?", [("Kristiána", "NAME", "ner")], []),
        ("Seen in Service: Cardiology", [("Service", "ORGANIZATION", "dictionary")], []),
        ("Service Cardiology today", [("Service", "ORGANIZATION", "dictionary")], []),
    ],
)
def test_when_span_is_a_line_heading_then_dropped(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # a curated abbreviation misspelt into a name-list word, as an item of a list of curated words
        ("Neuro: opens eyes. MAE. PEARL. Follows commands.", [("PEARL", "NAME", "ner")], ["PEARL"]),
        ("neuro: pearl, mae, nods to questions", [("pearl", "NAME", "ner")], ["pearl"]),
        ("NEURO: ALERT. MAE, PERLA, SPEECH CLEAR", [("PERLA", "NAME", "dictionary+ner")], ["PERLA"]),
        # no curated item beside it, a title before it, or no curated word one edit away: a name
        ("Daughter Pearl, at bedside, updated.", [("Pearl", "NAME", "ner")], []),
        ("MAE. Dr. Pearl, aware of labs.", [("Pearl", "NAME", "ner")], []),
        ("MAE. Ruth, his wife, visited.", [("Ruth", "NAME", "ner")], []),
    ],
)
def test_when_misspelt_abbreviation_is_an_item_of_a_list_of_abbreviations_then_dropped(
    recovery: Judge, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


