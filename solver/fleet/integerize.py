"""The one place where floats become integers for CP-SAT, each rounded in the safe direction.

| quantity                 | unit            | rounding | why                              |
|--------------------------|-----------------|----------|----------------------------------|
| capacity per instance    | milli-QPS       | floor    | never over-promise capacity      |
| demand                   | milli-QPS       | ceil     | never under-serve                |
| cost per instance        | 1e-4 USD/hour   | ceil     | a budget met in integers is met  |
| budget                   | 1e-4 USD/hour   | floor    |                                  |
| power per instance       | W               | ceil     |                                  |
| power cap                | W               | floor    |                                  |
| ratio bounds lo <= P/D   | lo*1000 / 1000  | ceil lo, floor hi | stay inside the user's range |

Values are snapped to 6 decimals after scaling before rounding, so float noise such as
1.1 * 100 == 110.00000000000001 does not round up a whole unit.
"""

from __future__ import annotations

import math

import numpy as np

from solver.errors import InternalError

QPS_SCALE = 1000
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


def capacity(qps) -> np.ndarray:
    return floor_int(qps, QPS_SCALE)


def demand(qps: float) -> int:
    return ceil_scalar(qps, QPS_SCALE)


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
