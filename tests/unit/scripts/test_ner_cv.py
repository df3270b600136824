"""scripts/ner_cv.py: the fold models of the cross-validation never start from a model that saw the dev notes."""

from __future__ import annotations

import json
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
