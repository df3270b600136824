"""The layout's rules, checked on the source: no import cycle, dependencies point one way
(streams -> processors -> dictionaries, schemas), and no pipeline step imports another step.

Imports are read with ``ast`` (module-level and inside functions alike), so a lazy import that would
close a cycle or couple two steps is caught too."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest
from paths import REPO

from processors.pipeline import STEP_MODULES

PACKAGES = ("streams", "processors", "dictionaries", "schemas")
#: modules under processors/ that the steps share (they import no step): the pipeline, spans and offsets,
#: the residual-risk model (the metrics step publishes it, the LLM step gates on it), a note's language (the NER and
#: decide steps route by it)
SHARED_CORE = ("pipeline", "spans", "shapes", "risk", "budget", "profiles", "runtime", "language", "__init__")
#: what each top-level package may import from the project (besides itself)
ALLOWED = {
    "schemas": set(),
    "dictionaries": {"schemas"},
    "processors": {"dictionaries", "schemas"},
    "streams": {"processors", "dictionaries", "schemas"},
}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            rel = path.relative_to(REPO).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(module: str, path: Path) -> set[str]:
    """Project modules ``module`` imports (``from a import b`` counts as ``a.b`` when that is a module)."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_pkg else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            # the longest project module that the imported name lies in
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _step_of(module: str) -> str | None:
    """The step a module belongs to: a step's module, or any module inside a step's package."""
    for step, step_module in STEP_MODULES.items():
        unit = step_module.removesuffix(".step")
        if module == unit or module.startswith(unit + "."):
            return step
    return None


def test_every_module_imports() -> None:
    for pkg in PACKAGES:
        root = importlib.import_module(pkg)
        for info in pkgutil.walk_packages(root.__path__, pkg + "."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)


def test_the_graph_sees_the_project() -> None:
    assert len(MODULES) > 40
    assert "processors.pipeline" in GRAPH["processors.ensemble"]
    assert "dictionaries.message" in GRAPH["processors.leakcheck"]


def test_no_import_cycle() -> None:
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for dep in sorted(GRAPH[m]):
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep):] + [dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_dependencies_point_one_way(module: str) -> None:
    top = module.split(".")[0]
    wrong = {d for d in GRAPH[module] if d.split(".")[0] not in ALLOWED[top] | {top}}
    assert not wrong, f"{module} imports {sorted(wrong)}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("processors.")))
def test_no_step_imports_another_step(module: str) -> None:
    own = _step_of(module)
    others = {d for d in GRAPH[module] if _step_of(d) not in (None, own)}
    if own is None and module.split(".")[1] not in SHARED_CORE:
        return  # evaluation/, synthetic/, training/ are not steps: they may use the steps
    assert not others, f"{module} ({own or 'shared core'}) imports step modules {sorted(others)}"


def test_the_shared_core_imports_no_step() -> None:
    for core in ("processors", *(f"processors.{m}" for m in SHARED_CORE if m != "__init__")):
        assert not {d for d in GRAPH[core] if _step_of(d)}, core


def test_processors_holds_steps_and_named_support_packages_only() -> None:
    support = {*SHARED_CORE, "evaluation", "synthetic", "training"} - {"__init__"}
    steps = {STEP_MODULES[s].split(".")[1] for s in STEP_MODULES}
    top = {m.split(".")[1] for m in MODULES if m.startswith("processors.")}
    assert top <= steps | support, sorted(top - steps - support)
