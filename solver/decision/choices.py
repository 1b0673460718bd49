"""Runners-up of the choices beyond parallelism: what the winner's power caps and precisions
are worth. Each re-plans the problem with one choice taken away (the candidate tables are
built once; `alternatives.without` drops rows):

- power_cap: every row below the highest cap its type offers (its full power, usually);
- precision: per service that lists several weight precisions, the rows of the precision the
  winner's pools use most (the next best precision).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from solver.candidates.table import CandidateSet
from solver.problem.load import ResolvedProblem
from solver.schema.cards import PRECISIONS
from solver.schema.decision import Alternative
from solver.schema.result import PlanResult

Make = Callable[[str, str, CandidateSet], Alternative]  # (kind, excluded, candidates) -> runner-up


def _below_full_power(rp: ResolvedProblem, cs: CandidateSet) -> np.ndarray:
    t = cs.table
    full = np.array([max(rp.caps_of(j)) for j in range(len(rp.hardware))])
    return np.isfinite(t.power_cap_w) & (t.power_cap_w < full[t.hw])


def choice_runners_up(rp: ResolvedProblem, cs: CandidateSet, winner: PlanResult, make: Make,
                      without) -> list[Alternative]:
    """The power-cap and precision runners-up the winner's choices call for (none when the
    problem offers no such choice or the winner did not use it)."""
    out: list[Alternative] = []
    t = cs.table
    pools = [p for s in winner.services for p in s.pools]
    capped = [p for p in pools if p.power_cap_w is not None
              and p.power_cap_w < max(rp.caps_of(rp.hw_index(p.hardware)))]
    if capped:
        caps = ", ".join(sorted({f"{p.hardware} at {p.power_cap_w:g} W" for p in capped}))
        drop = _below_full_power(rp, cs)
        out.append(make("power_cap", f"power caps below the highest offered ({caps})",
                        without(cs, drop, "power caps below the highest offered")))
    for si, svc in enumerate(rp.problem.services):
        if len(svc.precisions) < 2:
            continue
        used = Counter(p.precision for p in winner.services[si].pools)
        if not used:
            continue
        prec = used.most_common(1)[0][0]
        drop = (t.service == si) & (t.wprec == PRECISIONS.index(prec))
        out.append(make("precision", f"{prec} weights for '{svc.name}'",
                        without(cs, drop, f"no {prec} weights")))
    return out
