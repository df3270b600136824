"""Email addresses, URLs and IP addresses."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from presidio_analyzer import Pattern
from presidio_analyzer.predefined_recognizers import EmailRecognizer, IpRecognizer

from processors.regex.recognizer import RE_FLAGS, ClinicalPattern, ClinicalRecognizer, Hit
from schemas.labels import Label


@functools.cache
def _tld_extractor() -> Any:
    """tldextract with its bundled suffix list: the default extractor fetches the list from the network."""
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@functools.lru_cache(maxsize=4096)
def _has_public_suffix(domain: str) -> bool:
    return bool(_tld_extractor()(domain).fqdn)


_EMAIL_LOCAL = re.compile(r"(?<![\w.%+'-])[\w%+'-](?:[\w.%+'-]{0,62}[\w%+'-])?$")


class EmailIdRecognizer(ClinicalRecognizer, EmailRecognizer):
    """Email addresses: anchored on "@"; the domain is validated offline (Presidio's check, bundled TLD list)."""

    ENTITY = "EMAIL_ADDRESS"
    LABEL = Label.EMAIL
    PATTERNS: list[Pattern] = [  # anchored on "@"; check() grows the local part to the left
        ClinicalPattern("email domain", r"@\w+(?:-+\w+)*(?:\.\w+(?:-+\w+)*)+\b", 0.95, trigger=("@",)),
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        local = _EMAIL_LOCAL.search(text, max(0, match.start() - 64), match.start())
        if local is None:
            return
        if self.validate_result(match.group(0)[1:]):
            yield Hit(int(local.start()), int(match.end()), Label.EMAIL, None, pattern.score)

    def validate_result(self, pattern_text: str) -> bool:
        return _has_public_suffix(pattern_text.rpartition("@")[2].lower())


_TLDS = (
    "com|org|net|edu|gov|mil|int|io|ai|info|biz|health|care|clinic|hospital|app|dev|us|uk|ca|au|de|fr|nl|"
    "ch|se|es|be|dk|at|cz|pl|pt|br|mx|jp|cn|in|ru|eu|nz|ie|il|za|kr|sg|hk|tw|fi|gr|hu|ro|ee|si|cy|lu"
)
#: Bare-domain TLDs that are not also words or clinical abbreviations ("p.o", "d/c.in"); others need a path.
_TLDS_BARE_OK = frozenset({"com", "org", "net", "edu", "gov", "mil", "io", "info", "biz", "health", "uk", "ca",
                           "au", "de", "fr", "nl", "ch", "se", "es", "br", "mx", "jp", "cn", "ru", "eu", "nz", "za",
                           "cz", "dk", "gr", "hu", "ro", "ee", "si", "cy", "lu", "fi", "ie", "kr", "sg", "hk",
                           "tw", "pl", "care", "clinic", "hospital", "app", "dev"})
#: the domain's labels left of the TLD, ending right at it (``\Z``: with RE_FLAGS' MULTILINE a ``$`` also matched a
#: word at the end of an earlier line, and the URL swallowed the lines between: "Clinic\n5885 Maple Road\n...\nx.com")
_DOMAIN_LEFT = re.compile(r"(?<![\w@./-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}"
                             r"[a-z0-9])?\Z", RE_FLAGS)
_URL_PATH = re.compile(r"(?::\d{2,5})?(?:/[^\s<>\"'()\[\]{}]*)?", RE_FLAGS)


class UrlRecognizer(ClinicalRecognizer):
    """URLs: with a scheme, with www., or bare domains on common TLDs (never the domain of an e-mail)."""

    ENTITY = "URL"
    LABEL = Label.URL
    PATTERNS: list[Pattern] = [
        ClinicalPattern("scheme url", r"\b(?:https?|s?ftp)://[^\s<>\"'()\[\]{}]+", 0.9, trigger=("://",)),
        ClinicalPattern("www url", r"(?<![\w@./-])www\d{0,3}\.[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:/[^\s<>\"'()]*)?", 0.9,
                        trigger=("www",)),
        ClinicalPattern(  # anchored on ".com" etc.; check() grows the domain to the left and the path to the right
            "bare domain", r"(?<=[a-z0-9])\.(?P<tld>" + _TLDS + r")\b(?!@|\.\w|-)", 0.6, kind="bare"),
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        start, end = int(match.start()), int(match.end())
        if pattern.kind == "bare":
            left = _DOMAIN_LEFT.search(text, max(0, start - 200), start)
            if left is None:
                return
            first = left.group(0).split(".")[0]
            path = _URL_PATH.match(text, end)
            end = int(path.end()) if path is not None else end
            tld = match.group("tld").lower()
            if (tld not in _TLDS_BARE_OK and end == match.end()) or len(first) < 2 or first.isdigit():
                return
            start = int(left.start())
        while end > start and text[end - 1] in ".,;:!?'\"":
            end -= 1  # trailing sentence punctuation is not part of the URL
        yield Hit(start, end, Label.URL, None, pattern.score)


_VERSION_BEFORE = re.compile(r"\bv(?:ersion)?[ \t]*$", RE_FLAGS)


class IpIdRecognizer(ClinicalRecognizer, IpRecognizer):
    """IPv4 / IPv6 addresses: Presidio's patterns and its ``ipaddress`` invalidation."""

    ENTITY = "IP_ADDRESS"
    LABEL = Label.IP
    CONTEXT = ["ip", "ipv4", "ipv6", "address", "host", "server"]
    PATTERNS: list[Pattern] = [
        ClinicalPattern(p.name, p.regex, 0.7, context_score=0.95,
                        trigger_re=r"\.\d{1,3}\.\d{1,3}\." if p.name == "IPv4" else r":[0-9a-f]{0,4}:")
        for p in IpRecognizer.PATTERNS if p.score >= 0.5
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        if pattern.name == "IPv4" and _VERSION_BEFORE.search(text, max(0, match.start() - 9), match.start()):
            return  # software version "v1.2.3.4"
        yield from super().check(text, match, pattern)
