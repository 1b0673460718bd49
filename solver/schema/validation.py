"""The document `fleetplan validate` prints."""

from __future__ import annotations

from typing import Literal

from solver.schema.base import Strict


class ErrorStats(Strict):
    """Error of predictions against measurements, percent of the measured value."""

    rows: int
    median_abs_pct: float
    mean_abs_pct: float
    bias_pct: float  # mean signed error: positive = fleetplan predicts slower than measured
    p90_abs_pct: float


class GroupStats(Strict):
    hardware: str
    model: str
    engine: str
    ttft: ErrorStats
    tpot: ErrorStats


class RolePlanRow(Strict):
    """One role of a disaggregated row: its workers' parallelism, count and batch per
    attention-data-parallel rank, as the measured CSV gives them."""

    tp: int
    pp: int
    ep: int
    dp: int
    workers: int
    batch: int


class ValidationRow(Strict):
    line: int
    mode: Literal["colocated", "disaggregated"] = "colocated"
    model: str
    hardware: str
    precision: str
    engine: str | None
    input_tokens: int
    output_tokens: int
    concurrency: int
    tp: int | None = None  # colocated rows; a disaggregated row's plans are `prefill` and `decode`
    pp: int | None = None
    ep: int | None = None
    dp: int | None = None
    prefill: RolePlanRow | None = None
    decode: RolePlanRow | None = None
    measured_ttft_ms: float
    measured_tpot_ms: float
    predicted_ttft_ms: float | None  # None: not predicted (`not_predicted` says why)
    predicted_tpot_ms: float | None
    speculative: str | None = None  # the speculative decoding the row ran, METHOD:K[:A[:DRAFT]]
    not_predicted: str | None = None  # why the row has no prediction; it then counts in no group


class ValidationReport(Strict):
    source: str
    overall: GroupStats
    groups: list[GroupStats]
    rows: list[ValidationRow]
    columns: list[str]
