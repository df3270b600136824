"""A time budget for the notes in hand, checked cooperatively.

The worker runs the pipeline in a worker thread; a Python thread cannot be stopped from outside, and a step in
a separate process would need its own copy of the models. So the budget is a deadline that the code checks at
safe points: :class:`processors.pipeline.Pipeline` before every step, and steps inside their long loops (the
NER step between model windows). Past the deadline :func:`check` raises
:class:`schemas.errors.NoteTimeout` (E422), which the Pipeline lets through instead of isolating it per note.
A note can therefore overrun its budget by at most one stretch of work between two checks (one NER window, one
step without inner checks).

The deadline lives in a :class:`contextvars.ContextVar`: it belongs to the thread (or task) that set it and
needs no parameter through the steps' ``process_batch`` signatures; without :func:`deadline`, :func:`check`
does nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from schemas.errors import NoteTimeout

#: (monotonic deadline, budget in seconds) of the work in hand, or None
_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("deidstream_deadline", default=None)


@contextmanager
def deadline(budget_s: float | None) -> Iterator[None]:
    """Run the body under a budget of ``budget_s`` seconds from now (None: no budget)."""
    if budget_s is None:
        yield
        return
    token = _DEADLINE.set((time.monotonic() + budget_s, budget_s))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check(stage: str | None = None) -> None:
    """Raise :class:`NoteTimeout` when the deadline in force has passed."""
    current = _DEADLINE.get()
    if current is not None and time.monotonic() > current[0]:
        raise NoteTimeout(current[1], stage)


def remaining_s() -> float | None:
    """Seconds left before the deadline in force (negative once past), or None without one."""
    current = _DEADLINE.get()
    return None if current is None else current[0] - time.monotonic()
