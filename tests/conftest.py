"""Shared fixtures. Derived vocabularies are cached in DEID_CACHE_DIR (default ~/.cache/deidstream)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside the checkout (it holds the licensed sample data)")
    return SHARED
