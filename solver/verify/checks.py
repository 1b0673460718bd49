"""Independent re-check of a plan document against the problem, in plain floats: the
verifier as a specification.

This step does not import the fleet model: it recounts capacity, cost, power, supply use,
ratios and SLO margins from the result document and the problem (prices and supplies from the
resolved cards) and lists every violation. Each rule is one named check in solver/verify/rules/;
`CHECKS` runs them in order over one recount of the document (solver/verify/tally.py). `plan`
refuses to print a plan that fails here.
"""

from __future__ import annotations

from typing import Callable

from solver.errors import PlanVerificationError
from solver.problem.load import ResolvedProblem
from solver.schema.result import PlanResult
from solver.verify.rules.capacity import (
    check_demand_served,
    check_headroom,
    check_kv_routes,
    check_ratio,
    check_survive,
)
from solver.verify.rules.comparisons import check_heterogeneity, check_transition
from solver.verify.rules.fleet import (
    check_budget,
    check_listing,
    check_objective,
    check_power,
    check_sites,
    check_supply,
    check_totals,
)
from solver.verify.rules.pools import (
    check_distinct_configs,
    check_memory,
    check_pool_arithmetic,
    check_runtime,
    check_slo,
)
from solver.verify.tally import Tally, tally

Check = Callable[[ResolvedProblem, PlanResult, Tally], list[str]]

CHECKS: tuple[Check, ...] = (
    check_listing,  # the problem's services; a positive throughput scale
    check_pool_arithmetic,  # known hardware; devices, capacity and cost follow from instances
    check_sites,  # pools at the problem's sites and their pins; the sites summary
    check_runtime,  # runtime pins; the reported runtime
    check_slo,  # SLO per pool, with the safety margin
    check_memory,  # memory per device
    check_kv_routes,
    check_survive,  # failure domains
    check_demand_served,
    check_headroom,  # the stated traffic headroom
    check_ratio,  # P:D
    check_distinct_configs,
    check_supply,
    check_power,
    check_heterogeneity,
    check_transition,
    check_budget,
    check_objective,
    check_totals,
)


def check_infeasible(doc: PlanResult) -> list[str]:
    """An infeasible result lists no pools (and nothing else is checked)."""
    return ["an infeasible result lists pools"] if doc.services or doc.total_devices else []


def violations(rp: ResolvedProblem, doc: PlanResult, compared: bool = True) -> list[str]:
    """Every rule the document breaks, in the order of `CHECKS`. `compared=False`: the caller
    did not solve the homogeneous comparison, so its absence is not a violation."""
    if doc.status == "infeasible":
        return check_infeasible(doc)
    t = tally(rp, doc, compared)
    return [v for check in CHECKS for v in check(rp, doc, t)]


def verify(rp: ResolvedProblem, doc: PlanResult, compared: bool = True) -> None:
    """Raise when the plan breaks any rule. `compared=False`: the caller asked `plan` not
    to solve the homogeneous comparison, so its absence is not a violation."""
    bad = violations(rp, doc, compared)
    if bad:
        raise PlanVerificationError(
            "the solved plan failed independent verification (a fleetplan bug; nothing printed):\n  "
            + "\n  ".join(bad)
        )
