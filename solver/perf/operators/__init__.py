"""Operator times behind one interface.

Modules: `protocol` (the `OperatorTimes` interface), `counts` (FLOPs and bytes per operator),
`roofline` (the analytic implementation), `measured` (the measured tables, wrapping the
roofline), `bounds` (the per-family laws the measured tables extrapolate by).
"""

from __future__ import annotations

from solver.perf.arch import ModelArch
from solver.perf.operators.measured import MeasuredTimes
from solver.perf.operators.protocol import OperatorTimes
from solver.perf.operators.roofline import RooflineTimes
from solver.perf.tables import HardwareTable, Plans
from solver.profiles import SourceTally


def operator_times(arch: ModelArch, hw: HardwareTable, plans: Plans, ledger: SourceTally) -> OperatorTimes:
    """The measured implementation when the hardware table carries profiles, else the roofline."""
    if hw.profiles is None:
        return RooflineTimes(arch, hw, plans, ledger)
    return MeasuredTimes(RooflineTimes(arch, hw, plans), hw.profiles, ledger)


__all__ = ["MeasuredTimes", "OperatorTimes", "RooflineTimes", "operator_times"]
