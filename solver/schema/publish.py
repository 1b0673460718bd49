"""JSON Schema of every document fleetplan reads or writes, generated from the pydantic models.

`fleetplan schema NAME` prints one; `fleetplan schema --out DIR` writes them all (the published
copies live in `schemas/` and a test keeps them equal to the models). Input documents (problem,
cards) use pydantic's validation mode (what a user may write, defaults optional); output
documents use serialization mode (what fleetplan writes, every field present).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel

from solver import __version__
from solver.schema.batch import BatchRecord, BatchSummary
from solver.schema.bench_compare import PlanComparison
from solver.schema.calibration import Calibration
from solver.schema.cards import HardwareCard, ModelCard
from solver.schema.estimate import EstimateResult
from solver.schema.problem import Problem
from solver.schema.questions import FrontierResult, PriceSweepResult
from solver.schema.result import PlanResult
from solver.schema.simulation import SimulationResult
from solver.schema.trace import TraceSummary
from solver.schema.validation import ValidationReport

BASE_ID = "https://fleetplan.dev/schemas"

# name -> (model, mode, what it is)
DOCUMENTS: dict[str, tuple[type[BaseModel], Literal["validation", "serialization"], str]] = {
    "problem": (Problem, "validation", "a problem file (fleetplan plan / check)"),
    "model-card": (ModelCard, "validation", "a model card (models/*.yaml or inline)"),
    "hardware-card": (HardwareCard, "validation", "a hardware card (hardware/*.yaml or inline)"),
    "result": (PlanResult, "serialization", "the result of fleetplan plan --format json"),
    "estimate": (EstimateResult, "serialization", "fleetplan estimate --format json"),
    "validation": (ValidationReport, "serialization", "fleetplan validate --format json"),
    "plan-comparison": (PlanComparison, "serialization", "fleetplan validate MEASURED --plan RESULT.json --format json"),
    "frontier": (FrontierResult, "serialization", "fleetplan frontier --format json"),
    "price-sweep": (PriceSweepResult, "serialization", "fleetplan price-sweep --format json"),
    "batch-summary": (BatchSummary, "serialization", "fleetplan batch: DIR/summary.json"),
    "batch-record": (BatchRecord, "serialization", "fleetplan batch: DIR/results/<key>.record.json"),
    "simulation": (SimulationResult, "serialization", "fleetplan simulate --format json"),
    "trace": (TraceSummary, "serialization", "fleetplan trace --format json"),
    "calibration": (Calibration, "validation", "an engine calibration (hardware/calibration/*.yaml, "
                    "fleetplan calibrate --out, a problem's software.calibration)"),
}


def json_schema(name: str) -> dict:
    model, mode, what = DOCUMENTS[name]
    schema = model.model_json_schema(mode=mode)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{BASE_ID}/{name}.schema.json",
        "$comment": f"generated from solver.schema ({model.__name__}) by fleetplan {__version__}: {what}",
        **schema,
    }


def render(name: str) -> str:
    return json.dumps(json_schema(name), indent=2, sort_keys=True) + "\n"
