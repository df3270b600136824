"""Per-note metrics: recall proxy (LSI, ALID, LR, LRDI, LRQI), CIR (JSC, NSDCG, retention, CIRE), the
NoteMetrics contract and the metrics processor. Hand-computed values in the comments."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pytest

from dictionaries.medical import medical_syntax_spans
from processors.metrics.step import (
    ArrayClassifier,
    Entity,
    Metrics,
    OffsetMap,
    alid,
    cire,
    clinical_numbers,
    concept_weights,
    jsc,
    known_identifiers,
    lr_at,
    lra,
    lrdi_at,
    lrqi_at,
    lsi,
    nsdcg,
    recall_proxy,
    repeated_occurrences,
    sentence_bounds,
    softmax,
)
from processors.pipeline import Note, Pipeline, PipelineConfig, Replacement
from schemas.metrics import NoteMetrics
from schemas.models import NoteIn, Patient, PersonName, Span


def _span(start: int, end: int, label: str = "NAME", subtype: str | None = None, source: str = "regex") -> Span:
    return Span(start=start, end=end, label=label, subtype=subtype, source=source)  # type: ignore[arg-type]


def _tagged(text: str, spans: list[Span]) -> tuple[str, OffsetMap]:
    """The tag-mode output of ``text`` and its offset map (replacements as the transform writes them)."""
    parts, reps, pos, out_len = [], [], 0, 0
    for s in sorted(spans, key=lambda x: x.start):
        gap = text[pos:s.start]
        parts.append(gap)
        out_len += len(gap)
        tag = f"[{s.label}]"
        parts.append(tag)
        reps.append(Replacement(out_len, out_len + len(tag), s))
        out_len += len(tag)
        pos = s.end
    parts.append(text[pos:])
    return "".join(parts), OffsetMap.from_replacements(reps)


# ------------------------------------------------------------------------------------------ LRa / LSI

@pytest.mark.parametrize("a, b, expected", [
    ("kitten", "sitting", 1 - 3 / 7),   # LD 3 (k->s, e->i, +g), max length 7
    ("abc", "abc", 1.0),
    ("abc", "", 0.0),
    ("tim", "nam", 1 - 2 / 3),          # t->n, i->a
])
def test_when_comparing_strings_then_lra_is_one_minus_ld_over_max_length(a: str, b: str, expected: float) -> None:
    assert lra(a, b) == pytest.approx(expected)


@pytest.mark.parametrize("entity, output, expected", [
    # windows of 3 over "[name] ran.": best is "nam" (LD 2): 1/3; every other window shares no aligned letter
    ("Tim", "[NAME] ran.", 1 / 3),
    ("Tim", "It is time.", 1.0),                  # "tim" inside "time" (case-insensitive)
    ("Smith", "Dr Smyth came", 1 - 1 / 5),        # "smyth": one substitution
    ("Johnson", "Jo", 1 - 5 / 7),                 # region shorter than the entity: compared whole
    ("", "anything", 0.0),
])
def test_when_searching_windows_then_lsi_is_the_best_window_ratio(entity: str, output: str, expected: float) -> None:
    assert lsi(entity, output) == pytest.approx(expected)


def test_when_tim_is_removed_but_time_follows_then_only_the_aligned_sentence_counts() -> None:
    text = "Tim ran. It is time."
    out, offsets = _tagged(text, [_span(0, 3)])
    assert out == "[NAME] ran. It is time."
    ents = [Entity(0, 3, "NAME", True)]
    restricted = recall_proxy(text, out, ents, offsets, sentences=True)
    whole = recall_proxy(text, out, ents, offsets, sentences=False)
    # aligned sentence "[NAME] ran.": LSI 1/3 < 0.85 -> removed; the whole note finds "tim" in "time": 1.0
    assert restricted.lsi_mean == pytest.approx(1 / 3)
    assert (restricted.lr, restricted.lrdi, restricted.alid) == (100.0, 100.0, pytest.approx(200 / 3))
    assert (whole.lsi_mean, whole.lr, whole.lrdi, whole.alid) == (1.0, 0.0, 0.0, 0.0)
    assert restricted.verbatim == 0 and whole.verbatim == 0  # "Tim" (case-sensitive word) is nowhere


# ------------------------------------------------------------------------------------------ ALID / LR / LRDI / LRQI

@pytest.mark.parametrize("lsis, t, exp_alid, exp_lr", [
    ([0.2, 1.0, 0.5], 0.85, (1 - 1.7 / 3) * 100, 200 / 3),  # mean 0.5667; two of three below t
    ([0.85], 0.85, 15.0, 0.0),                              # LSI == t is NOT removed (strict <)
    ([0.0, 0.0], 0.85, 100.0, 100.0),
    ([], 0.85, None, None),
])
def test_when_lsis_given_then_alid_and_lr_follow_the_formulas(lsis: list[float], t: float, exp_alid: float | None,
                                                             exp_lr: float | None) -> None:
    assert alid(lsis) == (pytest.approx(exp_alid) if exp_alid is not None else None)
    assert lr_at(lsis, t) == (pytest.approx(exp_lr) if exp_lr is not None else None)


@pytest.mark.parametrize("direct, expected", [
    ([0.2, 0.84], 100.0),   # every direct identifier below t
    ([0.2, 1.0], 0.0),      # one left: all or nothing
    ([0.85], 0.0),
    ([], None),
])
def test_when_one_direct_identifier_remains_then_lrdi_is_zero(direct: list[float], expected: float | None) -> None:
    assert lrdi_at(direct, 0.85) == expected


def test_when_quasi_identifiers_given_then_lrqi_is_lr_over_them() -> None:
    assert lrqi_at([0.1, 0.9, 0.3, 0.95], 0.85) == pytest.approx(50.0)
    assert lrqi_at([0.9], 0.95) == pytest.approx(100.0)


def test_when_a_phone_is_left_verbatim_then_lrdi_fails_but_lrqi_passes() -> None:
    text = "John Smith called 555-1234 from Boston."
    name, phone, city = _span(0, 10), _span(18, 26, "PHONE"), _span(32, 38, "LOCATION", "CITY")
    out, offsets = _tagged(text, [name, city])  # the phone was missed
    ents = known_identifiers([name, phone, city])
    r = recall_proxy(text, out, ents, offsets)
    assert (r.known, r.direct, r.quasi, r.removed, r.verbatim) == (3, 2, 1, 2, 1)
    assert r.lr == pytest.approx(200 / 3) and r.lrdi == 0.0 and r.lrqi == 100.0
    assert r.known_by_label == {"LOCATION": 1, "NAME": 1, "PHONE": 1}
    assert r.removed_by_label == {"LOCATION": 1, "NAME": 1}


def test_when_entities_are_initials_then_they_are_skipped() -> None:
    text = "Seen by L. Barchard for a fall."
    out, offsets = _tagged(text, [_span(8, 9), _span(11, 19)])
    r = recall_proxy(text, out, known_identifiers([_span(8, 9), _span(11, 19)]), offsets)
    # "L" would match the "l" of "fall" (LSI 1.0): not scored
    assert (r.known, r.skipped, r.lr) == (1, 1, 100.0)


# ------------------------------------------------------------------------------------------ known identifiers

def test_when_spans_share_offsets_then_known_identifiers_dedupe_and_drop_allowed_subtypes() -> None:
    spans = [_span(0, 4, "ORGANIZATION"), _span(0, 4, "NAME", source="message"), _span(10, 12, "LOCATION", "STATE"),
             _span(20, 25, "NAME", "PROVIDER")]
    ents = known_identifiers(spans, exclude=lambda s: s.subtype == "PROVIDER")
    assert ents == [Entity(0, 4, "NAME", True)]  # direct wins; state allowed; provider excluded


def test_when_a_known_value_repeats_then_its_other_occurrences_are_known_too() -> None:
    text = "Barchard saw pt. Barchardson and BARCHARD agree; Barchard called."
    found = repeated_occurrences(text, [Entity(0, 8, "NAME", True)])
    assert found == [Entity(49, 57, "NAME", True)]  # whole words, same case only


# ------------------------------------------------------------------------------------------ offsets

def test_when_mapping_offsets_through_replacements_then_inside_positions_snap_to_the_block() -> None:
    text = "Pt John Smith seen today."
    out, offsets = _tagged(text, [_span(3, 13)])
    assert out == "Pt [NAME] seen today."
    assert [offsets.map(p) for p in (0, 3, 14)] == [0, 3, 10]
    assert offsets.map(5, "left") == 3 and offsets.map(5, "right") == 9
    assert offsets.touched(3, 13) and offsets.touched(0, 4) and not offsets.touched(13, 18)


def test_when_no_replacements_then_a_character_alignment_is_used() -> None:
    offsets = OffsetMap.for_note("Pt Jon seen.", "Pt [NAME] seen.", ())
    assert offsets.map(7) == 10 and offsets.touched(3, 6) and not offsets.touched(7, 11)


def test_when_cutting_sentences_then_titles_and_initials_do_not_end_them() -> None:
    text = "Dr. Smith saw L. Barchard. Next line\nThird one! ok"
    assert sentence_bounds(text) == [0, 26, 37, 47, 50]


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

def _syntax(text: str, a: int, b: int) -> list[tuple[int, int, str]]:
    return medical_syntax_spans(text, frozenset(), start=a, end=b)


@pytest.mark.parametrize("text, identifiers, expected", [
    # 13.1 is outside every identifier; 7, 22, 2019 are a date; 12345 an MRN
    ("Hgb 13.1 on 7/22/2019, MRN 12345.", [(12, 21), (27, 32)], ["13.1"]),
    # a wrong identifier over a lab value: medical syntax ("Hgb 13.1") keeps it clinical
    ("Hgb 13.1 on 7/22/2019, MRN 12345.", [(4, 8), (12, 21), (27, 32)], ["13.1"]),
    ("Lasix 40 mg daily, seen 3/4.", [(6, 8), (24, 27)], ["40"]),  # "40 mg" is a dose; 3/4 a date
    ("No numbers here.", [], []),
    ("NPI 2817838255\ncc: Dr Lee", [(4, 14)], []),       # "2817838255\ncc" is no dose across a line break
    ("Signed 08-APR-2018 @ 1105", [(7, 25)], []),       # a time inside a date-time identifier
])
def test_when_numbers_sit_in_identifiers_then_only_medical_syntax_keeps_them_clinical(
        text: str, identifiers: list[tuple[int, int]], expected: list[str]) -> None:
    assert [text[a:b] for a, b in clinical_numbers(text, identifiers, _syntax)] == expected


@pytest.mark.parametrize("text, spans, expected", [
    ("See https://mychart.example.org/login. Lasix 40 mg.", [(4, 37, "URL")], ["lasix"]),  # part of a URL
    ("Signed 12/19/2021 11:15 PM by Iris Wilson", [(7, 26, "DATE"), (30, 41, "NAME")], []),  # "PM"; a name
    ("Bruce protocol stopped early.", [(0, 14, "NAME")], ["bruce protocol"]),  # a span exactly on a term
    ("Pt Blake drain in place.", [(3, 8, "NAME")], ["blake drain"]),  # a span on part of a term
])
def test_when_terms_sit_in_identifiers_then_only_clinical_text_counts(text: str, spans: list[tuple[int, int, str]],
                                                                     expected: list[str]) -> None:
    from dictionaries.medical import medical_vocabulary
    from processors.metrics.step import Intervals, medical_matches

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


# ------------------------------------------------------------------------------------------ the processor

PATIENT = Patient(mrn="E1499912", names=(PersonName(family="Kowalczyk", given="Marguerite"),),
                  phones=("934-364-2389",), birth_date="1931-04-13")
NOTE_TEXT = ("Marguerite Kowalczyk, MRN E1499912, DOB 04/13/1931, seen 7/22/2019.\n"
             "Hx type 2 diabetes mellitus on metformin 500 mg bid. No chest pain. Hgb 13.1.\n"
             "Call 934-364-2389 with questions. Kowalczyk agrees with the plan.\n")
IDENTIFIERS = ("Marguerite", "Kowalczyk", "E1499912", "04/13/1931", "7/22/2019", "934-364-2389")


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    steps = ("regex", "dictionary", "ensemble", "transform", "leakcheck", "metrics")
    return Pipeline.from_config(PipelineConfig(steps=steps))


@pytest.fixture(scope="module")
def processed(pipeline: Pipeline) -> Note:
    (note,) = pipeline.run([NoteIn(note_id="n-1", text=NOTE_TEXT, patient=PATIENT)])
    assert note.error is None
    return note


def test_when_a_note_is_processed_then_metrics_hold_the_recall_proxy_and_retention(processed: Note) -> None:
    m = processed.metrics
    assert isinstance(m, NoteMetrics)
    assert m.recall is not None and m.retention is not None
    assert m.recall.known >= 6 and m.recall.lr == 100.0 and m.recall.lrdi == 100.0 and m.recall.verbatim == 0
    r = m.retention
    # the medical terms, the dose and the lab value are untouched by the tags
    assert r.medical_terms >= 3 and r.medical_term_retention == 1.0
    assert r.number_retention == 1.0 and r.numbers >= 3
    assert r.jsc == 100.0 and r.nsdcg == 100.0 and r.classes >= 1 and r.classifier == "concepts"
    assert r.chunks >= 2 and r.chunks_clinical == 0 and r.cire == 1.0
    assert set(m.stage_ms) == {"regex", "dictionary", "ensemble", "transform", "leakcheck"}
    assert m.versions.pipeline and m.versions.config_hash and m.versions.dictionaries["medical"].startswith("med-")
    assert m.spans == sum(m.spans_by_label.values()) == sum(m.spans_by_source.values())
    assert m.leak is False and m.note_pseudonym == processed.note_pseudonym


def test_when_metrics_are_serialised_then_no_identifier_or_note_text_is_in_them(processed: Note) -> None:
    blob = json.dumps(processed.metrics.model_dump(mode="json"))
    for value in (*IDENTIFIERS, "n-1", "diabetes", "metformin"):
        assert value.lower() not in blob.lower()
    again = NoteMetrics.model_validate_json(blob)
    assert again == processed.metrics


def test_when_a_clinical_number_is_tagged_then_number_retention_and_cire_drop(processed: Note) -> None:
    lab = NOTE_TEXT.index("13.1")
    wrong = processed.spans + (_span(lab, lab + 4, "ID", source="regex"),)
    note = Note(input=processed.input, spans=tuple(sorted(wrong, key=lambda s: s.start)))
    out = Pipeline.from_config(PipelineConfig(steps=("transform", "metrics"))).run_notes([note])[0]
    r = out.metrics.retention
    assert r.numbers_kept == r.numbers - 1 and r.chunks_clinical == 1
    assert r.cire == pytest.approx((r.chunks - 1) / r.chunks)


def test_when_a_medical_term_is_tagged_then_term_retention_and_jsc_drop(processed: Note) -> None:
    start = NOTE_TEXT.index("metformin")
    note = Note(input=processed.input, spans=processed.spans + (_span(start, start + 9, "NAME"),))
    out = Pipeline.from_config(PipelineConfig(steps=("transform", "metrics"))).run_notes([note])[0]
    r = out.metrics.retention
    assert r.medical_terms_kept == r.medical_terms - 1
    assert r.nsdcg is not None and r.nsdcg < 100.0


def test_when_there_is_no_output_then_only_counts_are_reported() -> None:
    ctx_cfg = PipelineConfig(steps=("metrics",))
    proc = Pipeline.from_config(ctx_cfg).processors[0]
    assert isinstance(proc, Metrics)
    note = Note(input=NoteIn(note_id="x", text="Seen 7/22/2019."), spans=(_span(5, 14, "DATE"),))
    (out,) = proc.process_batch([note])
    assert out.metrics.recall is None and out.metrics.retention is None
    assert out.metrics.spans_by_label == {"DATE": 1} and out.metrics.chars == 15


def test_when_options_are_unknown_then_the_processor_refuses_them() -> None:
    from schemas.errors import ConfigError

    with pytest.raises(ConfigError):
        Pipeline.from_config(PipelineConfig(steps=("metrics",), options={"metrics": {"treshold": 0.9}}))
    with pytest.raises(ConfigError):
        Pipeline.from_config(PipelineConfig(steps=("metrics",), options={"metrics": {"classifier": "nope"}}))


def test_when_the_pipeline_missed_a_message_identifier_then_the_message_scan_finds_it_verbatim(processed: Note) -> None:
    phone = NOTE_TEXT.index("934-364-2389")
    kept = tuple(s for s in processed.spans if s.start != phone)
    assert len(kept) == len(processed.spans) - 1
    note = Note(input=processed.input, spans=kept)
    out = Pipeline.from_config(PipelineConfig(steps=("transform", "metrics"))).run_notes([note])[0]
    r = out.metrics.recall
    # no dictionary step ran, so the metrics step scans the message itself: the phone is known and still there
    assert r.verbatim == 1 and r.lrdi == 0.0 and r.removed == r.known - 1
    assert r.lr == pytest.approx(100 * (r.known - 1) / r.known)


PLUGIN = '''
from processors.metrics.step import ArrayClassifier

def classifier(ctx):
    return ArrayClassifier("site-icd", ["I21", "E11"], lambda texts: [[2.0, 0.0] for _ in texts])

class Judge:
    name = "site-judge"
    def changed_meaning(self, pairs):
        return [True for _ in pairs]

def judge(ctx):
    return Judge()

class Broken:
    name = "broken"
    def logits(self, texts):
        raise RuntimeError("model server down")

def broken(ctx):
    return Broken()
'''


def test_when_a_site_plugs_in_a_classifier_and_a_judge_then_the_metrics_use_them(
        processed: Note, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "siteplug.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = PipelineConfig(steps=("metrics",), options={"metrics": {"classifier": "siteplug:classifier",
                                                                  "cire_judge": "siteplug:judge"}})
    (out,) = Pipeline.from_config(cfg).run_notes([processed.replace(metrics=None)])
    r = out.metrics.retention
    # softmax(2, 0) = (0.88, 0.12): both classes above thb = 0.05
    assert (r.classifier, r.cire_judge, r.jsc, r.nsdcg, r.classes) == ("site-icd", "site-judge", 100.0, 100.0, 2)
    assert r.chunks_clinical == r.chunks_changed > 0  # the fake judge calls every changed chunk clinical


def test_when_measuring_fails_then_the_note_keeps_counts_and_is_not_an_error(
        processed: Note, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "siteplug.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = PipelineConfig(steps=("metrics",), options={"metrics": {"classifier": "siteplug:broken"}})
    (out,) = Pipeline.from_config(cfg).run_notes([processed.replace(metrics=None)])
    assert out.error is None and out.metrics.retention is None and out.metrics.recall is None
    assert out.metrics.spans == len(processed.spans)
