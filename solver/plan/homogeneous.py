"""The best homogeneous plan a heterogeneous one is compared with (every KV route inside one
hardware type), and the saving of the heterogeneous plan against it."""

from __future__ import annotations

from collections import Counter

import numpy as np

from solver.candidates.table import CandidateSet
from solver.fleet.instance import FleetInstance, build_instance
from solver.fleet.solve import FleetSolution, SolveOptions, solve
from solver.plan.pools import unit_cost
from solver.problem.load import ResolvedProblem
from solver.schema.result import HeteroComparison, HomogeneousService
from solver.schema.roles import ROLES

# CP-SAT deterministic time (its work measure, about seconds of one core) of the comparison's
# cost stage and the standalone solves before it, so that the comparison does not depend on the
# machine's load: the shipped problems prove it within 1.07 (mixed-supply; the others under
# 0.06) except three-services, whose best homogeneous plan ($278.00/h, from the repaired hint:
# solver/fleet/repair.py) takes about 6 to prove; there it says `feasible` and `exact: false`,
# with the same plan and a bound 0.054% below it at 0.5 as at 2.0 (benchmarks/plan_speed.md)
HOMOGENEOUS_WORK = 1.25
# and of its fewest-devices tie-break: the shipped problems prove it within 0.17 (survive-failure;
# mixed-supply 0.04, the others under 0.01) except three-services, whose tie-break finds its
# 119 devices within 0.05 and then spent 0.9 proving them under the what-ifs' 5.0 (the same
# plan at 0.25: benchmarks/plan_speed.md)
HOMOGENEOUS_TIEBREAK_WORK = 0.25


def may_cross_types(rp: ResolvedProblem, cs: CandidateSet) -> bool:
    """Whether a plan of `rp` can send a KV cache from one hardware type to another (only then
    does it get a comparison: `homogeneous`)."""
    if not rp.problem.constraints.heterogeneous_prefill_decode:
        return False
    return bool((build_instance(rp, cs).reach != build_instance(rp, cs, heterogeneous=False).reach).any())


def solve_homogeneous(rp: ResolvedProblem, cs: CandidateSet, opts: SolveOptions) -> tuple[FleetInstance, FleetSolution]:
    """The best homogeneous plan's instance and solve: every KV route kept within one hardware
    type (the cost, then the fewest devices; the distinct-configuration tie-break does not
    change either). It does not depend on the plan it is compared with, so the decision record
    starts it beside that plan's own solve (solver/decision/record.py)."""
    inst = build_instance(rp, cs, heterogeneous=False)
    return inst, solve(inst, opts.follow_up(max_stages=2, primary_work=HOMOGENEOUS_WORK,
                                            tiebreak_work=HOMOGENEOUS_TIEBREAK_WORK, repair_hint=True))


def homogeneous(rp: ResolvedProblem, cs: CandidateSet, opts: SolveOptions, status: str,
                 cost: float, scale: float | None,
                 solved: tuple[FleetInstance, FleetSolution] | None = None) -> HeteroComparison:
    """The comparison of a plan (its `status`, `cost` and `scale`) with the best homogeneous
    plan (`solve_homogeneous`; `solved`: its result when already solved)."""
    inst, sol = solved if solved is not None else solve_homogeneous(rp, cs, opts)
    if sol.status == "infeasible":
        return HeteroComparison(
            homogeneous_status="infeasible", homogeneous_cost_per_hour=None,
            homogeneous_devices_by_type={}, homogeneous_services=[], saving_per_hour=None,
            saving_pct=None, exact=status == "optimal", infeasible_because=sol.infeasible_groups,
        )
    by_type: Counter[str] = Counter()
    services = []
    for si, svc in enumerate(rp.problem.services):
        dev: Counter[str] = Counter()
        svc_cost = 0.0
        for c in np.flatnonzero((inst.service == si) & (sol.counts > 0)):
            n = int(sol.counts[c])
            d = n * int(inst.devices[c])
            dev[ROLES[int(inst.role[c])]] += d
            by_type[rp.hardware_names[int(inst.hw[c])]] += d
            svc_cost += n * unit_cost(rp, cs, inst, int(c))
        has_col, has_dis = dev["colocated"] > 0, dev["prefill"] > 0
        services.append(HomogeneousService(
            name=svc.name,
            runtime="mixed" if has_col and has_dis else ("disaggregated" if has_dis else "colocated"),
            prefill_decode_ratio=round(dev["prefill"] / dev["decode"], 4) if has_dis and dev["decode"] else None,
            devices=sum(dev.values()), cost_per_hour=round(svc_cost, 6),
        ))
    h_cost = round(sum(s.cost_per_hour for s in services), 6)
    exact = status == "optimal" and sol.status == "optimal"
    types = {k: by_type[k] for k in sorted(by_type)}
    if rp.problem.objective == "max_throughput":
        gain = 100 * ((scale or 0.0) - sol.scale) / sol.scale if sol.scale else None
        return HeteroComparison(
            homogeneous_status=sol.status, homogeneous_cost_per_hour=h_cost,
            homogeneous_throughput_scale=sol.scale, homogeneous_devices_by_type=types,
            homogeneous_services=services, saving_per_hour=None, saving_pct=None,
            throughput_gain_pct=None if gain is None else round(gain, 4), exact=exact,
            infeasible_because=[],
        )
    saving = round(h_cost - cost, 6)
    return HeteroComparison(
        homogeneous_status=sol.status, homogeneous_cost_per_hour=h_cost,
        homogeneous_devices_by_type=types, homogeneous_services=services, saving_per_hour=saving,
        saving_pct=round(100 * saving / h_cost, 4) if h_cost else 0.0, exact=exact,
        infeasible_because=[],
    )
