"""Where the tests' files are: the checkout, the test data, and ``../shared`` beside the checkout."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
DATA = TESTS / "data"
SHARED = REPO.parent / "shared"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module (the scripts are no package), registered in ``sys.modules`` under ``name``
    as an import would (a script's dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def readme_section(heading: str) -> str:
    """The README's text after the line ``heading`` ("## Configuration", "### Error codes") up to the next level-two
    heading."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return readme.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
