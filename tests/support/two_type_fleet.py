"""A one-service fleet with two hardware types, shared by the multi-period tests
(tests/fleet/test_periods_commit.py, tests/fleet/test_periods_box.py)."""

from __future__ import annotations

import numpy as np

from solver.fleet.instance import FleetInstance, ServiceSpec
from solver.schema.roles import COLOCATED


def two_type_fleet(peak_qps: float) -> FleetInstance:
    """One colocated service sized for `peak_qps`; column 0: 1 device of type 'a' serving 10 QPS
    ($3.00/hour); column 1: 2 devices of type 'b' serving 25 QPS ($5.00/hour). A horizon whose
    types carry commitment terms prices them by the terms instead."""
    spec = ServiceSpec(name="chat", demand=int(peak_qps * 1000), colocated=True, disaggregated=False,
                       ratio_lo=None, ratio_hi=None, max_configs=None)
    ub = np.array([int(np.ceil(peak_qps / 10)), int(np.ceil(peak_qps / 25))])
    return FleetInstance(
        objective="min_cost", service=np.zeros(2, dtype=np.int64), role=np.full(2, COLOCATED),
        hw=np.array([0, 1]), devices=np.array([1, 2]), cap=np.array([10_000, 25_000]),
        cost=np.array([30_000, 50_000]), power=np.array([700, 1400]), ub=ub, demand_ub=ub.copy(),
        services=(spec,), hw_names=("a", "b"), supply=(None, None), budget=None, power_cap=None,
    )
