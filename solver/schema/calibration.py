"""An engine calibration file (`hardware/calibration/<engine>.yaml`): the fitted EngineParams of
one serving engine (vllm, sglang, trtllm), where they were fitted (which measured rows, their
hash), when, and the error measured on the fitted rows and on held-out systems. Engine
parameters are properties of the software (scheduler overhead, kernel launch, how far model
shapes fall below best-shape GEMM efficiency); they apply to every hardware card.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.engine import EngineParams


class FitError(Strict):
    rows: int
    ttft_median_abs_pct: float
    tpot_median_abs_pct: float
    ttft_bias_pct: float
    tpot_bias_pct: float


class ValidationGroup(Strict):
    """Prediction error on one group of measured rows: one hardware card, dense or MoE models,
    and (`model` given) one model card's rows of that group."""

    hardware: str = Field(description="fleetplan hardware card name")
    models: Literal["dense", "moe"]
    model: str | None = Field(None, description="a model card: only its rows of the (hardware, "
                              "models) group; None: every model of the kind")
    fitted: bool = Field(description="these rows were fitted on (the rest are held out)")
    rows: int
    ttft_median_abs_pct: float
    ttft_p90_abs_pct: float
    ttft_bias_pct: float
    tpot_median_abs_pct: float
    tpot_p90_abs_pct: float
    tpot_bias_pct: float


class CalibrationSplit(Strict):
    """`fleetplan calibrate`: which of the user's rows were fitted and which held out."""

    files: list[str] = Field(min_length=1, max_length=256, description="the measured files, in order")
    seed: int = Field(ge=0, le=2**32 - 1, description="the seed of the held-out draw")
    held_out_fraction: float = Field(gt=0, lt=1)
    fitted_rows: int = Field(ge=0)
    held_out_rows: int = Field(ge=0)
    held_out: list[str] = Field(max_length=5000, description="FILE:LINE of every held-out row")
    fitted_error: FitError = Field(description="on the fitted rows")
    held_out_error: FitError = Field(description="on the held-out rows, never fitted on")


class Calibration(Strict):
    engine: str
    params: EngineParams
    fitted_on: str = Field(description="which measured rows, e.g. silicon_sample.csv h100_sxm rows")
    source_sha256: str
    fitted_at: str = Field(description="YYYY-MM-DD")
    method: str
    predictor: Literal["closed-form", "replay"] = Field(
        "closed-form",
        description="the predictor the fit ran through and `fit_error` / `held_out_error` were "
        "measured with (`fleetplan validate --model`); `validation` is always the closed form's",
    )
    fit_error: FitError
    held_out_error: dict[str, FitError] = Field(default_factory=dict,
                                                description="per system, never fitted on")
    validation: list[ValidationGroup] = Field(
        default_factory=list,
        description="closed-form error per hardware and model kind with the fitted parameters "
        "(the uncertainty bands of a plan, which the closed form prices, come from here)",
    )
    split: CalibrationSplit | None = Field(
        None, description="a user's refit (`fleetplan calibrate`): the held-out split; its "
        "`validation` has a fitted and a held-out group per hardware and model kind, and a plan's "
        "bands take the held-out one")
