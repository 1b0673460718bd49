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


def test_steady_rate_counts_completions_between_fill_and_drain():
    t = _table()
    # E2E 1.2, 1.5, 0.1, 2.3 s: median 1.35; from 0 + 1.35 to the last arrival 3: finishes
    # 2.1 and 2.5 in 1.65 s
    assert steady_qps(t, np.ones(4, bool)) == pytest.approx(2 / 1.65, rel=1e-5)
    t.measured[3] = False  # E2E median 1.2: [1.2, 2] holds the finishes 1.2 (its edge)
    assert steady_qps(t, np.ones(4, bool)) == pytest.approx(1 / 0.8, rel=1e-5)
    assert steady_qps(t, np.array([True, False, False, False])) is None  # one request
    t.arrival_s[:] = [0.0, 0.1, 0.2, 0.3]  # arrivals over 0.3 s, median E2E far longer: no steady part
    assert steady_qps(t, np.ones(4, bool)) is None


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
