"""Fleets of simulated instances: pools behind routers, disaggregated prefill -> KV link ->
decode, services that split their traffic over pools, and the fleet of every service.

Each piece is a `Server` (solver/replay/requests.py) built from smaller ones, so `loop.run`
drives an instance, a pool or the whole fleet alike:

- `Pool`: identical instances behind a `Router` (solver/replay/router.py);
- `Disaggregated`: a service's prefill pools and decode pools. A prompt finished on a prefill
  instance (its first token sampled there) crosses the KV link to a decode pool chosen in
  proportion to the decode pools' capacities, and is submitted there when the transfer lands,
  to the instance the decode pool's router picks. Its first token reaches the client when that
  decode instance admits it: TTFT = queueing + prefill + KV transfer (as the performance model's
  disaggregated prefill role defines it, solver/perf/runtime.py `prefill_role`) + the wait for a
  decode slot (the rest of a running iteration; longer when the instance holds its
  `max_batch` sequences);
- `Split`: a service's targets (each colocated pool, the disaggregated part) in proportion to
  their planned capacity (`Splitter`);
- `Fleet`: every service; a request goes to its service's server (the `service` tag that
  `FleetSource` writes).

A composite keeps every child's next event time and refreshes only the children it touched
(a child's next event changes only when it is submitted to or advanced), so its
`next_event_s` is exactly the minimum over its children at O(1) calls per event. `advance(t)`
advances only the children whose next event is due at `t` (the loop always advances to the
fleet's next event, so no child has anything due earlier); requests that finish are returned
ordered by finish time (stable).

Per-request labels (which service, pool and prefill pool) live in `Tags`, ids = rows of the
request table, for the metrics per pool.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from solver.replay.requests import NOT_YET, RequestTable, Server
from solver.replay.router import Router, Splitter


class Tags:
    """Per-request labels, growable, ids = request table rows: `service`, `pool` (the pool that
    served it: colocated, or decode), `prefill_pool` (-1: none), `local` (its id in its
    service's own table, `FleetSource`); floats `ttft_s` and
    `prefill_queued_s` (a disaggregated request's TTFT and prefill queueing, kept here so that
    the decode instance cannot overwrite them)."""

    INT = ("service", "pool", "prefill_pool", "local")
    FLOAT = ("ttft_s", "prefill_queued_s")

    def __init__(self) -> None:
        self._a = {n: np.full(1024, -1, dtype=np.int64) for n in self.INT}
        self._a.update({n: np.full(1024, NOT_YET) for n in self.FLOAT})

    def set(self, name: str, ids: np.ndarray, value) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) == 0:
            return
        arr = self._a[name]
        need = (int(ids[0]) if len(ids) == 1 else int(ids.max())) + 1
        if need > len(arr):
            for n, old in self._a.items():
                new = np.full(max(need, 2 * len(old)), NOT_YET if n in self.FLOAT else -1, dtype=old.dtype)
                new[: len(old)] = old
                self._a[n] = new
            arr = self._a[name]
        arr[ids] = value

    def at(self, name: str, ids: np.ndarray) -> np.ndarray:
        """A label of some requests (ids beyond the stored rows read as unset)."""
        arr = self._a[name]
        ids = np.asarray(ids, dtype=np.int64)
        if _inside(ids, len(arr)):  # the usual case: one gather, no fill
            return arr[ids]
        inside = ids < len(arr)
        out = np.full(len(ids), NOT_YET if name in self.FLOAT else -1, dtype=arr.dtype)
        out[inside] = arr[ids[inside]]
        return out

    def get(self, name: str, n: int) -> np.ndarray:
        """The first `n` rows of a label (a copy)."""
        arr = self._a[name]
        out = np.full(n, NOT_YET if name in self.FLOAT else -1, dtype=arr.dtype)
        m = min(n, len(arr))
        out[:m] = arr[:m]
        return out


@dataclass(frozen=True, slots=True)
class KvLink:
    """The KV cache's trip from a prefill instance to a decode instance: seconds = fixed +
    tokens x per_token (solver/perf/runtime.py `kv_transfer_s`: (latency + bytes / bandwidth) x
    (1 - overlap), bytes = tokens x KV bytes per token)."""

    fixed_s: float
    per_token_s: float

    @classmethod
    def of(cls, kv_bytes_per_token: float, bandwidth_bytes_s: float, latency_s: float,
           overlap: float = 0.0) -> KvLink:
        """`bandwidth_bytes_s`: the sending NICs together (solver/perf/runtime.py
        `kv_transfer_s`: a request's attention group)."""
        keep = 1.0 - overlap
        return cls(latency_s * keep, kv_bytes_per_token / bandwidth_bytes_s * keep)

    def seconds(self, tokens) -> np.ndarray:
        return self.fixed_s + np.asarray(tokens, dtype=float) * self.per_token_s


_NONE = np.zeros(0, dtype=np.int64)


def _inside(ids: np.ndarray, n: int) -> bool:
    """Every id below n (none: True); a burst is usually one request, read without a reduction."""
    if len(ids) <= 1:
        return not len(ids) or int(ids[0]) < n
    return int(ids.max()) < n


def _groups(which: np.ndarray, ids: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(child index, its ids in order) per distinct child, by index (np.unique's order): plain
    Python on the small `which` arrays of one event, where np.unique's sort costs more."""
    if len(ids) == 1:
        return [(int(which[0]), ids)]
    w = which.tolist()
    distinct = set(w)
    if len(distinct) == 1:
        return [(w[0], ids)]
    return [(i, ids[which == i]) for i in sorted(distinct)]


def _by_time(parts: list[np.ndarray], key: np.ndarray) -> np.ndarray:
    parts = [p for p in parts if len(p)]
    if not parts:
        return _NONE
    ids = parts[0] if len(parts) == 1 else np.concatenate(parts)
    if len(ids) > 1:
        ids = ids[np.argsort(key[ids], kind="stable")]
    return ids


class _Composite:
    """A server made of child servers; subclasses say which child takes each request."""

    def __init__(self, table: RequestTable, children: Sequence[Server]) -> None:
        if not children:
            raise ValueError("a composite server needs at least one child")
        self.table = table
        self.children = list(children)
        # a few children: plain lists beat numpy on the per-event path
        self._next = [float(c.next_event_s()) for c in self.children]

    def _route(self, ids: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _finish_key(self) -> np.ndarray:
        return self.table._finish_s

    def submit(self, ids: np.ndarray, t_s: float) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) == 0:
            return
        for i, mine in _groups(self._route(ids), ids):
            child = self.children[i]
            child.submit(mine, t_s)
            self._next[i] = float(child.next_event_s())

    def next_event_s(self) -> float:
        return min(self._next)

    def _advance_due(self, t_s: float) -> list[tuple[int, np.ndarray]]:
        """Advance the children due at t_s: (child index, ids they finished) for each."""
        out = []
        for i, t in enumerate(self._next):
            if t <= t_s:
                child = self.children[i]
                out.append((i, np.asarray(child.advance(t_s), dtype=np.int64)))
                self._next[i] = float(child.next_event_s())
        return out

    def advance(self, t_s: float) -> np.ndarray:
        return _by_time([ids for _, ids in self._advance_due(t_s)], self._finish_key())


class Pool(_Composite):
    """Identical instances behind a router. `role`: the instances' ("colocated", "prefill" or
    "decode"); `index`: the pool's number in the fleet (the `pool` or `prefill_pool` tag)."""

    def __init__(self, table: RequestTable, instances: Sequence[Server], policy: str = "least_queue",
                 index: int = 0, tags: Tags | None = None, role: str | None = None) -> None:
        super().__init__(table, instances)
        self.router = Router(policy, len(self.children))
        self.index = index
        self.tags = tags if tags is not None else Tags()
        self.role = role or getattr(self.children[0], "role", "colocated")

    def _route(self, ids: np.ndarray) -> np.ndarray:
        self.tags.set("prefill_pool" if self.role == "prefill" else "pool", ids, self.index)
        if len(self.children) == 1:
            return np.zeros(len(ids), dtype=np.int64)
        loads = [] if self.router.policy == "round_robin" else [c.load() for c in self.children]
        return self.router.assign(loads, self.table._prompt_tokens[ids])

    def _finish_key(self) -> np.ndarray:
        # a prefill instance is done with a request when its first token is sampled
        return self.table._first_token_s if self.role == "prefill" else self.table._finish_s


class Split(_Composite):
    """A service's targets (pools, a disaggregated part) in proportion to `weights`."""

    def __init__(self, table: RequestTable, targets: Sequence[Server], weights) -> None:
        super().__init__(table, targets)
        self.splitter = Splitter(weights)

    def _route(self, ids: np.ndarray) -> np.ndarray:
        return self.splitter.assign(len(ids))


class Fleet(_Composite):
    """Every service's server; a request goes to the server of its `service` tag."""

    def __init__(self, table: RequestTable, services: Sequence[Server], tags: Tags) -> None:
        super().__init__(table, services)
        self.tags = tags

    def _route(self, ids: np.ndarray) -> np.ndarray:
        if len(self.children) == 1:
            return np.zeros(len(ids), dtype=np.int64)
        which = self.tags.at("service", ids)
        if (int(which[0]) if len(which) == 1 else which.min()) < 0:
            raise ValueError("a request without a service reached the fleet")
        return which


class Disaggregated:
    """A service's disaggregated part: prefill pools (traffic in proportion to
    `prefill_weights`), the KV link, decode pools (in proportion to `decode_weights`).
    `links[p][d]`: the link from prefill pool p to decode pool d.

    A request whose prompt is done on prefill pool p at t (its `first_token_s` as the prefill
    instance wrote it; a request returned without one was rejected there and is done, never
    finished) goes to decode pool d (the decode splitter's next pick) and lands
    at t + links[p][d].seconds(prompt tokens). At the landing it is submitted to decode pool d
    (its router picks the instance), unless it wants a single output token, which the prefill
    already produced: it is finished at the landing (and counted with decode pool d).
    Its first token reaches the client when the decode instance admits it (a slot among its
    `max_batch` sequences, at an iteration boundary): a decode server takes a request into its
    batch before it streams anything of it (SGLang's decode PreallocQueue holds a request until
    a request slot and its KV fit, python/sglang/srt/disaggregation/decode.py; TensorRT-LLM's
    generation server schedules a DISAGG_GENERATION_INIT request under its `max_batch_size`
    before its first response, tensorrt_llm/_torch/pyexecutor/py_executor.py). When the decode
    pool finishes it, its `first_token_s` is set to the later of the landing and that admission,
    and `queued_s` back to the prefill queueing.
    """

    role = "disaggregated"

    def __init__(self, table: RequestTable, prefill: Sequence[Pool], prefill_weights,
                 decode: Sequence[Pool], decode_weights, links: Sequence[Sequence[KvLink]], tags: Tags) -> None:
        if len(links) != len(prefill) or any(len(row) != len(decode) for row in links):
            raise ValueError("links must be one row per prefill pool, one link per decode pool")
        self.table = table
        self.prefill = Split(table, prefill, prefill_weights)
        self.decode = list(decode)
        self._decode_next = [float(d.next_event_s()) for d in self.decode]
        self.decode_splitter = Splitter(decode_weights)
        self.links = [list(row) for row in links]
        self.tags = tags
        self._flight: list[tuple[float, int, int]] = []  # (landing s, request id, decode pool)

    def submit(self, ids: np.ndarray, t_s: float) -> None:
        self.prefill.submit(ids, t_s)

    def next_event_s(self) -> float:
        land = self._flight[0][0] if self._flight else np.inf
        return float(min(self.prefill.next_event_s(), land, min(self._decode_next)))

    def advance(self, t_s: float) -> np.ndarray:
        done = []
        for p, ids in self.prefill._advance_due(t_s):
            if len(ids):
                done.append(self._depart(p, ids, t_s))
        done.append(self._land(t_s))
        for d, t in enumerate(self._decode_next):
            if t > t_s:
                continue
            fin = np.asarray(self.decode[d].advance(t_s), dtype=np.int64)
            self._decode_next[d] = float(self.decode[d].next_event_s())
            if len(fin):
                admitted = self.table._arrival_s[fin] + self.table._queued_s[fin]  # the decode admission
                self.table._first_token_s[fin] = np.maximum(self.tags.at("ttft_s", fin), admitted)
                self.table._queued_s[fin] = self.tags.at("prefill_queued_s", fin)
                done.append(fin)
        return _by_time(done, self.table._finish_s)

    def _depart(self, p: int, ids: np.ndarray, t_s: float) -> np.ndarray:
        """Send prompts done on prefill pool p over the link; returns those the prefill instance
        rejected (no first token: their KV can never fit there), which are done, unfinished."""
        tb = self.table
        sampled = tb._first_token_s[ids]
        ok = np.isfinite(sampled)
        rejected = ids[~ok]
        ids = ids[ok]
        t_done = sampled[ok]
        dest = self.decode_splitter.assign(len(ids))
        land = np.empty(len(ids))
        for d, sel in _groups(dest, np.arange(len(ids))):
            land[sel] = t_done[sel] + self.links[p][d].seconds(tb._prompt_tokens[ids[sel]])
        tb._first_token_s[ids] = land
        tb._finish_s[ids] = NOT_YET
        self.tags.set("ttft_s", ids, land)
        self.tags.set("prefill_queued_s", ids, tb._queued_s[ids])
        for rid, t_land, d in zip(ids.tolist(), land.tolist(), dest.tolist()):
            heapq.heappush(self._flight, (t_land, rid, d))
        return rejected

    def _land(self, t_s: float) -> np.ndarray:
        """Submit the transfers that have landed by `t_s`; returns single-token requests done.

        The landed few are sorted out in plain Python (a handful per event; numpy's per-call cost
        on such arrays was most of the replay's fleet time): each decode pool gets its landed
        requests in landing order, the pools by index."""
        flight = self._flight
        if not flight or flight[0][0] > t_s:
            return _NONE
        out_tok = self.table._output_tokens
        one: list[tuple[int, int]] = []  # (request, decode pool) done with their first token
        to: dict[int, list[int]] = {}  # decode pool -> requests it decodes
        while flight and flight[0][0] <= t_s:
            _, rid, d = heapq.heappop(flight)
            if out_tok[rid] <= 1:
                one.append((rid, d))
            else:
                to.setdefault(d, []).append(rid)
        if one:
            self._finish_single(one)
        for d in sorted(to):
            self.decode[d].submit(np.array(to[d], dtype=np.int64), t_s)
            self._decode_next[d] = float(self.decode[d].next_event_s())
        return np.array([rid for rid, _ in one], dtype=np.int64) if one else _NONE

    def _finish_single(self, one: list[tuple[int, int]]) -> None:
        """Requests of one output token, done at the landing; counted with the decode pool their
        KV went to."""
        tb = self.table
        for rid, d in one:
            tb._finish_s[rid] = tb._first_token_s[rid]
        for d in sorted({d for _, d in one}):
            mine = np.array([rid for rid, k in one if k == d], dtype=np.int64)
            self.tags.set("pool", mine, getattr(self.decode[d], "index", -1))
