"""Transformer NER: a fine-tuned BIO token classifier (MiniLM, uncased) over whole notes.

How a note becomes spans:

1. The fast tokenizer splits the ORIGINAL text once (no special tokens) and keeps each word piece's
   character offsets; the model is uncased, but offsets always point into the cased original. Text whose
   characters the normalizer maps one to one takes a fast path with the same pieces (:mod:`processors.ner.pieces`:
   no alignments kept, the tokenizer's WordPiece model asked once per distinct word). A model trained with the
   case channel also gets each piece's word case (:func:`case_types`) as its token type id.
2. A note longer than the model window is cut into windows of ``max_length - 2`` pieces that overlap by
   ``overlap`` pieces (the last window is aligned to the end, so no piece is skipped). Each piece is
   predicted by the window in which it sits farthest from an edge (the cut is at the middle of each
   overlap), so every prediction has at least ``overlap / 2`` pieces of context on both sides.
3. All windows of all notes in a batch are sorted by length and run in chunks of ``batch_size`` under
   ``torch.inference_mode``: one forward call per chunk, whatever the note boundaries. With ``quantize``
   (CPU, dynamic int8) each window runs alone: int8 activations are scaled per tensor, so batching would
   make a note's spans depend on the notes beside it; with two or more torch threads those windows run side by
   side in as many Python threads, each on one intra-op thread (:func:`side_by_side`: the same numbers, ~16%
   faster on two cores). On CPU a window without padding runs through a
   TorchScript trace of the model (checked against the model at load; same numbers, less Python overhead).
   On CUDA the inputs go up from pinned memory without blocking, the probabilities come back the same way,
   and a chunk is scattered into its notes only once the next chunk's forward is queued, so the host's work
   overlaps the GPU's.
4. Decoding (:func:`decode_spans`, vectorised over a note's pieces: numpy finds the runs of entity pieces,
   Python only visits each run): a piece is an entity piece when ``1 - P(O) >= token_threshold``; its
   class is the one with the highest ``P(B-c) + P(I-c)``. Consecutive entity pieces of one label form a
   span unless a piece says ``B`` more strongly than ``I``; the span's subtype is the one with the most
   probability mass over its pieces (a name is one span even if the model hesitates over its role). A span that starts or ends inside a word is
   widened to the whole run of letters (or digits) it cut, so "Stock|um" never leaves "um" behind,
   while "94" in "94F" stays "94"; a piece inside a word never starts a new span, and separators picked
   up at a span's edges (",", quotes, brackets) are trimmed. The score is the mean entity probability ``1 - P(O)`` over the
   span's pieces (how sure the model is that this is an identifier, whichever class; a name torn between
   PATIENT and PROVIDER is still a sure name); spans under ``min_score`` are not emitted.
5. With ``drop_function_words`` (default), spans made only of function words are dropped
   (:func:`only_function_words`): out of clinical style the model tags "What", "is", "to", "'s".

Tags are ``O``, ``B-<class>``, ``I-<class>``; a class is a ``schemas.Label`` value, optionally with a
subtype (``NAME/PROVIDER``). The model and tokenizer load once per process and device
(:func:`load_model` is cached); nothing is downloaded: ``model_dir`` must be a local folder.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from dictionaries.calendar import MONTH_TOKENS
from processors.language import by_route, load_identifier, route_folder
from processors.ner.pieces import PieceEncoder
from processors.pipeline import BuildContext, Note, register
from processors.profiles import DetectorProfile
from processors.spans import NER_CANDIDATE_THRESHOLD
from schemas.errors import ConfigError
from schemas.labels import Label, Subtype, check_subtype
from schemas.models import Span

logger = logging.getLogger(__name__)

#: The shipped model (fp16 safetensors + tokenizer + MODEL_CARD.md).
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "models" / "deid-minilm"
#: The shipped models of the routed languages (``SharedPolicy.language_routes``; :mod:`processors.language`).
ROUTE_MODEL_DIRS: dict[str, Path] = {"es": Path(__file__).resolve().parent / "models" / "deid-minilm-es"}
#: Training metadata written by ``ner_train`` beside the weights (classes, data, command, scores).
META_FILE = "deidstream_ner.json"
#: A model folder holding this file (the sha256 of the word-piece embeddings) ships without those embeddings and
#: without a tokenizer: both are the shipped model's (a model trained from the same base with them frozen)
SHARED_EMBEDDINGS_FILE = "embedding.sha256"
WORD_EMBEDDINGS = "bert.embeddings.word_embeddings.weight"
OUTSIDE = "O"
FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


# -- tags and classes -------------------------------------------------------------------------------------


def class_name(label: Label | str, subtype: Subtype | str | None = None) -> str:
    """The class string of a label (and optional subtype): ``NAME`` or ``NAME/PROVIDER``."""
    return f"{Label(label)}/{Subtype(subtype)}" if subtype else str(Label(label))


def parse_class(name: str) -> tuple[Label, Subtype | None]:
    """Inverse of :func:`class_name`; raises ValueError on an unknown label or a foreign subtype."""
    label, _, sub = name.partition("/")
    subtype = Subtype(sub) if sub else None
    check_subtype(label, subtype)
    return Label(label), subtype


def bio_tags(classes: Sequence[str]) -> list[str]:
    """``O`` then ``B-c``, ``I-c`` for each class, in order (the model's label ids)."""
    return [OUTSIDE] + [f"{p}-{c}" for c in classes for p in ("B", "I")]


@dataclass(frozen=True, slots=True)
class TagIndex:
    """Where each class's B and I tags sit in the model output."""

    classes: tuple[str, ...]
    outside: int
    begin: tuple[int, ...]
    inside: tuple[int, ...]

    @classmethod
    def from_tags(cls, tags: Sequence[str]) -> TagIndex:
        if OUTSIDE not in tags:
            raise ConfigError("NER model tags lack 'O'")
        pos = {t: i for i, t in enumerate(tags)}
        classes = tuple(dict.fromkeys(t[2:] for t in tags if t[:2] in ("B-", "I-")))
        bad = [c for c in classes if f"B-{c}" not in pos or f"I-{c}" not in pos or not _valid_class(c)]
        if bad:
            raise ConfigError(f"NER model has tags that are not BIO over deidstream labels: {sorted(bad)}")
        return cls(classes, pos[OUTSIDE], tuple(pos[f"B-{c}"] for c in classes),
                   tuple(pos[f"I-{c}"] for c in classes))


def _valid_class(name: str) -> bool:
    try:
        parse_class(name)
    except ValueError:
        return False
    return True


# -- windows ----------------------------------------------------------------------------------------------


def window_bounds(n_tokens: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Half-open token ranges of at most ``size`` tokens covering ``[0, n_tokens)``; neighbours overlap by
    at least ``overlap`` tokens. The last window ends at ``n_tokens`` (no token is skipped)."""
    if size <= overlap or overlap < 0:
        raise ConfigError(f"window size {size} must exceed overlap {overlap} >= 0")
    if n_tokens <= size:
        return [(0, n_tokens)] if n_tokens else []
    step = size - overlap
    bounds = []
    start = 0
    while start + size < n_tokens:
        bounds.append((start, start + size))
        start += step
    bounds.append((n_tokens - size, n_tokens))
    return bounds


def window_cores(bounds: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The tokens each window predicts: overlaps are cut in the middle, so cores tile the note exactly."""
    cores = []
    for k, (a, b) in enumerate(bounds):
        lo = 0 if k == 0 else (a + bounds[k - 1][1]) // 2
        hi = b if k == len(bounds) - 1 else (bounds[k + 1][0] + b) // 2
        cores.append((lo, hi))
    return cores


# -- the case channel -------------------------------------------------------------------------------------

#: The encoder is uncased: its tokenizer lower-cases every word, so "Will" and "will", "SMITH HAD" and "Smith had"
#: reach it alike. A model trained with the case channel (``train-ner --case-channel``) gets each word piece's
#: word's case as its token type id (BERT's segment embedding, widened to :data:`N_CASES` rows): no case, lower,
#: title, upper, mixed. Its ``config.json`` says so (:data:`CASE_CHANNEL_KEY`); a model without it runs as before.
CASE_NONE, CASE_LOWER, CASE_TITLE, CASE_UPPER, CASE_MIXED = range(5)
N_CASES = 5
CASE_CHANNEL_KEY = "deidstream_case_channel"


def word_case(word: str) -> int:
    """The case class of one word: ``CASE_NONE`` (no cased letter: digits, signs), ``CASE_LOWER``, ``CASE_TITLE``
    (a capital, then only lower case; one capital alone: "J", "A1"), ``CASE_UPPER`` (two or more capitals, no lower
    case), ``CASE_MIXED`` ("McDonald", "iPhone", "pH")."""
    if word.islower():
        return CASE_LOWER
    if word.isupper():
        return CASE_UPPER if sum(c.isupper() for c in word) > 1 else CASE_TITLE
    if word.istitle():
        return CASE_TITLE
    return CASE_MIXED if any(c.isupper() or c.islower() for c in word) else CASE_NONE


def case_types(text: str, offsets: Any, word_ids: Sequence[int | None] | IntArray) -> IntArray:
    """Per word piece, the case class (:func:`word_case`) of the tokenizer's word it belongs to (``offsets``: the
    pieces' (start, end) in ``text``; ``word_ids``: the pre-tokenizer's word index of each piece, None or -1 for
    none)."""
    n = len(word_ids)
    out = np.zeros(n, dtype=np.int64)
    if not n:
        return out
    if isinstance(word_ids, np.ndarray):
        words = word_ids.astype(np.int64, copy=False)
    else:
        words = np.fromiter((-1 if w is None else w for w in word_ids), dtype=np.int64, count=n)
    cuts = np.flatnonzero(np.diff(words)) + 1
    starts, ends = np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [n])).tolist()
    offs = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    for a, b in zip(starts, ends, strict=True):
        out[a:b] = word_case(text[int(offs[a, 0]): int(offs[b - 1, 1])])
    return out


def has_case_channel(config: Any) -> bool:
    """Whether a model (its transformers config) was trained with the case channel."""
    return bool(getattr(config, CASE_CHANNEL_KEY, False))


def add_case_channel(model: Any) -> None:
    """Give a BERT token classifier the case channel: its token-type embedding widened to :data:`N_CASES` rows, each
    a copy of the first (so the widened model computes what it did before training moves them), and the flag in
    its config. A model that has the channel already is left as it is."""
    import torch

    if has_case_channel(model.config):
        return
    old = model.bert.embeddings.token_type_embeddings
    new = torch.nn.Embedding(N_CASES, old.embedding_dim).to(old.weight.device, old.weight.dtype)
    with torch.no_grad():
        new.weight.copy_(old.weight[:1].expand(N_CASES, -1))
    model.bert.embeddings.token_type_embeddings = new
    model.config.type_vocab_size = N_CASES
    setattr(model.config, CASE_CHANNEL_KEY, True)


# -- decoding ---------------------------------------------------------------------------------------------


def _char_kind(ch: str) -> int:
    return 1 if ch.isalpha() else 2 if ch.isdigit() else 0


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """Extend a span cut inside a run of letters (or of digits) to the whole run."""
    kind = _char_kind(text[start])
    while kind and start > 0 and _char_kind(text[start - 1]) == kind:
        start -= 1
    kind = _char_kind(text[end - 1])
    while kind and end < len(text) and _char_kind(text[end]) == kind:
        end += 1
    return start, end


_TRIM = " \t\r\n,;:!?\"'"
_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSERS = {v: k for k, v in _PAIRS.items()}


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Drop separators a span picked up at its edges ("Mercy General," -> "Mercy General"); a final "."
    stays after a letter (abbreviations: "St.", "Jr.") but not after a digit ("617-555-0199." ends a sentence), a
    bracket stays when its partner is inside ("(555) 123-4567")."""
    while start < end:
        ch = text[start]
        if ch in _TRIM or ch == "." or (ch in _PAIRS and _PAIRS[ch] not in text[start + 1: end]):
            start += 1
        elif ch in _CLOSERS:
            start += 1
        else:
            break
    while end > start:
        ch = text[end - 1]
        if (ch in _TRIM or (ch in _CLOSERS and _CLOSERS[ch] not in text[start: end - 1]) or ch in _PAIRS
                or (ch == "." and end - 1 > start and text[end - 2].isdigit())):  # a sentence's end after a number
            end -= 1
        else:
            break
    return start, end


@functools.cache
def _label_ids(index: TagIndex) -> npt.NDArray[np.intp]:
    """For each class of ``index``, a number naming its label (classes of one label share it)."""
    labels = [str(parse_class(c)[0]) for c in index.classes]
    first = {lab: k for k, lab in reversed(list(enumerate(labels)))}
    return np.asarray([first[lab] for lab in labels], dtype=np.intp)


@functools.cache
def _class_parts(index: TagIndex) -> tuple[tuple[Label, Subtype | None], ...]:
    """(label, subtype) of each class of ``index`` (:func:`parse_class`, once per index)."""
    return tuple(parse_class(c) for c in index.classes)


@functools.cache
def _same_label(index: TagIndex) -> tuple[npt.NDArray[np.intp], ...]:
    """For each class of ``index``, the classes of its label in index order (those a run's class is chosen among)."""
    label_of = _label_ids(index)
    return tuple(np.flatnonzero(label_of == label_of[c]) for c in range(len(label_of)))


def _piece_groups(
    text: str, offsets: IntArray, is_entity: npt.NDArray[np.bool_], label: npt.NDArray[np.intp],
    begins: npt.NDArray[np.bool_],
) -> list[npt.NDArray[np.intp]]:
    """The runs of entity pieces that form one span each, as arrays of piece indices (see module docstring,
    step 4), computed over all pieces at once. Empty pieces are skipped; an entity piece continues the run of
    the piece before it (when that one is an entity piece too) if it is glued to it inside a word, or if it
    has the same label and does not say ``B`` more strongly than ``I``."""
    valid = np.flatnonzero(offsets[:, 1] > offsets[:, 0])
    ent_pos = np.flatnonzero(is_entity[valid])  # positions among the valid pieces
    if not len(ent_pos):
        return []
    ent = valid[ent_pos]
    adjacent = np.zeros(len(ent), dtype=bool)
    adjacent[1:] = ent_pos[1:] == ent_pos[:-1] + 1  # no non-entity piece in between
    cont = np.zeros(len(ent), dtype=bool)
    cont[1:] = adjacent[1:] & (label[ent[1:]] == label[ent[:-1]]) & ~begins[ent[1:]]
    # glued: starts where the previous piece ends, inside a run of letters (or of digits)
    touching = np.zeros(len(ent), dtype=bool)
    touching[1:] = adjacent[1:] & ~cont[1:] & (offsets[ent[1:], 0] == offsets[ent[:-1], 1])
    for k in np.flatnonzero(touching):
        a = int(offsets[ent[k], 0])
        kind = _char_kind(text[a])
        if kind != 0 and kind == _char_kind(text[a - 1]):
            cont[k] = True
    starts = np.flatnonzero(~cont).tolist()
    ends = [*starts[1:], len(ent)]
    return [ent[a:b] for a, b in zip(starts, ends, strict=True)]


def piece_scores(probs: FloatArray, index: TagIndex, token_threshold: float,
                 ) -> tuple[FloatArray, IntArray, FloatArray, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Per piece: each class's probability (B + I), the best class, the probability of any entity ("is this PHI",
    whatever the class: the ensemble's question), whether that reaches ``token_threshold``, and whether the best
    class begins there (its B over its I)."""
    p_begin = probs[:, list(index.begin)]
    p_inside = probs[:, list(index.inside)]
    p_class = p_begin + p_inside
    best = p_class.argmax(axis=1)
    rows = np.arange(len(probs))
    p_entity = 1.0 - probs[:, index.outside]
    return p_class, best, p_entity, p_entity >= token_threshold, p_begin[rows, best] > p_inside[rows, best]


def decode_spans(
    text: str, offsets: IntArray, probs: FloatArray, index: TagIndex, *,
    token_threshold: float = 0.5, min_score: float = 0.0, source: str = "ner",
) -> list[Span]:
    """Spans from per-piece tag probabilities (see module docstring, step 4). ``offsets`` is (n, 2) char
    offsets into ``text``; ``probs`` is (n, n_tags)."""
    if len(offsets) == 0:
        return []
    p_class, best, p_entity, is_entity, begins = piece_scores(probs, index, token_threshold)

    # classes of one label (NAME/PATIENT, NAME/PROVIDER) continue each other: a name is one span even when
    # the model hesitates over the role of its parts; the span's class is the one with the most mass
    label_of, same_label = _label_ids(index), _same_label(index)
    raw: list[tuple[int, int, int, float]] = []  # (start, end, class, score)
    for members in _piece_groups(text, offsets, is_entity, label_of[best], begins):
        mass = p_class[members].sum(axis=0)
        same = same_label[best[members[0]]]
        cls = int(same[int(np.argmax(mass[same]))])  # the first class of the largest mass, as max() picks
        # the mean as sum / count: the same float32 sum and division as ndarray.mean, without its overhead
        raw.append((int(offsets[members[0], 0]), int(offsets[members[-1], 1]), cls,
                    float(p_entity[members].sum() / len(members))))
    return spans_from_runs(text, raw, index, min_score=min_score, source=source)


def spans_from_runs(text: str, raw: Sequence[tuple[int, int, int, float]], index: TagIndex, *,
                    min_score: float = 0.0, source: str = "ner") -> list[Span]:
    """Spans from the runs of entity pieces ``(start, end, class, score)`` in text order: widened to whole words
    and trimmed, runs that widening joined merged (the first class, the higher score), those under ``min_score``
    dropped."""
    merged: list[tuple[int, int, int, float]] = []
    for start, end, c, score in raw:
        start, end = _trim(text, *_widen(text, start, end))
        if end <= start:
            continue
        if merged and start < merged[-1][1]:  # widening joined two pieces of a word: one span, first class
            ps, pe, pc, psc = merged[-1]
            merged[-1] = (ps, max(pe, end), pc, max(psc, score))
        else:
            merged.append((start, end, c, score))
    out = []
    parts = _class_parts(index)
    for start, end, c, score in merged:
        if score < min_score:
            continue
        label, subtype = parts[c]
        out.append(Span(start=start, end=end, label=label, subtype=subtype,
                        score=min(1.0, max(0.0, round(score, 6))), source=source))
    return out


def split_edges(text: str, low: Sequence[Span], high: Sequence[Span]) -> list[Span]:
    """The candidate spans ``low`` (decoded at the candidate threshold) each cut to its confident core: from the first
    to the last span of ``high`` (decoded at a model's ``edge_threshold`` from the same probabilities) inside it, with
    their best score. What lies before and after the core stays a candidate of its own with the whole span's label and
    score, so nothing is dropped here: the decision model keeps or drops each piece ("Su hija [Lucía Ortiz] le"). A
    span without a confident part is left whole. Pieces are trimmed as spans are (``_trim``); a piece without a
    letter or digit goes."""
    out: list[Span] = []
    for span in low:
        inside = [h for h in high if h.start < span.end and span.start < h.end]
        if not inside:
            out.append(span)
            continue
        lo, hi = max(span.start, min(h.start for h in inside)), min(span.end, max(h.end for h in inside))
        if (lo, hi) == (span.start, span.end):
            out.append(span)
            continue
        core_score = max(h.score for h in inside)
        for a, b, score in ((span.start, lo, span.score), (lo, hi, core_score), (hi, span.end, span.score)):
            a, b = _trim(text, a, b)
            if b > a and any(ch.isalnum() for ch in text[a:b]):
                out.append(span.model_copy(update={"start": a, "end": b, "score": score}))
    return out


def edge_candidates(text: str, low: Sequence[Span], high: Sequence[Span], drop_function_words: bool = True,
                    ) -> list[Span]:
    """:func:`split_edges`, then the pieces made only of function words dropped as the NER step drops such spans: what
    the NER step puts out for a model with an ``edge_threshold`` (``low`` and ``high`` as that step decodes them), and
    what its decision model is trained on (the stored out-of-fold spans at both thresholds)."""
    spans = split_edges(text, low, high)
    if drop_function_words:
        spans = [x for x in spans if not only_function_words(text[x.start:x.end])]
    return spans


_CLITICS = frozenset({"s", "t", "d", "m", "re", "ll", "ve"})
_WORDS = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=1 << 16)  # spans repeat their words; the answer depends on the text alone
def only_function_words(text: str) -> bool:
    """True when ``text`` holds no letter or digit, or only function words (:func:`vocab.is_function_word`,
    the same cut the name dictionaries use: "the", "what", "is", "from") and clitics ("'s", "'re").
    Numbers, one-letter words (initials), month names and frequent first names ("Will") are never
    function words."""
    from dictionaries import vocab

    words = _WORDS.findall(text.lower())
    if not words:
        return True
    return all(w in _CLITICS or (w not in MONTH_TOKENS and vocab.is_function_word(w)) for w in words)


# -- model loading and inference --------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedModel:
    """A tokenizer and model ready for inference on one device."""

    tokenizer: Any
    model: Any
    index: TagIndex
    device: str
    model_id: str
    quantized: bool
    cls_id: int
    sep_id: int
    pad_id: int
    #: TorchScript trace of the forward pass without attention mask (CPU), or None: same numbers as the
    #: model, without the Python overhead of its module tree (~10% of a window's time on CPU)
    traced: Any = None
    #: the model reads each piece's word case as its token type (:func:`case_types`)
    case_channel: bool = False
    #: the model's ``edge_threshold`` (its ``deidstream_ner.json``): candidate spans are cut to the part decoded at
    #: this threshold, the rest kept as candidates of their own (:func:`split_edges`); None: spans stay whole
    edge_threshold: float | None = None
    #: the tokenizer's word pieces with the fast path and its remembered words (:mod:`processors.ner.pieces`);
    #: None: :func:`predict` makes one per call
    pieces: PieceEncoder | None = None


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("NER device cuda requested but CUDA is not available")
    return device


def model_id(model_dir: Path) -> str:
    """``<folder name>-<first 12 hex of the weights' sha256>``: names the exact weights in output headers."""
    digest = hashlib.sha256()
    for f in sorted(model_dir.glob("*.safetensors")) or sorted(model_dir.glob("*.bin")):
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return f"{model_dir.name}-{digest.hexdigest()[:12]}"


def _quantize(model: Any) -> Any:
    """Dynamic int8 quantization of the encoder's linear layers with per-channel weight scales; the
    classifier stays in float. Per-tensor scales cost ~1 point of recall on dev notes, per-channel ~0.1."""
    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig

    spec = {name: per_channel_dynamic_qconfig for name, mod in model.named_modules()
            if isinstance(mod, torch.nn.Linear) and name != "classifier"}
    with warnings.catch_warnings():  # torch.ao dynamic quantization is deprecated but still the fastest here
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, spec)  # type: ignore[no-untyped-call]


def _trace(model: Any, case_channel: bool = False) -> Any:
    """A TorchScript trace of ``model(input_ids=x).logits`` (with the case channel: ``model(input_ids=x,
    token_type_ids=t).logits``) for one window without a mask, checked against the model on lengths other than the
    traced one; None (eager is used) when tracing fails or the trace disagrees."""
    import torch

    class Logits(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any) -> Any:
            return self.inner(input_ids=input_ids).logits

    class CasedLogits(Logits):
        def forward(self, input_ids: Any, token_type_ids: Any) -> Any:  # type: ignore[override]
            return self.inner(input_ids=input_ids, token_type_ids=token_type_ids).logits

    gen = torch.Generator().manual_seed(0)
    vocab = int(model.config.vocab_size)

    def example(n: int) -> tuple[Any, ...]:
        ids = torch.randint(0, vocab, (1, n), generator=gen)
        return (ids, torch.randint(0, N_CASES, (1, n), generator=gen)) if case_channel else (ids,)

    def eager(x: tuple[Any, ...]) -> Any:
        return model(input_ids=x[0], **({"token_type_ids": x[1]} if case_channel else {})).logits

    try:
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")  # TracerWarnings about shapes: the check below is the test
            traced = torch.jit.trace((CasedLogits if case_channel else Logits)(model).eval(), example(48),
                                     check_trace=False)  # type: ignore[no-untyped-call]
            for n in (5, 131):
                x = example(n)
                if not torch.allclose(traced(*x), eager(x), atol=1e-4, rtol=0):
                    logger.warning("NER trace disagrees with the model; using eager forward")
                    return None
    except Exception as exc:  # tracing is an optimisation: never fatal
        logger.warning("NER trace failed (%s); using eager forward", type(exc).__name__)
        return None
    return traced


#: the ``dtype`` option: torch dtype names; ``auto`` is float16 on CUDA, float32 on CPU
DType = Literal["auto", "float16", "bfloat16", "float32"]
DTYPES: tuple[str, ...] = get_args(DType)


@functools.cache
def load_model(model_dir: str, device: str = "auto", quantize: bool = False, dtype: str = "auto") -> LoadedModel:
    """Load tokenizer and model once per (folder, device, quantize, dtype). ``quantize`` applies dynamic int8
    quantization of the linear layers (CPU and float32 only; ~1.6x faster here). ``dtype``: see :data:`DTYPES`."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    path = Path(model_dir)
    if not (path / "config.json").is_file():
        raise ConfigError(f"NER model folder not found or incomplete (no config.json): {path}")
    dev = resolve_device(device)
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]  # load reports: weights only, noisy
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # no "Loading weights" bar on stderr
    # a model trained from the same base with the word-piece embeddings frozen may ship without them (and without
    # the tokenizer): both come from the shipped model, checked by the embeddings' hash
    shared = (path / SHARED_EMBEDDINGS_FILE).is_file()
    tok_dir = path if (path / "tokenizer.json").is_file() or not shared else DEFAULT_MODEL_DIR
    tokenizer = AutoTokenizer.from_pretrained(str(tok_dir), local_files_only=True)
    if not tokenizer.is_fast:
        raise ConfigError("NER needs a fast tokenizer (tokenizer.json) for character offsets")
    tokenizer.model_max_length = 1 << 30  # we window ourselves; silence the long-input warning
    # predict() calls the Rust backend directly: no truncation or padding a tokenizer.json may carry
    tokenizer.backend_tokenizer.no_truncation()
    tokenizer.backend_tokenizer.no_padding()
    if dtype not in DTYPES:
        raise ConfigError(f"NER dtype must be one of {', '.join(DTYPES)}")
    name = ("float16" if dev.startswith("cuda") else "float32") if dtype == "auto" else dtype
    model = AutoModelForTokenClassification.from_pretrained(str(path), local_files_only=True,
                                                            dtype=getattr(torch, name))
    if shared:
        _share_embeddings(model, path)
    model.eval()
    quantized = False
    if quantize and dev == "cpu" and name == "float32":
        model = _quantize(model)
        quantized = True
    model.to(dev)
    tags = [model.config.id2label[i] for i in range(len(model.config.id2label))]
    cased = has_case_channel(model.config)
    loaded = LoadedModel(
        tokenizer=tokenizer, model=model, index=TagIndex.from_tags(tags), device=dev, model_id=model_id(path),
        quantized=quantized, cls_id=int(tokenizer.cls_token_id), sep_id=int(tokenizer.sep_token_id),
        pad_id=int(tokenizer.pad_token_id or 0), traced=_trace(model, cased) if dev == "cpu" else None,
        case_channel=cased, pieces=PieceEncoder(tokenizer.backend_tokenizer),
        edge_threshold=edge_threshold(path),
    )
    logger.info("NER model %s loaded on %s (%d classes, quantized=%s, traced=%s)", loaded.model_id, dev,
                len(loaded.index.classes), quantized, loaded.traced is not None)
    return loaded


def embeddings_sha256(embed: Any) -> str:
    """The hash a model folder without word-piece embeddings records for them (over their float32 values, so an fp16
    and an fp32 copy of the same weights agree)."""
    return hashlib.sha256(embed.float().numpy().tobytes()).hexdigest()


def _share_embeddings(model: Any, path: Path) -> None:
    """The shipped model's word-piece embeddings into ``model`` (whose folder holds their sha256 instead of them)."""
    import torch
    from safetensors import safe_open

    with safe_open(str(DEFAULT_MODEL_DIR / "model.safetensors"), framework="pt") as fh:
        embed = fh.get_tensor(WORD_EMBEDDINGS)
    want = (path / SHARED_EMBEDDINGS_FILE).read_text(encoding="utf-8").strip()
    if embeddings_sha256(embed) != want:
        raise ConfigError(f"NER model {path.name} was trained on other word-piece embeddings than the shipped "
                          f"model's ({SHARED_EMBEDDINGS_FILE} differs)")
    target = model.get_input_embeddings().weight
    if tuple(target.shape) != tuple(embed.shape):
        raise ConfigError(f"NER model {path.name}: the shipped word-piece embeddings do not fit it")
    with torch.no_grad():
        target.copy_(embed.to(target.dtype))


@dataclass(frozen=True, slots=True)
class PieceProbs:
    """One note's word pieces: char offsets (n, 2) and tag probabilities (n, n_tags)."""

    offsets: IntArray
    probs: FloatArray


class WindowWork:
    """Model calls that any thread may take a part in: each thread that calls :meth:`take_part` runs the next chunk
    when it is done with one, on one intra-op thread, until none is left; :meth:`finish` waits for the chunks in
    hand and raises the first error. The time budget in force (:mod:`processors.budget`, the taking thread's
    context) is checked before every chunk, as the sequential loop checks it; after an error no thread takes
    another chunk.

    For the CPU's int8 path, one window a call: a window's forward uses two intra-op threads less well than two
    windows use one each (on two cores, 7.1 against 6.0 ms a 1,000-character note), and the traced forward runs
    without the interpreter lock, so the threads do not wait for each other. Each window's numbers are the same on
    one intra-op thread as on several (its int8 products are exact sums; its float work is split by rows), so the
    probabilities are the same to the bit (``tests/unit/processors/ner/test_window_threads.py``)."""

    def __init__(self, chunks: Sequence[Any], run: Callable[[Any], None]) -> None:
        import threading

        self._todo = iter(chunks)
        self._run = run
        self._cv = threading.Condition()
        self._busy = 0
        self._errors: list[BaseException] = []

    def take_part(self) -> None:
        """Run chunks in this thread until none is left or one failed; this thread's torch setting is restored."""
        import torch

        from processors import budget

        before = torch.get_num_threads()
        torch.set_num_threads(1)  # this thread's intra-op threads (and torch's default for threads started later)
        try:
            with torch.inference_mode():
                while True:
                    with self._cv:
                        if self._errors:
                            return
                        try:
                            budget.check("ner")
                        except BaseException as exc:  # the budget's NoteTimeout: no thread takes another chunk
                            self._errors.append(exc)
                            return
                        chunk = next(self._todo, None)
                        if chunk is None:
                            return
                        self._busy += 1
                    try:
                        self._run(chunk)
                    except BaseException as exc:
                        with self._cv:
                            self._errors.append(exc)
                    finally:
                        with self._cv:
                            self._busy -= 1
                            self._cv.notify_all()
        finally:
            torch.set_num_threads(before)  # this thread's setting, and torch's default for threads started later

    def finish(self) -> None:
        """Wait until no chunk is running; raise the first error."""
        with self._cv:
            while self._busy:
                self._cv.wait()
        if self._errors:
            raise self._errors[0]


def side_by_side(chunks: Sequence[Any], run: Callable[[Any], None], threads: int) -> None:
    """``run(chunk)`` for every chunk in ``threads`` threads (this one and ``threads - 1`` started here, each in its
    own copy of this thread's context: the budget's deadline is a context variable), one intra-op thread each
    (:class:`WindowWork`); the first error is raised here."""
    import contextvars
    import threading

    import torch

    caller = torch.get_num_threads()
    work = WindowWork(chunks, run)
    helpers = [threading.Thread(target=contextvars.copy_context().run, args=(work.take_part,), name=f"ner-window-{i}",
                                daemon=True) for i in range(threads - 1)]
    for h in helpers:
        h.start()
    try:
        work.take_part()
    finally:
        for h in helpers:
            h.join()
        # torch's default for threads started later is the last setting made anywhere: the caller's again
        torch.set_num_threads(caller)
    work.finish()


class Board:
    """Where a NER started ahead (:meth:`NER.prefetch`) posts its model calls, so that another thread can take a
    part in them once it is free (:meth:`help_until_closed`)."""

    def __init__(self) -> None:
        import threading

        self._cv = threading.Condition()
        self._posted: list[WindowWork] = []
        self._closed = False

    def post(self, work: WindowWork) -> None:
        with self._cv:
            self._posted.append(work)
            self._cv.notify_all()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    def help_until_closed(self) -> None:
        """Take a part in every call posted, until the board is closed (the NER started ahead is done)."""
        while True:
            with self._cv:
                while not self._posted and not self._closed:
                    self._cv.wait()
                if not self._posted:
                    return
                work = self._posted.pop(0)
            work.take_part()


def predict(
    loaded: LoadedModel, texts: Sequence[str], *, batch_size: int = 32, max_length: int = 512, overlap: int = 64,
    board: Board | None = None,
) -> list[PieceProbs]:
    """Tag probabilities for every word piece of every text (windows across all texts batched together).
    Checks the time budget in force (:mod:`processors.budget`) before every model call. ``board``: the int8 path's
    windows are posted there for another thread to help with (:meth:`NER.prefetch`; other paths ignore it)."""
    import torch

    from processors import budget

    if not texts:
        return []
    # the tokenizer's pieces (its Rust backend, truncation and padding off since loading), most text by the fast
    # path that gives the same ids and offsets without the per-character alignments (processors.ner.pieces)
    encoder = loaded.pieces if loaded.pieces is not None else PieceEncoder(loaded.tokenizer.backend_tokenizer)
    encodings = encoder.encode(texts)
    n_tags = len(loaded.model.config.id2label)
    size = max_length - 2
    results: list[PieceProbs] = []
    jobs: list[tuple[int, int, int, int, int]] = []  # (note, win_start, win_end, core_lo, core_hi)
    all_ids: list[IntArray] = [e.ids for e in encodings]
    all_types: list[IntArray] = []
    for k, ids in enumerate(all_ids):
        offsets = encodings[k].offsets
        results.append(PieceProbs(offsets, np.zeros((len(ids), n_tags), dtype=np.float32)))
        if loaded.case_channel:
            all_types.append(case_types(texts[k], offsets, encodings[k].word_ids))
        bounds = window_bounds(len(ids), size, overlap)
        for (a, b), (lo, hi) in zip(bounds, window_cores(bounds), strict=True):
            jobs.append((k, a, b, lo, hi))
    jobs.sort(key=lambda j: j[2] - j[1], reverse=True)  # similar lengths together: little padding
    if loaded.quantized:
        # dynamic int8 scales activations per tensor: in a batch, one note's numbers would shift another's
        # predictions. One window per call keeps every note's result independent of its batch partners.
        batch_size = 1
    cuda = str(loaded.device).startswith("cuda")
    # on CUDA the copies are asynchronous (pinned host memory), and a chunk's probabilities are scattered into
    # the notes only after the next chunk's forward is queued: the host work overlaps the GPU's
    pending: tuple[list[tuple[int, int, int, int, int]], Any, Any] | None = None

    def scatter(chunk: list[tuple[int, int, int, int, int]], probs: Any) -> None:
        for r, (k, a, _b, lo, hi) in enumerate(chunk):
            # window row position 1 + (t - a) holds token t
            results[k].probs[lo:hi] = probs[r, 1 + lo - a: 1 + hi - a]

    def arrays(chunk: list[tuple[int, int, int, int, int]]) -> tuple[Any, Any, Any, bool]:
        """The chunk's piece ids, attention mask and token types (None without the case channel), padded to its
        longest window, and whether it needs no padding."""
        width = max(b - a for _, a, b, _, _ in chunk) + 2
        ids_arr = np.full((len(chunk), width), loaded.pad_id, dtype=np.int64)
        mask = np.zeros((len(chunk), width), dtype=np.int64)
        # the case channel's token types ([CLS], [SEP] and padding: no case); None without the channel
        types_arr = np.zeros((len(chunk), width), dtype=np.int64) if loaded.case_channel else None
        for r, (k, a, b, _, _) in enumerate(chunk):
            ids_arr[r, 0] = loaded.cls_id
            ids_arr[r, 1: b - a + 1] = all_ids[k][a:b]
            ids_arr[r, b - a + 1] = loaded.sep_id
            mask[r, : b - a + 2] = 1
            if types_arr is not None:
                types_arr[r, 1: b - a + 1] = all_types[k][a:b]
        # without padding, no mask: attention then takes the fused kernel (~20% of CPU time saved)
        return ids_arr, mask, types_arr, bool(mask.all())

    def on_cpu(chunk: list[tuple[int, int, int, int, int]]) -> None:
        ids_arr, mask, types_arr, unpadded = arrays(chunk)
        input_ids = torch.from_numpy(ids_arr).to(loaded.device)
        cased = {} if types_arr is None else {"token_type_ids": torch.from_numpy(types_arr).to(loaded.device)}
        if unpadded and loaded.traced is not None:
            logits = loaded.traced(input_ids, *cased.values())
        else:
            attn = None if unpadded else torch.from_numpy(mask).to(loaded.device)
            logits = loaded.model(input_ids=input_ids, attention_mask=attn, **cased).logits
        scatter(chunk, torch.softmax(logits.float(), dim=-1).cpu().numpy())

    threads = min(torch.get_num_threads(), len(jobs))
    if not cuda and batch_size == 1 and board is not None:
        # started ahead (NER.prefetch): this thread runs the windows on one intra-op thread, and the thread that
        # started it helps through the board once it is free
        work = WindowWork([[job] for job in jobs], on_cpu)
        board.post(work)
        work.take_part()
        work.finish()
        return results
    if not cuda and batch_size == 1 and threads > 1:
        # one window a call (int8): windows side by side on one intra-op thread each (same numbers, faster)
        side_by_side([[job] for job in jobs], on_cpu, threads)
        return results
    with torch.inference_mode():
        for c in range(0, len(jobs), batch_size):
            budget.check("ner")
            chunk = jobs[c: c + batch_size]
            if not cuda:
                on_cpu(chunk)
                continue
            ids_arr, mask, types_arr, unpadded = arrays(chunk)
            input_ids = torch.from_numpy(ids_arr).pin_memory().to(loaded.device, non_blocking=True)
            attn = None if unpadded else torch.from_numpy(mask).pin_memory().to(loaded.device, non_blocking=True)
            # token types only for a model with the case channel: any other gets the call it always got
            cased = {} if types_arr is None else {"token_type_ids": torch.from_numpy(types_arr).pin_memory().to(
                loaded.device, non_blocking=True)}
            logits = loaded.model(input_ids=input_ids, attention_mask=attn, **cased).logits
            on_device = torch.softmax(logits.float(), dim=-1)
            host = torch.empty(on_device.shape, dtype=on_device.dtype, pin_memory=True)
            host.copy_(on_device, non_blocking=True)
            done = torch.cuda.Event()  # type: ignore[no-untyped-call]
            done.record()
            if pending is not None:
                pending[2].synchronize()
                scatter(pending[0], pending[1].numpy())
            pending = (chunk, host, done)
        if pending is not None:
            pending[2].synchronize()
            scatter(pending[0], pending[1].numpy())
    return results


def default_model_dir() -> Path:
    return DEFAULT_MODEL_DIR


def read_meta(model_dir: Path) -> dict[str, Any]:
    """The training metadata beside the weights, or {} for a model not trained by ``train-ner``."""
    path = model_dir / META_FILE
    if not path.is_file():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def edge_threshold(model_dir: Path) -> float | None:
    """The model folder's ``edge_threshold`` (its ``deidstream_ner.json``; :func:`split_edges`), or None; a value that
    is no probability is a ConfigError."""
    edge = read_meta(model_dir).get("edge_threshold")
    if edge is None:
        return None
    if isinstance(edge, bool) or not isinstance(edge, (int, float)) or not 0 < edge < 1:
        raise ConfigError(f"NER model {model_dir.name}: edge_threshold must be a number between 0 and 1")
    return float(edge)


def with_profile(config: Any, profile: DetectorProfile | None) -> Any:
    """``config`` (the step's options) on the detector profile's numeric path and thresholds. Options set
    explicitly win for the thresholds; an explicit ``device``, ``dtype`` or ``quantize`` that contradicts the
    profile is a configuration error (the profile named in the output would not be the path that ran)."""
    if profile is None:
        return config
    explicit = config.model_fields_set
    path = {"device": profile.device, "dtype": profile.dtype, "quantize": profile.quantize}
    for name, value in path.items():
        if name not in explicit:
            continue
        mine = getattr(config, name)
        same = (mine == value or (name == "device" and (mine == "auto" or str(mine).startswith(str(value))))
                or (name == "dtype" and mine == "auto"))
        if not same:
            raise ConfigError(f"ner option {name}={mine!r} contradicts the detector profile {profile.name} "
                              f"({name}={value!r}); set the profile, or leave the option out")
    update: dict[str, Any] = {k: v for k, v in path.items() if k not in explicit or k == "device"}
    if "device" in explicit and str(config.device).startswith("cuda"):
        update["device"] = config.device  # keep a named GPU ("cuda:1")
    if profile.ner_token_threshold is not None and "token_threshold" not in explicit:
        update["token_threshold"] = profile.ner_token_threshold
    if profile.ner_min_score is not None and "min_score" not in explicit:
        update["min_score"] = profile.ner_min_score
    return config.model_copy(update=update)


@register("ner")
class NER:
    """Add ``source="ner"`` candidate spans from the fine-tuned token classifier."""

    name = "ner"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        model_dir: str | None = None
        device: str = "auto"
        batch_size: int = Field(default=32, ge=1)
        max_length: int = Field(default=512, ge=16, le=512)
        overlap: int = Field(default=64, ge=0)
        token_threshold: float = Field(default=NER_CANDIDATE_THRESHOLD, gt=0, le=1)
        min_score: float = Field(default=NER_CANDIDATE_THRESHOLD, ge=0, le=1)
        quantize: bool = True
        #: weights and activations: auto (float16 on CUDA, float32 on CPU), float16, bfloat16, float32
        dtype: DType = "auto"
        #: drop spans made only of function words ("What", "is", "to", "'s"): the model's out-of-domain noise
        drop_function_words: bool = True
        #: the model folder of each routed language (the pipeline policy's ``language_routes``); a routed language
        #: not named here takes the shipped model of that language (:data:`ROUTE_MODEL_DIRS`)
        route_model_dirs: dict[str, str] = Field(default_factory=dict)

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        if config.overlap >= config.max_length - 2:
            raise ConfigError("ner overlap must be smaller than max_length - 2")
        config = with_profile(config, ctx.profile)
        self.config = config
        self.profile = ctx.profile.name if ctx.profile is not None else None
        model_dir = Path(config.model_dir).expanduser() if config.model_dir else default_model_dir()
        self.model = load_model(str(model_dir.resolve()), config.device, config.quantize, config.dtype)
        #: routed language -> its model (the default route's is ``self.model``)
        self.routes: dict[str, LoadedModel] = {}
        for lang in ctx.policy.language_routes:
            folder = route_folder("ner", lang, config.route_model_dirs, ROUTE_MODEL_DIRS)
            self.routes[lang] = load_model(str(folder.resolve()), config.device, config.quantize, config.dtype)
        if self.routes:
            load_identifier()
        self.model_id = self.model.model_id + "".join(f"+{k}:{m.model_id}" for k, m in self.routes.items())

    def _decode(self, text: str, p: Any, model: LoadedModel, threshold: float, min_score: float) -> list[Span]:
        spans = decode_spans(text, p.offsets, p.probs, model.index, token_threshold=threshold, min_score=min_score)
        if self.config.drop_function_words:
            spans = [x for x in spans if not only_function_words(text[x.start:x.end])]
        return spans

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        return self._spans(notes, self._probabilities(notes))

    def _probabilities(self, notes: Sequence[Note], board: Board | None = None,
                       ) -> list[tuple[LoadedModel, list[int], list[PieceProbs]]]:
        """Each route's model, its notes' indexes and their pieces' probabilities (the model calls)."""
        cfg = self.config
        out = []
        for lang, idx in by_route([n.text for n in notes], self.routes).items():
            model = self.routes.get(lang, self.model)
            out.append((model, idx, predict(model, [notes[i].text for i in idx], batch_size=cfg.batch_size,
                                            max_length=cfg.max_length, overlap=cfg.overlap, board=board)))
        return out

    def _spans(self, notes: Sequence[Note], probabilities: list[tuple[LoadedModel, list[int], list[PieceProbs]]],
               ) -> list[Note]:
        """The notes with the spans decoded from their probabilities."""
        cfg = self.config
        out: list[Note] = list(notes)
        for model, idx, pieces in probabilities:
            edge = model.edge_threshold
            for i, p in zip(idx, pieces, strict=True):
                note = notes[i]
                spans = self._decode(note.text, p, model, cfg.token_threshold, cfg.min_score)
                if edge is not None and edge > cfg.token_threshold:
                    spans = edge_candidates(note.text, spans, self._decode(
                        note.text, p, model, edge, max(edge, cfg.min_score)), cfg.drop_function_words)
                out[i] = note.add_spans(spans)
        return out

    def prefetch(self, notes: Sequence[Note]) -> Callable[[], list[Note]] | None:
        """Start this step on ``notes`` ahead, in a thread of its own, while the caller's thread does other work (the
        later steps of the batch before: :meth:`processors.pipeline.Pipeline.run_stream`). The callable returned
        finishes it in the caller's thread, which first takes a part in the model calls still left, and returns what
        ``process_batch(notes)`` returns, or raises what it raises. Each thread runs one window at a time on one
        intra-op thread (:class:`WindowWork`), so the numbers are ``process_batch``'s. None where this step does not
        run its windows side by side: on a GPU, unquantized, or with one torch thread."""
        import contextvars
        import threading

        import torch

        caller = torch.get_num_threads()
        models = [self.model, *self.routes.values()]
        if not notes or caller < 2 or any(not m.quantized or str(m.device).startswith("cuda") for m in models):
            return None
        board = Board()
        got: list[Any] = []

        def ahead() -> None:
            try:
                got.append(self._probabilities(notes, board))
            except BaseException as exc:  # raised in the caller's thread by finish()
                got.append(exc)
            finally:
                board.close()

        # in a copy of the caller's context: the time budget's deadline is a context variable
        thread = threading.Thread(target=contextvars.copy_context().run, args=(ahead,), name="ner-ahead", daemon=True)
        thread.start()

        def finish() -> list[Note]:
            try:
                board.help_until_closed()
            finally:
                thread.join()
                # torch's default for threads started later is the last setting made anywhere: the caller's again
                torch.set_num_threads(caller)
            if isinstance(got[0], BaseException):
                raise got[0]
            return self._spans(notes, got[0])

        return finish
