"""The one cache module: where derived vocabularies live, and how they are written.

Derived data (name/place vocabularies, the medical vocabulary, lexicon automata) is built on first use and
pickled into one folder: :func:`set_cache_dir` if called, else ``DEID_CACHE_DIR``, else
``~/.cache/deidstream``. Files are written via a temp file and a rename, so a concurrent reader (another
worker sharing the folder) never sees a torn file; a read-only folder only makes the next start slower.
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_override: Path | None = None


def set_cache_dir(path: Path | str | None) -> None:
    """Use ``path`` for derived data in this process (``None``: back to ``DEID_CACHE_DIR`` / the default)."""
    global _override
    _override = Path(path) if path is not None else None


def cache_dir() -> Path:
    """The cache folder: :func:`set_cache_dir`, else ``DEID_CACHE_DIR``, else ``~/.cache/deidstream``."""
    if _override is not None:
        return _override
    env = os.environ.get("DEID_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "deidstream"


def read_versioned(path: Path, version: str, what: str) -> dict[str, Any] | None:
    """The dict pickled at ``path`` by :func:`write_atomic` when its ``version`` is ``version``; None when the file
    is missing, of another version, or unreadable (a corrupt or foreign cache file is rebuilt, never fatal: a
    warning names ``what``)."""
    if not path.exists():
        return None
    try:
        with path.open("rb") as f:
            data = pickle.load(f)
    except Exception as exc:  # noqa: BLE001 - rebuilt by the caller
        logger.warning("%s cache unreadable (%s); rebuilding", what, type(exc).__name__)
        return None
    return data if isinstance(data, dict) and data.get("version") == version else None


def write_atomic(path: Path, obj: object) -> bool:
    """Pickle ``obj`` to ``path`` via a temp file and rename. False (and a warning) when it cannot."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; other workers sharing the cache must read it
        os.replace(tmp, path)
        return True
    except OSError as exc:
        logger.warning("cannot write cache file %s (%s)", path.name, type(exc).__name__)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return False
