"""The language a note is written in, for the steps that serve a note with models of its language.

The shipped NER and decision models were fitted on English notes; Spanish notes are served by a pair trained with
Spanish clinical text as well (issue 25: scripts/results/QUALITY_HISTORY.md, "Spanish notes to their own models"). Which languages are
routed is pipeline policy (``SharedPolicy.language_routes``), so the NER step and the decide step always agree on
a note's route; each step owns the models it runs for a route.

A note is routed only when a language identifier (py3langid: langid.py's naive Bayes model over byte n-grams, 140
languages, shipped in its wheel; nothing is downloaded) gives one of the routed languages a normalised probability
of at least :data:`MIN_PROBABILITY`; anything else, a short or mixed note included, stays on the default (English)
route. A misrouted note still gets a NER and a decision model that read English and Spanish.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from schemas.errors import ConfigError

#: the identifier must give the language (with its varieties) at least this probability, normalised over its 140
#: languages: more than all the others together. Every MEDDOCAN train and dev note reads as Spanish at 0.977 or more
#: (88% of their single sentences of over 40 characters), while no PhysioNet dev note, presidio_synth_v2 sentence or
#: German probe sentence reads above 0.39 as Spanish (README, Quality)
MIN_PROBABILITY = 0.5
#: a routed language's varieties that the identifier tells apart but its route serves too: for Spanish the
#: Ibero-Romance varieties of Spain that langid.py's model separates from it (Aragonese, Asturian, Extremaduran) and
#: names for Spanish text it is unsure of; other languages (Galician, Catalan, Portuguese) are languages of their own
VARIETIES: dict[str, tuple[str, ...]] = {"es": ("es", "an", "ast", "ext")}
#: only the start of a long note is read: the cost grows with the length read, the answer hardly does
MAX_CHARS = 8000
#: the default route's name (the models a step runs when no routed language is recognised)
DEFAULT_ROUTE = "default"


@functools.lru_cache(maxsize=1)
def _identifier() -> Any:
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError:
        raise ConfigError("language routes need py3langid (pip install 'py3langid>=0.4,<0.5'), or set "
                          "pipeline.policy.language_routes to []") from None
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def load_identifier() -> None:
    """Load the identifier now (once a process), so that a step with routes pays it, or fails, at construction
    rather than at its first note."""
    _identifier()


def probabilities(text: str) -> Mapping[str, float]:
    """Language code (ISO 639-1, else 639-3) -> normalised probability of the note's language, read from its first
    :data:`MAX_CHARS` characters; remembered per start (the NER and the decide step ask for the same note)."""
    return _probabilities(text[:MAX_CHARS])


@functools.lru_cache(maxsize=1024)  # at most 1,024 starts of 8,000 characters: 8-32 MiB
def _probabilities(start: str) -> Mapping[str, float]:
    return MappingProxyType({str(lang): float(p) for lang, p in _identifier().rank(start)})


def route(text: str, languages: Collection[str]) -> str:
    """The route of a note: the one of ``languages`` that the identifier gives, with its :data:`VARIETIES`, at least
    :data:`MIN_PROBABILITY`, else :data:`DEFAULT_ROUTE`. No languages: always the default route (the identifier is
    not loaded)."""
    if not languages or not text.strip():
        return DEFAULT_ROUTE
    probs = probabilities(text)
    for lang in languages:
        if sum(probs.get(v, 0.0) for v in VARIETIES.get(lang, (lang,))) >= MIN_PROBABILITY:
            return lang  # at most one language can hold more than half
    return DEFAULT_ROUTE


def by_route(texts: Sequence[str], languages: Collection[str]) -> dict[str, list[int]]:
    """The indices of ``texts`` by their :func:`route`, in order (a step runs each route's model once a batch)."""
    groups: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        groups.setdefault(route(text, languages), []).append(i)
    return groups


def route_folder(step: str, language: str, named: Mapping[str, str], shipped: Mapping[str, Path]) -> Path:
    """The model folder a step runs for a routed ``language``: the one its options name, else the shipped one; a
    language with neither is a configuration error."""
    if language in named:
        return Path(named[language]).expanduser()
    if language in shipped:
        return shipped[language]
    raise ConfigError(f"{step}: no model for the routed language {language!r}; name one in route_model_dirs or leave "
                      "the language out of pipeline.policy.language_routes")


def known_languages() -> frozenset[str]:
    """The codes the identifier can name (a policy naming another is a configuration error)."""
    return frozenset(str(x) for x in _identifier().nb_classes)
