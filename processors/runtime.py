"""How many CPU threads one process may use, and pinning them (torch, OpenMP, MKL, OpenBLAS).

N worker processes on C cores run best with ``C // N`` threads each: torch's default (one thread per core in
every process) makes N processes oversubscribe the cores, and the scheduler's switching then costs more
than the extra processes bring. :func:`pin_threads` sets the thread count of the numeric libraries; it
must run before ``torch`` is imported for the OpenMP/MKL environment to take effect (it also sets torch's
own count when torch is already loaded).
"""

from __future__ import annotations

import gc
import logging
import math
import os
import sys
from pathlib import Path

logger = logging.getLogger(__name__)

#: Environment variables the numeric libraries read once, at import (rayon's: the fast tokenizer's thread pool).
THREAD_ENV: tuple[str, ...] = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS",
                               "RAYON_RS_NUM_CPUS")


def _cgroup_cpus(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The container's CPU quota in cores (cgroup v2 ``cpu.max`` or v1 ``cfs_quota_us``), None when unlimited."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        if quota != "max":
            return int(quota) / int(period)
        return None
    except (OSError, ValueError):
        pass
    try:
        q = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        p = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return q / p if q > 0 and p > 0 else None
    except (OSError, ValueError):
        return None


def usable_cpus() -> int:
    """Cores this process may run on: its CPU affinity, capped by a container CPU quota (rounded up)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_cpus()
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def threads_per_process(processes: int, threads: int | None = None) -> int:
    """``threads`` when given (> 0), else the usable cores shared among ``processes`` (at least 1)."""
    if threads is not None and threads > 0:
        return threads
    return max(1, usable_cpus() // max(1, processes))


def pin_threads(threads: int) -> None:
    """Limit this process's numeric libraries to ``threads`` threads. Before ``import torch`` the
    OpenMP/MKL environment governs every library; after it, torch's intra-op count is set directly, and
    its inter-op pool (unused by inference) to one thread when that is still possible."""
    threads = max(1, int(threads))
    for var in THREAD_ENV:
        os.environ[var] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # only settable before any inter-op work ran in this process
            pass
    logger.debug("numeric libraries pinned to %d thread(s)", threads)


def numeric_threads() -> int:
    """The thread count this process's numeric libraries run on: the pinned count (:func:`pin_threads`, or
    ``OMP_NUM_THREADS`` set by the deployment), else torch's when torch is loaded, else the usable cores. For a
    library called with an explicit count (LightGBM's ``predict``), so that it follows the same pinning as torch."""
    pinned = os.environ.get("OMP_NUM_THREADS", "")
    if pinned.strip().isdigit() and int(pinned) > 0:
        return int(pinned)
    torch = sys.modules.get("torch")
    if torch is not None:
        return max(1, int(torch.get_num_threads()))
    return usable_cpus()


def freeze_loaded() -> None:
    """Move every object alive now (the loaded models, vocabularies and caches: ~600,000 objects with the default
    pipeline) out of the garbage collector's reach, after one collection of what loading left behind. Python's full
    collections otherwise walk them all again and again while notes flow (0.27 s each: 0.46 ms a note on average
    over 1,600 bench notes, 0.13 ms after the freeze; ``scripts/bench_gc.py``). Call it once a long-lived pipeline
    is built; what it froze is still freed by reference counting, only cycles among it are not."""
    gc.collect()
    gc.freeze()
