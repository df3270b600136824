"""regex step, email addresses, URLs and IP addresses."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from processors.regex.step import RegexDetector
from schemas.labels import Label, Subtype

Expected = tuple[str, Label, Subtype | None]

E, U, IP = Label.EMAIL, Label.URL, Label.IP

POSITIVE: list[tuple[str, list[Expected]]] = [
    # email, URL, IP
    ("Email jjohnson@gmail.com for records.", [("jjohnson@gmail.com", E, None)]),
    ("Portal: https://mychart.example.org/login?id=5.", [("https://mychart.example.org/login?id=5", U, None)]),
    ("See www.example.com/patients.", [("www.example.com/patients", U, None)]),
    ("Info at example.org today.", [("example.org", U, None)]),
    ("Device IP 192.168.1.10 offline.", [("192.168.1.10", IP, None)]),
    ("Host 2001:db8::1 failed.", [("2001:db8::1", IP, None)]),
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_when_web_address_then_tagged_with_exact_offsets(
    assert_tagged: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged(text, expected)


@pytest.mark.parametrize(("text", "url"), [
    ("Heritage Oncology Clinic\n5885 Maple Road\nTel 293-750-8151\nsee heritagemd.com/", "heritagemd.com/"),
    ("Summit Oncology Associates\nshameka_zavodny@summitmd.com", None),  # an e-mail's domain is no URL
    ("Visit\nexample.org today", "example.org"),
])
def test_when_a_bare_domain_ends_a_block_then_the_url_does_not_swallow_the_lines_before(
    detector: RegexDetector, text: str, url: str | None
) -> None:
    urls = [text[s.start:s.end] for s in detector.detect(text) if s.label == U]
    assert urls == ([url] if url else [])
