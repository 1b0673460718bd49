"""Demand over time: read each service's demand profile, cut the horizon into periods, and
resolve the hardware entries' commitment terms (schema/periods.py) into a `Horizon`.

A profile is a step function: the rate of a point holds until the next point (the last one for
one more step, the gap before it). A period's demand is the profile's highest rate inside it, so
a fleet sized for it meets the SLO at every moment; its mean rate is kept for utilisation.
Periods start at the earliest first point of the profiles; a service without a profile has its
`workload.qps` in every period.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from solver.errors import InputError
from solver.problem.workload_data import data_path
from solver.replay.sources.trace import read_regular
from solver.schema.periods import MAX_PERIODS, MAX_POINTS, DemandProfile, Periods
from solver.schema.problem import Problem

MAX_PROFILE_BYTES = 64 << 20  # 64 MiB: a million `time_s,requests_per_s` rows of ~25 bytes
COLUMNS = ("time_s", "requests_per_s")


@dataclass(frozen=True)
class Horizon:
    """The periods, each service's demand per period, and each hardware type's terms."""

    names: tuple[str, ...]
    seconds: tuple[int, ...]  # length of each period
    peak_qps: tuple[tuple[float, ...], ...]  # [service][period]: the demand to serve
    mean_qps: tuple[tuple[float, ...], ...]  # [service][period]: the time-weighted mean rate
    start_cost_usd_per_device: float
    termed: tuple[bool, ...]  # per type: priced by commitment terms (else by its columns' cost)
    committed_price: tuple[float | None, ...]  # USD/device-hour; None: cannot be committed
    committed_supply: tuple[int | None, ...]  # None: unlimited
    on_demand_price: tuple[float | None, ...]  # USD/device-hour; None: no on-demand devices
    on_demand_supply: tuple[tuple[int | None, ...], ...]  # [type][period]; None: unlimited

    @property
    def n_periods(self) -> int:
        return len(self.names)


def read_profile(path: str) -> tuple[np.ndarray, np.ndarray]:
    """(time_s, requests_per_s) of a profile file, in increasing time; a bad row names its line."""
    text = read_regular(path, MAX_PROFILE_BYTES)
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError(f"{path}: empty demand profile") from None
    if any(c not in header for c in COLUMNS):
        raise InputError(f"{path}:1: a demand profile has the columns {','.join(COLUMNS)} (got {','.join(header)})")
    it, ir = header.index(COLUMNS[0]), header.index(COLUMNS[1])
    times, rates = [], []
    for row in reader:
        where = f"{path}:{reader.line_num}"
        try:
            t, r = float(row[it]), float(row[ir])
        except (ValueError, IndexError):
            raise InputError(f"{where}: expected numbers in {','.join(COLUMNS)}") from None
        if not (math.isfinite(t) and math.isfinite(r) and t >= 0 and 0 <= r <= 1e7):
            raise InputError(f"{where}: time_s must be >= 0 and requests_per_s in [0, 1e7]")
        if times and t <= times[-1]:
            raise InputError(f"{where}: time_s must increase ({t:g} after {times[-1]:g})")
        times.append(t)
        rates.append(r)
        if len(times) > MAX_POINTS:
            raise InputError(f"{path}: over {MAX_POINTS:,} points")
    if not times:
        raise InputError(f"{path}: no points")
    return np.array(times), np.array(rates)


def profile_points(dp: DemandProfile, base: Path | None) -> tuple[np.ndarray, np.ndarray]:
    if dp.points is not None:
        t = np.array([p.time_s for p in dp.points])
        r = np.array([p.requests_per_s for p in dp.points])
    else:
        t, r = read_profile(str(data_path(dp.file, base)))  # type: ignore[arg-type]
    return t, r * dp.scale


def _end(t: np.ndarray) -> float:
    """Where a profile's last step ends: one more gap after its last point (a single point: 0 s)."""
    return float(t[-1] + (t[-1] - t[-2] if t.size > 1 else 0.0))


def window_stats(t: np.ndarray, r: np.ndarray, a: float, b: float) -> tuple[float, float]:
    """(highest, time-weighted mean) of the step function (t, r) over [a, b)."""
    inside = (t > a) & (t < b)
    first = int(np.searchsorted(t, a, side="right")) - 1  # the point active at a
    idx = np.flatnonzero(inside)
    starts = np.concatenate([[a], t[idx]])
    vals = np.concatenate([[r[max(first, 0)]], r[idx]])
    ends = np.concatenate([starts[1:], [b]])
    mean = float(np.sum(vals * (ends - starts)) / (b - a))
    return float(vals.max()), mean


def cut(periods: Periods, t0: float, end: float) -> list[tuple[str, float, float]]:
    """(name, start_s, end_s) of every period."""
    if periods.named is not None:
        return [(p.name, t0 + p.start_h * 3600, t0 + p.end_h * 3600) for p in periods.named]
    step = round(periods.length_h * 3600)  # type: ignore[operator]
    if periods.horizon_h is not None:
        end = t0 + periods.horizon_h * 3600
    n = max(1, math.ceil(round((end - t0) / step, 6)))
    if n > MAX_PERIODS:
        raise InputError(f"periods.length_h: {n:,} periods, over the limit of {MAX_PERIODS:,}")
    width = len(str(n - 1))
    return [(f"p{k:0{width}d}", t0 + k * step, t0 + (k + 1) * step) for k in range(n)]


def demand_table(problem: Problem, base: Path | None):
    """(periods, peak [service][period], mean [service][period]) of a problem with periods."""
    profiles = [None if s.demand_profile is None else profile_points(s.demand_profile, base)
                for s in problem.services]
    given = [p for p in profiles if p is not None]
    t0 = min(float(t[0]) for t, _ in given)
    end = max(_end(t) for t, _ in given)
    spans = cut(problem.periods, t0, end)  # type: ignore[arg-type]
    peak, mean = [], []
    for s, prof in zip(problem.services, profiles):
        if prof is None:
            q = float(s.workload.qps)  # type: ignore[arg-type]
            peak.append(tuple(q for _ in spans))
            mean.append(tuple(q for _ in spans))
            continue
        stats = [window_stats(prof[0], prof[1], a, b) for _, a, b in spans]
        peak.append(tuple(x for x, _ in stats))
        mean.append(tuple(m for _, m in stats))
    return spans, tuple(peak), tuple(mean)


def _on_demand_supply(h, n: int, where: str) -> tuple[int | None, ...]:
    od = h.on_demand
    if od is not None and od.supply_per_period is not None:
        if len(od.supply_per_period) != n:
            raise InputError(f"{where}.on_demand.supply_per_period: {len(od.supply_per_period)} values "
                             f"for {n} periods")
        return tuple(od.supply_per_period)
    if h.committed is not None and od is None:
        return tuple(0 for _ in range(n))  # committed only: no on-demand devices
    supply = od.supply if od is not None and od.supply is not None else h.supply
    return tuple(supply for _ in range(n))


def horizon(problem: Problem, prices: tuple[float, ...], base: Path | None, where) -> Horizon:
    """The problem's horizon; `prices`: each entry's resolved USD/device-hour (the on-demand
    price unless its terms say otherwise); `where(loc)`: 'file:line' of a field."""
    try:
        spans, peak, mean = demand_table(problem, base)
    except InputError as exc:
        i = next(i for i, s in enumerate(problem.services) if s.demand_profile is not None)
        raise InputError(f"{where(('services', i, 'demand_profile'))}: services[{i}].demand_profile: {exc}") from None
    n = len(spans)
    od_supply, od_price = [], []
    for j, h in enumerate(problem.hardware):
        od_supply.append(_on_demand_supply(h, n, f"{where(('hardware', j))}: hardware[{j}]"))
        od = h.on_demand
        no_od = h.committed is not None and od is None
        od_price.append(None if no_od else (od.price_per_hour if od and od.price_per_hour else prices[j]))
    return Horizon(
        names=tuple(name for name, _, _ in spans),
        seconds=tuple(int(round(b - a)) for _, a, b in spans),
        peak_qps=peak, mean_qps=mean,
        start_cost_usd_per_device=problem.periods.start_cost_usd_per_device,  # type: ignore[union-attr]
        termed=tuple(h.committed is not None or h.on_demand is not None for h in problem.hardware),
        committed_price=tuple(h.committed.price_per_hour if h.committed else None for h in problem.hardware),
        committed_supply=tuple(h.committed.supply if h.committed else None for h in problem.hardware),
        on_demand_price=tuple(od_price), on_demand_supply=tuple(od_supply),
    )


def with_peak_demand(problem: Problem, hz: Horizon) -> Problem:
    """The problem with each profiled service's `workload.qps` set to its highest period demand
    (what one period sized for the whole horizon would serve)."""
    services = []
    for s, peak in zip(problem.services, hz.peak_qps):
        if s.demand_profile is None:
            services.append(s)
            continue
        q = max(max(peak), 1e-3)  # 1e-3 QPS: the smallest demand the integer model counts (1 milli-QPS)
        services.append(s.model_copy(update={"workload": s.workload.model_copy(update={"qps": q})}))
    return problem.model_copy(update={"services": services})
