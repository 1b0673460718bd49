"""Measured operator profiles: file format, importer, vectorised interpolation.

    from solver.profiles import OperatorProfiles
    prof = OperatorProfiles.load("h100-sxm", "vllm", bounds=...)  # see solver/perf/operators/tables.py
    est = prof.gemm(m=tokens, n=8192, k=8192, precision="fp8")  # est.seconds, est.source

Modules: `format` (files and provenance), `interp` (grids, interpolation, source codes),
`operators` (per-hardware query API; the bounds it extrapolates by are passed in),
`hooks` (table lookups in the stage model's terms), `loo` (leave-one-out accuracy), and
`sources/`, where the tables come from: `sources/aic/` (aiconfigurator-core importer),
`sources/pytorch/` (own measurements with PyTorch), `sources/shapes` (what the model cards
need). The tables of a set of cards are loaded by `solver/perf/operators/tables.py`; the
`profiles` command is `solver/cli/profiles.py`.
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
