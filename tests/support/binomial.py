"""An independent check of the MoE busiest-rank expectation (solver/perf/routing.py `touched`):
the expected maximum of iid binomial counts, from the binomial pmf directly."""

from __future__ import annotations

import math


def binomial_expected_max(n: int, h: float, ranks: int) -> float:
    """E[max of `ranks` iid Binomial(n, h)] = sum over x < n of 1 - P(X <= x)^ranks."""
    cdf = 0.0
    total = 0.0
    for x in range(n):
        cdf += math.comb(n, x) * h**x * (1 - h) ** (n - x)
        total += 1.0 - cdf**ranks
    return total
