"""Dominance bounds on instance counts (issue 17 point 5): a column whose m instances can be
replaced by k instances of another column of the same service and role, with at least their
capacity and at most their cost, needs at most m - 1 instances in some cheapest plan.

A replacement of m instances of column c by k instances of a target t is valid when
  - k cap_t >= m cap_c (the role's capacity does not fall, so every share stays covered);
  - the cost does not rise at any prices the period may see: k cost_t <= m cost_c at the
    columns' listed costs, and either t is of c's hardware type with k dev_t <= m dev_c (a type's
    cost never rises with fewer of its devices: committed devices are free up to the level,
    on-demand ones cost their price) or both are of types priced per instance (`termed` False);
  - the limits hold: k power_t <= m power_c; a type with a supply limit only as the same type;
    with a prefill:decode ratio, prefill devices do not rise under an upper ratio bound (so no
    prefill column with a lower ratio bound), and decode columns are left alone (their devices
    may be needed for the ratio, not their capacity);
  - nothing else reads the columns: a prefill target reaches every decode type c reaches (the
    disaggregated flow's cuts do not fall), one site, no failure to survive, no configuration
    limit on the service.

Why a cheapest plan within every bound exists: from a cheapest plan, apply any replacement
whose column is over its bound (targets unbounded). Each lowers (cost, devices of types with
terms, -capacity, instances, column index) lexicographically (`_strict`) within the finitely
many plans of no more cost and termed devices, so this ends, at a plan within every dominance
bound and of no more cost. A target pushed past its demand bound then serves its role alone and
is trimmed back to it (colocated and prefill only: fewer prefill devices keep an upper ratio
bound; the supply, budget and power parts of `ub` hold by the rows themselves), which breaks no
dominance bound. So the bounded instance has the same least cost, and its plans are plans of the
instance. Used only on
the periods planned alone (bounds and hints; solver/fleet/periods_*.py), where CP-SAT proves
the period faster (benchmarks/multiperiod.md).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from solver.fleet.instance import FleetInstance
from solver.schema.roles import COLOCATED, PREFILL

MAX_M = 64  # replacements of up to this many instances are tried (the three-service benchmark's
# limits are all 0 or 1, found at m <= 2)


def eligible(inst: FleetInstance) -> bool:
    """Whether the bounds apply at all (see the module's last condition)."""
    return inst.objective == "min_cost" and inst.n_sites == 1 and inst.lose_instances == 0 and not inst.lose_site


def _roles(inst: FleetInstance, s: int) -> tuple[int, ...]:
    spec = inst.services[s]
    if spec.max_configs is not None:
        return ()
    return (COLOCATED,) if spec.ratio_lo is not None else (COLOCATED, PREFILL)


def _can_replace(inst: FleetInstance, termed, c: int, t: int) -> bool:
    same = inst.hw[c] == inst.hw[t]
    plain = not termed[int(inst.hw[c])] and not termed[int(inst.hw[t])]
    reach = inst.role[c] != PREFILL or bool(np.all(inst.reach[t] >= inst.reach[c]))
    return bool(reach and (same or (plain and inst.supply[int(inst.hw[t])] is None)))


def least_m(inst: FleetInstance, termed, c: int, t: int) -> int | None:
    """The fewest instances m of c that k instances of t replace, strictly better (see
    `_strict`); None: none up to MAX_M."""
    if not _can_replace(inst, termed, c, t):
        return None
    same = inst.hw[c] == inst.hw[t]
    cap_c, cap_t, dev_c, dev_t = (int(x) for x in (inst.cap[c], inst.cap[t], inst.devices[c], inst.devices[t]))
    for m in range(1, MAX_M + 1):
        k = -(-m * cap_c // max(cap_t, 1))  # the fewest t covering m c's
        if k * int(inst.cost[t]) > m * int(inst.cost[c]) or k * int(inst.power[t]) > m * int(inst.power[c]):
            continue
        if (same or inst.role[c] == PREFILL) and k * dev_t > m * dev_c:
            continue
        if _strict(inst, termed, c, t, m, k):
            return m
    return None


def _strict(inst: FleetInstance, termed, c: int, t: int, m: int, k: int) -> bool:
    """The replacement lowers (cost, devices of types with terms, -capacity, instances, column
    index) lexicographically, so that replacements applied one after another end."""
    cost = k * int(inst.cost[t]) < m * int(inst.cost[c])
    dev = bool(termed[int(inst.hw[c])]) and k * int(inst.devices[t]) < m * int(inst.devices[c])
    cap = k * int(inst.cap[t]) > m * int(inst.cap[c])
    return cost or dev or cap or k < m or (k == m and t < c)


def column_limits(inst: FleetInstance, termed) -> np.ndarray:
    """Per column the most instances some cheapest plan needs by replacement (m - 1), whatever
    the demand (a replacement reads the columns only): -1 where none applies."""
    out = np.full(len(inst), -1, dtype=np.int64)
    if not eligible(inst):
        return out
    for s in range(len(inst.services)):
        for r in _roles(inst, s):
            cols = [int(c) for c in inst.rows(s, r)]
            for c in cols:
                ms = [m for t in cols if t != c for m in [least_m(inst, termed, c, t)] if m is not None]
                if ms:
                    out[c] = min(ms) - 1
    return out


def dominance_bounds(inst: FleetInstance, termed, limits: np.ndarray | None = None) -> np.ndarray:
    """Per column an upper bound on its instances in some cheapest plan (the instance's `ub`
    where no replacement applies); `termed` per hardware type: priced by commitment terms;
    `limits`: `column_limits` of the same columns (the periods share them), computed if None."""
    lim = column_limits(inst, termed) if limits is None else limits
    return np.where(lim >= 0, np.minimum(inst.ub, lim), inst.ub)


def bounded(inst: FleetInstance, termed, limits: np.ndarray | None = None) -> FleetInstance:
    """The instance with its dominance bounds as instance bounds."""
    ub = dominance_bounds(inst, termed, limits)
    return inst if np.array_equal(ub, inst.ub) else dataclasses.replace(inst, ub=ub)

