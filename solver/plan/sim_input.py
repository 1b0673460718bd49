"""What `fleetplan simulate` replays: a problem file (planned here first, as `fleetplan plan
--no-record` plans it) or a result document (`fleetplan plan --format json`) with its problem.

A result document names its problem (`problem`, the problem's `name`) but does not embed it.
Its problem is `--problem FILE` when given, else the shipped problem of that name; either way
the problem must be the one the plan was made for: every planned service is in it with the same
demand and token means as the plan's `assumptions.workloads` (a result of another problem of
the same name is refused, exit 2, asking for `--problem`).
"""

from __future__ import annotations

import math
from pathlib import Path

from solver.catalog import shipped
from solver.errors import InputError
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.problem.load import ResolvedProblem, load_problem
from solver.schema.result import PlanResult
from solver.schema.userfile import MAX_RESULT_BYTES
from solver.schema.yamlbound import RESULT_LIMITS
from solver.schema.yamlio import load_yaml, validate_doc


def is_result_file(ref: str) -> bool:
    return ref.lower().endswith(".json")


def load_result(path: str) -> PlanResult:
    """A result document, validated (errors name the file, line and field)."""
    return validate_doc(PlanResult, load_yaml(path, "result document", RESULT_LIMITS, MAX_RESULT_BYTES))


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def check_same_problem(rp: ResolvedProblem, doc: PlanResult, where: str) -> None:
    """The plan `doc` was made for problem `rp` (its services, demands and token means)."""
    svc = {s.name: s for s in rp.problem.services}
    for k, sr in enumerate(doc.services):
        if sr.name not in svc:
            raise InputError(f"{where}: services[{k}].name: service '{sr.name}' is not in problem "
                             f"'{rp.name}' ({', '.join(svc)}); pass the plan's problem with --problem FILE")
        for j, p in enumerate(sr.pools):
            if p.hardware not in rp.hardware_names and p.hardware not in [h.type for h in rp.problem.hardware]:
                raise InputError(f"{where}: services[{k}].pools[{j}].hardware: '{p.hardware}' is not in problem "
                                 f"'{rp.name}'; pass the plan's problem with --problem FILE")
    workloads = doc.assumptions.workloads if doc.assumptions is not None else []
    for k, w in enumerate(workloads):
        s = svc.get(w.service)
        if s is None:
            continue
        wl = s.workload
        same = (_close(w.qps, wl.qps) and _close(w.input_tokens_mean, wl.input_tokens.mean_tokens)
                and _close(w.output_tokens_mean, wl.output_tokens.mean_tokens))
        if not same:
            raise InputError(f"{where}: assumptions.workloads[{k}]: service '{w.service}' was planned for "
                             f"{w.qps:g} QPS, {w.input_tokens_mean:g} / {w.output_tokens_mean:g} tokens, but problem "
                             f"'{rp.name}' asks {wl.qps:g} QPS, {wl.input_tokens.mean_tokens:g} / "
                             f"{wl.output_tokens.mean_tokens:g}; pass the plan's problem with --problem FILE")


def plan_to_simulate(ref: str, problem: str | None, opts: SolveOptions, timings: bool = True
                     ) -> tuple[ResolvedProblem, PlanResult]:
    """(problem, plan) from a problem file (planned now) or a result document `ref`."""
    if not is_result_file(ref):
        if problem is not None:
            raise InputError(f"--problem: only with a result document (RESULT.json), not with the problem {ref}")
        rp = load_problem(ref)
        return rp, plan(rp, opts, timings=timings, compare=False)
    doc = load_result(ref)
    if problem is not None:
        rp = load_problem(problem)
    else:
        try:
            path = shipped.resolve("problems", doc.problem)
        except InputError:
            raise InputError(f"{ref}: problem: '{doc.problem}' is not a shipped problem; pass the plan's "
                             "problem file with --problem FILE") from None
        rp = load_problem(path)
    check_same_problem(rp, doc, ref if problem is None else f"{ref} against {Path(problem).name}")
    return rp, doc
