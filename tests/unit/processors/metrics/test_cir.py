"""processors.metrics.cir: JSC, softmax, NSDCG, concept weights, a real classifier's adapter, clinical numbers and
terms in identifiers, CIRE with the rules judge and a plugged-in judge. Hand-computed values in the comments."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest
from span_items import make_span as _span

from processors.metrics.cir import (
    ArrayClassifier,
    cire,
    concept_weights,
    jsc,
    nsdcg,
    softmax,
)

# ------------------------------------------------------------------------------------------ JSC / NSDCG

def _p(**w: float) -> dict[str, float]:
    return {k: v for k, v in w.items()}


@pytest.mark.parametrize("a, b, expected", [
    (_p(A=0.5, B=0.5), _p(A=0.5, B=0.5), 100.0),            # identical sets
    (_p(A=0.5, B=0.5), _p(C=0.5, D=0.5), 0.0),              # disjoint sets
    (_p(A=0.3, B=0.3, C=0.4), _p(A=0.3, B=0.3, D=0.4), 50.0),  # C11=2, C10=1, C01=1
    (_p(A=0.97, B=0.03), _p(A=1.0), 100.0),                 # B is under thb = 0.05 in the original
    (_p(A=0.95, B=0.05), _p(A=0.95, C=0.05), 100.0),        # p == thb is not > thb
    ({}, {}, None),
])
def test_when_class_sets_compared_then_jsc_is_the_jaccard_of_classes_above_thb(
        a: dict[str, float], b: dict[str, float], expected: float | None) -> None:
    assert jsc(a, b, 0.05) == expected


def test_when_logits_given_then_softmax_ignores_minus_infinity() -> None:
    assert softmax({"A": math.log(3), "B": 0.0, "C": -math.inf}) == {"A": pytest.approx(0.75),
                                                                      "B": pytest.approx(0.25)}


L3, L1 = math.log(3), 0.0  # original class weights 3 and 1: probabilities 0.75 and 0.25


@pytest.mark.parametrize("orig, deid, k, expected", [
    ({"A": L3, "B": L1}, {"A": L3, "B": L1}, 10, 100.0),     # unchanged note
    ({"A": L3, "B": L1}, {"A": 5.0, "B": 2.0}, 10, 100.0),   # same ranking, other scale
    # deid ranks B first: SDCG = .75*.25 + .25*.75 = .375; ISDCG = .75^2 + .25^2 = .625
    ({"A": L3, "B": L1}, {"A": L1, "B": L3}, 10, 60.0),
    # deid lost A: SDCG = .75*.25 = .1875 -> 30
    ({"A": L3, "B": L1}, {"B": L1}, 10, 30.0),
    ({"A": L3, "B": L1}, {"B": L1, "A": -math.inf}, 10, 30.0),
    ({"A": L3, "B": L1}, {"A": L1, "B": L3}, 1, 100 * 0.1875 / 0.5625),  # K=1
    ({"A": L3, "B": L1}, {}, 10, 0.0),                        # lost everything
    ({}, {"A": 1.0}, 10, None),                               # nothing to retain
])
def test_when_rankings_compared_then_nsdcg_matches_hand_values(orig: dict[str, float], deid: dict[str, float],
                                                               k: int, expected: float | None) -> None:
    got = nsdcg(orig, deid, k)
    assert got == (pytest.approx(expected) if expected is not None else None)


@dataclass(frozen=True)
class _M:
    concept_ids: tuple[str, ...]


def test_when_matches_have_concepts_then_each_family_spreads_a_weight_of_one() -> None:
    chapters = {"ICD10:E11": "4", "ICD10:J12": "10", "ICD10:J18": "10"}
    w = concept_weights([_M(("ICD10:E11", "HPO:1")), _M(("ICD10:J12", "ICD10:J18", "DRUG:D02.078")),
                         _M(("PCS:0PB", "PCS:index"))], chapters.get)
    assert w == {"ICD10:E11": 1.0, "ICD10-CH:4": 1.0, "ICD10:J12": 0.5, "ICD10:J18": 0.5, "ICD10-CH:10": 1.0,
                 "DRUG:D02.078": 1.0, "PCS:0PB": 1.0}


def test_when_a_real_classifier_returns_logits_then_the_adapter_maps_them_to_classes() -> None:
    clf = ArrayClassifier("icd", ["I21", "E11"], lambda texts: [[2.0, 0.0] for _ in texts])
    assert clf.logits(["a", "b"]) == [{"I21": 2.0, "E11": 0.0}] * 2
    bad = ArrayClassifier("icd", ["I21"], lambda texts: [[2.0, 0.0] for _ in texts])
    with pytest.raises(ValueError):
        bad.logits(["a"])


# ------------------------------------------------------------------------------------------ numbers / CIRE

@pytest.mark.parametrize("text, spans, expected", [
    ("See https://mychart.example.org/login. Lasix 40 mg.", [(4, 37, "URL")], ["lasix"]),  # part of a URL
    ("Signed 12/19/2021 11:15 PM by Iris Wilson", [(7, 26, "DATE"), (30, 41, "NAME")], []),  # "PM"; a name
    ("Bruce protocol stopped early.", [(0, 14, "NAME")], ["bruce protocol"]),  # a span exactly on a term
    ("Pt Blake drain in place.", [(3, 8, "NAME")], ["blake drain"]),  # a span on part of a term
])
def test_when_terms_sit_in_identifiers_then_only_clinical_text_counts(text: str, spans: list[tuple[int, int, str]],
                                                                     expected: list[str]) -> None:
    from dictionaries.medical import medical_vocabulary
    from processors.risk import medical_matches
    from processors.spans import Intervals

    found = medical_matches(text, medical_vocabulary(), Intervals(()), [_span(s, e, lab) for s, e, lab in spans])
    assert [m.term_norm for m in found] == expected


WORDS = [f"w{i}" for i in range(40)]  # 40 tokens: two chunks of 20


def _words(replace: dict[int, str]) -> str:
    return " ".join(replace.get(i, w) for i, w in enumerate(WORDS))


def test_when_two_chunks_change_and_one_is_clinical_then_cire_is_one_half() -> None:
    src = _words({3: "Smith", 25: "5"})
    out = _words({3: "[NAME]", 25: "[DATE]"})
    five = src.index(" 5 ") + 1
    res = cire(src, out, sensitive=[(five, five + 1)], chunk_tokens=20)
    assert (res.chunks, res.changed, res.clinical, res.cire) == (2, 2, 1, 0.5)


@pytest.mark.parametrize("src_words, out_words, clinical", [
    ({3: "no"}, {3: "[NAME]"}, 1),        # a negation replaced
    ({3: "Smith"}, {3: "[NAME]"}, 0),     # a name replaced
    ({}, {3: "w3 not"}, 1),               # a negation inserted
    ({}, {}, 0),                          # unchanged
])
def test_when_a_chunk_changes_then_the_rules_judge_looks_for_negations(src_words: dict[int, str],
                                                                       out_words: dict[int, str],
                                                                       clinical: int) -> None:
    res = cire(_words(src_words), _words(out_words), chunk_tokens=20)
    assert res.clinical == clinical
    assert res.cire == (2 - clinical) / 2


class _FakeJudge:
    name = "fake"

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def changed_meaning(self, pairs: Any) -> list[bool]:
        self.pairs.extend(pairs)
        return ["[NAME]" in b for _a, b in pairs]


def test_when_a_chunk_judge_is_given_then_it_decides_on_the_aligned_chunk_texts() -> None:
    judge = _FakeJudge()
    res = cire(_words({3: "Smith"}), _words({3: "[NAME]"}), chunk_tokens=20, judge=judge)
    assert (res.changed, res.clinical) == (1, 1)
    assert judge.pairs == [(" ".join(WORDS[:3] + ["Smith"] + WORDS[4:20]),
                            " ".join(WORDS[:3] + ["[NAME]"] + WORDS[4:20]))]




def test_when_two_processes_hash_strings_differently_then_concept_weights_come_out_the_same() -> None:
    import subprocess
    import sys

    code = (
        "from types import SimpleNamespace as M\n"
        "from processors.metrics.cir import concept_weights, softmax\n"
        "ms = [M(concept_ids=('ICD10:I21.4', 'ICD10:I25.10', 'DRUG:C01', 'DRUG:N02', 'PCS:0210093')),\n"
        "      M(concept_ids=('ICD10:E11.9', 'ICD10:I10', 'DRUG:A10', 'DRUG:C09', 'DRUG:B01'))]\n"
        "w = concept_weights(ms, lambda c: c[6])\n"
        "print(list(w), repr(sum(softmax(w).values())))\n"
    )
    outs = {subprocess.run([sys.executable, "-c", code], env={"PYTHONHASHSEED": str(seed), "PATH": ""},
                           capture_output=True, text=True, check=True).stdout for seed in (1, 2, 3, 4)}
    assert len(outs) == 1, outs


# ------------------------------------------------------------------------------------------ alignment by blocks

def _replaced(text: str, picks: list[tuple[int, int, str]]) -> tuple[str, list[tuple[int, int, int, int]]]:
    """``text`` with ``picks`` (start, end, replacement; sorted, apart) replaced, and the changed blocks."""
    out: list[str] = []
    blocks: list[tuple[int, int, int, int]] = []
    pos = size = 0
    for s, e, rep in picks:
        out.append(text[pos:s])
        size += s - pos
        blocks.append((s, e, size, size + len(rep)))
        out.append(rep)
        size += len(rep)
        pos = e
    out.append(text[pos:])
    return "".join(out), blocks


def test_when_blocks_made_the_output_then_the_linear_alignment_is_a_valid_one_that_keeps_untouched_tokens() -> None:
    import random
    import re

    from processors.metrics.cir import _TOKEN, align_tokens, align_tokens_by_blocks

    rng = random.Random(7)
    words = ["Smith", "no", "5", "mg", "BP", "120/80", "Jan", "3rd", "pt", "not", "St.", "Mary's", "x"]
    reps = ["[NAME]", "", "[DATE]", "Jones", "no", "X Y Z", "-", "5"]
    for _ in range(300):
        text = " ".join(rng.choice(words) + rng.choice(["", ",", "\n", "'s"]) for _ in range(rng.randint(5, 80)))
        tokens = [m.span() for m in re.finditer(r"\S+", text)]
        chosen = sorted(rng.sample(tokens, k=min(len(tokens), rng.randint(0, 6))))
        picks: list[tuple[int, int, str]] = []
        for s, e in chosen:  # whole words, parts of words and insertions; blocks apart
            s2, e2 = rng.choice([(s, e), (s, s + max(1, (e - s) // 2)), (s, s)])
            if not picks or picks[-1][1] < s2:
                picks.append((s2, e2, rng.choice(reps)))
        output, blocks = _replaced(text, picks)
        src = [m.span() for m in _TOKEN.finditer(text)]
        dst = [m.span() for m in _TOKEN.finditer(output)]
        sw, dw = [text[a:b] for a, b in src], [output[a:b] for a, b in dst]
        ops = align_tokens_by_blocks(src, dst, sw, dw, blocks)
        assert ops is not None
        # the ops tile both token lists in order, and "equal" pairs equal tokens
        assert [o[1] for o in ops] == [0, *[o[2] for o in ops[:-1]]]
        assert [o[3] for o in ops] == [0, *[o[4] for o in ops[:-1]]]
        assert (ops[-1][2], ops[-1][4]) == (len(src), len(dst))
        assert all(sw[o[1]:o[2]] == dw[o[3]:o[4]] for o in ops if o[0] == "equal")
        # a token that no block overlaps or touches is unchanged (a global alignment may pick another of two equal
        # neighbours, "Jan Jan"; the blocks say which was replaced)
        kept = {i for o in ops if o[0] == "equal" for i in range(o[1], o[2])}
        assert all(i in kept for i, (a, b) in enumerate(src) if not any(s <= b and a <= e for s, e, _, _ in blocks))
        # and it costs no fewer edits than the global alignment, which is minimal
        edits = sum(max(o[2] - o[1], o[4] - o[3]) for o in ops if o[0] != "equal")
        assert edits >= sum(max(o[2] - o[1], o[4] - o[3]) for o in align_tokens(sw, dw) if o[0] != "equal")


def test_when_tags_replace_names_then_cire_by_blocks_equals_cire_by_global_alignment() -> None:
    src = _words({3: "Smith", 25: "5", 26: "Jones"})
    out = _words({3: "[NAME]", 25: "[DATE]", 26: "[NAME]"})
    picks = [(src.index("Smith"), src.index("Smith") + 5, "[NAME]"), (src.index(" 5 ") + 1, src.index(" 5 ") + 2, "[DATE]"),
             (src.index("Jones"), src.index("Jones") + 5, "[NAME]")]
    output, blocks = _replaced(src, picks)
    assert output == out
    five = src.index(" 5 ") + 1
    by_blocks = cire(src, out, sensitive=[(five, five + 1)], chunk_tokens=20, blocks=blocks)
    assert by_blocks == cire(src, out, sensitive=[(five, five + 1)], chunk_tokens=20)
    assert (by_blocks.chunks, by_blocks.changed, by_blocks.clinical) == (2, 2, 1)


def test_when_blocks_do_not_account_for_the_output_then_the_global_alignment_is_used() -> None:
    from processors.metrics.cir import _TOKEN, align_tokens_by_blocks

    text, output = "w1 Smith w2 w3", "w1 [NAME] w2 w9"  # the block covers Smith only: w3 -> w9 is unexplained
    src = [m.span() for m in _TOKEN.finditer(text)]
    dst = [m.span() for m in _TOKEN.finditer(output)]
    blocks = [(3, 8, 3, 9)]
    assert align_tokens_by_blocks(src, dst, [text[a:b] for a, b in src], [output[a:b] for a, b in dst], blocks) is None
    assert cire(text, output, blocks=blocks) == cire(text, output)
    assert cire(text, output, blocks=blocks).changed == 1
