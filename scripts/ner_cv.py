"""Retrain the NER model on real notes, cross-validated by patient (issue 10): prepare here, train on a GPU, score here.

    # 1. here: training files into .gpu/ (git-ignored; the PhysioNet notes never enter the repository), and the
    #    base the fold models start from: the stage-2 model (synthetic only) out of git, into .gpu/base
    .venv/bin/python scripts/ner_cv.py prepare [--synthetic 6000 --shift 3000 --negatives 0.35]
    # 2. on the GPU machine (torch + transformers there; pydantic etc. carried as wheels): one model per fold
    #    (trained on the other folds' patients + the synthetic mix) and one on all dev notes; each packed
    #    without the frozen word-piece embeddings (unchanged from the base) so it fits the 16 MiB return limit
    python3 scripts/ner_cv.py train --out $OUT [--steps 1500 --lr 1e-4 --repeat 3 --folds 0,1,2,3,4,all]
    # 3. here: unpack (embeddings back from the base, checked by hash), run the detection pipeline on every
    #    held-out fold with its fold's model, pool the counts, compare with the shipped model on the same notes
    .venv/bin/python scripts/ner_cv.py score --packs DIR [-o scripts/results/ner_cv_physionet.json]
    # surrogate copies (issue 25): prepare --surrogates 2, then train --repeat 3 --surrogate-repeats 2 trains on
    # the design notes once as they are and twice with every identifier replaced by a new surrogate
    # Spanish text (the mix has none): train --meddocan-repeats 1 adds MEDDOCAN train (prepare writes it in our
    # labels, each note its own group: a fold model sees four fifths of it, the same split scores the fifth)
    # a soup (Wortsman et al. 2022): the weights of several trainings of one fold averaged (seeds of the same recipe
    # from the same base), one model's cost at inference; packs named {variant}fold{k}.tar in, {out-variant}... out
    .venv/bin/python scripts/ner_cv.py soup --packs .gpu/packs --variants d,e --out-variant s [--folds 0,1,2,3,4]
    # a larger base (stage 1 of the shipped model: 4 layers x 1536, synthetic notes only, from git) for a variant:
    # base-larger writes .gpu/base_larger, train --base .gpu/base_larger starts from it, carry --larger-base takes it
    # to the GPU machine (scripts/gpu_ner_cv.sh says how: it travels in a call of its own)
    .venv/bin/python scripts/ner_cv.py base-larger
    # a pack as a full model folder (e.g. the `all` model behind decider_trials.py --ner-model)
    .venv/bin/python scripts/ner_cv.py unpack --pack .gpu/packs/sfoldall.tar --out .gpu/models/sfoldall
    # a retrained model against the shipped one: weights that differ, the NER step's spans on presidio_synth_v2
    .venv/bin/python scripts/ner_cv.py compare --model-dir /tmp/ner_cv/dfoldall [--against DIR]

The fold models must not start from the shipped model: it is stage 3, trained on every dev note, so a fold model
built on it would have seen its held-out patients. ``train`` starts from ``.gpu/base`` (the stage-2 weights of git
commit ``STAGE2_COMMIT``, trained on synthetic notes only) and refuses a base whose metadata lists real notes.

Folds: ``processors.evaluation.folds.splits`` (5 folds by ``patient_group``, seed 0), the same split on the
training side (``TrainConfig.fold``) and the scoring side; no patient's notes are both trained on and scored.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / ".gpu"
SHIPPED = REPO / "processors/ner/models/deid-minilm"
DEV = REPO.parent / "shared/data/eval/physionet_deid_dev.jsonl"
MEDDOCAN_TRAIN = REPO.parent / "shared/data/eval/meddocan_train.jsonl"
#: MEDDOCAN's two name labels and the subtype each is (its label map gives plain NAME)
MEDDOCAN_NAME_SUBTYPES = {"NOMBRE_SUJETO_ASISTENCIA": "PATIENT", "NOMBRE_PERSONAL_SANITARIO": "PROVIDER"}
EMBED = "bert.embeddings.word_embeddings.weight"
K = 5
#: the last commit whose shipped model is stage 2 (synthetic notes only): the base of every fold model
STAGE2_COMMIT = "2a04be3"
BASE = WORK / "base"
#: a larger base, also trained on synthetic notes only: stage 1 (4 encoder layers at the full feed-forward width 1536;
#: the same word-piece embeddings), in git at this commit and folder; ``base-larger`` writes it to ``LARGER_BASE``
LARGER_BASE_COMMIT = "586cad7"
LARGER_BASE_FOLDER = "processors/models/deid-minilm"
LARGER_BASE = WORK / "base_larger"
_MODEL_FILES = ("config.json", "deidstream_ner.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


def _records(examples: Any) -> list[dict[str, Any]]:
    from processors.ner.step import parse_class

    out = []
    for ex in examples:
        spans = []
        for s, e, cls in ex.spans:
            label, subtype = parse_class(cls)
            spans.append({"start": s, "end": e, "label": str(label), "subtype": None if subtype is None else str(subtype),
                          "text": ex.text[s:e]})
        out.append({"id": ex.id, "text": ex.text, "spans": spans})
    return out


def write_base(dest: Path = BASE, commit: str = STAGE2_COMMIT, folder: str | None = None) -> Path:
    """The stage-2 model folder out of git (``git show``), the base of the fold models (``commit`` and ``folder``:
    another model of the repository's history, e.g. the larger stage 1)."""
    import subprocess

    dest.mkdir(parents=True, exist_ok=True)
    rel = folder or SHIPPED.relative_to(REPO)
    for name in _MODEL_FILES:
        blob = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:{rel}/{name}"], check=True,
                              capture_output=True).stdout
        (dest / name).write_bytes(blob)
    return dest


def check_base(base: Path) -> None:
    """Refuse a base model trained on real notes (the fold models would see their held-out patients)."""
    meta = json.loads((base / "deidstream_ner.json").read_text(encoding="utf-8"))
    data = [str(d.get("file", d)) if isinstance(d, dict) else str(d) for d in meta.get("data") or []]
    if any("physionet" in d.lower() for d in data):
        raise SystemExit(f"{base}: this model was trained on the PhysioNet notes; the fold models "
                         f"need a base that never saw them (scripts/ner_cv.py prepare writes the stage-2 model to {BASE})")


def prepare(args: argparse.Namespace) -> int:
    from processors.evaluation.gold import load_gold, load_label_map
    from processors.evaluation.lockbox import design_only
    from processors.synthetic.generator import generate
    from processors.training.ner import add_negatives, examples_from_records

    WORK.mkdir(exist_ok=True)
    records = generate(args.synthetic, 1001)
    if args.shift:
        records += generate(args.shift, 1003, kinds=["icu_shift"])
    examples = add_negatives(examples_from_records(records, ["NAME"]), args.negatives, 13)
    with (WORK / "mix.jsonl").open("w", encoding="utf-8") as fh:
        for r in _records(examples):
            fh.write(json.dumps(r) + "\n")
    # the dev notes in our labels (the one "Other" identifier becomes ID: the model has no OTHER class);
    # ignored labels (bare years) are left out, as unlabelled text; groups kept for the folds
    # the design part only: the lockbox patients (processors.evaluation.lockbox) train no model
    gold = design_only(load_gold(args.dev, load_label_map("physionet")))
    with (WORK / "physionet.jsonl").open("w", encoding="utf-8") as fh:
        for g in gold:
            spans = [{"start": s.start, "end": s.end, "label": "ID" if str(s.label) == "OTHER" else str(s.label),
                      "subtype": None if s.subtype is None else str(s.subtype), "text": g.text[s.start:s.end]}
                     for s in g.spans]
            fh.write(json.dumps({"id": g.id, "text": g.text, "spans": spans, "patient_group": g.group}) + "\n")
    write_surrogates(args.surrogates)
    n_meddocan = write_meddocan()
    write_base()
    print(f"wrote {WORK}/mix.jsonl ({len(examples)} notes), physionet.jsonl ({len(gold)} notes), "
          f"meddocan_train.jsonl ({n_meddocan} notes) and the stage-2 base "
          f"model ({BASE}, from git {STAGE2_COMMIT})")
    return 0


def surrogate_file(r: int) -> Path:
    return WORK / f"physionet_sur{r}.jsonl"


def write_surrogates(n: int) -> None:
    """``n`` copies of the design notes with every identifier replaced by a surrogate
    (:func:`processors.training.ner.surrogate_copy`; copy ``r``'s secret ``ner-cv-surrogates-r``, each patient's
    surrogates consistent across its notes), ids ``ID#surR``, the same patient groups (so the same folds)."""
    from processors.training.ner import surrogate_copy

    records = [json.loads(line) for line in (WORK / "physionet.jsonl").read_text(encoding="utf-8").splitlines()]
    for r in range(1, n + 1):
        secret = f"ner-cv-surrogates-{r}".encode()
        with surrogate_file(r).open("w", encoding="utf-8") as fh:
            for rec in records:
                copy = surrogate_copy(rec, secret, str(rec["patient_group"]))
                fh.write(json.dumps({**copy, "id": f"{rec['id']}#sur{r}"}) + "\n")


def meddocan_file() -> Path:
    return WORK / "meddocan_train.jsonl"


def write_meddocan(src: Path = MEDDOCAN_TRAIN, dest: Path | None = None) -> int:
    """MEDDOCAN train (Spanish clinical cases with surrogate identifiers; the NER's mix has no Spanish text) in our
    labels for ``train --meddocan-repeats``: names with the subtype their corpus label says, ``OTHER`` as ID (the
    model has no OTHER class), the labels our policy does not count (ages, sex, kin words, occupations) left out as
    unlabelled text. Each note is its own patient group, so a fold model trains on four fifths of them
    (``processors.evaluation.folds.splits``, as for the design notes) and the fifth it did not see can be scored out
    of fold. Returns the number of notes."""
    from processors.evaluation.gold import load_label_map

    dest = dest or meddocan_file()
    mapping = load_label_map("meddocan")
    n = 0
    with dest.open("w", encoding="utf-8") as fh:
        for line in src.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            spans = []
            for sp in rec["spans"]:
                label = mapping.get(sp["label"])
                if label is None:
                    continue
                spans.append({"start": sp["start"], "end": sp["end"], "label": "ID" if label == "OTHER" else label,
                              "subtype": MEDDOCAN_NAME_SUBTYPES.get(sp["label"]) if label == "NAME" else None,
                              "text": rec["text"][sp["start"]:sp["end"]]})
            fh.write(json.dumps({"id": rec["id"], "text": rec["text"], "spans": spans, "patient_group": rec["id"]}) + "\n")
            n += 1
    return n


def _tar_folder(folder: Path, dest: Path) -> None:
    """A pack: the folder's files, sorted, at the tar's top level."""
    with tarfile.open(dest, "w") as tar:
        for f in sorted(folder.iterdir()):
            tar.add(f, arcname=f.name)


def _pack(model_dir: Path, dest: Path, run: dict[str, Any]) -> dict[str, Any]:
    from safetensors.torch import load_file, save_file

    from processors.ner.step import SHARED_EMBEDDINGS_FILE, embeddings_sha256

    tensors = load_file(str(model_dir / "model.safetensors"))
    digest = embeddings_sha256(tensors.pop(EMBED))
    tmp = dest.with_suffix(".d")
    tmp.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(tmp / "model.safetensors"))
    for name in ("config.json", "deidstream_ner.json"):
        shutil.copy(model_dir / name, tmp / name)
    (tmp / SHARED_EMBEDDINGS_FILE).write_text(digest)
    (tmp / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    _tar_folder(tmp, dest)
    shutil.rmtree(tmp)
    return {"embedding_sha256": digest}


def train_folds(args: argparse.Namespace) -> int:
    from processors.training.ner import TrainConfig, train

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = Path(args.base)
    check_base(base)
    mix = WORK / "mix.jsonl"
    if args.shift_max is not None or args.synthetic_max is not None:
        # a smaller mix: the first N synthetic (seed 1001) and/or ICU shift (seed 1003) notes
        kept, seen = [], {"synth-1001-": 0, "synth-1003-": 0}
        limit = {"synth-1001-": args.synthetic_max, "synth-1003-": args.shift_max}
        for line in mix.read_text(encoding="utf-8").splitlines():
            prefix = json.loads(line)["id"][:11]
            seen[prefix] += 1
            if limit[prefix] is None or seen[prefix] <= limit[prefix]:
                kept.append(line)
        mix = Path("/tmp") / f"mix_{args.variant}.jsonl"
        mix.write_text("\n".join(kept) + "\n", encoding="utf-8")
    if not 0 <= args.surrogate_repeats <= args.repeat:
        raise SystemExit("--surrogate-repeats must be between 0 and --repeat")
    copies = [surrogate_file(r) for r in range(1, args.surrogate_repeats + 1)]
    missing = [str(f) for f in copies if not f.is_file()]
    if missing:
        raise SystemExit(f"no {', '.join(missing)}: run prepare --surrogates {args.surrogate_repeats} first")
    # of the design notes' repeats, the last --surrogate-repeats are their surrogate copies
    data = [mix] + [WORK / "physionet.jsonl"] * (args.repeat - args.surrogate_repeats) + copies
    if args.meddocan_repeats:
        if not meddocan_file().is_file():
            if not MEDDOCAN_TRAIN.is_file():  # the GPU machine: no ../shared there
                raise SystemExit(f"no {meddocan_file()}: run prepare where ../shared is (it writes it), then carry")
            write_meddocan()
        data += [meddocan_file()] * args.meddocan_repeats
    for fold in args.folds.split(","):
        t0 = time.perf_counter()
        model_dir = Path("/tmp/ner_cv") / f"{args.variant}fold{fold}"
        cfg = TrainConfig(
            data=data, out=model_dir, base_model=str(base), max_steps=args.steps, lr=args.lr, batch_size=args.batch_size,
            max_length=512, seed=args.seed, subtypes=["NAME"], device="auto", threads=args.threads, fold=None if fold == "all" else f"{fold}/{K}",
            case_channel=args.case_channel,
            command=(f"scripts/ner_cv.py train --steps {args.steps} --lr {args.lr} --repeat {args.repeat} --folds {fold}"
                     + (f" --seed {args.seed}" if args.seed != 13 else "")
                     + (f" --surrogate-repeats {args.surrogate_repeats}" if args.surrogate_repeats else "")
                     + (f" --shift-max {args.shift_max}" if args.shift_max is not None else "")
                     + (f" --synthetic-max {args.synthetic_max}" if args.synthetic_max is not None else "")
                     + (" --case-channel" if args.case_channel else "")
                     + (f" --meddocan-repeats {args.meddocan_repeats}" if args.meddocan_repeats else "")),
        )
        result = train(cfg)
        tail = result.losses[-max(1, len(result.losses) // 10):]
        run = {"fold": fold, "notes": result.notes, "windows": result.windows, "steps": result.steps,
               "seconds": round(result.seconds, 1), "device": result.device,
               "loss_last_10pct": round(sum(tail) / len(tail), 4), "wall_s": round(time.perf_counter() - t0, 1),
               "args": vars(args)}
        run.update(_pack(model_dir, out / f"{args.variant}fold{fold}.tar", run))
        print(json.dumps(run), flush=True)
    return 0


CARRY = REPO / ".gpucarry"


def _strip_base(src: Path, dest: Path) -> None:
    """``src`` (a base model folder) as ``dest`` without its word-piece embeddings, which must equal the shipped
    model's (frozen in every stage) so that ``_restore_base`` can put them back."""
    from safetensors.torch import load_file, save_file

    dest.mkdir(parents=True, exist_ok=True)
    tensors = load_file(str(src / "model.safetensors"))
    embed = tensors.pop(EMBED)
    shipped = load_file(str(SHIPPED / "model.safetensors"))[EMBED]
    if embed.shape != shipped.shape or not bool((embed.float() == shipped.float()).all()):
        raise SystemExit(f"{src.name}: the word-piece embeddings differ from the shipped model's: carry them whole")
    save_file(tensors, str(dest / "model.safetensors"))
    for name in _MODEL_FILES:
        if name != "model.safetensors":
            shutil.copy(src / name, dest / name)


def _restore_base(src: Path, dest: Path) -> None:
    """The base model folder ``src`` (written by ``_strip_base``) whole as ``dest``, the shipped model's word-piece
    embeddings put back; refused if it saw real notes (``check_base``)."""
    import torch
    from safetensors.torch import load_file, save_file

    dest.mkdir(parents=True, exist_ok=True)
    tensors = load_file(str(src / "model.safetensors"))
    tensors[EMBED] = load_file(str(SHIPPED / "model.safetensors"))[EMBED].to(torch.float16)
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    for name in _MODEL_FILES:
        if name != "model.safetensors":
            shutil.copy(src / name, dest / name)
    check_base(dest)


def carry(args: argparse.Namespace) -> int:
    """What ``train`` needs on the GPU machine, small enough to travel with the working tree (64 MiB a call):
    the mix gzipped, the design notes, and the base model without its word-piece embeddings, which equal the
    shipped model's (frozen in every stage; checked) and are put back by ``uncarry`` there. With
    ``--larger-base``, the larger base (``base-larger``) too, the same way (~14 MiB; train ``--base
    .gpu/base_larger`` there)."""
    import gzip

    CARRY.mkdir(exist_ok=True)
    with (WORK / "mix.jsonl").open("rb") as src, gzip.open(CARRY / "mix.jsonl.gz", "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    for f in [WORK / "physionet.jsonl", *sorted(WORK.glob("physionet_sur*.jsonl")), *WORK.glob("meddocan_train.jsonl")]:
        shutil.copy(f, CARRY / f.name)
    _strip_base(BASE, CARRY / "base")
    shutil.rmtree(CARRY / LARGER_BASE.name, ignore_errors=True)
    if getattr(args, "larger_base", False):
        if not (LARGER_BASE / "model.safetensors").is_file():
            raise SystemExit(f"no {LARGER_BASE}: run scripts/ner_cv.py base-larger first")
        _strip_base(LARGER_BASE, CARRY / LARGER_BASE.name)
    size = sum(f.stat().st_size for f in CARRY.rglob("*") if f.is_file())
    print(f"wrote {CARRY} ({size / 2**20:.1f} MiB); carry it with the .whl folder (pydantic, rapidfuzz for Python 3.12)")
    return 0


def uncarry(args: argparse.Namespace) -> int:
    """On the GPU machine: .gpu/ (mix, design notes, each base carried with the shipped embeddings put back: the
    stage-2 base, the larger one, or both) from .gpucarry/."""
    import gzip

    WORK.mkdir(exist_ok=True)
    with gzip.open(CARRY / "mix.jsonl.gz", "rb") as src, (WORK / "mix.jsonl").open("wb") as dst:
        shutil.copyfileobj(src, dst)
    for f in [CARRY / "physionet.jsonl", *sorted(CARRY.glob("physionet_sur*.jsonl")), *CARRY.glob("meddocan_train.jsonl")]:
        shutil.copy(f, WORK / f.name)
    bases = [(CARRY / src.name, src) for src in (BASE, LARGER_BASE) if (CARRY / src.name / "model.safetensors").is_file()]
    if not bases:
        raise SystemExit(f"no base model in {CARRY} (base/ or {LARGER_BASE.name}/): run carry here")
    for src, dest in bases:
        _restore_base(src, dest)
    print(f"wrote {WORK} from {CARRY} (bases: {', '.join(dest.name for _, dest in bases)})")
    return 0


def base_larger(args: argparse.Namespace) -> int:
    """The larger base out of git into ``LARGER_BASE``: stage 1, synthetic notes only
    (scripts/results/QUALITY_HISTORY.md, "Tried, one fold, not taken further: a larger encoder as the NER's base")."""
    dest = write_base(LARGER_BASE, LARGER_BASE_COMMIT, LARGER_BASE_FOLDER)
    check_base(dest)
    meta = json.loads((dest / "deidstream_ner.json").read_text(encoding="utf-8"))
    print(f"wrote {dest} (git {LARGER_BASE_COMMIT}:{LARGER_BASE_FOLDER}; {meta.get('num_layers')} layers, "
          f"trained on {meta.get('notes')} synthetic notes)")
    return 0


def unpack(pack: Path, dest: Path) -> Path:
    """A full model folder from a pack: its weights + the shipped model's word-piece embeddings and tokenizer."""
    import torch
    from safetensors.torch import load_file, save_file

    from processors.ner.step import SHARED_EMBEDDINGS_FILE, embeddings_sha256

    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(pack) as tar:
        tar.extractall(dest, filter="data")
    tensors = load_file(str(dest / "model.safetensors"))
    embed = load_file(str(SHIPPED / "model.safetensors"))[EMBED]
    want = (dest / SHARED_EMBEDDINGS_FILE).read_text().strip()
    got = embeddings_sha256(embed)
    if got != want:
        raise SystemExit(f"{pack.name}: the trained embeddings differ from the shipped model's ({got[:12]} != {want[:12]})")
    tensors[EMBED] = embed.to(torch.float16)
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(SHIPPED / name, dest / name)
    return dest


def _detect(gold: list[Any], model_dir: Path | None, steps: str | None, threshold: float | None = None) -> dict[str, Any]:
    """Detection spans per note id; ``model_dir`` None is the shipped model; ``threshold`` sets the NER decode
    threshold and the ensemble's NER threshold together (None: the defaults)."""
    from processors.spans import SOURCE_THRESHOLDS
    from streams.cli.eval import run_pipeline

    options: dict[str, Any] = {}
    if model_dir is not None:
        options["ner"] = {"model_dir": str(model_dir)}
    if threshold is not None:
        options.setdefault("ner", {}).update(token_threshold=threshold, min_score=threshold)
        options["ensemble"] = {"thresholds": dict(SOURCE_THRESHOLDS, ner=threshold)}
    if options:
        os.environ["DEID_PIPELINE__OPTIONS"] = json.dumps(options)
    else:
        os.environ.pop("DEID_PIPELINE__OPTIONS", None)
    notes, _ = run_pipeline(gold, config=None, steps=steps, batch_size=64, workers=1, with_metrics=False)
    return {g.id: (n.spans if n.error is None else ()) for g, n in zip(gold, notes, strict=True)}


def _summary(result: Any) -> dict[str, Any]:
    d = result.to_dict()
    return {k: d[k] for k in ("precision", "recall", "f1", "entity_recall", "tp", "fp", "fn", "content_changed")} | {
        "per_label_recall": {lab: c.get("recall") for lab, c in d["per_label"].items()},
        "per_label_precision": {lab: c.get("precision") for lab, c in d["per_label"].items()}}


def average_packs(packs: list[Path], dest: Path, run: dict[str, Any]) -> dict[str, Any]:
    """One pack whose weights are the mean of ``packs``' (float32 sums, stored in the members' dtype).

    The members must be the same architecture, trained from the same base with the same frozen word-piece
    embeddings (checked by their ``embedding.sha256``); config and metadata come from the first."""
    from safetensors.torch import load_file, save_file

    if len(packs) < 2:
        raise SystemExit("a soup needs at least two packs")
    members: list[dict[str, Any]] = []
    digests: set[str] = set()
    total: dict[str, Any] = {}
    dtypes: dict[str, Any] = {}
    tmp = dest.with_suffix(".d")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for i, pack in enumerate(packs):
        part = tmp / f"member{i}"
        with tarfile.open(pack) as tar:
            tar.extractall(part, filter="data")
        digests.add((part / "embedding.sha256").read_text().strip())
        tensors = load_file(str(part / "model.safetensors"))
        if total and set(tensors) != set(total):
            raise SystemExit(f"{pack.name}: other tensors than {packs[0].name}'s")
        for name, t in tensors.items():
            if name in total and t.shape != total[name].shape:
                raise SystemExit(f"{pack.name}: {name} is {tuple(t.shape)}, not {tuple(total[name].shape)}")
            dtypes.setdefault(name, t.dtype)
            total[name] = t.float() if name not in total else total[name] + t.float()
        member = json.loads((part / "run.json").read_text()) if (part / "run.json").is_file() else {}
        members.append({"pack": pack.name, "seed": member.get("args", {}).get("seed"), "fold": member.get("fold")})
    if len(digests) != 1:
        raise SystemExit("the packs' word-piece embeddings differ: not trainings of one base")
    mean = {name: (t / len(packs)).to(dtypes[name]).contiguous() for name, t in total.items()}
    first = tmp / "member0"
    out = tmp / "out"
    out.mkdir()
    save_file(mean, str(out / "model.safetensors"), metadata={"format": "pt"})
    shutil.copy(first / "config.json", out / "config.json")
    meta = json.loads((first / "deidstream_ner.json").read_text())
    meta["name"] = dest.stem
    meta["soup_of"] = members
    (out / "deidstream_ner.json").write_text(json.dumps(meta, indent=2) + "\n")
    (out / "embedding.sha256").write_text(digests.pop())
    run = {**run, "soup_of": members}
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    dest.parent.mkdir(parents=True, exist_ok=True)
    _tar_folder(out, dest)
    shutil.rmtree(tmp)
    return run


def soup(args: argparse.Namespace) -> int:
    """Per fold, the mean of the variants' weights: ``{v}fold{k}.tar`` for each v -> ``{out}fold{k}.tar``."""
    packs = Path(args.packs)
    variants = args.variants.split(",")
    for fold in args.folds.split(","):
        dest = packs / f"{args.out_variant}fold{fold}.tar"
        run = average_packs([packs / f"{v}fold{fold}.tar" for v in variants], dest,
                            {"fold": fold, "command": f"scripts/ner_cv.py soup --variants {args.variants} --folds {fold}"})
        print(json.dumps({"wrote": str(dest), "members": run["soup_of"]}), flush=True)
    return 0


def pack_model(args: argparse.Namespace) -> int:
    """A model folder (e.g. the shipped NER, the recipe's ``all`` model) as a pack, to be a soup's member."""
    run = {"fold": "all", "model_dir": str(args.model_dir), "args": {"seed": args.seed}}
    out = _pack(Path(args.model_dir), Path(args.out), run)
    print(json.dumps({"wrote": args.out, **out}))
    return 0


def unpack_cmd(args: argparse.Namespace) -> int:
    print(json.dumps({"wrote": str(unpack(Path(args.pack), Path(args.out)))}))
    return 0


def score(args: argparse.Namespace) -> int:
    from processors.evaluation.folds import splits
    from processors.evaluation.gold import load_gold, load_label_map
    from processors.evaluation.lockbox import design_only
    from processors.evaluation.scoring import evaluate

    gold = design_only(load_gold(args.dev, load_label_map("physionet")))  # the lockbox: scripts/decider_cv.py
    folds = list(splits(gold, K, 0))
    models = WORK / "models"
    base = _detect(gold, None, args.steps)
    cv: dict[str, Any] = {}
    per_fold = []
    for k, (_, held) in enumerate(folds):
        pack = Path(args.packs) / f"{args.variant}fold{k}.tar"
        model = unpack(pack, models / f"{args.variant}fold{k}")
        sub = [gold[i] for i in held]
        pred = _detect(sub, model, args.steps, args.threshold)
        cv.update(pred)
        per_fold.append({"fold": k, "notes": len(sub), "new": _summary(evaluate(sub, pred)),
                         "shipped": _summary(evaluate(sub, {g.id: base[g.id] for g in sub}))})
        print(json.dumps({"fold": k, "new": per_fold[-1]["new"]["precision"], "recall": per_fold[-1]["new"]["recall"],
                          "shipped": per_fold[-1]["shipped"]["precision"]}), flush=True)
    out = {
        "data": args.dev.name, "notes": len(gold), "folds": K, "fold_seed": 0, "steps": args.steps or "default detection steps",
        "retrained_ner_threshold": args.threshold,
        "shipped_model": _summary(evaluate(gold, base)),
        "retrained_cv": _summary(evaluate(gold, cv)),
        "per_fold": per_fold,
        "train_runs": [json.loads((models / f"{args.variant}fold{k}" / "run.json").read_text()) for k in range(K)],
    }
    if (Path(args.packs) / f"{args.variant}foldall.tar").is_file():
        unpack(Path(args.packs) / f"{args.variant}foldall.tar", models / f"{args.variant}foldall")
        out["all_model_dir"] = str(models / f"{args.variant}foldall")
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: out[k] for k in ("shipped_model", "retrained_cv")}, indent=1))
    return 0


def score_sets(args: argparse.Namespace) -> int:
    """The NER step alone, the shipped model and each ``--model-dir``, on the sets no NER trained on and that are no
    lockbox (presidio_synth_v2, MEDDOCAN dev's design part), at each decode threshold: token P / R / tp / fp / fn."""
    from processors.evaluation.gold import load_gold, load_label_map
    from processors.evaluation.lockbox import split
    from processors.evaluation.scoring import evaluate

    data = REPO.parent / "shared/data/eval"
    sets = {"presidio_synth_v2": load_gold(data / "presidio_synth_v2.jsonl", load_label_map("presidio")),
            "meddocan_dev_design": split(load_gold(data / "meddocan_dev.jsonl", load_label_map("meddocan")))[0]}
    models: dict[str, Path | None] = {"shipped": None, **{Path(m).name: Path(m).resolve() for m in args.model_dir}}
    out: dict[str, Any] = {"what": "the NER step alone (steps: ner), token counts; no lockbox note",
                           "date": time.strftime("%Y-%m-%d"), "command": " ".join(["scripts/ner_cv.py", *sys.argv[1:]]),
                           "results": {}}
    for name, gold in sets.items():
        for label, model in models.items():
            for t in (float(x) for x in args.thresholds.split(",")):
                d = evaluate(gold, _detect(gold, model, "ner", t)).to_dict()
                row = {k: (round(d[k], 4) if isinstance(d[k], float) else d[k]) for k in ("precision", "recall", "tp", "fp", "fn")}
                out["results"].setdefault(name, {}).setdefault(label, {})[str(t)] = row
                print(json.dumps({"set": name, "model": label, "threshold": t, **row}), flush=True)
    if args.output:
        Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    return 0


def score_one(args: argparse.Namespace) -> int:
    from processors.evaluation.folds import splits
    from processors.evaluation.gold import load_gold, load_label_map
    from processors.evaluation.lockbox import design_only
    from processors.evaluation.scoring import evaluate

    pack = Path(args.pack)
    model = unpack(pack, WORK / "models" / pack.stem)
    gold = design_only(load_gold(args.dev, load_label_map("physionet")))
    held = [gold[i] for i in list(splits(gold, K, 0))[args.fold][1]]
    presidio = load_gold(REPO.parent / "shared/data/eval/presidio_synth_v2.jsonl", load_label_map("presidio"))
    row = {"pack": pack.name, "fold": args.fold,
           "dev_fold": _summary(evaluate(held, _detect(held, model, None))),
           "presidio": _summary(evaluate(presidio, _detect(presidio, model, None)))}
    print(json.dumps({"pack": pack.name, "dev_p": round(row["dev_fold"]["precision"], 4),
                      "dev_r": round(row["dev_fold"]["recall"], 4), "pres_p": round(row["presidio"]["precision"], 4),
                      "pres_r": round(row["presidio"]["recall"], 4)}))
    return 0


def weight_diff(a: Path, b: Path) -> dict[str, Any]:
    """How far two models' weights lie apart (``model.safetensors`` of each folder): the tensors and elements that
    differ and the largest absolute difference. Tensors of one name only, or of other shapes, are listed apart."""
    from safetensors.torch import load_file

    x, y = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    out: dict[str, Any] = {"tensors": len(x), "tensors_differ": 0, "elements": 0, "elements_differ": 0,
                           "max_abs_diff": 0.0, "only_one": sorted(set(x) ^ set(y)), "other_shape": []}
    for name in sorted(set(x) & set(y)):
        if x[name].shape != y[name].shape:
            out["other_shape"].append(name)
            continue
        differ = int((x[name] != y[name]).sum().item())
        out["elements"] += x[name].numel()
        out["elements_differ"] += differ
        if differ:
            out["tensors_differ"] += 1
            out["max_abs_diff"] = max(out["max_abs_diff"], (x[name].float() - y[name].float()).abs().max().item())
    return out


def compare(args: argparse.Namespace) -> int:
    """A retrained model against the shipped one (or ``--against``): their weights, then the NER step's spans on
    presidio_synth_v2 (never trained on, no lockbox) as the runtime decodes them, and each one's token scores
    there (model first). A recipe that retrains bit for bit shows no difference at all; otherwise this says how far
    the retraining moved the runtime's output."""
    from processors.evaluation.gold import load_gold, load_label_map
    from processors.evaluation.scoring import evaluate

    model, against = Path(args.model_dir).resolve(), Path(args.against).resolve()
    out: dict[str, Any] = {"model": str(model), "against": str(against), "weights": weight_diff(model, against)}
    gold = load_gold(REPO.parent / "shared/data/eval/presidio_synth_v2.jsonl", load_label_map("presidio"))
    a, b = _detect(gold, model, "ner"), _detect(gold, against, "ner")
    keys = [g.id for g in gold]
    placed = {k: [(s.start, s.end, s.label) for s in a[k]] == [(s.start, s.end, s.label) for s in b[k]] for k in keys}
    gaps = {k: max((abs(p.score - q.score) for p, q in zip(a[k], b[k], strict=True)), default=0.0)
            for k in keys if placed[k]}
    out["presidio_synth_v2"] = {
        "notes": len(keys), "other_spans_or_labels": sum(not v for v in placed.values()),
        "other_scores": sum(1 for g in gaps.values() if g > 0),
        "max_score_diff_same_spans": round(max(gaps.values(), default=0.0), 4),
        "spans": [sum(len(a[k]) for k in keys), sum(len(b[k]) for k in keys)],
        "tokens": [{k: d[k] for k in ("precision", "recall", "fp", "fn")}
                   for d in (evaluate(gold, a).to_dict(), evaluate(gold, b).to_dict())]}
    print(json.dumps(out, indent=1))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--synthetic", type=int, default=6000)
    p.add_argument("--shift", type=int, default=3000)
    p.add_argument("--negatives", type=float, default=0.35)
    p.add_argument("--dev", type=Path, default=DEV)
    p.add_argument("--surrogates", type=int, default=0, help="also write N copies of the design notes with "
                   "surrogate identifiers (physionet_surR.jsonl; train --surrogate-repeats)")
    t = sub.add_parser("train")
    t.add_argument("--out", required=True)
    t.add_argument("--steps", type=int, default=1500)
    t.add_argument("--lr", type=float, default=1e-4)
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--repeat", type=int, default=3)
    t.add_argument("--surrogate-repeats", type=int, default=0, help="of the design notes' --repeat copies, this many "
                   "are prepare --surrogates' copies with surrogate identifiers instead of the notes themselves")
    t.add_argument("--folds", default="0,1,2,3,4,all")
    t.add_argument("--variant", default="", help="prefix of the pack names")
    t.add_argument("--base", default=str(BASE), help="the model the fold models start from (default: the stage-2 "
                   "model that prepare writes; never the shipped one, which saw every dev note)")
    t.add_argument("--threads", type=int, default=None, help="CPU threads for training (default: torch's)")
    t.add_argument("--seed", type=int, default=13, help="training seed (shuffling, dropout, head init)")
    t.add_argument("--shift-max", type=int, default=None, help="use only the first N ICU shift notes of the mix")
    t.add_argument("--synthetic-max", type=int, default=None, help="use only the first N other synthetic notes")
    t.add_argument("--case-channel", action="store_true", help="each word's case as the piece's token type "
                   "(processors.ner.step.add_case_channel; the stage-2 base has no such channel: its rows start as copies)")
    t.add_argument("--meddocan-repeats", type=int, default=0, help="also train on MEDDOCAN train (Spanish; prepare "
                   "writes it) this many times; a fold model sees the four fifths of its notes outside the fold")
    c = sub.add_parser("carry", help="here: .gpucarry/, what train needs on the GPU machine (with the .whl wheels)")
    c.add_argument("--larger-base", action="store_true", help="also the larger base (base-larger writes it)")
    sub.add_parser("base-larger", help="here: the larger base (stage 1: 4 layers x 1536, synthetic notes only) "
                   "out of git into .gpu/base_larger")
    sub.add_parser("uncarry", help="on the GPU machine: .gpu/ from .gpucarry/")
    o = sub.add_parser("score-one", help="one fold's model: its held-out dev notes and presidio_synth_v2")
    o.add_argument("--pack", required=True)
    o.add_argument("--fold", type=int, default=0)
    o.add_argument("--dev", type=Path, default=DEV)
    s = sub.add_parser("score")
    s.add_argument("--packs", required=True)
    s.add_argument("--dev", type=Path, default=DEV)
    s.add_argument("--steps", default=None, help="detection steps (default: the settings')")
    s.add_argument("--variant", default="", help="prefix of the pack names")
    s.add_argument("--threshold", type=float, default=None, help="NER threshold of the retrained models")
    s.add_argument("-o", "--output", default=str(REPO / "scripts/results/ner_cv_physionet.json"))
    ss = sub.add_parser("score-sets", help="the NER alone (shipped and --model-dir) on presidio_synth_v2 and MEDDOCAN "
                        "dev's design part")
    ss.add_argument("--model-dir", action="append", default=[], help="a model folder (repeat for several)")
    ss.add_argument("--thresholds", default="0.08,0.005")
    ss.add_argument("-o", "--output", default=None)
    u = sub.add_parser("soup", help="per fold, the mean of several variants' weights (a model soup)")
    u.add_argument("--packs", default=str(WORK / "packs"))
    u.add_argument("--variants", required=True, help="comma-separated pack prefixes, e.g. d,e")
    u.add_argument("--out-variant", required=True)
    u.add_argument("--folds", default="0,1,2,3,4")
    m = sub.add_parser("pack", help="a model folder as a pack (its weights less the frozen word-piece embeddings)")
    m.add_argument("--model-dir", default=str(SHIPPED))
    m.add_argument("--out", required=True)
    m.add_argument("--seed", type=int, default=13, help="the seed it was trained with (recorded)")
    un = sub.add_parser("unpack", help="a pack as a full model folder (the word-piece embeddings from the shipped model)")
    un.add_argument("--pack", required=True)
    un.add_argument("--out", required=True)
    cm = sub.add_parser("compare", help="a retrained model against the shipped one: weights, and the NER step's "
                        "spans on presidio_synth_v2")
    cm.add_argument("--model-dir", required=True)
    cm.add_argument("--against", default=str(SHIPPED))
    args = ap.parse_args()
    return {"prepare": prepare, "train": train_folds, "score": score, "score-one": score_one, "score-sets": score_sets,
            "carry": carry, "uncarry": uncarry, "base-larger": base_larger, "soup": soup, "pack": pack_model,
            "unpack": unpack_cmd, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
