"""What every benchmark script does with its result: print it as JSON and, with ``-o``, write it there; and the
fresh process a script runs a measurement in (``child_json``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def emit(result: Any, output: Path | None) -> None:
    """Print ``result`` as indented JSON; with ``output``, also write it there (its folder made first)."""
    text = json.dumps(result, indent=2)
    print(text)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n")


def child_json(code: str, *args: str, what: str = "the pipeline") -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (``python -c code args``) and return the JSON object its last line of output
    holds; a failure stops the script with the end of the child's error output (``what`` names it)."""
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result
