"""The ``ner`` processor: windows, decoding, exact offsets on cased text, long notes, batching.

Mechanics run on a tiny model fine-tuned here (2 layers, a closed set of names, seconds), so they test
the processor and not the shipped model's quality; the shipped model has its own smoke tests below."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from paths import REPO

from processors.ner.step import (
    DEFAULT_MODEL_DIR,
    TagIndex,
    bio_tags,
    decode_spans,
    only_function_words,
    window_bounds,
    window_cores,
)
from processors.pipeline import BuildContext, Note, build_processor
from processors.training.ner import TrainConfig, base_model_dir, piece_classes, read_examples, train
from schemas.errors import ConfigError
from schemas.models import NoteIn, Span

NAMES = ["Quimby", "Zelnick", "Okonkwo", "Thibodeaux", "Nakashima", "Brannigan"]
FILLER = ["patient", "stable", "overnight", "tolerating", "diet", "pain", "controlled", "plan", "continue",
          "monitor", "labs", "reviewed", "with", "and", "the", "today", "no", "acute", "events", "."]


def _sentence(rng: random.Random) -> tuple[str, list[dict[str, Any]]]:
    words: list[str] = [rng.choice(FILLER) for _ in range(rng.randint(3, 14))]
    for _ in range(rng.randint(1, 2)):
        name = rng.choice(NAMES)
        words.insert(rng.randint(0, len(words)), rng.choice([name, name.upper(), name.lower()]))
    text, spans, pos = " ".join(words), [], 0
    for w in words:
        if w.title() in NAMES:
            spans.append({"start": pos, "end": pos + len(w), "label": "NAME", "text": w})
        pos += len(w) + 1
    return text, spans


def _train_tiny(tmp: Path, sentence: Callable[[random.Random], tuple[str, list[dict[str, Any]]]], notes: int,
                data_seed: int, **options: Any) -> str:
    """A 2-layer model fine-tuned in seconds on ``notes`` sentences of ``sentence``; its folder."""
    rng = random.Random(data_seed)
    with (tmp / "train.jsonl").open("w") as fh:
        for i in range(notes):
            text, spans = sentence(rng)
            fh.write(json.dumps({"id": str(i), "text": text, "spans": spans}) + "\n")
    train(TrainConfig(data=[tmp / "train.jsonl"], out=tmp / "model", lr=5e-4, batch_size=8, max_length=64,
                      num_layers=2, seed=1, threads=1, **options))
    return str(tmp / "model")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _train_tiny(tmp_path_factory.mktemp("ner"), _sentence, 64, 5, max_steps=40)


def _ner(model_dir: str, **options: Any) -> Any:
    return build_processor("ner", {"model_dir": model_dir, "quantize": False, **options}, BuildContext())


def _run(proc: Any, texts: list[str]) -> list[Note]:
    out: list[Note] = proc.process_batch([Note(input=NoteIn(note_id=f"n{i}", text=t)) for i, t in enumerate(texts)])
    return out


# -- windows ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "size", "overlap"), [
    (0, 254, 64), (1, 254, 64), (254, 254, 64), (255, 254, 64), (3000, 254, 64), (3001, 126, 64),
    (1000, 65, 64), (17, 8, 3),
])
def test_when_a_note_is_windowed_then_windows_cover_it_with_overlap_and_cores_tile_it(
    n: int, size: int, overlap: int
) -> None:
    bounds = window_bounds(n, size, overlap)
    if n == 0:
        assert bounds == []
        return
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(b - a <= size for a, b in bounds)
    assert all(prev[1] - nxt[0] >= overlap for prev, nxt in zip(bounds, bounds[1:], strict=False))
    cores = window_cores(bounds)
    assert cores[0][0] == 0 and cores[-1][1] == n
    assert all(c1[1] == c2[0] for c1, c2 in zip(cores, cores[1:], strict=False))  # tiles: no gap, no double
    for (a, b), (lo, hi) in zip(bounds, cores, strict=True):
        assert a <= lo <= hi <= b
        if len(bounds) > 1:  # every predicted piece keeps context on both sides (window edges excepted)
            assert lo == 0 or lo - a >= overlap // 2
            assert hi == n or b - hi >= overlap // 2


def test_when_overlap_is_not_smaller_than_the_window_then_config_is_rejected(tiny_model: str) -> None:
    with pytest.raises(ConfigError):
        _ner(tiny_model, max_length=64, overlap=62)


@pytest.mark.parametrize("options", [{"model_dir": "/nonexistent/model"}, {"batch": 3}, {"dtype": "int4"}])
def test_when_options_are_invalid_then_config_error(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        build_processor("ner", options, BuildContext())


def test_when_dtype_is_bfloat16_then_the_model_runs_in_it_unquantized_and_finds_the_same_names(
    tiny_model: str
) -> None:
    import torch

    texts = ["plan continue OKONKWO monitor labs reviewed Nakashima today", "quimby stable overnight"]
    bf16 = _ner(tiny_model, dtype="bfloat16", quantize=True)  # quantization is for float32 weights only
    assert next(bf16.model.model.parameters()).dtype == torch.bfloat16 and not bf16.model.quantized
    fp32 = _ner(tiny_model)
    spans = [[(t[s.start:s.end], s.label) for s in n.spans] for t, n in zip(texts, _run(bf16, texts), strict=True)]
    assert spans == [[(t[s.start:s.end], s.label) for s in n.spans] for t, n in zip(texts, _run(fp32, texts), strict=True)]
    assert spans[0] == [("OKONKWO", "NAME"), ("Nakashima", "NAME")]


# -- decoding ---------------------------------------------------------------------------------------------

INDEX = TagIndex.from_tags(bio_tags(["NAME", "ID"]))  # O, B-NAME, I-NAME, B-ID, I-ID


def _probs(rows: list[dict[str, float]]) -> np.ndarray:
    tags = bio_tags(["NAME", "ID"])
    out = np.zeros((len(rows), len(tags)), dtype=np.float32)
    for i, row in enumerate(rows):
        for t, p in row.items():
            out[i, tags.index(t)] = p
        out[i, 0] = 1.0 - sum(row.values())
    return out


@pytest.mark.parametrize(("text", "offsets", "rows", "options", "expected"), [
    # two pieces of one word, second piece missed by the model: widened to the whole word
    ("Seen Stockum", [(0, 4), (5, 10), (10, 12)], [{}, {"B-NAME": 0.9}, {}], {}, [(5, 12, "NAME", 0.9)]),
    # B after I of the same class starts a new entity
    ("Ann Lee", [(0, 3), (4, 7)], [{"B-NAME": 0.8}, {"B-NAME": 0.6, "I-NAME": 0.2}], {},
     [(0, 3, "NAME", 0.8), (4, 7, "NAME", 0.8)]),
    # I continues: one span, mean score
    ("Ann Lee", [(0, 3), (4, 7)], [{"B-NAME": 0.9}, {"I-NAME": 0.7}], {}, [(0, 7, "NAME", 0.8)]),
    # "94" of "94F" is not widened into the letter
    ("94F", [(0, 2), (2, 3)], [{"B-ID": 0.9}, {}], {}, [(0, 2, "ID", 0.9)]),
    # digits run widened: "123|45"
    ("MRN 12345", [(0, 3), (4, 7), (7, 9)], [{}, {"B-ID": 0.95}, {}], {}, [(4, 9, "ID", 0.95)]),
    # below the token threshold: nothing; a lower threshold finds it (recall knob)
    ("Ann", [(0, 3)], [{"B-NAME": 0.4}], {}, []),
    ("Ann", [(0, 3)], [{"B-NAME": 0.4}], {"token_threshold": 0.3}, [(0, 3, "NAME", 0.4)]),
    # min_score drops weak spans
    ("Ann", [(0, 3)], [{"B-NAME": 0.6}], {"min_score": 0.7}, []),
    # class change splits
    ("Ann 42", [(0, 3), (4, 6)], [{"B-NAME": 0.9}, {"I-ID": 0.9}], {}, [(0, 3, "NAME", 0.9), (4, 6, "ID", 0.9)]),
    # pieces of one word never split into two classes: the word's first piece decides
    ("since tues", [(0, 5), (6, 8), (8, 10)], [{}, {"B-NAME": 0.9}, {"B-ID": 0.8}], {}, [(6, 10, "NAME", 0.85)]),
    # separators at the edges are trimmed, an abbreviation's final "." stays
    ("at Mercy General, CA", [(0, 2), (3, 8), (9, 16), (16, 17), (18, 20)],
     [{}, {"B-NAME": 0.9}, {"I-NAME": 0.9}, {"I-NAME": 0.6}, {}], {}, [(3, 16, "NAME", 0.8)]),
    ("Dr. Lee Jr.", [(0, 2), (2, 3), (4, 7), (8, 10), (10, 11)],
     [{}, {}, {"B-NAME": 0.9}, {"I-NAME": 0.9}, {"I-NAME": 0.9}], {}, [(4, 11, "NAME", 0.9)]),
    # a sentence's final "." after a number is no part of it
    ("MRN 12345.", [(0, 3), (4, 9), (9, 10)], [{}, {"B-ID": 0.9}, {"I-ID": 0.9}], {}, [(4, 9, "ID", 0.9)]),
    # nothing
    ("", [], [], {}, []),
])
def test_when_piece_probabilities_are_decoded_then_spans_follow_the_policy(
    text: str, offsets: list[tuple[int, int]], rows: list[dict[str, float]], options: dict[str, float],
    expected: list[tuple[int, int, str, float]],
) -> None:
    offs = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    spans = decode_spans(text, offs, _probs(rows), INDEX, **options)  # type: ignore[arg-type]
    assert [(s.start, s.end, s.label, round(s.score, 3)) for s in spans] == expected
    assert all(s.source == "ner" for s in spans)


def test_when_gold_tags_are_decoded_then_synthetic_gold_spans_come_back_exactly() -> None:
    """Round trip on realistic notes: gold spans -> piece tags -> one-hot probabilities -> spans."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base_model_dir(None))
    examples = read_examples([REPO / "tests" / "data" / "synthetic_small.jsonl"])
    classes = sorted({c for e in examples for _, _, c in e.spans})
    tags = bio_tags(classes)
    index = TagIndex.from_tags(tags)
    mismatched = 0
    total = 0
    for ex in examples:
        enc = tok(ex.text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        piece_tags = piece_classes(enc["offset_mapping"], ex.spans)
        probs = np.zeros((len(offsets), len(tags)), dtype=np.float32)
        probs[np.arange(len(offsets)), [tags.index(t) for t in piece_tags]] = 1.0
        got = {(s.start, s.end, str(s.label)) for s in decode_spans(ex.text, offsets, probs, index)}
        want = {(a, b, c) for a, b, c in ex.spans}
        total += len(want)
        mismatched += len(want - got)
        assert all(ex.text[a:b] == ex.text[a:b].strip() for a, b, _ in got)
    assert total > 100
    assert mismatched == 0


# -- the processor on a tiny model ------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "seen today by ZELNICK and Quimby",
    "Okonkwo",
    "plan: continue\n\tNAKASHIMA   monitor labs",
    "brannigan; thibodeaux. Zelnick",
])
def test_when_names_are_cased_in_any_way_then_offsets_are_exact_in_the_original(tiny_model: str, text: str) -> None:
    (note,) = _run(_ner(tiny_model), [text])
    found = [text[s.start:s.end] for s in note.spans]
    expected = [w.strip(".;:") for w in text.split() if w.strip(".;:").title() in NAMES]
    assert found == expected


def test_when_a_note_has_3000_pieces_then_a_name_at_every_window_position_is_found(tiny_model: str) -> None:
    """Names sit at every offset modulo the window step, so some land on every window edge and overlap."""
    rng = random.Random(9)
    words: list[str] = []
    gold: list[tuple[int, int]] = []
    pos = 0
    gap = 0
    while pos < 16000:
        for _ in range(gap):
            w = rng.choice(FILLER[:-1])
            words.append(w)
            pos += len(w) + 1
        name = rng.choice(NAMES)
        gold.append((pos, pos + len(name)))
        words.append(name)
        pos += len(name) + 1
        gap = (gap + 1) % 11  # 0..10 filler words between names: every residue of the window step
    text = " ".join(words)
    proc = _ner(tiny_model, max_length=128, overlap=64)
    n_pieces = len(proc.model.tokenizer(text, add_special_tokens=False)["input_ids"])
    assert n_pieces >= 3000
    (note,) = _run(proc, [text])
    assert [(s.start, s.end) for s in note.spans] == gold


def test_when_notes_are_batched_then_results_equal_one_at_a_time(tiny_model: str) -> None:
    rng = random.Random(4)
    texts = [" ".join(_sentence(rng)[0] for _ in range(k)) for k in (1, 3, 40, 2, 0, 90)]
    proc = _ner(tiny_model, max_length=64, overlap=16, batch_size=4)
    batched = _run(proc, texts)
    single = [_run(proc, [t])[0] for t in texts]
    for b, s in zip(batched, single, strict=True):
        assert [(x.start, x.end, x.label) for x in b.spans] == [(x.start, x.end, x.label) for x in s.spans]
        assert np.allclose([x.score for x in b.spans], [x.score for x in s.spans], atol=1e-4)
    assert sum(len(n.spans) for n in batched) > 100


def test_when_the_text_is_empty_or_blank_then_no_spans(tiny_model: str) -> None:
    notes = _run(_ner(tiny_model), ["", "   \n\t "])
    assert [n.spans for n in notes] == [(), ()]


def test_when_built_twice_then_the_model_is_loaded_once(tiny_model: str) -> None:
    assert _ner(tiny_model).model is _ner(tiny_model, batch_size=2).model


def test_when_spans_are_added_then_existing_spans_are_kept(tiny_model: str) -> None:
    text = "seen by Quimby"
    prior = Span(start=0, end=4, label="DATE", source="regex")
    (note,) = _ner(tiny_model).process_batch([Note(input=NoteIn(note_id="k", text=text), spans=(prior,))])
    assert note.spans[0] == prior
    assert [text[s.start:s.end] for s in note.spans[1:]] == ["Quimby"]




def test_when_a_name_mixes_subtypes_then_it_is_one_span_with_the_majority_subtype() -> None:
    tags = bio_tags(["NAME/PATIENT", "NAME/PROVIDER", "DATE"])
    index = TagIndex.from_tags(tags)
    probs = np.zeros((3, len(tags)), dtype=np.float32)
    probs[0, tags.index("B-NAME/PROVIDER")] = 0.6
    probs[0, tags.index("B-NAME/PATIENT")] = 0.4
    probs[1, tags.index("I-NAME/PATIENT")] = 0.9
    probs[1, tags.index("O")] = 0.1
    probs[2, tags.index("O")] = 1.0
    text = "José Müller seen"
    offsets = np.asarray([(0, 4), (5, 11), (12, 16)], dtype=np.int64)
    (span,) = decode_spans(text, offsets, probs, index)
    assert (text[span.start:span.end], span.label, span.subtype) == ("José Müller", "NAME", "PATIENT")


# -- the shipped model ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> Any:
    return build_processor("ner", {}, BuildContext())  # defaults: the shipped model, int8 on CPU


def test_when_the_shipped_model_is_packaged_then_it_is_fp16_small_and_documented() -> None:
    from safetensors import safe_open

    weights = DEFAULT_MODEL_DIR / "model.safetensors"
    assert weights.stat().st_size <= 50 * 1024 * 1024
    with safe_open(str(weights), framework="pt") as f:
        assert {str(f.get_tensor(k).dtype) for k in f.keys()} == {"torch.float16"}
    assert (DEFAULT_MODEL_DIR / "tokenizer.json").is_file()
    meta = json.loads((DEFAULT_MODEL_DIR / "deidstream_ner.json").read_text())
    # trained by train-ner, or by its cross-validation wrapper (scripts/ner_cv.py, which calls the same train())
    assert meta["command"].startswith(("deidstream train-ner", "python3 scripts/ner_cv.py train")) and meta["scores"]
    card = (DEFAULT_MODEL_DIR / "MODEL_CARD.md").read_text()
    assert meta["command"] in card and "presidio_synth_v2" in card


@pytest.mark.parametrize(("text", "expected"), [
    ("PT JOHN MCALLISTER 84M ADMITTED 3/14/2021 FROM ST ELSEWHERE HOSPITAL. SEEN BY DR PATEL @0800.",
     [("JOHN MCALLISTER", "NAME"), ("3/14/2021", "DATE"), ("PATEL", "NAME")]),
    ("pt maria gonzalez c/o CP since tues, hx CABG 2019 at st marys", [("maria gonzalez", "NAME")]),
    ("NEURO: A&O X3. SEEN BY DR KOWALSKI. DAUGHTER GRACE CALLED, UPDATED.", [("KOWALSKI", "NAME"), ("GRACE", "NAME")]),
    ("Spoke with José Müller-Søndergaard (MRN 00123456) on 12/03/2020, Sacramento, CA 95819.",
     [("José Müller-Søndergaard", "NAME"), ("00123456", "ID"), ("12/03/2020", "DATE"), ("Sacramento", "LOCATION")]),
    ("Pt seen by Dr. Okafor this AM. Wife Linda at bedside, can be reached at 617-555-0199.",
     [("Okafor", "NAME"), ("Linda", "NAME"), ("617-555-0199", "PHONE")]),
    ("Continue Lasix 40 mg IV BID. Foley catheter in place. Bruce protocol stress test negative.", []),
    ("Patient states she wants to go home and feels much better today. Ambulating in hallway.", []),
])
def test_when_the_shipped_model_reads_clinical_text_then_it_finds_the_identifiers_exactly(
    shipped: Any, text: str, expected: list[tuple[str, str]]
) -> None:
    (note,) = _run(shipped, [text])
    found = {(text[s.start:s.end], str(s.label)) for s in note.spans}
    assert set(expected) <= found
    if not expected:
        assert found == set()


@pytest.mark.slow
def test_when_the_shipped_model_batches_quantized_then_results_equal_one_at_a_time(shipped: Any) -> None:
    records = [json.loads(line) for line in (REPO / "tests" / "data" / "synthetic_small.jsonl").open()][:8]
    texts = [r["text"] for r in records]
    batched = _run(shipped, texts)
    single = [_run(shipped, [t])[0] for t in texts]
    assert [n.spans for n in batched] == [n.spans for n in single]  # int8 runs window by window: identical


@pytest.mark.parametrize(("text", "dropped"), [
    ("What", True), ("is", True), ("from", True), ("'s", True), ("-", True), ("the", True), ("Who", True),
    ("Will", False), ("WILL", False), ("May", False), ("J", False), ("3", False), ("the 9th", False),
    ("Smith", False), ("options", False), ("Dr. Green", False), ("June", False),
])
def test_when_a_span_is_only_function_words_then_it_is_dropped(text: str, dropped: bool) -> None:
    assert only_function_words(text) is dropped


def test_when_function_word_filter_is_on_then_only_those_spans_go(shipped: Any) -> None:
    texts = ["What are my options?", "My website is https://InstantResales.com.cy/",
             "My name is Eliane Okafor and I moved here from Kenosha."]
    kept = {t[s.start:s.end] for t, n in zip(texts, _run(shipped, texts), strict=True) for s in n.spans}
    unfiltered = build_processor("ner", {"drop_function_words": False}, BuildContext())
    raw = {t[s.start:s.end] for t, n in zip(texts, _run(unfiltered, texts), strict=True) for s in n.spans}
    assert kept <= raw
    assert raw - kept  # the model does tag function words in this out-of-domain chat style
    assert all(only_function_words(t) for t in raw - kept)
    assert not any(only_function_words(t) for t in kept)
    assert "Okafor" in " ".join(kept)


@pytest.mark.slow
def test_when_the_forward_is_traced_then_probabilities_equal_the_eager_model(shipped: Any) -> None:
    from dataclasses import replace

    from processors.ner.step import predict

    loaded = shipped.model
    assert loaded.device == "cpu" and loaded.traced is not None
    records = [json.loads(line) for line in (REPO / "tests" / "data" / "synthetic_small.jsonl").open()][:4]
    texts = ["Okafor", *(r["text"] for r in records), " ".join(r["text"] for r in records) * 3]  # last: 3 windows
    eager = replace(loaded, traced=None)
    for a, b in zip(predict(loaded, texts), predict(eager, texts), strict=True):
        np.testing.assert_allclose(a.probs, b.probs, atol=1e-5, rtol=0)


def test_when_a_trace_would_bake_in_a_branch_then_the_model_runs_eager() -> None:
    import torch

    from processors.ner.step import _trace

    class LengthBranch(torch.nn.Module):
        """A forward whose Python branch on the length a trace would freeze at the traced length."""

        config = type("Cfg", (), {"vocab_size": 100})()

        def forward(self, input_ids: torch.Tensor) -> Any:
            x = input_ids.float().unsqueeze(-1)
            logits = x * 2 if input_ids.shape[1] > 100 else x
            return type("Out", (), {"logits": logits})()

    assert _trace(LengthBranch()) is None


# -- the case channel -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("word", "expected"), [
    ("smith", "LOWER"), ("Smith", "TITLE"), ("SMITH", "UPPER"), ("J", "TITLE"), ("A1", "TITLE"), ("MRI", "UPPER"),
    ("McDonald", "MIXED"), ("pH", "MIXED"), ("12", "NONE"), ("/", "NONE"), ("Müller", "TITLE"), ("ÖZ", "UPPER"),
    ("ß", "LOWER"),
])
def test_when_a_word_is_classed_by_case_then_the_class_follows_its_letters(word: str, expected: str) -> None:
    from processors.ner import step

    assert step.word_case(word) == getattr(step, f"CASE_{expected}")


def test_when_case_types_are_computed_then_every_piece_of_a_word_carries_the_words_case() -> None:
    from transformers import AutoTokenizer

    from processors.ner.step import CASE_LOWER, CASE_MIXED, CASE_NONE, CASE_TITLE, CASE_UPPER, case_types

    tok = AutoTokenizer.from_pretrained(str(DEFAULT_MODEL_DIR))
    text = "Seen by QUARTERMAIN and Thibodeaux, McDonald's pH 7.31 ok"
    enc = tok.backend_tokenizer.encode(text, add_special_tokens=False)
    types = case_types(text, enc.offsets, enc.word_ids)
    by_word: dict[str, set[int]] = {}
    for (a, b), w, t in zip(enc.offsets, enc.word_ids, types.tolist(), strict=True):
        by_word.setdefault(f"{w}", set()).add(t)
        assert t == {"Seen": CASE_TITLE, "by": CASE_LOWER, "and": CASE_LOWER, "ok": CASE_LOWER, "pH": CASE_MIXED,
                     "McDonald": CASE_MIXED, "s": CASE_LOWER}.get(text[a:b], t)
    assert all(len(v) == 1 for v in by_word.values())  # one class per word, whatever its pieces
    pieces = {text[a:b]: t for (a, b), t in zip(enc.offsets, types.tolist(), strict=True)}
    assert pieces["7"] == CASE_NONE and pieces["'"] == CASE_NONE
    quarter = [t for (a, b), t in zip(enc.offsets, types.tolist(), strict=True) if 8 <= a < 19]
    thibo = [t for (a, b), t in zip(enc.offsets, types.tolist(), strict=True) if 24 <= a < 34]
    assert len(quarter) > 1 and set(quarter) == {CASE_UPPER}  # several pieces, one upper-case word
    assert len(thibo) > 1 and set(thibo) == {CASE_TITLE}
    assert case_types("", [], []).shape == (0,)


#: words that are names only when capitalised: an uncased model cannot tell "Will" the name from "will"
_CASED_NAMES = ["Will", "Hope", "Young", "Rose", "Grant"]


def _cased_sentence(rng: random.Random) -> tuple[str, list[dict[str, Any]]]:
    words: list[str] = [rng.choice(FILLER[:-1]) for _ in range(rng.randint(3, 10))]
    spans, named = [], []
    for _ in range(rng.randint(1, 2)):
        w = rng.choice(_CASED_NAMES)
        name = rng.random() < 0.5
        named.append(name)
        words.insert(rng.randint(0, len(words)), w if name else w.lower())
    text, pos = "", 0
    for w in words:
        if w in _CASED_NAMES:
            spans.append({"start": pos, "end": pos + len(w), "label": "NAME", "text": w})
        text += w + " "
        pos += len(w) + 1
    return text.rstrip(), spans


@pytest.fixture(scope="module")
def cased_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _train_tiny(tmp_path_factory.mktemp("ner_cased"), _cased_sentence, 96, 6, max_steps=60, case_channel=True)


@pytest.mark.slow
def test_when_a_model_is_trained_with_the_case_channel_then_it_tells_a_capitalised_name_from_the_word(
    cased_model: str,
) -> None:
    config = json.loads((Path(cased_model) / "config.json").read_text())
    assert config["deidstream_case_channel"] is True and config["type_vocab_size"] == 5
    texts = ["plan Will monitor labs and pain will improve", "Hope reviewed the labs with hope today",
             "continue plan Grant stable no acute events"]
    found = [[t[s.start:s.end] for s in n.spans] for t, n in zip(texts, _run(_ner(cased_model), texts), strict=True)]
    # the same word pieces either way: only the channel can separate them
    assert found == [["Will"], ["Hope"], ["Grant"]]


@pytest.mark.slow
def test_when_a_case_channel_model_runs_quantized_traced_or_batched_then_it_agrees_with_itself(
    cased_model: str,
) -> None:
    from dataclasses import replace

    from processors.ner.step import load_model, predict

    loaded = load_model(cased_model, "cpu", True, "auto")
    assert loaded.case_channel and loaded.quantized and loaded.traced is not None
    rng = random.Random(8)
    texts = ["Will", *(" ".join(_cased_sentence(rng)[0] for _ in range(k)) for k in (1, 4, 30))]
    eager = replace(loaded, traced=None)
    for a, b in zip(predict(loaded, texts), predict(eager, texts), strict=True):
        np.testing.assert_allclose(a.probs, b.probs, atol=1e-5, rtol=0)
    fp32 = load_model(cased_model, "cpu", False, "auto")
    batched = predict(fp32, texts, batch_size=8, max_length=32, overlap=8)
    single = [predict(fp32, [t], max_length=32, overlap=8)[0] for t in texts]
    for a, b in zip(batched, single, strict=True):
        np.testing.assert_allclose(a.probs, b.probs, atol=1e-4, rtol=0)
    # and the channel is read: the same text in another case gives other probabilities
    upper = predict(fp32, [texts[2].upper()])[0].probs
    assert not np.allclose(upper, predict(fp32, [texts[2]])[0].probs, atol=1e-3)
