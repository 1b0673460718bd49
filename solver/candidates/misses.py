"""Why a (service, role) has no candidate: the closest miss per hardware type, in words."""

from __future__ import annotations

import numpy as np

from solver.perf.tables import Plans
from solver.schema.roles import COLOCATED, DECODE, PREFILL, ROLES


def fmt_plan(p: Plans, j: int, chunk: int) -> str:
    s = f"tp{p.tp[j]} pp{p.pp[j]}"
    if p.ep[j] > 1 or p.dp[j] > 1:
        s += f" ep{p.ep[j]} dp{p.dp[j]}"
    if p.cp[j] > 1:
        s += f" cp{p.cp[j]}"
    if p.spec[j]:
        s += " speculative"
    s += f" batch {int(p.batch[j])}"
    if chunk:
        s += f" chunk {chunk}"
    return s


def miss_messages(rp, s, arch, hw, role, plans, chunks, m, valid, topo_ok) -> list[str]:
    """Explain an empty (service, role): the closest miss per hardware type."""
    what = f"{ROLES[role]} configuration of {arch.name} for service '{s.name}'"
    if not valid.any():
        return [f"no valid {what} in the search space (check search.tp/pp/ep/dp against the model)"]
    base = valid & topo_ok
    if not base.any():
        return [f"no {what} can be placed: every instance needs more devices than the supply"]
    out: list[str] = []
    margin = rp.problem.constraints.safety_margin
    mtxt = f" with the {margin:.0%} safety margin" if margin else ""
    for h in range(len(hw)):
        on = base & (plans.hw == h)
        if not on.any():
            continue
        hname = hw.names[h]
        fits = on & m.fits
        if not fits.any():
            j = int(np.flatnonzero(on)[np.argmin(m.memory.total_gib[on])])
            out.append(
                f"no {what} fits in memory on {hname}: the smallest needs "
                f"{m.memory.total_gib[j]:.1f} GiB per device at {fmt_plan(plans, j, int(chunks[j]))} "
                f"(usable {m.memory.capacity[j] / 2**30:.1f} GiB)"
            )
            continue
        checks = []
        if s.slo.ttft_ms and role in (COLOCATED, PREFILL):
            checks += [("TTFT p50", m.ttft_p50_ms, s.slo.ttft_ms.p50), ("TTFT p99", m.ttft_p99_ms, s.slo.ttft_ms.p99)]
        if s.slo.tpot_ms and role in (COLOCATED, DECODE):
            checks += [("TPOT p50", m.tpot_p50_ms, s.slo.tpot_ms.p50), ("TPOT p99", m.tpot_p99_ms, s.slo.tpot_ms.p99)]
        reported = False
        for label, vals, bound in checks:
            if bound is None:
                continue
            v = np.where(fits, np.nan_to_num(vals, nan=np.inf), np.inf)
            j = int(np.argmin(v))
            if v[j] * (1 + margin) > bound:
                out.append(
                    f"no {what} on {hname} meets {label} {bound:g} ms{mtxt}; the fastest is "
                    f"{v[j]:.0f} ms at {fmt_plan(plans, j, int(chunks[j]))}"
                )
                reported = True
        if not reported:
            out.append(
                f"no {what} on {hname} meets every SLO bound at once (each bound alone is "
                f"reachable, not together{mtxt})"
            )
    return out
