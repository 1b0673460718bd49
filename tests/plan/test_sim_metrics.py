"""What `fleetplan simulate` adds to the replay's metrics (solver/plan/sim_metrics.py), on a
hand-made request table."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from solver.plan.sim_metrics import instance_stats, quantiles, steady_qps
from solver.replay.metrics import instance_use
from solver.replay.requests import RequestTable


def _table():
    t = RequestTable()
    t.add([0.0, 1.0, 2.0, 3.0], 100, [11, 11, 1, 21])
    t.first_token_s[:] = [0.2, 1.5, 2.1, 3.3]
    t.finish_s[:] = [1.2, 2.5, 2.1, 5.3]
    return t


def _uniform(rate: float, n: int, e2e) -> RequestTable:
    t = RequestTable()
    a = np.arange(n) / rate
    t.add(a, 100, 11)
    t.first_token_s[:] = a + 0.1
    t.finish_s[:] = a + e2e(a)
    return t


def test_steady_rate_is_the_arrival_rate_after_a_ramp_up():
    # 100 QPS for 10 s; E2E grows from 1 s to 3 s over the first 2 s (the batches fill), then
    # stays at 3 s. Every request is served: the steady rate is the arrival rate, 100 QPS.
    # Counting completions between the first arrival + the median E2E (3 s) and the last
    # arrival (9.99 s) would read 600 / 6.99 = 85.8 (arrivals 1-2 s finish 3-5 s, 2-6.99 s
    # finish 5-9.99 s): the ramp's finishes trail its arrivals.
    t = _uniform(100.0, 1000, lambda a: 1.0 + np.minimum(a, 2.0))
    # p90 E2E 3 s: arrivals in [3, 6.99] (399 or 400 of them by rounding at the edges, E2E flat:
    # slope 1): 399 / 3.99 or 400 / 3.99
    assert steady_qps(t, np.ones(1000, bool)) == pytest.approx(100.0, abs=0.26)


def test_steady_rate_is_the_capacity_when_a_queue_grows():
    # 100 QPS offered to a server finishing one request every 1/40 s (FIFO): E2E grows, the p90
    # E2E is longer than half the run, so the middle half of the arrivals [2.4975, 7.4925] is
    # used; there finish times rise 1/40 s per 1/100 s of arrival (slope 2.5): 100 / 2.5 = 40.
    n = 1000
    t = _uniform(100.0, n, lambda a: 0.5 + np.arange(n) / 40.0 - a)
    got = steady_qps(t, np.ones(n, bool))
    mid = np.count_nonzero((t.arrival_s >= 9.99 / 4) & (t.arrival_s <= 9.99 * 3 / 4))
    assert got == pytest.approx(mid / (9.99 / 2) / 2.5, rel=1e-6)
    assert got == pytest.approx(40.0, rel=0.01)


def test_steady_rate_without_a_steady_part():
    t = _uniform(100.0, 4, lambda a: 2.0 - 10 * a)  # later arrivals finish first: nothing steady
    assert steady_qps(t, np.ones(4, bool)) is None
    assert steady_qps(t, np.array([True, False, False, False])) is None  # one request


def test_quantiles_are_the_cdf_in_ms():
    q = quantiles(np.array([0.1, 0.2, 0.3, np.inf]))
    assert len(q) == 101 and q[0] == 100.0 and q[50] == 200.0 and q[100] == 300.0
    assert quantiles(np.array([np.nan])) is None


def test_instance_statistics_become_the_integrals_the_metrics_read():
    # an instance that waited 3 request-seconds and held 500 of 1000 blocks for 2 s of 10
    inst = SimpleNamespace(stats=SimpleNamespace(busy_s=4.0, waiting_s=3.0, kv_block_s=1000.0, preemptions=2,
                                                 max_waiting=5), kv=SimpleNamespace(total=1000))
    use = instance_use(instance_stats([inst, inst], 10.0), 10.0)
    assert use.instances == 2 and use.busy_share == pytest.approx(0.4)
    assert use.mean_queue_len == pytest.approx(0.3) and use.max_queue_len == 5
    assert use.mean_kv_use == pytest.approx(0.1) and use.preemptions == 4
    assert instance_stats([SimpleNamespace()], 10.0) == []
    ready = SimpleNamespace(busy_s=1.0, queue_integral=2.0, kv_integral=3.0, preemptions=0)
    assert instance_stats([SimpleNamespace(stats=ready)], 10.0) == [ready]


def test_the_command_lines_router_names_are_the_routers():
    from solver.plan.sim_sources import ROUTERS
    from solver.replay.router import POLICIES

    assert ROUTERS == POLICIES
