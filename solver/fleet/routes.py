"""KV routes of a planned site: how much disaggregated traffic goes from prefill pools of one
hardware type to decode pools of another, and the most a site's pools can carry.

A site's disaggregated traffic is a flow in a bipartite network: source -> prefill group (its
capacity) -> decode type it may send KV caches to (unbounded) -> sink (the decode type's
capacity). `max_flow` gives the most the pools can serve (augmenting paths, floats);
`min_cost_routes` splits a given amount so that as little as possible crosses between hardware
types (successive shortest paths, integers: a route within one type costs 0, across types 1).
A service is heterogeneous when that least cross-type traffic is positive.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    """Prefill capacity of one hardware type that may send KV caches to `reach` (decode types)."""

    hw: int
    reach: tuple[int, ...]
    cap: float


class _Network:
    """A small directed network with residual arcs: [to, capacity, cost, index of reverse]."""

    def __init__(self, n: int):
        self.adj: list[list[list]] = [[] for _ in range(n)]

    def arc(self, u: int, v: int, cap: float, cost: int = 0) -> None:
        self.adj[u].append([v, cap, cost, len(self.adj[v])])
        self.adj[v].append([u, 0, -cost, len(self.adj[u]) - 1])


def _build(groups: list[Group], decode: dict[int, float], inf: float) -> tuple[_Network, list[int]]:
    types = sorted(decode)
    net = _Network(2 + len(groups) + len(types))
    node = {d: 2 + len(groups) + i for i, d in enumerate(types)}
    for gi, g in enumerate(groups):
        net.arc(0, 2 + gi, g.cap)
        for d in g.reach:
            if d in node:
                net.arc(2 + gi, node[d], inf, 0 if d == g.hw else 1)
    for d in types:
        net.arc(node[d], 1, decode[d])
    return net, types


def max_flow(groups: list[Group], decode: dict[int, float]) -> float:
    """The most traffic the groups and decode capacities can carry (Edmonds-Karp)."""
    inf = sum(g.cap for g in groups) + sum(decode.values()) + 1.0
    net, _ = _build(groups, decode, inf)
    total = 0.0
    eps = 1e-12 * inf
    while True:
        prev: dict[int, tuple[int, int]] = {0: (-1, -1)}
        queue = deque([0])
        while queue and 1 not in prev:
            u = queue.popleft()
            for i, (v, cap, _, _) in enumerate(net.adj[u]):
                if cap > eps and v not in prev:
                    prev[v] = (u, i)
                    queue.append(v)
        if 1 not in prev:
            return total
        push, v = inf, 1
        while v != 0:
            u, i = prev[v]
            push = min(push, net.adj[u][i][1])
            v = u
        v = 1
        while v != 0:
            u, i = prev[v]
            a = net.adj[u][i]
            a[1] -= push
            net.adj[v][a[3]][1] += push
            v = u
        total += push


def min_cost_routes(groups: list[Group], decode: dict[int, int], amount: int) -> list[tuple[int, int, int]]:
    """Route `amount` (integer units) with the least traffic across hardware types; returns
    (group index, decode type, units) with positive units. Raises if the capacity is short."""
    inf = amount + 1
    net, types = _build(groups, decode, inf)
    n = len(net.adj)
    left = amount
    while left > 0:
        dist = [inf * n] * n
        prev: list[tuple[int, int] | None] = [None] * n
        dist[0] = 0
        for _ in range(n):  # Bellman-Ford: residual arcs carry negative costs
            changed = False
            for u in range(n):
                if dist[u] >= inf * n:
                    continue
                for i, (v, cap, cost, _) in enumerate(net.adj[u]):
                    if cap > 0 and dist[u] + cost < dist[v]:
                        dist[v] = dist[u] + cost
                        prev[v] = (u, i)
                        changed = True
            if not changed:
                break
        if prev[1] is None:
            raise ValueError(f"the pools carry {amount - left} of the {amount} units to route")
        push, v = left, 1
        while v != 0:
            u, i = prev[v]  # type: ignore[misc]
            push = min(push, net.adj[u][i][1])
            v = u
        v = 1
        while v != 0:
            u, i = prev[v]  # type: ignore[misc]
            a = net.adj[u][i]
            a[1] -= push
            net.adj[v][a[3]][1] += push
            v = u
        left -= push
    out = []
    first_decode = 2 + len(groups)
    for gi in range(len(groups)):
        for v, cap, cost, rev in net.adj[2 + gi]:
            if v >= first_decode:
                used = net.adj[v][rev][1]  # flow on the arc = capacity of its reverse
                if used > 0:
                    out.append((gi, types[v - first_decode], int(used)))
    return out
