"""Prefix ids for a workload's prefix cache (`workload.prefix_cache`), for the replay's sources.

- `shared_prefix_tokens` n: every request shares prefix 0, its first min(n, prompt) tokens.
- `hit_rate` h: the share of prompt tokens the engine finds cached (a steady-state figure).
  The replay's KV cache (solver/replay/kv.py) finds a prefix only after a request computed it
  on that instance, so the requests are put in GROUPS groups (fewer for fewer than 2 GROUPS
  requests) that each share one prefix: every member after the first (in arrival order) finds
  it cached while the cache keeps it. With prompts s_i and a group's shortest prompt m_g, the
  group's prefix is floor(q m_g) tokens, q chosen so that the members after the first reach h
  of all prompt tokens: q = h sum s_i / sum over those members of m_g (at most 1, less one
  token). Groups are formed over the prompts sorted by length (a group's prompts are of nearly
  one length) and lie spread over the arrivals (the prompts are drawn independently of the
  times). Few groups keep the cold misses few when a router spreads a group over a pool's k
  instances (each instance misses a group's prefix once: k GROUPS requests miss in all). With
  one instance whose cache holds every group's prefix the replay's hit rate is h, less the
  block rounding (the cache shares whole blocks: up to a block per request); more instances
  miss k GROUPS times, a smaller cache evicts, and both hit less.
"""

from __future__ import annotations

import numpy as np

from solver.schema.prefix import PrefixCache

GROUPS = 8  # distinct shared prefixes for a hit rate (each one's first request misses)


def hit_rate_prefixes(prompt: np.ndarray, h: float, groups: int = GROUPS) -> tuple[np.ndarray, np.ndarray]:
    """(prefix id, prefix tokens) per request for a token hit rate h (module docstring)."""
    s = np.asarray(prompt, dtype=np.int64)
    n = len(s)
    k = max(min(groups, n // 2), 1)
    order = np.argsort(s, kind="stable")
    gid = np.empty(n, dtype=np.int64)
    gid[order] = np.arange(n) * k // max(n, 1)
    shortest = np.full(gid.max() + 1 if n else 0, np.iinfo(np.int64).max)
    np.minimum.at(shortest, gid, s)
    first = np.zeros(n, dtype=bool)
    first[np.unique(gid, return_index=True)[1]] = True  # the earliest row (arrival) of each group
    base = shortest[gid].astype(float)
    later = base[~first].sum()
    q = min(h * s.sum() / later, 1.0) if later > 0 else 0.0
    tokens = np.minimum(np.floor(q * base).astype(np.int64), s - 1)
    return gid, np.maximum(tokens, 0)


def workload_prefixes(prefix_cache: PrefixCache | None, prompt: np.ndarray):
    """(prefix id, prefix tokens) of a workload's requests: -1, 0 without a prefix cache."""
    if prefix_cache is not None and prefix_cache.shared_prefix_tokens is not None:
        return 0, np.minimum(prefix_cache.shared_prefix_tokens, prompt)
    if prefix_cache is not None and prefix_cache.hit_rate:
        return hit_rate_prefixes(prompt, prefix_cache.hit_rate)
    return -1, 0
