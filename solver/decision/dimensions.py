"""The modelling dimensions the plan chose, and what each choice is worth (the record's `choices`).

For every service that may speculate (`services[].speculative`) and, where `search.cp` offers
more than one rank, for context parallelism:

- used: the problem is planned again without the dimension (the service without its
  `speculative:`; `search.cp: [1]` for every service, as the key is the problem's), from
  fresh candidate tables (removing rows from the built ones would not do: dominance pruned
  rows that only the dimension's rows dominated), and the record says what the plan saves
  against that best plan without it (speculation: the service's decode devices, those of its
  decode and colocated pools, and the cost),
  or that nothing is feasible without it. For speculation, the
  acceptance rate below which the plan would stop speculating is found by bisection on
  re-planned problems (BISECT_STEPS halvings of [0, a]): "saves 88% of decode devices at
  acceptance 0.75; below 0.42 it would not pay".
- offered but not used: speculation, the acceptance rate from which the plan would start to
  speculate (bisection on [a, 1]; none when not even a = 1 pays); context parallelism, that it
  was offered.
- a service's prefix cache (`workload.prefix_cache`, an input rather than a choice, but what it
  is worth is as much a part of the decision): the problem planned without it, and the record
  says the prefill devices (prefill and colocated pools) and the cost it saves.

The acceptance rate's validity interval (the same test as the demand and price intervals) is in
solver/decision/validity.py; it re-plans through `with_acceptance` below.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from solver.candidates.table import CandidateSet
from solver.decision.whatif import what_if_plan
from solver.fleet.solve import SolveOptions
from solver.problem.load import ResolvedProblem, resolve
from solver.schema.decision import Choice
from solver.schema.prefix import MAX_HIT_RATE
from solver.schema.result import PlanResult

BISECT_STEPS = 5  # [0, a] halved 5 times: the break-even within a / 32 (0.023 at a = 0.75)


def with_acceptance(rp: ResolvedProblem, si: int, a: float) -> ResolvedProblem:
    """The problem with service si's speculation at acceptance rate a (re-resolved)."""
    svc = rp.problem.services[si]
    spec = svc.speculative.model_copy(update={"acceptance_rate": round(min(max(a, 0.0), 1.0), 6)})
    services = list(rp.problem.services)
    services[si] = svc.model_copy(update={"speculative": spec})
    return replace(resolve(rp.problem.model_copy(update={"services": services}), rp.doc), latency_scale=rp.latency_scale)


def shared_share(rp: ResolvedProblem, si: int) -> float:
    """Service si's shared prefix as a share of its mean prompt: the hit rate it amounts to."""
    wl = rp.problem.services[si].workload
    return min(wl.prefix_cache.shared_prefix_tokens / wl.input_tokens.mean_tokens, 1.0)


def with_hit_rate(rp: ResolvedProblem, si: int, h: float) -> ResolvedProblem:
    """The problem with service si's prefix cache at hit rate h (re-resolved); a shared prefix
    becomes h of the mean prompt (at least one token)."""
    svc = rp.problem.services[si]
    wl = svc.workload
    h = min(max(h, 0.0), MAX_HIT_RATE)
    if wl.prefix_cache.shared_prefix_tokens is not None:
        update = {"shared_prefix_tokens": max(int(round(h * wl.input_tokens.mean_tokens)), 1)}
    else:
        update = {"hit_rate": round(h, 6)}
    pc = wl.prefix_cache.model_copy(update=update)
    services = list(rp.problem.services)
    services[si] = svc.model_copy(update={"workload": wl.model_copy(update={"prefix_cache": pc})})
    return replace(resolve(rp.problem.model_copy(update={"services": services}), rp.doc), latency_scale=rp.latency_scale)


def _without(rp: ResolvedProblem, opts: SolveOptions, *, speculation_of: int | None = None,
             prefix_of: int | None = None) -> PlanResult:
    """The best plan of the problem without service `speculation_of`'s speculation, without
    service `prefix_of`'s prefix cache, or (neither given) without context parallelism."""
    p = rp.problem
    services = list(p.services)
    if speculation_of is not None:
        services[speculation_of] = services[speculation_of].model_copy(update={"speculative": None})
        p = p.model_copy(update={"services": services})
    elif prefix_of is not None:
        svc = services[prefix_of]
        services[prefix_of] = svc.model_copy(update={"workload": svc.workload.model_copy(update={"prefix_cache": None})})
        p = p.model_copy(update={"services": services})
    else:
        p = p.model_copy(update={"search": p.search.model_copy(update={"cp": [1]})})
    return what_if_plan(replace(resolve(p, rp.doc), latency_scale=rp.latency_scale), opts)


def _speculates(doc: PlanResult, si: int) -> bool:
    return doc.status != "infeasible" and any(p.speculative for p in doc.services[si].pools)


def _decode_devices(doc: PlanResult, si: int) -> int:
    """The devices that decode for service si: its decode and colocated pools (both speculate)."""
    return sum(p.devices for p in doc.services[si].pools if p.role in ("decode", "colocated"))


def break_even(rp: ResolvedProblem, si: int, opts: SolveOptions, used: bool) -> float | None:
    """used: the lowest acceptance rate (found) at which the plan still speculates for service
    si; not used: the lowest at which it starts to (None when not even a = 1 pays)."""
    a = rp.problem.services[si].speculative.acceptance_rate

    def pays(x: float) -> bool:
        return _speculates(what_if_plan(with_acceptance(rp, si, x), opts), si)

    lo, hi = (0.0, a) if used else (a, 1.0)
    if not used and not pays(hi):
        return None
    for _ in range(BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if pays(mid) else (mid, hi)
    return math.ceil(hi * 1000.0) / 1000.0  # rounded up: still a rate at which it pays


def _cost_phrase(winner: PlanResult, alt: PlanResult) -> str:
    delta = alt.cost_per_hour - winner.cost_per_hour
    pct = delta / alt.cost_per_hour * 100.0 if alt.cost_per_hour > 0 else 0.0
    return f"${delta:,.2f}/h ({pct:.1f}% of the ${alt.cost_per_hour:,.2f}/h plan without it)"


def _speculation_choice(rp, winner: PlanResult, si: int, opts) -> Choice:
    svc = rp.problem.services[si]
    sp = svc.speculative
    what = f"{sp.method}, {sp.tokens} drafted tokens at acceptance {sp.acceptance_rate:g}"
    if not _speculates(winner, si):
        x = break_even(rp, si, opts, used=False)
        tail = f"it would from acceptance {x:.2f}" if x is not None else "not even at acceptance 1"
        return Choice(dimension="speculation", service=svc.name, used=None, break_even_acceptance=x,
                      effect=f"speculation ({what}) is offered to '{svc.name}' and not used: at its "
                             f"decode batches it does not pay; {tail}")
    alt = _without(rp, opts, speculation_of=si)
    x = break_even(rp, si, opts, used=True)
    if alt.status == "infeasible":
        effect = (f"speculation ({what}) is what meets the SLO of '{svc.name}': without it no plan "
                  "is feasible")
    else:
        d_with, d_without = _decode_devices(winner, si), _decode_devices(alt, si)
        saved = (d_without - d_with) / d_without * 100.0 if d_without else 0.0
        effect = (f"speculation ({what}) saves {saved:.0f}% of the decode devices of '{svc.name}' "
                  f"({d_with} instead of {d_without}) and {_cost_phrase(winner, alt)}")
    return Choice(dimension="speculation", service=svc.name, used=sp.method, break_even_acceptance=x,
                  cost_without_per_hour=alt.cost_per_hour if alt.status != "infeasible" else None,
                  effect=effect + f"; below acceptance {x:.2f} it would not pay")


def _prefill_devices(doc: PlanResult, si: int) -> int:
    return sum(p.devices for p in doc.services[si].pools if p.role in ("prefill", "colocated"))


def _prefix_choice(rp, winner: PlanResult, si: int, opts) -> Choice:
    svc = rp.problem.services[si]
    pc = svc.workload.prefix_cache
    what = (f"a shared prefix of {pc.shared_prefix_tokens} tokens, {shared_share(rp, si):.0%} of the mean prompt"
            if pc.shared_prefix_tokens is not None else f"hit rate {pc.hit_rate:g}")
    alt = _without(rp, opts, prefix_of=si)
    if alt.status == "infeasible":
        effect = f"the prefix cache ({what}) is what meets the SLO of '{svc.name}': without it no plan is feasible"
    else:
        d_with, d_without = _prefill_devices(winner, si), _prefill_devices(alt, si)
        saved = (d_without - d_with) / d_without * 100.0 if d_without else 0.0
        effect = (f"the prefix cache ({what}) saves {saved:.0f}% of the prefill devices of '{svc.name}' "
                  f"({d_with} instead of {d_without}) and {_cost_phrase(winner, alt)}")
    return Choice(dimension="prefix_cache", service=svc.name, used="shared_prefix" if pc.shared_prefix_tokens
                  is not None else "hit_rate", effect=effect,
                  cost_without_per_hour=alt.cost_per_hour if alt.status != "infeasible" else None)


def _cp_choice(rp, winner: PlanResult, si: int, alt: PlanResult | None) -> Choice:
    """`alt`: the best plan with search.cp [1] (None when no service of the plan uses CP)."""
    svc = rp.problem.services[si]
    ranks = sorted({p.cp for p in winner.services[si].pools if p.cp})
    if not ranks or alt is None:
        return Choice(dimension="context_parallelism", service=svc.name, used=None,
                      effect=f"context parallelism (search.cp up to {max(rp.problem.search.cp)}) is "
                             f"offered to '{svc.name}' and not used: it does not lower the cost")
    used = "/".join(f"cp{c}" for c in ranks)
    if alt.status == "infeasible":
        why = f" ({alt.infeasible_because[0]})" if alt.infeasible_because else ""
        effect = (f"context parallelism ({used}) is what meets the SLO of '{svc.name}': with "
                  f"search.cp [1] no plan is feasible{why}")
    else:
        effect = f"context parallelism ({used}) saves {_cost_phrase(winner, alt)}"
    return Choice(dimension="context_parallelism", service=svc.name, used=used, effect=effect,
                  cost_without_per_hour=alt.cost_per_hour if alt.status != "infeasible" else None)


def choices(rp: ResolvedProblem, cs: CandidateSet, winner: PlanResult, opts: SolveOptions) -> list[Choice] | None:
    """The record's `choices`; None when the problem offers no dimension (or has no plan)."""
    offers_cp = int(np.max(rp.problem.search.cp)) > 1
    specs = [si for si, s in enumerate(rp.problem.services) if s.speculative is not None]
    cached = [si for si, s in enumerate(rp.problem.services) if s.workload.prefix_cache is not None]
    if winner.status == "infeasible" or not (offers_cp or specs or cached):
        return None
    out: list[Choice] = []
    uses_cp = any(p.cp for s in winner.services for p in s.pools)
    no_cp = _without(rp, opts) if offers_cp and uses_cp else None
    for si in range(len(rp.problem.services)):
        if offers_cp:
            out.append(_cp_choice(rp, winner, si, no_cp))
        if si in specs:
            out.append(_speculation_choice(rp, winner, si, opts))
        if si in cached:
            out.append(_prefix_choice(rp, winner, si, opts))
    return out
