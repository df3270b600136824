"""Shared fixtures. Vocabulary caches go to one temp folder per test session unless DEID_CACHE_DIR is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside the checkout (it holds the licensed sample data)")
    return SHARED
