"""scripts/ner_cv.py: the fold models of the cross-validation never start from a model that saw the dev notes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from paths import REPO, load_script


@pytest.fixture(scope="module")
def ner_cv() -> Any:
    return load_script("ner_cv")


def _model(tmp_path: Path, data: list[Any]) -> Path:
    (tmp_path / "deidstream_ner.json").write_text(json.dumps({"name": "deid-minilm", "data": data}))
    return tmp_path


def test_when_the_base_was_trained_on_the_physionet_notes_then_training_the_folds_is_refused(
        ner_cv: Any, tmp_path: Path) -> None:
    # the shipped model (stage 3) saw every dev note: a fold model built on it would have seen its held-out patients
    with pytest.raises(SystemExit, match="trained on the PhysioNet notes"):
        ner_cv.check_base(ner_cv.SHIPPED)
    with pytest.raises(SystemExit, match="trained on the PhysioNet notes"):
        ner_cv.check_base(_model(tmp_path, ["/data/physionet.jsonl"]))


def test_when_the_base_saw_only_synthetic_notes_then_it_is_accepted(ner_cv: Any, tmp_path: Path) -> None:
    ner_cv.check_base(_model(tmp_path, []))
    ner_cv.check_base(_model(tmp_path, [{"file": "mix.jsonl (generate(6000, seed=1001))", "sha256": "0" * 64}]))


def test_when_the_stage_2_model_is_in_the_history_then_the_written_base_is_it(ner_cv: Any, tmp_path: Path) -> None:
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{ner_cv.STAGE2_COMMIT}^{{commit}}"],
                           capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"this clone's history does not reach commit {ner_cv.STAGE2_COMMIT} (a shallow clone): "
                    "the base cannot be written from git here")
    base = ner_cv.write_base(tmp_path / "base")
    meta = json.loads((base / "deidstream_ner.json").read_text())
    assert meta["notes"] == 6000 and not meta["data"]  # stage 2: synthetic notes only
    ner_cv.check_base(base)
    assert sorted(p.name for p in base.iterdir()) == sorted(ner_cv._MODEL_FILES)


def _pack(ner_cv: Any, tmp_path: Path, name: str, tensors: dict[str, Any], embedding: str = "e" * 64,
          seed: int = 13) -> Path:
    import tarfile

    from safetensors.torch import save_file

    folder = tmp_path / f"{name}.src"
    folder.mkdir()
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / "deidstream_ner.json").write_text(json.dumps({"name": name, "data": []}))
    (folder / "embedding.sha256").write_text(embedding)
    (folder / "run.json").write_text(json.dumps({"fold": "0", "args": {"seed": seed}}))
    pack = tmp_path / f"{name}.tar"
    with tarfile.open(pack, "w") as tar:
        for f in sorted(folder.iterdir()):
            tar.add(f, arcname=f.name)
    return pack


def test_when_two_trainings_are_souped_then_each_weight_is_their_mean_in_their_dtype(
        ner_cv: Any, tmp_path: Path) -> None:
    import tarfile

    import torch
    from safetensors.torch import load_file

    a = _pack(ner_cv, tmp_path, "dfold0", {"w": torch.tensor([1.0, 2.0, 0.5], dtype=torch.float16),
                                           "b": torch.tensor([0.0, 4.0])}, seed=13)
    b = _pack(ner_cv, tmp_path, "efold0", {"w": torch.tensor([3.0, 2.0, 1.5], dtype=torch.float16),
                                           "b": torch.tensor([1.0, -4.0])}, seed=7)
    run = ner_cv.average_packs([a, b], tmp_path / "out" / "sfold0.tar", {"fold": "0"})
    assert [m["seed"] for m in run["soup_of"]] == [13, 7]
    with tarfile.open(tmp_path / "out" / "sfold0.tar") as tar:
        tar.extractall(tmp_path / "got", filter="data")
    got = load_file(str(tmp_path / "got" / "model.safetensors"))
    assert got["w"].dtype == torch.float16 and got["w"].tolist() == [2.0, 2.0, 1.0]
    assert got["b"].dtype == torch.float32 and got["b"].tolist() == [0.5, 0.0]
    meta = json.loads((tmp_path / "got" / "deidstream_ner.json").read_text())
    assert meta["name"] == "sfold0" and [m["pack"] for m in meta["soup_of"]] == ["dfold0.tar", "efold0.tar"]
    assert (tmp_path / "got" / "embedding.sha256").read_text() == "e" * 64


def test_when_the_members_are_not_trainings_of_one_base_then_the_soup_is_refused(
        ner_cv: Any, tmp_path: Path) -> None:
    import torch

    a = _pack(ner_cv, tmp_path, "dfold0", {"w": torch.zeros(3)})
    other_embeddings = _pack(ner_cv, tmp_path, "efold0", {"w": torch.ones(3)}, embedding="f" * 64)
    other_shape = _pack(ner_cv, tmp_path, "ffold0", {"w": torch.ones(4)})
    with pytest.raises(SystemExit, match="embeddings differ"):
        ner_cv.average_packs([a, other_embeddings], tmp_path / "x.tar", {})
    with pytest.raises(SystemExit, match="is \\(4,\\), not \\(3,\\)"):
        ner_cv.average_packs([a, other_shape], tmp_path / "y.tar", {})
    with pytest.raises(SystemExit, match="at least two"):
        ner_cv.average_packs([a], tmp_path / "z.tar", {})


def test_when_surrogate_copies_are_written_then_they_keep_ids_apart_and_give_the_same_folds(
        ner_cv: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from processors.evaluation.folds import splits
    from processors.evaluation.gold import load_gold

    monkeypatch.setattr(ner_cv, "WORK", tmp_path)
    names = ["Quimby", "Zelnick", "Okonkwo", "Nakashima", "Brannigan"]
    with (tmp_path / "physionet.jsonl").open("w") as fh:
        for i in range(20):
            name = names[i % 5]
            text = f"Seen by {name} today, stable."
            fh.write(json.dumps({"id": f"n{i}", "text": text, "patient_group": f"g{i % 6}",
                                 "spans": [{"start": 8, "end": 8 + len(name), "label": "NAME", "text": name}]}) + "\n")
    ner_cv.write_surrogates(2)
    real = load_gold(tmp_path / "physionet.jsonl")
    for r in (1, 2):
        copies = load_gold(ner_cv.surrogate_file(r))
        assert [c.id for c in copies] == [f"{g.id}#sur{r}" for g in real]
        assert [c.group for c in copies] == [g.group for g in real]
        assert all(c.text[c.spans[0].start:c.spans[0].end] not in names for c in copies)
        # the same patients in the same folds: no fold model sees a held-out patient's copy
        assert [f for f, _ in splits(copies, 3, 0)] == [f for f, _ in splits(real, 3, 0)]


def test_when_more_surrogate_repeats_than_repeats_or_no_copies_then_training_is_refused(
        ner_cv: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    monkeypatch.setattr(ner_cv, "WORK", tmp_path)
    (tmp_path / "base").mkdir()
    base = _model(tmp_path / "base", [])
    args = dict(out=str(tmp_path / "packs"), base=str(base), shift_max=None, synthetic_max=None, folds="0",
                steps=1, lr=1e-4, repeat=2, surrogate_repeats=3, batch_size=2, variant="x", threads=1, seed=13)
    with pytest.raises(SystemExit, match="between 0 and --repeat"):
        ner_cv.train_folds(argparse.Namespace(**args))
    with pytest.raises(SystemExit, match="prepare --surrogates 1"):
        ner_cv.train_folds(argparse.Namespace(**{**args, "surrogate_repeats": 1}))


def test_when_meddocan_train_is_written_for_the_ner_then_labels_are_ours_with_name_subtypes_and_notes_fold_apart(
        ner_cv: Any, tmp_path: Path) -> None:
    from processors.evaluation.folds import splits
    from processors.evaluation.gold import load_gold
    from processors.training.ner import read_examples

    text = "Nombre: Ernesto Rivera. Edad: 70 años. Médico: Ana Ruiz. Tatuaje en el brazo. Ingreso: 12/12/2016."
    def at(s: str) -> tuple[int, int]:
        i = text.index(s)
        return i, i + len(s)
    spans = [(*at("Ernesto Rivera"), "NOMBRE_SUJETO_ASISTENCIA"), (*at("70 años"), "EDAD_SUJETO_ASISTENCIA"),
             (*at("Ana Ruiz"), "NOMBRE_PERSONAL_SANITARIO"), (*at("Tatuaje en el brazo"), "OTROS_SUJETO_ASISTENCIA"),
             (*at("12/12/2016"), "FECHAS")]
    src = tmp_path / "meddocan_train.jsonl"
    with src.open("w") as fh:
        for i in range(10):
            fh.write(json.dumps({"id": f"meddocan-{i}", "split": "train", "text": text,
                                 "spans": [{"start": s, "end": e, "label": lab, "text": text[s:e]}
                                           for s, e, lab in spans]}) + "\n")
    dest = tmp_path / "out.jsonl"
    assert ner_cv.write_meddocan(src, dest) == 10
    records = [json.loads(line) for line in dest.read_text().splitlines()]
    assert [r["patient_group"] for r in records] == [f"meddocan-{i}" for i in range(10)]
    assert [(s["text"], s["label"], s["subtype"]) for s in records[0]["spans"]] == [
        ("Ernesto Rivera", "NAME", "PATIENT"), ("Ana Ruiz", "NAME", "PROVIDER"),
        ("Tatuaje en el brazo", "ID", None), ("12/12/2016", "DATE", None)]  # the age: not an identifier here
    # a fold model trains on the notes outside its fold only, the same split the scoring side uses
    fit, held = list(splits(load_gold(dest), 5, 0))[0]
    examples = read_examples([dest], None, subtypes=["NAME"], fold="0/5")
    assert sorted(e.id for e in examples) == sorted(records[i]["id"] for i in fit)
    assert not {records[i]["id"] for i in held} & {e.id for e in examples}
    assert {c for e in examples for _, _, c in e.spans} == {"NAME/PATIENT", "NAME/PROVIDER", "ID", "DATE"}


def test_when_meddocan_is_asked_for_where_neither_its_file_nor_the_corpus_is_then_training_is_refused(
        ner_cv: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    monkeypatch.setattr(ner_cv, "WORK", tmp_path)
    monkeypatch.setattr(ner_cv, "MEDDOCAN_TRAIN", tmp_path / "absent.jsonl")
    (tmp_path / "base").mkdir()
    base = _model(tmp_path / "base", [])
    args = dict(out=str(tmp_path / "packs"), base=str(base), shift_max=None, synthetic_max=None, folds="0",
                steps=1, lr=1e-4, repeat=2, surrogate_repeats=0, batch_size=2, variant="x", threads=1, seed=13,
                meddocan_repeats=1)
    with pytest.raises(SystemExit, match="run prepare where ../shared is"):
        ner_cv.train_folds(argparse.Namespace(**args))


def test_when_the_larger_base_is_written_then_it_is_stage_1_wide_and_synthetic_only_with_the_shipped_embeddings(
        ner_cv: Any, tmp_path: Path) -> None:
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{ner_cv.LARGER_BASE_COMMIT}^{{commit}}"],
                           capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"this clone's history does not reach commit {ner_cv.LARGER_BASE_COMMIT} (a shallow clone): "
                    "the larger base cannot be written from git here")
    from safetensors.torch import load_file

    base = ner_cv.write_base(tmp_path / "larger", ner_cv.LARGER_BASE_COMMIT, ner_cv.LARGER_BASE_FOLDER)
    meta = json.loads((base / "deidstream_ner.json").read_text())
    config = json.loads((base / "config.json").read_text())
    assert meta["notes"] == 6000 and not meta["data"]  # synthetic notes only: it may start fold models
    ner_cv.check_base(base)
    assert (config["num_hidden_layers"], config["intermediate_size"]) == (4, 1536)
    shipped = json.loads((ner_cv.SHIPPED / "config.json").read_text())
    assert (shipped["num_hidden_layers"], shipped["intermediate_size"]) == (3, 768)  # the larger one is larger
    # the same word pieces: packs without the embeddings and unpack work for its fold models as for the shipped recipe
    assert bool((load_file(str(base / "model.safetensors"))[ner_cv.EMBED].float()
                 == load_file(str(ner_cv.SHIPPED / "model.safetensors"))[ner_cv.EMBED].float()).all())


def _base_folder(ner_cv: Any, folder: Path, tensors: dict[str, Any]) -> Path:
    """A model folder of ``tensors`` (the other files: metadata of a model trained on synthetic notes only)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    save_file(tensors, str(folder / "model.safetensors"))
    for name in ner_cv._MODEL_FILES:
        if name != "model.safetensors":
            (folder / name).write_text(json.dumps({"name": folder.name, "data": []}))
    return folder


def test_when_both_bases_are_carried_then_uncarry_restores_each_whole_and_a_base_of_other_embeddings_is_refused(
        ner_cv: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    import torch
    from safetensors.torch import load_file

    embed = torch.arange(12, dtype=torch.float16).reshape(4, 3)
    shipped = _base_folder(ner_cv, tmp_path / "shipped", {ner_cv.EMBED: embed, "w": torch.zeros(2)})
    work, carry = tmp_path / "work", tmp_path / "carry"
    for name, value in {"SHIPPED": shipped, "WORK": work, "CARRY": carry, "BASE": work / "base",
                        "LARGER_BASE": work / "base_larger"}.items():
        monkeypatch.setattr(ner_cv, name, value)
    small = {ner_cv.EMBED: embed.clone(), "w": torch.tensor([1.0, 2.0], dtype=torch.float16)}
    large = {ner_cv.EMBED: embed.clone(), "w": torch.tensor([3.0, 4.0, 5.0], dtype=torch.float16),
             "v": torch.ones(2, 2, dtype=torch.float16)}
    _base_folder(ner_cv, work / "base", small)
    _base_folder(ner_cv, work / "base_larger", large)
    (work / "mix.jsonl").write_text('{"id": "synth-1001-0"}\n')
    (work / "physionet.jsonl").write_text('{"id": "n0"}\n')

    assert ner_cv.carry(argparse.Namespace(larger_base=True)) == 0
    assert ner_cv.EMBED not in load_file(str(carry / "base_larger" / "model.safetensors"))  # travels without them
    shutil.rmtree(work)
    assert ner_cv.uncarry(argparse.Namespace()) == 0
    for folder, want in ((work / "base", small), (work / "base_larger", large)):
        got = load_file(str(folder / "model.safetensors"))
        assert sorted(got) == sorted(want) and all(torch.equal(got[k], want[k]) for k in want)

    # the larger base alone (the stage-2 base not carried: a run of --base variants only) is enough; no base is not
    shutil.rmtree(carry / "base")
    shutil.rmtree(work)
    assert ner_cv.uncarry(argparse.Namespace()) == 0
    assert (work / "base_larger" / "model.safetensors").is_file() and not (work / "base").exists()
    shutil.rmtree(carry / "base_larger")
    with pytest.raises(SystemExit, match="no base model"):
        ner_cv.uncarry(argparse.Namespace())

    _base_folder(ner_cv, work / "base", small)
    # without --larger-base nothing of it travels (a leftover from an earlier carry is removed)
    (carry / "base_larger").mkdir()
    assert ner_cv.carry(argparse.Namespace(larger_base=False)) == 0
    assert not (carry / "base_larger").exists()
    # embeddings other than the shipped model's cannot be put back there: refused here
    _base_folder(ner_cv, tmp_path / "other", {ner_cv.EMBED: embed + 1, "w": torch.zeros(2)})
    monkeypatch.setattr(ner_cv, "LARGER_BASE", tmp_path / "other")
    with pytest.raises(SystemExit, match="embeddings differ"):
        ner_cv.carry(argparse.Namespace(larger_base=True))


def test_when_the_larger_base_travels_in_a_call_of_its_own_then_the_next_call_finds_it_in_gpucarry(
        tmp_path: Path) -> None:
    # scripts/gpu_ner_cv.sh: call 1 (STAGE=carry) copies what it carried into /tmp (DEID_STAGED here); call 2, in a
    # fresh copy of the working tree, merges it back into .gpucarry before uncarry (here it then stops: no wheels)
    script = REPO / "scripts/gpu_ner_cv.sh"
    staged = tmp_path / "staged"
    env = {"PATH": "/usr/bin:/bin", "DEID_STAGED": str(staged), "OUT": str(tmp_path / "out")}
    first = tmp_path / "call1"
    (first / ".gpucarry/base_larger").mkdir(parents=True)
    (first / ".gpucarry/base_larger/model.safetensors").write_bytes(b"weights")
    done = subprocess.run(["bash", str(script)], cwd=first, env={**env, "STAGE": "carry"}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "staged into" in done.stdout, done.stderr
    second = tmp_path / "call2"
    (second / ".gpucarry").mkdir(parents=True)
    (second / ".gpucarry/mix.jsonl.gz").write_bytes(b"mix")
    run = subprocess.run(["bash", str(script)], cwd=second, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0  # no .whl folder here: it stops before training
    assert (second / ".gpucarry/base_larger/model.safetensors").read_bytes() == b"weights"
    assert (second / ".gpucarry/mix.jsonl.gz").read_bytes() == b"mix"  # what this call carried stays


def test_when_two_models_differ_in_a_few_weights_then_compare_counts_them_and_the_largest_step(
        ner_cv: Any, tmp_path: Path) -> None:
    # `ner_cv.py compare`: a retraining that is not bit for bit shows how many weights moved and how far
    import torch
    from safetensors.torch import save_file

    def folder(name: str, tensors: dict[str, Any]) -> Path:
        (tmp_path / name).mkdir()
        save_file(tensors, str(tmp_path / name / "model.safetensors"))
        return tmp_path / name

    w = torch.tensor([0.125, 0.25, 0.5, 1.0], dtype=torch.float16)
    moved = w.clone()
    moved[1] = torch.nextafter(moved[1].float(), torch.tensor(1.0)).half()  # fp32 next is below fp16's step: no move
    moved[2] = torch.tensor(0.5, dtype=torch.float16) + torch.tensor(2.0 ** -11, dtype=torch.float16)  # fp16 step at 0.5
    a = folder("a", {"w": w, "b": torch.zeros(3, dtype=torch.float16), "only_a": torch.zeros(1)})
    b = folder("b", {"w": moved, "b": torch.zeros(3, dtype=torch.float16), "only_b": torch.zeros(1)})
    assert ner_cv.weight_diff(a, b) == {"tensors": 3, "tensors_differ": 1, "elements": 7, "elements_differ": 1,
                                        "max_abs_diff": 2.0 ** -11, "only_one": ["only_a", "only_b"],
                                        "other_shape": []}
    same = ner_cv.weight_diff(a, a)
    assert same["elements_differ"] == 0 and same["max_abs_diff"] == 0.0 and same["only_one"] == []
    c = folder("c", {"w": torch.zeros(2, 2, dtype=torch.float16), "b": torch.zeros(3, dtype=torch.float16),
                     "only_a": torch.zeros(1)})
    assert ner_cv.weight_diff(a, c)["other_shape"] == ["w"]
