"""The float recount the plan builder and the verifier share: pools as flow units, what they can
serve (KV routes and sites), the worst loss of a failure domain, and the changes from today's
deployment.

What a service can serve is recomputed here by enumerating cuts of each site's prefill ->
decode network (the fleet model's `routes.max_flow` uses augmenting paths instead), with each
prefill pool's KV reach derived from the cards' scale-out links. Failure domains are enumerated
as an adversary: every way to remove k instances of one hardware type from a service's pools,
and every site. The plan reports these numbers; the verifier's rules (solver/verify/rules/)
check them against the demand.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from typing import NamedTuple

from solver.errors import PlanVerificationError
from solver.problem.load import ResolvedProblem
from solver.schema.fleet import Transition
from solver.schema.result import Pool, ServiceResult

REL_TOL = 1e-6  # documents round values to 4-6 decimals; this covers that rounding only
MAX_CUT_GROUPS = 16  # prefill reach groups per site enumerated (2^16 subsets)


@dataclass(frozen=True)
class Unit:
    """A pool reduced to what serving needs: role, type, site, capacity and KV reach."""

    role: str
    hw: str
    site: str | None
    cap_per_instance: float
    instances: int
    reach: frozenset[str]  # prefill: decode types its KV link is at least as fast to

    @property
    def cap(self) -> float:
        return self.cap_per_instance * self.instances


def _card_link(rp: ResolvedProblem, name: str) -> tuple[float, float]:
    c = rp.hardware[rp.hardware_names.index(name)]
    return c.scale_out.bandwidth_gb_s * c.efficiency.scale_out, c.scale_out.latency_us


def shared_link(rp: ResolvedProblem, p: str, d: str) -> tuple[float, float]:
    """(GB/s per device, latency us) of the KV link from a prefill card to a decode card: the
    card's own scale-out link for the same type, else the slower of the two."""
    bp, lp = _card_link(rp, p)
    if p == d:
        return bp, lp
    bd, ld = _card_link(rp, d)
    return min(bp, bd), max(lp, ld)


def _reach(rp: ResolvedProblem, p: Pool, same_type_only: bool) -> frozenset[str]:
    """The decode types a prefill pool's KV link (its stated one, else its card's) serves."""
    own = _card_link(rp, p.hardware)
    bw = p.kv_link_gb_s if p.kv_link_gb_s is not None else own[0]
    lat = p.kv_link_latency_us if p.kv_link_latency_us is not None else own[1]
    return frozenset(
        d for d in rp.hardware_names
        if (d == p.hardware or not same_type_only)
        and shared_link(rp, p.hardware, d)[0] >= bw * (1 - REL_TOL)
        and shared_link(rp, p.hardware, d)[1] <= lat * (1 + REL_TOL) + 1e-9
    )


def units_of(rp: ResolvedProblem, pools: list[Pool]) -> list[Unit]:
    """The pools as flow units; a prefill pool reaches the decode types its KV link serves (its
    own type only when the problem forbids heterogeneous prefill/decode)."""
    same_type_only = not rp.problem.constraints.heterogeneous_prefill_decode
    out = []
    for p in pools:
        if p.hardware not in rp.hardware_names:
            continue
        reach = _reach(rp, p, same_type_only) if p.role == "prefill" else frozenset()
        out.append(Unit(p.role, p.hardware, p.site, p.capacity_qps_per_instance, p.instances, reach))
    return out


def _site_servable(units: list[Unit]) -> float:
    """Colocated capacity + the max flow from prefill to decode, as the smallest cut."""
    col = sum(u.cap for u in units if u.role == "colocated")
    dec: dict[str, float] = defaultdict(float)
    for u in units:
        if u.role == "decode":
            dec[u.hw] += u.cap
    groups: dict[frozenset[str], float] = defaultdict(float)
    for u in units:
        if u.role == "prefill":
            r = u.reach & frozenset(dec)
            if r:
                groups[r] += u.cap
    keys = sorted(groups, key=sorted)
    if len(keys) > MAX_CUT_GROUPS:
        raise PlanVerificationError(f"{len(keys)} prefill reach groups at one site: too many to verify")
    best = float("inf") if keys else 0.0
    for bits in itertools.product((0, 1), repeat=len(keys)):
        # bits[i] = 1: group i is cut (its capacity counts); otherwise its decode types are cut
        uncut = [g for g, b in zip(keys, bits) if not b]
        need = frozenset().union(*uncut) if uncut else frozenset()
        value = sum(groups[g] for g, b in zip(keys, bits) if b) + sum(dec[d] for d in need)
        best = min(best, value)
    return col + best


def servable(units: list[Unit]) -> float:
    """What a service's pools can serve: the sum over sites."""
    sites = sorted({u.site or "" for u in units})
    return sum(_site_servable([u for u in units if (u.site or "") == k]) for k in sites)


def worst_instance_loss(units: list[Unit], k: int) -> tuple[float, str | None]:
    """The least a service can serve after losing k instances of one hardware type (every way
    to take them from its pools of that type), and the type."""
    worst, which = float("inf"), None
    for hw in sorted({u.hw for u in units}):
        idx = [i for i, u in enumerate(units) if u.hw == hw]
        lose = min(k, sum(units[i].instances for i in idx))
        for taken in itertools.product(*[range(min(units[i].instances, lose) + 1) for i in idx]):
            if sum(taken) != lose:
                continue
            left = list(units)
            for i, t in zip(idx, taken):
                left[i] = replace(units[i], instances=units[i].instances - t)
            v = servable(left)
            if v < worst:
                worst, which = v, hw
    return (worst, which) if which is not None else (servable(units), None)


def worst_site_loss(units: list[Unit], sites: tuple[str, ...]) -> tuple[float, str | None]:
    """The least a service can serve after losing one whole site, and the site."""
    worst, which = float("inf"), None
    for k in sites:
        v = servable([u for u in units if u.site != k])
        if v < worst:
            worst, which = v, k
    return worst, which


class ChangeCounts(NamedTuple):
    """What going from the current deployment to a plan changes (solver/plan/transition.py
    states the rules)."""

    moved: int  # devices that start serving another (service, role, site)
    resharded: int  # instances in a layout the current deployment does not run
    drained_device_hours: float
    drained_usd: float


def change_counts(rp: ResolvedProblem, tr: Transition, services: list[ServiceResult]) -> ChangeCounts:
    """The changes from the problem's current deployment to the plan's `services`."""
    cur_layout: Counter[tuple] = Counter()
    cur_group: Counter[tuple] = Counter()
    for cp in rp.problem.current or []:
        hw = rp.hardware_names[rp.hw_index(cp.hardware)]
        cur_layout[(cp.service, cp.role, cp.site, hw, cp.tp, cp.pp, cp.ep, cp.dp)] += cp.instances
        cur_group[(cp.service, cp.role, cp.site, hw)] += cp.instances * cp.devices_per_instance
    moved = resharded = 0
    drained_dev_h = drained_usd = 0.0
    new_layout: Counter[tuple] = Counter()
    new_group: Counter[tuple] = Counter()
    unit: dict[tuple, tuple[int, float]] = {}
    for s in services:
        for p in s.pools:
            key = (s.name, p.role, p.site, p.hardware, p.tp, p.pp, p.ep, p.dp)
            new_layout[key] += p.instances
            new_group[key[:4]] += p.devices
            unit[key] = (p.devices_per_instance, p.cost_per_hour / p.instances)
    for key, n in sorted(new_layout.items(), key=str):
        extra = max(0, n - cur_layout[key])
        resharded += extra
        drained_dev_h += extra * unit[key][0] * tr.drained_hours_per_change
        drained_usd += extra * unit[key][1] * tr.drained_hours_per_change
    for g, n in sorted(new_group.items(), key=str):
        moved += max(0, n - cur_group[g])
    return ChangeCounts(moved, resharded, drained_dev_h, drained_usd)
