"""Medical vocabulary: medical terms in text, with concept ids, for recovery and the CIR metrics.

This module is the runtime side and the public API: ``MedicalVocabulary`` (matching),
``medical_vocabulary()`` (loaded once per process from a pickle under the cache folder, keyed by
``vocabulary_version()``; built and written atomically on first use, older versions removed) and
``medical_syntax_spans``. Matching is case-insensitive on word boundaries (Aho-Corasick), except short
ALL-CAPS curated abbreviations ("NAD", "PT"), which match as written or in capitals only. Terms marked
``ambiguous`` are also person names or places: callers should only trust them with medical context.

The other ideas live in their own modules, and every name below stays importable from here:

- ``dictionaries.medical_build``: the sources (ICD-10-CM, ICD-10-PCS, drugs, HPO, the curated list),
  the filters, the term normalisation and ``build_vocabulary_data``. ``vocabulary_version()`` hashes
  the source of every module in ``BUILDER_MODULES``, so a changed builder never serves a stale cache.
- ``dictionaries.medical_syntax``: regexes for well-formed medical syntax, declared as data
  (``SYNTAX_PATTERNS``): HGVS variants, rsIDs, doses, vitals, scores, schedule times, labs, levels.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from dictionaries import cache, medical_build
from dictionaries.medical_build import (
    BUILD_VERSION,
    COMMON_ZIPF,
    CURATED_FILE,
    GENE_WORD_ZIPF,
    MAX_CHARS,
    MAX_WORDS,
    MIN_CHARS,
    SOURCE_PACKAGES,
    build_vocabulary_data,
    make_automaton,
    normalize_term,
    normalize_text,
    read_curated,
)
from dictionaries.medical_syntax import SYNTAX_PATTERNS, SyntaxPattern, gene_spans, syntax_spans

__all__ = [
    "BUILDER_MODULES", "BUILD_VERSION", "COMMON_ZIPF", "CURATED_FILE", "GENE_WORD_ZIPF", "MAX_CHARS", "MAX_WORDS",
    "MIN_CHARS", "SYNTAX_PATTERNS", "MedicalMatch", "MedicalVocabulary", "SyntaxPattern", "TermInfo",
    "build_vocabulary_data", "gene_spans", "medical_syntax_spans", "medical_vocabulary", "normalize_term",
    "read_curated", "vocabulary_version",
]

logger = logging.getLogger(__name__)

#: Modules whose code shapes the built (cached) data: their source is part of ``vocabulary_version()``.
BUILDER_MODULES: tuple[ModuleType, ...] = (medical_build,)


@dataclass(frozen=True, slots=True)
class MedicalMatch:
    """A medical term found in text: half-open ``[start, end)`` into the text given to ``find``.

    ``kind``: the curated category ("sign", "scale", "device", "ehr", "abbrev", "drug-brand", ...) for
    curated terms, else "drug", "disease" (ICD-10-CM), "phenotype" (HPO), "procedure" (ICD-10-PCS) or
    "term" (other index terms), by that priority. ``concept_ids``: every source's concept, curated first.
    """

    start: int
    end: int
    term_norm: str
    concept_ids: tuple[str, ...]
    ambiguous: bool
    kind: str


@dataclass(frozen=True, slots=True)
class TermInfo:
    """One normalised term of the vocabulary."""

    term_norm: str
    concept_ids: tuple[str, ...]
    ambiguous: bool
    kind: str
    case_sensitive: bool = False
    surface: str = ""


# ---------------------------------------------------------------------------------------------
# the vocabulary

#: How many whole-text scans a thread keeps, and how many characters of text at most (:meth:`MedicalVocabulary.scan`)
KEPT_SCANS = (256, 1_000_000)


class _KeptScans(threading.local):
    """One thread's latest whole-text scans: text -> (its matches, whether its normalisation kept one character per
    character), oldest first, and the characters of the texts kept."""

    def __init__(self) -> None:
        self.scans: OrderedDict[str, tuple[tuple[MedicalMatch, ...], bool]] = OrderedDict()
        self.chars = 0


class MedicalVocabulary:
    """Medical terms with concept ids; ``find`` scans text in one Aho-Corasick pass.

    ``rows`` are ``TermInfo`` fields as tuples (cheap to load); ``automaton`` maps each normalised
    term to its row index (built here when not given, e.g. from a cache written without it).
    """

    def __init__(self, version: str, rows: list[tuple[Any, ...]], genes: frozenset[str],
                 chapters: dict[str, str], automaton: Any = None) -> None:
        self.version = version
        self.genes = genes
        self.chapters = chapters
        self._rows = rows
        self._index: dict[str, int] | None = None
        if automaton is None:
            automaton = make_automaton(rows)
        self._auto = automaton
        #: per thread, the latest whole-text scans (:meth:`scan`): recovery, decide and metrics each scan the notes of a
        #: batch, one step after the other
        self._kept = _KeptScans()

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def terms(self) -> list[TermInfo]:
        """All entries (built on demand: 100k+ objects)."""
        return [TermInfo(*row) for row in self._rows]

    def get(self, term: str) -> TermInfo | None:
        """The entry for ``term`` (normalised; a trailing possessive or punctuation is ignored)."""
        if self._index is None:
            self._index = {row[0]: i for i, row in enumerate(self._rows)}
        norm = normalize_term(term).strip(" .,;:!?\"()[]")
        i = self._index.get(norm)
        if i is None and norm.endswith("'s"):
            i = self._index.get(norm[:-2])
        return None if i is None else TermInfo(*self._rows[i])

    def is_medical(self, term: str) -> bool:
        """True when ``term`` is a vocabulary term (ambiguous ones included) or well-formed medical
        syntax as a whole (``g.7578395G>C``, ``5 mg``)."""
        if self.get(term) is not None:
            return True
        stripped = term.strip()
        return any(s == 0 and e == len(stripped) for s, e, _ in medical_syntax_spans(stripped, self.genes))

    def scan(self, text: str, start: int = 0, end: int | None = None) -> list[MedicalMatch]:
        """All matches on word boundaries, overlaps included, sorted by (start, -end).

        ``start``/``end`` limit the scan to ``text[start:end]``; offsets stay into ``text``.

        This thread's latest whole-text scans are kept (:data:`KEPT_SCANS`): a text scanned whole again gets its
        matches, and a part of it whose edges touch whitespace (or the text's ends), as ``processors.shapes.windows``
        cuts them, gets the kept matches that lie inside the part. Those are exactly the part's own matches: a match
        and its word-boundary test see only its characters and their two neighbours, the part's neighbours are
        whitespace either way, and normalising works character by character there (the whitespace runs it shortens
        lie at a part's edges or inside both scans alike; where lower-casing changed the text's length, no part is
        answered from the kept scan).
        """
        stop = len(text) if end is None else min(end, len(text))
        start = max(0, start)
        whole = start == 0 and stop == len(text)
        kept = self._kept.scans
        hit = kept.get(text)
        if hit is not None:
            if whole:
                return list(hit[0])
            if hit[1] and (start == 0 or text[start - 1].isspace()) and (stop == len(text) or text[stop].isspace()):
                return [m for m in hit[0] if start <= m.start and m.end <= stop]
        out = self._scan(text, start, stop)
        if whole and len(text) <= KEPT_SCANS[1]:
            kept[text] = (tuple(out), text.isascii() or len(text.lower()) == len(text))
            self._kept.chars += len(text)
            while len(kept) > KEPT_SCANS[0] or self._kept.chars > KEPT_SCANS[1]:
                self._kept.chars -= len(kept.popitem(last=False)[0])
        return out

    def _scan(self, text: str, start: int, stop: int) -> list[MedicalMatch]:
        region = text[start:stop] if start or stop != len(text) else text
        norm, index = normalize_text(region)
        before = text[start - 1] if start > 0 else " "
        after = text[stop] if stop < len(text) else " "
        rows = self._rows
        n = len(norm)
        out: list[MedicalMatch] = []
        for end_i, tid in self._auto.iter(norm):
            term_norm, concept_ids, ambiguous, kind, case_sensitive, surface = rows[tid]
            start_i = end_i - len(term_norm) + 1
            if norm[start_i].isalnum() and (norm[start_i - 1] if start_i > 0 else before).isalnum():
                continue
            if norm[end_i].isalnum() and (norm[end_i + 1] if end_i + 1 < n else after).isalnum():
                continue
            if index is None:
                s, e = start_i, end_i + 1
            else:
                s, e = index[start_i], index[end_i] + 1
            if case_sensitive:
                written = region[s:e]
                if written != surface and written != surface.upper():
                    continue
            out.append(MedicalMatch(s + start, e + start, term_norm, concept_ids, ambiguous, kind))
        out.sort(key=lambda m: (m.start, -m.end))
        return out

    def find(self, text: str) -> list[MedicalMatch]:
        """Longest non-overlapping matches, left to right (offsets into ``text``)."""
        chosen: list[MedicalMatch] = []
        last_end = -1
        for m in self.scan(text):
            if m.start >= last_end:
                chosen.append(m)
                last_end = m.end
        return chosen

    def syntax_spans(self, text: str) -> list[tuple[int, int, str]]:
        """``medical_syntax_spans`` with this vocabulary's gene symbols."""
        return medical_syntax_spans(text, self.genes)

    def chapter(self, concept_id: str) -> str | None:
        """ICD-10-CM chapter number ("9") of an ``ICD10:<category>`` concept id, else None."""
        if not concept_id.startswith("ICD10:"):
            return None
        return self.chapters.get(concept_id[6:])


_LOCK = threading.Lock()
_LOADED: dict[str, MedicalVocabulary] = {}


@functools.cache
def vocabulary_version() -> str:
    """Hash of what the vocabulary is built from: builder code, thresholds, curated list, source
    packages and the shared name/place vocabularies' version."""
    from dictionaries import vocab

    h = hashlib.sha256()
    h.update(vocab.vocab_version().encode())
    h.update(f"{BUILD_VERSION}|{COMMON_ZIPF}|{GENE_WORD_ZIPF}|{MIN_CHARS}|"
             f"{MAX_CHARS}|{MAX_WORDS}".encode())
    h.update(CURATED_FILE.read_bytes())
    for module in BUILDER_MODULES:  # the builder itself: a changed filter never serves a stale cache
        h.update(Path(str(module.__file__)).read_bytes())
    for pkg in SOURCE_PACKAGES:
        try:
            h.update(f"{pkg}={metadata.version(pkg)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{pkg}=missing".encode())
    return "med-" + h.hexdigest()[:12]


def medical_vocabulary(cache_dir: Path | None = None) -> MedicalVocabulary:
    """The medical vocabulary, loaded once per process (built and cached on first use).

    ``cache_dir`` overrides ``DEID_CACHE_DIR`` / ``~/.cache/deidstream``.
    """
    version = vocabulary_version()
    vocab = _LOADED.get(version)
    if vocab is not None:
        return vocab
    with _LOCK:
        vocab = _LOADED.get(version)
        if vocab is None:
            vocab = _load_or_build(Path(cache_dir) if cache_dir is not None else cache.cache_dir(), version)
            _LOADED[version] = vocab
    return vocab


def _load_or_build(cache_dir: Path, version: str) -> MedicalVocabulary:
    path = cache_dir / f"medical-{version}.pkl"
    data = cache.read_versioned(path, version, "medical vocabulary")
    if data is not None:
        return _from_data(data)
    logger.info("building medical vocabulary %s (first use; cached afterwards)", version)
    data = build_vocabulary_data(version, cache_dir)
    if cache.write_atomic(path, data):
        for old in cache_dir.glob("medical-med-*.pkl"):  # other versions: 75 MB each, never read again
            if old != path:
                old.unlink(missing_ok=True)
    return _from_data(data)


def _from_data(data: dict[str, Any]) -> MedicalVocabulary:
    return MedicalVocabulary(data["version"], data["terms"], frozenset(data["genes"]), dict(data["chapters"]),
                             data.get("automaton"))


# ---------------------------------------------------------------------------------------------
# medical syntax (the recognisers are in dictionaries.medical_syntax)

def medical_syntax_spans(
    text: str, genes: Iterable[str] | None = None, *, start: int = 0, end: int | None = None
) -> list[tuple[int, int, str]]:
    """Regex-recognised medical syntax as sorted (start, end, kind): HGVS variants, accessions, rsIDs,
    doses and units, vitals, scores, ratios, schedule times not attached to a date, frequencies, labs
    with values, vertebral levels, heart sounds, catalog drug codes, and gene symbols from ``genes``
    (default: the medical vocabulary's, which loads it). See ``dictionaries.medical_syntax``.

    ``start``/``end`` limit the scan to ``text[start:end]`` (offsets stay into ``text``; look-behinds
    still see what precedes ``start``). A full 1,000-character note costs about 1 ms; the recovery
    step scans only small windows around candidate spans.
    """
    return syntax_spans(text, genes if genes is not None else medical_vocabulary().genes, start=start, end=end)
