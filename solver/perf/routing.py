"""Expert load under a routing distribution: what the busiest expert-parallel device does.

`ExpertRouting` holds each expert's share p_e of the routed token-assignments (sum 1) and places
the experts on `ep` ranks (E/ep each). Two quantities drive the MoE block of the stage model:

- `busiest_share(ep)`: the largest share of assignments one rank receives. Prefill (and the
  expert GEMMs of any large iteration) waits for that rank: with T tokens and top-k routing it
  computes T * k * busiest_share token-expert products; balanced routing gives 1/ep.
- `touched(tokens, ep)`: the expected number of distinct experts read by the rank that reads the
  most. A token picks k distinct experts; expert e is among them with probability
  q_e = min(1, k p_e), so over T tokens it is touched with probability h_e = 1 - (1 - q_e)^T. A
  rank's mean count is the sum of its experts' h_e (balanced routing: (E/ep)(1 - (1 - k/E)^T),
  the formula of the paper's third finding, docs/sources.md "The paper"), but the layer waits for
  the rank that draws the most, so the model takes E[max over ranks] of the counts (independent
  Bernoulli experts): at 1 / 4 / 16 / 64 tokens of DeepSeek-V3's top-8 of 256 experts on 8 ranks
  2.54 / 6.56 / 16.7 / 30.3 experts against a mean of 1.00 / 3.82 / 12.7 / 27.8 (a simulation of
  4,000 draws without replacement gives 2.55 / 6.56 / 16.7 / 30.3).

Placement: `load_balanced` assigns experts hottest first, each to the rank with the least load
that still has room (greedy longest-processing-time with equal capacities), which puts hot and
cold experts together; `in_order` keeps expert-id order (E/ep consecutive experts per rank).

Everything is vectorised over plans: the per-rank sums are evaluated once per distinct ep and
distinct token count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from solver.schema.routing import Routing

_SHUFFLE_SEED = 0  # fixed: zipf/hottest ranks -> expert ids for in_order placement
_CHUNK_ELEMS = 1 << 22  # (token counts x experts) evaluated per block


def zipf_shares(num_experts: int, s: float) -> np.ndarray:
    """Shares of experts by rank 1..E under Zipf exponent s (descending, sum 1)."""
    w = np.arange(1, num_experts + 1, dtype=float) ** (-s)
    return w / w.sum()


def zipf_exponent_for_hottest(num_experts: int, hottest: float) -> float:
    """The Zipf exponent whose hottest expert gets `hottest` of the assignments (bisection).

    The hottest share grows monotonically with s, from 1/E at s = 0 towards 1."""
    if not 1.0 / num_experts <= hottest < 1.0:
        raise ValueError(
            f"hottest_share {hottest:g} must be at least the balanced share 1/{num_experts} "
            f"= {1.0 / num_experts:.4g} and below 1"
        )
    lo, hi = 0.0, 1.0
    while zipf_shares(num_experts, hi)[0] < hottest:
        hi *= 2.0
        if hi > 1e3:  # hottest within float rounding of 1
            return hi
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if zipf_shares(num_experts, mid)[0] < hottest:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def expert_shares(routing: Routing, num_experts: int) -> np.ndarray:
    """Per-expert share of routed assignments in expert-id order."""
    if routing.kind == "balanced":
        return np.full(num_experts, 1.0 / num_experts)
    if routing.kind == "histogram":
        h = np.asarray(routing.histogram, dtype=float)
        if h.size != num_experts:
            raise ValueError(
                f"histogram has {h.size} entries but the model has {num_experts} experts"
            )
        return h / h.sum()
    s = routing.zipf_s if routing.kind == "zipf" else zipf_exponent_for_hottest(
        num_experts, float(routing.hottest_share)  # type: ignore[arg-type]
    )
    by_rank = zipf_shares(num_experts, float(s))  # type: ignore[arg-type]
    ids = np.random.default_rng(_SHUFFLE_SEED).permutation(num_experts)
    out = np.empty(num_experts)
    out[ids] = by_rank  # rank r sits on expert ids[r]
    return out


def place(shares: np.ndarray, ep: int, placement: str) -> np.ndarray:
    """(ep, E/ep) expert ids per rank."""
    n = shares.size
    per = n // ep
    if placement == "in_order":
        return np.arange(n).reshape(ep, per)
    order = np.argsort(-shares, kind="stable")
    load = np.zeros(ep)
    filled = np.zeros(ep, dtype=int)
    out = np.empty((ep, per), dtype=int)
    for e in order:
        room = np.flatnonzero(filled < per)
        r = room[np.argmin(load[room])]
        out[r, filled[r]] = e
        filled[r] += 1
        load[r] += shares[e]
    return out


@dataclass(frozen=True)
class ExpertRouting:
    """A routing distribution over one model's experts, with its placement rule."""

    shares: np.ndarray  # per expert, id order, sum 1
    top_k: int
    placement: str = "load_balanced"
    description: str = "balanced"
    _groups: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, routing: Routing | None, num_experts: int, top_k: int) -> ExpertRouting:
        routing = routing or Routing()
        return cls(expert_shares(routing, num_experts), top_k, routing.placement, routing.describe())

    @property
    def num_experts(self) -> int:
        return self.shares.size

    @property
    def balanced(self) -> bool:
        return bool(np.allclose(self.shares, 1.0 / self.num_experts, rtol=1e-12, atol=0.0))

    def groups(self, ep: int) -> np.ndarray:
        if ep not in self._groups:
            self._groups[ep] = place(self.shares, ep, self.placement)
        return self._groups[ep]

    def busiest_share(self, ep) -> np.ndarray:
        """Largest share of assignments on one rank, per plan (array of ep values)."""
        ep = np.asarray(ep, dtype=int)
        out = np.empty(ep.shape)
        for e in np.unique(ep):
            out[ep == e] = self.shares[self.groups(int(e))].sum(axis=1).max()
        return out

    def touched(self, tokens, ep) -> np.ndarray:
        """Expected distinct experts read by the rank reading the most, per plan: E[max over
        ranks], since every rank waits for the slowest at the layer's all-to-all. Expert e is
        touched by T tokens with probability h_e = 1 - (1 - q_e)^T; a rank's count is the sum of
        its experts' (independent) Bernoulli(h_e), and E[max] = sum over x of
        (1 - prod over ranks of P(count_r <= x))."""
        tokens = np.asarray(tokens, dtype=float)
        ep = np.asarray(ep, dtype=int)
        tokens, ep = np.broadcast_arrays(tokens, ep)
        q = np.minimum(self.top_k * self.shares, 1.0)
        log_miss = np.log1p(-np.minimum(q, 1.0 - 1e-15))  # q = 1: touched by any token
        out = np.empty(tokens.shape)
        for e in np.unique(ep):
            sel = ep == e
            uniq, inv = np.unique(tokens[sel], return_inverse=True)
            best = np.empty(uniq.size)
            groups = self.groups(int(e))
            step = max(1, _CHUNK_ELEMS // self.num_experts)
            for a in range(0, uniq.size, step):
                t = uniq[a : a + step, None]
                hit = np.where(t > 0, -np.expm1(t * log_miss[None, :]), 0.0)  # 1 - (1-q)^T
                best[a : a + step] = _expected_max(hit, groups, self.balanced)
            out[sel] = best[inv.reshape(-1)]
        return out


def _count_cdf(hit: np.ndarray) -> np.ndarray:
    """P(count <= x), x = 0..n, of a sum of independent Bernoulli(hit[:, j]) (rows: token
    counts), by convolving one expert at a time."""
    pmf = np.zeros((hit.shape[0], hit.shape[1] + 1))
    pmf[:, 0] = 1.0
    for j in range(hit.shape[1]):
        h = hit[:, j : j + 1]
        pmf[:, 1:] = pmf[:, 1:] * (1.0 - h) + pmf[:, :-1] * h
        pmf[:, 0] *= 1.0 - h[:, 0]
    return np.minimum(np.cumsum(pmf, axis=1), 1.0)


def _expected_max(hit: np.ndarray, groups: np.ndarray, balanced: bool) -> np.ndarray:
    """E[max over ranks of the experts touched], rows of `hit` (token counts x experts)."""
    if balanced:  # every rank's count has the same law: the CDF to the power of ep
        cdf = _count_cdf(hit[:, groups[0]]) ** groups.shape[0]
    else:
        cdf = np.ones((hit.shape[0], groups.shape[1] + 1))
        for g in groups:
            cdf *= _count_cdf(hit[:, g])
    return np.sum(1.0 - cdf[:, :-1], axis=1)


@lru_cache(maxsize=64)
def _cached(routing_json: str, num_experts: int, top_k: int) -> ExpertRouting:
    return ExpertRouting.of(Routing.model_validate_json(routing_json), num_experts, top_k)


def expert_routing(routing: Routing | None, num_experts: int, top_k: int) -> ExpertRouting:
    """Cached ExpertRouting (placements are reused across calls for the same input)."""
    key = (routing or Routing()).model_dump_json()
    return _cached(key, num_experts, top_k)
