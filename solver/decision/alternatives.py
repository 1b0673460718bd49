"""Runners-up and the fallback: plans of another structure than the winner's, solved again.

Runners-up re-plan the same problem with one part of the winner's structure excluded from the
candidate tables (the tables are built once; excluding rows never changes another row):

- device_type: every candidate on the device type the winner uses most;
- runtime: the winner's runtime (colocated or disaggregated) for services free to choose;
- parallelism: the winner's exact pool configurations (hardware, tp, pp, ep, dp, batch).

The fallback is a fresh plan of a narrowed problem: only the most available device type (the
largest supply; unlimited counts as largest), at most one configuration per service and role,
and a safety margin of at least the error band, so that it meets every SLO at the band's upper
edge.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import replace
from typing import Sequence

import numpy as np

from solver.candidates.table import CandidateSet
from solver.decision.bands import error_band
from solver.decision.choices import choice_runners_up
from solver.decision.whatif import what_if_plan
from solver.errors import FleetplanError
from solver.fleet.solve import SolveOptions
from solver.problem.load import ResolvedProblem, resolve
from solver.schema.decision import Alternative, Fallback
from solver.schema.pool import pool_phrase
from solver.schema.problem import Problem
from solver.schema.result import PlanResult
from solver.schema.roles import COLOCATED, DECODE, PREFILL, ROLES

MAX_DEVICE_TYPE_RUNNERS = 2


def pools_summary(doc: PlanResult) -> str:
    """A plan's pools in one line (`pool_phrase` each), or why it is infeasible."""
    if doc.status == "infeasible":
        return "infeasible: " + "; ".join(doc.infeasible_because[:3])
    return "; ".join(pool_phrase(p, s.name) for s in doc.services for p in s.pools)


def without(cs: CandidateSet, drop: np.ndarray, why: str, services: Sequence[str] = ()) -> CandidateSet:
    """The candidate set less the rows in `drop`; a (service, role) left empty says why, naming
    the service by its name in `services` (the problem's services, in order)."""
    t = cs.table
    keep = np.flatnonzero(~drop)
    misses = dict(cs.misses)
    for si, roles in cs.roles.items():
        for role in roles:
            had = bool(((t.service == si) & (t.role == role)).any())
            left = bool(((t.service[keep] == si) & (t.role[keep] == role)).any())
            if had and not left:
                name = f"'{services[si]}'" if si < len(services) else str(si)
                misses[(si, role)] = [f"{ROLES[role]} candidates of service {name} excluded: {why}"]
    return dataclasses.replace(cs, table=t.take(keep), misses=misses)


def _winner_rows(cs: CandidateSet, winner: PlanResult, rp: ResolvedProblem) -> np.ndarray:
    """Mask of the candidate rows the winner's pools use."""
    t = cs.table
    names = list(rp.hardware_names)
    mask = np.zeros(len(t), dtype=bool)
    for si, svc in enumerate(winner.services):
        for p in svc.pools:
            mask |= ((t.service == si) & (t.role == ROLES.index(p.role)) & (t.hw == names.index(p.hardware))
                     & (t.tp == p.tp) & (t.pp == p.pp) & (t.ep == p.ep) & (t.dp == p.dp)
                     & (t.batch == p.batch) & (t.chunk == (p.chunk_tokens or 0))
                     & (t.cp == (p.cp or 1)) & (t.spec == int(p.speculative is not None)))
    return mask


def only_configurations(cs: CandidateSet, winner: PlanResult, rp: ResolvedProblem) -> CandidateSet:
    """The candidate set restricted to the winner's configurations."""
    return without(cs, ~_winner_rows(cs, winner, rp), "not one of the plan's configurations", _names(rp))


def _names(rp: ResolvedProblem) -> list[str]:
    return [s.name for s in rp.problem.services]


def _alternative(kind, excluded, rp, cs, opts, winner: PlanResult) -> Alternative:
    doc = what_if_plan(rp, opts, candidates=cs)
    feasible = doc.status != "infeasible"
    cost = doc.cost_per_hour if feasible else None
    alt = Alternative(
        kind=kind, excluded=excluded, status=doc.status, cost_per_hour=cost,
        delta_cost_per_hour=round(cost - winner.cost_per_hour, 6) if cost is not None else None,
        delta_cost_pct=(round((cost - winner.cost_per_hour) / winner.cost_per_hour * 100.0, 3)
                        if cost is not None and winner.cost_per_hour > 0 else None),
        devices_by_type=doc.devices_by_type, summary=pools_summary(doc),
    )
    if rp.problem.objective == "max_throughput" and feasible and winner.throughput_scale:
        scale = doc.throughput_scale or 0.0
        alt = alt.model_copy(update={
            "throughput_scale": scale,
            "delta_throughput_pct": round((scale - winner.throughput_scale) / winner.throughput_scale * 100.0, 3),
        })
    return alt


def runners_up(rp: ResolvedProblem, cs: CandidateSet, winner: PlanResult, opts: SolveOptions) -> list[Alternative]:
    if winner.status == "infeasible":
        return []
    t = cs.table
    names = list(rp.hardware_names)
    services = _names(rp)
    out: list[Alternative] = []
    used = Counter(winner.devices_by_type)
    for hw_name, _ in used.most_common(MAX_DEVICE_TYPE_RUNNERS):
        if len(names) < 2:
            break
        drop = t.hw == names.index(hw_name)
        out.append(_alternative("device_type", f"every {hw_name} candidate", rp,
                                without(cs, drop, f"no {hw_name}", services), opts, winner))
    free = [si for si, s in enumerate(rp.problem.services) if s.runtime == "auto"]
    if free:
        disagg = {si for si in free if winner.services[si].runtime != "colocated"}
        coloc = set(free) - disagg
        drop = np.zeros(len(t), dtype=bool)
        for si in disagg:
            drop |= (t.service == si) & ((t.role == PREFILL) | (t.role == DECODE))
        for si in coloc:
            drop |= (t.service == si) & (t.role == COLOCATED)
        what = ", ".join(
            [f"disaggregated for '{rp.problem.services[si].name}'" for si in sorted(disagg)]
            + [f"colocated for '{rp.problem.services[si].name}'" for si in sorted(coloc)]
        )
        out.append(_alternative("runtime", what, rp, without(cs, drop, "the winner's runtime", services),
                                opts, winner))
    out.append(_alternative("parallelism", "the winner's pool configurations", rp,
                            without(cs, _winner_rows(cs, winner, rp), "the winner's configuration", services),
                            opts, winner))
    return out + choice_runners_up(
        rp, cs, winner, lambda kind, what, c: _alternative(kind, what, rp, c, opts, winner),
        lambda c, drop, why: without(c, drop, why, services))


def _supply(rp: ResolvedProblem, j: int) -> float:
    """Devices of type j available in all (None: unlimited), over the sites when there are any."""
    if rp.site_names:
        per_site = [rp.site_supplies[k][j] for k in range(len(rp.site_names))]
        return float("inf") if any(x is None for x in per_site) else float(sum(per_site))
    return float("inf") if rp.supplies[j] is None else float(rp.supplies[j])


def _most_available(rp: ResolvedProblem, winner: PlanResult) -> tuple[int, str]:
    def key(j: int):
        return (_supply(rp, j), winner.devices_by_type.get(rp.hardware_names[j], 0), -rp.prices[j])
    j = max(range(len(rp.hardware)), key=key)
    supply = _supply(rp, j)
    why = "unlimited supply" if supply == float("inf") else f"largest supply ({supply:.0f} devices)"
    return j, why


def _narrowed(problem: Problem, name: str, j: int, margin: float) -> Problem:
    """The problem on hardware entry j only (and the sites that have it), one configuration per
    service and role, with the given safety margin."""
    update: dict = {
        "hardware": [problem.hardware[j]],
        "constraints": problem.constraints.model_copy(update={"safety_margin": round(margin, 4)}),
        "search": problem.search.model_copy(update={"max_distinct_configs": 1}),
    }
    if problem.sites:
        sites = [site.model_copy(update={"hardware": [h for h in site.hardware if h.type == name]})
                 for site in problem.sites]
        kept = [site for site in sites if site.hardware]
        names = {site.name for site in kept}
        update["sites"] = kept
        services = []
        for svc in problem.services:
            if svc.sites is not None:
                pins = [x for x in svc.sites if x in names]
                if not pins:
                    raise ValueError(f"service '{svc.name}' is pinned to sites without {name}")
                svc = svc.model_copy(update={"sites": pins})
            services.append(svc)
        update["services"] = services
    return problem.model_copy(update=update)


def fallback(rp: ResolvedProblem, winner: PlanResult, opts: SolveOptions) -> Fallback:
    j, why = _most_available(rp, winner)
    name = rp.hardware_names[j]
    engine = rp.problem.software.engine
    user = rp.calibration_file.calibration if rp.calibration_file is not None else None
    band = max(max(b.ttft_pct, b.tpot_pct)
               for b in (error_band(engine, name, a.moe_layers > 0, m.name, user)
                         for a, m in zip(rp.archs, rp.models))) / 100.0
    margin = max(rp.problem.constraints.safety_margin, band)
    try:
        narrowed = replace(resolve(_narrowed(rp.problem, name, j, margin), rp.doc), latency_scale=rp.latency_scale)
    except (ValueError, FleetplanError) as exc:  # the narrowed problem cannot be stated
        return Fallback(hardware=name, why=why, safety_margin=round(margin, 4), status="infeasible",
                        cost_per_hour=None, delta_cost_pct=None, devices_by_type={}, pools=[],
                        infeasible_because=[str(exc)])
    doc = what_if_plan(narrowed, opts)
    pools = [p for s in doc.services for p in s.pools]
    feasible = doc.status != "infeasible"
    cost = doc.cost_per_hour if feasible else None
    return Fallback(
        hardware=name, why=why, safety_margin=round(margin, 4), status=doc.status,
        cost_per_hour=cost,
        delta_cost_pct=(round((cost - winner.cost_per_hour) / winner.cost_per_hour * 100.0, 3)
                        if cost is not None and winner.cost_per_hour > 0 else None),
        devices_by_type=doc.devices_by_type, pools=pools,
        services=[s.name for s in doc.services for _ in s.pools],
        infeasible_because=list(doc.infeasible_because),
    )
