"""Measured operator profiles: file format, importer, vectorised interpolation.

    from solver.profiles import OperatorProfiles
    prof = OperatorProfiles.load("h100-sxm", "vllm", bounds=...)  # see solver/perf/operators/tables.py
    est = prof.gemm(m=tokens, n=8192, k=8192, precision="fp8")  # est.seconds, est.source

Modules: `format` (files and provenance), `interp` (grids, interpolation, source codes),
`operators` (per-hardware query API; the bounds it extrapolates by are passed in),
`hooks` (table lookups in the stage model's terms), `aic` (aiconfigurator-core importer),
`collect` (own measurements with PyTorch), `shapes` (what the model cards need), `loo`
(leave-one-out accuracy), `tables` (the tables of a set of cards). The `profiles` command is
`solver/cli/profiles.py`.
"""

from solver.profiles.interp import (
    EXTRAPOLATED,
    INTERPOLATED,
    MEASURED,
    ROOFLINE,
    SOURCE_NAMES,
    Estimate,
    SourceTally,
)
from solver.profiles.operators import OperatorProfiles, ProfileSet

__all__ = [
    "EXTRAPOLATED", "INTERPOLATED", "MEASURED", "ROOFLINE", "SOURCE_NAMES", "Estimate",
    "SourceTally", "OperatorProfiles", "ProfileSet",
]
