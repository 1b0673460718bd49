"""The replay's summaries (solver/plan/sim_metrics.py) on a hand-made request table."""

from __future__ import annotations

import numpy as np
import pytest

from solver.plan.sim_metrics import metrics, slo_checks
from solver.replay.requests import RequestTable
from solver.schema.result import SloBounds


def _table():
    # four requests: arrival, first token, finish (s), output tokens, queued (s)
    t = RequestTable()
    t.add([0.0, 1.0, 2.0, 3.0], 100, [11, 11, 1, 21])
    t.first_token_s[:] = [0.2, 1.5, 2.1, 3.3]
    t.finish_s[:] = [1.2, 2.5, 2.1, 5.3]
    t.queued_s[:] = [0.0, 0.4, 0.0, 0.1]
    t.preemptions[:] = [0, 2, 0, 1]
    return t


def test_metrics_by_hand():
    t = _table()
    slo = SloBounds(ttft_p50_ms=300.0, ttft_p99_ms=400.0, tpot_p99_ms=95.0)
    m = metrics(t, np.ones(4, bool), slo)
    # TTFT 200, 500, 100, 300 ms; TPOT (finish - first) / (out - 1): 100, 100, -, 100 ms
    assert m.ttft_ms.p50 == pytest.approx(250.0) and m.ttft_ms.mean == pytest.approx(275.0)
    assert m.ttft_ms.p99 == pytest.approx(500 - 0.03 * 200)  # numpy linear: 300 + 0.97 x 200
    assert m.tpot_ms.p50 == pytest.approx(100.0)
    assert m.e2e_ms.p50 == pytest.approx((1200 + 1500) / 2)
    # per request: TTFT <= 400 and TPOT <= 95: only the one-token answer (TTFT 100, no TPOT)
    assert m.goodput == pytest.approx(0.25)
    # finishes at 1.2, 2.1, 2.5, 5.3: 3 gaps over 4.1 s
    assert m.throughput_qps == pytest.approx(3 / 4.1, rel=1e-5)
    assert m.window_s == pytest.approx(5.3)
    # waits: 0.4 s and 0.1 s, never overlapping: 0.5 request-seconds over 5.3 s, at most 1
    assert m.queue_mean == pytest.approx(0.5 / 5.3, abs=1e-4) and m.queue_max == 1
    assert m.preemptions == 3 and m.requests == 4 and m.unfinished == 0


def test_unmeasured_and_unfinished_requests():
    t = _table()
    t.measured[0] = False
    t.finish_s[3] = np.inf
    m = metrics(t, np.ones(4, bool), SloBounds())
    assert m.requests == 2 and m.unfinished == 1 and m.goodput is None


def test_slo_checks_compare_the_percentiles():
    m = metrics(_table(), np.ones(4, bool), SloBounds())
    checks = slo_checks(m, SloBounds(ttft_p50_ms=300.0, tpot_p99_ms=90.0))
    assert [(c.metric, c.met) for c in checks] == [("ttft_p50_ms", True), ("tpot_p99_ms", False)]
