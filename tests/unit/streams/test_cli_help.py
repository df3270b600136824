"""The command line's help and version (issue 27): ``--version``; options with fixed values list them (and refuse
others with exit 2); no flag carries a type label ("<bool>") in any command's help."""

from __future__ import annotations

import importlib.metadata
import re
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from processors.pipeline import PIPELINE_VERSION
from streams.cli import app
from streams.cli._util import EXIT_USAGE

#: wide enough that rich does not wrap an option's type column
WIDE = {"TERMINAL_WIDTH": "240", "COLUMNS": "240"}


def _commands() -> list[list[str]]:
    """The argv prefix of every command and group, the root included."""
    out: list[list[str]] = []

    def walk(cmd: Any, path: list[str]) -> None:  # typer's own click (typer._click) in recent typer
        out.append(path)
        if isinstance(getattr(cmd, "commands", None), dict):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return out


COMMANDS = _commands()


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=WIDE)


def test_when_version_is_asked_then_the_package_and_pipeline_versions_print(runner: CliRunner) -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == (f"deidstream {importlib.metadata.version('deidstream')} "
                                  f"(pipeline {PIPELINE_VERSION})")


def test_when_the_root_help_is_shown_then_it_offers_version(runner: CliRunner) -> None:
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0 and "--version" in res.stdout


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c) or "root" for c in COMMANDS])
def test_when_any_help_is_shown_then_no_flag_has_a_type_label(runner: CliRunner, argv: list[str]) -> None:
    res = runner.invoke(app, [*argv, "--help"])
    assert res.exit_code == 0, res.output
    assert "--help" in res.stdout and "<bool>" not in res.stdout


def test_when_synth_help_is_shown_then_it_lists_every_note_kind(runner: CliRunner) -> None:
    from processors.synthetic.generator import EXTRA_KINDS, KINDS

    text = " ".join(runner.invoke(app, ["synth", "--help"]).stdout.split())
    assert all(kind in text for kind in (*KINDS, *EXTRA_KINDS))


FIXED_VALUES = [
    (["deid"], "--mode", "tag|surrogate|dateshift"),
    (["worker"], "--mode", "tag|surrogate|dateshift"),
    (["demo"], "--mode", "tag|surrogate|dateshift"),
    (["samples"], "--mode", "tag|surrogate|dateshift"),
    (["train-ner"], "--device", "auto|cpu|cuda"),
]


@pytest.mark.parametrize(("argv", "option", "values"), FIXED_VALUES,
                         ids=[f"{a[0]}{o}" for a, o, _ in FIXED_VALUES])
def test_when_an_option_takes_fixed_values_then_its_help_lists_them_and_others_exit_2(
    runner: CliRunner, argv: list[str], option: str, values: str
) -> None:
    res = runner.invoke(app, [*argv, "--help"])
    line = next(ln for ln in res.stdout.splitlines() if re.search(rf"{option}\b", ln))
    assert f"<{values}>" in line, line
    bad = runner.invoke(app, [*argv, option, "nonsense", *(["in.jsonl", "-o", "out.jsonl"] if argv == ["deid"]
                                                          else [])])
    assert bad.exit_code == EXIT_USAGE
    assert all(v in bad.output for v in values.split("|"))
