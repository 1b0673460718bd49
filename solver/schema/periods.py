"""Demand over time (issue 17): a service's demand profile, the periods the horizon is cut into,
and the commitment terms of a hardware entry (docs/problem-file.md "Demand over time").

- `services[].demand_profile`: a file (`time_s,requests_per_s`, or a shipped profile name) or
  inline `points`, optionally multiplied by `scale`;
- `periods:`: `length_h` (equal periods from the profile's first point) or `named` periods;
  a period's demand is the profile's highest rate inside it (the SLO holds at every moment);
  `start_cost_usd_per_device`: paid per device of every instance started between periods;
- `hardware[].committed` / `hardware[].on_demand`: devices paid every period at one price, and
  devices paid per period they are used at another, each with its own supply.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from solver.schema.base import FieldError, Strict

MAX_POINTS = 1_000_000  # profile points (a year at 30-s resolution is 1,051,200)
MAX_PERIODS = 10_000  # periods of a horizon (a year of hours is 8,760)
MAX_HORIZON_H = 87_600.0  # ten years
MAX_RATE = 1e7  # requests/s, as schema/problem.py MAX_QPS
MAX_PRICE = 10_000.0  # USD/device-hour, as schema/problem.py MAX_PRICE
MAX_SUPPLY = 10_000_000  # devices, as schema/problem.py MAX_SUPPLY
MAX_START_USD = 1e6  # USD per device started: far above any re-provisioning cost


class ProfilePoint(Strict):
    time_s: float = Field(ge=0, le=MAX_HORIZON_H * 3600)
    requests_per_s: float = Field(ge=0, le=MAX_RATE)


class DemandProfile(Strict):
    """A service's request rate over time: a file or inline points (sorted by time)."""

    file: str | None = Field(None, min_length=1, max_length=4096,
                             description="CSV with columns time_s,requests_per_s (or a shipped name)")
    points: list[ProfilePoint] | None = Field(None, min_length=1, max_length=MAX_POINTS)
    scale: float = Field(1.0, gt=0, le=1e6, description="multiplies every requests_per_s")

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler):
        """JSON Schema that also accepts a bare file name (validation mode only)."""
        schema = handler(core_schema)
        if handler.mode == "validation":
            return {"anyOf": [{"type": "string", "minLength": 1, "maxLength": 4096}, schema]}
        return schema

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, v: Any) -> Any:
        return {"file": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _check(self) -> DemandProfile:
        if (self.file is None) == (self.points is None):
            raise ValueError("give a file or points, not both")
        if self.points is not None:
            times = [p.time_s for p in self.points]
            if any(b <= a for a, b in zip(times, times[1:])):
                raise FieldError("points must be in increasing time_s", ("points",))
        return self


class NamedPeriod(Strict):
    name: str = Field(min_length=1, max_length=200)
    start_h: float = Field(ge=0, le=MAX_HORIZON_H)
    end_h: float = Field(gt=0, le=MAX_HORIZON_H)

    @model_validator(mode="after")
    def _check(self) -> NamedPeriod:
        if self.end_h <= self.start_h:
            raise FieldError(f"end_h ({self.end_h:g}) must be after start_h ({self.start_h:g})", ("end_h",))
        return self


class Periods(Strict):
    """How the horizon is cut: equal periods of `length_h`, or named periods (in order, not
    overlapping; times from the profile's first point)."""

    length_h: float | None = Field(None, gt=0, le=MAX_HORIZON_H)
    named: list[NamedPeriod] | None = Field(None, min_length=1, max_length=MAX_PERIODS)
    horizon_h: float | None = Field(None, gt=0, le=MAX_HORIZON_H,
                                    description="with length_h: plan this many hours (default: the profiles' span)")
    start_cost_usd_per_device: float = Field(
        0.0, ge=0, le=MAX_START_USD, description="paid per device of each instance started between periods")

    @model_validator(mode="after")
    def _check(self) -> Periods:
        if (self.length_h is None) == (self.named is None):
            raise ValueError("give length_h or named periods, not both")
        if self.horizon_h is not None and self.named is not None:
            raise FieldError("horizon_h applies to length_h periods", ("horizon_h",))
        if self.length_h is not None and round(self.length_h * 3600, 6) % 1:
            raise FieldError("length_h must be a whole number of seconds", ("length_h",))
        names = [p.name for p in self.named or []]
        for i, p in enumerate(self.named or []):
            if p.name in names[:i]:
                raise FieldError(f"period name '{p.name}' repeats", ("named", i, "name"))
            if i and p.start_h < self.named[i - 1].end_h:  # type: ignore[index]
                raise FieldError("named periods must be in order and must not overlap", ("named", i, "start_h"))
        return self


class CommittedTerm(Strict):
    """Devices committed for the whole horizon: paid every period, used or not."""

    price_per_hour: float = Field(gt=0, le=MAX_PRICE, description="USD/device-hour")
    supply: int | None = Field(None, ge=0, le=MAX_SUPPLY, description="devices that may be committed")


SupplyList = Annotated[list[Annotated[int, Field(ge=0, le=MAX_SUPPLY)]], Field(min_length=1, max_length=MAX_PERIODS)]


class OnDemandTerm(Strict):
    """Devices paid per period they are used (usually at a premium over the committed price)."""

    price_per_hour: float | None = Field(None, gt=0, le=MAX_PRICE,
                                         description="USD/device-hour (default: the entry's price)")
    supply: int | None = Field(None, ge=0, le=MAX_SUPPLY, description="devices per period (default: the entry's)")
    supply_per_period: SupplyList | None = Field(None, description="devices per period, one value per period")

    @model_validator(mode="after")
    def _check(self) -> OnDemandTerm:
        if self.supply is not None and self.supply_per_period is not None:
            raise ValueError("give supply or supply_per_period, not both")
        return self


def check_period_fields(p: Any) -> None:
    """Cross-field checks of demand over time (`Problem` runs them): profiles need periods and
    periods a profile; periods plan min_cost on one place; commitment terms need periods."""
    profiled = [i for i, s in enumerate(p.services) if s.demand_profile is not None]
    termed = [j for j, h in enumerate(p.hardware) if h.committed is not None or h.on_demand is not None]
    if p.periods is None:
        if profiled:
            raise FieldError("a demand_profile needs periods: (how to cut the horizon)",
                             ("services", profiled[0], "demand_profile"))
        if termed:
            raise FieldError("committed / on_demand terms need periods: and a demand_profile",
                             ("hardware", termed[0]))
        return
    if not profiled:
        raise FieldError("periods: needs a services[].demand_profile", ("periods",))
    if p.objective != "min_cost":
        raise FieldError("periods: plan min_cost (the cheapest fleet over the horizon)", ("objective",))
    if p.sites is not None:
        raise FieldError("periods: and sites: together are not supported", ("periods",))
    if p.current is not None or p.transition is not None:
        raise FieldError("periods: and a current deployment are not supported together", ("periods",))
    for j in termed:
        h = p.hardware[j]
        if h.cost is not None:
            raise FieldError("committed / on_demand terms price the devices; drop cost:", ("hardware", j, "cost"))
        if h.committed is not None and p.budget_per_hour is not None:
            raise FieldError("budget_per_hour does not apply to committed devices; drop one",
                             ("hardware", j, "committed"))
