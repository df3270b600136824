"""Run checkov (a dev dependency) and merge its JSON reports: failed and skipped checks, passed count."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def checkov_command() -> list[str]:
    """checkov from this environment; ``DEID_CHECKOV`` names another install (checkov pins old packaging
    and networkx, so a developer may keep it in a venv of its own)."""
    exe = os.environ.get("DEID_CHECKOV") or shutil.which("checkov", path=str(Path(sys.executable).parent))
    if exe:
        return [exe]
    if importlib.util.find_spec("checkov") is not None:
        return [sys.executable, "-m", "checkov.main"]
    pytest.fail("checkov is not installed (pip install -e '.[dev]'; or DEID_CHECKOV=/path/to/checkov)")


def run_checkov(args: list[str]) -> dict[str, Any]:
    """``checkov ARGS`` offline (no download of guidelines); {"failed": [...], "skipped": [...], "passed": N}."""
    env = {**os.environ, "BC_SKIP_MAPPING": "TRUE"}
    proc = subprocess.run(checkov_command() + args + ["--skip-download", "-o", "json"], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.stdout.strip(), proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    merged: dict[str, Any] = {"failed": [], "skipped": [], "passed": 0}
    for report in out if isinstance(out, list) else [out]:
        results = report.get("results", {})
        merged["failed"] += results.get("failed_checks", [])
        merged["skipped"] += results.get("skipped_checks", [])
        merged["passed"] += len(results.get("passed_checks", []))
    return merged
