"""`build_model`: the fleet model with every constraint family posted, in a fixed order (the
order of variables and rows is part of what makes a solve reproducible)."""

from __future__ import annotations

from solver.fleet import limits, survive
from solver.fleet.demand import post_demand
from solver.fleet.instance import FleetInstance
from solver.fleet.model import FleetModel

FAMILIES = (
    post_demand,
    limits.post_positive_throughput,
    limits.post_supply,
    limits.post_budget,
    limits.post_power,
    limits.post_ratio,
    limits.post_distinct_configs,
    limits.post_sites,
    survive.post_lose_site,
    survive.post_lose_instances,
)


def build_model(inst: FleetInstance, enabled: set[str] | None = None, assumptions: bool = False) -> FleetModel:
    """The fleet model of `inst`; `enabled`: post only these groups (None: all);
    `assumptions`: every group behind an enforcement literal (fm.literals), for cores."""
    fm = FleetModel(inst, enabled, assumptions)
    for post in FAMILIES:
        post(fm)
    return fm
