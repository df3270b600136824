"""Medical syntax recognisers: variants, doses, vitals, scores, times, labs, levels, genes, drug codes are
recognised; identifiers (dates, ages, ZIPs, phones, MRNs, date-times) are not; limited scans keep offsets.

Genes come from the real vocabulary (built on first use into the run's DEID_CACHE_DIR, then loaded), so the
gene cases also check that the builder keeps those symbols.
"""

from __future__ import annotations

import pytest

from dictionaries.medical import medical_vocabulary
from dictionaries.medical_syntax import SYNTAX_PATTERNS, syntax_spans


@pytest.fixture(scope="module")
def genes() -> frozenset[str]:
    return medical_vocabulary().genes


def test_every_pattern_has_a_kind_and_lower_case_triggers_when_lowered() -> None:
    for sp in SYNTAX_PATTERNS:
        assert sp.kind and sp.regex.pattern
        if sp.lowered:
            assert all(t == t.lower() for t in sp.triggers), sp.kind


def test_when_genes_are_given_as_any_iterable_then_they_are_recognised() -> None:
    assert syntax_spans("BRAF V600E positive", ["BRAF"]) == [(0, 10, "gene")]
    assert syntax_spans("BRAF V600E positive", []) == []


@pytest.mark.parametrize(
    ("text", "surface", "kind"),
    [
        ("TP53 g.7578395G>C was found", "g.7578395G>C", "variant"),
        ("BRCA1 c.68_69delAG carrier", "c.68_69delAG", "variant"),
        ("NM_000546.6:c.215C>G", "NM_000546.6:c.215C>G", "variant"),
        ("BRAF p.Val600Glu positive", "p.Val600Glu", "variant"),
        ("SNP rs80357906 heterozygous", "rs80357906", "rsid"),
        ("Lasix 40 mg daily", "40 mg", "dose"),
        ("KCl 20 mEq x1", "20 mEq", "dose"),
        ("Vitals: BP 120/80, HR 72", "BP 120/80", "vital"),
        ("GCS 15 on arrival", "GCS 15", "score"),
        ("Apgar 8/9 at birth", "Apgar 8/9", "score"),
        ("NYHA III symptoms", "NYHA III", "score"),
        ("Gleason 3+4 adenocarcinoma", "Gleason 3+4", "score"),
        ("pain 6/10 today", "pain 6/10", "score"),
        ("2/6 systolic murmur", "2/6 systolic", "score"),
        ("epinephrine 1:1000", "1:1000", "ratio"),
        ("Meds at 0630 and 1800", "at 0630 and 1800", "time"),
        ("Lasix 40 mg given @ 1105 today", "@ 1105", "time"),
        ("morphine q6h prn", "q6h", "frequency"),
        ("Na 138, K 4.1", "Na 138", "lab"),
        ("MRI C5-C6 herniation", "C5-C6", "vertebra"),
        ("BRCA1 mutation", "BRCA1", "gene"),
        ("KRAS G12C mutated", "KRAS G12C", "gene"),
        ("osimertinib (AZD9291) started", "AZD9291", "drug-code"),
        ("pembrolizumab (MK-3475) cycle 2", "MK-3475", "drug-code"),
        ("SKIN: BRADEN 13, Q2H TURNS", "BRADEN 13", "score"),
        ("In the ED, T 37.9 C.", "T 37.9 C", "vital"),
        ("Lasix 40\tmg daily", "40\tmg", "dose"),
    ],
)
def test_when_text_has_medical_syntax_then_it_is_recognised(
    genes: frozenset[str], text: str, surface: str, kind: str
) -> None:
    spans = syntax_spans(text, genes)
    assert (text.index(surface), text.index(surface) + len(surface), kind) in spans, spans


@pytest.mark.parametrize(
    "text",
    [
        "Admitted on 03/14/2023 at 0630.",
        "He is 92 years old.",
        "Lives in New Orleans, LA 70112.",
        "Call 555-123-4567 after 5 pm",
        "MRN 12345678, seen by Dr. Smith",
        "Accession PF123456 received",
        "Office in K\u00f8benhavn K 1421, Denmark",
        "Seen by Wells 2 weeks ago; BP 12/24 clinic; Tanner 3/14.",
        "Callback 2817838255\ncc: Dr. Smith",
        "Na 12345678\nmg list reviewed",
        "Vitals taken 08-APR-2018 @ 1105 by RN.",
        "Seen APR 8, 2018 @ 1105, stable.",
        "Collected 2018-04-08 1105.",
        "Collected 2018-04-08 @ 1105.",
        "Dose given at 1105 on 08-Apr-18.",
        "",
    ],
)
def test_when_text_has_identifiers_only_then_no_syntax_covers_them(genes: frozenset[str], text: str) -> None:
    spans = syntax_spans(text, genes)
    for ident in ("0630", "92", "70112", "555-123-4567", "12345678", "PF123456", "Wells", "12/24", "3/14", "1421",
                  "2817838255", "1105"):
        if ident in text:
            i = text.index(ident)
            assert not any(s <= i and e >= i + len(ident) for s, e, _ in spans), (ident, spans)


def test_when_syntax_scan_is_limited_then_offsets_stay_in_the_full_text(genes: frozenset[str]) -> None:
    text = "Seen today. Apgar 8/9 at birth. BP 120/80."
    spans = syntax_spans(text, genes, start=12, end=31)
    assert spans == [(12, 21, "score")]
