"""Open-loop sources: token lengths drawn from a problem's TokenDist, Poisson and Gamma arrivals,
determinism by seed, and the Source protocol's hand-out order."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.errors import InputError
from solver.replay.requests import RequestTable
from solver.replay.sources import (
    ArrivalSource,
    gamma_arrivals,
    gamma_source,
    length_law,
    normal_lengths,
    poisson_source,
    sample_lengths,
    uniform_lengths,
)
from solver.replay.sources.lengths import Z99
from solver.schema.problem import TokenDist


def rng(seed=0):
    return np.random.default_rng(seed)


def test_a_mean_alone_is_a_fixed_length_as_the_planner_assumes():
    assert sample_lengths(TokenDist(mean=150), 5, rng()).tolist() == [150] * 5
    assert sample_lengths(TokenDist(p50=64.4), 3, rng()).tolist() == [64] * 3
    assert sample_lengths(TokenDist.model_validate(2048), 2, rng()).dtype == np.int64


def test_histogram_draws_its_counts_with_their_weights():
    dist = TokenDist(histogram=[[100, 1], [200, 2], [1000, 1]])
    x = sample_lengths(dist, 200_000, rng(1))
    assert set(np.unique(x).tolist()) == {100, 200, 1000}
    share = {v: float((x == v).mean()) for v in (100, 200, 1000)}
    assert share[100] == pytest.approx(0.25, abs=0.005)
    assert share[200] == pytest.approx(0.50, abs=0.005)
    assert x.mean() == pytest.approx(dist.mean_tokens, rel=0.01)  # 375
    assert np.percentile(x, 99, method="inverted_cdf") == dist.p99_tokens == 1000


def test_p50_and_p99_give_the_lognormal_with_that_median_and_tail():
    law = length_law(TokenDist(p50=100, p99=1000))
    assert law.shift == 0
    assert law.mu == pytest.approx(math.log(100))
    assert law.sigma_lo == law.sigma_hi == pytest.approx(math.log(10) / 2.3263478740408408)
    assert law.quantile(0.99) == pytest.approx(1000)


def test_mean_and_p99_are_matched_exactly_and_by_the_draws():
    dist = TokenDist(mean=100, p99=800)
    law = length_law(dist)
    # sigma = z - sqrt(z^2 - 2 ln 8) (hand: 2.32635 - sqrt(5.41190 - 4.15888) = 1.20697)
    assert law.sigma_hi == pytest.approx(Z99 - math.sqrt(Z99 ** 2 - 2 * math.log(8)))
    assert law.mean() == pytest.approx(100)
    assert law.quantile(0.99) == pytest.approx(800)
    x = sample_lengths(dist, 400_000, rng(2))
    assert x.mean() == pytest.approx(100, rel=0.02)
    assert np.percentile(x, 99) == pytest.approx(800, rel=0.02)


@pytest.mark.parametrize("mean,p50,p99", [(914, 601, 5452), (155, 53, 872), (120, 100, 300)])
def test_mean_median_and_p99_are_all_matched(mean, p50, p99):
    # the first two: ServeGen's m-large input and output lengths (two-piece, then shifted law)
    law = length_law(TokenDist(mean=mean, p50=p50, p99=p99))
    assert law.mean() == pytest.approx(mean, rel=1e-6)
    assert law.quantile(0.5) == pytest.approx(p50, rel=1e-6)
    assert law.quantile(0.99) == pytest.approx(p99, rel=1e-6)
    x = sample_lengths(TokenDist(mean=mean, p50=p50, p99=p99), 300_000, rng(3))
    assert np.median(x) == pytest.approx(p50, rel=0.02)
    assert np.percentile(x, 99) == pytest.approx(p99, rel=0.03)


@settings(max_examples=60, deadline=None)
@given(p50=st.floats(10, 5000), spread=st.floats(1.05, 12), pos=st.floats(0.01, 0.99))
def test_every_three_figure_law_meets_its_figures_or_says_why(p50, spread, pos):
    p99 = p50 * spread
    mean = p50 + pos * (p99 - p50) * 0.3
    try:
        law = length_law(TokenDist(mean=mean, p50=p50, p99=p99))
    except InputError as exc:
        assert "histogram" in str(exc)
        return
    assert law.mean() == pytest.approx(mean, rel=1e-6)
    assert law.quantile(0.5) == pytest.approx(p50, rel=1e-6)
    assert law.quantile(0.99) == pytest.approx(p99, rel=1e-6)


@pytest.mark.parametrize("dist,words", [
    (TokenDist(mean=100, p50=120), "below p50"),
    (TokenDist(mean=100, p99=90), "below the mean"),
    (TokenDist(mean=100, p99=2000), "more than a log-normal"),
    (TokenDist(mean=100, p50=50, p99=80), "p50 <= mean <= p99"),
])
def test_figures_no_law_has_are_an_input_error_naming_the_field(dist, words):
    with pytest.raises(InputError, match=words) as exc:
        sample_lengths(dist, 10, rng(), where="services[0].workload.input_tokens")
    assert "services[0].workload.input_tokens" in str(exc.value)


def test_cap_and_the_minimum_of_one_token():
    x = sample_lengths(TokenDist(p50=10, p99=5000), 10_000, rng(4), cap=100)
    assert x.max() == 100 and x.min() >= 1


def test_uniform_lengths_span_the_range_ratio_inclusive():
    x = uniform_lengths(1000, 0.8, 50_000, rng(5))
    assert x.min() == 800 and x.max() == 1000
    assert x.mean() == pytest.approx(900, rel=0.005)
    assert uniform_lengths(128, 1.0, 4, rng()).tolist() == [128] * 4


def test_normal_lengths_are_fixed_at_stddev_zero_and_positive_otherwise():
    assert normal_lengths(1024, 0, 3, rng()).tolist() == [1024] * 3
    x = normal_lengths(10, 20, 5000, rng(6))
    assert x.min() >= 1
    assert float(x.mean()) > 10  # the negative draws are redrawn, never clipped to 1


def test_same_seed_same_requests_other_seed_other_requests():
    a = poisson_source(50, 500, TokenDist(mean=100, p99=400), TokenDist(mean=50), seed=7).table
    b = poisson_source(50, 500, TokenDist(mean=100, p99=400), TokenDist(mean=50), seed=7).table
    c = poisson_source(50, 500, TokenDist(mean=100, p99=400), TokenDist(mean=50), seed=8).table
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.prompt_tokens, b.prompt_tokens)
    assert not np.array_equal(a.arrival_s, c.arrival_s)
    assert a.output_tokens.tolist() == [50] * 500


def test_poisson_gaps_have_the_rate_and_gamma_gaps_the_cv():
    t = gamma_arrivals(200.0, 40_001, rng(9))
    gaps = np.diff(t)
    assert t[0] == 0.0
    assert gaps.mean() == pytest.approx(1 / 200, rel=0.02)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.03)
    g = np.diff(gamma_arrivals(200.0, 40_001, rng(9), cv=3.0))
    assert g.mean() == pytest.approx(1 / 200, rel=0.05)
    assert g.std() / g.mean() == pytest.approx(3.0, rel=0.05)


@pytest.mark.parametrize("rate,cv", [(0, 1), (-1, 1), (math.inf, 1), (10, 0), (10, math.nan)])
def test_bad_rates_and_cvs_are_input_errors(rate, cv):
    with pytest.raises(InputError):
        gamma_arrivals(rate, 10, rng(), cv)


def test_bad_request_counts_are_input_errors():
    for n in (0, -3, 2.5, True):
        with pytest.raises(InputError, match="request count"):
            poisson_source(1, n, TokenDist(mean=10), TokenDist(mean=10))


def test_max_context_caps_prompt_and_output():
    s = gamma_source(10, 1, 2000, TokenDist(p50=500, p99=6000), TokenDist(p50=200, p99=3000), seed=1,
                     max_context=2048)
    total = s.table.prompt_tokens + s.table.output_tokens
    assert total.max() <= 2048 and s.table.output_tokens.min() >= 1


def test_arrival_source_hands_out_by_arrival_and_sorts_stably():
    src = ArrivalSource([0.5, 0.0, 0.5, 2.0], [1, 2, 3, 4], [10, 20, 30, 40])
    tab = src.table
    assert tab.arrival_s.tolist() == [0.0, 0.5, 0.5, 2.0]
    assert tab.prompt_tokens.tolist() == [2, 1, 3, 4]  # the two at 0.5 keep their order
    assert src.next_arrival_s() == 0.0
    assert src.take(0.4).tolist() == [0]
    assert src.next_arrival_s() == 0.5
    assert src.take(0.5).tolist() == [1, 2]
    assert src.take(1.0).tolist() == []
    assert not src.done()
    assert src.take(10).tolist() == [3]
    assert src.done() and math.isinf(src.next_arrival_s())


def test_sources_can_share_a_table():
    tab = RequestTable()
    a = ArrivalSource([0, 1], 5, 5, table=tab)
    b = ArrivalSource([0.5], 7, 7, table=tab)
    assert a.ids.tolist() == [0, 1] and b.ids.tolist() == [2] and len(tab) == 3


def test_request_table_add_broadcasts_scalars_and_refuses_mismatched_lengths():
    tab = RequestTable()
    assert tab.add(0.5, [1, 2, 3], 7).tolist() == [0, 1, 2]
    assert tab.arrival_s.tolist() == [0.5] * 3 and tab.output_tokens.tolist() == [7] * 3
    assert tab.add(np.array([1.0]), np.array([9]), 4, prefix_id=2, measured=False).tolist() == [3]
    assert tab.prefix_id.tolist() == [-1, -1, -1, 2] and tab.measured.tolist() == [True] * 3 + [False]
    with pytest.raises(ValueError, match="broadcast"):
        tab.add([1.0, 2.0], [1, 2, 3], 1)
    assert len(tab) == 4
