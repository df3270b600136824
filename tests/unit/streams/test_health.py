"""Health state: liveness follows the time the batch in hand has run; readiness needs loaded models, a
completed assignment, liveness, and not stopping. Lag is end minus committed, never negative."""

from __future__ import annotations

import pytest

from streams.health import Health, LagTracker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_when_a_batch_runs_past_the_limit_then_not_live_until_it_finishes() -> None:
    clock = Clock()
    h = Health(stuck_after_s=5.0, clock=clock)
    assert h.liveness()[0]
    h.batch_started()
    clock.now += 5.0
    assert h.liveness()[0]
    clock.now += 0.5
    live, body = h.liveness()
    assert not live and body["status"] == "stuck" and body["batch_running_s"] == 5.5
    h.batch_finished()
    assert h.liveness() == (True, {"status": "ok", "batch_running_s": 0.0, "stuck_after_s": 5.0})


@pytest.mark.parametrize(("loaded", "assigned", "stopping", "stuck", "ready"), [
    (False, [("raw", 0)], False, False, False),
    (True, None, False, False, False),
    (True, [("raw", 0), ("raw", 1)], False, False, True),
    (True, [], False, False, True),  # more workers than partitions: a warm standby is ready
    (True, [("raw", 0)], True, False, False),
    (True, [("raw", 0)], False, True, False),
])
def test_readiness_table(loaded: bool, assigned: list[tuple[str, int]] | None, stopping: bool, stuck: bool,
                         ready: bool) -> None:
    clock = Clock()
    h = Health(stuck_after_s=1.0, clock=clock)
    h.models_loaded = loaded
    h.stopping = stopping
    if assigned is not None:
        h.assigned(assigned)
    if stuck:
        h.batch_started()
        clock.now += 2.0
    ok, body = h.readiness()
    assert ok is ready and body["status"] == ("ready" if ready else "not ready")
    assert body["partitions"] == len(assigned or [])


def test_lag_is_end_minus_committed_and_revoked_partitions_leave_the_snapshot() -> None:
    lag = LagTracker()
    lag.committed({("raw", 0): 10, ("raw", 1): 7})
    lag.update({("raw", 0): 25, ("raw", 1): 5}, {tp: lag.committed_offset(tp) or 0 for tp in [("raw", 0), ("raw", 1)]})
    assert lag.snapshot() == {("raw", 0): 15, ("raw", 1): 0}
    lag.revoked([("raw", 0)])
    assert lag.snapshot() == {("raw", 1): 0} and lag.committed_offset(("raw", 0)) is None


def test_broker_watch_counts_time_down_from_the_first_failed_probe_and_resets_on_success() -> None:
    from streams.health import BrokerWatch

    clock = Clock()
    watch = BrokerWatch(["127.0.0.1:1"], timeout_s=10.0, clock=clock)
    assert watch.observe(True) == 0.0
    assert watch.observe(False) == 0.0
    clock.now += 6
    assert watch.observe(False) == 6.0 and not watch.expired(6.0)
    clock.now += 5
    down = watch.observe(False)
    assert down == 11.0 and watch.expired(down)
    assert watch.observe(True) == 0.0 and watch.down_since is None


def test_broker_watch_probe_fails_on_a_closed_port_and_succeeds_on_a_listening_one() -> None:
    import asyncio
    import socket

    from streams.broker import free_port
    from streams.health import BrokerWatch

    assert asyncio.run(BrokerWatch([f"127.0.0.1:{free_port()}"], timeout_s=1).reachable(0.5)) is False
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]
        servers = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{port}"]
        assert asyncio.run(BrokerWatch(servers, timeout_s=1).reachable(0.5)) is True
