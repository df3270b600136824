"""Text features shared by the name and identifier matchers: words with offsets and case, line
context, and the cue words around names (titles, family and provider cues)."""

from __future__ import annotations

import bisect
import functools
import itertools
import logging
import re
import unicodedata
from collections.abc import Callable
from typing import Any, TypeVar

import regex

logger = logging.getLogger(__name__)
T = TypeVar("T")

TOKEN = re.compile(r"[^\W_]+")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")
_ADDRESS_LIKE = re.compile(r"[^\s<>()\[\]]+@[^\s<>()\[\]]+|\w+://\S+|www\.\S+")
_DIGIT_RUN = re.compile(r"\d(?:[ ().\-/]{0,2}\d)*")
_NEWLINE = re.compile("\n")
TITLES_DOCTOR = frozenset({"dr", "doctor", "prof", "professor", "dra"})
TITLES_OTHER = frozenset({"mr", "mrs", "ms", "miss", "mx", "mister", "sr", "sra", "srta"})
_ABBREV_DOT = frozenset({"dr", "mr", "mrs", "ms", "st", "prof", "jr", "sr", "mt", "ft", "vs", "dra", "sra"})
FAMILY_CUES = frozenset(
    """wife husband spouse son daughter mother father mom dad sister brother sibling aunt uncle niece
    nephew cousin grandson granddaughter grandmother grandfather grandma grandpa partner fiance fiancee
    boyfriend girlfriend friend neighbor caregiver guardian stepson stepdaughter stepmother stepfather""".split()
)
PROVIDER_CUES = frozenset(
    """attending resident fellow intern pcp surgeon nurse rn np pa cardiologist oncologist physician
    provider therapist pharmacist""".split()
)


#: words before a name: personal titles, and role words that often (not always) precede one ("pt Smith",
#: but also "pt weaned")
PERSONAL_TITLES = ("dr", "drs", "mr", "mrs", "ms", "miss", "mx", "prof", "doctor")
#: a nurse's credentials: a curated jargon word before one is a specialty ("Stoma RN", "Ostomy RN"), not a name
NURSE_CREDENTIALS = frozenset({"rn", "lpn"})
_ROLE_WORDS = ("sister", "nurse", "dear", "patient", "pt")


def ends_here(pattern: str, flags: int = 0) -> Any:
    """``pattern``, which can match only at the end of the text it searches (it ends in ``\\Z`` or ``$``), compiled to
    search from the end backwards (the regex module's REVERSE flag): its ``search`` tries the end first, where
    ``re`` tries every start position (the decide step's eight left-context cues: 32.8 -> 12.2 us together). Callers
    ask only whether it matches, which is ``re.compile(pattern, flags).search``'s answer (the flags are ``re``'s;
    tests/unit/dictionaries/test_text.py compares the two on the evaluation notes' left contexts)."""
    return regex.compile(pattern, flags | regex.REVERSE)


def _title_before(words: tuple[str, ...]) -> Any:
    # up to two name parts between the title and the span: a capitalised word or an initial ("Dr. John
    # [[Smith]]", "Mrs. A. [[Lee]]"); a word in capitals is no name part ("PT ADMITTED TO [[OSH]]")
    return ends_here(r"\b(?i:" + "|".join(words) + r")\.?\s+(?:(?:[A-Z][a-z][\w'-]*|[A-Z])\.?\s+){0,2}$")


_TITLE_BEFORE = _title_before(PERSONAL_TITLES)
_ROLE_BEFORE = _title_before(_ROLE_WORDS)
_CREDENTIAL_AFTER = re.compile(
    r"^,?\s*(?:MD|M\.D\.|DO|D\.O\.|RN|NP|PA-C|PhD|DDS|DPM|FNP|APRN|ARNP|CRNA|PharmD|LCSW|MSW|CNM|DNP)\b"
)


#: a run of letters and digits; one with a digit, or a lower-case letter before a capital, has its case fixed
_CASE_WORD = re.compile(r"[^\W_]+")
_FIXED_CASE = re.compile(r"\d|^[a-z]+[A-Z]")
#: a word of letters only, with a lower-case letter, whose case its spelling does not fix: the line is mixed case
_FREE_LOWER = re.compile(r"(?<![^\W_])(?![a-z]+[A-Z])[^\W\d_]*[a-z][^\W\d_]*(?![^\W_])")


#: texts from this length have their line breaks indexed (:func:`line_bounds`): a note without line breaks is one
#: line, and a scan of its line per span made steps quadratic in its length
LONG_LINE = 2048
#: how many long texts (line breaks) / lines of any text (:func:`line_fact`) the memos keep (each entry holds its text)
_MEMO_TEXTS = 8
_MEMO_LINES = 256
#: texts up to this length have the answers of a few span tests memoised per (text, start, end) (:func:`name_context`,
#: ``medical_syntax.measurement_value`` and ``identifier_cue``): the recovery, decide and metrics steps ask them for
#: the same spans of a note, 7 to 15 times over on average. A memo keeps the texts it answered for, so it is bounded
#: in entries (``MEMO_SPANS``) and in the length of the texts it keeps: at worst (each entry another text of the
#: longest length) 32 MiB a memo, about 100 KiB for 1,000-character notes; a batch of 64 such notes fills about 1,600
#: entries, so answers found in one step are still there for the later ones
MEMO_SPAN_CHARS = 8192
MEMO_SPANS = 4096
SpanTest = TypeVar("SpanTest", bound=Callable[..., Any])


def memo_per_span(fn: SpanTest) -> SpanTest:
    """``fn(text, start, end, ...)`` memoised per its arguments (positional) for texts up to ``MEMO_SPAN_CHARS``,
    computed anew for longer ones (see ``MEMO_SPAN_CHARS``)."""
    memo = functools.lru_cache(maxsize=MEMO_SPANS)(fn)

    @functools.wraps(fn)
    def answer(text: str, *args: Any) -> Any:
        return (memo if len(text) <= MEMO_SPAN_CHARS else fn)(text, *args)

    return answer  # type: ignore[return-value]


@functools.lru_cache(maxsize=_MEMO_TEXTS)
def _newlines(text: str) -> list[int]:
    return [m.start() for m in _NEWLINE.finditer(text)]


def line_bounds(text: str, start: int, end: int | None = None) -> tuple[int, int]:
    """Offsets of the line(s) holding ``text[start:end]`` (``end`` defaults to ``start``), newlines excluded."""
    stop = start if end is None else end
    if len(text) < LONG_LINE:
        nl = text.find("\n", stop)
        return text.rfind("\n", 0, start) + 1, nl if nl >= 0 else len(text)
    breaks = _newlines(text)  # a long text: bisect its line breaks (find / rfind scan its lines)
    i = bisect.bisect_left(breaks, start)
    j = bisect.bisect_left(breaks, max(stop, 0))
    return (breaks[i - 1] + 1 if i else 0), (breaks[j] if j < len(breaks) else len(text))


def line_around(text: str, start: int, end: int | None = None) -> str:
    """The line(s) holding ``text[start:end]``, without their newlines."""
    lo, hi = line_bounds(text, start, end)
    return text[lo:hi]


def line_fact(fn: Callable[[str], T], text: str, start: int, end: int | None = None) -> T:
    """``fn`` of the line(s) holding ``text[start:end]`` (``fn(line_around(text, start, end))``), memoised per line:
    asked for every span or word of a line, it is computed once (a 1 MiB note thick with identifiers asks it for tens
    of thousands of spans; the metrics step asks whether a line is in capitals for every capitalised word)."""
    lo, hi = line_bounds(text, start, end)
    return _line_fact(fn, text, lo, hi)  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=_MEMO_LINES)
def _line_fact(fn: Callable[[str], Any], text: str, lo: int, hi: int) -> Any:
    return fn(text[lo:hi])


def is_all_caps(line: str) -> bool:
    """``line`` has letters and none in lower case (ALL-CAPS nursing style: case is no evidence there). Words whose
    case is fixed by their own spelling do not count: those with a digit ("Pao2", "SpO2") and units or measures
    that start in lower case before a capital ("pH", "mEq", "pCO2")."""
    if _FREE_LOWER.search(line):
        return False
    return any(c.isupper() for w in _CASE_WORD.findall(line) if not _FIXED_CASE.search(w) for c in w)


def name_context(text: str, start: int, end: int, *, personal_titles_only: bool = False) -> bool:
    """A title before ("Dr.", "Mrs.", or a role word such as "pt") or a credential after (", MD") marks a
    person's name. ``personal_titles_only``: role words do not count (in nursing notes "pt" precedes verbs
    as often as names). Memoised per span (:func:`memo_per_span`)."""
    return _name_context(text, start, end, personal_titles_only)


@memo_per_span
def _name_context(text: str, start: int, end: int, personal_titles_only: bool) -> bool:
    left = text[max(0, start - 48):start]
    if _TITLE_BEFORE.search(left) or _CREDENTIAL_AFTER.match(text[end:end + 12]):
        return True
    # a role word is followed by a verb as often as by a name ("Pt. weaned", "PT ADMITTED"): it counts
    # before a capitalised word only, in a line that is not all capitals
    return (not personal_titles_only and text[start:start + 1].isupper() and bool(_ROLE_BEFORE.search(left))
            and not line_fact(is_all_caps, text, start, end))


class NoteText:
    """Word tokens of a note with the features both detectors need (computed once per note)."""

    __slots__ = ("text", "starts", "ends", "words", "norm", "nstart", "nend", "_line_starts", "_line_caps",
                 "_runs", "_addr")

    def __init__(self, text: str) -> None:
        self.text = text
        spans = [m.span() for m in TOKEN.finditer(text)]
        self.starts: list[int] = [a for a, _ in spans]
        self.ends: list[int] = [b for _, b in spans]
        self.words: list[str] = [text[a:b].lower() for a, b in spans]
        # " w1 w2 ... " and where each word starts / ends in it
        npos = list(itertools.accumulate((len(w) + 1 for w in self.words), initial=1))
        self.nstart: dict[int, int] = dict(zip(npos, range(len(self.words)), strict=False))
        self.nend: dict[int, int] = dict(zip((p - 1 for p in npos[1:]), range(len(self.words)), strict=False))
        self.norm = " " + " ".join(self.words) + " "
        self._line_starts: list[int] | None = None
        self._line_caps: list[bool] = []
        self._runs: list[tuple[str, list[int]]] | None = None
        self._addr: set[int] | None = None

    def _lines(self) -> list[int]:
        starts = [0] + [m.end() for m in _NEWLINE.finditer(self.text)]
        bounds = [*starts[1:], len(self.text)]
        for a, b in zip(starts, bounds, strict=True):
            line = self.text[a:b]
            upper = len(_UPPER.findall(line))
            self._line_caps.append(upper >= 6 and len(_LOWER.findall(line)) * 10 <= upper)
        self._line_starts = starts
        return starts

    def in_addresses(self) -> set[int]:
        """Words inside an e-mail address or URL."""
        if self._addr is None:
            self._addr = set()
            text = self.text
            if "@" in text or "://" in text or "www." in text:
                for m in _ADDRESS_LIKE.finditer(text):
                    a = bisect.bisect_left(self.starts, m.start())
                    b = bisect.bisect_left(self.starts, m.end())
                    self._addr.update(range(a, b))
        return self._addr

    def digit_runs(self) -> list[tuple[str, list[int]]]:
        """Runs of digits joined by short separators ("(555) 123-4567"): (digits, text offset of each)."""
        if self._runs is None:
            runs = []
            for m in _DIGIT_RUN.finditer(self.text):
                pos = [m.start() + k for k, c in enumerate(m.group()) if c.isdigit()]
                runs.append(("".join(self.text[p] for p in pos), pos))
            self._runs = runs
        return self._runs

    def __len__(self) -> int:
        return len(self.words)

    def surface(self, i: int) -> str:
        return self.text[self.starts[i]:self.ends[i]]

    def is_title(self, i: int) -> bool:
        s = self.surface(i)
        return s[:1].isupper() and not (len(s) > 1 and s.isupper())

    def is_caps(self, i: int) -> bool:
        s = self.surface(i)
        return len(s) > 1 and s.isupper()

    def is_lower(self, i: int) -> bool:
        return self.surface(i).islower()

    def is_cap(self, i: int) -> bool:
        """Title-case or ALL-CAPS (a one-letter word: upper case)."""
        return self.surface(i)[:1].isupper()

    def caps_line(self, i: int) -> bool:
        starts = self._line_starts if self._line_starts is not None else self._lines()
        return self._line_caps[bisect.bisect_right(starts, self.starts[i]) - 1]

    def gap(self, i: int) -> str:
        """Text between word i-1 and word i (from the start of the text for i == 0)."""
        return self.text[(self.ends[i - 1] if i > 0 else 0):self.starts[i]]

    def adjacent(self, i: int, j: int) -> bool:
        """Words i < j are separated by one or two blanks (after an initial: its dot too)."""
        g = self.text[self.ends[i]:self.starts[j]]
        if len(self.words[i]) == 1 and g[:1] == ".":
            g = g[1:]
        return 0 < len(g) <= 2 and (g == " " or g == "  " or g == "\t")

    def heading(self, i: int) -> bool:
        """Word i is followed by a colon ("Edema:")."""
        return self.text[self.ends[i]:self.ends[i] + 2].lstrip(" ")[:1] == ":"

    def sentence_start(self, i: int) -> bool:
        if i == 0:
            return True
        g = self.gap(i)
        if "\n" in g:
            return True
        s = g.strip()
        if not s:
            return False
        if s[-1] in "!?:;•*-":
            return True
        if s[-1] == ".":
            prev = self.words[i - 1]
            return not (prev in _ABBREV_DOT or (len(prev) == 1 and prev.isalpha()))
        return False


def fold_accents(s: str) -> str:
    """``s`` without its combining marks ("février" -> "fevrier", "Jänner" -> "Janner"). (The medical vocabulary's
    builder keeps its own copy: its source is part of the derived cache's version.)"""
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))
