"""Failure domains in the CP-SAT fleet model: the fleet must still serve every service's demand
after losing one whole site, or after losing the k largest instances of any one hardware type.
Each failure is a separate scenario (they are not assumed to happen together).

The minimal cuts of each site's network are derived in solver/fleet/cuts.py: servable_k(n), the
most s can serve at site k, is the smallest cut capacity sum_{c in Q} cap_c n_c.

The model's shares col[s,k] + dis[s,k] are bounded by the site's flow and may be as large as it,
so they stand for servable_k wherever more capacity only helps (all uses below).

Losing a site. Losing site k leaves the other sites' capacity, so the scenario holds exactly
when, for every site k the service may use,

    sum_{k' != k} (col[s,k'] + dis[s,k']) >= demand_s.

Losing the k largest instances of type t. The adversary removes K instances of type t (any
pools, any services); services do not share instances, so it is enough that each service
survives the worst K losses among its own type-t instances, and those are the largest ones in
the sense that hurt it most. Capacity after losses ell (0 <= ell_c <= n_c, type t only,
sum ell_c = K, split over sites as j_k) is sum_k servable_k(n - ell). Since a min-cut is linear
in the capacities and the adversary minimises,

    worst = min over splits (j_k), sum_k j_k = K, of sum_k V_k(j_k),
    V_k(j) = min over cuts Q at k of [ cap_Q(n) - top_j(Q) ],

where top_j(Q) is the capacity of the j largest type-t instances among Q's columns (the
adversary puts all j losses inside the cut it attacks). V_k(0) is servable_k (the share).

Linearising top_j exactly. The sum of the j largest of a multiset x_i is
top_j = min over u of [ j u + sum_i max(0, x_i - u) ], minimised at u = the j-th largest value
(or 0 when there are fewer than j items), so

    cap_Q(n) - top_j(Q) = max over u in {0} U {cap_c : c in Q, type t}
                          of  sum_{c in Q} n_c * cap'_c(u) - j u,
    cap'_c(u) = min(cap_c, u) for type-t columns, cap_c otherwise.

A variable w[k,j] <= V_k(j) therefore needs, for every cut Q, one true choice of u: a boolean
per candidate u enforcing  w + j u <= sum n_c cap'_c(u),  and at least one boolean true (every
u gives a valid lower bound on the max, and the maximising u makes it tight). For j = 1 the
largest instance is simply the largest used column, so no new booleans are needed: for every
type-t column c of Q,  w + cap_c * used_c <= cap_Q(n)  (used_c is true exactly when n_c >= 1).
Then, for every split of K over the sites where the service has type-t columns,

    sum_{k: j_k = 0} share_k + sum_{k: j_k > 0} w[k, j_k] >= demand_s.

Both directions hold: a plan meeting these rows survives every loss (w <= V), and a plan that
survives every loss satisfies them with w = V. Tests: tests/fleet/test_fleet_survive.py compares the
optimum with a brute force that enumerates every loss of every candidate plan.
"""

from __future__ import annotations

import itertools

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet import integerize as ints
from solver.fleet.cuts import site_cuts
from solver.fleet.model import FleetModel


def splits(total: int, parts: int) -> list[tuple[int, ...]]:
    """Every way to write `total` as an ordered sum of `parts` non-negative integers."""
    out = []
    for bars in itertools.combinations(range(total + parts - 1), parts - 1):
        prev, cut = -1, []
        for b in bars + (total + parts - 1,):
            cut.append(b - prev - 1)
            prev = b
        out.append(tuple(cut))
    return out


def post_lose_site(fm: FleetModel) -> None:
    inst = fm.inst
    if not inst.lose_site or inst.n_sites < 2:
        return
    for s, spec in enumerate(inst.services):
        key = f"survive_site:{spec.name}"
        if not fm.group(key, f"serving '{spec.name}' after losing any one site"):
            continue
        for k in range(inst.n_sites):
            if not inst.allowed(s, k):
                continue  # losing a site the service may not use changes nothing for it
            rest = [fm.share(s, j) for j in range(inst.n_sites) if j != k]
            fm.covers(key, sum(rest), s)


def post_lose_instances(fm: FleetModel) -> None:
    inst = fm.inst
    if inst.lose_instances <= 0:
        return
    for s in range(len(inst.services)):
        for t in sorted({int(h) for h in inst.hw[inst.service == s]}):
            _survive_instances(fm, s, t, inst.lose_instances)


def _survive_instances(fm: FleetModel, s: int, t: int, K: int) -> None:
    """Service s still covers its demand after losing its K largest type-t instances, for every
    split of the K losses over the sites where it has type-t columns."""
    inst = fm.inst
    name, spec = inst.hw_names[t], inst.services[s]
    key = f"survive_instances:{spec.name}:{name}"
    text = f"serving '{spec.name}' after losing its {K} largest {name} instance{'s' * (K > 1)}"
    if not fm.group(key, text):
        return
    mine = (inst.service == s) & (inst.hw == t)
    sites = [k for k in range(inst.n_sites) if (mine & (inst.site == k)).any()]
    w = {(k, j): _worst_capacity(fm, s, t, k, j) for k in sites for j in range(1, K + 1)}
    for split in splits(K, len(sites)):
        lost = dict(zip(sites, split))
        terms = [w[k, lost[k]] if lost.get(k, 0) > 0 else fm.share(s, k) for k in range(inst.n_sites)]
        fm.covers(key, sum(terms), s)


def _worst_capacity(fm: FleetModel, s: int, t: int, k: int, j: int):
    """A variable w with w <= V_k(j): what service s can still serve at site k after losing
    its j largest type-t instances there (the worst over the site's cuts)."""
    inst, m = fm.inst, fm.m
    w = m.new_int_var(0, fm.v.top, f"survive[{s},{t},{k},{j}]")
    fm.v.extra.append(w)
    for q in site_cuts(inst, s, k):
        cap_q = fm.row_sum(q, inst.cap, "survive")
        qt = q[inst.hw[q] == t]
        if qt.size == 0:
            m.add(w <= cap_q)
        elif j == 1:  # the largest instance is the largest used column
            for c in qt:
                m.add(w + int(inst.cap[c]) * fm.v.used[int(c)] <= cap_q)
        else:
            _top_j_rows(fm, w, q, qt, t, j, f"{s},{t},{k},{j}")
    return w


def _top_j_rows(fm: FleetModel, w, q: np.ndarray, qt: np.ndarray, t: int, j: int, tag: str) -> None:
    """w + j u <= sum_c n_c cap'_c(u) for one true choice of u among 0 and the type-t
    capacities of cut q (the linearisation of cap_Q - top_j above)."""
    inst, m = fm.inst, fm.m
    choices = []
    for u in sorted({0} | {int(inst.cap[c]) for c in qt}):
        coeff = np.where(inst.hw[q] == t, np.minimum(inst.cap[q], u), inst.cap[q])
        ints.check_row(coeff, inst.ub[q], "survive")
        b = m.new_bool_var(f"survive_u[{tag},{u}]")
        fm.v.extra.append(b)
        expr = cp_model.LinearExpr.weighted_sum([fm.v.n[int(c)] for c in q], coeff.tolist())
        m.add(w + j * u <= expr).only_enforce_if(b)
        choices.append(b)
    m.add_bool_or(choices)
