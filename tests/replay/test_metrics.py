"""Replay metrics: hand-computed percentiles, TPOT and throughput on a three-request table,
goodput as vLLM's --goodput counts it, SLO checks, Little's law, masks and measured rows,
instance statistics, and the document's round trip."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.replay.metrics import (
    Selection,
    instance_use,
    latency_stats,
    littles_law,
    mean_in_system,
    pool_metrics,
    replay_report,
    request_bounds,
    selected,
    tpot_s,
)
from solver.replay.requests import RequestTable
from solver.replay.sources import ArrivalSource
from solver.schema.problem import Slo
from solver.schema.replay import ReplayReport, RequestBounds


def three() -> RequestTable:
    tab = RequestTable()
    tab.add([0.0, 1.0, 2.0], [100, 200, 300], [11, 6, 1])
    tab.first_token_s[:] = [0.1, 1.3, 2.2]
    tab.finish_s[:] = [1.1, 2.3, 3.2]
    tab.queued_s[:] = [0.0, 0.2, 0.1]
    tab.preemptions[:] = [0, 2, 0]
    return tab


def test_three_requests_by_hand():
    tab = three()
    m = pool_metrics(tab, Selection("chat", "colocated"), (0.0, 3.2))
    # TTFT 100, 300, 200 ms: p50 200; p90 at rank 1.8 = 200 + 0.8 x 100; p99 at 1.98
    assert (m.ttft.p50_ms, m.ttft.p90_ms, m.ttft.p99_ms) == pytest.approx((200, 280, 298))
    assert m.ttft.mean_ms == pytest.approx(200) and m.ttft.max_ms == pytest.approx(300)
    # TPOT: (1.1 - 0.1) / 10 = 100 ms, (2.3 - 1.3) / 5 = 200 ms; one output token: no TPOT
    assert m.tpot.count == 2
    assert (m.tpot.p50_ms, m.tpot.p90_ms, m.tpot.p99_ms) == pytest.approx((150, 190, 199))
    assert (m.e2e.p50_ms, m.e2e.max_ms) == pytest.approx((1200, 1300))
    assert (m.queue_wait.p50_ms, m.queue_wait.max_ms) == pytest.approx((100, 200))
    assert m.requests == 3 and m.unfinished == 0 and m.window_s == pytest.approx(3.2)
    assert m.throughput_rps == pytest.approx(3 / 3.2)
    assert m.output_tokens_per_s == pytest.approx(18 / 3.2) and m.input_tokens_per_s == pytest.approx(600 / 3.2)
    assert m.preemptions == 2
    assert m.mean_in_system == pytest.approx(3.6 / 3.2)  # E2Es 1.1 + 1.3 + 1.2 s inside the window
    assert m.goodput_share is None and m.slo == [] and m.instances is None


def test_tpot_of_single_token_requests_is_zero_for_goodput():
    tab = three()
    assert tpot_s(tab, np.arange(3)) == pytest.approx([0.1, 0.2])
    assert tpot_s(tab, np.arange(3), single_as_zero=True) == pytest.approx([0.1, 0.2, 0.0])


def test_goodput_counts_requests_within_every_bound():
    tab = three()
    bounds = RequestBounds(ttft_ms=250, tpot_ms=150)
    m = pool_metrics(tab, Selection("chat", "all", bounds=bounds), (0.0, 3.2))
    # request 0: 100 ms / 100 ms good; 1: TTFT 300 over; 2: TTFT 200, TPOT 0 (one token) good
    assert m.goodput_share == pytest.approx(2 / 3) and m.goodput_rps == pytest.approx(2 / 3.2)
    m = pool_metrics(tab, Selection("chat", "all", bounds=RequestBounds(e2e_ms=1150)), (0.0, 3.2))
    assert m.goodput_share == pytest.approx(1 / 3)


def test_slo_bounds_become_per_request_thresholds_and_percentile_checks():
    slo = Slo(ttft_ms=250, tpot_ms={"p50": 120, "p99": 250})
    assert request_bounds(slo) == RequestBounds(ttft_ms=250, tpot_ms=250)  # p99 where given, else p50
    assert request_bounds(Slo()) is None and request_bounds(None) is None
    m = pool_metrics(three(), Selection("chat", "all", slo=slo), (0.0, 3.2))
    checks = {(c.metric, c.quantile): (c.bound_ms, c.simulated_ms, c.met) for c in m.slo}
    assert checks == {("ttft", "p50"): (250, pytest.approx(200), True),
                      ("tpot", "p50"): (120, pytest.approx(150), False),
                      ("tpot", "p99"): (250, pytest.approx(199), True)}
    assert m.goodput_share == pytest.approx(2 / 3)  # TTFT <= 250 and TPOT <= 250: requests 0 and 2


def test_only_measured_rows_in_the_mask_count_and_unfinished_are_reported():
    tab = three()
    tab.add([3.0, 0.0], [5, 5], [5, 5], measured=[True, False])  # one still in flight, one warm-up
    tab.finish_s[4] = 0.5
    tab.first_token_s[4] = 0.2
    assert selected(tab).tolist() == [0, 1, 2, 3]
    m = pool_metrics(tab, Selection("chat", "all"), (0.0, 3.2))
    assert m.requests == 3 and m.unfinished == 1 and m.ttft.count == 3
    # the one in flight counts in the time average from its send to the window's end
    assert m.mean_in_system == pytest.approx((3.6 + 0.2) / 3.2)
    mask = np.array([True, False, True, True, True])
    m = pool_metrics(tab, Selection("chat", "pool-a", mask=mask), (0.0, 3.2))
    assert m.requests == 2 and m.unfinished == 1 and m.ttft.p50_ms == pytest.approx(150)
    with pytest.raises(ValueError, match="mask"):
        selected(tab, np.ones(3, bool))


def test_mean_in_system_clips_to_the_window():
    tab = RequestTable()
    tab.add([0.0, 1.0], 1, 2)
    tab.finish_s[:] = [4.0, 2.0]
    # window 1..3: request 0 in flight 2 s of it, request 1 for 1 s
    assert mean_in_system(tab, np.arange(2), (1.0, 3.0)) == pytest.approx(1.5)
    assert mean_in_system(tab, np.arange(2), (3.0, 3.0)) == 0.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0.001, 50)), min_size=1, max_size=60))
def test_littles_law_holds_when_every_request_is_inside_the_window(reqs):
    tab = RequestTable()
    arr = np.array([a for a, _ in reqs])
    tab.add(arr, 10, 10)
    tab.finish_s[:] = arr + np.array([d for _, d in reqs])
    window = (float(arr.min()), float(tab.finish_s.max()))
    in_system, lam_w = littles_law(tab, np.arange(len(tab)), window)
    assert in_system == pytest.approx(lam_w, rel=1e-9)


def test_latency_stats_ignore_missing_values():
    assert latency_stats(np.array([])) is None
    s = latency_stats(np.array([0.001, np.inf, 0.003]))
    assert s.count == 2 and s.p50_ms == pytest.approx(2.0)


@dataclass
class Stats:
    busy_s: float
    queue_integral: float
    kv_integral: float
    preemptions: int
    queue_max: int = 0
    kv_max: float = 0.0
    elapsed_s: float = 10.0


def test_instance_statistics_are_time_averaged():
    use = instance_use([Stats(8.0, 20.0, 5.0, 3, 7, 0.9), Stats(4.0, 0.0, 3.0, 1, 0, 0.5)], end_s=99.0)
    assert use.instances == 2
    assert use.busy_share == pytest.approx(0.6)  # (0.8 + 0.4) / 2
    assert use.mean_queue_len == pytest.approx(1.0)  # (2.0 + 0) / 2
    assert use.mean_kv_use == pytest.approx(0.4) and use.max_kv_use == pytest.approx(0.9)
    assert use.max_queue_len == 7 and use.preemptions == 4
    assert instance_use([], 1.0) is None

    @dataclass
    class Bare:
        busy_s: float = 1.0
        queue_integral: float = 2.0
        kv_integral: float = 0.5
        preemptions: int = 0

    bare = instance_use([Bare()], end_s=4.0)  # no elapsed_s: the replay's end
    assert bare.busy_share == pytest.approx(0.25) and bare.max_queue_len is None


def test_report_uses_the_source_window_and_round_trips():
    src = ArrivalSource([0.0, 1.0, 2.0], [100, 200, 300], [11, 6, 1])
    tab = src.table
    tab.first_token_s[:] = [0.1, 1.3, 2.2]
    tab.finish_s[:] = [1.1, 2.3, 3.2]
    first = np.array([True, False, True])
    rep = replay_report(tab, src, [Selection("chat", "all", slo=Slo(ttft_ms=250)),
                                   Selection("chat", "a", mask=first, stats=[Stats(1, 1, 1, 0)])], seed=3)
    assert (rep.window_start_s, rep.window_end_s) == (0.0, 3.2)
    assert rep.requests_total == 3 and rep.requests_measured == 3 and rep.seed == 3
    assert [p.pool for p in rep.pools] == ["all", "a"] and rep.pools[1].requests == 2
    assert rep.pools[1].throughput_rps == pytest.approx(2 / 3.2)  # the pool over the whole window
    again = ReplayReport.model_validate_json(rep.model_dump_json())
    assert again == rep
    doc = rep.model_dump()
    doc["pools"][0]["p95_ms"] = 1.0
    with pytest.raises(pydantic.ValidationError, match="p95_ms"):
        ReplayReport.model_validate(doc)
