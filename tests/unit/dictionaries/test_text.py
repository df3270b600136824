"""The helpers of dictionaries.text: the line(s) around an offset, ALL-CAPS lines, and name context."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from dictionaries.text import is_all_caps, line_around, line_bounds, name_context


def test_when_offset_is_inside_a_line_then_its_bounds_exclude_the_newlines() -> None:
    text = "first line\nSECOND LINE 5/5\nthird"
    at = text.index("5/5")
    assert line_bounds(text, at) == (11, 26)
    assert line_around(text, at, at + 3) == "SECOND LINE 5/5"
    assert line_around(text, 0) == "first line"
    assert line_around(text, len(text) - 1) == "third"


def test_when_span_crosses_a_newline_then_both_lines_are_returned() -> None:
    text = "a\nb c\nd e\nf"
    assert line_around(text, text.index("c"), text.index("d") + 1) == "b c\nd e"


def test_when_line_has_letters_and_no_lower_case_then_it_is_all_caps() -> None:
    assert is_all_caps("PT ON CPAP 5/5, 40%")
    assert not is_all_caps("Pt on CPAP 5/5")
    assert not is_all_caps("120/80 88%")



def test_when_only_words_of_fixed_case_have_lower_case_letters_then_the_line_is_still_all_caps() -> None:
    # measures spelt with a digit or a lower-case prefix keep their case in ALL-CAPS notes
    assert is_all_caps("ON FIO2 .50 AND PEEP 10. Pao2 LOW. DR OKAFOR AWARE")
    assert is_all_caps("K 3.1, GIVEN 40 mEq KCL. pH 7.31")
    assert not is_all_caps("pH 7.31 and K 3.1")  # other lower-case words: mixed case
    assert not is_all_caps("pH 7.31")  # nothing else: no capitals to read


@pytest.mark.parametrize(
    ("text", "surface", "expected"),
    [
        ("Seen by Dr. Lee today.", "Lee", True),
        ("Seen by Dr. John Lee today.", "Lee", True),  # name parts between the title and the span
        ("Mrs. A. Lee called.", "Lee", True),
        ("Called dr. brown back.", "brown", True),  # a personal title counts before any case
        ("Lee, RN checked the line.", "Lee", True),  # a credential after
        ("Pt Smith resting.", "Smith", True),  # a role word before a capitalised word
        ("Pt. weaned to 40%.", "weaned", False),  # a role word before a verb
        ("PT ADMITTED TO OSH FOR CP.", "OSH", False),  # words in capitals are no name parts
        ("PT SMITH RESTING.", "SMITH", False),  # a role word in an ALL-CAPS line says nothing
        ("DR SMITH AWARE.", "SMITH", True),  # a personal title still does
    ],
)
def test_when_title_or_credential_surrounds_span_then_name_context(text: str, surface: str, expected: bool) -> None:
    start = text.index(surface)
    assert name_context(text, start, start + len(surface)) is expected


def test_when_only_personal_titles_count_then_role_words_do_not() -> None:
    text = "Pt Smith resting."
    assert not name_context(text, 3, 8, personal_titles_only=True)


def _long_one_line_text() -> str:
    passage = ("Pt John Smith (MRN 4478123) seen 02/11/2019, BP 120/80, HR 72 bpm; CPAP 5/5 FIO2 40%. "
               "PT ADMITTED TO OSH. Dr. Alice Moreno, MD called 217-555-0143. ")
    return passage * 60 + "\nSHORT LINE 5/5\n" + passage * 3


def test_when_a_text_is_long_then_its_indexed_line_bounds_equal_find_and_rfind() -> None:
    from dictionaries import text as text_module

    text = _long_one_line_text()
    assert len(text) >= text_module.LONG_LINE
    for start in range(0, len(text), 37):
        for end in (None, start, min(len(text), start + 25)):
            stop = start if end is None else end
            nl = text.find("\n", stop)
            expected = (text.rfind("\n", 0, start) + 1, nl if nl >= 0 else len(text))
            assert line_bounds(text, start, end) == expected


def _long_text_of_short_lines() -> str:
    """A long note of many short lines (each line's facts are memoised too: a dense note asks them per span)."""
    return _long_one_line_text().replace("; ", ";\n").replace("OSH. ", "OSH.\n")


@pytest.mark.parametrize("make_text", [_long_one_line_text, _long_text_of_short_lines])
def test_when_a_text_is_long_then_line_facts_and_measurements_equal_the_unmemoised_ones(
        monkeypatch: pytest.MonkeyPatch, make_text: Callable[[], str]) -> None:
    from dictionaries import medical_syntax
    from dictionaries import text as text_module
    from dictionaries.text import line_fact

    text = make_text()
    assert len(text) >= text_module.LONG_LINE
    positions = [(m.start(), m.end()) for m in re.finditer(r"[\w/]+", text)]
    fast = [(line_fact(is_all_caps, text, a, b), name_context(text, a, b),
             medical_syntax.measurement_value(text, a, b), medical_syntax.identifier_cue(text, a, b))
            for a, b in positions]
    monkeypatch.setattr(text_module, "LONG_LINE", 1 << 30)  # every line short: no index, no memo
    monkeypatch.setattr(medical_syntax, "LONG_LINE", 1 << 30)
    monkeypatch.setattr(text_module, "MEMO_SPAN_CHARS", -1)  # no answer memoised per span either
    slow = [(is_all_caps(line_around(text, a, b)), name_context(text, a, b),
             medical_syntax.measurement_value(text, a, b), medical_syntax.identifier_cue(text, a, b))
            for a, b in positions]
    assert fast == slow
    assert any(f[2] for f in fast) and not all(f[2] for f in fast)  # the test sees both answers


def test_when_the_spans_of_a_short_note_are_asked_twice_then_the_memoised_answers_are_the_computed_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dictionaries import medical_syntax
    from dictionaries import text as text_module
    from streams.cli.bench import fixed_length_notes

    texts = [n.text for n in fixed_length_notes(20, 1000)]
    spans = [(t, m.start(), m.end()) for t in texts for m in re.finditer(r"[\w/.:-]+", t)]

    def answers() -> list[tuple[bool, bool, bool, str | None]]:
        return [(name_context(t, a, b), name_context(t, a, b, personal_titles_only=True),
                 medical_syntax.measurement_value(t, a, b), medical_syntax.identifier_cue(t, a, b)) for t, a, b in spans]

    first, again = answers(), answers()  # the second time from the memo
    monkeypatch.setattr(text_module, "MEMO_SPAN_CHARS", -1)
    computed = answers()
    assert first == again == computed
    assert {f[0] for f in first} == {f[2] for f in first} == {True, False}  # both answers seen
    assert any(f[0] != f[1] for f in first)  # the keyword is part of the memo's key
    assert len({f[3] for f in first}) >= 3  # several kinds of identifier cue, and none


# ---- ends_here: a backward search, the same answers as re's forward one -------------------------------------------

def _ends_here_patterns() -> dict[str, object]:
    import dictionaries.text as text_module
    import processors.decide.features as features

    named = {f"text.{n}": getattr(text_module, n) for n in ("_TITLE_BEFORE", "_ROLE_BEFORE")}
    named.update({f"features.{n}": getattr(features, n) for n in (
        "_TITLE_BEFORE", "_KIN_BEFORE", "_PROVIDER_BEFORE", "_PLACE_CUE_BEFORE", "_DATE_CUE_BEFORE", "_DOSE_BEFORE",
        "_VERB_BEFORE", "_NUMBER_BEFORE")})
    return named


def _forward(compiled: object) -> re.Pattern[str]:
    flags = getattr(compiled, "flags") & (re.IGNORECASE | re.MULTILINE | re.DOTALL)  # noqa: B009
    return re.compile(getattr(compiled, "pattern"), flags)  # noqa: B009


_EDGE_LEFTS = ("", "Dr. ", "seen by Dr. John ", "Dr. JOHN ", "mr", "Mrs. A. ", "pt ", "Patient\n", "dr.\n",
               "Mr. Smith\n\n", "his wife's ", "daughter: ", "given 5 mg ", "started on ", "d/c'd ", "visiting ",
               "8/", "12 -", "lives in ", "xdr. ", "admitted ", "D/C ", "since\t", "ÉDr. ", "sister  ")


@pytest.mark.parametrize("left", _EDGE_LEFTS)
def test_when_a_left_context_is_searched_backwards_then_the_answer_is_re_s(left: str) -> None:
    for name, compiled in _ends_here_patterns().items():
        expected = _forward(compiled).search(left) is not None
        assert (compiled.search(left) is not None) is expected, (name, left)  # type: ignore[attr-defined]


def test_when_the_evaluation_notes_left_contexts_are_searched_backwards_then_every_answer_is_re_s(
        shared_dir: Path) -> None:
    from streams.cli.bench import fixed_length_notes

    texts = [n.text for n in fixed_length_notes(150, 1000)]
    for name in ("presidio_synth_v2", "meddocan_dev"):
        with (shared_dir / "data" / "eval" / f"{name}.jsonl").open(encoding="utf-8") as fh:
            texts += [json.loads(line)["text"] for _, line in zip(range(300), fh, strict=False)]
    lefts = [t[max(0, a - 48):a] for t in texts for a in range(0, len(t), 5)]
    matched = 0
    for name, compiled in _ends_here_patterns().items():
        forward = _forward(compiled)
        answers = [forward.search(x) is not None for x in lefts]
        assert [compiled.search(x) is not None for x in lefts] == answers, name  # type: ignore[attr-defined]
        matched += sum(answers)
    assert len(lefts) > 100_000 and matched > 1_000  # the contexts hold matches of the patterns to compare
