"""Recovery: candidate spans that are medical terms move to ``note.dropped``; names and the message's
own identifiers stay. Spans are built directly (no dependency on the detectors)."""

from __future__ import annotations

import pytest
from candidate_notes import SpanSpec, make_note, surfaces

from dictionaries import vocab
from processors.pipeline import BuildContext, build_processor
from processors.recovery import MedicalRecovery, covered
from schemas import ConfigError
from schemas.models import Patient, PersonName, Span


@pytest.fixture(scope="module")
def recovery() -> MedicalRecovery:
    proc = build_processor("recovery", {}, BuildContext(cache_dir=vocab.cache_dir()))
    assert isinstance(proc, MedicalRecovery)
    return proc


def dropped_surfaces(recovery: MedicalRecovery, text: str, specs: list[SpanSpec]) -> list[str]:
    """The sorted surfaces of the candidates recovery drops from one note."""
    note = recovery.process_batch([make_note(text, specs)])[0]
    return sorted(surfaces(note, note.dropped))


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("Completed a Bruce protocol stress test.", [("Bruce", "NAME", "ner")], ["Bruce"]),
        ("Murphy sign positive on exam.", [("Murphy", "NAME", "ner")], ["Murphy"]),
        ("Status post Whipple procedure for mass.", [("Whipple", "NAME", "ner")], ["Whipple"]),
        ("Apgar score 8/9 at delivery.", [("Apgar", "NAME", "ner"), ("8/9", "DATE", "regex")], ["Apgar", "8/9"]),
        ("St. Jude valve, INR 2.5 today.", [("St. Jude", "ORGANIZATION", "ner")], ["St. Jude"]),
        ("Results were sent via MyChart.", [("MyChart", "ORGANIZATION", "ner")], ["MyChart"]),
        ("General: NAD. Lungs clear.", [("NAD", "ID", "regex")], ["NAD"]),
        ("Remains on FK506 after transplant.", [("FK506", "ID", "regex")], ["FK506"]),
        ("History of Parkinson's disease.",
         [("Parkinson", "NAME", "dictionary"), ("Parkinson's", "NAME", "ner"),
          ("Parkinson's disease", "NAME", "ner")],
         ["Parkinson", "Parkinson's", "Parkinson's disease"]),
        ("Lasix 40 mg PO daily.", [("Lasix", "NAME", "ner"), ("Lasix 40 mg", "NAME", "ner")],
         ["Lasix", "Lasix 40 mg"]),
        ("TP53 g.7578395G>C detected.", [("7578395", "ID", "regex"), ("g.7578395G>C", "ID", "regex")],
         ["7578395", "g.7578395G>C"]),
        ("Foley catheter removed this morning.", [("Foley", "NAME", "ner")], ["Foley"]),
        ("Kawasaki disease in childhood.", [("Kawasaki", "LOCATION", "ner")], ["Kawasaki"]),
        ("Treated for Lyme disease last summer.", [("Lyme", "LOCATION", "dictionary")], ["Lyme"]),
        ("Meds given at 0630 and 1800.", [("0630", "DATE", "regex"), ("1800", "DATE", "regex")], ["0630", "1800"]),
        ("Vitals: BP 120/80, pain 6/10.", [("120/80", "DATE", "regex"), ("6/10", "DATE", "regex")],
         ["120/80", "6/10"]),
        ("BRCA1 c.68_69delAG, rs80357906.", [("BRCA1", "ID", "regex"), ("rs80357906", "ID", "regex")],
         ["BRCA1", "rs80357906"]),
        ("Allegra 180 mg daily for allergies.", [("Allegra", "NAME", "ner")], ["Allegra"]),
        ("She was started on Allegra last week.", [("Allegra", "NAME", "ner")], ["Allegra"]),
        ("CT head negative for bleed.", [("CT", "LOCATION", "ner")], ["CT"]),
        # an oxygen saturation written "sat": not Saturday (the weekday policy would keep it)
        ("resp: rr 16-18 with 02 sat 97-99% on ra.", [("02 sat", "DATE", "ner")], ["02 sat"]),
        ("TOL EXTUBATION SAT 97 4L NP.", [("SAT 97", "DATE", "ner")], ["SAT 97"]),
        ("ONE HOUR TO RETURN TO SAT > 92; LP", [("SAT > 92", "LOCATION", "ner")], ["SAT > 92"]),
        ("RESP-n/c at 3l,sat-97-99%,rr-10's", [("sat", "DATE", "ner")], ["sat"]),
        ("Transferred to MICU overnight.", [("MICU", "ORGANIZATION", "ner")], ["MICU"]),
        ("NEURO: APGAR 8/9. SKIN: BRADEN 13.", [("APGAR", "NAME", "dictionary"), ("BRADEN", "NAME", "dictionary")],
         ["APGAR", "BRADEN"]),
        ("3. Norco 5/325 1-2 tabs q4h PRN", [("Norco", "LOCATION", "dictionary")], ["Norco"]),
        ("Held for a Mallory-Weiss tear.", [("Mallory", "NAME", "dictionary"), ("Weiss", "NAME", "dictionary")],
         ["Mallory", "Weiss"]),
        ("Echo (1/14): EF 55%, mild MR.", [("Echo", "NAME", "dictionary")], ["Echo"]),
    ],
)
def test_when_span_is_a_medical_term_then_it_is_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    note = make_note(text, specs)
    (out,) = recovery.process_batch([note])
    assert sorted(surfaces(out, out.dropped)) == sorted(dropped)
    assert len(out.spans) + len(out.dropped) == len(note.spans)


@pytest.mark.parametrize(
    ("text", "specs"),
    [
        # (a title inside a name span is cut off: test_when_name_span_has_words_beside_the_name_then_they_are_cut_off)
        ("Seen by Dr. Parkinson in clinic.", [("Parkinson", "NAME", "dictionary"), ("Parkinson", "NAME", "ner")]),
        ("Mr. Bruce Wayne was admitted.", [("Bruce Wayne", "NAME", "ner"), ("Bruce", "NAME", "ner")]),
        ("Note by Foley, RN at bedside.", [("Foley", "NAME", "ner")]),
        ("Allegra called the clinic today.", [("Allegra", "NAME", "ner")]),
        ("Wilson reported no new complaints.", [("Wilson", "NAME", "ner")]),
        ("Discussed with Lasix Jones.", [("Lasix Jones", "NAME", "ner")]),
        ("Admitted on 03/14/2023 at 0630.", [("03/14/2023", "DATE", "regex"), ("0630", "DATE", "regex")]),
        ("Follow up on 6/10 in clinic.", [("6/10", "DATE", "regex")]),
        ("Family meeting Sat 3/14 at noon.", [("Sat", "DATE", "regex"), ("3/14", "DATE", "regex")]),
        ("Family meeting Sat 12 at noon.", [("Sat", "DATE", "ner")]),  # "Sat 12": the 12th, no saturation
        ("He is 92 years old.", [("92", "AGE", "regex")]),
        ("Lives in New Orleans, LA 70112.", [("70112", "LOCATION", "regex"), ("LA", "LOCATION", "ner")]),
        ("Dose 555-1234 mg per pharmacy.", [("555-1234", "PHONE", "regex")]),
        ("Portal: mychart@example.org", [("mychart@example.org", "EMAIL", "regex")]),
        ("Completed a Bruce protocol stress test.", [("Bruce", "NAME", "message+ner")]),
        ("Completed a Bruce protocol stress test.", [("Bruce", "NAME", "message")]),
        ("Transferred to St. Jude for chemotherapy.", [("St. Jude", "ORGANIZATION", "ner")]),
        ("Seen by Wells 2 weeks ago.", [("Wells", "NAME", "ner")]),
        ("Allegra Smith was started on metoprolol.", [("Allegra", "NAME", "ner")]),
        ("Admitted to Community Hospital.", [("Community Hospital", "ORGANIZATION", "dictionary")]),
    ],
)
def test_when_span_is_an_identifier_then_it_is_kept(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec]
) -> None:
    note = make_note(text, specs)
    (out,) = recovery.process_batch([note])
    assert out.dropped == ()
    assert out.spans == note.spans


def test_when_patient_name_is_a_drug_brand_then_the_patients_identifiers_are_kept(recovery: MedicalRecovery) -> None:
    patient = Patient(names=(PersonName(given="Allegra", family="Jones"),), mrn="12345678")
    text = "Allegra Jones (MRN 12345678) was started on Allegra 180 mg daily."
    note = make_note(
        text,
        [("Allegra Jones", "NAME", "message"), ("12345678", "ID", "message"),
         ("Allegra", "NAME", "ner"), ("Allegra", "NAME", "ner", 1)],
        patient=patient,
    )
    (out,) = recovery.process_batch([note])
    assert out.dropped == ()
    unprotected = build_processor(
        "recovery", {"protect_message_identifiers": False}, BuildContext(cache_dir=vocab.cache_dir())
    )
    (out2,) = unprotected.process_batch([note])
    assert [(s.start, s.source) for s in out2.dropped] == [(text.rindex("Allegra"), "ner")]


def test_when_syntax_is_off_then_only_vocabulary_terms_are_dropped() -> None:
    proc = build_processor("recovery", {"use_syntax": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = make_note("Apgar score 8/9 at delivery.", [("Apgar", "NAME", "ner"), ("8/9", "DATE", "regex")])
    (out,) = proc.process_batch([note])
    assert surfaces(out, out.dropped) == ["Apgar"]
    assert surfaces(out, out.spans) == ["8/9"]


def test_when_note_has_no_candidates_then_it_is_returned_unchanged(recovery: MedicalRecovery) -> None:
    empty = make_note("Nothing to see here.", [])
    protected = make_note("Bruce protocol", [("Bruce", "NAME", "message")])
    assert recovery.process_batch([empty, protected]) == [empty, protected]


def test_when_note_already_has_dropped_spans_then_new_ones_are_appended(recovery: MedicalRecovery) -> None:
    earlier = Span(start=0, end=4, label="NAME", source="ensemble", score=0.1)
    note = make_note("Foley catheter in place.", [("Foley", "NAME", "ner")]).replace(dropped=(earlier,))
    (out,) = recovery.process_batch([note])
    assert out.dropped[0] == earlier
    assert surfaces(out, out.dropped[1:]) == ["Foley"]
    assert note.spans != out.spans  # the input note is not mutated
    assert len(note.dropped) == 1


def test_when_options_are_unknown_then_config_error() -> None:
    with pytest.raises(ConfigError):
        build_processor("recovery", {"bogus": 1}, BuildContext(cache_dir=vocab.cache_dir()))


@pytest.mark.parametrize(
    ("text", "intervals", "expected"),
    [
        ("Lasix", [(0, 5)], True),
        ("Lasix,", [(0, 5)], True),                   # trailing punctuation
        ("Parkinson's", [(0, 9)], True),              # possessive
        ("Lasix Jones", [(0, 5)], False),             # extra non-medical text
        ("Lasix 40 mg", [(0, 5), (6, 11)], True),     # a term and a dose side by side
        ("Bruce", [(0, 14)], True),                   # inside a longer match
        ("Lasix", [], False),
    ],
)
def test_when_coverage_is_checked_then_only_trivial_leftovers_are_allowed(
    text: str, intervals: list[tuple[int, int]], expected: bool
) -> None:
    assert covered(text + " protocol", 0, len(text), intervals) is expected



@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        # words after the name: a lower-case word after a capitalised name, a frequent word without case evidence,
        # a credential; titles, conjunctions and relation words before it
        ("Dr Kearns paged and told of the fall.", "Kearns paged", "Kearns", ["paged"]),
        ("Dr King has seen the patient.", "King has", "King", ["has"]),
        ("K 3.1. DR MANNING AWARE AND ORDERED KCL.", "MANNING AWARE", "MANNING", ["AWARE"]),
        ("febrile overnight, dr parrilli aware, cultures sent", "parrilli aware", "parrilli", ["aware"]),
        ("plan to extubate in am. s. roberto rrt", "s. roberto rrt", "s. roberto", ["rrt"]),
        ("Family in attendance. Drs' Ballou pronounced.", "Drs' Ballou", "Ballou", ["Drs'"]),
        ("PT SEEN BY DR'S OKAFOR AND LAM.", "S OKAFOR", "OKAFOR", ["S"]),  # the "s" of "DR'S"
        ("ASKED FOR RABBI. RABBI KLEIN CAME TO SPEAK.", "RABBI KLEIN", "KLEIN", ["RABBI"]),
        ("Mr. Arthur Penhallow was admitted.", "Mr. Arthur Penhallow", "Arthur Penhallow", ["Mr."]),
        # nothing to cut: names that are English words, initials, lower-case name parts, foreign place words,
        # hyphenated and apostrophe surnames, a conjunction the model stopped at
        ("DR KIM YOUNG CAME TO SEE PT.", "KIM YOUNG", "KIM YOUNG", []),
        ("Seen by Dr. Amy Brown today.", "Amy Brown", "Amy Brown", []),
        ("SOCIAL: CAMBRIDGE, JOANN N. MD PAGED.", "CAMBRIDGE, JOANN N", "CAMBRIDGE, JOANN N", []),
        ("his wife, Janet logan is here", "Janet logan", "Janet logan", []),
        ("Where: Novo mesto Country Club.", "Novo mesto", "Novo mesto", []),
        ("Met with Dr. Retterer-moore today.", "Retterer-moore", "Retterer-moore", []),
        ("ci<2.0. mary o'hara np aware.", "mary o'hara", "mary o'hara", []),
        ("Ludwig van Beethoven wrote it.", "Ludwig van Beethoven", "Ludwig van Beethoven", []),
        ("The Jones, Smith and Davis Orchestra played.", "Smith and", "Smith and", []),
        ("Laszlo Smith is a 89-year-old man.", "Laszlo Smith is a", "Laszlo Smith", ["is a"]),
        ("Met with John A today.", "John A", "John A", []),  # a capital: an initial
        ("sent to J. Anderson M.D..\nnext", "J. Anderson M.D..", "J. Anderson", ["M.D.."]),
        ("Letter from Jane Poire, Ph.D. today", "Jane Poire, Ph.D.", "Jane Poire", [", Ph.D."]),
        ("Seen by Mary A. B. today", "Mary A. B.", "Mary A. B.", []),  # initials, no credential
        ("Follow-up: Ducret, M.D., Eastgate", "Ducret, M", "Ducret", [", M"]),  # the model stopped inside it
        ("Seen by C. Sponder-Oseni M.D. at", "C. Sponder-Oseni M.D", "C. Sponder-Oseni", ["M.D"]),
        ("Seen by John M. Smith", "John M", "John M", []),  # "M." is an initial
        # a record's field label after the name, in any case
        ("Re: Rosalee Smith, DOB 01/15/1939", "Rosalee Smith, DOB", "Rosalee Smith", [", DOB"]),
        ("Johnson, Ronald  MRN MR4619898", "Johnson, Ronald  MRN", "Johnson, Ronald", ["MRN"]),
        ("PT: JOHN SMITH DOB 3/4/51", "JOHN SMITH DOB", "JOHN SMITH", ["DOB"]),
        # a department's head after the name, its speciality outside the span; a span that runs on into the
        # department's name is left whole (a hospital may follow it)
        ("Dr. Jorge Planelles Gómez Servicio de Urología", "Jorge Planelles Gómez Servicio de", "Jorge Planelles Gómez",
         ["Servicio de"]),
        ("Dr. Alfonso Vidal Casariego Unidad de Nutrición", "Alfonso Vidal Casariego Unidad", "Alfonso Vidal Casariego",
         ["Unidad"]),
        ("Dr. Ramón Saiz Servicio de Radiología Clínica Universidad", "Ramón Saiz Servicio de Radiología Clínica",
         "Ramón Saiz Servicio de Radiología Clínica", []),
        ("Consultar con Servicio de Urología", "Servicio", "Servicio", []),  # one word: the model decides it
    ],
)
def test_when_name_span_has_words_beside_the_name_then_they_are_cut_off(
    recovery: MedicalRecovery, text: str, span: str, kept: str, cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, "NAME", "ner")])])[0]
    assert surfaces(note, note.spans) == [kept]
    assert surfaces(note, note.dropped) == cut
    assert all(s.label == "NAME" and s.source == "ner" for s in (*note.spans, *note.dropped))


@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        ("Daughters Ruth and Naomi visited.", "Ruth and Naomi", ["Ruth", "Naomi"], ["and"]),
        ("DRS PELLETIER AND OKAFOR AWARE OF K 3.1", "PELLETIER AND OKAFOR AWARE", ["PELLETIER", "OKAFOR"],
         ["AND", "AWARE"]),
        ("seen by dr. ames & dr. kowalczyk", "ames & dr. kowalczyk", ["ames", "kowalczyk"], ["& dr."]),
        # one name: a list or firm after "Word, ", a street before a number, a family firm
        ("Filed by Hayes, Moreno and Quist for the family.", "Moreno and Quist", ["Moreno and Quist"], []),
        ("Sent to Calle and Rivas 12 last week.", "Calle and Rivas", ["Calle and Rivas"], []),
        ("Owned by Parker and Sons.", "Parker and Sons", ["Parker and Sons"], []),
    ],
)
def test_when_name_span_joins_two_names_then_it_is_split_at_the_conjunction(
    recovery: MedicalRecovery, text: str, span: str, kept: list[str], cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, "NAME", "ner")])])[0]
    assert surfaces(note, note.spans) == kept
    assert sorted(surfaces(note, note.dropped)) == sorted(cut)
    assert all(s.label == "NAME" and s.source == "ner" for s in (*note.spans, *note.dropped))


def test_when_use_name_edges_off_then_name_spans_keep_their_edges() -> None:
    proc = build_processor("recovery", {"use_name_edges": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("DR MANNING AWARE.", [("MANNING AWARE", "NAME", "ner")])])[0]
    assert surfaces(note, note.spans) == ["MANNING AWARE"]
    assert not note.dropped


def test_when_message_name_has_words_beside_it_then_it_is_not_cut(recovery: MedicalRecovery) -> None:
    note = make_note("Dr Kearns paged.", [("Kearns paged", "NAME", "message")])
    out = recovery.process_batch([note])[0]
    assert out.spans == note.spans and not out.dropped


@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        # a unit's name with its ward or floor number, in a line that moves the patient: the number is cut off
        ("PLAN: TRANSFER TO QUARTERMAIN 2 WHEN BED AVAILABLE.", "QUARTERMAIN 2", "QUARTERMAIN", ["2"]),
        ("pt transferred from quartermain 3 for swan placement", "quartermain 3", "quartermain", ["3"]),
        ("Stable, transfer back to Fenwick3.", "Fenwick3", "Fenwick", ["3"]),
        ("p: to fenwick 2 at 1000; diet as tol", "fenwick 2", "fenwick", ["2"]),  # "to" right before it
        ("Code blue called to Lakeside 6 at 0400.", "Lakeside 6", "Lakeside", ["6"]),
        ("? to Lakeside 4 when a bed opens", "Lakeside 4", "Lakeside", ["4"]),
        # a house number, an apartment, a route, no movement cue, more than one word: the place stays whole
        ("Lives at Puruntie 82 with his wife.", "Puruntie 82", "Puruntie 82", []),
        ("Transferred to her home at Apt 12.", "Apt 12", "Apt 12", []),
        ("Transferred from a clinic on Route 9.", "Route 9", "Route 9", []),
        ("Daughter lives in Lakeside 4.", "Lakeside 4", "Lakeside 4", []),
        ("Transferred to 14 Clover Street.", "14 Clover Street", "14 Clover Street", []),
        ("The letter arrived at 17224 Verbraut 66, Gdansk", "Verbraut 66", "Verbraut 66", []),  # a house number
    ],
)
def test_when_unit_name_has_a_ward_number_then_the_number_is_cut_off(
    recovery: MedicalRecovery, text: str, span: str, kept: str, cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, "LOCATION", "ner")])])[0]
    assert surfaces(note, note.spans) == [kept]
    assert surfaces(note, note.dropped) == cut


def test_when_use_ward_numbers_off_then_the_number_stays() -> None:
    proc = build_processor("recovery", {"use_ward_numbers": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("TRANSFER TO QUARTERMAIN 2.", [("QUARTERMAIN 2", "LOCATION", "ner")])])[0]
    assert surfaces(note, note.spans) == ["QUARTERMAIN 2"]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        # a part of the day written as a word before or after the date, a line of no date after a line break
        ("NG tube pulled 4/12 pm, tolerating sips.", "4/12 pm", "4/12", ["pm"]),
        ("Febrile to 102 on eve 5/3; cultures sent.", "eve 5/3", "5/3", ["eve"]),
        ("TRANSFUSED 2U 6/18 AM FOR HCT 24.", "6/18 AM", "6/18", ["AM"]),
        ("Dialysis due Monday a.m. per renal.", "Monday a.m.", "Monday", ["a.m."]),
        ("TRANSFERRED FOR CHF 3/22 \n \nHX: HTN, DM", "3/22 \n \nHX", "3/22", ["HX"]),
        ("Dialysis runs 6/9 eves via the permacath.", "6/9 eves", "6/9", ["eves"]),
        # a shift's hours after the date: a range, no moment
        ("Nursing addendum 4/2/19 07-1930, see flowsheet", "4/2/19 07-1930", "4/2/19", ["07-1930"]),
        ("NPN 11/3 7p-7a: slept well", "11/3 7p-7a", "11/3", ["7p-7a"]),
        ("Admitted 5/28-6/1 for pneumonia", "5/28-6/1", "5/28-6/1", []),  # a range of days stays
        # nothing to cut: a clock time is part of a date-time, two lines with a date each, a time alone
        ("Extubated 3/14 3:30 PM without trouble.", "3/14 3:30 PM", "3/14 3:30 PM", []),
        ("Seen 3/14/2023 @ 0930 by the team.", "3/14/2023 @ 0930", "3/14/2023 @ 0930", []),
        ("Seen 3/4\n3/5 again", "3/4\n3/5", "3/4\n3/5", []),
    ],
)
def test_when_date_span_has_edges_that_are_no_date_then_they_are_cut_off(
    recovery: MedicalRecovery, text: str, span: str, kept: str, cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, "DATE", "ner")])])[0]
    assert surfaces(note, note.spans) == [kept]
    assert surfaces(note, note.dropped) == cut
    assert all(s.label == "DATE" and s.source == "ner" for s in (*note.spans, *note.dropped))


def test_when_use_date_edges_off_then_date_spans_keep_their_edges() -> None:
    proc = build_processor("recovery", {"use_date_edges": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("Pulled 4/12 pm.", [("4/12 pm", "DATE", "ner")])])[0]
    assert surfaces(note, note.spans) == ["4/12 pm"]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "span", "label", "kept", "cut"),
    [
        # a last word that is no part of the place's name: a preposition, "or", the letter of "s/p"
        ("had a hernia repair at lakeview hospital at age 40", "lakeview hospital at", "ORGANIZATION",
         "lakeview hospital", ["at"]),
        ("SCREENED FOR OAKDALE REHAB OR BAYSIDE REHAB", "OAKDALE REHAB OR", "ORGANIZATION", "OAKDALE REHAB", ["OR"]),
        ("discharged from Fairview Hospital for alcohol withdrawal", "Fairview Hospital for", "ORGANIZATION",
         "Fairview Hospital", ["for"]),
        ("came over from Mercy West s/p fall", "Mercy West s", "ORGANIZATION", "Mercy West", ["s"]),
        ("will go back to St. Anne's -10AM", "St. Anne's -10", "ORGANIZATION", "St. Anne's", ["-10"]),
        # a hospital's unit after its name, in capitals or lower case; a capitalised "Ed" may be a name
        ("TRANSFERRED TO GH ED. INTUBATED", "GH ED", "ORGANIZATION", "GH", ["ED"]),
        ("pt came from mercy icu overnight", "mercy icu", "ORGANIZATION", "mercy", ["icu"]),
        ("Report called to Bayview Ed for review", "Bayview Ed", "ORGANIZATION", "Bayview Ed", []),
        # "of" and "and" stay (the model stopped inside a longer name), so does a one-word place
        ("She lives on the corner of Main St.", "corner of", "LOCATION", "corner of", []),
        ("The Jones, Smith and Davis firm", "Smith and", "ORGANIZATION", "Smith and", []),
        ("Seen at Oakdale for years", "Oakdale", "LOCATION", "Oakdale", []),
        # a department's name before a hospital's: its head, or "de" and a speciality; a surname's "de" stays
        ("Dr. Soto. Servicio de Nefrología, Hospital Universitario Central de Asturias. Oviedo",
         "Servicio de Nefrología, Hospital Universitario Central de Asturias", "ORGANIZATION",
         "Hospital Universitario Central de Asturias", ["Servicio de Nefrología,"]),
        ("Servicio de Urología Hospital Universitario Doctor Peset Valencia", "de Urología Hospital Universitario Doctor "
         "Peset", "ORGANIZATION", "Hospital Universitario Doctor Peset", ["de Urología"]),
        ("Juan de Armas Hospital de Getafe", "de Armas Hospital de Getafe", "ORGANIZATION", "de Armas Hospital de Getafe",
         []),
        ("Servicio de Medicina Interna de nuestro hospital", "Servicio de Medicina Interna de nuestro hospital",
         "ORGANIZATION", "Servicio de Medicina Interna de nuestro hospital", []),  # no hospital's name: the model's
        # a speciality's name first; not a name ending in "-ía" ("María", "García": the name lists, accents folded)
        ("Anestesiología y Clínica de Dolor Hospital General Universitario", "Anestesiología y Clínica de Dolor "
         "Hospital General Universitario", "ORGANIZATION", "Hospital General Universitario",
         ["Anestesiología y Clínica de Dolor"]),
        ("Dra. María José Gómez Maestra Hospital Universitario", "María José Gómez Maestra Hospital Universitario",
         "ORGANIZATION", "María José Gómez Maestra Hospital Universitario", []),
    ],
)
def test_when_place_span_has_a_word_of_no_name_at_an_edge_then_it_is_cut_off(
    recovery: MedicalRecovery, text: str, span: str, label: str, kept: str, cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, label, "ner")])])[0]
    assert surfaces(note, note.spans) == [kept]
    assert surfaces(note, note.dropped) == cut


def test_when_use_place_edges_off_then_places_keep_their_last_word() -> None:
    proc = build_processor("recovery", {"use_place_edges": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("at lakeview hospital at noon", [("lakeview hospital at", "ORGANIZATION",
                                                                           "ner")])])[0]
    assert surfaces(note, note.spans) == ["lakeview hospital at"]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        # (a span with a whole phone's shape is no candidate: the model's piece of one is)
        ("niece: Ana Ruiz- 312-555-0147 \n 2) son: Leo", "-555-0147 \n 2", "-555-0147", ["2"]),
        # nothing to cut: one line, or more digits on the other line
        ("call 312-555-0147 after 5", "312-555-0147", "312-555-0147", []),
        ("Tel: 312 555\n0147", "312 555\n0147", "312 555\n0147", []),
    ],
)
def test_when_phone_span_crosses_a_line_break_then_the_other_line_is_cut_off(
    recovery: MedicalRecovery, text: str, span: str, kept: str, cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, "PHONE", "ner")])])[0]
    assert surfaces(note, note.spans) == [kept]
    assert surfaces(note, note.dropped) == cut


def test_when_use_phone_edges_off_then_phone_spans_keep_their_lines() -> None:
    proc = build_processor("recovery", {"use_phone_edges": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("Ana 312-555-0147 \n 2)", [("-555-0147 \n 2", "PHONE", "ner")])])[0]
    assert surfaces(note, note.spans) == ["-555-0147 \n 2"] and not note.dropped


@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        ("Transferred from Mercy Medical Center today.", "Mercy Medical Center", "Mercy", ["Medical Center"]),
        ("Seen at Memorial Hospital.", "Memorial Hospital", "Memorial", ["Hospital"]),
        ("Back to Hospital today.", "Hospital", "Hospital", []),  # one word stays
        ("Lives in Green Bay.", "Green Bay", "Green Bay", []),
    ],
)
def test_when_institution_type_words_are_off_then_they_are_cut_off(
    recovery: MedicalRecovery, text: str, span: str, kept: str, cut: list[str]
) -> None:
    note = make_note(text, [(span, "ORGANIZATION", "ner")])
    assert recovery.process_batch([note])[0].spans == note.spans  # the default policy keeps them
    proc = build_processor("recovery", {"institution_type_words": False}, BuildContext(cache_dir=vocab.cache_dir()))
    out = proc.process_batch([note])[0]
    assert surfaces(out, out.spans) == [kept]
    assert surfaces(out, out.dropped) == cut


@pytest.mark.parametrize(
    ("text", "span", "label", "kept", "cut"),
    [
        # each line a candidate of its own: the decision stage judges "Medical" and "DISCHARGE SUMMARY" alone
        ("Dr. Edgar F. Gonzalez\nPlease call", "Edgar F. Gonzalez\nPlease", "NAME", ["Edgar F. Gonzalez", "Please"], []),
        # a line that is a medical term is dropped as any candidate is ("Medical Record")
        ("Name: Edgar F. Gonzalez\nMedical Record #: 31", "Edgar F. Gonzalez\nMedical", "NAME",
         ["Edgar F. Gonzalez"], ["Medical"]),
        ("Dr. John\nSmith today", "John\nSmith", "NAME", ["John", "Smith"], []),
        ("Russell Regional Hospital\nDISCHARGE SUMMARY\n", "Russell Regional Hospital\nDISCHARGE SUMMARY",
         "ORGANIZATION", ["Russell Regional Hospital", "DISCHARGE SUMMARY"], []),
        # the name edges still apply on each line; a line of punctuation is no candidate
        ("Rod Strong\n--\nDR MANNING AWARE.", "Rod Strong\n--\nDR MANNING AWARE", "NAME",
         ["Rod Strong", "MANNING"], ["--", "DR", "AWARE"]),
    ],
)
def test_when_name_or_organisation_span_crosses_a_line_break_then_it_is_split_there(
    recovery: MedicalRecovery, text: str, span: str, label: str, kept: list[str], cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, label, "ner")])])[0]
    assert surfaces(note, note.spans) == kept
    assert sorted(surfaces(note, note.dropped)) == sorted(cut)
    assert all(s.label == label and s.source == "ner" for s in (*note.spans, *note.dropped))


def test_when_span_repeats_the_message_name_across_a_line_break_then_the_other_line_is_judged_alone(
    recovery: MedicalRecovery,
) -> None:
    # the line that repeats the message's name stays protected; the next line is a candidate like any other
    patient = Patient(names=[PersonName(given="Peyton", family="Flores")])
    note = make_note("Name: Peyton Flores\nMedical Record #: 31", [("Peyton Flores\nMedical", "NAME", "ner")],
                     patient=patient)
    out = recovery.process_batch([note])[0]
    assert surfaces(out, out.spans) == ["Peyton Flores"]
    assert surfaces(out, out.dropped) == ["Medical"]
    # a protected source's span is never split
    source = make_note("Name: Peyton Flores\nMedical", [("Peyton Flores\nMedical", "NAME", "message")])
    assert recovery.process_batch([source])[0].spans == source.spans


def test_when_place_crosses_a_line_break_or_use_line_breaks_is_off_then_the_span_stays_whole() -> None:
    text = "Lives at 12 Main Street\nSpringfield, IL"
    address = make_note(text, [("12 Main Street\nSpringfield", "LOCATION", "ner")])
    default = build_processor("recovery", {}, BuildContext(cache_dir=vocab.cache_dir()))
    assert default.process_batch([address])[0].spans == address.spans  # an address runs across lines
    proc = build_processor("recovery", {"use_line_breaks": False}, BuildContext(cache_dir=vocab.cache_dir()))
    name = make_note("Dr. John\nSmith today", [("John\nSmith", "NAME", "ner")])
    out = proc.process_batch([name])[0]
    assert surfaces(out, out.spans) == ["John\nSmith"] and not out.dropped


def test_when_span_repeats_the_message_name_then_its_edges_are_cut_but_never_a_message_word(
    recovery: MedicalRecovery,
) -> None:
    patient = Patient(names=[PersonName(given="Peyton", family="Flores")])
    note = make_note("Peyton Flores reports pain.", [("Peyton Flores reports", "NAME", "ner")], patient=patient)
    out = recovery.process_batch([note])[0]
    assert surfaces(out, out.spans) == ["Peyton Flores"]
    assert surfaces(out, out.dropped) == ["reports"]
    # a word the edge rule would cut stays when the message names it (an alias "Reports Smith", however unlikely)
    alias = Patient(names=[PersonName(given="Peyton", family="Flores"), PersonName(given="Reports", family="Smith")])
    note = make_note("Peyton Flores reports pain.", [("Peyton Flores reports", "NAME", "ner")], patient=alias)
    out = recovery.process_batch([note])[0]
    assert out.spans == note.spans and not out.dropped
    # nor is a span that repeats the message ever dropped as a medical term ("Allegra Jones" above)


@pytest.mark.parametrize(
    ("text", "span", "label", "kept", "dropped"),
    [
        # a form's field label at a candidate's ends (a colon after it, or a dash glued to the value): cut off
        ("Nombre:  Pedro.\nApellidos: De Miguel Rivera.\nNHC: 2569870.", "Apellidos: De Miguel Rivera", "NAME",
         ["De Miguel Rivera"], ["Apellidos:"]),
        ("Médico: Rosa María Jiménez Rodríguez    NºCol: 41 41 98745.", "Rosa María Jiménez Rodríguez    NºCol",
         "NAME", ["Rosa María Jiménez Rodríguez"], ["NºCol"]),
        ("Apellidos: Ramos Baez.\nCIPA: nhc-739146.\nNASS: 71", "nhc-739146", "ID", ["739146"], ["nhc-"]),
        ("Name: John Smith, seen today.", "Name: John Smith", "NAME", ["John Smith"], ["Name:"]),
        ("Patient: Anna Becker\nVorname: Anna", "Vorname: Anna", "NAME", ["Anna"], ["Vorname:"]),
        # only labels: dropped whole
        ("Nombre:  Pedro.\nApellidos: De Miguel Rivera.", "Apellidos", "NAME", [], ["Apellidos"]),
        # a candidate inside a label of two words or with a hyphen: dropped; the label before a value: cut off
        ("13002 Ciudad Real. Correo electrónico: jortegacar@gmail.com", "Correo", "NAME", [], ["Correo"]),
        ("33006, Oviedo E-mail: galatinog@hotmail.com", "E", "LOCATION", [], ["E"]),
        ("Fecha de nacimiento: 21/07/1939.", "Fecha de nacimiento: 21/07/1939", "DATE", ["21/07/1939"],
         ["Fecha de nacimiento:"]),
        ("Sent to E. Smith-Jones: today", "E. Smith-Jones", "NAME", ["E. Smith-Jones"], []),
        # the start of such a label at a candidate's end, the label running on past it: cut off
        ("Hospital La Fe. Valencia España E-mail: x@y.es", "Valencia España E", "LOCATION", ["Valencia España"],
         ["E"]),
        ("Dra. Natalia del Valle González Correo electrónico: nd@x.es", "Natalia del Valle González Correo", "NAME",
         ["Natalia del Valle González"], ["Correo"]),
        ("Seen by Juan Pérez E. Smith today", "Juan Pérez E", "NAME", ["Juan Pérez E"], []),  # an initial
        # a span that ran across a line break into the next line's label, whatever its words: cut at the break
        ("Domicilio: Calle Cuba, 1, 3 B.\nLocalidad/ Provincia: Málaga.", "Calle Cuba, 1, 3 B.\nLocalidad",
         "LOCATION", ["Calle Cuba, 1, 3 B."], ["Localidad"]),
        ("Domicilio: Av. Nicaragua, 45.\nLocalidad/ Provincia: Valencia.", "Av. Nicaragua, 45.\nLocalidad/ Provincia",
         "LOCATION", ["Av. Nicaragua, 45."], ["Localidad/ Provincia"]),
        ("Seen at 12 Elm Street\nAdmission date: 3/14", "12 Elm Street\nAdmission", "LOCATION", ["12 Elm Street"],
         ["Admission"]),
        # the next line is no label (no colon, or a number before it): the address keeps its lines
        ("Lives at 12 Elm Street\nSpringfield, MA 01103", "12 Elm Street\nSpringfield, MA", "LOCATION",
         ["12 Elm Street\nSpringfield, MA"], []),
        ("Calle Cuba 1\nMadrid 28001: piso 3", "Calle Cuba 1\nMadrid 28001", "LOCATION", ["Calle Cuba 1\nMadrid 28001"],
         []),
        # a sex field's value names a sex, no one
        ("Edad: 53 años Sexo: H.\nFecha de Ingreso: 13/06/2016.", "H.", "NAME", [], ["H."]),
        ("Age: 61 Sex: F Admitted: 3/14", "F", "NAME", [], ["F"]),
        # no colon after the word, a word outside the table, an initial: nothing to cut
        ("Dr. Weber, Name unknown to the family.", "Weber, Name", "NAME", ["Weber, Name"], []),
        ("Flew in from Nome: Alaska air ambulance.", "Nome", "LOCATION", ["Nome"], []),
        ("Seen by Dr. M. Smith today.", "M. Smith", "NAME", ["M. Smith"], []),
        ("Sexo: H. Seen by H. Jones.", "H. Jones", "NAME", ["H. Jones"], []),
    ],
)
def test_when_a_candidate_holds_a_forms_field_labels_then_they_are_cut_off_or_it_is_dropped(
    recovery: MedicalRecovery, text: str, span: str, label: str, kept: list[str], dropped: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, label, "ner")])])[0]
    assert surfaces(note, note.spans) == kept
    assert surfaces(note, note.dropped) == dropped


def test_when_field_labels_are_off_then_the_labels_stay() -> None:
    proc = build_processor("recovery", {"use_field_labels": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = make_note("Apellidos: Ramos Baez.\nSexo: H.", [("Apellidos: Ramos Baez", "NAME", "ner"), ("H.", "NAME", "ner")])
    (out,) = proc.process_batch([note])
    assert surfaces(out, out.spans) == ["Apellidos: Ramos Baez", "H."]


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # a lone lower-case particle of the other languages with no candidate beside it: a sentence's word
        ("Varón de 64 años que consulta por disuria.", [("de", "LOCATION", "ner")], ["de"]),
        ("Tumor a nivel del lecho quirúrgico.", [("del", "LOCATION", "ner")], ["del"]),
        # beside a name or a place it is theirs: the model split "Maria de la Cruz", "Santiago de Compostela"
        ("Paciente: Maria de la Cruz, 45 años.", [("Maria", "NAME", "ner"), ("de", "NAME", "ner"),
                                                  ("la Cruz", "NAME", "ner")], []),
        ("Vive en Santiago de Compostela.", [("Santiago", "LOCATION", "ner"), ("de", "LOCATION", "ner")], []),
        # capitalised ("Residencial El Limonar"), an English word, or more than the particle: not this rule's
        ("Residencial El Limonar, Torremolinos", [("El", "LOCATION", "ner")], []),
        ("Transferred to the floor.", [("the", "LOCATION", "dictionary")], []),
        # another language's noun for a patient or a sex as a report's sentence starts: no one's name
        ("Informe clínico del paciente: Varón de 64 años que consulta.", [("Varón de", "NAME", "ner")], ["Varón de"]),
        ("Mujer de 41 años sin antecedentes.", [("Mujer", "NAME", "ner")], ["Mujer"]),
        ("Paciente de 62 años de edad.", [("Paciente", "LOCATION", "ner")], ["Paciente"]),
        # a name in the lists ("Donna", "Nina"), an age group MEDDOCAN counts ("Lactante"), or more than the nouns
        ("They had 6: Hleb, Sheila, Donna, Sherry.", [("Donna", "NAME", "ner")], []),
        ("Lactante mujer de 12 meses.", [("Lactante", "NAME", "ner")], []),
        ("Mujer Rosa Pérez ingresa.", [("Mujer Rosa Pérez", "NAME", "ner")], []),
    ],
)
def test_when_a_candidate_is_a_lone_particle_or_only_nouns_for_a_patient_then_it_is_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == dropped


@pytest.mark.parametrize(("option", "span"), [("use_lone_particles", "de"), ("use_person_nouns", "Varón de")])
def test_when_the_option_is_off_then_the_candidate_stays(option: str, span: str) -> None:
    proc = build_processor("recovery", {option: False}, BuildContext(cache_dir=vocab.cache_dir()))
    assert dropped_surfaces(proc, "Varón de 64 años.", [(span, "LOCATION", "ner")]) == []
