"""regex step, ages over 89: the number only, in English and in the other languages the regex step reads, and vitals,
pack-years and other units that are not ages."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from schemas.labels import Label, Subtype

Expected = tuple[str, Label, Subtype | None]

A = Label.AGE

POSITIVE: list[tuple[str, list[Expected]]] = [
    # ages over 89
    ("Pt is a 92 yo M with CHF.", [("92", A, None)]),
    ("A 92-year-old woman with dementia.", [("92", A, None)]),
    ("Age 95, lives alone.", [("95", A, None)]),
    ("Patient aged 101 at admission.", [("101", A, None)]),
    ("92 y/o F s/p fall", [("92", A, None)]),
    ("92M presents with syncope.", [("92", A, None)]),
    ("Pt is a 94 F with dementia.", [("94", A, None)]),
    ("A woman in her 90s.", [("90s", A, None)]),
    ("A ninety-two year old man.", [("ninety-two", A, None)]),
    # the other languages (sentences of our own)
    ("Varón de 92 años que ingresa por disnea.", [("92", A, None)]),
    ("Paciente de 94 años, con antecedentes de EPOC.", [("94", A, None)]),
    ("Edad: 96. Sexo: mujer.", [("96", A, None)]),
    ("Mujer, edad de 101 años.", [("101", A, None)]),
    ("Pacient de 93 anys amb insuficiència cardíaca.", [("93", A, None)]),
    ("Doente do sexo feminino, 91 anos, com dispneia.", [("91", A, None)]),
    ("Donna di 93 anni ricoverata per polmonite.", [("93", A, None)]),
    ("Sesso: F. Età: 98.", [("98", A, None)]),
    ("Homme de 93 ans hospitalisé pour chute.", [("93", A, None)]),
    ("Âge : 97 ; vit seul.", [("97", A, None)]),
    ("Die 93-jährige Patientin wurde aufgenommen.", [("93", A, None)]),
    ("Ein 90jähriger Mann mit Synkope.", [("90", A, None)]),
    ("Patient, 95 Jahre alt, stellte sich vor.", [("95", A, None)]),
    ("Geschlecht: m. Alter: 99", [("99", A, None)]),
    ("Een 92-jarige vrouw.", [("92", A, None)]),
    ("Vrouw, 93 jaar oud.", [("93", A, None)]),
    ("Geslacht: V, leeftijd: 94.", [("94", A, None)]),
]


#: German text only: "J." after a number is also a unit ("120 J", joules) and the German words that tell the text
#: (``dates.german_near``) are read in lower case, so these are not in the ALL-CAPS test.
GERMAN_ONLY: list[tuple[str, list[Expected]]] = [
    ("Patientin (91 J.) mit Dyspnoe.", [("91", A, None)]),
    ("Aufnahme einer 94 J. alten Frau nach Sturz.", [("94", A, None)]),
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE + GERMAN_ONLY, ids=[t for t, _ in POSITIVE + GERMAN_ONLY])
def test_when_age_over_89_then_tagged_with_exact_offsets(
    assert_tagged: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged(text, expected)


@pytest.mark.parametrize(("text", "expected"), [p for p in POSITIVE if p[0].upper() != p[0]],
                         ids=[p[0].upper() for p in POSITIVE if p[0].upper() != p[0]])
def test_when_all_caps_then_same_ages(
    assert_tagged_upper: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged_upper(text, expected)


#: Temperatures, weights and other vitals in the 90-125 range.
MUST_NOT_TAG: list[str] = [
    "T 98.6", "Temp 99 F", "Tmax 101 F", "weight 92 kg", "O2 sat 92 F", "HR 92, RR 20", "93% on RA",
    "sinus rhythm in the 90's all night",  # "in the 90s" is a rate; an age is "in her 90s"
    # the other languages: ages up to 89, pack-years, other units of time, joules, an English "alter"
    "Mujer de 71 años con HTA.", "Fumador de 95 años-paquete.", "Edad: 95 días.", "Alter: 92 Tage",
    "Età: 90 giorni", "Defibrillated, shocked at 120 J. Rhythm returned.", "Do not alter 100 ml bolus.",
]


@pytest.mark.parametrize("text", MUST_NOT_TAG + [t.upper() for t in MUST_NOT_TAG])
def test_when_medical_value_then_not_redacted(assert_not_redacted: Callable[[str], None], text: str) -> None:
    assert_not_redacted(text)
