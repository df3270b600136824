"""The NER step's language routes (a Spanish note to the Spanish route's model) and model folders that share the
shipped model's word-piece embeddings. Sentences of our own, no corpus text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from processors.ner.step import (
    DEFAULT_MODEL_DIR,
    ROUTE_MODEL_DIRS,
    SHARED_EMBEDDINGS_FILE,
    WORD_EMBEDDINGS,
    embeddings_sha256,
    load_model,
    predict,
)
from processors.pipeline import BuildContext, Note, SharedPolicy, build_processor
from schemas.errors import ConfigError
from schemas.models import NoteIn

ES_MODEL_DIR = ROUTE_MODEL_DIRS["es"]

SPANISH = [
    "Paciente varón de 64 años, D. Rafael Ortiz Menéndez, ingresado el 14 de marzo de 2019 en el Hospital "
    "Universitario de Salamanca por dolor torácico. Su hija Lucía Ortiz le acompaña; teléfono 923 456 789.",
    "Informe remitido a la Dra. Carmen Villalobos Ruiz, Servicio de Cardiología, Hospital General de Albacete, "
    "C/ Mayor 12, 02001 Albacete. NHC 4478123.",
]
ENGLISH = [
    "Pt seen by Dr. Okafor this AM. Wife Linda at bedside, can be reached at 617-555-0199.",
    "PT JOHN MCALLISTER 84M ADMITTED 3/14/2021 FROM ST ELSEWHERE HOSPITAL. SEEN BY DR PATEL @0800.",
]


def _notes(texts: list[str]) -> list[Note]:
    return [Note(input=NoteIn(note_id=f"n{i}", text=t)) for i, t in enumerate(texts)]


def _spans(note: Note) -> list[tuple[str, str, float]]:
    return [(note.text[s.start:s.end], str(s.label), s.score) for s in note.spans]


def _ner(routes: tuple[str, ...], **options: Any) -> Any:
    return build_processor("ner", options, BuildContext(policy=SharedPolicy(language_routes=routes)))


@pytest.fixture(scope="module")
def routed() -> Any:
    return _ner(("es",))  # the default policy's routes, the shipped models, int8 on CPU


def test_when_the_spanish_route_is_shipped_then_it_is_fp16_small_shares_the_embeddings_and_is_documented() -> None:
    from safetensors import safe_open

    weights = ES_MODEL_DIR / "model.safetensors"
    assert weights.stat().st_size <= 10 * 1024 * 1024  # the encoder only: the word pieces are the shipped model's
    with safe_open(str(weights), framework="pt") as f:
        assert WORD_EMBEDDINGS not in f.keys()
        assert {str(f.get_tensor(k).dtype) for k in f.keys()} == {"torch.float16"}
    assert (ES_MODEL_DIR / SHARED_EMBEDDINGS_FILE).is_file() and not (ES_MODEL_DIR / "tokenizer.json").exists()
    meta = json.loads((ES_MODEL_DIR / "deidstream_ner.json").read_text())
    card = (ES_MODEL_DIR / "MODEL_CARD.md").read_text()
    assert meta["command"] in card and "--meddocan-repeats 1" in meta["command"] and "lockbox" in card


def test_when_notes_are_routed_then_each_gets_exactly_its_routes_model_alone(routed: Any) -> None:
    texts = [SPANISH[0], ENGLISH[0], SPANISH[1], ENGLISH[1]]
    out = routed.process_batch(_notes(texts))
    es_alone = _ner((), model_dir=str(ES_MODEL_DIR)).process_batch(_notes(SPANISH))
    en_alone = _ner(()).process_batch(_notes(ENGLISH))
    assert [_spans(n) for n in out] == [_spans(es_alone[0]), _spans(en_alone[0]), _spans(es_alone[1]),
                                       _spans(en_alone[1])]
    assert _spans(es_alone[0]) != _spans(_ner(()).process_batch(_notes(SPANISH[:1]))[0])  # two models, two answers
    assert routed.model_id.startswith("deid-minilm-") and "+es:deid-minilm-es-" in routed.model_id


def test_when_a_routed_language_has_no_model_then_config_error() -> None:
    with pytest.raises(ConfigError, match="no model for the routed language 'de'"):
        _ner(("de",))


def _without_embeddings(dest: Path, digest: str | None = None) -> Path:
    """The shipped model as a folder without its word-piece embeddings and tokenizer (their hash instead)."""
    from safetensors.torch import load_file, save_file

    dest.mkdir(parents=True, exist_ok=True)
    tensors = load_file(str(DEFAULT_MODEL_DIR / "model.safetensors"))
    embed = tensors.pop(WORD_EMBEDDINGS)
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    for name in ("config.json", "deidstream_ner.json"):
        shutil.copy(DEFAULT_MODEL_DIR / name, dest / name)
    (dest / SHARED_EMBEDDINGS_FILE).write_text(digest or embeddings_sha256(embed))
    return dest


def test_when_a_folder_shares_the_shipped_embeddings_then_it_predicts_as_the_shipped_model(tmp_path: Path) -> None:
    folder = _without_embeddings(tmp_path / "shared")
    texts = ENGLISH + SPANISH
    for quantize in (True, False):
        a, b = load_model(str(DEFAULT_MODEL_DIR), "cpu", quantize), load_model(str(folder), "cpu", quantize)
        for x, y in zip(predict(a, texts), predict(b, texts), strict=True):
            assert np.array_equal(x.offsets, y.offsets) and np.array_equal(x.probs, y.probs)


def test_when_a_folder_was_trained_on_other_embeddings_then_config_error(tmp_path: Path) -> None:
    folder = _without_embeddings(tmp_path / "other", digest="0" * 64)
    with pytest.raises(ConfigError, match="other word-piece embeddings"):
        load_model(str(folder), "cpu", False)
