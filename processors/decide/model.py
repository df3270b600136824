"""The decision stage's model file: a LightGBM booster (its own text format, stable across versions), the
isotonic calibration of its scores, the threshold, and what the model was trained on (``decider.json``).

A model folder holds ``model.txt.xz`` (``lightgbm.Booster.model_to_string``, xz-compressed: a third of the size; a
plain ``model.txt`` is read too), ``decider.json`` and ``MODEL_CARD.md``.
The features a model was trained with are named in ``decider.json``; loading refuses a model whose features are
not the code's (``features.FEATURES``), so a model and the code that serves it cannot drift apart.
"""

from __future__ import annotations

import functools
import hashlib
import json
import lzma
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from processors.decide.features import FEATURES
from processors.runtime import numeric_threads
from schemas.errors import ConfigError

META_FILE = "decider.json"
MODEL_FILE = "model.txt.xz"
#: the booster's text uncompressed (folders written before the models were compressed, or by hand)
PLAIN_MODEL_FILE = "model.txt"
MODELS = Path(__file__).resolve().parent / "models"
#: the shipped models: one for the detectors with the NER model, one for regex + dictionaries alone
DEFAULT_MODEL = MODELS / "decider"
NO_NER_MODEL = MODELS / "decider-no-ner"
#: the shipped models of the routed languages (``SharedPolicy.language_routes``), each trained on the candidates of
#: the NER model the NER step runs for that language
ROUTE_MODELS: dict[str, Path] = {"es": MODELS / "decider-es"}


def features_digest(names: Sequence[str] = FEATURES) -> str:
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Decider:
    """A trained decision model: ``probability(rows)`` is the calibrated probability that a candidate holds an
    identifier; ``threshold`` the probability from which it is kept."""

    booster: Any
    calibration: tuple[tuple[float, ...], tuple[float, ...]]
    threshold: float
    meta: dict[str, Any]

    @property
    def model_id(self) -> str:
        return str(self.meta.get("model_id", "decider"))

    def raw(self, rows: Sequence[Sequence[float]]) -> npt.NDArray[np.float64]:
        if not rows:
            return np.zeros(0)
        out: npt.NDArray[np.float64] = np.asarray(
            self.booster.predict(np.asarray(rows, dtype=np.float64), num_threads=numeric_threads()), dtype=np.float64)
        return out

    def calibrate(self, raw: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        xs, ys = self.calibration
        out: npt.NDArray[np.float64] = np.interp(raw, xs, ys)
        return out

    def probability(self, rows: Sequence[Sequence[float]]) -> npt.NDArray[np.float64]:
        return self.calibrate(self.raw(rows))


def save(folder: Path, booster: Any, calibration: tuple[Sequence[float], Sequence[float]], threshold: float,
         meta: dict[str, Any]) -> Path:
    """Write a model folder (``model.txt.xz`` + ``decider.json``); returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    text = booster.model_to_string()
    (folder / MODEL_FILE).write_bytes(lzma.compress(text.encode("utf-8"), preset=9))
    (folder / PLAIN_MODEL_FILE).unlink(missing_ok=True)
    body = dict(meta)
    body.update({
        "features": list(FEATURES), "features_digest": features_digest(),
        "calibration": {"raw": [float(x) for x in calibration[0]],
                        "probability": [float(y) for y in calibration[1]]},
        "threshold": float(threshold),
        "model_sha256": hashlib.sha256(text.encode()).hexdigest(),
    })
    (folder / META_FILE).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    return folder


@functools.lru_cache(maxsize=4)
def load(folder: str | Path) -> Decider:
    """A model folder, once per process and path. Raises ConfigError (E300) for a missing folder, a missing
    LightGBM, or a model trained with other features than the code computes."""
    path = Path(folder)
    meta_path, model_path = path / META_FILE, path / MODEL_FILE
    if not model_path.is_file() and (path / PLAIN_MODEL_FILE).is_file():
        model_path = path / PLAIN_MODEL_FILE
    if not meta_path.is_file() or not model_path.is_file():
        raise ConfigError(f"decide: no decision model in {path.name!r} (needs {META_FILE} and {MODEL_FILE}; "
                          "`deidstream train-decider` writes one)")
    try:
        import lightgbm
    except ImportError:
        raise ConfigError("decide: the decision stage needs LightGBM (pip install lightgbm)") from None
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta.get("features_digest") != features_digest():
        raise ConfigError(f"decide: the model in {path.name!r} was trained with other features than this code "
                          "computes; retrain it (`deidstream train-decider`)")
    raw = model_path.read_bytes()
    booster = lightgbm.Booster(model_str=(lzma.decompress(raw) if model_path.name == MODEL_FILE else raw).decode("utf-8"))
    cal = meta["calibration"]
    return Decider(booster, (tuple(cal["raw"]), tuple(cal["probability"])), float(meta["threshold"]), meta)
