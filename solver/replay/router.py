"""Routers: which instance of a pool takes a request, and which pool of a service.

Inside a pool (identical instances) a `Router` picks one instance per request from the
instances' load snapshots, the way the serving stacks' routers do:

- `round_robin`: the next instance in turn, blind to load (NVIDIA Dynamo's frontend
  `--router-mode round-robin`, ai-dynamo/dynamo/docs/router/kv_cache_routing.md);
- `least_queue`: the instance with the fewest waiting requests, then the fewest running (llm-d's
  queue scorer: score (max - queue) / (max - min) over `WaitingQueueSize`, llm-d-router v0.11.0
  scorer README; the highest score wins);
- `least_kv`: the instance with the lowest KV cache use (llm-d's kv-cache-utilization scorer,
  score 1 - `KVCacheUsagePercent`; Dynamo's `--router-mode kv` with
  `--kv-overlap-score-weight 0` is the same pure load balancing over active KV blocks,
  ai-dynamo/dynamo/docs/design_docs/router_design.md).

Ties go to the lowest instance index, so a replay is deterministic. A router that places a
burst of requests (submitted at the same instant) counts its own placements on top of the
snapshot, as Dynamo's router tracks the blocks of the requests it has routed until the
workers report them: a burst is spread, not all sent to the instance that was idlest before it.

Between pools of different configurations (a service's colocated pools, its prefill pools, its
decode pools) a `Splitter` divides requests in proportion to weights (the pools' planned
capacities) by smooth weighted round-robin (nginx's upstream round-robin,
src/http/ngx_http_upstream_round_robin.c, `ngx_http_upstream_get_peer`): deterministic, and
after any n picks each pool's count is within one of n x its share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

POLICIES = ("round_robin", "least_queue", "least_kv")


@dataclass(frozen=True, slots=True)
class Load:
    """What a router sees of one instance (a snapshot, requests and KV blocks)."""

    running: int
    waiting: int
    kv_used_blocks: int
    kv_total_blocks: int
    block_tokens: int = 16  # tokens per KV block (vLLM's default --block-size 16)


def _pick(policy: str, loads: list) -> int:
    """The instance for one request (no burst to count): the lowest key, ties to the lowest
    index (the index is the key's last element), as the burst path's lexsort orders them."""
    if policy == "least_queue":
        return min([(ld.waiting, ld.running, j) for j, ld in enumerate(loads)])[2]
    return min([(ld.kv_used_blocks / max(ld.kv_total_blocks, 1), ld.waiting + ld.running, j)
                for j, ld in enumerate(loads)])[2]


class Router:
    """Picks an instance for each request of a pool of `n` identical instances."""

    def __init__(self, policy: str, n: int) -> None:
        if policy not in POLICIES:
            raise ValueError(f"router policy '{policy}': one of {', '.join(POLICIES)}")
        if n < 1:
            raise ValueError("a router needs at least one instance")
        self.policy = policy
        self.n = n
        self._next = 0  # round_robin: the instance whose turn it is

    def assign(self, loads: list, prompt_tokens: np.ndarray) -> np.ndarray:
        """Instance index per request of a burst, in order; `loads` are the instances' snapshots
        before the burst (`Load`s, or anything with its attributes), `prompt_tokens` the
        requests' prompts (the KV they will hold)."""
        k = len(prompt_tokens)
        if self.policy == "round_robin":
            out = (self._next + np.arange(k)) % self.n
            self._next = int((self._next + k) % self.n)
            return out
        if k == 1:  # the common case, one arrival: the same order as below, without arrays
            return np.array([_pick(self.policy, loads)], dtype=np.int64)
        waiting = np.array([ld.waiting for ld in loads], dtype=float)
        running = np.array([ld.running for ld in loads], dtype=float)
        used = np.array([ld.kv_used_blocks for ld in loads], dtype=float)
        total = np.array([max(ld.kv_total_blocks, 1) for ld in loads], dtype=float)
        block = np.array([max(getattr(ld, "block_tokens", 16), 1) for ld in loads], dtype=float)
        out = np.empty(k, dtype=np.int64)
        for j in range(k):  # one pick per request; the burst's own placements count
            if self.policy == "least_queue":
                i = int(np.lexsort((running, waiting))[0])
            else:
                i = int(np.lexsort((waiting + running, used / total))[0])
            out[j] = i
            waiting[i] += 1
            used[i] += np.ceil(float(prompt_tokens[j]) / block[i])
        return out


class Splitter:
    """Divides requests between targets in proportion to positive weights (smooth weighted
    round-robin)."""

    def __init__(self, weights) -> None:
        w = np.asarray(weights, dtype=float)
        if w.ndim != 1 or len(w) == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"splitter weights must be non-negative with a positive sum, got {list(w)}")
        self.weights = w
        # the picks run per request on a few targets: Python floats (the same IEEE sums numpy's
        # elementwise adds gave), the total summed once by numpy as before
        self._w = w.tolist()
        self._total = float(w.sum())
        self._current = [0.0] * len(w)

    def assign(self, k: int) -> np.ndarray:
        """Target index for each of the next `k` requests."""
        if len(self.weights) == 1:
            return np.zeros(k, dtype=np.int64)
        out = np.empty(k, dtype=np.int64)
        w, total, cur = self._w, self._total, self._current
        targets = range(len(w))
        for j in range(k):
            for t in targets:
                cur[t] += w[t]
            i = max(targets, key=cur.__getitem__)  # the first of equals (np.argmax's): deterministic
            cur[i] -= total
            out[j] = i
        return out
