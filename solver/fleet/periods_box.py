"""The committed vector searched by boxes (issue 17) when it has too many values to list
(more than periods_commit.MAX_VECTORS): a branch-and-bound over boxes [lo, hi] of committed
levels, every prune by a proven bound.

For a fixed committed vector C the horizon costs T(C) = H cp.C + sum_p s_p g_p(C) + starts, with
g_p(C) period p's cost per second planned alone with its termed devices up to C free
(periods_commit.PeriodBounds). Two facts about g_p give bounds without solving at every C:

- g_p is non-increasing in C (more committed devices never raise a period's spend), so over a
  box every C has T(C) >= LB(box) = H cp.lo + sum_p s_p g_p(hi);
- g_p(C) >= g_p(C') - sum_h op_h max(C_h - C'_h, 0) (the plan at C costs at C' at most op_h
  more per device of type h above C'_h), so every period solved at C' bounds g_p everywhere.

A solve at C gives a lower bound (CP-SAT's proven bound, within a deterministic budget) and a
plan per distinct period; the plans of all periods are a plan of the horizon (an incumbent).
The search pops the box of least bound, first shrinks it (a level h above lo_h + (target -
LB) / (H cp_h) cannot beat the target), solves its top corner when not yet solved, re-solves a
single point's unproven periods with more work, and otherwise splits the widest coordinate (by
committed cost). The result is proven only when every box is pruned by its bound.
"""

from __future__ import annotations

import heapq
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet.cpsat import check_status, make_solver
from solver.fleet.options import SolveOptions
from solver.fleet.periods import PeriodInstance, PeriodModel, device_bound
from solver.fleet.periods_commit import PeriodBounds, fix

# CP-SAT deterministic time of the box search per second of the time limit: the rest goes to the
# period hints (a quarter), the final solve at the best vector and its tie-breaks
BOX_WORK_SHARE = 0.6
POINT_WORK = 0.25  # deterministic time of a period's first solve at a vector (re-solves double it)
MAX_POINT_WORK = 8.0  # the most a period's re-solve at one vector gets
LEAF_WORK = 2.0  # deterministic time of the model over periods at one vector (with a start cost)
THREADS = 2  # periods solved side by side, one CP-SAT worker each (benchmarks/multiperiod.md: 2 cores)


@dataclass
class Point:
    lb: float  # a proven lower bound on g (objective units per second); inf: no plan
    counts: np.ndarray | None  # a plan of the period (None: none found)
    work: float  # the deterministic time it was given
    proven: bool


class Table:
    """g per distinct period (its demand and on-demand supply): the points solved, and bounds
    from them (`bound`)."""

    def __init__(self, pi: PeriodInstance, opts: SolveOptions, cost_of, types: list[int], high: list):
        self.pi, self.opts, self.cost_of, self.types = pi, opts, cost_of, types
        self.pb = PeriodBounds(pi, opts, cost_of)
        keys: dict[tuple, list[int]] = {}
        for p in range(pi.n_periods):
            keys.setdefault(self.pb.key(p, ()), []).append(p)
        self.groups = list(keys.values())  # periods of equal demand and supply, first-seen order
        self.key_of = {p: k for k, g in enumerate(self.groups) for p in g}
        self.weight = [sum(pi.seconds[p] for p in g) for g in self.groups]
        self.alone = [self.pb.alone(g[0]) for g in self.groups]
        self.caps = [np.array([device_bound(a, h) for h in types]) for a in self.alone]
        # per period and type, the price of a device above a solved level: the on-demand one
        # when renting is unlimited there; else inf (a plan may not be affordable below its
        # level at all: only the monotone bound holds)
        self.op = [np.array([math.inf if pi.on_demand_price[h] is None or pi.on_demand_supply[h][g[0]] is not None
                             else float(pi.on_demand_price[h]) for h in types]) for g in self.groups]
        self.points: list[dict[tuple, Point]] = [{} for _ in self.groups]
        self.levels: list[list[np.ndarray]] = [[] for _ in self.groups]
        self.lbs: list[list[float]] = [[] for _ in self.groups]
        self.work_used = 0.0
        self.solves = 0
        for k, g in enumerate(self.groups):  # g at C = 0: the period at the higher prices
            if high and high[g[0]] is not None:
                self._add(k, tuple(0 for _ in types), Point(float(high[g[0]]), None, 0.0, False))

    def clamp(self, k: int, c: tuple) -> tuple:
        return tuple(int(x) for x in np.minimum(np.array(c), self.caps[k]))

    def _add(self, k: int, c: tuple, pt: Point) -> None:
        self.points[k][c] = pt
        self.levels[k].append(np.array(c, dtype=float))
        self.lbs[k].append(pt.lb)

    def bound(self, k: int, c: tuple) -> float:
        """A proven lower bound on g_k(c) from every point solved (monotone and Lipschitz)."""
        if not self.lbs[k]:
            return 0.0
        at = np.array(self.clamp(k, c), dtype=float)
        above = np.maximum(at[None, :] - np.array(self.levels[k]), 0.0)
        with np.errstate(invalid="ignore"):  # inf x 0: not above that level
            penalty = np.where(above > 0, above * self.op[k][None, :], 0.0).sum(axis=1)
        lbs = np.array(self.lbs[k])
        ok = np.isfinite(penalty)
        return max(0.0, float(np.max(lbs[ok] - penalty[ok]))) if ok.any() else 0.0

    def lower(self, lo: tuple, hi: tuple) -> float:
        """LB of the box [lo, hi]: the committed cost at lo, every period bounded at hi."""
        pi = self.pi
        fixed = sum(pi.horizon_s * int(pi.committed_price[h] or 0) * x for h, x in zip(self.types, lo))
        return fixed + sum(w * self.bound(k, hi) for k, w in enumerate(self.weight))

    def needs(self, c: tuple, work: float) -> list[int]:
        """The periods whose point at c is missing, or unproven and solved with less work."""
        out = []
        for k in range(len(self.groups)):
            pt = self.points[k].get(self.clamp(k, c))
            if pt is None or (not pt.proven and pt.work < work):
                out.append(k)
        return out

    def solve(self, c: tuple, work: float, deadline: float) -> None:
        """Solve every period that `needs` it at c, THREADS side by side (deterministic: each
        solve is one sequential CP-SAT worker under a deterministic limit)."""
        todo = self.needs(c, work)
        with ThreadPoolExecutor(THREADS) as ex:
            got = list(ex.map(lambda k: self._solve_one(k, self.clamp(k, c), work, deadline), todo))
        self.solves += len(todo)
        for k, (pt, det) in zip(todo, got):
            self.work_used += det
            self._add(k, self.clamp(k, c), pt)

    def _hint(self, k: int, c: tuple) -> np.ndarray | None:
        near = [(int(np.abs(np.array(x) - np.array(c)).sum()), x) for x, pt in self.points[k].items()
                if pt.counts is not None]
        return self.points[k][min(near)[1]].counts if near else None

    def _solve_one(self, k: int, c: tuple, work: float, deadline: float) -> tuple[Point, float]:
        pm = PeriodModel(self.alone[k])
        fix(pm, dict(zip(self.types, c)))
        hint = self._hint(k, c)
        if hint is not None:
            for v, x in zip(pm.fms[0].v.n, hint):
                pm.m.add_hint(v, int(x))
        pm.m.minimize(self.cost_of(pm))
        solver = make_solver(self.opts, deadline - time.perf_counter(), work)
        status = solver.solve(pm.m)
        check_status(status, pm.m)
        det = float(solver.response_proto.deterministic_time)
        if status == cp_model.INFEASIBLE:
            return Point(math.inf, None, work, True), det
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return Point(0.0, None, work, False), det
        counts = np.array([solver.value(v) for v in pm.fms[0].v.n], dtype=np.int64)
        lb = float(math.ceil(solver.best_objective_bound - 1e-6))
        return Point(lb, counts, work, status == cp_model.OPTIMAL), det


@dataclass
class Incumbent:
    value: int  # the horizon's cost (objective units)
    levels: dict[int, int]  # the committed level per termed type, the cheapest for its usage
    counts: list[np.ndarray]  # [period]: instances per column


def plan_cost(pi: PeriodInstance, types: list[int], counts: list[np.ndarray]) -> Incumbent | None:
    """The cost of a plan (counts per period) as the model counts it, with each type's committed
    level the cheapest for its usages (from 0 and the usages; none when it cannot be served)."""
    secs = np.array(pi.seconds, dtype=np.int64)
    n = np.array(counts, dtype=np.int64)
    plain = np.array([not pi.termed[int(h)] for h in pi.base.hw])
    value = int(np.sum(secs * (n @ (pi.base.cost * plain))))
    if pi.start_cost and pi.n_periods > 1:
        value += int(np.sum(np.maximum(n[1:] - n[:-1], 0) @ pi.base.devices)) * pi.start_cost
    levels = {}
    for h in types:
        usage = n @ (pi.base.devices * (pi.base.hw == h))
        cp, op, top = pi.committed_price[h], pi.on_demand_price[h], pi.committed_supply[h]
        options = [0] if cp is None else sorted({0, *map(int, usage)})
        options = [c for c in options if top is None or c <= top]
        costs = [None if op is None and int(usage.max()) > c else
                 int(cp or 0) * pi.horizon_s * c + int(op or 0) * int(np.sum(secs * np.maximum(usage - c, 0)))
                 for c in options]
        if all(x is None for x in costs):
            return None
        best = min((x, c) for x, c in zip(costs, options) if x is not None)
        value += best[0]
        levels[h] = best[1]
    return Incumbent(value, levels, [np.array(c) for c in counts])


@dataclass
class BoxResult:
    best: Incumbent
    bound: float  # a proven lower bound over every committed vector
    boxes: int  # boxes popped
    solves: int  # period solves
    work: float  # their deterministic time


@dataclass
class BoxSearch:
    pi: PeriodInstance
    table: Table
    opts: SolveOptions
    deadline: float
    leaf: object = None  # with a start cost: leaf(levels, counts, cut, work) -> (status, value, bound, counts, det)
    best: Incumbent | None = None
    floor: float = math.inf  # the least target a box was discarded under (gap stops)
    heap: list = field(default_factory=list)
    seq: int = 0
    boxes: int = 0

    def target(self) -> float:
        """Boxes whose bound reaches this are discarded: the best cost (exact), or the best cost
        less the accepted relative gap."""
        if self.best is None:
            return math.inf
        if self.opts.relative_gap is None:
            return float(self.best.value)
        return float(math.ceil(self.best.value * (1 - self.opts.relative_gap)))

    def evaluate(self, c: tuple, work: float) -> None:
        self.table.solve(c, work, self.deadline)
        counts = self.counts_at(c)
        if all(x is not None for x in counts):
            self.offer(counts)

    def counts_at(self, c: tuple) -> list:
        """Per period its plan at c (None where none was found)."""
        out = []
        for p in range(self.pi.n_periods):
            k = self.table.key_of[p]
            pt = self.table.points[k].get(self.table.clamp(k, c))
            out.append(None if pt is None else pt.counts)
        return out

    def offer(self, counts: list) -> None:
        got = plan_cost(self.pi, self.table.types, counts)
        if got is not None and (self.best is None or got.value < self.best.value):
            self.best = got

    def push(self, lo: tuple, hi: tuple) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (self.table.lower(lo, hi), self.seq, lo, hi))

    def shrink(self, lo: tuple, hi: tuple) -> tuple | None:
        """hi cut where the committed cost alone leaves the box's bound at the target: a level
        h above lo_h + (target - 1 - LB) / (H cp_h) has T >= target (costs are integers)."""
        pi, thr = self.pi, self.target()
        for _ in range(3):
            lb = self.table.lower(lo, hi)
            if lb >= thr:
                return None
            if math.isinf(thr):
                return hi
            new = []
            for h, a, b in zip(self.table.types, lo, hi):
                unit = pi.horizon_s * int(pi.committed_price[h] or 0)
                new.append(b if unit == 0 else min(b, a + int((thr - 1 - lb) // unit)))
            if tuple(new) == hi:
                return hi
            hi = tuple(new)
        return hi

    def step(self, lb: float, lo: tuple, hi: tuple) -> float | None:
        """One popped box: discarded, re-pushed (with a solve or a split), or closed; returns a
        bound it leaves open (a point out of work), else None."""
        box = self.shrink(lo, hi)
        if box is None:
            self.floor = min(self.floor, self.target())
            return None
        shrunk, hi = box != hi, box
        now = self.table.lower(lo, hi)
        if now > lb or shrunk:
            self.push(lo, hi)
            return None
        if self.table.needs(hi, POINT_WORK):
            self.evaluate(hi, POINT_WORK)
            self.push(lo, hi)
            return None
        if lo == hi and self.leaf is not None:
            return self.close(hi, now)
        if lo == hi:
            works = [self.table.points[k][self.table.clamp(k, hi)].work for k in self.table.needs(hi, math.inf)]
            if not works or min(works) >= MAX_POINT_WORK:
                return now  # every period at its most work: the point stays open at its bound
            self.evaluate(hi, min(MAX_POINT_WORK, 2 * min(works)))
            self.push(lo, hi)
            return None
        self.split(lo, hi)
        return None

    def close(self, c: tuple, lb: float) -> float | None:
        """A single vector with a start cost: the model over periods with C fixed and cut below
        the target (infeasible: T(c) >= target); returns the bound it leaves open."""
        thr = self.target()
        counts = self.counts_at(c)
        status, value, bound, got, det = self.leaf(dict(zip(self.table.types, c)), counts, thr, LEAF_WORK)
        self.table.work_used += det
        if got is not None:
            self.offer(got)
        if status == cp_model.INFEASIBLE:
            self.floor = min(self.floor, thr)
            return None
        if status == cp_model.OPTIMAL:
            return None
        return max(lb, min(bound, thr))

    def split(self, lo: tuple, hi: tuple) -> None:
        """Halve the coordinate of the widest committed cost (H cp_h x width)."""
        pi = self.pi
        width = [(pi.horizon_s * int(pi.committed_price[h] or 0) * (b - a), b - a, -i)
                 for i, (h, a, b) in enumerate(zip(self.table.types, lo, hi))]
        i = -max(width)[2]
        mid = (lo[i] + hi[i]) // 2
        self.push(lo, hi[:i] + (mid,) + hi[i + 1:])
        self.push(lo[:i] + (mid + 1,) + lo[i + 1:], hi)

    def run(self, lo: tuple, hi: tuple, budget: float) -> float:
        """Best-first over boxes until every box is discarded or the work is spent; returns the
        proven lower bound over all of them."""
        self.push(lo, hi)
        open_bound = math.inf
        while self.heap:
            lb, _, lo, hi = heapq.heappop(self.heap)
            out_of_work = self.table.work_used >= budget or time.perf_counter() >= self.deadline
            if out_of_work and lb < self.target():
                open_bound = min(open_bound, lb)  # the least bound left: the heap is ordered
                break
            self.boxes += 1
            left = self.step(lb, lo, hi)
            if left is not None:
                open_bound = min(open_bound, left)
        best = math.inf if self.best is None else float(self.best.value)
        return min(best, self.floor, open_bound)


def search_boxes(pi: PeriodInstance, ranges: dict[int, range], opts: SolveOptions, first: dict[int, int],
                 high: list, cost_of, t0: float, leaf=None) -> BoxResult | None:
    """The cheapest committed vector over `ranges` by boxes; `first` (the hinted levels) solved
    first for an incumbent, `high` per period a proven bound of its cost at C = 0; `leaf` (with a
    start cost) solves the model over periods at one vector (`BoxSearch.close`)."""
    types = sorted(ranges)
    table = Table(pi, opts, cost_of, types, high)
    search = BoxSearch(pi, table, opts, t0 + opts.time_limit_s, leaf if pi.start_cost else None)
    if first:
        search.evaluate(tuple(min(first[h], ranges[h][-1]) for h in types), POINT_WORK)
    bound = search.run(tuple(ranges[h][0] for h in types), tuple(ranges[h][-1] for h in types),
                       BOX_WORK_SHARE * opts.time_limit_s)
    if search.best is None:
        return None
    return BoxResult(search.best, bound, search.boxes, table.solves, table.work_used)
