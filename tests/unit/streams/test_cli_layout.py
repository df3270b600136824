"""The CLI package's layout (spaCy's ``cli/`` is the model): command modules import the shared helpers from
``streams.cli._util`` and never each other nor ``streams.cli`` itself; ``_util`` imports no command module;
``streams.cli`` mounts every command module; ``import streams.cli`` (``deidstream --help``) loads none of
the heavy libraries. Checked on the source (``ast``), imports inside functions included."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = "streams.cli"
_spec = importlib.util.find_spec(PACKAGE)
assert _spec is not None and _spec.submodule_search_locations
CLI_DIR = Path(next(iter(_spec.submodule_search_locations)))
NOT_COMMANDS = {"__init__", "__main__", "_util"}
COMMAND_MODULES = sorted(p.stem for p in CLI_DIR.glob("*.py") if p.stem not in NOT_COMMANDS)


def package_imports(module: str) -> set[str]:
    """Every module of ``streams.cli`` (the package included) that ``module``'s source imports."""
    tree = ast.parse((CLI_DIR / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: "." is streams.cli (in __init__ and in the modules alike), ".." streams
                base = PACKAGE.split(".")
                prefix = ".".join(base[: len(base) - (node.level - 1)])
                target = f"{prefix}.{node.module}" if node.module else prefix
            else:
                target = node.module or ""
            # ``from streams.cli import x`` imports the package and maybe the submodule x
            names = [target] + [f"{target}.{alias.name}" for alias in node.names
                                if (CLI_DIR / f"{alias.name}.py").exists() and target == PACKAGE]
        else:
            continue
        found.update(n for n in names if n == PACKAGE or n.startswith(PACKAGE + "."))
    return found


def test_there_are_command_modules() -> None:
    assert {"engine", "kafka", "demo", "bench", "eval", "train"} <= set(COMMAND_MODULES)


@pytest.mark.parametrize("module", COMMAND_MODULES)
def test_command_module_imports_only_util_from_the_package(module: str) -> None:
    assert package_imports(module) <= {f"{PACKAGE}._util"}, (
        f"{module}.py may import only {PACKAGE}._util from the package")


@pytest.mark.parametrize("module", COMMAND_MODULES)
def test_command_module_has_register(module: str) -> None:
    tree = ast.parse((CLI_DIR / f"{module}.py").read_text(encoding="utf-8"))
    assert any(isinstance(n, ast.FunctionDef) and n.name == "register" for n in tree.body)


def test_util_imports_no_command_module() -> None:
    assert package_imports("_util") == set()


def test_package_mounts_every_command_module() -> None:
    imported = package_imports("__init__")
    missing = [m for m in COMMAND_MODULES if f"{PACKAGE}.{m}" not in imported]
    assert not missing


def test_import_of_the_cli_loads_no_heavy_library() -> None:
    heavy = ("torch", "faust", "aiokafka", "scipy", "numpy", "transformers", "processors.pipeline")
    code = f"import sys, {PACKAGE}; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert res.stdout.strip() == ""
