"""The one place where floats become integers for CP-SAT, each rounded in the safe direction.

| quantity                 | unit            | rounding | why                              |
|--------------------------|-----------------|----------|----------------------------------|
| capacity per instance    | 1/S QPS         | floor    | never over-promise capacity      |
| demand                   | 1/S QPS         | ceil     | never under-serve                |
| cost per instance        | 1e-4 USD/hour   | ceil     | a budget met in integers is met  |
| budget                   | 1e-4 USD/hour   | floor    |                                  |
| power per instance       | W               | ceil     |                                  |
| power cap                | W               | floor    |                                  |
| ratio bounds lo <= P/D   | lo*1000 / 1000  | ceil lo, floor hi | stay inside the user's range |

Values are snapped to 6 decimals after scaling before rounding, so float noise such as
1.1 * 100 == 110.00000000000001 does not round up a whole unit.

QPS are counted per service in units of 1/S QPS, S = `qps_scale(...)`: the least power of ten
from QPS_SCALE (milli-QPS) up at which the service's demand and each per-instance capacity of at
least SCALE_SHARE (1%) of the demand are at least 1 / QPS_REL_ERROR units. Flooring such a
capacity c then loses at most one unit, under QPS_REL_ERROR (0.1%) of c, and ceiling the demand
adds under 0.1% of it: a plan of such rows whose float capacity covers the demand with 0.2% to
spare is feasible in integers, so the integer optimum is never dearer than the float optimum of
the same candidate table at 1.002 x the demand (one fixed milli-QPS unit lost 20% of a
0.005 QPS instance). Rows below 1% of the demand (more than 100 instances to carry it alone;
batch-1 rows of long prompts) do not raise the scale: counting them exactly made the fleet
model's coefficients 100x larger and three-services' proof three times slower, for rows an
optimum uses a few of at most; their floor still loses at most one unit per instance. Every
constraint that sums capacities belongs to one service, so services may use different units.
The bound holds for capacities and demands of at least 1000 / MAX_QPS_SCALE = 0.001 QPS (the
candidate table's MIN_CAPACITY_QPS: smaller rows are pruned).
"""

from __future__ import annotations

import math

import numpy as np

from solver.errors import InternalError

QPS_SCALE = 1000  # the least QPS scale (milli-QPS); a service's own is qps_scale()
QPS_REL_ERROR = 1e-3  # the most a service's integer capacities and demand are off, relative
MAX_QPS_SCALE = 10**6  # 0.001 QPS (MIN_CAPACITY_QPS) is then 1,000 units
SCALE_SHARE = 0.01  # rows carrying less of the demand per instance do not set the scale
COST_SCALE = 10_000
RATIO_DEN = 1000
SCALE_UNIT = 1000  # max_throughput scale factor in 1/1000 of the demand mix
INT_LIMIT = 2**62


def _snap(x):
    return np.round(np.asarray(x, dtype=float), 6)


def floor_int(x, scale: float) -> np.ndarray:
    return np.floor(_snap(np.asarray(x, dtype=float) * scale)).astype(np.int64)


def ceil_int(x, scale: float) -> np.ndarray:
    return np.ceil(_snap(np.asarray(x, dtype=float) * scale)).astype(np.int64)


def ceil_scalar(x: float, scale: float) -> int:
    return int(math.ceil(round(x * scale, 6)))


def floor_scalar(x: float, scale: float) -> int:
    return int(math.floor(round(x * scale, 6)))


def qps_scale(capacities, demand_qps: float) -> int:
    """Units per QPS of one service: the least power of ten >= QPS_SCALE (at most MAX_QPS_SCALE)
    at which its demand and every capacity of at least SCALE_SHARE of the demand are >=
    1 / QPS_REL_ERROR units (all capacities when none is that large)."""
    caps = [float(v) for v in np.asarray(capacities, dtype=float).ravel() if v > 0]
    values = [c for c in caps if c >= SCALE_SHARE * demand_qps] or caps
    values += [float(demand_qps)] if demand_qps > 0 else []
    need = 1.0 / QPS_REL_ERROR / min(values) if values else 0.0
    scale = QPS_SCALE
    while scale < need and scale < MAX_QPS_SCALE:
        scale *= 10
    return scale


def capacity(qps, scale=QPS_SCALE) -> np.ndarray:
    """Capacities in 1/scale QPS (scale: one number, or one per row), floored."""
    return floor_int(qps, np.asarray(scale, dtype=float))


def demand(qps: float, scale: int = QPS_SCALE) -> int:
    return ceil_scalar(qps, scale)


def cost(usd_per_hour) -> np.ndarray:
    return ceil_int(usd_per_hour, COST_SCALE)


def budget(usd_per_hour: float) -> int:
    return floor_scalar(usd_per_hour, COST_SCALE)


def power(watts) -> np.ndarray:
    return ceil_int(watts, 1.0)


def power_cap(kw: float) -> int:
    return floor_scalar(kw, 1000.0)


def ratio_lo(x: float) -> int:
    """Numerator over RATIO_DEN, at or above x (the integer model's bound is never looser)."""
    return ceil_scalar(x, RATIO_DEN)


def ratio_hi(x: float) -> int:
    return floor_scalar(x, RATIO_DEN)


def check_row(coeffs, bounds, what: str) -> None:
    """Refuse a linear row whose worst-case activity could overflow CP-SAT's int64."""
    activity = sum(abs(int(a)) * int(b) for a, b in zip(coeffs, bounds))
    if activity >= INT_LIMIT:
        raise InternalError(f"constraint {what} could overflow 64-bit integers ({activity:.3g})")
