"""processors.metrics.retention: what the output changed counts as lost unless the span has identifier evidence
of its own (issue 14); synthetic notes only."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from span_items import make_span

from dictionaries.jargon import clinical_words
from dictionaries.medical import medical_syntax_spans, medical_vocabulary
from processors.metrics.retention import Retention, WordJudge, count_retention
from processors.spans import Intervals, OffsetMap
from schemas.models import Span


@pytest.fixture(scope="module")
def judge() -> WordJudge:
    words = clinical_words()
    return WordJudge(4.0, lambda: words)


def _retention(text: str, items: Sequence[tuple[str, str]], judge: WordJudge,
               message: Sequence[str] = ()) -> Retention:
    """Tag ``items`` (substring, label) as tag mode does and count what the output kept."""
    spans: list[Span] = []
    for sub, label in items:
        start = text.index(sub)
        spans.append(make_span(start, start + len(sub), label))
    spans.sort(key=lambda s: s.start)
    output, pos = [], 0
    for s in spans:
        output.append(text[pos:s.start] + f"[{s.label}]")
        pos = s.end
    output.append(text[pos:])
    offsets = OffsetMap.from_texts(text, "".join(output))
    msg = Intervals((text.index(m), text.index(m) + len(m)) for m in message)
    vocab = medical_vocabulary()
    return count_retention(text, offsets, spans, msg, syntax=lambda t, a, b: medical_syntax_spans(t, start=a, end=b),
                           medical_terms=vocab.find(text), judge=judge)


@pytest.mark.parametrize("text, items, kept, lost, lost_clinical, removed", [
    # vitals tagged as a date: lost (clinical syntax); the real date: removed for a reason
    ("HR 80-100, BP 120/80. Seen 7/22/2019.", [("80-100", "DATE"), ("7/22/2019", "DATE")], 2, 2, 2, 3),
    # a shift time has no identifier cue: lost, though not in clinical syntax
    ("Shift 7a-7p quiet, T 37.2 C.", [("7a-7p", "DATE")], 2, 2, 0, 0),
    # a record number and a phone with their cues: removed for a reason
    ("MRN 4417829, call 934-364-2389.", [("4417829", "ID"), ("934-364-2389", "PHONE")], 0, 0, 0, 4),
    ("Nothing tagged: K 4.1, Na 139.", [], 3, 0, 0, 0),  # "4.1" is two tokens, as gold scoring counts
])
def test_when_numbers_are_tagged_then_only_identifier_evidence_excuses_the_change(
        judge: WordJudge, text: str, items: list[tuple[str, str]], kept: int, lost: int, lost_clinical: int,
        removed: int) -> None:
    n = _retention(text, items, judge).numbers
    assert (n.kept, n.lost, n.lost_clinical, n.removed) == (kept, lost, lost_clinical, removed)
    assert n.retention == (kept / (kept + lost) if kept + lost else None)


@pytest.mark.parametrize("text, items, lost, lost_clinical, removed", [
    ("Pt on levo and vanco, wife Mary at bedside.", [("levo", "NAME"), ("vanco", "NAME"), ("Mary", "NAME")], 2, 2, 1),
    ("Seen by Dr. Neo today.", [("Neo", "NAME")], 0, 0, 1),                # a personal title: a name
    ("pt weaned to CPAP overnight.", [("weaned", "NAME")], 1, 1, 0),         # "pt" before a verb: no name cue
    ("Kowalczyk family at bedside.", [("Kowalczyk", "NAME")], 0, 0, 1),    # a surname no vocabulary explains
    ("the patient was seen.", [("the", "NAME")], 1, 1, 0),     # a common word (in the clinical text too)
    ("Spoke with J. Kowalczyk today.", [("J. Kowalczyk", "NAME")], 0, 0, 2),  # the initial goes with the name
    ("R arm swollen.", [("R", "NAME")], 1, 0, 0),                          # a letter alone is an abbreviation
    ("Seen at Kowalczyk Medical Center.", [("Kowalczyk Medical Center", "ORGANIZATION")], 0, 0, 3),  # one name
    ("Seen at Medical Center.", [("Medical Center", "ORGANIZATION")], 2, 2, 0),  # common words, no name in it
    ("Visit on Monday the 12th.", [("Monday the 12th", "DATE")], 0, 0, 2),  # the words of a date
])
def test_when_words_are_tagged_then_clinical_and_common_words_count_as_lost(
        judge: WordJudge, text: str, items: list[tuple[str, str]], lost: int, lost_clinical: int,
        removed: int) -> None:
    w = _retention(text, items, judge).words
    assert (w.lost, w.lost_clinical, w.removed) == (lost, lost_clinical, removed)
    words = [t for t in text.replace(".", " ").replace(",", " ").split() if not any(c.isdigit() for c in t)]
    assert w.kept + w.lost + w.removed == len(words)


def test_when_a_tag_covers_the_messages_own_identifier_then_it_is_removed_for_a_reason(judge: WordJudge) -> None:
    text = "Pager 4417 for Levo questions."
    r = _retention(text, [("Levo", "NAME")], judge, message=["Levo"])
    assert (r.words.lost, r.words.removed) == (0, 1)
