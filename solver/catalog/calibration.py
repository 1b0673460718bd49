"""The shipped engine calibrations (`hardware/calibration/<engine>.yaml`, documents of
`solver/schema/calibration.py`), loaded once per process."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from solver.catalog import shipped
from solver.errors import InputError
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


def engine_params(engine: str | None, file: CalibrationFile | None = None) -> EngineParams:
    """The calibrated parameters of an engine (default: vLLM): those of `file` when given, else
    the shipped calibration's, else the uncalibrated defaults when no calibration file exists."""
    if file is not None:
        return file.calibration.params
    cal = load_calibration(engine or DEFAULT_ENGINE)
    return cal.params if cal is not None else EngineParams()


# a calibration file a problem names is refused above this size (ours: the shipped files are
# ~3 KB; a user's refit lists every held-out row, at most 5,000, about 300 KB)
MAX_CALIBRATION_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class CalibrationFile:
    """A calibration file a problem names (`software: {calibration: FILE}`)."""

    path: str
    sha256: str
    calibration: Calibration


def load_calibration_file(path: str | Path, where: str) -> CalibrationFile:
    """A user's calibration file (`fleetplan calibrate --out`); InputError names `where` (the
    problem's file:line) and the file."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{where}: software.calibration: {p}: no such file")
    size = p.stat().st_size
    if size > MAX_CALIBRATION_BYTES:
        raise InputError(f"{where}: software.calibration: {p}: {size} bytes, more than {MAX_CALIBRATION_BYTES}")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{where}: software.calibration: {p}: cannot read: {exc}") from None
    cal = validate_doc(Calibration, load_yaml(p))
    return CalibrationFile(str(p), hashlib.sha256(raw).hexdigest(), cal)
