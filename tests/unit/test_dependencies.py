"""Every third-party package the project imports is declared in pyproject.toml: in the core dependencies,
or in the extra named for where it is used (``report`` for processors/evaluation's HTML report)."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib

from paths import REPO

OURS = {"streams", "processors", "dictionaries", "schemas"}
#: modules allowed to use an extra's packages (imported in a guard that names the extra)
EXTRA_USERS = {"report": ("processors/evaluation/",)}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imports() -> dict[str, set[str]]:
    used: dict[str, set[str]] = {}
    for pkg in OURS:
        for path in (REPO / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods = [node.module]
                else:
                    continue
                for mod in mods:
                    top = mod.split(".")[0]
                    if top not in OURS and top not in sys.stdlib_module_names and top != "__future__":
                        used.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return used


def test_every_imported_package_is_declared() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {_name(r) for r in project["dependencies"]}
    extras = {k: {_name(r) for r in v} for k, v in project["optional-dependencies"].items()}
    dists = md.packages_distributions()
    problems = []
    for top, files in sorted(_imports().items()):
        names = {d.lower().replace("_", "-") for d in dists.get(top, [top])}
        if names & core:
            continue
        extra = next((e for e, reqs in extras.items() if names & reqs and e in EXTRA_USERS), None)
        if extra is not None and all(f.startswith(EXTRA_USERS[extra]) for f in files):
            continue
        problems.append(f"{top} ({sorted(names)}) imported by {sorted(files)[:3]}")
    assert not problems, problems
