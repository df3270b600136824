"""Worker processes (``--workers N``): the same output as one process, threads pinned, load times reported."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from processors.runtime import (
    THREAD_ENV,
    _cgroup_cpus,
    numeric_threads,
    pin_threads,
    threads_per_process,
    usable_cpus,
)
from processors.synthetic.generator import generate
from schemas.models import NoteIn
from streams.cli._util import load_settings, note_record, pipeline_config_for, run_notes, steady_rate


def _notes(n: int) -> list[NoteIn]:
    return [NoteIn(note_id=f"n{i}", text=r["text"]) for i, r in enumerate(generate(n, 7))]


def _records(workers: int, notes: list[NoteIn], stats: list[dict[str, Any]]) -> list[str]:
    settings = load_settings(None)
    cfg = pipeline_config_for(settings, detect_only=True)
    return [json.dumps(note_record(n, with_text=False)) for batch in
            run_notes(settings, cfg, notes, batch_size=5, workers=workers, stats=stats) for n in batch]


@pytest.mark.slow
def test_when_two_worker_processes_run_then_output_equals_one_process_and_each_reports_its_load() -> None:
    notes = _notes(24)
    one: list[dict[str, Any]] = []
    two: list[dict[str, Any]] = []
    want = _records(1, notes, one)
    got = _records(2, notes, two)
    assert got == want  # byte for byte, in input order
    assert sum(len(json.loads(r)["spans"]) for r in want) > 20  # the models ran: real spans to compare
    assert len(one) == 1 and one[0]["pid"] == os.getpid()
    assert len(two) == 2 and {s["pid"] for s in two} != {os.getpid()} and len({s["pid"] for s in two}) == 2
    assert all(s["load_s"] > 0 and s["threads"] == threads_per_process(2) for s in two)


def test_when_threads_are_pinned_then_the_environment_and_torch_follow() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    saved = {v: os.environ.get(v) for v in THREAD_ENV}
    try:
        pin_threads(1)
        assert all(os.environ[v] == "1" for v in THREAD_ENV)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


@pytest.mark.parametrize(("processes", "threads", "expected"), [(1, None, None), (2, 3, 3), (64, None, 1)])
def test_when_processes_share_the_cores_then_each_gets_its_part(processes: int, threads: int | None,
                                                                expected: int | None) -> None:
    want = usable_cpus() // processes or 1 if expected is None else expected
    assert threads_per_process(processes, threads) == want


def test_when_a_container_has_a_cpu_quota_then_it_caps_the_cores(tmp_path: Any) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert _cgroup_cpus(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert _cgroup_cpus(tmp_path) is None


def test_when_batches_come_back_then_the_steady_rate_counts_only_those_after_the_last_load() -> None:
    loads = [{"ready_at": 10.0}, {"ready_at": 12.0}]
    done = [(11.0, 5), (13.0, 5), (14.0, 10)]
    assert steady_rate(done, loads) == pytest.approx(15 / 2.0)
    assert steady_rate([(11.0, 5)], loads) is None


@pytest.mark.slow
def test_when_a_worker_process_cannot_build_the_pipeline_then_the_error_reaches_the_caller() -> None:
    from schemas.errors import ConfigError

    settings = load_settings(None)
    cfg = pipeline_config_for(settings, detect_only=True, steps="regex,ner")
    cfg = cfg.model_copy(update={"options": {**cfg.options, "ner": {"model_dir": "/nonexistent/model"}}})
    with pytest.raises(ConfigError, match="NER model folder not found"):
        list(run_notes(settings, cfg, _notes(4), batch_size=2, workers=2))


def test_when_the_caller_stops_reading_early_then_the_pool_closes_without_leaving_workers() -> None:
    import multiprocessing

    settings = load_settings(None)
    cfg = pipeline_config_for(settings, detect_only=True, steps="regex")
    batches = run_notes(settings, cfg, _notes(40), batch_size=2, workers=2)
    first = next(batches)
    assert [n.note_id for n in first] == ["n0", "n1"]
    batches.close()  # closed and joined, not terminated: a terminated worker may hold the result queue's lock
    assert multiprocessing.active_children() == []


def test_when_the_parent_has_stopped_then_a_worker_skips_the_batches_left(monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    from streams.cli import _util

    abort = multiprocessing.Event()
    abort.set()
    # no pipeline built in this process: a batch that were run would fail the worker's assertion
    monkeypatch.setattr(_util, "_WORKER_ABORT", abort)
    monkeypatch.setattr(_util, "_WORKER_PIPELINE", None)
    assert _util._run_in_worker(_notes(2)) == ([], None)


def test_when_threads_are_pinned_then_lightgbm_is_called_with_the_same_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert numeric_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")  # a deployment's typo: the next source decides
    torch = pytest.importorskip("torch")
    assert numeric_threads() == torch.get_num_threads()


def test_when_the_first_batch_has_run_then_what_was_loaded_is_frozen_and_the_rest_still_collected() -> None:
    import gc

    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        settings = load_settings(None)
        cfg = pipeline_config_for(settings, detect_only=True)
        batches = run_notes(settings, cfg, _notes(6), batch_size=3, workers=1)
        next(batches)
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # the models and vocabularies the first batch loaded
        list(batches)
        cycle: list[Any] = []
        cycle.append(cycle)  # garbage made after the freeze is still collected
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
