"""A plan's cost over the horizon as the model over periods counts it, each termed type's committed
level the cheapest for the plan's usages (the box search's incumbents: solver/fleet/periods_box.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.fleet.periods import PeriodInstance


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
