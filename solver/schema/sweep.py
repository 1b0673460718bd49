"""The `sweep:` field of a problem file (extension to SPEC): values to plan the problem at.

    sweep:
      hardware[h100-sxm].price_per_hour: [2.0, 2.5, 3.0]         # a list of values
      services[chat].workload.qps: {from: 100, to: 400, count: 4}  # 100, 200, 300, 400

Each key is the path of one field of the problem (the paths `solver/problem/sweep.py` accepts:
`budget_per_hour`, `constraints.power_kw`, `constraints.safety_margin`,
`hardware[TYPE].price_per_hour|supply|power_w`, `hardware[TYPE].committed.price_per_hour`,
`hardware[TYPE].on_demand.price_per_hour`, `services[NAME].workload.qps`,
`services[NAME].slo.ttft_ms|tpot_ms` with an optional `.p50` / `.p99`); each value a list of
numbers or an evenly spaced range. The structure is checked here (strict: unknown keys, NaN,
booleans, strings, repeated values are errors); the paths and each planned value are checked
against the problem in `solver/problem/sweep.py`, with the line of the key in every message.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Union

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    model_validator,
)

from solver.schema.base import Strict

MAX_SWEEP_VALUES = 1000  # values of one axis
MAX_SWEEP_AXES = 8
MAX_SWEEP_VARIANTS = 10_000  # planned problems from one file (the product of the axes)
VALUE_DECIMALS = 6  # range values are rounded to this many decimals (no 0.30000000000000004)


def format_value(v: float) -> str:
    """A value as it appears in a variant name: whole numbers without a decimal point."""
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))


def _number(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"expected a number, got {type(v).__name__} {v!r}")
    if not math.isfinite(v):
        raise ValueError(f"expected a finite number, got {v}")
    return v


Number = Annotated[float, BeforeValidator(_number)]


class SweepRange(Strict):
    """`count` evenly spaced values from `from` to `to`, both included."""

    start: Number = Field(alias="from")
    to: Number
    count: int = Field(ge=2, le=MAX_SWEEP_VALUES, description="values, both ends included")

    @model_validator(mode="after")
    def _check(self) -> SweepRange:
        if self.start == self.to:
            raise ValueError(f"from and to are equal ({self.start:g}); give a list for one value")
        return self

    def values(self) -> tuple[float, ...]:
        n = self.count - 1
        return tuple(round(self.start + (self.to - self.start) * k / n, VALUE_DECIMALS)
                     for k in range(self.count))


def _unique(v: list[float]) -> list[float]:
    for i, x in enumerate(v):
        if x in v[:i]:
            raise ValueError(f"value {x:g} repeats (each value is planned once)")
    return v


SweepList = Annotated[list[Number], Field(min_length=1, max_length=MAX_SWEEP_VALUES),
                      AfterValidator(_unique)]


def _axis_tag(v: Any) -> str:
    return "List" if isinstance(v, list) else "Range"


def _list_or_range(v: Any) -> Any:
    if not isinstance(v, (list, dict)):
        raise ValueError("expected a list of numbers or a range {from: X, to: Y, count: N}, "
                         f"got {type(v).__name__} {v!r}")
    return v


SweepAxis = Annotated[
    Union[Annotated[SweepList, Tag("List")], Annotated[SweepRange, Tag("Range")]],
    Discriminator(_axis_tag),
    BeforeValidator(_list_or_range),
]

Sweep = Annotated[
    dict[Annotated[str, Field(min_length=1, max_length=300)], SweepAxis],
    Field(min_length=1, max_length=MAX_SWEEP_AXES),
]


def axis_values(axis: list[float] | SweepRange) -> tuple[float, ...]:
    """The values an axis plans at, in the order given."""
    if isinstance(axis, SweepRange):
        return axis.values()
    return tuple(float(x) for x in axis)
