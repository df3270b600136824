"""The dictionary step's lexicons: first names, surnames, US hospitals, cities and states, and a hospital's
own lists (source ``"dictionary"``), built once into the cache and matched in one Aho-Corasick pass.

The pass runs over the note's words (lower case, single-spaced), so every hit is word-bounded. Entries
that are common words ("Will", "Green", "Primary Care") are context-only: they are tagged only in a name
pattern ("Dr. Green", "Will Smith", "Green, Will"). Single names are ambiguous, so they score low and
need Title-case or ALL-CAPS; in ALL-CAPS lines (nursing notes) only rare or clearly name-like words count.

Clinical words are context-only too (``dictionaries.jargon``: the curated jargon list, one-word medical
vocabulary terms, words learned from clinical text): wordfreq rates ICU jargon ("wean", "levo", "pacer")
rare, so without this filter they would be single names or cities. They are still names in name evidence
("Dr. Neo Smith", "DR NEO", "wife Levona"); in ALL-CAPS lines case is no evidence, so a lone clinical word
is never a name there, and a contact cue ("PER", "SPOKE WITH", "CALLED", "PAGED") before a listed name
is evidence like a title.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import pickle
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dictionaries import jargon, vocab
from dictionaries.cache import cache_dir, write_atomic
from dictionaries.calendar import MONTH_TOKENS
from dictionaries.institution import InstitutionDictionary
from dictionaries.text import (
    FAMILY_CUES,
    NURSE_CREDENTIALS,
    PROVIDER_CUES,
    TITLES_DOCTOR,
    TITLES_OTHER,
    TOKEN,
    NoteText,
)
from schemas.labels import Label, Subtype
from schemas.models import Span

logger = logging.getLogger(__name__)
DICTIONARY = "dictionary"


#: ALL-CAPS clinical abbreviations that are also names or list entries ("ASA", "TED" hose, "PEG" tube).
CAPS_STOP: frozenset[str] = frozenset(
    """asa mar bid tid qid prn ros pt ot ed er icu ccu micu sicu nicu picu pacu or hr bp rr iv im po npo dnr
    dni cpr ekg ecg cxr ct mri abg cbc bmp cmp inr ptt wbc rbc hgb hct plt na cl ca mg gi gu heent cv resp
    neuro psych ent sob doe cp nad htn dm cad chf copd ckd aki uti dvt pe mi cva tia gerd osa afib vs am pm
    qd qhs hs ac pc sq sc sl ns lr kcl ms mae perrla ted peg mac tee echo les al jo del van von den la le el
    di da de du st mt ft dr mr mrs ms miss md do rn np pa lpn cna ng og ett tpn ppn mom dad bed rm pcp ems
    sat sats ox ivf abx lab labs med meds rx dx hx tx sx fx cc ua ivp gtt cath lap vent trach art line""".split()
)
#: Words that never start or make a name even in a name pattern ("Dr. Office" is rare; "E. Coli").
_PATTERN_STOP: frozenset[str] = frozenset(
    """coli diff fib flutter note notes office on call the of and to in for with at by from or no not is was
    were be been has have had can who which this that these those there here his her their our
    your my its a an as if so please see per re cc pt patient""".split()
)
#: Credentials after a name: "Garcia, PA-C", "June, RN", "Sharp NP".
_CREDENTIALS = frozenset(
    """md do rn np pa pac lpn cnm crna dnp phd pharmd dds dmd od dpm aprn fnp lcsw msw rd dpt otr slp rph
    facs facp facc mph""".split()
)
_LOCATION_PREPS = frozenset({"in", "from", "near", "to", "at", "of"})
#: Contact cues: the listed name after them is someone spoken to or acting ("PER SMITH", "PAGED JONES").
_CONTACT_CUES = frozenset({"per", "called", "paged", "notified", "informed"})
#: Two-word contact cues, by their last word: "SPOKE WITH", "TALKED TO", "SEEN BY".
_CONTACT_PAIRS = {"with": frozenset({"spoke", "spoken", "talked", "met", "discussed"}),
                  "to": frozenset({"spoke", "spoken", "talked"}), "by": frozenset({"seen", "evaluated"})}
#: Titles that are also clinical abbreviations in capitals: MS (mental status, morphine sulfate, multiple
#: sclerosis), MR (mitral regurgitation), SR (sinus rhythm). No clinical word after them is a name.
_CLINICAL_TITLES = frozenset({"ms", "mr", "sr"})
#: a word this frequent in English and in no name list is no name before a credential ("Also MD updated")
_FUNCTION_ZIPF = 5.0
#: credentials of nurses: a word of the curated jargon list before one is a specialty ("Stoma RN", "Ostomy RN"), not
#: a name (surnames that are clinical-text words stay: "Brown, RN", "White RN")
_NURSE = NURSE_CREDENTIALS
#: a word this frequent in English after a lower-case clinical title is no surname ("ms given")
_FREQUENT_ZIPF = 4.0
# kinds of institution-list entries (bit flags)
FIRST, LAST, CITY, STATE, HOSPITAL, COUNTRY, INST = 1, 2, 4, 8, 16, 32, 64
_NAME_KINDS = FIRST | LAST
#: In ALL-CAPS lines a frequent word is a name only if used as a first name this much more than its
#: text frequency implies ("JOHN" 61, "MARY" 197; not "ROSE" 21, "MARK" 35, "FRANK" 47).
CAPS_NAME_RATIO = 50.0
_KEY_LEN_LIMIT = 1 << 12
#: Hospital-name words that carry no identity; a hospital's short form keeps at least two other words.
_GENERIC_ORG = frozenset(
    """hospital hospitals medical center centers ctr med health healthcare system systems regional clinic
    clinics inc llc the campus services institute hosp of and at for foundation""".split()
)


@dataclass(frozen=True, slots=True)
class _Entry:
    """One automaton key's payload. ``standalone``/``context`` are kind masks: a standalone kind may
    be tagged alone; a context kind (a common word) only inside a name or address pattern."""

    n_words: int
    standalone: int
    context: int
    caps_ok: bool  # may be tagged alone inside an ALL-CAPS line
    rare: bool  # rare word (zipf < 3) or strongly name-like: a name even at the start of a sentence
    inst: tuple[tuple[Label, Subtype | None, float], ...] = ()
    clinical: bool = False  # a clinical word (dictionaries.jargon): its name / city kinds are context-only


def _kinds(e: _Entry | None) -> int:
    """Every kind an entry has, standalone or in context (0 for no entry)."""
    return (e.standalone | e.context) if e is not None else 0


@dataclass
class _Lexicon:
    automaton: Any  # key -> int: (entry index << 12) | key length (ints pickle fast; objects do not)
    entries: list[_Entry]
    states: dict[str, str]  # lower-case state name or code -> code
    versions: dict[str, str] = field(default_factory=dict)
    clinical: frozenset[str] = frozenset()  # clinical words, listed or not (dictionaries.jargon)


@dataclass(frozen=True, slots=True)
class LexKey:
    first_names: bool
    surnames: bool
    hospitals: bool
    cities: bool
    states: bool
    countries: bool
    common_word_zipf: float
    caps_zipf: float
    min_name_len: int
    city_min_population: int
    clinical_filter: bool = True


def _norm_key(term: str) -> str:
    words = [w.lower() for w in TOKEN.findall(term)]
    return " " + " ".join(words) + " " if words else ""


def _hospital_aliases(name: str) -> list[str]:
    """The CMS name and its usual short forms ("St Mary's Medical Center" -> "St Mary's", "Saint Mary's")."""
    base = re.sub(r"\s+", " ", name).strip()
    base = re.sub(r",?\s+(INC|LLC|LP|PC|THE)\.?$", "", base, flags=re.I)
    base = re.sub(r"^THE\s+", "", base, flags=re.I)
    out = [base]
    for piece in re.split(r"\s+-\s+|\s*\(|\)", base):
        piece = piece.strip(" -")
        if piece and piece != base:
            out.append(piece)
    cores = []
    for alias in list(out):
        words = alias.split()
        while words and words[-1].lower().strip(",.") in _GENERIC_ORG:
            words.pop()
        core = " ".join(words)
        informative = [w for w in words if w.lower().strip(",.'") not in _GENERIC_ORG and len(w) > 1]
        if core and core != alias and len(informative) >= 2:
            cores.append(core)
        elif core and core != alias and len(words) >= 2 and words[0].lower().strip(".") in ("st", "saint"):
            cores.append(core)  # "St Mary's", "St. Jude"
    out.extend(cores)
    variants = []
    for alias in out:
        if re.match(r"(?i)st\.?\s", alias):
            variants.append(re.sub(r"(?i)^st\.?\s", "Saint ", alias))
        elif re.match(r"(?i)saint\s", alias):
            variants.append(re.sub(r"(?i)^saint\s", "St ", alias))
    out.extend(variants)
    out.extend(a.replace("'S ", "S ").replace("'s ", "s ") for a in list(out) if "'" in a)
    if len(base) >= 50:  # CMS truncates names at 50 characters: the last word may be cut
        out = [a.rsplit(" ", 1)[0] if a.startswith(base[:40]) else a for a in out]
    return out


def _build_lexicon(key: LexKey, cache: Path | None = None) -> _Lexicon:
    b = vocab.load()
    words = jargon.clinical_words(cache) if key.clinical_filter else None
    clinical = words.is_clinical if words is not None else None
    clinical_keys: set[str] = set()
    thr = key.common_word_zipf
    table: dict[str, list[Any]] = {}  # key -> [n_words, standalone, context, caps_ok, rare, inst, clinical]

    def zipf_of(term: str) -> float:
        words = [w.lower() for w in TOKEN.findall(term)]
        return max((b.zipf.get(w, 0.0) if w in b.zipf else vocab.zipf(w)) for w in words) if words else 0.0

    def add(term: str, kind: int, *, common: bool | None = None, inst: tuple[Label, Subtype | None, float] | None = None,
            ) -> None:
        if not term.isascii():  # "Bayamón" is usually typed "Bayamon"
            folded = unicodedata.normalize("NFKD", term).encode("ascii", "ignore").decode()
            if folded and folded != term:
                add(folded, kind, common=common, inst=inst)
        k = _norm_key(term)
        if not k or len(k) - 2 < key.min_name_len:
            return
        is_clinical = (clinical is not None and bool(kind & (FIRST | LAST | CITY)) and k.count(" ") == 2
                       and clinical(k.strip()))
        if is_clinical:
            clinical_keys.add(k)
            common = True  # "wean", "levo", "lumen": a name or city only inside a name or address pattern
        row = table.get(k)
        if row is None:
            n_words = k.count(" ") - 1
            z = zipf_of(term)
            single = n_words == 1
            # in capitals only rare words (4+ letters) or strongly name-like ones: "MARY", not "ROSE"
            strong = single and vocab.name_ratio(term) >= CAPS_NAME_RATIO
            caps_ok = strong or (z < key.caps_zipf and len(k) - 2 >= 4)
            row = [n_words, 0, 0, caps_ok, z < 3.0 or strong, [], False]
            table[k] = row
        if is_clinical:
            row[6] = True
        if common is None:
            common = vocab.is_common_term(term, thr)
        if common:
            row[2] |= kind
        else:
            row[1] |= kind
        if inst is not None:
            row[5].append(inst)

    if key.first_names:
        for name in b.first_names:
            if not vocab.is_function_word(name):
                add(name, FIRST)
    if key.surnames:
        for name in b.surnames:
            if not vocab.is_function_word(name):
                add(name, LAST)
                # the Census list drops apostrophes: "OBRIEN" is written "O'Brien", "DANGELO" "D'Angelo"
                if (name[0] == "O" and len(name) >= 5 and name[1] not in "aeiou") or (
                        name[0] == "D" and len(name) >= 6 and name[1] in "aeiou"):
                    add(name[0] + "'" + name[1:], LAST, common=False)
    if key.cities:
        for city in b.cities:
            if city.population >= key.city_min_population and not vocab.is_function_word(city.name):
                add(city.name, CITY)
    states: dict[str, str] = {}
    if key.states:
        for name, code in vocab.us_states():
            add(name, STATE, common=False)
            states[name.lower()] = code
            states[code.lower()] = code
    if key.countries:
        # proper nouns: "Philippines" (4.3) is frequent, not a common word; Title-case still required
        for name in vocab.countries():
            add(name, COUNTRY, common=False)
        for name in _COUNTRY_ALIASES:
            add(name, COUNTRY, common=False)
    if key.hospitals:
        for h in vocab.hospitals():
            for alias in _hospital_aliases(h.name):
                add(alias, HOSPITAL)
    logger.info("dictionary lexicon: %d name / city entries are clinical words (context-only)",
                len(clinical_keys))
    lex = _make_lexicon(table, states)
    if words is not None:
        lex.clinical = words.known_words() | {k.strip() for k in clinical_keys}
    return lex


def _make_lexicon(table: dict[str, list[Any]], states: dict[str, str]) -> _Lexicon:
    import ahocorasick

    automaton = ahocorasick.Automaton(ahocorasick.STORE_INTS)
    entries: list[_Entry] = []
    entry_ids: dict[_Entry, int] = {}
    for k, (n_words, standalone, context, caps_ok, rare, inst, clinical) in table.items():
        entry = _Entry(n_words, standalone, context, caps_ok, rare, tuple(inst), clinical)
        eid = entry_ids.get(entry)
        if eid is None:
            eid = entry_ids[entry] = len(entries)
            entries.append(entry)
        if len(k) < _KEY_LEN_LIMIT:
            automaton.add_word(k, (eid << 12) | len(k))
    automaton.make_automaton()
    logger.info("dictionary lexicon built: %d keys, %d distinct entries", len(table), len(entries))
    return _Lexicon(automaton, entries, states)


def institution_lexicon(path: str, min_len: int) -> _Lexicon:
    """A small automaton of one institution dictionary (its own, so the big one is shared and cached)."""
    inst_dict = _institution(path)
    table: dict[str, list[Any]] = {}
    for term, tl in inst_dict.entries():
        # the builder already removed common words: the hospital's own terms are all specific
        k = _norm_key(term)
        if not k or len(k) - 2 < min_len:
            continue
        row = table.setdefault(k, [k.count(" ") - 1, INST, 0, True, True, [], False])
        row[5].append((tl.label, tl.subtype, tl.score))
    lex = _make_lexicon(table, {})
    lex.versions[f"institution:{inst_dict.name}"] = inst_dict.version
    return lex
_LEXICONS: dict[LexKey, _Lexicon] = {}
_INSTITUTIONS: dict[str, InstitutionDictionary] = {}


def _institution(path: str) -> InstitutionDictionary:
    resolved = str(Path(path).resolve())
    if resolved not in _INSTITUTIONS:
        _INSTITUTIONS[resolved] = InstitutionDictionary.load(resolved)
    return _INSTITUTIONS[resolved]


def lexicon(key: LexKey, cache: Path | None = None) -> _Lexicon:
    """The lexicon for ``key``: from this process, else from the cache folder, else built (seconds)."""
    lex = _LEXICONS.get(key)
    if lex is not None:
        return lex
    folder = cache if cache is not None else cache_dir()
    digest = hashlib.sha256(repr((vocab.vocab_version(), key, _module_digest())).encode()).hexdigest()[:16]
    path = folder / f"lexicon-{digest}.pkl"
    if path.is_file():
        try:
            with path.open("rb") as fh:
                loaded = pickle.load(fh)
            if isinstance(loaded, _Lexicon):
                lex = loaded
        except Exception as exc:  # torn or foreign file: rebuild
            logger.warning("lexicon cache unreadable (%s); rebuilding", type(exc).__name__)
    if lex is None:
        lex = _build_lexicon(key, folder)
        write_atomic(path, lex)
    _LEXICONS[key] = lex
    return lex


@functools.cache
def _module_digest() -> str:
    # the lexicon depends on the rules in this module and in vocab: a code change must not reuse a cache
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(Path(vocab.__file__).read_bytes())
    h.update(jargon.jargon_version().encode())  # the clinical-word filter: list, rules, medical vocabulary
    return h.hexdigest()[:16]


class Scores(BaseModel):
    model_config = ConfigDict(extra="forbid")
    single_name: float = Field(default=0.6, ge=0, le=1)
    sentence_start: float = Field(default=0.4, ge=0, le=1)
    rare_start: float = Field(default=0.5, ge=0, le=1)
    #: a lone list word in an ALL-CAPS line has no case evidence: below the ensemble's dictionary threshold
    #: (0.5), so it counts only when another detector agrees (on the PhysioNet dev notes, out of fold, such
    #: words alone were 0 identifier tokens for 82 false ones; issue 10, git history)
    caps_name: float = Field(default=0.45, ge=0, le=1)
    #: the same when the pipeline runs no NER step (no other detector can vote for a name)
    caps_name_alone: float = Field(default=0.55, ge=0, le=1)
    name_pattern: float = Field(default=0.9, ge=0, le=1)
    weak_pattern: float = Field(default=0.6, ge=0, le=1)
    hospital: float = Field(default=0.9, ge=0, le=1)
    city: float = Field(default=0.5, ge=0, le=1)
    state: float = Field(default=0.5, ge=0, le=1)
    country: float = Field(default=0.5, ge=0, le=1)
    address: float = Field(default=0.9, ge=0, le=1)
    org_pattern: float = Field(default=0.75, ge=0, le=1)


def _merge(a: _Entry, b: _Entry) -> _Entry:
    return _Entry(a.n_words, a.standalone | b.standalone, a.context | b.context, a.caps_ok or b.caps_ok,
                  a.rare or b.rare, a.inst + b.inst, a.clinical or b.clinical)


_PHRASE_BREAK = frozenset("\n/+:;()")


def _one_phrase(t: NoteText, i: int, j: int) -> bool:
    """Words i..j can be one multi-word entry: no line break, slash, colon or bracket between them, and word i
    not glued to the word before it by a slash or plus ("U/O VERY", "I+O.\n\nSkin" are no "O'Very", "O'Skin")."""
    if t.gap(i)[-1:] in ("/", "+") and i > 0:
        return False
    return not any(_PHRASE_BREAK.intersection(t.text[t.ends[k]:t.starts[k + 1]]) for k in range(i, j))


def find_institution(t: NoteText, lexicons: Sequence[_Lexicon], sc: Scores, patterns: bool, thr: float) -> list[Span]:
    out: list[Span] = []
    n = len(t)
    single: list[_Entry | None] = [None] * n
    multi: list[tuple[int, int, _Entry]] = []
    for lexicon in lexicons:
        entries = lexicon.entries
        for end_idx, value in lexicon.automaton.iter(t.norm):
            klen = value & (_KEY_LEN_LIMIT - 1)
            entry = entries[value >> 12]
            i = t.nstart.get(end_idx - klen + 2)
            j = t.nend.get(end_idx)
            if i is None or j is None:
                continue
            if i == j:
                prev = single[i]
                single[i] = entry if prev is None else _merge(prev, entry)
            elif _one_phrase(t, i, j):
                multi.append((i, j, entry))
    lex = lexicons[0]
    for i in t.in_addresses():  # "jane.doe@clinic.org": the regex step tags the whole e-mail / URL
        single[i] = None
    if multi and t.in_addresses():
        inside = t.in_addresses()
        multi = [(i, j, e) for i, j, e in multi if i not in inside]

    def emit(i: int, j: int, label: Label, subtype: Subtype | None, score: float) -> None:
        out.append(Span(start=t.starts[i], end=t.ends[j], label=label, subtype=subtype, score=score,
                        source=DICTIONARY))

    name_taken: set[int] = set()
    if patterns:
        name_taken = _name_patterns(t, single, sc, emit, lex.clinical)
    for i, j, e in multi:
        if e.standalone & (HOSPITAL | INST):
            name_taken.update(range(i, j + 1))  # "Mary" of "St. Mary's Hospital" is no person
    if patterns:
        _org_patterns(t, single, sc, thr, emit)
        _org_head_first(t, sc, thr, emit)
        _university_abbreviations(t, single, multi, sc, emit)
    if lex.states:
        city_ends = {j for _, j, e in multi if (e.standalone | e.context) & CITY}

        def city_before(j: int) -> bool:
            e = single[j]
            return j in city_ends or bool(_kinds(e) & CITY)

        _state_codes(t, lex, sc, emit, city_before)

    for i, maybe in enumerate(single):
        if maybe is None:
            continue
        e = maybe
        surf = t.surface(i)
        caps_tok = t.is_caps(i)
        if caps_tok and t.words[i] in CAPS_STOP:
            continue
        for label, subtype, score in e.inst:
            if t.is_cap(i):
                emit(i, i, label, subtype, score)
        if not t.is_cap(i):
            continue
        in_caps = caps_tok and t.caps_line(i)
        if i in name_taken or t.words[i] in _SINGLE_STOP or t.words[i] in _PATTERN_STOP:
            continue
        if e.standalone & _NAME_KINDS:
            s = _single_name_score(t, i, e, sc, in_caps, caps_tok, surf)
            if s > 0:
                emit(i, i, Label.NAME, None, s)
        loc_kinds = (e.standalone | e.context) & (CITY | STATE | COUNTRY)
        if loc_kinds:
            _single_location(t, i, e, lex, sc, in_caps, emit)

    for i, j, e in multi:
        kinds = e.standalone | e.context
        if not e.standalone:
            if kinds & CITY and _address_context(t, j, lex):
                emit(i, j, Label.LOCATION, Subtype.CITY, sc.address)
            continue
        any_case_ok = all(not t.is_lower(k) for k in range(i, j + 1)) or e.standalone & (HOSPITAL | INST)
        if not any_case_ok:
            continue
        for label, subtype, score in e.inst:
            emit(i, j, label, subtype, score)
        if e.standalone & HOSPITAL:
            emit(i, j, Label.ORGANIZATION, Subtype.HOSPITAL, sc.hospital)
        if e.standalone & CITY:
            emit(i, j, Label.LOCATION, Subtype.CITY, sc.address if _address_context(t, j, lex) else 0.6)
        if e.standalone & STATE:
            emit(i, j, Label.LOCATION, Subtype.STATE, sc.state)
        if e.standalone & COUNTRY:
            emit(i, j, Label.LOCATION, Subtype.COUNTRY, sc.country)
        if e.standalone & _NAME_KINDS and all(t.is_cap(k) for k in range(i, j + 1)):
            emit(i, j, Label.NAME, None, sc.single_name)  # "O'Brien", "Van Buren"
    return out
_COUNTRY_ALIASES = (
    "Vietnam", "South Korea", "North Korea", "Russia", "Iran", "Syria", "Laos", "Bolivia", "Venezuela",
    "Tanzania", "Moldova", "Czech Republic", "Ivory Coast", "Burma", "Macedonia", "Taiwan", "Palestine",
    "England", "Scotland", "Wales", "Great Britain", "UK", "USA", "Dominican Republic", "Puerto Rico",
)
#: Form words that are also surnames ("Fax 555-...", "Tel", "Cell").
_SINGLE_STOP = frozenset({"fax", "tel", "phone", "cell", "pager", "email", "mobile", "home", "work", "ext",
                          "page", "room", "bed", "unit", "floor", "suite", "apt"})
_ORG_HEADS = {
    "hospital": Subtype.HOSPITAL, "center": Subtype.HOSPITAL, "centre": Subtype.HOSPITAL,
    "healthcare": Subtype.HOSPITAL, "system": Subtype.HOSPITAL, "institute": Subtype.HOSPITAL,
    "home": Subtype.HOSPITAL, "clinic": Subtype.CLINIC, "clinics": Subtype.CLINIC, "group": Subtype.CLINIC,
    "specialists": Subtype.CLINIC, "associates": Subtype.CLINIC, "partners": Subtype.CLINIC,
    "practice": Subtype.CLINIC, "pharmacy": Subtype.CLINIC, "rehab": Subtype.HOSPITAL,
    "rehabilitation": Subtype.HOSPITAL,
}
#: lower-case words inside an unlisted organisation's name before its head ("Sisters of Charity Hospital"); not "at",
#: which joins a person or a service to the place ("Dr. Hartley at Mercy Hospital", "PhD at ... Group")
_ORG_INNER = frozenset({"of", "and", "&", "for", "the"})
#: heads that also name a service ("cardiac rehab"): an organisation only after a place or a rare word
_CARE_HEADS = frozenset({"rehab", "rehabilitation"})
_RARE_ZIPF = 3.0


def _org_patterns(t: NoteText, single: list[_Entry | None], sc: Scores, thr: float, emit: Any) -> None:
    """Unlisted organisations: capitalised words ending in a head word ("Heritage Behavioral Health
    Center", "Bayview Gastroenterology Specialists"). Weak when every word is generic."""
    n = len(t)
    for h in range(1, n):
        subtype = _ORG_HEADS.get(t.words[h])
        if subtype is None or not t.is_cap(h):
            continue
        caps = t.caps_line(h)
        k = h
        while k - 1 >= 0 and h - (k - 1) <= 6:
            j = k - 1
            gap = t.text[t.ends[j]:t.starts[k]]
            if gap not in (" ", " & ", "-", "'") and not (gap == " " or gap.strip() in ("&", "-")):
                break
            w = t.words[j]
            if w in _ORG_INNER and t.is_lower(j) and j - 1 >= 0 and t.is_cap(j - 1):
                k = j
                continue
            if not t.is_cap(j) or w in _PATTERN_STOP or w in CAPS_STOP or w.isdigit():
                break
            e = single[j]
            listed = e is not None and bool(e.standalone | e.context)
            if (caps or t.sentence_start(j)) and vocab.zipf(w) >= thr and not listed and w not in _GENERIC_ORG:
                break  # "TRANSFERRED", or "Called" at the start of a sentence
            k = j
        while k < h and t.words[k] in _ORG_INNER:
            k += 1
        if k == h:
            continue
        words = t.words[k:h + 1]
        specific = [w for w in words if w not in _GENERIC_ORG and w not in _ORG_INNER]
        if not specific:
            continue
        if t.words[h] in _CARE_HEADS and not any(
                vocab.zipf(t.words[x]) < _RARE_ZIPF or _kinds(single[x]) & (CITY | STATE) for x in range(k, h)):
            continue  # "CARDIAC REHAB" is a service; "Baltimore Rehab", "Kernan Rehab" are places
        strong = any(vocab.zipf(w) < thr for w in specific) or len(specific) >= 2
        emit(k, h, Label.ORGANIZATION, subtype, sc.org_pattern if strong else sc.sentence_start)


#: heads that come first in other languages' institution names ("Hospital Universitario Virgen del Rocío", "Clínica
#: Vistahermosa", "Complexo Hospitalario de Ourense", "Klinikum Rechts der Isar", "Hôpital Saint-Louis", "Ospedale
#: Maggiore"; German genitives: "des Klinikums Nordstadt"): a fixed table of those languages' words, not names from any
#: note
_HEADS_FIRST = frozenset("""hospital hôpital hopital hospitalario hospitalar clínica clinica clinique klinik klinikum
    krankenhaus universitätsklinikum klinikums krankenhauses universitätsklinikums kliniken herzzentrum herzzentrums
    ospedale policlinico policlínico sanatorio centro complejo complexo
    fundación fundació universidad universitat universidade università universität facultad facultat faculdade
    facoltà fakultät instituto institut istituto""".split())
#: lower-case words inside such a name ("de", "del", "la": "Centro de Salud de Arganda", "Hospital 12 de Octubre")
_FIRST_INNER = frozenset("de del la las los el y i di della degli do da dos das du des der e".split())
_FIRST_MAX_WORDS = 7
#: a unit of the institution after its name ends it ("HOSPITAL PAVIA YAUCO ED"): no part of the name; so does "or"
_UNIT_AFTER_NAME = vocab.HOSPITAL_UNITS | {"or"}


def _org_head_first(t: NoteText, sc: Scores, thr: float, emit: Any) -> None:
    """Unlisted organisations named head first, as in Spanish, Portuguese, Catalan, French, Italian and German: a
    capitalised head (``_HEADS_FIRST``) and up to seven capitalised words or digits after it, with lower-case
    particles between them. Only when a word of the name is no frequent English word, so "Hospital Day", "Hospital
    Course" or "HOSPITAL COURSE" are no names; the span ends at its last capitalised word or number."""
    n = len(t)
    done = -1
    for h in range(n - 1):
        if h <= done or t.words[h] not in _HEADS_FIRST or not t.is_cap(h):
            continue
        caps = t.caps_line(h)
        if caps and t.words[h] == "hospital":
            continue  # no case evidence, and English nursing notes write "HOSPITAL W SEVERE ..." in capitals
        last = h
        k = h + 1
        while k < n and k - h <= _FIRST_MAX_WORDS:
            gap = t.text[t.ends[k - 1]:t.starts[k]]
            # a period only after an abbreviation ("Dr. Peset", "J. Finlay"), not at a sentence's end
            if gap not in (" ", "-", "'", "\u2019") and not (gap == ". " and len(t.words[k - 1]) <= 3):
                break
            if t.words[k] in _FIRST_INNER and t.is_lower(k):
                k += 1
                continue
            if (not (t.is_cap(k) or t.words[k].isdigit()) or t.words[k] in _PATTERN_STOP
                    or t.words[k] in _UNIT_AFTER_NAME or (caps and len(t.words[k]) == 1)):
                break
            last = k
            k += 1
        if last == h:
            continue
        words = [t.words[x] for x in range(h + 1, last + 1) if t.words[x] not in _FIRST_INNER]
        if not any(vocab.zipf(w) < thr and not w.isdigit() for w in words):
            continue  # every word a frequent English word: "Hospital Day", "Centro Medical"
        emit(h, last, Label.ORGANIZATION, Subtype.HOSPITAL, sc.org_pattern)
        done = last


def _university_abbreviations(t: NoteText, single: list[_Entry | None], multi: list[tuple[int, int, _Entry]],
                              sc: Scores, emit: Any) -> None:
    """"U Maryland", "U of MD", "Univ. of Iowa": a university named by its state or city."""
    place = CITY | STATE
    place_ends = {i: j for i, j, e in multi if _kinds(e) & place}
    n = len(t)
    for i in range(n - 1):
        if t.words[i] not in ("u", "univ") or not t.surface(i)[:1].isupper() or t.gap(i)[-1:] in ("/", "+", "-"):
            continue
        j = i + 1
        if t.words[j] == "of" and j + 1 < n and t.adjacent(i, j):
            j += 1
        elif not t.adjacent(i, j):
            continue
        if not (t.adjacent(j - 1, j) and t.is_cap(j)):
            continue
        end = place_ends.get(j, j if _kinds(single[j]) & place else None)
        if end is None and not (len(t.words[j]) == 2 and t.is_caps(j) and vocab.is_place_name(t.words[j])):
            continue
        emit(i, j if end is None else end, Label.ORGANIZATION, Subtype.HOSPITAL, sc.org_pattern)


def _state_codes(t: NoteText, lex: _Lexicon, sc: Scores, emit: Any, city_before: Any) -> None:
    """Two-letter state codes only inside an address: ", MA 02139" or "Boston, MA"."""
    n = len(t)
    for i in range(1, n):
        w = t.words[i]
        if len(w) != 2 or w not in lex.states or not t.is_caps(i):
            continue
        if t.gap(i).strip() != "," or not t.is_cap(i - 1):
            continue
        zip_next = i + 1 < n and len(t.words[i + 1]) == 5 and t.words[i + 1].isdigit()
        if zip_next:
            emit(i, i, Label.LOCATION, Subtype.STATE, sc.address)
            # "Bayamon, PR 00961": the capitalised words before ", ST ZIP" are a city, listed or not
            k = i - 1
            while k - 1 >= 0 and i - k < 3 and t.is_cap(k - 1) and t.adjacent(k - 1, k) and not t.caps_line(k):
                k -= 1
            if t.is_cap(k) and not t.words[k].isdigit():
                emit(k, i - 1, Label.LOCATION, Subtype.CITY, sc.address - 0.05)
        elif w not in _CREDENTIALS and city_before(i - 1):
            emit(i, i, Label.LOCATION, Subtype.STATE, sc.state)


def _near_digit(t: NoteText, i: int) -> bool:
    return (i + 1 < len(t) and t.words[i + 1][:1].isdigit()) or (i > 0 and t.words[i - 1][:1].isdigit())


def _single_name_score(t: NoteText, i: int, e: _Entry, sc: Scores, in_caps: bool, caps_tok: bool, surf: str) -> float:
    if t.words[i] in MONTH_TOKENS and _near_digit(t, i):
        return 0.0  # "April 5", "5 June 2020": a date, the regex step's
    if in_caps:  # nursing-note capitals: no case evidence, so only rare or strongly name-like words
        return sc.caps_name if e.caps_ok else 0.0
    if caps_tok and len(surf) <= 3:  # "ANN", "LEE" in mixed text are more often abbreviations
        return 0.0
    if t.heading(i):
        return sc.sentence_start
    if t.sentence_start(i):
        return sc.rare_start if e.rare else sc.sentence_start
    return sc.single_name


def _single_location(t: NoteText, i: int, e: _Entry, lex: _Lexicon, sc: Scores, in_caps: bool,
                     emit: Any) -> None:
    address = _address_context(t, i, lex)
    if e.standalone & CITY or (e.context & CITY and address):
        if address:
            emit(i, i, Label.LOCATION, Subtype.CITY, sc.address)
        elif not in_caps or e.caps_ok:
            emit(i, i, Label.LOCATION, Subtype.CITY, sc.city if not t.sentence_start(i) else sc.sentence_start)
    elif e.context & CITY and i > 0 and t.words[i - 1] in _LOCATION_PREPS and t.is_title(i):
        emit(i, i, Label.LOCATION, Subtype.CITY, sc.city)
    if (e.standalone | e.context) & STATE:
        emit(i, i, Label.LOCATION, Subtype.STATE, sc.state)
    if e.standalone & COUNTRY:
        emit(i, i, Label.LOCATION, Subtype.COUNTRY, sc.country)


def _address_context(t: NoteText, j: int, lex: _Lexicon) -> bool:
    """Word j ends a city in an address: followed by ", ST", ", State" or a ZIP code."""
    if j + 1 >= len(t):
        return False
    g = t.text[t.ends[j]:t.starts[j + 1]].strip()
    nxt = t.words[j + 1]
    if len(nxt) == 5 and nxt.isdigit() and g in (",", ""):
        return True
    if g != "," or nxt not in lex.states:
        return False
    if len(nxt) > 2:
        return t.is_cap(j + 1)
    return t.is_caps(j + 1) and (nxt not in _CREDENTIALS or t.ends[j + 1] == len(t.text)
                                 or j + 2 < len(t) and t.words[j + 2].isdigit())


@functools.cache
def _jargon_words() -> frozenset[str]:
    """The curated jargon list's words (``_NURSE``)."""
    return frozenset(jargon.read_jargon())


def _name_patterns(t: NoteText, single: list[_Entry | None], sc: Scores, emit: Any,
                   clinical: frozenset[str] = frozenset()) -> set[int]:
    """Name patterns: "Dr. X", "wife Mary", "First Last", "Last, First", "J. Smith". Returns the words
    tagged, so single-name scoring does not repeat them."""
    taken: set[int] = set()
    n = len(t)

    def kinds(i: int) -> int:
        return _kinds(single[i])

    def standalone(i: int) -> int:
        e = single[i]
        return e.standalone if e is not None else 0

    def clinical_name(i: int) -> bool:
        e = single[i]
        return e is not None and e.clinical and bool(e.context & _NAME_KINDS)

    def nameish(i: int) -> bool:
        w = t.words[i]
        return (t.is_cap(i) and w not in _PATTERN_STOP and not w.isdigit()
                and not (w in CAPS_STOP and t.is_caps(i)))

    def tag(i: int, subtype: Subtype | None, score: float) -> None:
        emit(i, i, Label.NAME, subtype, score)
        taken.add(i)

    for i in range(n):
        w = t.words[i]
        # "Dr. Smith", "Mrs. Green", "DR JONES": any capitalised word after a title is a name
        if (w in TITLES_DOCTOR or w in TITLES_OTHER) and i + 1 < n:
            j = i + 1
            gap = t.text[t.ends[i]:t.starts[j]]
            if len(gap) > 3 or gap.strip() not in (".", ""):
                continue
            # lower case after a title: a listed name, or a clinical word that is a name ("dr. pica");
            # never a common word ("dr. will see")
            if not (nameish(j) or (t.is_lower(j) and (standalone(j) & _NAME_KINDS or clinical_name(j)))):
                continue
            if t.is_caps(i) and "." not in gap and not kinds(j) & _NAME_KINDS:
                continue  # "MS FLARE" (multiple sclerosis), "DR" without a dot before a non-name
            if t.is_caps(i) and w in _CLINICAL_TITLES and (clinical_name(j) or t.words[j] in clinical):
                continue  # "MS. TOLERATING", "SR. TOL PS", "MS GIVEN"
            if (w in _CLINICAL_TITLES and t.is_lower(i) and t.is_lower(j) and "." not in gap
                    and vocab.zipf(t.words[j]) >= _FREQUENT_ZIPF and not vocab.is_name_like(t.words[j])):
                continue  # "pain,ms given 2mg": morphine sulfate, no dot, before a frequent word ("ms garcia" stays)
            subtype = Subtype.PROVIDER if w in TITLES_DOCTOR else None
            tag(j, subtype, sc.name_pattern)
            # "Dr. John Smith", "Dr. J. Smith": the next name word too; in capitals a listed name that is no
            # common or clinical word ("DR IMBORNONE MET WITH")
            k = j + 1
            if k < n and t.adjacent(j, k) and nameish(k) and (
                    (kinds(k) if not t.caps_line(k) else standalone(k)) & _NAME_KINDS or len(t.words[j]) == 1):
                tag(k, subtype, sc.name_pattern)
            continue
        # "wife Mary", "seen by Dr", "attending Jones"
        if (w in FAMILY_CUES or w in PROVIDER_CUES) and i + 1 < n:
            j = i + 1
            gap = t.text[t.ends[i]:t.starts[j]].strip()
            if gap not in ("", ",", ":", "-") or not nameish(j) or not kinds(j) & _NAME_KINDS:
                continue
            if t.caps_line(j) and not standalone(j) & _NAME_KINDS:
                continue  # "SON WILL CALL"
            subtype = Subtype.RELATIVE if w in FAMILY_CUES else Subtype.PROVIDER
            tag(j, subtype, sc.name_pattern)
            k = j + 1
            if k < n and t.adjacent(j, k) and nameish(k) and (standalone(k) if t.caps_line(k) else kinds(k)) & LAST:
                tag(k, subtype, sc.name_pattern)  # not "SON WILLIAM WENT"
            continue
        # "PER SMITH", "SPOKE WITH JONES", "PAGED MARY": case is no evidence in capitals, the cue is. Only
        # a listed name that is not a common or clinical word ("PER PROTOCOL", "PER LEVO GTT" are not)
        if (w in _CONTACT_CUES or (i > 0 and t.words[i - 1] in _CONTACT_PAIRS.get(w, ()))) and i + 1 < n:
            j = i + 1
            k = j + 1
            if (t.gap(j).strip() in ("", ":") and len(t.words[j]) == 1 and t.words[j].isalpha() and k < n
                    and t.adjacent(j, k) and len(t.words[k]) >= 3 and t.words[k] not in clinical
                    and not kinds(k) & STATE
                    and (standalone(k) & LAST or (kinds(k) & LAST and nameish(k)))
                    and t.is_lower(j) == t.is_lower(k)):
                tag(j, None, sc.name_pattern)  # "PER E. WELSH", "per d ross": an initial and a surname
                tag(k, None, sc.name_pattern)
                continue
            if t.gap(j).strip() not in ("", ":") or not nameish(j) or not standalone(j) & _NAME_KINDS:
                continue
            if len(t.words[j]) < 3 or t.words[j] in _SINGLE_STOP or t.words[j] in _CREDENTIALS:
                continue  # "PAGED HO", "PER MD"
            tag(j, None, sc.name_pattern)
            k = j + 1
            if (k < n and t.adjacent(j, k) and nameish(k) and (standalone(k) if t.caps_line(k) else kinds(k)) & LAST
                    and len(t.words[k]) >= 3 and t.is_caps(j) == t.is_caps(k)):
                tag(k, None, sc.name_pattern)
    for j in range(n - 1):
        # "Lance (partner)", "MARY (WIFE)": a cue in parentheses right after the name
        c = j + 1
        if t.words[c] in FAMILY_CUES and t.text[t.ends[j]:t.starts[c]].strip() == "(" and nameish(j) \
                and kinds(j) & _NAME_KINDS and (standalone(j) & _NAME_KINDS or not t.caps_line(j)):
            tag(j, Subtype.RELATIVE, sc.name_pattern)
    for i in range(n - 1):
        # "john doe" in lower-case text: both standalone entries and a clearly name-like first name
        j = i + 1
        if (t.is_lower(i) and t.is_lower(j) and standalone(i) & FIRST and standalone(j) & LAST
                and t.adjacent(i, j) and vocab.is_name_like(t.words[i])):
            tag(i, None, sc.weak_pattern)
            tag(j, None, sc.weak_pattern)
    for i in range(n - 1):
        # "First Last" (optionally "First M. Last")
        if not (kinds(i) & FIRST and nameish(i)):
            continue
        j = i + 1
        if j < n - 1 and len(t.words[j]) == 1 and t.is_cap(j) and t.adjacent(i, j) and t.adjacent(j, j + 1):
            j += 1  # middle initial
        if not (t.adjacent(i, j) if j == i + 1 else t.adjacent(i, j - 1)) or not (kinds(j) & LAST and nameish(j)):
            continue
        if t.heading(j):
            continue
        if t.is_caps(i) != t.is_caps(j):
            continue
        strong = bool(standalone(i) & FIRST or standalone(j) & LAST)
        caps = t.caps_line(i)
        if caps and not (standalone(i) & FIRST and standalone(j) & LAST):
            continue
        if strong:
            score = sc.name_pattern
        elif not t.sentence_start(i):
            score = sc.weak_pattern
        else:
            continue
        for k in range(i, j + 1):
            tag(k, None, score)
    for i in range(n - 2):
        # "Smith, John"
        if not (kinds(i) & LAST and nameish(i) and kinds(i + 2) & FIRST and nameish(i + 2)):
            continue
        gap = t.text[t.ends[i]:t.starts[i + 2]]
        if gap.strip() != ",":
            continue
        if not (standalone(i) & LAST or standalone(i + 2) & FIRST) or t.is_caps(i) != t.is_caps(i + 2):
            continue
        if t.caps_line(i) and not (standalone(i) & LAST and standalone(i + 2) & FIRST):
            continue
        tag(i, None, sc.name_pattern)
        tag(i + 2, None, sc.name_pattern)
    for i in range(n - 1):
        # "J. Smith": an initial, a dot, a capitalised surname
        if len(t.words[i]) != 1 or not t.surface(i).isupper() or t.words[i].isdigit():
            continue
        if i > 0 and t.gap(i)[-1:] not in (" ", "\n", "\t", "("):
            continue  # "N/V. Mood"
        j = i + 1
        gap = t.text[t.ends[i]:t.starts[j]]
        if gap.strip() != "." or "\n" in gap or not (kinds(j) & LAST and nameish(j)) or len(t.words[j]) < 2 \
                or t.heading(j):  # "I+O.\n\nSkin:" is no "O. Skin"
            continue
        if t.caps_line(j) and not standalone(j) & LAST:
            continue
        tag(i, None, sc.name_pattern - 0.05)
        tag(j, None, sc.name_pattern - 0.05)
    for c in range(1, n):
        # "Garcia, PA-C", "June, RN", "Sharp NP": the capitalised word before a credential
        if t.words[c] not in _CREDENTIALS or not t.is_caps(c) and t.words[c] not in ("pac", "phd", "pharmd"):
            continue
        j = c - 1
        gap = t.text[t.ends[j]:t.starts[c]]
        if gap.strip() not in (",", "") or len(gap) > 2 or not nameish(j) or len(t.words[j]) < 2:
            continue
        if t.words[j] in _CREDENTIALS or (kinds(j) & CITY and not kinds(j) & _NAME_KINDS):
            continue  # "Rodriguez, MD, PhD"; "Baltimore, MD"
        if t.is_caps(j) and not kinds(j) & _NAME_KINDS:
            continue  # "CXR PA AND LATERAL", "WOUND RN CONSULTED"
        if not standalone(j) & FIRST and ((t.words[c] in _NURSE and t.words[j] in _jargon_words())
                                          or (vocab.zipf(t.words[j]) >= _FUNCTION_ZIPF
                                              and not vocab.is_name_word(t.words[j]))):
            continue  # a nurse's specialty or a word before a new clause: "Stoma RN following", "Also MD
            # updated" ("June, RN", "Sharp NP", "Brown, RN" stay)
        caps = t.caps_line(j)
        if caps and not standalone(j) & _NAME_KINDS and gap.strip() != "," and not (
                j > 0 and t.adjacent(j - 1, j) and (standalone(j - 1) & FIRST or len(t.words[j - 1]) == 1)
                and nameish(j - 1)):
            continue  # no case evidence: "KEEP NP", "PRIMARY CARE MD"; "JUNE, RN", "MARY SMITH RN" have theirs
        tag(j, Subtype.PROVIDER, sc.name_pattern)
        k = j - 1
        while k >= 0 and j - k <= 2 and t.adjacent(k, k + 1) and nameish(k) and (
                (standalone(k) if caps else kinds(k)) & FIRST or len(t.words[k]) == 1):
            tag(k, Subtype.PROVIDER, sc.name_pattern)
            k -= 1
    return taken
