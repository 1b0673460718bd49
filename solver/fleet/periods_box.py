"""The committed vector searched by boxes (issue 17) when it has too many values to list
(more than periods_commit.MAX_VECTORS): a branch-and-bound over boxes [lo, hi] of committed
levels, every prune by a proven bound.

For a fixed committed vector C the horizon costs T(C) = H cp.C + sum_p s_p g_p(C) + starts, with
g_p(C) period p's cost per second planned alone with its termed devices up to C free. Bounds:

- B_p(box) = min over C in the box of cp.C + g_p(C): period p planned alone with its committed
  level a variable in the box, paid per second used or not. Every period choosing its own level
  relaxes the one shared level, so LB(box) = sum_p s_p B_p(box) <= T(C) for every C in the box;
  B_p does not fall as a box shrinks, so a box has every bound of the boxes containing it (the
  whole range: the period floors at the lower prices);
- g_p never rises with C and g_p(C) >= B_p - cp.C, so T(C) >= H cp.lo + sum_p s_p max(0, B_p -
  cp.hi) (`corner`), which also cuts a box's hi where the committed cost alone reaches the target.

With the committed price split across the periods (solver/fleet/periods_lagrange.py: per-period
prices pi_k, sum_k w_k pi_k <= H cp) both bounds hold with pi_k in place of cp in each period
(`Table.reprice`), the price the rounding left out counted at lo; the whole range is then
bounded by the split's L.

A box's period solves (CP-SAT's proven bound under a deterministic limit) also give plans: all
periods' plans together are a plan of the horizon (an incumbent). The search pops the box of
least bound, shrinks it, solves its periods when not yet solved, re-solves a single vector's
unproven periods with more work (with a start cost: the model over periods at that vector), and
otherwise halves the coordinate of widest committed cost. The result is proven only when every
box is pruned by its bound.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet.cpsat import check_status, make_solver
from solver.fleet.options import SolveOptions
from solver.fleet.periods import PeriodInstance, PeriodModel, device_bound
from solver.fleet.periods_commit import PeriodBounds, period_groups
from solver.fleet.periods_cost import Incumbent, plan_cost
from solver.fleet.periods_lagrange import Lagrange, split_prices
from solver.fleet.pool import Pool

# CP-SAT deterministic time of the box search per second of the time limit: the rest goes to the
# period hints (a quarter), the final solve at the best vector and its tie-breaks
BOX_WORK_SHARE = 0.2
POINT_WORK = 0.25  # deterministic time of a period's first solve at a vector (re-solves double it)
MAX_POINT_WORK = 8.0  # the most a period's re-solve at one vector gets
LEAF_WORK = 2.0  # deterministic time of the model over periods at one vector (with a start cost)


@dataclass
class Point:
    lb: float  # a proven lower bound on B_k over the box (objective units per second); inf: no plan
    counts: np.ndarray | None  # a plan of the period (None: none found)
    work: float  # the deterministic time it was given
    proven: bool


class Table:
    """B_k(box) per distinct period k (its demand and on-demand supply): the period planned
    alone, its committed level a variable within the box (clamped to the most devices it can
    use) at the committed price per second, the rest on demand. Boxes solved are kept; a box is
    bounded by every solved box that contains it (B_k does not fall as the box shrinks)."""

    def __init__(self, pi: PeriodInstance, opts: SolveOptions, cost_of, types: list[int], floors: list,
                 high: list, pool: Pool | None = None):
        self.pi, self.opts, self.cost_of, self.types = pi, opts, cost_of, types
        pb = PeriodBounds(pi, opts, cost_of)
        self.groups = period_groups(pi)  # periods of equal demand and supply, first-seen order
        self.key_of = {p: k for k, g in enumerate(self.groups) for p in g}
        self.weight = [sum(pi.seconds[p] for p in g) for g in self.groups]
        self.alone = [dataclasses.replace(pb.alone(g[0]), committed_price=pi.committed_price) for g in self.groups]
        self.caps = [np.array([device_bound(a, h) for h in types]) for a in self.alone]
        self.cp = np.array([int(pi.committed_price[h] or 0) for h in types])
        self.price = [self.cp.copy() for _ in self.groups]  # per group: its committed price per second
        self.pool = pool
        self.boxes: list[dict[tuple, Point]] = [{} for _ in self.groups]
        self.work_used = 0.0
        self.solves = 0
        self.split_bound = 0.0  # L of the committed price split (solver/fleet/periods_lagrange.py)
        self.high = high
        self.seed([None if not floors else floors[g[0]] for g in self.groups])

    def seed(self, full: list) -> None:
        """Bounds known before any box: over every level `full[k]` (the period at the lower
        prices, or at its split's linear prices), at no committed device the period at the
        higher prices (the hints' high floors: no price of committed devices enters)."""
        zero = tuple(0 for _ in self.types)
        for k, g in enumerate(self.groups):
            if full[k] is not None:
                self.boxes[k][(zero, tuple(int(x) for x in self.caps[k]))] = Point(float(full[k]), None, 0.0, False)
            if self.high and self.high[g[0]] is not None:
                self.boxes[k][(zero, zero)] = Point(float(self.high[g[0]]), None, 0.0, False)

    def reprice(self, prices: np.ndarray, full: list) -> None:
        """Committed prices per group (a split of the horizon's, solver/fleet/periods_lagrange.py)
        with `full[k]` the bound over every level at them: the boxes solved at single vectors
        keep their plans and bounds (moved by the price change at that vector), the rest go."""
        old = self.price
        self.price = [np.array(x, dtype=np.int64) for x in prices]
        for k in range(len(self.groups)):
            price = list(self.alone[k].committed_price)
            for i, h in enumerate(self.types):
                price[h] = None if self.pi.committed_price[h] is None else int(self.price[k][i])
            self.alone[k] = dataclasses.replace(self.alone[k], committed_price=tuple(price))
            kept = {}
            for (a, b), pt in self.boxes[k].items():
                if a == b and pt.counts is not None:
                    kept[(a, b)] = dataclasses.replace(pt, lb=pt.lb + float(np.dot(self.price[k] - old[k], a)))
            self.boxes[k] = kept
        self.seed(full)

    def clamp(self, k: int, lo: tuple, hi: tuple) -> tuple[tuple, tuple, float]:
        """The box within the levels period k can use, and the committed price per second of
        the levels beyond them (paid, never used)."""
        cap = self.caps[k]
        beyond = float(np.sum(self.price[k] * np.maximum(np.array(lo) - cap, 0)))
        return (tuple(int(x) for x in np.minimum(lo, cap)), tuple(int(x) for x in np.minimum(hi, cap)), beyond)

    def bound(self, k: int, lo: tuple, hi: tuple) -> float:
        """A proven lower bound on B_k over [lo, hi]: the best solved box containing it."""
        a, b, beyond = self.clamp(k, lo, hi)
        best = 0.0
        for (x, y), pt in self.boxes[k].items():
            if all(i <= j for i, j in zip(x, a)) and all(i >= j for i, j in zip(y, b)):
                best = max(best, pt.lb)
        return best + beyond

    def lower(self, lo: tuple, hi: tuple) -> float:
        """LB of the box: sum_k w_k B_k (the periods may each pick their own level in it), plus
        the committed price the split left out (rounding down) at lo."""
        left = self.pi.horizon_s * self.cp - sum(w * p for w, p in zip(self.weight, self.price))
        return float(sum(w * self.bound(k, lo, hi) for k, w in enumerate(self.weight)) + np.dot(left, lo))

    def lb(self, lo: tuple, hi: tuple) -> float:
        return max(self.lower(lo, hi), self.corner(lo, hi))

    def corner(self, lo: tuple, hi: tuple) -> float:
        """The committed cost at lo plus each period's g at hi, g_k(C) >= B_k - cp.C >= B_k - cp.hi."""
        pi = self.pi
        fixed = sum(pi.horizon_s * int(pi.committed_price[h] or 0) * x for h, x in zip(self.types, lo))
        g = 0.0
        for k, w in enumerate(self.weight):
            b = self.clamp(k, lo, hi)[1]
            g += w * max(0.0, self.bound(k, lo, hi) - self.clamp(k, lo, hi)[2] - float(np.dot(self.price[k], b)))
        return fixed + g

    def needs(self, lo: tuple, hi: tuple, work: float) -> list[int]:
        """The periods whose box is not solved, or unproven and solved with less work."""
        out = []
        for k in range(len(self.groups)):
            a, b, _ = self.clamp(k, lo, hi)
            pt = self.boxes[k].get((a, b))
            if pt is None or (not pt.proven and pt.work < work):
                out.append(k)
        return out

    def solve(self, lo: tuple, hi: tuple, work: float, deadline: float) -> None:
        """Solve every period that `needs` it on the box, side by side in the pool (deterministic:
        each solve is one sequential CP-SAT worker under a deterministic limit)."""
        todo = self.needs(lo, hi, work)
        boxes = [self.clamp(k, lo, hi)[:2] for k in todo]
        tasks = [(self.alone[k], self.types, box, self._hint(k, box), self.cost_of, self.opts,
                  deadline - time.perf_counter(), work) for k, box in zip(todo, boxes)]
        got = self.pool.map(solve_box, tasks) if self.pool is not None else [solve_box(*t) for t in tasks]
        self.solves += len(todo)
        for k, box, (pt, det) in zip(todo, boxes, got):
            self.work_used += det
            self.boxes[k][box] = pt

    def counts(self, k: int, lo: tuple, hi: tuple) -> np.ndarray | None:
        pt = self.boxes[k].get(self.clamp(k, lo, hi)[:2])
        return None if pt is None else pt.counts

    def _hint(self, k: int, box: tuple) -> np.ndarray | None:
        mid = np.add(box[0], box[1]) / 2
        near = [(float(np.abs(np.add(x, y) / 2 - mid).sum()), x, y) for (x, y), pt in self.boxes[k].items()
                if pt.counts is not None]
        return self.boxes[k][min(near)[1:]].counts if near else None



def solve_box(alone: PeriodInstance, types: list[int], box: tuple, hint: np.ndarray | None, cost_of,
              opts: SolveOptions, time_left: float, work: float) -> tuple[Point, float]:
    """B_k on a box: the period `alone` with its committed levels within the box (a module-level
    function, so that a worker process can run it: solver/fleet/pool.py)."""
    pm = PeriodModel(alone)
    for h, a, b in zip(types, *box):
        pm.m.add(pm.commit.committed[h] >= a)
        pm.m.add(pm.commit.committed[h] <= b)
    if hint is not None:
        for v, x in zip(pm.fms[0].v.n, hint):
            pm.m.add_hint(v, int(x))
    pm.m.minimize(cost_of(pm))
    solver = make_solver(opts, time_left, work)
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

    def evaluate(self, lo: tuple, hi: tuple, work: float) -> None:
        self.table.solve(lo, hi, work, self.deadline)
        counts = self.counts_at(lo, hi)
        if all(x is not None for x in counts):
            self.offer(counts)

    def counts_at(self, lo: tuple, hi: tuple) -> list:
        """Per period its plan on the box (None where none was found)."""
        return [self.table.counts(self.table.key_of[p], lo, hi) for p in range(self.pi.n_periods)]

    def offer(self, counts: list) -> Incumbent | None:
        """The plan as an incumbent when it beats the best; returns its cost and levels."""
        got = plan_cost(self.pi, self.table.types, counts)
        if got is not None and (self.best is None or got.value < self.best.value):
            self.best = got
        return got

    def push(self, lo: tuple, hi: tuple) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (self.table.lb(lo, hi), self.seq, lo, hi))

    def shrink(self, lo: tuple, hi: tuple) -> tuple | None:
        """None when the box's bound reaches the target; else hi cut where the committed cost
        reaches it: a level h above lo_h + (target - 1 - corner) / (H cp_h) has T >= target
        (costs are integers)."""
        pi, thr = self.pi, self.target()
        for _ in range(3):
            if self.table.lb(lo, hi) >= thr:
                return None
            if math.isinf(thr):
                return hi
            lb = self.table.corner(lo, hi)
            new = []
            for h, a, b in zip(self.table.types, lo, hi):
                unit = pi.horizon_s * int(pi.committed_price[h] or 0)
                new.append(b if unit == 0 else min(b, a + int((thr - 1 - lb) // unit)))
            if tuple(new) == hi:
                return hi
            hi = tuple(new)
            self.floor = min(self.floor, thr)  # the levels cut off cost at least the target
        return hi

    def step(self, lb: float, lo: tuple, hi: tuple) -> float | None:
        """One popped box: discarded, re-pushed (with a solve or a split), or closed; returns a
        bound it leaves open (a point out of work), else None."""
        box = self.shrink(lo, hi)
        if box is None:
            self.floor = min(self.floor, self.target())
            return None
        shrunk, hi = box != hi, box
        now = self.table.lb(lo, hi)
        if now > lb or shrunk:
            self.push(lo, hi)
            return None
        if self.table.needs(lo, hi, POINT_WORK):
            self.evaluate(lo, hi, POINT_WORK)
            self.push(lo, hi)
            return None
        if lo == hi and self.leaf is not None:
            return self.close(hi, now)
        if lo == hi:
            works = [self.table.boxes[k][self.table.clamp(k, lo, hi)[:2]].work
                     for k in self.table.needs(lo, hi, math.inf)]
            if not works or min(works) >= MAX_POINT_WORK:
                return now  # every period at its most work: the point stays open at its bound
            self.evaluate(lo, hi, min(MAX_POINT_WORK, 2 * min(works)))
            self.push(lo, hi)
            return None
        self.split(lo, hi)
        return None

    def close(self, c: tuple, lb: float) -> float | None:
        """A single vector with a start cost: the model over periods with C fixed and cut below
        the target (infeasible: T(c) >= target); returns the bound it leaves open."""
        thr = self.target()
        counts = self.counts_at(c, c)
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
                 floors: tuple[list, list], cost_of, t0: float, leaf=None, pool: Pool | None = None,
                 lagrange: Lagrange | None = None, plans: list | None = None) -> BoxResult | None:
    """The cheapest committed vector over `ranges` by boxes; `first` (the hinted levels) solved
    first for an incumbent; `floors` per period proven bounds of its cost at the lower prices
    (any level) and at the higher ones (no committed device); `leaf` (with a start cost) solves
    the model over periods at one vector (`BoxSearch.close`); `lagrange` (over the same types and
    period groups): the committed price split across the periods before the boxes
    (solver/fleet/periods_lagrange.py) towards the incumbent of `plans` (per period), its plans
    offered as incumbents."""
    types = sorted(ranges)
    table = Table(pi, opts, cost_of, types, *floors, pool=pool)
    search = BoxSearch(pi, table, opts, t0 + opts.time_limit_s, leaf if pi.start_cost else None)
    split, top = None, tuple(ranges[h][-1] for h in types)
    if lagrange is not None and plans is not None and all(c is not None for c in plans):
        search.offer(plans)  # the periods' own plans together: the split's first target
        steps = lagrange.steps()
        split, _ = split_prices(search, lagrange, top, steps // 2)
        # then the periods at the levels of the best plan so far (the split's plans): on the
        # day 69 H100 where the hints had 77, a cheaper plan (benchmarks/multiperiod.md)
        first = search.best.levels
    if first:
        c = tuple(min(first[h], ranges[h][-1]) for h in types)
        search.evaluate(c, c, POINT_WORK)
    if split is not None:  # the rest of the steps towards that (closer) incumbent
        split_prices(search, lagrange, top, steps - steps // 2, split)
    bound = search.run(tuple(ranges[h][0] for h in types), tuple(ranges[h][-1] for h in types),
                       BOX_WORK_SHARE * opts.time_limit_s)
    if search.best is None:
        return None
    bound = max(bound, min(table.split_bound, float(search.best.value)))
    return BoxResult(search.best, bound, search.boxes, table.solves, table.work_used)
