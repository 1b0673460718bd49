"""Documents of `fleetplan batch` (extension to SPEC): the summary and each problem's record.

A batch writes, per planned problem, the plan document (`<key>.json`, the same bytes as
`fleetplan plan --format json`) and a `BatchRecord` next to it (`<key>.record.json`: the input
hash `--resume` compares, and the problem's summary row); and for the whole batch a
`BatchSummary` (`summary.json`), whose rows are also written as `summary.csv` (and
`summary.parquet` when pyarrow is installed).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict

Status = Literal["optimal", "feasible", "infeasible", "invalid", "error"]
PLANNED: tuple[Status, ...] = ("optimal", "feasible")


class SummaryRow(Strict):
    """One planned problem (a file, or one variant of a file's sweep)."""

    problem: str = Field(description="the problem's name; a sweep variant's carries its values")
    base_problem: str = Field(description="the name in the file (a sweep's variants share it)")
    file: str = Field(description="the problem file, as found")
    sweep: dict[str, float] = Field(default_factory=dict,
                                    description="swept field label -> value, in axis order")
    status: Status = Field(description="optimal | feasible | infeasible | invalid (bad input, "
                           "exit 2) | error (a fleetplan bug, exit 3)")
    objective_kind: Literal["min_cost", "max_throughput"] | None = None
    objective: float | None = None
    cost_per_hour: float | None = Field(None, description="USD per hour")
    total_devices: int | None = None
    devices_by_type: dict[str, int] = Field(default_factory=dict)
    power_kw: float | None = None
    wall_s: float | None = Field(None, description="planning wall time; null with --no-timings")
    resumed: bool = Field(False, description="taken from an earlier run by --resume")
    result: str | None = Field(None, description="the plan document, relative to the output folder")
    input_sha256: str | None = Field(None, description="hash of everything the plan depends on")
    error: str | None = Field(None, description="why it was not planned, or why it is infeasible")


class BatchRecord(Strict):
    """Next to each result: what `--resume` compares (the input hash) and the summary row."""

    kind: Literal["fleetplan-batch-record"] = "fleetplan-batch-record"
    version: str
    input_sha256: str
    row: SummaryRow


class Counts(Strict):
    problems: int
    optimal: int
    feasible: int
    infeasible: int
    invalid: int
    error: int
    resumed: int


class BatchSummary(Strict):
    """The whole batch: `summary.json`."""

    version: str
    exit_code: int = Field(description="3 if any error, else 2 if any invalid, else 1 if any "
                           "infeasible, else 0")
    counts: Counts
    rows: list[SummaryRow]
