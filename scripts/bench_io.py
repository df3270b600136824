"""What every benchmark script does with its result: print it as JSON and, with ``-o``, write it there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(result: Any, output: Path | None) -> None:
    """Print ``result`` as indented JSON; with ``output``, also write it there (its folder made first)."""
    text = json.dumps(result, indent=2)
    print(text)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n")
