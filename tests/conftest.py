"""Shared fixtures, and the cache folder of the whole test run.

Derived vocabularies (name/place lists, the medical vocabulary, lexicon automata) are cached in
``DEID_CACHE_DIR``. Unless the environment sets it, the tests use ``<checkout>/.cache/test-vocab``
(git-ignored): built once per checkout, reused by later runs, and never ``~/.cache/deidstream``.
This module is imported before any test module, so the variable is set before the project is imported
(worker and CLI subprocesses inherit it). Tests that build vocabularies into their own tmp folder still do.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from paths import REPO, SHARED

TEST_CACHE_DIR = REPO / ".cache" / "test-vocab"

if not os.environ.get("DEID_CACHE_DIR"):
    os.environ["DEID_CACHE_DIR"] = str(TEST_CACHE_DIR)


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    """os.environ after each test is what it was before it (monkeypatch undoes its own changes; this also
    undoes what code run in-process sets, e.g. the CLI's ``--config`` sets DEID_CONFIG_FILE)."""
    saved = os.environ.copy()
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    """The run's cache folder (``DEID_CACHE_DIR``)."""
    return Path(os.environ["DEID_CACHE_DIR"]).expanduser()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside the checkout (it holds the licensed sample data)")
    return SHARED
