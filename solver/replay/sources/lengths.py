"""Token lengths drawn from a problem's `TokenDist` (`solver/schema/problem.py`), and the
length laws of the benchmark tools' synthetic datasets.

What a `TokenDist` means, and so what `sample_lengths` draws:

- a plain number or `{mean: M}` (or `{p50: P}` alone): every request has that many tokens, as
  the planner assumes (its p99 is then the mean, `TokenDist.p99_tokens`);
- `{histogram: [[tokens, weight], ...]}`: each request takes one of the listed counts with
  probability weight / total weight (so the mean and the p99 are `mean_tokens` and
  `p99_tokens` of the histogram exactly, up to sampling noise);
- two of mean / p50 / p99: the log-normal law with exactly those two figures (the usual shape
  of prompt and output lengths; e.g. the ServeGen length tables are close to it); `{p50, p99}`:
  median p50 and 99th percentile p99; `{mean, p99}` and `{mean, p50}`: that mean and that
  quantile;
- all three: median p50 and p99 fix the upper half of a two-piece log-normal, and the lower
  half's spread gives the mean; where the mean is too high for that (a tail heavier than a
  log-normal's), a log-normal shifted by s tokens (X = s + LogNormal) fits all three instead.

A set of figures no such law has (a mean below the median, a p99 below the mean, or a p99 more
than e^(z^2/2) = 15 times the mean, the most a log-normal allows) is an InputError naming the
figures. Draws are rounded to whole tokens and are at least 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solver.errors import InputError
from solver.schema.problem import TokenDist

Z99 = 2.3263478740408408  # standard normal quantile at 0.99 (scipy.stats.norm.ppf(0.99))


@dataclass(frozen=True)
class LengthLaw:
    """X = shift + exp(mu + sigma Z), Z standard normal, sigma = sigma_lo below the median
    (Z < 0) and sigma_hi above it: a log-normal when the two are equal, a two-piece one
    otherwise; median shift + e^mu."""

    shift: float
    mu: float
    sigma_lo: float
    sigma_hi: float

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        z = rng.standard_normal(int(n))
        return self.shift + np.exp(self.mu + np.where(z < 0, self.sigma_lo, self.sigma_hi) * z)

    def mean(self) -> float:
        half = [math.exp(s * s / 2) * 0.5 * math.erfc(-sign * s / math.sqrt(2))
                for s, sign in ((self.sigma_lo, -1), (self.sigma_hi, 1))]
        return self.shift + math.exp(self.mu) * sum(half)

    def quantile(self, q: float) -> float:
        z = float(_norm_ppf(q))
        return self.shift + math.exp(self.mu + (self.sigma_lo if z < 0 else self.sigma_hi) * z)


def _norm_ppf(q: float) -> float:
    lo, hi = -40.0, 40.0
    for _ in range(200):  # bisection on the normal CDF, 0.5 erfc(-z / sqrt 2)
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if 0.5 * math.erfc(-mid / math.sqrt(2)) < q else (lo, mid)
    return 0.5 * (lo + hi)


def _lower_half(s: float) -> float:
    # E[e^(s Z); Z < 0] * 2 / 2 = e^(s^2/2) Phi(-s): the lower half's share of the mean / e^mu
    return math.exp(s * s / 2) * 0.5 * math.erfc(s / math.sqrt(2))


def length_law(dist: TokenDist, where: str = "tokens") -> LengthLaw:
    """The law `sample_lengths` draws for a dist with two or three of mean / p50 / p99."""
    mean, p50, p99 = dist.mean, dist.p50, dist.p99
    if p99 is None:
        if mean is None or p50 is None or mean == p50:
            return LengthLaw(0.0, math.log(mean or p50), 0.0, 0.0)  # type: ignore[arg-type]
        if mean < p50:
            raise InputError(f"{where}: mean {mean:g} below p50 {p50:g}: no log-normal law has it")
        s = math.sqrt(2.0 * math.log(mean / p50))
        return LengthLaw(0.0, math.log(p50), s, s)
    if mean is None:  # p50 and p99
        s = math.log(p99 / p50) / Z99  # type: ignore[operator]
        return LengthLaw(0.0, math.log(p50), s, s)  # type: ignore[arg-type]
    if p50 is None:
        return _mean_p99(mean, p99, where)
    return _three(mean, p50, p99, where)


def _mean_p99(mean: float, p99: float, where: str) -> LengthLaw:
    # mean = e^(mu + s^2/2), p99 = e^(mu + z s)  =>  s^2/2 - z s + ln(p99/mean) = 0 (smaller root)
    if p99 < mean:
        raise InputError(f"{where}: p99 {p99:g} below the mean {mean:g}: no log-normal law has it")
    disc = Z99 * Z99 - 2.0 * math.log(p99 / mean)
    if disc < 0:
        raise InputError(f"{where}: p99 {p99:g} is over {math.exp(Z99 * Z99 / 2):.1f} x the mean {mean:g}, "
                         "more than a log-normal law allows; give a histogram")
    s = Z99 - math.sqrt(disc)
    return LengthLaw(0.0, math.log(mean) - s * s / 2.0, s, s)


def _three(mean: float, p50: float, p99: float, where: str) -> LengthLaw:
    """Median p50 and p99 fix the upper half; the lower half's sigma then gives the mean
    (two-piece log-normal). A mean too high for that (a tail heavier than log-normal) takes a
    log-normal shifted by s > 0 tokens instead, which fits all three exactly."""
    if not p50 <= mean <= p99:
        raise InputError(f"{where}: needs p50 <= mean <= p99 (got {p50:g}, {mean:g}, {p99:g})")
    if p99 == p50:
        return LengthLaw(0.0, math.log(p50), 0.0, 0.0)
    hi = math.log(p99 / p50) / Z99
    need = mean / p50 - math.exp(hi * hi / 2) * 0.5 * math.erfc(-hi / math.sqrt(2))
    if need > 0.5:
        return _shifted(mean, p50, p99, where)
    if need <= _lower_half(30.0):
        raise InputError(f"{where}: mean {mean:g} too close to p50 {p50:g} for p99 {p99:g}; give a histogram")
    lo_s, hi_s = 0.0, 30.0
    for _ in range(100):  # _lower_half falls from 0.5 at 0 towards 0
        mid = 0.5 * (lo_s + hi_s)
        lo_s, hi_s = (mid, hi_s) if _lower_half(mid) > need else (lo_s, mid)
    return LengthLaw(0.0, math.log(p50), 0.5 * (lo_s + hi_s), hi)


def _ratio(sigma: np.ndarray) -> np.ndarray:
    # (mean - p50) / (p99 - p50) of s + LogNormal(mu, sigma), independent of s and mu
    return np.expm1(sigma * sigma / 2.0) / np.expm1(Z99 * sigma)


def _shifted(mean: float, p50: float, p99: float, where: str) -> LengthLaw:
    target = (mean - p50) / (p99 - p50)
    grid = np.linspace(1e-4, 8.0, 16000)  # the first crossing (the ratio is not monotone)
    over = np.nonzero(_ratio(grid) >= target)[0]
    if not len(over):
        raise InputError(f"{where}: mean {mean:g}, p50 {p50:g}, p99 {p99:g}: no log-normal law fits; "
                         "give a histogram")
    lo, hi = float(grid[max(over[0] - 1, 0)]), float(grid[over[0]])
    for _ in range(60):  # bisection on the bracket
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _ratio(np.array(mid)) < target else (lo, mid)
    s = 0.5 * (lo + hi)
    scale = (p99 - p50) / math.expm1(Z99 * s)  # e^mu
    return LengthLaw(p50 - scale, math.log(scale), s, s)


def sample_lengths(dist: TokenDist, n: int, rng: np.random.Generator, where: str = "tokens",
                   cap: int | None = None) -> np.ndarray:
    """`n` token counts (int64, >= 1, <= `cap` when given) drawn from `dist` as the module
    docstring says; `where` names the field in errors."""
    n = int(n)
    if dist.histogram is not None:
        tokens = np.array([t for t, _ in dist.histogram], dtype=float)
        weight = np.array([w for _, w in dist.histogram], dtype=float)
        out = tokens[rng.choice(len(tokens), size=n, p=weight / weight.sum())]
    elif dist.p99 is None and (dist.mean is None or dist.p50 is None):
        out = np.full(n, float(dist.mean_tokens))
    else:
        out = length_law(dist, where).draw(n, rng)
    lengths = np.maximum(np.rint(out), 1).astype(np.int64)
    return np.minimum(lengths, cap) if cap is not None else lengths


def uniform_lengths(nominal: int, low_ratio: float, n: int, rng: np.random.Generator,
                    high_ratio: float = 1.0) -> np.ndarray:
    """Whole numbers uniform on [int(nominal * low_ratio), int(nominal * high_ratio)], both ends
    included: the random dataset of InferenceX's `utils/bench_serving/benchmark_serving.py`
    (`sample_uniform`: `np.random.randint(int(L * r), L + 1)`, its `--random-range-ratio r`,
    0.8 in its workflows) with high_ratio 1; low_ratio = high_ratio = 1 gives fixed lengths."""
    lo = int(nominal * low_ratio)
    hi = max(int(nominal * high_ratio), lo)
    return np.maximum(rng.integers(lo, hi + 1, size=int(n)), 1).astype(np.int64)


def normal_lengths(mean: float, stddev: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """aiperf's synthetic lengths (`--isl`/`--isl-stddev`, `--osl`/`--osl-stddev`): ceil of a
    normal draw kept above 0 (aiperf 0.1.1 `aiperf/dataset/utils.py`
    `sample_positive_normal_integer`); stddev 0 (aiconfigurator's benchmark default) is fixed."""
    if stddev <= 0:
        return np.full(int(n), max(math.ceil(mean), 1), dtype=np.int64)
    out = np.empty(0)
    while len(out) < n:  # redraw the non-positive ones (aiperf's lower=0 resampling)
        draw = rng.normal(mean, stddev, size=int(n) - len(out))
        out = np.concatenate([out, draw[draw > 0]])
    return np.maximum(np.ceil(out), 1).astype(np.int64)
