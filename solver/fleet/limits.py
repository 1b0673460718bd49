"""The fleet's limits as constraint families: a positive throughput (max_throughput), supply per
hardware type, budget, power cap, the prefill:decode device ratio, distinct configurations per
role, and per site its supply and power cap."""

from __future__ import annotations

import numpy as np

from solver.fleet import integerize as ints
from solver.fleet.model import FleetModel
from solver.schema.roles import COLOCATED, DECODE, PREFILL


def post_positive_throughput(fm: FleetModel) -> None:
    """max_throughput: serve at least 1/1000 of the mix (otherwise the empty fleet wins)."""
    if fm.v.scale is not None and fm.group("throughput", "serving at least 0.1% of the traffic mix"):
        fm.post("throughput", fm.v.scale >= 1)


def post_supply(fm: FleetModel) -> None:
    inst = fm.inst
    for h, name in enumerate(inst.hw_names):
        supply = inst.supply[h]
        rows = np.flatnonzero(inst.hw == h)
        if supply is None or rows.size == 0:
            continue
        key = f"supply:{name}"
        if fm.group(key, f"supply of {name} ({supply} devices)"):
            fm.post(key, fm.row_sum(rows, inst.devices, key) <= supply)


def _fleet_cap(fm: FleetModel, key: str, text: str, per_instance: np.ndarray, cap: int | None) -> None:
    """sum over every column of per_instance * n <= cap (nothing when there is no cap)."""
    if cap is None or not len(fm.inst):
        return
    if fm.group(key, text):
        fm.post(key, fm.row_sum(np.arange(len(fm.inst)), per_instance, key) <= cap)


def post_budget(fm: FleetModel) -> None:
    budget = fm.inst.budget
    text = "" if budget is None else f"budget of ${budget / ints.COST_SCALE:,.2f}/hour"
    _fleet_cap(fm, "budget", text, fm.inst.cost, budget)


def post_power(fm: FleetModel) -> None:
    cap = fm.inst.power_cap
    _fleet_cap(fm, "power", "" if cap is None else f"power cap of {cap / 1000:g} kW", fm.inst.power, cap)


def post_ratio(fm: FleetModel) -> None:
    """Prefill devices / decode devices within [lo, hi], per disaggregated service."""
    inst = fm.inst
    den = ints.RATIO_DEN
    for s, spec in enumerate(inst.services):
        pre, dec = inst.rows(s, PREFILL), inst.rows(s, DECODE)
        if pre.size == 0 or dec.size == 0:
            continue
        p_dev = fm.row_sum(pre, inst.devices, "ratio")
        d_dev = fm.row_sum(dec, inst.devices, "ratio")
        if spec.ratio_lo is not None:
            key = f"ratio_min:{spec.name}"
            if fm.group(key, f"prefill:decode device ratio >= {spec.ratio_lo / den:g} for '{spec.name}'"):
                fm.post(key, p_dev * den >= spec.ratio_lo * d_dev)
        if spec.ratio_hi is not None:
            key = f"ratio_max:{spec.name}"
            if fm.group(key, f"prefill:decode device ratio <= {spec.ratio_hi / den:g} for '{spec.name}'"):
                fm.post(key, p_dev * den <= spec.ratio_hi * d_dev)


def post_distinct_configs(fm: FleetModel) -> None:
    inst = fm.inst
    for s, spec in enumerate(inst.services):
        if spec.max_configs is None:
            continue
        for role in (COLOCATED, PREFILL, DECODE):
            lits = fm.config_used(inst.rows(s, role))
            if len(lits) <= spec.max_configs:
                continue
            key = f"max_configs:{spec.name}"
            if fm.group(key, f"at most {spec.max_configs} distinct configurations per role for '{spec.name}'"):
                fm.post(key, sum(lits) <= spec.max_configs)


def post_sites(fm: FleetModel) -> None:
    """Per site: the supply of each hardware type there and the site's power cap."""
    inst = fm.inst
    for k, site in enumerate(inst.site_names):
        at = inst.site == k
        for h, name in enumerate(inst.hw_names):
            supply = inst.site_supply[k][h]
            rows = np.flatnonzero(at & (inst.hw == h))
            if supply is None or rows.size == 0:
                continue
            key = f"supply:{name}@{site}"
            if fm.group(key, f"supply of {name} at site '{site}' ({supply} devices)"):
                fm.post(key, fm.row_sum(rows, inst.devices, key) <= supply)
        cap = inst.site_power_cap[k]
        rows = np.flatnonzero(at)
        if cap is not None and rows.size:
            key = f"power@{site}"
            if fm.group(key, f"power cap of {cap / 1000:g} kW at site '{site}'"):
                fm.post(key, fm.row_sum(rows, inst.power, key) <= cap)
