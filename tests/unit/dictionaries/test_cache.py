"""dictionaries.cache: the one cache folder and the one atomic writer."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from dictionaries import cache


def test_when_env_is_set_then_it_is_the_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DEID_CACHE_DIR", str(tmp_path / "c"))
    assert cache.cache_dir() == tmp_path / "c"


def test_when_env_is_unset_then_the_home_cache_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEID_CACHE_DIR", raising=False)
    assert cache.cache_dir() == Path.home() / ".cache" / "deidstream"


def test_when_overridden_then_the_override_wins_until_reset(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DEID_CACHE_DIR", str(tmp_path / "env"))
    monkeypatch.setattr(cache, "_override", None)  # restored after the test
    cache.set_cache_dir(tmp_path / "override")
    assert cache.cache_dir() == tmp_path / "override"
    cache.set_cache_dir(None)
    assert cache.cache_dir() == tmp_path / "env"


def test_when_written_then_the_file_is_complete_readable_by_others_and_no_temp_is_left(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "thing.pkl"
    assert cache.write_atomic(target, {"a": [1, 2, 3]})
    assert pickle.loads(target.read_bytes()) == {"a": [1, 2, 3]}
    assert os.stat(target).st_mode & 0o044 == 0o044
    assert [p.name for p in target.parent.iterdir()] == ["thing.pkl"]


def test_when_the_folder_cannot_be_written_then_it_reports_false_and_leaves_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert cache.write_atomic(blocker / "thing.pkl", [1]) is False
    assert blocker.read_text() == "not a folder"
