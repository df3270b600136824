"""The recognizer machinery every family builds on: regex flags, ``ContextWords``, ``ClinicalPattern``,
``Hit`` and the ``ClinicalRecognizer`` base (a Presidio ``PatternRecognizer`` with clinical checks)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import regex
from presidio_analyzer import Pattern, PatternRecognizer

from schemas.labels import Label, Subtype

#: Flags of the recognizers' patterns (compiled with the ``regex`` module); CASED for capitalised-word shapes.
REGEX_FLAGS = regex.IGNORECASE | regex.MULTILINE
REGEX_CASED = regex.MULTILINE
# Small helper regexes run on short windows at one position: the stdlib engine has less per-call overhead.
RE_FLAGS = re.IGNORECASE | re.MULTILINE
RE_CASED = re.MULTILINE


_WORD = re.compile(r"[a-z0-9~]+(?:[/'.:&-][a-z0-9]+)*\.?|#")


class ContextWords:
    """Context phrases (lower case, single spaces) looked up among the words left of a position: a few set
    lookups, where a regex alternation of ~100 words would be tried at every character of the window."""

    def __init__(self, phrases: Iterable[str]) -> None:
        self.phrases = frozenset(phrases)
        #: last word -> the multi-word phrases ending with it, longest first
        self.multi: dict[str, list[tuple[int, str]]] = {}
        for p in sorted(self.phrases, key=lambda x: -x.count(" ")):
            if " " in p:
                self.multi.setdefault(p.rsplit(" ", 1)[1], []).append((p.count(" ") + 1, p))

    def last_before(
        self, text: str, start: int, window: int, skip: frozenset[str] = frozenset()
    ) -> str | None:
        """The context phrase closest to the left of ``start`` within ``window`` chars (ignoring the phrases in
        ``skip``), or None."""
        lo = max(0, start - window)
        while lo > 0 and text[lo - 1].isalnum():
            lo -= 1  # never start inside a word ("admissi|on")
        words: list[str] = _WORD.findall(text[lo:start].lower())
        for i in range(len(words) - 1, -1, -1):
            word = words[i]
            if word[-1] == "." and word not in self.phrases:
                word = word[:-1]
            for n, phrase in self.multi.get(word, ()):
                if i + 1 >= n and " ".join(words[i + 1 - n:i]) + " " + word == phrase and phrase not in skip:
                    return phrase
            if word in self.phrases and word not in skip:
                return word
        return None


class ClinicalPattern(Pattern):
    """A Presidio ``Pattern`` plus what a clinical recognizer needs.

    ``group``: the named group that becomes the span (default: group "v" when the regex has one, else the whole
    match), so context words can be part of the regex without being part of the span. ``context_score``: the
    score when a CONTEXT word is found left of the match; ``needs_context``: drop the match without one.
    ``kind``: a tag the recognizer's ``check`` dispatches on. ``trigger``: lower-case substrings one of which must
    occur in the text for the pattern to run at all; ``trigger_re``: a regex that must match the lower-cased
    text (keep it literal-led: these are cheap skips of whole scans). ``flags``: overrides the recognizer's flags.
    """

    def __init__(
        self, name: str, pattern: str, score: float, *, context_score: float | None = None,
        needs_context: bool = False, kind: str = "", group: str | None = None,
        trigger: tuple[str, ...] = (), trigger_re: str | None = None, flags: int | None = None,
    ) -> None:
        super().__init__(name, pattern, score)
        self.context_score = context_score
        self.needs_context = needs_context
        self.kind = kind
        self.group = group
        self.trigger = trigger
        self.trigger_re = re.compile(trigger_re) if trigger_re else None
        self.flags = flags


@dataclass(frozen=True, slots=True)
class Hit:
    """A raw detection before it becomes a ``Span``."""

    start: int
    end: int
    label: Label
    subtype: Subtype | None
    score: float


class ClinicalRecognizer(PatternRecognizer):
    """A Presidio ``PatternRecognizer`` mapped to our label/subtype, with cheap context scoring and clinical
    checks that may look at the text around a match. Subclasses are mostly declared data."""

    ENTITY: ClassVar[str] = "PHI"
    LABEL: ClassVar[Label] = Label.OTHER
    SUBTYPE: ClassVar[Subtype | None] = None
    PATTERNS: list[Pattern] = []
    #: Context words/phrases (lower case) looked up in the CONTEXT_WINDOW chars left of a match.
    CONTEXT: list[str] = []
    CONTEXT_WINDOW: ClassVar[int] = 32
    FLAGS: ClassVar[int] = REGEX_FLAGS

    def __init__(self) -> None:
        # Explicit base call: some subclasses also inherit a Presidio predefined recognizer (for its
        # validate_result / invalidate_result) whose __init__ takes other arguments.
        PatternRecognizer.__init__(
            self, supported_entity=self.ENTITY, name=type(self).__name__, patterns=list(self.PATTERNS),
            context=list(self.CONTEXT), global_regex_flags=self.FLAGS,
        )
        rules = [p if isinstance(p, ClinicalPattern) else ClinicalPattern(p.name, p.regex, p.score)
                 for p in self.PATTERNS]
        self._compiled = [(p, regex.compile(p.regex, self.FLAGS if p.flags is None else p.flags)) for p in rules]
        self._context = ContextWords(self.CONTEXT) if self.CONTEXT else None

    def find(self, text: str, lower: str | None = None) -> Iterator[Hit]:
        """All hits of this recognizer in ``text`` (``lower``: ``text.lower()``, shared across recognizers)."""
        lower = lower_keep_offsets(text) if lower is None else lower
        for pattern, compiled in self._compiled:
            if pattern.trigger and not any(t in lower for t in pattern.trigger):
                continue
            if pattern.trigger_re is not None and pattern.trigger_re.search(lower) is None:
                continue
            for match in compiled.finditer(text):
                yield from self.check(text, match, pattern)

    # -- hooks -------------------------------------------------------------------------------------------------

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        """Turn a regex match into hits. Default: Presidio's validate/invalidate hooks plus context scoring."""
        start, end = self.span_of(match, pattern)
        if end <= start:
            return
        score = self.presidio_score(text[start:end], pattern.score)
        if score is None:
            return
        context = self.context_before(text, start)
        if context is not None:
            score = max(score, pattern.context_score or score)
        elif pattern.needs_context:
            return
        yield Hit(start, end, self.LABEL, self.subtype_for(context), score)

    def presidio_score(self, value: str, score: float) -> float | None:
        """Presidio's ``validate_result`` (True: sure, False: drop) and ``invalidate_result`` (drop)."""
        valid = self.validate_result(value)
        if valid is False or self.invalidate_result(value):
            return None
        return max(score, 0.9) if valid else score

    def subtype_for(self, context: str | None) -> Subtype | None:
        return self.SUBTYPE

    # -- helpers -----------------------------------------------------------------------------------------------

    @staticmethod
    def span_of(match: Any, pattern: ClinicalPattern) -> tuple[int, int]:
        group = pattern.group or ("v" if "v" in match.re.groupindex else None)
        if group is None:
            return int(match.start()), int(match.end())
        return int(match.start(group)), int(match.end(group))

    def context_before(self, text: str, start: int, window: int | None = None) -> str | None:
        """The context word closest to the left of ``start`` (lower case), or None."""
        if self._context is None:
            return None
        return self._context.last_before(text, start, window or self.CONTEXT_WINDOW)


def lower_keep_offsets(text: str) -> str:
    """``text.lower()`` with the same length (a few characters lower-case to two; offsets must not move)."""
    lower = text.lower()
    if len(lower) == len(text):
        return lower
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
