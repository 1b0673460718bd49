"""Pools, routers, disaggregated prefill -> KV link -> decode, and the fleet, on fixed-time
stand-in instances (tests/support/replay_fakes.py), so that every time is hand-computed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.replay.fleet import Disaggregated, Fleet, KvLink, Pool, Split, Tags, _groups
from solver.replay.fleet_source import FleetSource
from solver.replay.loop import run
from solver.replay.router import Load, Router, Splitter, _pick
from tests.support.replay_fakes import FifoServer, FixedSource


def _load(running, waiting, used=0, total=100):
    return Load(running=running, waiting=waiting, kv_used_blocks=used, kv_total_blocks=total)


# ---- routers ---------------------------------------------------------------------------------


def test_round_robin_continues_across_bursts():
    r = Router("round_robin", 3)
    assert r.assign([], np.array([10, 10])).tolist() == [0, 1]
    assert r.assign([], np.array([10, 10, 10])).tolist() == [2, 0, 1]


def test_least_queue_counts_its_own_placements():
    # waiting 2, 0, 0; running 1, 1, 0: instance 2 (no queue, idle), then 1 (waiting 0 < 1),
    # then 2 (waiting 1 = 1, running 0 < 1), then 1, then all at waiting 2: 2 (running 0), then
    # waiting 2, 2, 3: 0 (running ties at 1 with instance 1: the lowest index)
    r = Router("least_queue", 3)
    loads = [_load(1, 2), _load(1, 0), _load(0, 0)]
    assert r.assign(loads, np.full(6, 16)).tolist() == [2, 1, 2, 1, 2, 0]


def test_least_kv_picks_the_lowest_use_share_and_adds_the_prompt_blocks():
    # use 50/100, 10/20 (0.5), 30/100: instance 2; its prompt of 40 tokens = 3 blocks of 16
    # -> 33/100; next still 2 (0.33 < 0.5), then 36/100 ... until 2 passes 0.5: 30 + 3k > 50
    # at k = 7, so 7 picks of 2, then 0 (0.5 ties with 1 at 0.5; waiting+running 0 = 0: index)
    r = Router("least_kv", 3)
    loads = [_load(0, 0, 50, 100), _load(0, 0, 10, 20), _load(0, 0, 30, 100)]
    assert r.assign(loads, np.full(8, 40)).tolist() == [2] * 7 + [0]


def test_one_request_pick_breaks_ties_by_index_as_the_burst_does():
    # least_queue: waiting 1, 0, 0 and running 0, 2, 2: instances 1 and 2 tie at (0, 2) -> 1;
    # least_kv: use 50/100, 10/20, 30/60 all 0.5; waiting + running 1, 2, 2 -> 0
    loads = [_load(0, 1, 50, 100), _load(2, 0, 10, 20), _load(2, 0, 30, 60)]
    assert _pick("least_queue", loads) == 1
    assert _pick("least_kv", loads) == 0
    for policy, first in (("least_queue", 1), ("least_kv", 0)):
        assert Router(policy, 3).assign(loads, np.array([16])).tolist() == [first]
        assert Router(policy, 3).assign(loads, np.array([16, 16]))[0] == first


def test_an_events_requests_group_by_child_in_index_order():
    # children 2, 0, 2, 1 for requests 7, 3, 9, 4: child 0 gets [3], 1 gets [4], 2 gets [7, 9]
    got = [(i, g.tolist()) for i, g in _groups(np.array([2, 0, 2, 1]), np.array([7, 3, 9, 4]))]
    assert got == [(0, [3]), (1, [4]), (2, [7, 9])]
    assert [(i, g.tolist()) for i, g in _groups(np.array([1, 1]), np.array([5, 6]))] == [(1, [5, 6])]
    assert [(i, g.tolist()) for i, g in _groups(np.array([3]), np.array([8]))] == [(3, [8])]


def test_splitter_weights_of_thirds_stay_exact_over_many_picks():
    # weights 1:1:1 -> 0, 1, 2 repeating; after 3k picks every current weight is back to 0.0
    s = Splitter([1.0, 1.0, 1.0])
    assert s.assign(9).tolist() == [0, 1, 2] * 3
    assert s._current == [0.0, 0.0, 0.0]


def test_router_rejects_unknown_policy():
    with pytest.raises(ValueError, match="round_robin"):
        Router("random", 2)


def test_splitter_smooth_weighted_round_robin():
    # weights 3:1 -> 0, 0, 1, 0 (nginx's smooth sequence), repeating
    s = Splitter([3.0, 1.0])
    assert s.assign(8).tolist() == [0, 0, 1, 0, 0, 0, 1, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.1, 100.0), min_size=1, max_size=6), st.integers(1, 300))
def test_splitter_counts_track_the_shares(weights, n):
    counts = np.bincount(Splitter(weights).assign(n), minlength=len(weights))
    share = n * np.asarray(weights) / sum(weights)
    assert counts.sum() == n
    assert np.all(np.abs(counts - share) < len(weights))


# ---- pools and the disaggregated path ---------------------------------------------------------


def test_pool_spreads_a_burst_over_idle_instances():
    src = FixedSource([0.0, 0.0, 0.0, 0.0], 100, 10)
    tags = Tags()
    pool = Pool(src.table, [FifoServer(src.table, 1.0, index=i) for i in range(3)], "least_queue", 7, tags)
    run(src, pool)
    # three start at 0 and finish at 1; the fourth waits for instance 0 (the first free)
    assert src.table.finish_s.tolist() == [1.0, 1.0, 1.0, 2.0]
    assert src.table.instance.tolist() == [0, 1, 2, 0]
    assert tags.get("pool", 4).tolist() == [7, 7, 7, 7]
    assert [t for t, _ in src.finished_at] == [1.0, 1.0, 1.0, 2.0]


def _disagg(table, tags, prefill_s=0.1, decode_s=0.5, link=KvLink(0.002, 1e-5)):
    pre = Pool(table, [FifoServer(table, prefill_s, "prefill")], "round_robin", 0, tags)
    dec = Pool(table, [FifoServer(table, decode_s, "decode")], "round_robin", 1, tags)
    return Disaggregated(table, [pre], [1.0], [dec], [1.0], [[link]], tags)


def test_disaggregated_ttft_is_prefill_transfer_and_the_wait_for_a_decode_slot():
    # prompt 1000 tokens: transfer 0.002 + 1000 x 1e-5 = 0.012 s; prefill 0.1 s; decode 0.5 s
    src = FixedSource([0.0, 0.0, 1.0], 1000, 20)
    tags = Tags()
    run(src, _disagg(src.table, tags))
    t = src.table
    # request 1 waits 0.1 s for the prefill instance and lands at 0.212, but the decode server
    # (one sequence at a time) admits it only when request 0 is done at 0.612: its first token
    # is out then; request 2 finds everything idle
    assert t.first_token_s == pytest.approx([0.112, 0.612, 1.112], abs=1e-12)
    # decode: one at a time, 0.5 s each, from the landing (request 1 waits for request 0)
    assert t.finish_s == pytest.approx([0.612, 1.112, 1.612], abs=1e-12)
    assert t.queued_s == pytest.approx([0.0, 0.1, 0.0], abs=1e-12)  # the prefill queueing, kept
    assert tags.get("prefill_pool", 3).tolist() == [0, 0, 0]
    assert tags.get("pool", 3).tolist() == [1, 1, 1]


def test_kv_link_follows_the_performance_model_formula():
    # (latency + bytes / bandwidth) x (1 - overlap): 10 us, 320 KiB per token over 4 x 50 GB/s,
    # overlap 0.25; 2048 tokens -> (1e-5 + 2048 x 327680 / 2e11) x 0.75
    link = KvLink.of(327680.0, 4 * 50e9, 10e-6, 0.25)
    assert float(link.seconds(2048)) == pytest.approx((1e-5 + 2048 * 327680 / 2e11) * 0.75, rel=1e-12)


def test_single_token_request_finishes_when_its_kv_would_land():
    src = FixedSource([0.0], 1000, 1)
    tags = Tags()
    run(src, _disagg(src.table, tags))
    assert src.table.first_token_s[0] == pytest.approx(0.112)
    assert src.table.finish_s[0] == pytest.approx(0.112)
    assert tags.get("pool", 1).tolist() == [1]  # counted with the decode pool its KV went to


def test_a_prompt_the_prefill_rejects_is_done_unfinished_and_never_decoded():
    src = FixedSource([0.0, 0.5], [1000, 5000], 20)
    tags = Tags()
    t = src.table
    pre = Pool(t, [FifoServer(t, 0.1, "prefill", reject_prompt_over=4096)], "round_robin", 0, tags)
    dec_inst = FifoServer(t, 0.5, "decode")
    dec = Pool(t, [dec_inst], "round_robin", 1, tags)
    run(src, Disaggregated(t, [pre], [1.0], [dec], [1.0], [[KvLink(0.002, 1e-5)]], tags))
    assert [i for _, i in dec_inst.submitted] == [0]
    assert np.isinf(t.finish_s[1]) and np.isinf(t.first_token_s[1])
    assert [i for _, i in src.finished_at] == [1, 0]  # the rejection at 0.5, then 0 at 0.612
    assert t.finish_s[0] == pytest.approx(0.612)


def test_decode_pools_share_traffic_by_weight_and_use_their_link():
    src = FixedSource(np.arange(4.0), 100, 5)
    tags = Tags()
    t = src.table
    pre = Pool(t, [FifoServer(t, 0.1, "prefill")], "round_robin", 0, tags)
    dec = [Pool(t, [FifoServer(t, 0.2, "decode")], "round_robin", 1 + d, tags) for d in range(2)]
    links = [[KvLink(0.01, 0.0), KvLink(0.03, 0.0)]]
    run(src, Disaggregated(t, [pre], [1.0], dec, [3.0, 1.0], links, tags))
    assert tags.get("pool", 4).tolist() == [1, 1, 2, 1]  # 3:1, smooth
    assert t.first_token_s - t.arrival_s == pytest.approx([0.11, 0.11, 0.13, 0.11])


# ---- services and the fleet -------------------------------------------------------------------


def _fleet(seed: int, n: int = 200):
    """Two services: 'a' over two colocated pools (capacity 2:1), 'b' disaggregated."""
    rng = np.random.default_rng(seed)
    srcs = [FixedSource(np.cumsum(rng.exponential(0.05, n)), rng.integers(10, 500, n), 8),
            FixedSource(np.cumsum(rng.exponential(0.2, n)), rng.integers(10, 500, n), 8)]
    tags = Tags()
    merged = FleetSource(srcs, tags)
    t = merged.table
    a = Split(t, [Pool(t, [FifoServer(t, 0.08, index=i) for i in range(2)], "least_queue", 0, tags),
                  Pool(t, [FifoServer(t, 0.08, index=2)], "least_kv", 1, tags)], [2.0, 1.0])
    b = _disagg(t, tags, 0.05, 0.1)
    b.prefill.children[0].index, b.decode[0].index = 2, 3
    return merged, Fleet(t, [a, b], tags), tags


def test_fleet_is_deterministic_by_seed_and_exact_in_its_event_order():
    runs = []
    for seed in (3, 3, 4):
        merged, fleet, tags = _fleet(seed)
        run(merged, fleet)
        merged.scatter_back()
        t = merged.table
        assert np.all(np.isfinite(t.finish_s)) and np.all(t.finish_s >= t.first_token_s)
        assert np.all(t.first_token_s > t.arrival_s)
        # every request reached its own service's pools; finishes reported in time order
        svc = tags.get("service", len(t))
        assert set(tags.get("pool", len(t))[svc == 0]) <= {0, 1}
        assert set(tags.get("pool", len(t))[svc == 1]) == {3}
        for s in merged.sources:
            times = [x for x, _ in s.finished_at]
            assert times == sorted(times) and len(times) == 200
            assert np.array_equal(s.table.finish_s[[i for _, i in s.finished_at]], times)
        runs.append((t.first_token_s.copy(), t.finish_s.copy(), tags.get("pool", len(t))))
    assert all(np.array_equal(x, y) for x, y in zip(runs[0], runs[1]))
    assert not np.array_equal(runs[0][1], runs[2][1])


def test_fleet_next_event_is_the_earliest_of_its_services():
    merged, fleet, tags = _fleet(0, 5)
    ids = merged.take(np.inf)
    fleet.submit(ids, 0.0)
    kids = [c.next_event_s() for c in fleet.children]
    assert fleet.next_event_s() == min(kids) == pytest.approx(0.05)  # b's prefill of 0.05 s


def test_colocated_pools_take_traffic_in_proportion_to_capacity():
    merged, fleet, tags = _fleet(1, 300)
    run(merged, fleet)
    pools = tags.get("pool", len(merged.table))[tags.get("service", len(merged.table)) == 0]
    assert np.bincount(pools).tolist() == [200, 100]


@st.composite
def _fleets(draw):
    """1-3 services, each colocated pools or a disaggregated part, with random fixed times."""
    services = []
    for _ in range(draw(st.integers(1, 3))):
        disagg = draw(st.booleans())
        n_pools = draw(st.integers(1, 2))
        pools = [(draw(st.integers(1, 3)), draw(st.floats(0.01, 0.3)), draw(st.floats(0.5, 3.0)))
                 for _ in range(n_pools if not disagg else 2 * n_pools)]
        services.append((disagg, pools, draw(st.floats(0.02, 0.3)), draw(st.sampled_from(["round_robin",
                                                                                         "least_queue",
                                                                                         "least_kv"]))))
    return services, draw(st.integers(0, 2**16))


@settings(max_examples=25, deadline=None)
@given(_fleets())
def test_every_request_is_served_once_by_its_own_pools_in_time_order(spec):
    services, seed = spec
    rng = np.random.default_rng(seed)
    srcs = [FixedSource(np.cumsum(rng.exponential(gap, 30)), rng.integers(1, 400, 30), rng.integers(1, 6, 30))
            for _, _, gap, _ in services]
    tags = Tags()
    merged = FleetSource(srcs, tags)
    t = merged.table
    servers, owner, idx = [], [], 0
    for k, (disagg, pools, _, policy) in enumerate(services):
        made = []
        for n, dt, w in pools:
            role = ("prefill" if len(made) % 2 == 0 else "decode") if disagg else "colocated"
            made.append((Pool(t, [FifoServer(t, dt, role) for _ in range(n)], policy, idx, tags, role), w))
            owner.append(k)
            idx += 1
        if disagg:
            pre, dec = made[0::2], made[1::2]
            links = [[KvLink(0.001, 1e-5)] * len(dec) for _ in pre]
            servers.append(Disaggregated(t, [p for p, _ in pre], [w for _, w in pre], [p for p, _ in dec],
                                         [w for _, w in dec], links, tags))
        else:
            servers.append(Split(t, [p for p, _ in made], [w for _, w in made]))
    run(merged, Fleet(t, servers, tags))
    merged.scatter_back()
    n = len(t)
    assert n == 30 * len(services)
    assert np.all(t.arrival_s <= t.first_token_s) and np.all(t.first_token_s <= t.finish_s)
    assert np.all(np.isfinite(t.finish_s))
    svc, pool = tags.get("service", n), tags.get("pool", n)
    assert np.all(np.asarray(owner)[pool] == svc)  # served by its own service's pools
    for s in srcs:
        times = [x for x, _ in s.finished_at]
        assert sorted(i for _, i in s.finished_at) == list(range(30))  # each once
        assert times == sorted(times)
        assert np.array_equal(s.table.finish_s[[i for _, i in s.finished_at]], times)
