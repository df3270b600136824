"""Fixtures of the processors' tests that run torch on a set number of threads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
import torch


@pytest.fixture()
def two_threads() -> Iterator[None]:
    """torch on two intra-op threads for the test (the NER runs its int8 windows side by side, and starts ahead, only
    then; CI machines have two cores), the setting before put back after."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.fixture()
def new_thread_setting() -> Callable[[], int]:
    """What ``torch.get_num_threads()`` says in a thread started now: torch gives a new thread the last setting made
    anywhere in the process."""

    def seen() -> int:
        got: list[int] = []
        thread = threading.Thread(target=lambda: got.append(torch.get_num_threads()))
        thread.start()
        thread.join()
        return got[0]

    return seen
