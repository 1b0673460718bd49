"""The shipped engine calibrations (`hardware/calibration/<engine>.yaml`, documents of
`solver/schema/calibration.py`), loaded once per process."""

from __future__ import annotations

from functools import lru_cache

from solver.catalog import shipped
from solver.schema.calibration import Calibration
from solver.schema.engine import EngineParams
from solver.schema.yamlio import load_yaml, validate_doc


def calibration_path(engine: str):
    """Where an engine's calibration file is (it may not exist: then none is used)."""
    return shipped.data_dir("hardware") / "calibration" / f"{engine}.yaml"


@lru_cache(maxsize=16)
def load_calibration(engine: str) -> Calibration | None:
    path = calibration_path(engine)
    if not path.is_file():
        return None
    return validate_doc(Calibration, load_yaml(path))


DEFAULT_ENGINE = "vllm"  # the engine assumed when a problem or a measured row names none


def engine_params(engine: str | None) -> EngineParams:
    """The calibrated parameters of an engine (default: vLLM), or the uncalibrated defaults
    when no calibration file exists."""
    cal = load_calibration(engine or DEFAULT_ENGINE)
    return cal.params if cal is not None else EngineParams()
