"""Fixtures shared by the regex step's tests: one test module per recognizer family, ``test_step`` for the
engine and the pipeline step."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from processors.regex.step import RegexDetector
from schemas.labels import Label, Subtype
from schemas.models import Span

#: The ensemble's default threshold for source "regex": what the pipeline will redact.
THRESHOLD = 0.3

#: (substring, label, subtype): a span expected at the substring's offsets (subtype None: not checked).
Expected = tuple[str, Label, Subtype | None]


@pytest.fixture(scope="session")
def threshold() -> float:
    return THRESHOLD


@pytest.fixture(scope="session")
def detector() -> RegexDetector:
    return RegexDetector()


@pytest.fixture(scope="session")
def redacted(detector: RegexDetector) -> Callable[[str], list[Span]]:
    """The spans the pipeline would redact in a text (score at or above the threshold)."""

    def spans(text: str) -> list[Span]:
        return [s for s in detector.detect(text) if s.score >= THRESHOLD]

    return spans


@pytest.fixture(scope="session")
def assert_tagged(redacted: Callable[[str], list[Span]]) -> Callable[[str, list[Expected]], None]:
    """Each expected substring is redacted with its exact offsets, label, subtype and source "regex"."""

    def check(text: str, expected: list[Expected]) -> None:
        spans = redacted(text)
        for substring, label, subtype in expected:
            start = text.index(substring)
            found = [s for s in spans if (s.start, s.end, s.label) == (start, start + len(substring), label)]
            assert found, f"{substring!r} not tagged {label}: {[(text[s.start:s.end], s.label) for s in spans]}"
            if subtype is not None:
                assert found[0].subtype == subtype
            assert all(s.source == "regex" for s in found)

    return check


@pytest.fixture(scope="session")
def assert_tagged_upper(redacted: Callable[[str], list[Span]]) -> Callable[[str, list[Expected]], None]:
    """The same text in ALL CAPS (nursing style): each expected substring is redacted with the same label."""

    def check(text: str, expected: list[Expected]) -> None:
        upper = text.upper()
        spans = redacted(upper)
        for substring, label, _ in expected:
            start = upper.index(substring.upper())
            assert any((s.start, s.end, s.label) == (start, start + len(substring), label) for s in spans), substring

    return check


@pytest.fixture(scope="session")
def assert_not_redacted(redacted: Callable[[str], list[Span]]) -> Callable[[str], None]:
    """Nothing in the text is redacted."""

    def check(text: str) -> None:
        spans = redacted(text)
        assert spans == [], [(text[s.start:s.end], s.label.value, s.score) for s in spans]

    return check
