"""The test suite's own setup: where the run caches derived data, and what happens when the embedded broker
cannot start."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from paths import REPO

from dictionaries import vocab
from processors.pipeline import BuildContext
from streams.settings import Settings

HOME_CACHE = (Path.home() / ".cache").resolve()


def _under_home_cache(path: Path) -> bool:
    return path.expanduser().resolve().is_relative_to(HOME_CACHE)


def test_when_tests_run_then_the_cache_folder_is_not_the_home_cache(cache_dir: Path) -> None:
    effective = {
        "DEID_CACHE_DIR": Path(os.environ["DEID_CACHE_DIR"]),
        "fixture cache_dir": cache_dir,
        "dictionaries.vocab.cache_dir()": vocab.cache_dir(),
        "BuildContext().cache_dir": BuildContext().cache_dir,
        "Settings().cache_dir": Settings().cache_dir,
    }
    in_home = {name: str(path) for name, path in effective.items() if _under_home_cache(path)}
    assert not in_home, f"tests would write derived vocabularies under {HOME_CACHE}: {in_home}"
    assert len({p.expanduser().resolve() for p in effective.values()}) == 1, effective


def test_when_the_environment_does_not_choose_then_the_cache_is_git_ignored_inside_the_checkout(
    cache_dir: Path,
) -> None:
    if os.environ.get("DEID_CACHE_DIR") != str(REPO / ".cache" / "test-vocab"):
        pytest.skip("DEID_CACHE_DIR was set by the environment")
    assert cache_dir.resolve().is_relative_to(REPO.resolve())
    assert ".cache/" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
