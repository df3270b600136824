"""processors.metrics.proxy: LRa, LSI on aligned sentences, ALID, LR, LRDI, LRQI, known identifiers, and the
offset maps they align through. Hand-computed values in the comments."""

from __future__ import annotations

import pytest
from span_items import make_span as _span

from processors.metrics.proxy import (
    Entity,
    alid,
    known_identifiers,
    lr_at,
    lra,
    lrdi_at,
    lrqi_at,
    lsi,
    recall_proxy,
    repeated_occurrences,
    sentence_bounds,
)
from processors.pipeline import Replacement
from processors.spans import OffsetMap
from schemas.models import Span


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


