"""Dictionary detector: (a) the identifiers the message itself carries about its patient, relatives,
providers and facility (source ``"message"``), and (b) institution lists: first names, surnames, US
hospitals, cities and states, and a hospital's own lists (source ``"dictionary"``).

(a) is exact (case-insensitive, word-bounded), fuzzy for name parts (Jaro-Winkler, built for name
typos: "Jonh" ~ "John" 93, "Smyth" ~ "Smith" 89) and knows initials, phone digit sequences, SSNs with
or without dashes and birth dates in common formats. It is public as :func:`find_message_identifiers`
(the leak check re-runs it on the output).

(b) is one Aho-Corasick pass over the note's words (lower case, single-spaced), so every hit is
word-bounded. Entries that are common words ("Will", "Green", "Primary Care") are context-only: they
are tagged only in a name pattern ("Dr. Green", "Will Smith", "Green, Will"). Single names are
ambiguous, so they score low and need Title-case or ALL-CAPS; in ALL-CAPS lines (nursing notes) only
rare or clearly name-like words count.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import logging
import pickle
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from rapidfuzz.distance import JaroWinkler

from dictionaries import vocab
from dictionaries.institution import InstitutionDictionary
from processors.pipeline import BuildContext, Note, register
from schemas.labels import Label, Subtype
from schemas.models import Address, NoteIn, PersonName, Span

logger = logging.getLogger(__name__)

MESSAGE = "message"
DICTIONARY = "dictionary"

_TOKEN = re.compile(r"[^\W_]+")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")
_ADDRESS_LIKE = re.compile(r"[^\s<>()\[\]]+@[^\s<>()\[\]]+|\w+://\S+|www\.\S+")
_DIGIT_RUN = re.compile(r"\d(?:[ ().\-/]{0,2}\d)*")
_NEWLINE = re.compile("\n")
_NON_DIGIT = re.compile(r"\D")
_NON_ALNUM = re.compile(r"[^0-9A-Za-z]")
_PREFIXED_NUMBER = re.compile(r"^([A-Za-z]+)(0*)(\d{5,})$")
_ISO_DATE = re.compile(r"^(\d{4})-?(\d{2})-?(\d{2})")
_US_DATE = re.compile(r"^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})$")
#: Bound of each per-value regex cache below. The message's values repeat across a patient's notes;
#: compiling them per note was the main cost of the message matcher (and overflows re's own cache).
_REGEX_CACHE = 4096

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
_TITLES_DOCTOR = frozenset({"dr", "doctor", "prof", "professor", "dra"})
_TITLES_OTHER = frozenset({"mr", "mrs", "ms", "miss", "mx", "mister", "sr", "sra", "srta"})
_ABBREV_DOT = frozenset({"dr", "mr", "mrs", "ms", "st", "prof", "jr", "sr", "mt", "ft", "vs", "dra", "sra"})
_FAMILY_CUES = frozenset(
    """wife husband spouse son daughter mother father mom dad sister brother sibling aunt uncle niece
    nephew cousin grandson granddaughter grandmother grandfather grandma grandpa partner fiance fiancee
    boyfriend girlfriend friend neighbor caregiver guardian stepson stepdaughter stepmother stepfather""".split()
)
_PROVIDER_CUES = frozenset(
    """attending resident fellow intern pcp surgeon nurse rn np pa cardiologist oncologist physician
    provider therapist pharmacist""".split()
)
_PATIENT_CUES = frozenset({"pt", "patient", "name", "named"})
#: Credentials after a name: "Garcia, PA-C", "June, RN", "Sharp NP".
_CREDENTIALS = frozenset(
    """md do rn np pa pac lpn cnm crna dnp phd pharmd dds dmd od dpm aprn fnp lcsw msw rd dpt otr slp rph
    facs facp facc mph""".split()
)
_LOCATION_PREPS = frozenset({"in", "from", "near", "to", "at", "of"})

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


@dataclass
class _Lexicon:
    automaton: Any  # key -> int: (entry index << 12) | key length (ints pickle fast; objects do not)
    entries: list[_Entry]
    states: dict[str, str]  # lower-case state name or code -> code
    versions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _LexKey:
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


# --- text features ---------------------------------------------------------------------------------


class _Text:
    """Word tokens of a note with the features both detectors need (computed once per note)."""

    __slots__ = ("text", "starts", "ends", "words", "norm", "nstart", "nend", "_line_starts", "_line_caps",
                 "_runs", "_addr")

    def __init__(self, text: str) -> None:
        self.text = text
        spans = [m.span() for m in _TOKEN.finditer(text)]
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


# --- (b) institution lists -----------------------------------------------------------------------------


def _norm_key(term: str) -> str:
    words = [w.lower() for w in _TOKEN.findall(term)]
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


def _build_lexicon(key: _LexKey) -> _Lexicon:

    b = vocab.load()
    thr = key.common_word_zipf
    table: dict[str, list[Any]] = {}  # key -> [n_words, standalone, context, caps_ok, rare, inst]

    def zipf_of(term: str) -> float:
        words = [w.lower() for w in _TOKEN.findall(term)]
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
        row = table.get(k)
        if row is None:
            n_words = k.count(" ") - 1
            z = zipf_of(term)
            single = n_words == 1
            # in capitals only rare words (4+ letters) or strongly name-like ones: "MARY", not "ROSE"
            strong = single and vocab.name_ratio(term) >= CAPS_NAME_RATIO
            caps_ok = strong or (z < key.caps_zipf and len(k) - 2 >= 4)
            row = [n_words, 0, 0, caps_ok, z < 3.0 or strong, []]
            table[k] = row
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
    return _make_lexicon(table, states)


def _make_lexicon(table: dict[str, list[Any]], states: dict[str, str]) -> _Lexicon:
    import ahocorasick

    automaton = ahocorasick.Automaton(ahocorasick.STORE_INTS)
    entries: list[_Entry] = []
    entry_ids: dict[_Entry, int] = {}
    for k, (n_words, standalone, context, caps_ok, rare, inst) in table.items():
        entry = _Entry(n_words, standalone, context, caps_ok, rare, tuple(inst))
        eid = entry_ids.get(entry)
        if eid is None:
            eid = entry_ids[entry] = len(entries)
            entries.append(entry)
        if len(k) < _KEY_LEN_LIMIT:
            automaton.add_word(k, (eid << 12) | len(k))
    automaton.make_automaton()
    logger.info("dictionary lexicon built: %d keys, %d distinct entries", len(table), len(entries))
    return _Lexicon(automaton, entries, states)


def _institution_lexicon(path: str, min_len: int) -> _Lexicon:
    """A small automaton of one institution dictionary (its own, so the big one is shared and cached)."""
    inst_dict = _institution(path)
    table: dict[str, list[Any]] = {}
    for term, tl in inst_dict.entries():
        # the builder already removed common words: the hospital's own terms are all specific
        k = _norm_key(term)
        if not k or len(k) - 2 < min_len:
            continue
        row = table.setdefault(k, [k.count(" ") - 1, INST, 0, True, True, []])
        row[5].append((tl.label, tl.subtype, tl.score))
    lex = _make_lexicon(table, {})
    lex.versions[f"institution:{inst_dict.name}"] = inst_dict.version
    return lex


_LEXICONS: dict[_LexKey, _Lexicon] = {}
_INSTITUTIONS: dict[str, InstitutionDictionary] = {}


def _institution(path: str) -> InstitutionDictionary:
    resolved = str(Path(path).resolve())
    if resolved not in _INSTITUTIONS:
        _INSTITUTIONS[resolved] = InstitutionDictionary.load(resolved)
    return _INSTITUTIONS[resolved]


def _lexicon(key: _LexKey, cache: Path | None = None) -> _Lexicon:
    """The lexicon for ``key``: from this process, else from the cache folder, else built (seconds)."""
    lex = _LEXICONS.get(key)
    if lex is not None:
        return lex
    folder = cache if cache is not None else vocab.cache_dir()
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
        lex = _build_lexicon(key)
        vocab.write_atomic(path, lex)
    _LEXICONS[key] = lex
    return lex


@functools.cache
def _module_digest() -> str:
    # the lexicon depends on the rules in this module and in vocab: a code change must not reuse a cache
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(Path(vocab.__file__).read_bytes())
    return h.hexdigest()[:16]


def dictionary_versions() -> dict[str, str]:
    """Versions for the output headers: the vocabularies and every institution dictionary loaded."""
    out = {"vocab": vocab.vocab_version()}
    for inst in _INSTITUTIONS.values():
        out[f"institution:{inst.name}"] = inst.version
    return out


class _Scores(BaseModel):
    model_config = ConfigDict(extra="forbid")
    single_name: float = Field(default=0.6, ge=0, le=1)
    sentence_start: float = Field(default=0.4, ge=0, le=1)
    rare_start: float = Field(default=0.5, ge=0, le=1)
    caps_name: float = Field(default=0.55, ge=0, le=1)
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
                  a.rare or b.rare, a.inst + b.inst)


def _find_institution(t: _Text, lexicons: Sequence[_Lexicon], sc: _Scores, patterns: bool, thr: float) -> list[Span]:
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
            else:
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
        name_taken = _name_patterns(t, single, sc, emit)
    for i, j, e in multi:
        if e.standalone & (HOSPITAL | INST):
            name_taken.update(range(i, j + 1))  # "Mary" of "St. Mary's Hospital" is no person
    if patterns:
        _org_patterns(t, single, sc, thr, emit)
    if lex.states:
        city_ends = {j for _, j, e in multi if (e.standalone | e.context) & CITY}

        def city_before(j: int) -> bool:
            e = single[j]
            return j in city_ends or (e is not None and bool((e.standalone | e.context) & CITY))

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
    "practice": Subtype.CLINIC, "pharmacy": Subtype.CLINIC,
}
_ORG_INNER = frozenset({"of", "and", "&", "for", "the", "at"})


def _org_patterns(t: _Text, single: list[_Entry | None], sc: _Scores, thr: float, emit: Any) -> None:
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
        strong = any(vocab.zipf(w) < thr for w in specific) or len(specific) >= 2
        emit(k, h, Label.ORGANIZATION, subtype, sc.org_pattern if strong else sc.sentence_start)


def _state_codes(t: _Text, lex: _Lexicon, sc: _Scores, emit: Any, city_before: Any) -> None:
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


_MONTH_NAMES = frozenset({"january", "february", "march", "april", "may", "june", "july", "august",
                          "september", "october", "november", "december", "jan", "feb", "mar", "apr",
                          "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"})


def _near_digit(t: _Text, i: int) -> bool:
    return (i + 1 < len(t) and t.words[i + 1][:1].isdigit()) or (i > 0 and t.words[i - 1][:1].isdigit())


def _single_name_score(t: _Text, i: int, e: _Entry, sc: _Scores, in_caps: bool, caps_tok: bool, surf: str) -> float:
    if t.words[i] in _MONTH_NAMES and _near_digit(t, i):
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


def _single_location(t: _Text, i: int, e: _Entry, lex: _Lexicon, sc: _Scores, in_caps: bool,
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


def _address_context(t: _Text, j: int, lex: _Lexicon) -> bool:
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


def _name_patterns(t: _Text, single: list[_Entry | None], sc: _Scores, emit: Any) -> set[int]:
    """Name patterns: "Dr. X", "wife Mary", "First Last", "Last, First", "J. Smith". Returns the words
    tagged, so single-name scoring does not repeat them."""
    taken: set[int] = set()
    n = len(t)

    def kinds(i: int) -> int:
        e = single[i]
        return (e.standalone | e.context) if e is not None else 0

    def standalone(i: int) -> int:
        e = single[i]
        return e.standalone if e is not None else 0

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
        if (w in _TITLES_DOCTOR or w in _TITLES_OTHER) and i + 1 < n:
            j = i + 1
            gap = t.text[t.ends[i]:t.starts[j]]
            if len(gap) > 3 or gap.strip() not in (".", ""):
                continue
            if not (nameish(j) or (t.is_lower(j) and standalone(j) & _NAME_KINDS)):
                continue
            if t.is_caps(i) and "." not in gap and not kinds(j) & _NAME_KINDS:
                continue  # "MS FLARE" (multiple sclerosis), "DR" without a dot before a non-name
            subtype = Subtype.PROVIDER if w in _TITLES_DOCTOR else None
            tag(j, subtype, sc.name_pattern)
            # "Dr. John Smith", "Dr. J. Smith": the next name word too
            k = j + 1
            if k < n and t.adjacent(j, k) and nameish(k) and (kinds(k) & _NAME_KINDS or len(t.words[j]) == 1):
                tag(k, subtype, sc.name_pattern)
            continue
        # "wife Mary", "seen by Dr", "attending Jones"
        if (w in _FAMILY_CUES or w in _PROVIDER_CUES) and i + 1 < n:
            j = i + 1
            gap = t.text[t.ends[i]:t.starts[j]].strip()
            if gap not in ("", ",", ":", "-") or not nameish(j) or not kinds(j) & _NAME_KINDS:
                continue
            if t.caps_line(j) and not standalone(j) & _NAME_KINDS:
                continue  # "SON WILL CALL"
            subtype = Subtype.RELATIVE if w in _FAMILY_CUES else Subtype.PROVIDER
            tag(j, subtype, sc.name_pattern)
            k = j + 1
            if k < n and t.adjacent(j, k) and nameish(k) and kinds(k) & LAST:
                tag(k, subtype, sc.name_pattern)
    for j in range(n - 1):
        # "Lance (partner)", "MARY (WIFE)": a cue in parentheses right after the name
        c = j + 1
        if t.words[c] in _FAMILY_CUES and t.text[t.ends[j]:t.starts[c]].strip() == "(" and nameish(j) \
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
        if gap.strip() != "." or not (kinds(j) & LAST and nameish(j)) or len(t.words[j]) < 2 or t.heading(j):
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
        tag(j, Subtype.PROVIDER, sc.name_pattern)
        k = j - 1
        while k >= 0 and j - k <= 2 and t.adjacent(k, k + 1) and nameish(k) and (
                kinds(k) & FIRST or len(t.words[k]) == 1):
            tag(k, Subtype.PROVIDER, sc.name_pattern)
            k -= 1
    return taken


# --- (a) the message's own identifiers ----------------------------------------------------------------


@dataclass
class _Person:
    subtype: Subtype
    parts: list[str]  # lower case, single words
    initials: list[str]  # e.g. ["js", "jms"]
    family: set[str]


_SUBTYPE_RANK = {Subtype.PATIENT: 0, Subtype.RELATIVE: 1, Subtype.PROVIDER: 2}
_STREET_SUFFIX = {
    "street": ("street", "st"), "st": ("street", "st"), "avenue": ("avenue", "ave", "av"), "ave": ("avenue", "ave", "av"),
    "road": ("road", "rd"), "rd": ("road", "rd"), "drive": ("drive", "dr"), "dr": ("drive", "dr"),
    "lane": ("lane", "ln"), "ln": ("lane", "ln"), "boulevard": ("boulevard", "blvd"), "blvd": ("boulevard", "blvd"),
    "court": ("court", "ct"), "ct": ("court", "ct"), "place": ("place", "pl"), "pl": ("place", "pl"),
    "terrace": ("terrace", "ter"), "circle": ("circle", "cir"), "cir": ("circle", "cir"),
    "highway": ("highway", "hwy"), "hwy": ("highway", "hwy"), "parkway": ("parkway", "pkwy"),
    "pkwy": ("parkway", "pkwy"), "square": ("square", "sq"), "way": ("way",), "trail": ("trail", "trl"),
}
_DIRECTIONS = {"n": ("n", "north"), "s": ("s", "south"), "e": ("e", "east"), "w": ("w", "west"),
               "north": ("n", "north"), "south": ("s", "south"), "east": ("e", "east"), "west": ("w", "west")}
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")


def _split_parts(value: str | None, min_len: int) -> list[str]:
    if not value:
        return []
    return [w.lower() for w in _TOKEN.findall(value) if len(w) >= min_len and not w.isdigit()]


def _person(name: PersonName, subtype: Subtype, min_len: int) -> _Person:
    parts: list[str] = []
    for raw in name.parts():
        for w in _split_parts(raw, min_len):
            if w not in parts:
                parts.append(w)
    given = _split_parts(name.given, 1)
    middle = _split_parts(name.middle, 1)
    family = _split_parts(name.family, 1)
    initials: list[str] = []
    if given and family:
        initials.append(given[0][0] + family[0][0])
        if middle:
            initials.append(given[0][0] + middle[0][0] + family[0][0])
    return _Person(subtype, parts, initials, set(_split_parts(name.family, min_len)))


def _bounded(text: str, start: int, end: int) -> bool:
    """``text[start:end]`` is not part of a longer word or number ("123-45" of "123-45-6789")."""
    if start > 0 and (text[start - 1].isalnum() or (text[start - 1] in ".-/" and start > 1
                                                      and text[start - 2].isalnum())):
        return False
    return not (end < len(text) and (text[end].isalnum() or (text[end] in ".-/" and end + 1 < len(text)
                                                              and text[end + 1].isalnum())))


def _find_digits(t: _Text, key: str, phone: bool) -> list[tuple[int, int]]:
    """Where the digit sequence ``key`` occurs as a whole number, whatever the separators:
    "(555) 123-4567", "555.123.4567", "5551234567", "123-45-6789"."""
    text = t.text
    found = []
    for digits, pos in t.digit_runs():
        a = digits.find(key)
        while a >= 0:
            b = a + len(key)
            left_ok = a == 0 or not _joined(text, pos[a - 1], pos[a])
            if phone and a == 1 and digits[0] == "1":
                left_ok, a_start = True, pos[0]  # "1-555-123-4567", "+1 555 ...": country code
            else:
                a_start = pos[a]
            right_ok = b == len(digits) or not _joined(text, pos[b - 1], pos[b])
            if left_ok and right_ok:
                s, e = a_start, pos[b - 1] + 1
                if phone and s > 0 and text[s - 1] == "(" and ")" in text[s:e]:
                    s -= 1
                if phone and s > 0 and text[s - 1] == "+":
                    s -= 1
                if _bounded(text, s, e) or (s > 0 and text[s - 1] in "(+"):
                    found.append((s, e))
            a = digits.find(key, a + 1)
    return found


def _joined(text: str, p: int, q: int) -> bool:
    """Digits at p < q belong to one number: adjacent, or separated without blanks ("123-45")."""
    gap = text[p + 1:q]
    return not gap or not any(c.isspace() for c in gap) and ")" not in gap


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _id_regex(key: str) -> re.Pattern[str]:
    """An alphanumeric identifier with optional separators between its characters ("MRN-0098765")."""
    return re.compile(r"[\s.\-/]?".join(re.escape(c) for c in key), re.I)


def _literal_regex(value: str) -> re.Pattern[str]:
    """``value``'s words with any blanks, commas or dots between them, in any case."""
    words = value.split()
    # the same words in another case or spacing share one compiled pattern (ASCII only: lower-casing
    # can change a non-ASCII word's length)
    return _literal_regex_norm(tuple(w.lower() for w in words) if value.isascii() else tuple(words))


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _literal_regex_norm(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"[\s,.]+".join(re.escape(w) for w in words), re.I)


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _zip_regex(zip5: str) -> re.Pattern[str]:
    """A five-digit ZIP code, with or without its +4 extension."""
    return re.compile(re.escape(zip5) + r"(?:-\d{4})?(?!\d)")


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _initials_regex(initials: str) -> re.Pattern[str]:
    """Initials ("js") as "JS", "J.S.", "J. S." (capitals only)."""
    return re.compile(r"(?<![0-9A-Za-z])" + r"\.?\s?".join(re.escape(c) for c in initials.upper())
                      + r"\.?(?![0-9A-Za-z])")


def _finditer(rx: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """Matches of ``rx`` that are whole words (checked here: a leading look-behind would stop the
    regex engine's fast literal-prefix scan)."""
    return [m.span() for m in rx.finditer(text) if _bounded(text, m.start(), m.end())]


def _street_regex(street: str) -> re.Pattern[str] | None:
    """A street address with its usual abbreviations ("Street"/"St.", "North"/"N")."""
    return _street_regex_norm(tuple(w.lower() for w in _TOKEN.findall(street)))


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _street_regex_norm(words: tuple[str, ...]) -> re.Pattern[str] | None:
    if len(words) < 2:
        return None
    pieces = []
    for k, w in enumerate(words):
        alts: tuple[str, ...] = (w,)
        if k == len(words) - 1 and w in _STREET_SUFFIX:
            alts = _STREET_SUFFIX[w]
        elif w in _DIRECTIONS:
            alts = _DIRECTIONS[w]
        pieces.append("(?:" + "|".join(re.escape(a) for a in alts) + r")\.?")
    return re.compile(r"[\s,.#]+".join(pieces), re.I)


def _parse_date(value: str) -> date | None:
    s = value.strip()
    m = _ISO_DATE.match(s)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    else:
        m = _US_DATE.match(s)
        if not m:
            return None
        mo, d, y = int(m.group(1)), int(m.group(2)), int(m.group(3))
    try:
        return date(y, mo, d)
    except ValueError:
        return None


def _dob_regex(value: str) -> re.Pattern[str] | None:
    """Every common rendering of one date: 1/1/1980, 01-01-80, 1980-01-01, 19800101, Jan 1, 1980,
    1st January 1980, 01-JAN-1980, January 1st, 1980 ..."""
    d = _parse_date(value)
    return None if d is None else _date_regex(d)


@functools.lru_cache(maxsize=_REGEX_CACHE)
def _date_regex(d: date) -> re.Pattern[str]:
    m_num = rf"0?{d.month}" if d.month < 10 else str(d.month)
    d_num = rf"0?{d.day}" if d.day < 10 else str(d.day)
    d_ord = d_num + r"(?:st|nd|rd|th)?"
    yy = f"{d.year % 100:02d}"
    y_any = rf"(?:{d.year}|'?{yy})"
    full = _MONTHS[d.month - 1]
    abbr = full[:3]
    mon = rf"(?:{full}|{abbr}\.?" + ("|sept\\.?" if d.month == 9 else "") + ")"
    forms = [
        rf"{m_num}(?P<s1>[/.\-]){d_num}(?P=s1){y_any}",
        rf"{d.year}(?P<s2>[/.\-]){m_num}(?P=s2){d_num}",
        rf"{d.year}{d.month:02d}{d.day:02d}",
        rf"{d.month:02d}{d.day:02d}{d.year}",
        rf"{mon}\s+{d_ord},?\s+{y_any}",
        rf"{d_ord}(?:\s+of)?\s+{mon},?\s+{y_any}",
        rf"{d_num}-{mon}-{y_any}",
    ]
    return re.compile("|".join(forms), re.I)


def _digits(value: str) -> str:
    return _NON_DIGIT.sub("", value)


def _alnum(value: str) -> str:
    return _NON_ALNUM.sub("", value)


def _collect(note: NoteIn, min_len: int) -> tuple[list[_Person], list[tuple[str, str, Label, Subtype | None]]]:
    """People (names) and the other identifiers as (kind, value, label, subtype)."""
    people: list[_Person] = []
    items: list[tuple[str, str, Label, Subtype | None]] = []
    p = note.patient

    def address(a: Address) -> None:
        if a.street:
            items.append(("street", a.street, Label.LOCATION, Subtype.STREET))
        if a.city:
            items.append(("city", a.city, Label.LOCATION, Subtype.CITY))
        if a.zip:
            items.append(("zip", a.zip, Label.LOCATION, Subtype.ZIP))
        if a.county:
            items.append(("city", a.county, Label.LOCATION, None))

    if p is not None:
        for nm in p.names:
            people.append(_person(nm, Subtype.PATIENT, min_len))
        for ident in (p.mrn, p.id):
            if ident:
                items.append(("id", ident, Label.ID, Subtype.MRN))
        for ident in p.ids:
            items.append(("id", ident, Label.ID, None))
        if p.ssn:
            items.append(("id", p.ssn, Label.ID, Subtype.SSN))
        for ph in p.phones:
            items.append(("phone", ph, Label.PHONE, None))
        for em in p.emails:
            items.append(("email", em, Label.EMAIL, None))
        for a in p.addresses:
            address(a)
        if p.birth_date:
            items.append(("dob", p.birth_date, Label.DATE, Subtype.BIRTHDATE))
        for rel in p.relatives:
            if rel.name is not None:
                people.append(_person(rel.name, Subtype.RELATIVE, min_len))
            for ph in rel.phones:
                items.append(("phone", ph, Label.PHONE, None))
            for em in rel.emails:
                items.append(("email", em, Label.EMAIL, None))
            for a in rel.addresses:
                address(a)
    for prov in note.providers:
        if prov.name is not None:
            people.append(_person(prov.name, Subtype.PROVIDER, min_len))
        if prov.id:
            items.append(("id", prov.id, Label.ID, None))
    if note.facility is not None:
        if note.facility.name:
            items.append(("org", note.facility.name, Label.ORGANIZATION, Subtype.HOSPITAL))
        if note.facility.address is not None:
            address(note.facility.address)
    return people, items


def _common_plain(word: str, threshold: float) -> bool:
    return vocab.is_common_word(word, threshold)


def find_message_identifiers(
    text: str, note: NoteIn, *, fuzzy: bool = True, threshold: int = 88,
    common_word_zipf: float = vocab.COMMON_WORD_ZIPF, min_name_len: int = 2,
) -> list[Span]:
    """Spans (source ``"message"``, score 1.0) of the identifiers that ``note`` carries (patient,
    relatives, providers, facility) wherever they occur in ``text`` (the note's text or an output).

    Names: exact word matches in any case for uncommon parts; parts that are common words ("Will",
    "May") only Title-case/ALL-CAPS or next to another part of the same name (in ALL-CAPS lines: only
    next to another part, a middle initial between allowed, or after a title/cue: "BRYCE Z. JONES",
    "DR LOIS W. WOOD", "WIFE WOOD"). Fuzzy: Jaro-Winkler >= ``threshold`` for capitalised
    words of >= 4 letters with the same first letter that are not themselves common words. Initials:
    "J. Smith", "J.S." or "JS" next to the surname or after "initials".
    """
    return _find_message(_Text(text), note, fuzzy, threshold, common_word_zipf, min_name_len)


def _find_message(t: _Text, note: NoteIn, fuzzy: bool, threshold: int, thr: float, min_len: int) -> list[Span]:
    people, items = _collect(note, min_len)
    out: list[Span] = []

    def span(s: int, e: int, label: Label, subtype: Subtype | None) -> None:
        out.append(Span(start=s, end=e, label=label, subtype=subtype, score=1.0, source=MESSAGE))

    # identifiers other than names
    for kind, value, label, subtype in items:
        for s, e in _match_item(t, kind, value, thr):
            span(s, e, label, subtype)

    if people:
        emails = [(s.start, s.end) for s in out if s.label == Label.EMAIL]
        _match_names(t, people, fuzzy, threshold, thr, span)
        inside = t.in_addresses()
        if emails or inside:  # "john.smith" of "john.smith@x.org" is part of an e-mail, not a name
            starts = {t.starts[i] for i in inside}
            out = [s for s in out if s.label != Label.NAME or not (
                s.start in starts or any(a <= s.start and s.end <= b for a, b in emails))]
    return _dedupe(out)


def _match_item(t: _Text, kind: str, value: str, thr: float) -> list[tuple[int, int]]:
    text = t.text
    if kind == "phone":
        digits = _digits(value)
        if len(digits) == 11 and digits.startswith("1"):
            digits = digits[1:]
        if len(digits) < 7:
            return []
        found = _find_digits(t, digits, True)
        if len(digits) == 10:  # the local number alone: "123-4567"
            found += [(a, b) for a, b in _find_digits(t, digits[3:], True)
                      if not any(x <= a and b <= y for x, y in found)]
        return found
    if kind == "id":
        key = _alnum(value)
        if len(key) < 4:
            return []
        if key.isdigit():
            return _find_digits(t, key, False)
        found = _finditer(_id_regex(key), text)
        m = _PREFIXED_NUMBER.match(key)
        if m:  # "MRN0012345" also as "0012345" / "12345"
            found += _find_digits(t, m.group(2) + m.group(3), False)
            if m.group(2):
                found += _find_digits(t, m.group(3), False)
        return found
    if kind == "email":
        return _finditer(_literal_regex(value.strip()), text)
    if kind == "zip":
        z = _digits(value)[:5]
        if len(z) < 5:
            return []
        return [m.span() for m in _zip_regex(z).finditer(text) if m.start() == 0 or not text[m.start() - 1].isdigit()]
    if kind == "street":
        street_rx = _street_regex(value)
        return _finditer(street_rx, text) if street_rx is not None else []
    if kind in ("city", "org"):
        v = value.strip()
        if len(v) < 3:
            return []
        common = vocab.is_common_term(v, thr)
        # a city named like a word ("Mobile", "Normal") only when capitalised
        return [(a, b) for a, b in _finditer(_literal_regex(v), text) if not common or text[a].isupper()]
    if kind == "dob":
        dob_rx = _dob_regex(value)
        return _finditer(dob_rx, text) if dob_rx is not None else []
    return []


def _match_names(t: _Text, people: list[_Person], fuzzy: bool, threshold: int, thr: float, span: Any) -> None:
    n = len(t)
    part_of: dict[str, tuple[Subtype, int]] = {}
    for idx, person in enumerate(people):
        for w in person.parts:
            prev = part_of.get(w)
            if prev is None or _SUBTYPE_RANK[person.subtype] < _SUBTYPE_RANK[prev[0]]:
                part_of[w] = (person.subtype, idx)
    if not part_of:
        return
    by_initial: dict[str, list[str]] = {}
    for w in part_of:
        if len(w) >= 4:
            by_initial.setdefault(w[0], []).append(w)

    hit: list[tuple[Subtype, int, str] | None] = [None] * n  # subtype, person, part
    for i, w in enumerate(t.words):
        ref = part_of.get(w)
        if ref is not None:
            hit[i] = (ref[0], ref[1], w)
        elif fuzzy and len(w) >= 4 and t.is_cap(i) and w[0] in by_initial:
            best: tuple[float, str] | None = None
            for part in by_initial[w[0]]:
                if abs(len(part) - len(w)) > (2 if len(part) >= 8 else 1):
                    continue
                sim = JaroWinkler.normalized_similarity(w, part) * 100.0
                if sim >= threshold and (best is None or sim > best[0]):
                    best = (sim, part)
            if best is not None and not vocab.is_common_word(w, thr):
                ref = part_of[best[1]]
                hit[i] = (ref[0], ref[1], best[1])

    def initial(k: int) -> bool:
        """Word k is a one-letter capital written between two words ("Z." of "BRYCE Z. JONES")."""
        return 0 < k < n - 1 and len(t.words[k]) == 1 and t.surface(k).isupper() and not t.words[k].isdigit() \
            and t.adjacent(k - 1, k) and t.adjacent(k, k + 1)

    def neighbour(i: int) -> bool:
        """Another word of the same person's name right before or after word i, or one middle
        initial away ("BRYCE Z. JONES", "LOIS W. WOOD")."""
        h = hit[i]
        assert h is not None
        for j in (i - 2, i - 1, i + 1, i + 2):
            if 0 <= j < n and hit[j] is not None and hit[j][1] == h[1] and hit[j][2] != h[2]:  # type: ignore[index]
                lo, hi = min(i, j), max(i, j)
                if hi - lo == 2:
                    if initial(lo + 1):
                        return True
                    continue
                g = t.text[t.ends[lo]:t.starts[hi]]
                if g.strip(" ,.") == "" and len(g) <= 3:
                    return True
        return False

    def cue(i: int) -> bool:
        """A title, relationship or role word right before word i, or before its initial ("DR W. WOOD")."""
        k = i - 1
        if k > 0 and initial(k):
            k -= 1
        if k < 0:
            return False
        p = t.words[k]
        return (p in _TITLES_DOCTOR or p in _TITLES_OTHER or p in _FAMILY_CUES or p in _PROVIDER_CUES
                or p in _PATIENT_CUES)

    common_cache: dict[str, tuple[bool, bool]] = {}
    for i in range(n):
        h = hit[i]
        if h is None:
            continue
        subtype, _, part = h
        if part not in common_cache:
            common_cache[part] = (_common_plain(part, thr), vocab.is_common_term(part, thr))
        plain_common, term_common = common_cache[part]
        ok = True
        if t.is_lower(i) and plain_common:
            ok = neighbour(i)
        elif t.is_caps(i) and t.caps_line(i) and term_common:
            ok = neighbour(i) or cue(i)
        elif not t.is_cap(i) and not t.is_lower(i):
            ok = not plain_common or neighbour(i)
        elif plain_common and t.sentence_start(i) and len(t.words[i]) <= 4 and term_common:
            ok = neighbour(i) or cue(i)  # "Will follow up." for a patient named Will
        if ok:
            span(t.starts[i], t.ends[i], Label.NAME, subtype)

    # initials: "J. Smith", "J Q Smith" before a matched family name; "JS", "J.S." next to it or after "initials"
    for idx, person in enumerate(people):
        if not person.initials:
            continue
        fam_idx = [i for i in range(n) if hit[i] is not None and hit[i][1] == idx and hit[i][2] in person.family]  # type: ignore[index]
        given_initials = {ini[0] for ini in person.initials} | {ini[1] for ini in person.initials if len(ini) == 3}
        for j in fam_idx:
            k = j - 1
            while k >= 0 and len(t.words[k]) == 1 and t.surface(k).isupper() and t.words[k] in given_initials:
                g = t.text[t.ends[k]:t.starts[k + 1]]
                if g.strip(" .") != "" or len(g) > 3:
                    break
                span(t.starts[k], t.ends[k], Label.NAME, person.subtype)
                k -= 1
        for ini in person.initials:
            for m in _initials_regex(ini).finditer(t.text):
                before = t.text[max(0, m.start() - 30):m.start()].lower()
                near_family = any(abs(t.starts[j] - m.end()) <= 3 or abs(m.start() - t.ends[j]) <= 3 for j in fam_idx)
                if "initial" in before or near_family:
                    end = m.end() - (1 if m.group().endswith(".") and len(ini) > 1 else 0)
                    span(m.start(), max(end, m.start() + 1), Label.NAME, person.subtype)


def _dedupe(spans: list[Span]) -> list[Span]:
    best: dict[tuple[int, int, Label], Span] = {}
    for s in spans:
        k = (s.start, s.end, s.label)
        cur = best.get(k)
        if cur is None or s.score > cur.score or (
            s.score == cur.score and _rank(s.subtype) < _rank(cur.subtype)
        ):
            best[k] = s
    return sorted(best.values(), key=lambda s: (s.start, s.end, s.label))


def _rank(subtype: str | None) -> int:
    if subtype is None:
        return 9
    try:
        return _SUBTYPE_RANK.get(Subtype(subtype), 5)
    except ValueError:
        return 5


# --- the processor ------------------------------------------------------------------------------------


@register("dictionary")
class DictionaryDetector:
    """Message identifiers + institution lists (see module docstring)."""

    name = "dictionary"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        message: bool = True
        fuzzy: bool = True
        fuzzy_threshold: int = Field(default=88, ge=50, le=100)
        institution_dirs: list[str] = Field(default_factory=list)
        first_names: bool = True
        surnames: bool = True
        hospitals: bool = True
        cities: bool = True
        states: bool = True
        countries: bool = True
        name_patterns: bool = True
        #: entries at or above this wordfreq Zipf value are common words (see dictionaries.vocab)
        common_word_zipf: float = Field(default=vocab.COMMON_WORD_ZIPF, ge=0, le=8)
        #: in ALL-CAPS lines a single word is a name only below this Zipf value (or if name-like)
        caps_zipf: float = Field(default=3.5, ge=0, le=8)
        min_name_len: int = Field(default=2, ge=1)
        city_min_population: int = Field(default=1000, ge=0)
        scores: _Scores = Field(default_factory=_Scores)

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.config = config
        vocab.load(ctx.cache_dir)
        self._key = _LexKey(
            config.first_names, config.surnames, config.hospitals, config.cities, config.states,
            config.countries, config.common_word_zipf, config.caps_zipf, config.min_name_len,
            config.city_min_population,
        )
        self._lexicons = [_lexicon(self._key, ctx.cache_dir)]
        self._lexicons += [_institution_lexicon(d, config.min_name_len) for d in config.institution_dirs]
        self.versions = {"vocab": vocab.vocab_version()}
        for lex in self._lexicons[1:]:
            self.versions.update(lex.versions)

    def detect(self, note_in: NoteIn) -> list[Span]:
        """All candidate spans of one note."""
        c = self.config
        t = _Text(note_in.text)
        spans: list[Span] = []
        if c.message:
            spans.extend(_find_message(t, note_in, c.fuzzy, c.fuzzy_threshold, c.common_word_zipf,
                                       c.min_name_len))
        spans.extend(_dedupe(_find_institution(t, self._lexicons, c.scores, c.name_patterns, c.common_word_zipf)))
        return spans

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        return [note.add_spans(self.detect(note.input)) for note in notes]
