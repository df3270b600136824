"""``deidstream bench``'s notes (also scripts/bench_ner.py's, bench_checkouts', the GPU run's): no text repeats, so a
speed figure is not made on notes the pipeline's memos have already answered."""

from __future__ import annotations

from streams.cli.bench import fixed_length_notes


def test_when_bench_notes_are_made_then_no_text_repeats_and_each_is_about_the_length_asked() -> None:
    notes = fixed_length_notes(300, 1000)
    texts = [n.text for n in notes]
    assert len(set(texts)) == len(texts) == 300
    assert all(900 <= len(t) <= 1000 for t in texts)
    assert len({n.note_id for n in notes}) == 300


def test_when_the_seed_is_the_same_then_the_notes_are_and_another_seed_gives_other_texts() -> None:
    a, b, c = (fixed_length_notes(40, 600, seed=s) for s in (5, 5, 6))
    assert [n.text for n in a] == [n.text for n in b]
    assert not {n.text for n in a} & {n.text for n in c}
