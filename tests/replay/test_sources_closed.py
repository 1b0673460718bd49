"""Closed loops as the benchmark tools run them, driven through the event loop by small fake
servers: hand-computed schedules, never more than N in flight, every later send answering a
finish, warm-up drained before the measured run, the tools' windows and counts, lockstep waves
with fixed lengths and their break-up with InferenceX's length spread, merged sources."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.errors import InputError
from solver.replay.loop import run
from solver.replay.requests import NOT_YET, RequestTable
from solver.replay.sources import (
    ArrivalSource,
    ClosedLoop,
    MergedSource,
    Phase,
    aiconfigurator_aiperf,
    aiperf_concurrency,
    benchmark_source,
    inferencex_benchmark_serving,
    sglang_bench_serving,
    vllm_bench_serve,
)
from solver.replay.sources.closed import vllm_send_offsets


class DelayServer:
    """Finishes each request `service(table, id)` seconds after it arrives (first token at half
    of it); never queues. The simplest server a closed loop must react to."""

    def __init__(self, table, service=lambda tab, i: 1.0):
        self.table, self.service, self.pending = table, service, []

    def submit(self, ids, t_s):
        for i in ids:
            d = float(self.service(self.table, int(i)))
            self.pending.append((t_s + d, int(i)))
            self.table.first_token_s[i] = t_s + d / 2
        self.pending.sort()

    def next_event_s(self):
        return self.pending[0][0] if self.pending else NOT_YET

    def advance(self, t_s):
        out = [i for t, i in self.pending if t <= t_s]
        self.pending = [(t, i) for t, i in self.pending if t > t_s]
        self.table.finish_s[out] = t_s
        return np.array(out, dtype=np.int64)


def by_output(step_s=0.01):
    # a decode-like server: time grows with the output length
    return lambda tab, i: 0.05 + step_s * int(tab.output_tokens[i])


def in_flight_at(table, t):
    return int(((table.arrival_s <= t) & (table.finish_s > t)).sum())


def test_vllm_schedule_by_hand():
    src = vllm_bench_serve(2, [10] * 5, [5] * 5, num_warmups=2)
    run(src, DelayServer(src.table))
    tab = src.table
    # warm-up: two copies sent at 0, both done at 1; run: 2 at 1, 2 at 2, 1 at 3
    assert tab.arrival_s.tolist() == [0, 0, 1, 1, 2, 2, 3]
    assert tab.finish_s.tolist() == [1, 1, 2, 2, 3, 3, 4]
    assert tab.measured.tolist() == [False, False, True, True, True, True, True]
    assert src.window() == (1.0, 4.0)
    assert src.done()


def test_ready_check_goes_alone_first():
    src = vllm_bench_serve(4, [7, 8, 9], [3, 4, 5], ready_check=True)
    run(src, DelayServer(src.table))
    assert src.table.arrival_s.tolist() == [0, 1, 1, 1]
    assert src.table.prompt_tokens.tolist() == [7, 7, 8, 9]  # the test request is the first one


def test_never_more_than_n_in_flight_and_every_later_send_answers_a_finish():
    r = np.random.default_rng(0)
    times = r.uniform(0.2, 3.0, 400)
    src = vllm_bench_serve(8, np.full(200, 100), np.full(200, 20), num_warmups=16)
    run(src, DelayServer(src.table, lambda tab, i: times[i]))
    tab = src.table
    assert len(tab) == 216 and np.isfinite(tab.finish_s).all()
    assert max(in_flight_at(tab, t) for t in tab.arrival_s) == 8
    finishes = set(tab.finish_s.tolist())
    first = {0.0} | {float(tab.finish_s[~tab.measured].max())}  # the run starts after the warm-up
    assert all(t in finishes or t in first for t in tab.arrival_s.tolist())
    run_rows = np.nonzero(tab.measured)[0]
    assert tab.arrival_s[run_rows].min() >= tab.finish_s[~tab.measured].max()  # warm-up drained


def test_send_delay_and_stagger():
    ph = [Phase("run", np.full(4, 10), np.full(4, 2), concurrency=2, measured=True)]
    src = ClosedLoop(ph, start_s=1.0, send_delay_s=0.1, stagger_s=0.01)
    run(src, DelayServer(src.table))
    assert src.table.arrival_s == pytest.approx([1.0, 1.01, 2.1, 2.11])


def test_finite_rate_sends_at_vllms_times_when_slots_are_free():
    off = vllm_send_offsets(50, 10.0, 1.0, np.random.default_rng(1))
    assert off[-1] == pytest.approx(50 / 10.0)  # vLLM rescales the last send to n / rate
    src = vllm_bench_serve(50, [10] * 50, [5] * 50, request_rate=10.0, seed=1)
    run(src, DelayServer(src.table, lambda tab, i: 0.001))
    assert src.table.arrival_s == pytest.approx(off)
    slow = vllm_bench_serve(1, [10] * 50, [5] * 50, request_rate=10.0, seed=1)
    run(slow, DelayServer(slow.table))  # 1 s each through one slot: the slot, not the rate, paces
    assert np.diff(slow.table.arrival_s) == pytest.approx(np.ones(49))


def test_fixed_lengths_run_in_lockstep_waves_and_the_spread_breaks_them():
    fixed = vllm_bench_serve(16, np.full(160, 1000), np.full(160, 1000))
    run(fixed, DelayServer(fixed.table, by_output()))
    assert len(np.unique(fixed.table.arrival_s)) == 10  # 160 / 16 waves, all clients together
    spread = inferencex_benchmark_serving(16, 1000, 1000, seed=2)
    run(spread, DelayServer(spread.table, by_output()))
    run_sends = spread.table.arrival_s[spread.table.measured]
    assert len(run_sends) == 160
    assert len(np.unique(run_sends)) > 120  # each client on its own clock after the first wave


def test_inferencex_counts_warmups_and_lengths():
    src = inferencex_benchmark_serving(4, 1024, 1024, seed=5)
    tab = src.table
    run(src, DelayServer(tab))
    assert int((~tab.measured).sum()) == 8 and int(tab.measured.sum()) == 40
    run_p = tab.prompt_tokens[tab.measured]
    assert run_p.min() >= int(0.8 * 1024) and run_p.max() <= 1024
    warm = tab.prompt_tokens[~tab.measured]
    assert (warm == run_p[0]).all()  # the warm-ups are copies of the first request
    again = inferencex_benchmark_serving(4, 1024, 1024, seed=5)
    run(again, DelayServer(again.table))
    assert np.array_equal(again.table.prompt_tokens, tab.prompt_tokens)


def test_aiperf_warmup_phase_drains_then_profiling_is_measured():
    src = aiconfigurator_aiperf(4, 512, 64, seed=1)
    tab = src.table
    run(src, DelayServer(tab, lambda t, i: 1.0 + 0.1 * (i % 3)))
    warm, prof = ~tab.measured, tab.measured
    assert int(warm.sum()) == 8 and int(prof.sum()) == 80  # 2 C warm-up, 20 C measured
    assert (tab.prompt_tokens == 512).all() and (tab.output_tokens == 64).all()  # stddev 0: fixed
    assert tab.arrival_s[prof].min() == tab.finish_s[warm].max()
    assert src.window() == (tab.arrival_s[prof].min(), tab.finish_s[prof].max())
    assert "aiperf --concurrency 4 --request-count 80 --warmup-request-count 8" in src.describe()


def test_aiperf_without_warmup():
    src = aiperf_concurrency(3, [5, 6, 7, 8], [2, 2, 2, 2])
    run(src, DelayServer(src.table))
    assert src.table.arrival_s.tolist() == [0, 0, 0, 1] and src.table.measured.all()


def test_sglang_warmup_is_unlimited_capped_at_32_tokens_then_a_pause():
    src = sglang_bench_serving(2, [100, 200, 300], [500, 10, 10], warmup_requests=3)
    tab = src.table
    run(src, DelayServer(tab))
    assert tab.arrival_s.tolist() == [0, 0, 0, 2, 2, 3]  # 3 together, done at 1, 1 s pause
    assert tab.output_tokens[:3].tolist() == [32, 32, 32]
    assert tab.measured.tolist() == [False] * 3 + [True] * 3


def test_closed_loop_inputs_are_checked():
    with pytest.raises(InputError, match="clients"):
        vllm_bench_serve(0, [1], [1])
    with pytest.raises(InputError, match="at least 1 prompt"):
        vllm_bench_serve(1, [0], [1])
    with pytest.raises(InputError, match="send_delay_s"):
        ClosedLoop([], send_delay_s=-1)
    with pytest.raises(InputError, match="concurrency"):
        ClosedLoop([Phase("run", np.ones(2, int), np.ones(2, int), concurrency=0, measured=True)])
    with pytest.raises(InputError, match="burstiness"):
        vllm_bench_serve(2, [1, 1], [1, 1], request_rate=5, burstiness=0)
    assert ClosedLoop([]).done() and math.isinf(ClosedLoop([]).next_arrival_s())


def test_merged_sources_route_finishes_to_their_owner():
    tab = RequestTable()
    open_loop = ArrivalSource([0.25, 0.5, 2.5], 10, 10, table=tab)
    closed = vllm_bench_serve(1, [1, 1, 1], [1, 1, 1], table=tab)
    both = MergedSource([open_loop, closed])
    run(both, DelayServer(tab))
    owner = both.owner()
    assert owner[open_loop.ids].tolist() == [0, 0, 0] and owner[closed.ids].tolist() == [1, 1, 1]
    # the closed loop's one client answers only its own finishes: sends at 0, 1, 2
    assert tab.arrival_s[closed.ids].tolist() == [0, 1, 2]
    assert tab.arrival_s[open_loop.ids].tolist() == [0.25, 0.5, 2.5]
    assert both.done() and both.window() == (0.0, 3.5)
    with pytest.raises(ValueError, match="same RequestTable"):
        MergedSource([ArrivalSource([0], 1, 1), ArrivalSource([0], 1, 1)])


def test_ramp_up_sets_the_rate_from_each_requests_progress():
    r = np.random.default_rng(4)
    off = vllm_send_offsets(20_001, math.inf, 1e9, r, ramp_up=("linear", 10.0, 30.0))
    gaps = np.diff(off)  # burstiness 1e9: gaps are 1 / rate_i, rate_i = 10 + 20 i / 20000
    assert gaps[0] == pytest.approx(1 / 10.001, rel=1e-3) and gaps[-1] == pytest.approx(1 / 30, rel=1e-3)
    expo = vllm_send_offsets(3, math.inf, 1e9, r, ramp_up=("exponential", 1.0, 4.0))
    assert expo == pytest.approx(np.cumsum([1.0, 0.5, 0.25]), rel=1e-3)  # rates 1, 2, 4
    with pytest.raises(InputError, match="ramp-up"):
        vllm_send_offsets(3, math.inf, 1.0, r, ramp_up=("exponential", 0.0, 4.0))
    src = vllm_bench_serve(4, [1] * 10, [1] * 10, ramp_up=("linear", 1.0, 5.0))
    assert "--ramp-up-strategy linear" in src.describe()


@pytest.mark.parametrize("tool,measured,warm", [("inferencex", 30, 6), ("aiconfigurator", 60, 6),
                                                ("vllm", 30, 0), ("aiperf", 30, 0), ("sglang", 30, 1)])
def test_benchmark_source_per_tool(tool, measured, warm):
    src = benchmark_source(tool, 3, 512, 64, seed=1)
    run(src, DelayServer(src.table))
    assert int(src.table.measured.sum()) == measured and int((~src.table.measured).sum()) == warm
    with pytest.raises(InputError, match="benchmark tool"):
        benchmark_source("locust", 3, 512, 64)


@settings(max_examples=40, deadline=None)
@given(n_clients=st.integers(1, 12), n=st.integers(1, 80), warm=st.integers(0, 20), seed=st.integers(0, 10**6),
       delay=st.sampled_from([0.0, 0.003]))
def test_closed_loop_invariants(n_clients, n, warm, seed, delay):
    times = np.random.default_rng(seed).uniform(0.01, 2.0, n + warm)
    src = vllm_bench_serve(n_clients, np.full(n, 10), np.full(n, 5), num_warmups=warm, send_delay_s=delay)
    run(src, DelayServer(src.table, lambda tab, i: times[i]))
    tab = src.table
    assert len(tab) == n + warm and np.isfinite(tab.finish_s).all()  # each request sent once, all done
    assert np.all(np.diff(tab.arrival_s) >= 0)  # rows are sends in time order
    assert max(in_flight_at(tab, t) for t in tab.arrival_s) <= n_clients
    assert tab.measured.tolist() == [False] * warm + [True] * n
    run_start = tab.arrival_s[warm]
    if warm:
        assert run_start == pytest.approx(tab.finish_s[:warm].max() + delay)  # drained, then the run
    assert src.window() == (run_start, tab.finish_s[warm:].max())
    assert int((tab.arrival_s[warm:] == run_start).sum()) >= min(n_clients, n)  # released together


def test_a_phase_needs_one_value_per_request_in_every_column():
    with pytest.raises(ValueError, match="one value per request"):
        ClosedLoop([Phase("run", np.ones(3, int), np.ones(2, int), concurrency=1, measured=True)])
    with pytest.raises(ValueError, match="one value per request"):
        ClosedLoop([Phase("run", np.ones(3, int), np.ones(3, int), concurrency=1, measured=True,
                          offsets_s=np.zeros(2))])


def test_prefix_columns_travel_with_the_requests():
    ph = Phase("run", np.array([10, 20, 30]), np.array([1, 1, 1]), concurrency=1, measured=True,
               prefix_id=np.array([4, -1, 4]), prefix_tokens=np.array([8, 0, 8]))
    src = ClosedLoop([ph])
    run(src, DelayServer(src.table))
    assert src.table.prefix_id.tolist() == [4, -1, 4] and src.table.prefix_tokens.tolist() == [8, 0, 8]
