"""processors.language: which notes take a routed language's models (sentences of our own, no corpus text)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from processors import language
from processors.pipeline import PipelineConfig, SharedPolicy

SPANISH = ("Paciente varón de 64 años que acude al servicio de urgencias por dolor torácico opresivo de dos horas de "
           "evolución, irradiado al brazo izquierdo y acompañado de sudoración profusa.")
ENGLISH = ("Patient is a 64 year old man who came to the emergency department with two hours of crushing chest pain "
           "radiating to the left arm, with profuse sweating.")
TELEGRAPHIC = "NEURO: A&O X3, MAE, PERRL. RESP: CPAP 5/5, FIO2 40%. LEVO WEANED OFF. FOLEY TO GRAVITY. PLAN: CONT."
GERMAN = ("Der Patient wurde am Morgen mit akuten Brustschmerzen in die Notaufnahme gebracht und dort sofort "
          "untersucht, die Ehefrau begleitete ihn.")


@pytest.mark.parametrize(("text", "languages", "expected"), [
    (SPANISH, ("es",), "es"),
    (ENGLISH, ("es",), language.DEFAULT_ROUTE),
    (TELEGRAPHIC, ("es",), language.DEFAULT_ROUTE),
    (GERMAN, ("es",), language.DEFAULT_ROUTE),  # a language not routed stays on the default route
    (GERMAN, ("es", "de"), "de"),
    # a short Spanish report line the identifier names Aragonese (0.39) is Spanish with its varieties (0.82)
    ("Informe remitido a la Dra. Carmen Villalobos Ruiz, Servicio de Cardiología, Hospital General de Albacete, "
     "C/ Mayor 12, 02001 Albacete. NHC 4478123.", ("es",), "es"),
    (SPANISH, (), language.DEFAULT_ROUTE),  # no routes: nothing is identified
    ("", ("es",), language.DEFAULT_ROUTE),
    ("   \n ", ("es",), language.DEFAULT_ROUTE),
    ("Hola", ("es",), language.DEFAULT_ROUTE),  # too short to be sure of
])
def test_when_a_note_is_routed_then_only_a_sure_routed_language_leaves_the_default(
        text: str, languages: tuple[str, ...], expected: str) -> None:
    assert language.route(text, languages) == expected


def test_when_a_long_note_is_identified_then_only_its_start_is_read() -> None:
    # a Spanish start and an English tail past MAX_CHARS: the tail does not count
    text = (SPANISH + " ") * (language.MAX_CHARS // len(SPANISH) + 1) + (ENGLISH + " ") * 200
    assert language.probabilities(text) == language.probabilities(text[:language.MAX_CHARS])
    assert language.route(text, ("es",)) == "es"


def test_when_the_policy_names_languages_then_unknown_codes_are_a_config_error() -> None:
    assert SharedPolicy().language_routes == ("es",)
    assert SharedPolicy(language_routes=("es", "es", "de")).language_routes == ("es", "de")
    assert SharedPolicy(language_routes=()).language_routes == ()
    for bad in (("xx",), ("spanish",), (language.DEFAULT_ROUTE,)):
        with pytest.raises(ValidationError, match="language_routes"):
            SharedPolicy(language_routes=bad)


def test_when_the_routes_change_then_the_config_hash_changes() -> None:
    assert (PipelineConfig().config_hash()
            != PipelineConfig(policy=SharedPolicy(language_routes=())).config_hash())


def test_when_a_note_is_identified_then_the_probabilities_are_the_identifiers_over_all_its_languages() -> None:
    probs = language.probabilities(SPANISH)
    assert abs(sum(probs.values()) - 1.0) < 1e-6 and set(probs) == language.known_languages()
    for text, lang in ((SPANISH, "es"), (ENGLISH, "en")):
        probs = language.probabilities(text)
        assert max(probs, key=probs.__getitem__) == lang


def test_when_the_identifier_is_not_installed_then_routes_are_a_config_error_with_the_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from schemas.errors import ConfigError

    language._identifier.cache_clear()
    monkeypatch.setitem(sys.modules, "py3langid", None)  # import fails as if it were not installed
    monkeypatch.setitem(sys.modules, "py3langid.langid", None)
    try:
        with pytest.raises(ConfigError, match=r"pip install 'py3langid.*language_routes to \[\]"):
            language.load_identifier()
        assert language.route(SPANISH, ()) == language.DEFAULT_ROUTE  # no routes: the identifier is not needed
    finally:
        monkeypatch.undo()
        language._identifier.cache_clear()
    assert language.route(SPANISH, ("es",)) == "es"
