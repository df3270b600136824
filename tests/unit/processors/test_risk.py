"""processors.risk: the residual-risk signals of what no span covers, the score, and the weight fit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from span_items import make_span

from dictionaries.jargon import clinical_words
from dictionaries.medical import medical_syntax_spans, medical_vocabulary
from processors.risk import (
    SIGNALS,
    RiskResult,
    RiskWeights,
    WordJudge,
    fit_weights,
    residual_risk,
    risk_expected,
)
from schemas.models import Span

NOTE = ("Pt on levo and vanco overnight. BP 120/80, CPAP 5/5, K 4.1.\n"
        "Wife Marguerite Kowalczyk visited on 7/22, call 934-364-2389.\n")


@pytest.fixture(scope="module")
def judge() -> WordJudge:
    words = clinical_words()
    return WordJudge(4.0, lambda: words)


def _risk(judge: WordJudge, tagged: list[str], text: str = NOTE) -> RiskResult:
    spans = [make_span(text.index(t), text.index(t) + len(t)) for t in tagged]
    return residual_risk(text, spans, judge=judge, medical_terms=medical_vocabulary().find(text),
                         syntax=lambda t, a, b: medical_syntax_spans(t, start=a, end=b))


def test_when_every_identifier_is_tagged_then_no_signal_remains(judge: WordJudge) -> None:
    r = _risk(judge, ["Marguerite Kowalczyk", "7/22", "934-364-2389"])
    # jargon ("levo"), vitals, ventilator settings and labs are explained by the vocabularies and syntax
    assert (r.names, r.proper_nouns, r.identifier_numbers) == (0, 0, 0)
    assert r.detected == 3 and r.kchars == pytest.approx(len(NOTE) / 1000, abs=1e-3)


def test_when_identifiers_are_left_untagged_then_the_signals_and_the_score_rise(judge: WordJudge) -> None:
    clean = _risk(judge, ["Marguerite Kowalczyk", "7/22", "934-364-2389"])
    leaky = _risk(judge, ["934-364-2389"])
    assert leaky.names >= 1 and leaky.proper_nouns + leaky.names == 2 and leaky.identifier_numbers == 1
    assert leaky.expected > clean.expected and 0 <= clean.score < leaky.score <= 1
    assert leaky.score == pytest.approx(1 - math.exp(-leaky.expected), abs=1e-6)


def test_when_a_candidate_was_rejected_then_its_score_counts_unless_it_is_medical(judge: WordJudge) -> None:
    text = "Seen by Quorvath today, Lasix 40 mg given."
    q, lx = text.index("Quorvath"), text.index("Lasix")
    rejected = [Span(start=q, end=q + 8, label="NAME", score=0.4, source="ner"),
                Span(start=lx, end=lx + 5, label="NAME", score=0.9, source="ner")]
    r = residual_risk(text, [], judge=judge, medical_terms=medical_vocabulary().find(text), rejected=rejected)
    assert r.rejected_mass == pytest.approx(0.4)  # the drug name was judged medical, not a missed name


def test_when_signals_follow_a_known_poisson_model_then_the_fit_recovers_its_weights() -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(0, 6, size=(4000, len(SIGNALS))).astype(float)
    x[:, SIGNALS.index("ner_mass")] = 0.0  # never recorded: weight 0
    truth = RiskWeights(intercept=-2.0, names=0.6, proper_nouns=0.2, identifier_numbers=0.9, rejected_mass=0.0,
                        ner_mass=0.0, kchars=0.4, detected=0.3)
    y = rng.poisson([risk_expected(row, truth) for row in x])
    fit = fit_weights(x, y, l2=0.01)
    assert fit.ner_mass == 0.0
    assert fit.coefficients == pytest.approx(truth.coefficients, abs=0.12)
    assert fit.intercept == pytest.approx(truth.intercept, abs=0.2)
