"""Where the tests' files are: the checkout, the test data, and ``../shared`` beside the checkout."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
DATA = TESTS / "data"
SHARED = REPO.parent / "shared"
