"""The summary of a workload data file (`fleetplan trace FILE --format json`): what a request
trace or a length distribution says about rate, burstiness and lengths
(solver/problem/workload_data.py computes it; docs/trace.md defines every figure)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict


class LengthStats(Strict):
    """Token counts of one field: inverse-CDF percentiles (the smallest count whose cumulative
    share reaches the quantile, as TokenDist.p99_tokens reads a histogram)."""

    mean_tokens: float
    p50_tokens: float
    p90_tokens: float
    p99_tokens: float
    max_tokens: float
    distinct_values: int = Field(description="histogram bins (distinct token counts)")


class TraceWindow(Strict):
    """One window [start_s, start_s + length_s) of arrivals."""

    start_s: float
    length_s: float = Field(description="window_s, or less for the last window")
    requests: int
    rate_qps: float = Field(description="requests / length_s")
    interarrival_cv: float | None = Field(description="std / mean of the gaps inside the window "
                                                      "(None: fewer than 2 gaps)")


class TraceSummary(Strict):
    file: str
    kind: Literal["trace", "lengths"]
    requests: int | None = Field(description="rows of a trace (None for a length distribution)")
    duration_s: float | None = Field(description="last arrival - first arrival")
    mean_rate_qps: float | None = Field(description="(requests - 1) / duration_s: 1 / the mean gap")
    peak_rate_qps: float | None = Field(description="the highest window rate")
    window_s: float | None
    interarrival_cv: float | None = Field(description="std / mean of every inter-arrival gap")
    arrival_cv: float | None = Field(description="the burstiness the planner uses: sqrt of the mean of the "
                                                 "windows' squared CV, weighted by their gaps")
    input_tokens: LengthStats
    output_tokens: LengthStats
    windows: list[TraceWindow] = Field(default_factory=list)
