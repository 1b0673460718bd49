"""Routing distributions over experts: shares, placement, busiest rank, experts touched."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from solver.catalog import shipped
from solver.perf.arch import ModelArch
from solver.perf.routing import (
    ExpertRouting,
    expert_shares,
    place,
    zipf_exponent_for_hottest,
    zipf_shares,
)
from solver.schema.routing import Routing
from tests.support.binomial import binomial_expected_max


def test_zipf_shares_hand_values():
    # E = 3, s = 1: 1, 1/2, 1/3 over 11/6
    assert zipf_shares(3, 1.0) == pytest.approx([6 / 11, 3 / 11, 2 / 11])


def test_hottest_share_is_met_exactly():
    s = zipf_exponent_for_hottest(128, 0.07)
    assert zipf_shares(128, s)[0] == pytest.approx(0.07, rel=1e-9)
    shares = expert_shares(Routing(kind="hottest", hottest_share=0.07), 128)
    assert shares.max() == pytest.approx(0.07, rel=1e-9)
    assert shares.sum() == pytest.approx(1.0)


def test_hottest_below_balanced_share_is_refused():
    with pytest.raises(ValueError, match="at least the balanced share 1/128"):
        zipf_exponent_for_hottest(128, 0.005)


def test_load_balanced_placement_mixes_hot_and_cold():
    shares = np.array([0.4, 0.3, 0.2, 0.1])
    # longest first: 0.4 -> r0, 0.3 -> r1, 0.2 -> r1 (0.5), 0.1 -> r0 (0.5)
    g = place(shares, 2, "load_balanced")
    assert sorted(map(sorted, g.tolist())) == [[0, 3], [1, 2]]
    assert place(shares, 2, "in_order").tolist() == [[0, 1], [2, 3]]
    r = ExpertRouting(shares, top_k=1)
    assert r.busiest_share([2])[0] == pytest.approx(0.5)
    assert ExpertRouting(shares, top_k=1, placement="in_order").busiest_share([2])[0] == pytest.approx(0.7)


def test_balanced_touched_is_the_busiest_ranks_expectation():
    r = ExpertRouting.of(None, 128, 1)
    # 128 experts, top-1, 64 tokens, 8 ranks of 16: each expert touched with h = 1 - (127/128)^64
    # = 0.39466, a rank's mean 16 h = 6.3145 experts; the busiest of 8 ranks reads 9.1144
    h = 1 - (127 / 128) ** 64
    assert r.touched([64.0], [8])[0] == pytest.approx(binomial_expected_max(16, h, 8), rel=1e-12)
    assert r.touched([64.0], [8])[0] == pytest.approx(9.1144, rel=1e-4)
    assert r.touched([64.0], [1])[0] == pytest.approx(128 * h, rel=1e-12)  # one rank: the mean
    assert r.busiest_share([8, 16]) == pytest.approx([1 / 8, 1 / 16])


def test_busiest_rank_matches_monte_carlo_of_deepseeks_routing():
    # top-8 of 256 experts (DeepSeek-V3) on 8 ranks, tokens drawing 8 distinct experts each:
    # the busiest rank's distinct experts, simulated, against the model (independent experts)
    r = ExpertRouting.of(None, 256, 8)
    rng = np.random.default_rng(0)
    for T, mean in ((1, 1.0), (4, 3.82), (16, 12.75)):
        hit = np.zeros((3000, 256), dtype=bool)
        for t in range(T):
            picks = np.argsort(rng.random((3000, 256)), axis=1)[:, :8]
            np.put_along_axis(hit, picks, True, axis=1)
        busiest = hit.reshape(3000, 8, 32).sum(axis=2).max(axis=1).mean()
        assert r.touched([float(T)], [8])[0] == pytest.approx(busiest, rel=0.03)
        assert busiest > 1.25 * mean  # well above the mean rank's 32 (1 - (1 - 8/256)^T)


def test_skewed_touched_hand_values():
    # two live experts of four, top-1, in order on 2 ranks: rank 0 holds both live experts
    r = ExpertRouting.of(Routing(kind="histogram", histogram=[1, 1, 0, 0], placement="in_order"), 4, 1)
    # one token touches exactly one expert; two tokens: 2 x (1 - 0.5^2) = 1.5
    assert r.touched([0.0, 1.0, 2.0], [2, 2, 2]) == pytest.approx([0.0, 1.0, 1.5])
    # top-2 of that histogram: q = min(1, 2 x 0.5) = 1, both touched by any token
    r2 = ExpertRouting.of(Routing(kind="histogram", histogram=[1, 1, 0, 0], placement="in_order"), 4, 2)
    assert r2.touched([1.0, 5.0], [2, 2]) == pytest.approx([2.0, 2.0])


def test_touched_matches_monte_carlo_for_top1():
    shares = zipf_shares(16, 1.1)
    r = ExpertRouting(shares, top_k=1)
    groups = r.groups(4)
    rng = np.random.default_rng(1)
    T, trials = 12, 20000
    picks = rng.choice(16, size=(trials, T), p=shares)
    hit = np.zeros((trials, 16), dtype=bool)
    np.put_along_axis(hit, picks, True, axis=1)
    busiest = hit[:, groups].sum(axis=2).max(axis=1).mean()  # E[max over ranks]
    assert r.touched([float(T)], [4])[0] == pytest.approx(busiest, rel=0.02)


@settings(max_examples=60, deadline=None)
@given(
    s=st.floats(0.0, 3.0),
    ep_pow=st.integers(0, 4),
    tokens=st.lists(st.floats(0.0, 5000.0), min_size=1, max_size=5),
    k=st.integers(1, 4),
)
def test_routing_invariants(s, ep_pow, tokens, k):
    E, ep = 32, 2**ep_pow
    shares = zipf_shares(E, s)
    bal = ExpertRouting(shares, k)
    naive = ExpertRouting(shares, k, placement="in_order")
    eps = np.full(len(tokens), ep)
    busiest = bal.busiest_share(eps)
    assert np.all(busiest >= 1.0 / ep - 1e-12)
    assert np.all(busiest <= naive.busiest_share(eps) + 1e-12)  # greedy is no worse than id order
    t = np.sort(np.asarray(tokens))
    touched = bal.touched(t, eps)
    assert np.all(touched <= E / ep + 1e-9)
    assert np.all(np.diff(touched) >= -1e-9)  # more tokens never touch fewer experts


def test_schema_pairs_kind_and_parameter():
    with pytest.raises(ValidationError, match="needs zipf_s"):
        Routing(kind="zipf")
    with pytest.raises(ValidationError, match="belongs to routing kind 'hottest'"):
        Routing(kind="zipf", zipf_s=1.0, hottest_share=0.1)
    with pytest.raises(ValidationError, match="all zero"):
        Routing(kind="histogram", histogram=[0, 0, 0])


def test_arch_routing_only_for_moe_and_histogram_length_checked():
    dense = ModelArch.from_card(shipped.model_card("llama-3.1-8b"))
    with pytest.raises(ValueError, match="dense"):
        dense.with_routing(Routing(kind="zipf", zipf_s=1.0))
    mav = ModelArch.from_card(shipped.model_card("llama-4-maverick"))
    with pytest.raises(ValueError, match="128 experts"):
        mav.with_routing(Routing(kind="histogram", histogram=[1.0] * 64))
    assert mav.with_routing(None) is mav
    assert mav.with_routing(Routing(kind="zipf", zipf_s=1.0)).expert_routing.description.startswith("Zipf")
