"""Sites, KV reach and failure domains in the CP-SAT model equal a brute force.

`FleetInstance`s are generated directly (integer columns, no performance model): 1-2 services,
1-2 sites, 1-2 hardware types, up to 6 columns of the three roles, prefill columns that reach
some decode types, per-site supplies and power caps, service pins, and the failure domains
`lose_instances` (1 or 2) and `lose_site`. The brute force restates the semantics in plain
Python, without cuts or thresholds:

- a service serves, at each site it may use, its colocated capacity plus the maximum flow from
  its prefill columns to the decode columns of the types they reach (augmenting paths,
  solver/fleet/routes.py), summed over sites;
- it must serve its demand; with `lose_site`, also after removing every column of any one site;
- with `lose_instances = K`, also after every way of removing K instances of one hardware type
  from its columns (each vector ell with 0 <= ell <= n over its type-t columns, sum = K, or all
  of them when it has fewer);
- supplies (global and per site), power caps (global and per site) and the budget hold.

Count vectors are tried in order of cost; the first feasible one is the optimum, which CP-SAT's
cost stage must equal (fleet/survive.py documents the exact formulation being checked).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.fleet import routes
from solver.fleet.cuts import disaggregated_cuts, site_cuts
from solver.fleet.instance import FleetInstance, ServiceSpec
from solver.fleet.solve import SolveOptions, solve
from solver.fleet.survive import splits
from solver.schema.roles import COLOCATED, DECODE, PREFILL

OPTS = SolveOptions(time_limit_s=20, tiebreak_work=5, max_stages=1)
MAX_COMBOS = 4000


# ---- the brute force ---------------------------------------------------------------------------


def servable(inst: FleetInstance, n: np.ndarray, s: int, sites: list[int] | None = None) -> int:
    total = 0
    for k in range(inst.n_sites) if sites is None else sites:
        if not inst.allowed(s, k):
            continue
        at = (inst.service == s) & (inst.site == k) & (n > 0)
        total += int(sum(inst.cap[c] * n[c] for c in np.flatnonzero(at & (inst.role == COLOCATED))))
        dec = np.flatnonzero(at & (inst.role == DECODE))
        decode = {int(d): int(sum(inst.cap[c] * n[c] for c in dec if inst.hw[c] == d))
                  for d in set(inst.hw[dec].tolist())}
        groups = [routes.Group(int(inst.hw[c]), tuple(d for d in decode if inst.reach[c, d]),
                               float(inst.cap[c] * n[c]))
                  for c in np.flatnonzero(at & (inst.role == PREFILL))]
        total += int(round(routes.max_flow(groups, {d: float(v) for d, v in decode.items()})))
    return total


def losses(n: np.ndarray, cols: np.ndarray, k: int):
    """Every way to remove min(k, instances) instances from `cols`."""
    lose = min(k, int(n[cols].sum()))
    for taken in itertools.product(*[range(min(int(n[c]), lose) + 1) for c in cols]):
        if sum(taken) == lose:
            yield taken


def within_limits(inst: FleetInstance, n: np.ndarray) -> bool:
    """Bounds, supply, power and budget, fleet-wide and per site."""
    usage = [(inst.hw == h, inst.devices, sup) for h, sup in enumerate(inst.supply)]
    for k in range(len(inst.site_names)):
        at = inst.site == k
        usage += [(at & (inst.hw == h), inst.devices, sup) for h, sup in enumerate(inst.site_supply[k])]
        usage.append((at, inst.power, inst.site_power_cap[k]))
    usage += [(inst.service >= 0, inst.power, inst.power_cap), (inst.service >= 0, inst.cost, inst.budget)]
    over = any(lim is not None and int(n[on] @ per[on]) > lim for on, per, lim in usage)
    return not (np.any(n > inst.ub) or over)


def survives(inst: FleetInstance, n: np.ndarray, s: int) -> bool:
    """Service s serves its demand as planned, after losing any one site it may use, and after
    losing its lose_instances largest instances of any one type."""
    demand = inst.services[s].demand
    if servable(inst, n, s) < demand:
        return False
    if inst.lose_site and any(inst.allowed(s, k) and servable(inst, n, s, [j for j in range(inst.n_sites) if j != k])
                              < demand for k in range(inst.n_sites)):
        return False
    for t in set(inst.hw[inst.service == s].tolist()) if inst.lose_instances else ():
        cols = np.flatnonzero((inst.service == s) & (inst.hw == t))
        for taken in losses(n, cols, inst.lose_instances):
            left = n.copy()
            left[cols] -= np.array(taken, dtype=np.int64)
            if servable(inst, left, s) < demand:
                return False
    return True


def feasible(inst: FleetInstance, n: np.ndarray) -> bool:
    return within_limits(inst, n) and all(survives(inst, n, s) for s in range(len(inst.services)))


def brute_force(inst: FleetInstance) -> int | None:
    """The least cost of a feasible count vector, or None."""
    vectors = np.array(list(itertools.product(*[range(int(u) + 1) for u in inst.ub])),
                       dtype=np.int64).reshape(-1, len(inst.ub))
    costs = vectors @ inst.cost
    for i in np.argsort(costs, kind="stable"):
        if feasible(inst, vectors[i]):
            return int(costs[i])
    return None


def check(inst: FleetInstance) -> tuple[int | None, object]:
    bf = brute_force(inst)
    sol = solve(inst, OPTS)
    if bf is None:
        assert sol.status == "infeasible", f"CP-SAT found {sol.counts.tolist()}; brute force: none"
        return bf, sol
    assert sol.status == "optimal", (bf, sol.status, sol.infeasible_groups)
    assert feasible(inst, sol.counts), f"CP-SAT's {sol.counts.tolist()} fails the brute-force rules"
    assert int(sol.counts @ inst.cost) == bf, (sol.counts.tolist(), bf)
    return bf, sol


# ---- instances ----------------------------------------------------------------------------------


def make(service, role, hw, site, devices, cap, cost, ub, specs, *, n_hw, site_supply=(),
         site_power=(), supply=None, power=None, reach=None, lose_instances=0, lose_site=False,
         budget=None) -> FleetInstance:
    a = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    n = len(service)
    return FleetInstance(
        objective="min_cost", service=a(service), role=a(role), hw=a(hw), devices=a(devices),
        cap=a(cap), cost=a(cost), power=a(power if power is not None else [1] * n), ub=a(ub),
        demand_ub=a(ub), services=tuple(specs), hw_names=tuple(f"hw{h}" for h in range(n_hw)),
        supply=tuple(supply if supply is not None else [None] * n_hw), budget=budget,
        power_cap=None, site=a(site),
        reach=None if reach is None else np.asarray(reach, dtype=bool),
        site_names=tuple(f"site{k}" for k in range(len(site_supply))),
        site_supply=tuple(site_supply), site_power_cap=tuple(site_power),
        lose_instances=lose_instances, lose_site=lose_site,
    )


def spec(name="svc", demand=10, colocated=True, disaggregated=True, sites=None) -> ServiceSpec:
    return ServiceSpec(name, demand, colocated, disaggregated, None, None, None, sites)


@st.composite
def instances(draw, lose_instances: int | None = None, lose_site: bool | None = None,
              mixed: bool = False) -> FleetInstance:
    """mixed: two hardware types and prefill and decode columns of both (heterogeneity)."""
    n_services = draw(st.integers(1, 2))
    n_sites = 2 if lose_site else draw(st.integers(1, 2))
    n_hw = 2 if mixed else draw(st.integers(1, 2))
    service, role, hw, site = [], [], [], []
    for s in range(n_services):  # a usable runtime first (at every site when losing one)
        for k in range(n_sites) if lose_site else [draw(st.integers(0, n_sites - 1))]:
            if draw(st.booleans()):
                service.append(s), role.append(COLOCATED), hw.append(draw(st.integers(0, n_hw - 1))), site.append(k)
            else:
                for r in (PREFILL, DECODE):
                    service.append(s), role.append(r), hw.append(draw(st.integers(0, n_hw - 1))), site.append(k)
    if mixed:  # prefill and decode on both types for the first service
        for r, h in ((PREFILL, 0), (PREFILL, 1), (DECODE, 0), (DECODE, 1)):
            service.append(0), role.append(r), hw.append(h), site.append(site[0])
    most = 5 if lose_instances == 2 else 6
    n_cols = draw(st.integers(len(service), max(len(service), min(most, len(service) + 3))))
    while len(service) < n_cols:
        service.append(draw(st.integers(0, n_services - 1)))
        role.append(draw(st.sampled_from([COLOCATED, PREFILL, DECODE])))
        hw.append(draw(st.integers(0, n_hw - 1)))
        site.append(draw(st.integers(0, n_sites - 1)))
    devices = [draw(st.sampled_from([1, 1, 2, 4])) for _ in service]
    cap = [draw(st.integers(4, 20)) for _ in service]
    cost = [draw(st.integers(1, 30)) for _ in service]
    power = [draw(st.integers(1, 10)) for _ in service]
    ub = [draw(st.integers(1, 3 + (lose_instances or 1))) for _ in service]
    while int(np.prod([u + 1 for u in ub])) > MAX_COMBOS:
        ub[int(np.argmax(ub))] -= 1
    reach = [[True] * n_hw if r != PREFILL else [draw(st.booleans()) or h == own for h in range(n_hw)]
             for r, own in zip(role, hw)]
    specs = []
    for s in range(n_services):
        pin = None
        if n_sites == 2 and not lose_site and draw(st.integers(0, 3)) == 0:
            pin = (draw(st.integers(0, 1)),)
        has = {r: any(x == s and y == r for x, y in zip(service, role)) for r in (COLOCATED, PREFILL, DECODE)}
        specs.append(ServiceSpec(f"svc{s}", draw(st.integers(2, 12)), has[COLOCATED],
                                 has[PREFILL] and has[DECODE], None, None, None, pin))
    site_supply = [tuple(draw(st.one_of(st.none(), st.integers(4, 16))) for _ in range(n_hw))
                   for _ in range(n_sites)] if n_sites > 1 or draw(st.booleans()) else []
    site_power = [draw(st.one_of(st.none(), st.integers(10, 60))) for _ in site_supply]
    if not site_supply:
        site = [0] * len(service)
    k = draw(st.integers(0, 2)) if lose_instances is None else lose_instances
    drop_site = (len(site_supply) == 2 and draw(st.booleans())) if lose_site is None else lose_site
    return make(service, role, hw, site, devices, cap, cost, ub, specs, n_hw=n_hw,
                site_supply=site_supply, site_power=site_power, power=power, reach=reach,
                lose_instances=k, lose_site=drop_site)


@pytest.mark.parametrize("lose_instances, lose_site", [(0, None), (1, False), (2, False), (0, True), (1, True)])
def test_cpsat_equals_brute_force_with_sites_reach_and_failures(lose_instances, lose_site):
    ran: list[bool] = []

    @settings(max_examples=30, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(inst=instances(lose_instances, lose_site))
    def run(inst: FleetInstance) -> None:
        bf, _ = check(inst)
        ran.append(bf is not None)

    run()
    print(f"\nlose_instances={lose_instances} lose_site={lose_site}: {len(ran)} instances, "
          f"{sum(ran)} feasible, all equal to the brute force")
    assert len(ran) >= 20
    assert sum(ran) >= 4 and len(ran) - sum(ran) >= 1  # both outcomes are reached


def test_heterogeneous_is_never_costlier_than_homogeneous():
    """Forbidding cross-type KV routes only removes options: the heterogeneous optimum is at
    most the homogeneous one (property over generated instances)."""
    compared = []

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(inst=instances(mixed=True))
    def run(inst: FleetInstance) -> None:
        own = inst.hw[:, None] == np.arange(len(inst.hw_names))[None, :]
        homo = FleetInstance(**{**{f: getattr(inst, f) for f in inst.__dataclass_fields__},
                                "reach": np.where((inst.role == PREFILL)[:, None], inst.reach & own, True)})
        het, hom = solve(inst, OPTS), solve(homo, OPTS)
        if hom.status == "optimal":
            assert het.status == "optimal"
            assert int(het.counts @ inst.cost) <= int(hom.counts @ inst.cost)
            compared.append(int(hom.counts @ inst.cost) - int(het.counts @ inst.cost))

    run()
    assert len(compared) >= 15
    print(f"\nheterogeneous vs homogeneous: {len(compared)} feasible pairs, "
          f"{sum(1 for x in compared if x > 0)} strictly cheaper heterogeneous")
    assert any(x > 0 for x in compared)  # the generator does reach plans where mixing pays


# ---- hand-computed cases ----------------------------------------------------------------------


def test_losing_the_largest_instance_hand_computed():
    # One colocated service, demand 20, one type. Row 0: cap 10, cost 10; row 1: cap 25, cost 20.
    # No failure: 2 x row 0 or 1 x row 1, cost 20.
    # Losing 1 instance: 3 x row 0 (30 -> 20) costs 30; 2 x row 1 (50 -> 25) 40; row 1 + 2 x row 0
    # (45 -> 20 after losing row 1's) 40; row 1 + row 0 (35 -> 10) fails. Optimum 30: [3, 0].
    # Losing 2: 4 x row 0 (40 -> 20) costs 40; row 1 + 3 x row 0 (55 -> 20) 50; 3 x row 1 60.
    rows = dict(service=[0, 0], role=[COLOCATED] * 2, hw=[0, 0], site=[0, 0], devices=[1, 1],
                cap=[10, 25], cost=[10, 20], ub=[4, 3], specs=[spec(demand=20, disaggregated=False)],
                n_hw=1)
    for k, want, counts in ((0, 20, None), (1, 30, [3, 0]), (2, 40, [4, 0])):
        bf, sol = check(make(**rows, lose_instances=k))
        assert bf == want
        if counts is not None:
            assert sol.counts.tolist() == counts


def test_losing_an_instance_of_either_disaggregated_role_hand_computed():
    # Prefill row 0 (cap 10, cost 5) and decode row 1 (cap 20, cost 4), one type, demand 20.
    # Served = min(10 a, 20 b). No failure: a = 2, b = 1: cost 14. Losing one instance may hit
    # either role: a - 1 >= 2 and b - 1 >= 1: a = 3, b = 2: cost 23.
    rows = dict(service=[0, 0], role=[PREFILL, DECODE], hw=[0, 0], site=[0, 0], devices=[1, 1],
                cap=[10, 20], cost=[5, 4], ub=[4, 3], specs=[spec(demand=20, colocated=False)], n_hw=1)
    assert check(make(**rows))[0] == 14
    bf, sol = check(make(**rows, lose_instances=1))
    assert bf == 23 and sol.counts.tolist() == [3, 2]


def test_losing_a_site_hand_computed():
    # Colocated row 0 at site 0 (cap 10, cost 10), row 1 at site 1 (cap 10, cost 12), demand 10.
    # Without failures one instance of row 0 (cost 10); to survive losing a site, each site must
    # carry 10 alone: one of each (cost 22). Pinned to site 0 the service cannot survive it.
    rows = dict(service=[0, 0], role=[COLOCATED] * 2, hw=[0, 0], site=[0, 1], devices=[1, 1],
                cap=[10, 10], cost=[10, 12], ub=[2, 2], n_hw=1, site_supply=[(None,), (None,)],
                site_power=[None, None])
    assert check(make(**rows, specs=[spec(disaggregated=False)]))[0] == 10
    bf, sol = check(make(**rows, specs=[spec(disaggregated=False)], lose_site=True))
    assert bf == 22 and sol.counts.tolist() == [1, 1]
    bf, sol = check(make(**rows, specs=[spec(disaggregated=False, sites=(0,))], lose_site=True))
    assert bf is None and any("after losing any one site" in g for g in sol.infeasible_groups)


def test_kv_reach_limits_routes_hand_computed():
    # Prefill on type 0 (cap 10, cost 1) reaches type 0 only; prefill on type 1 (cap 10, cost 3)
    # reaches both; decode on type 0 (cap 10, cost 5) and type 1 (cap 10, cost 1). Demand 10.
    # Cheapest pair if every prefill reached everything: prefill type 0 + decode type 1 = 2.
    # With the reach: prefill type 0 + decode type 0 = 6, or prefill type 1 + decode type 1 = 4.
    rows = dict(service=[0] * 4, role=[PREFILL, PREFILL, DECODE, DECODE], hw=[0, 1, 0, 1],
                site=[0] * 4, devices=[1] * 4, cap=[10] * 4, cost=[1, 3, 5, 1], ub=[1] * 4,
                specs=[spec(colocated=False)], n_hw=2)
    assert check(make(**rows))[0] == 2
    reach = [[True, False], [True, True], [True, True], [True, True]]
    bf, sol = check(make(**rows, reach=reach))
    assert bf == 4 and sol.counts.tolist() == [0, 1, 0, 1]


def test_cuts_and_splits():
    # One site: colocated column 0; prefill 1 (type 0, reaches type 0), prefill 2 (type 1,
    # reaches both), decode 3 (type 0), decode 4 (type 1). Reach sets {0} and {0, 1}: unions
    # {}, {0}, {0, 1}. Cuts: U={} -> prefill 1, 2; U={0} -> prefill 2 + decode 3; U={0,1} ->
    # decodes 3, 4. With colocated column 0 in each for the site's whole network.
    inst = make([0] * 5, [COLOCATED, PREFILL, PREFILL, DECODE, DECODE], [0, 0, 1, 0, 1], [0] * 5,
                [1] * 5, [1] * 5, [1] * 5, [1] * 5, [spec()], n_hw=2,
                reach=[[1, 1], [1, 0], [1, 1], [1, 1], [1, 1]])
    assert [c.tolist() for c in disaggregated_cuts(inst, 0, 0)] == [[1, 2], [2, 3], [3, 4]]
    assert [c.tolist() for c in site_cuts(inst, 0, 0)] == [[0, 1, 2], [0, 2, 3], [0, 3, 4]]
    # every prefill reaches every type: the two familiar cuts
    full = make([0] * 4, [PREFILL, PREFILL, DECODE, DECODE], [0, 1, 0, 1], [0] * 4, [1] * 4,
                [1] * 4, [1] * 4, [1] * 4, [spec()], n_hw=2)
    assert [c.tolist() for c in disaggregated_cuts(full, 0, 0)] == [[0, 1], [2, 3]]
    assert disaggregated_cuts(inst, 0, 0, limit=2) is None
    assert splits(2, 2) == [(0, 2), (1, 1), (2, 0)]
    assert sorted(splits(1, 3)) == [(0, 0, 1), (0, 1, 0), (1, 0, 0)]
    assert splits(3, 1) == [(3,)]


@pytest.mark.parametrize("k", [1, 2])
def test_brute_force_self_check(k):
    """The loss enumeration itself: every way to take k of 2 + 1 instances."""
    n = np.array([2, 1, 5])
    got = sorted(losses(n, np.array([0, 1]), k))
    assert got == ([(0, 1), (1, 0)] if k == 1 else [(1, 1), (2, 0)])


def test_route_variables_equal_the_cut_rows(monkeypatch):
    """Above MAX_CUTS cuts per site the model routes with explicit variables instead; both
    forms give the brute-force optimum (forced here with MAX_CUTS = 0)."""
    from solver.fleet import demand

    monkeypatch.setattr(demand, "MAX_CUTS", 0)
    ran: list[bool] = []

    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(inst=instances(lose_instances=0, mixed=True))
    def run(inst: FleetInstance) -> None:
        bf, _ = check(inst)
        ran.append(bf is not None)

    run()
    assert len(ran) >= 20 and sum(ran) >= 5
