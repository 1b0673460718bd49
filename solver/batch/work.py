"""The work of one planned problem, as run in a worker (in-process, a local process, a Ray task).

`plan_one` is the whole of it: the flow `fleetplan plan` runs (`decision.record.decide`: the
plan through candidates, CP-SAT and the verifier, with its decision record; `plan.plan` alone
with `--no-record`), on a problem the driver has already loaded, resolved and expanded. What
comes back is the plan document or the error, classified as the command line would classify it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from solver import __version__
from solver.decision.record import decide
from solver.errors import FleetplanError, InputError
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.problem.load import ResolvedProblem
from solver.schema.result import PlanResult


@dataclass(frozen=True)
class Flow:
    """How each problem is planned: the options of `fleetplan plan`."""

    solve: SolveOptions = field(default_factory=SolveOptions)
    timings: bool = True  # False: --no-timings (byte-identical documents)
    record: bool = True  # False: --no-record (no decision record)


@dataclass(frozen=True)
class Planned:
    """The outcome of one plan: a document, or `invalid` (bad input) / `error` (a bug)."""

    doc: PlanResult | None
    failure: str | None  # "invalid" | "error"; None when `doc` is set
    message: str | None
    wall_s: float
    version: str = __version__

    @classmethod
    def failed(cls, message: str, kind: str = "error", wall_s: float = 0.0) -> Planned:
        return cls(None, kind, message, wall_s)


def plan_one(rp: ResolvedProblem, flow: Flow) -> Planned:
    t0 = time.perf_counter()
    try:
        if flow.record:
            doc = decide(rp, flow.solve, flow.timings)
        else:
            doc = plan(rp, flow.solve, flow.timings)
    except InputError as exc:
        return Planned.failed(str(exc), "invalid", time.perf_counter() - t0)
    except FleetplanError as exc:  # InternalError and its kinds: a fleetplan bug (exit 3)
        return Planned.failed(f"internal error: {exc}", "error", time.perf_counter() - t0)
    except Exception as exc:  # noqa: BLE001 - any other bug fails this problem alone
        return Planned.failed(f"internal error: {type(exc).__name__}: {exc}", "error",
                              time.perf_counter() - t0)
    return Planned(doc, None, None, time.perf_counter() - t0)
