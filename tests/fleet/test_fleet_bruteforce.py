"""The CP-SAT fleet model equals brute-force enumeration on small instances.

`FleetInstance`s are generated directly (integer columns, no performance model): 1-2 services,
1-2 hardware types, 2-6 candidate rows of the three roles, small capacities, costs, powers,
device counts and instance upper bounds, optional supplies, budget, power cap, prefill:decode
ratio bounds and a distinct-configuration limit, and either objective. The brute force below
restates the fleet semantics in plain Python and enumerates every vector of instance counts
(0..ub per row); its lexicographic optimum must equal what `solve` reports.

Semantics restated (independently of solver/fleet/model.py):
- a service is served by colocated capacity (if it may run colocated) plus
  min(prefill capacity, decode capacity) (if it may run disaggregated);
- min_cost: served >= demand for every service; optimum = min (cost, devices, rows used);
- max_throughput: scale = min over services of floor(SCALE_UNIT * served / demand) >= 1;
  optimum = max scale, then min (devices, rows used, cost);
- per hardware type with a supply: devices used <= supply; cost <= budget; power <= power cap;
- when a service uses both prefill and decode devices (P, D > 0):
  ratio_lo <= RATIO_DEN * P / D <= ratio_hi;
- per service and role, at most max_configs rows with a positive count.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.fleet import integerize as ints
from solver.fleet.instance import FleetInstance, ServiceSpec
from solver.fleet.solve import SolveOptions, solve
from solver.schema.roles import COLOCATED, DECODE, PREFILL
from tests.support.strategies import service_rows

OPTS = SolveOptions(time_limit_s=10, tiebreak_work=50)
MAX_COMBOS = 5000
RATIO_DEN = ints.RATIO_DEN
SCALE_UNIT = ints.SCALE_UNIT


# ---- the brute force ---------------------------------------------------------------------------


def enumerate_counts(ub: np.ndarray) -> np.ndarray:
    """Every vector of instance counts with 0 <= n[i] <= ub[i], one per row of the result."""
    ranges = [range(int(u) + 1) for u in ub]
    return np.array(list(itertools.product(*ranges)), dtype=np.int64).reshape(-1, len(ub))


def evaluate(inst: FleetInstance, counts: np.ndarray) -> dict[str, np.ndarray]:
    """Feasibility and objective terms of each count vector (rows of `counts`), in plain numpy."""
    k = counts.shape[0]
    cost = counts @ inst.cost
    devices = counts @ inst.devices
    power = counts @ inst.power
    used = counts > 0
    configs = used.sum(axis=1)
    ok = np.all(counts <= inst.ub, axis=1) & np.all(counts >= 0, axis=1)
    for h, supply in enumerate(inst.supply):
        if supply is not None:
            on = inst.hw == h
            ok &= counts[:, on] @ inst.devices[on] <= supply
    if inst.budget is not None:
        ok &= cost <= inst.budget
    if inst.power_cap is not None:
        ok &= power <= inst.power_cap
    scale = np.full(k, np.iinfo(np.int64).max // 4, dtype=np.int64)
    for s, spec in enumerate(inst.services):

        def role_sum(role: int, coeff: np.ndarray) -> np.ndarray:
            on = (inst.service == s) & (inst.role == role)
            return counts[:, on] @ coeff[on]

        served = np.zeros(k, dtype=np.int64)
        if spec.colocated:
            served += role_sum(COLOCATED, inst.cap)
        if spec.disaggregated:
            served += np.minimum(role_sum(PREFILL, inst.cap), role_sum(DECODE, inst.cap))
        if inst.objective == "min_cost":
            ok &= served >= spec.demand
        else:
            scale = np.minimum(scale, SCALE_UNIT * served // spec.demand)
        p_dev, d_dev = role_sum(PREFILL, inst.devices), role_sum(DECODE, inst.devices)
        both = (p_dev > 0) & (d_dev > 0)
        if spec.ratio_lo is not None:
            ok &= ~both | (RATIO_DEN * p_dev >= spec.ratio_lo * d_dev)
        if spec.ratio_hi is not None:
            ok &= ~both | (RATIO_DEN * p_dev <= spec.ratio_hi * d_dev)
        if spec.max_configs is not None:
            for role in (COLOCATED, PREFILL, DECODE):
                on = (inst.service == s) & (inst.role == role)
                ok &= used[:, on].sum(axis=1) <= spec.max_configs
    if inst.objective == "max_throughput":
        ok &= scale >= 1
    else:
        scale = np.zeros(k, dtype=np.int64)
    return {"ok": ok, "cost": cost, "devices": devices, "configs": configs, "scale": scale}


def brute_force(inst: FleetInstance) -> dict | None:
    """The lexicographic optimum by enumeration, or None when nothing is feasible."""
    counts = enumerate_counts(inst.ub)
    ev = evaluate(inst, counts)
    idx = np.flatnonzero(ev["ok"])
    if idx.size == 0:
        return None
    if inst.objective == "min_cost":
        keys = [ev["cost"][idx], ev["devices"][idx], ev["configs"][idx]]
    else:
        keys = [-ev["scale"][idx], ev["devices"][idx], ev["configs"][idx], ev["cost"][idx]]
    best = idx[np.lexsort(keys[::-1])[0]]
    return {name: int(ev[name][best]) for name in ("cost", "devices", "configs", "scale")} | {
        "counts": counts[best]
    }


def terms_of(inst: FleetInstance, counts: np.ndarray) -> dict:
    ev = evaluate(inst, np.asarray(counts, dtype=np.int64).reshape(1, -1))
    return {name: (bool(v[0]) if name == "ok" else int(v[0])) for name, v in ev.items()}


# ---- comparing -----------------------------------------------------------------------------------


def check_against_brute_force(inst: FleetInstance) -> tuple[dict | None, object]:
    bf = brute_force(inst)
    sol = solve(inst, OPTS)
    if bf is None:
        assert sol.status == "infeasible", f"CP-SAT found a plan brute force says is impossible: {sol}"
        assert sol.infeasible_groups, "an infeasible result names no constraint group"
        return bf, sol
    assert sol.status == "optimal", f"brute force found {bf}; CP-SAT says {sol.status} {sol.infeasible_groups}"
    got = terms_of(inst, sol.counts)
    assert got["ok"], f"CP-SAT's counts {sol.counts.tolist()} break a constraint (brute force semantics)"
    stage = {s.name: s.status for s in sol.stages}
    if inst.objective == "min_cost":
        assert stage["cost"] == "optimal"
        assert got["cost"] == bf["cost"], (sol.counts.tolist(), bf)
        assert abs(sol.stages[0].value - bf["cost"] / ints.COST_SCALE) < 1e-9
        assert stage.get("devices") == "optimal"
        assert got["devices"] == bf["devices"], (sol.counts.tolist(), bf)
        if stage.get("configs") == "optimal":
            assert got["configs"] == bf["configs"], (sol.counts.tolist(), bf)
        else:
            assert got["configs"] >= bf["configs"]
        # the reported shares cover each demand
        for s, spec in enumerate(inst.services):
            served = sol.colocated_share[s] + sol.disaggregated_share[s]
            assert served * ints.QPS_SCALE >= spec.demand - 1e-6
    else:
        assert stage["scale"] == "optimal"
        assert round(sol.scale * SCALE_UNIT) == bf["scale"], (sol.scale, sol.counts.tolist(), bf)
        # the reported scale is achieved by the reported counts
        assert got["scale"] >= bf["scale"]
        assert stage.get("devices") == "optimal"
        assert got["devices"] == bf["devices"], (sol.counts.tolist(), bf)
        if stage.get("configs") == "optimal":
            assert got["configs"] == bf["configs"], (sol.counts.tolist(), bf)
            if stage.get("cost") == "optimal":
                assert got["cost"] == bf["cost"], (sol.counts.tolist(), bf)
        else:
            assert got["configs"] >= bf["configs"]
    return bf, sol


# ---- generated instances -------------------------------------------------------------------------


def _clamp_ub(ub: list[int]) -> list[int]:
    """Lower the largest bounds until the enumeration has at most MAX_COMBOS vectors."""
    ub = list(ub)
    while int(np.prod([u + 1 for u in ub])) > MAX_COMBOS:
        i = int(np.argmax(ub))
        ub[i] -= 1
    return ub


@st.composite
def fleet_instances(draw, objective: str | None = None) -> FleetInstance:
    n_services = draw(st.integers(1, 2))
    n_hw = draw(st.integers(1, 2))
    service, role, n_core = service_rows(draw, n_services, 2, 6)
    n_rows = len(service)
    hw = [draw(st.integers(0, n_hw - 1)) for _ in range(n_rows)]
    devices = [draw(st.sampled_from([1, 1, 2, 2, 4, 8])) for _ in range(n_rows)]
    cap = [draw(st.integers(1, 30)) for _ in range(n_rows)]
    cost = [draw(st.integers(1, 40)) for _ in range(n_rows)]
    power = [draw(st.integers(1, 20)) for _ in range(n_rows)]
    ub = _clamp_ub([draw(st.integers(1 if i < n_core else 0, 4)) for i in range(n_rows)])
    objective = objective or draw(st.sampled_from(["min_cost", "max_throughput"]))
    ratio_lo = draw(st.one_of(st.none(), st.sampled_from([250, 500, 1000, 1500, 3000])))
    ratio_hi = draw(st.one_of(st.none(), st.sampled_from([500, 1000, 2000, 4000])))
    if ratio_lo is not None and ratio_hi is not None and ratio_lo > ratio_hi:
        ratio_lo, ratio_hi = ratio_hi, ratio_lo
    max_configs = draw(st.one_of(st.none(), st.integers(1, 2)))
    specs = []
    for s in range(n_services):
        has = {r: any(sv == s and ro == r for sv, ro in zip(service, role)) for r in (COLOCATED, PREFILL, DECODE)}
        specs.append(ServiceSpec(
            name=f"svc{s}",
            demand=draw(st.integers(1, 30)),
            colocated=has[COLOCATED],
            disaggregated=has[PREFILL] and has[DECODE],
            ratio_lo=ratio_lo,
            ratio_hi=ratio_hi,
            max_configs=max_configs,
        ))
    supply = tuple(draw(st.one_of(st.none(), st.integers(0, 16).map(lambda x: 16 - x))) for _ in range(n_hw))
    budget = draw(st.one_of(st.none(), st.integers(0, 250).map(lambda b: 250 - b)))
    power_cap = draw(st.one_of(st.none(), st.integers(0, 100).map(lambda p: 100 - p)))
    if objective == "max_throughput" and budget is None and power_cap is None:
        # max_throughput is bounded by the ub anyway; keep a cap most of the time, as problems do
        budget = draw(st.one_of(st.none(), st.integers(10, 200)))
    return make_instance(objective, service, role, hw, devices, cap, cost, power, ub, specs,
                         supply, budget, power_cap)


def make_instance(objective, service, role, hw, devices, cap, cost, power, ub, specs, supply,
                  budget=None, power_cap=None) -> FleetInstance:
    a = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    return FleetInstance(
        objective=objective, service=a(service), role=a(role), hw=a(hw), devices=a(devices),
        cap=a(cap), cost=a(cost), power=a(power), ub=a(ub), demand_ub=a(ub), services=tuple(specs),
        hw_names=tuple(f"hw{h}" for h in range(len(supply))), supply=tuple(supply),
        budget=budget, power_cap=power_cap,
    )


def test_cpsat_equals_brute_force_on_generated_instances():
    ran: list[tuple[str, bool]] = []

    @settings(max_examples=120, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(inst=fleet_instances())
    def check(inst: FleetInstance) -> None:
        bf, _ = check_against_brute_force(inst)
        ran.append((inst.objective, bf is not None))

    check()
    # hypothesis replays failures while shrinking; on success every example ran once
    assert len(ran) >= 50, f"only {len(ran)} generated instances ran"
    kinds = {(o, f): sum(1 for x in ran if x == (o, f)) for o in ("min_cost", "max_throughput") for f in (True, False)}
    print(f"\nbrute force vs CP-SAT: {len(ran)} instances, (objective, feasible) counts {kinds}")
    # the generator reaches both objectives and both outcomes
    assert kinds[("min_cost", True)] >= 5 and kinds[("max_throughput", True)] >= 5
    assert kinds[("min_cost", False)] + kinds[("max_throughput", False)] >= 3


# ---- hand-written instances with known optima ----------------------------------------------------


def spec(name="chat", demand=10, colocated=True, disaggregated=True, lo=None, hi=None, k=None):
    return ServiceSpec(name, demand, colocated, disaggregated, lo, hi, k)


def test_known_min_cost_mixes_colocated_and_disaggregated():
    # One service, demand 10 milli-QPS, both runtimes, one hardware type (supply 5 devices).
    #   row 0 colocated: cap 4, cost 5, 1 device
    #   row 1 prefill:   cap 6, cost 3, 1 device
    #   row 2 decode:    cap 6, cost 3, 1 device   (a prefill+decode pair: cap 6 for cost 6)
    # Candidates: 3 colocated (cap 12, cost 15); 2 pairs (cap 12, cost 12, 4 devices);
    # 1 pair + 1 colocated (cap 6 + 4 = 10 >= 10, cost 6 + 5 = 11, 3 devices); 2 colocated + 1
    # pair would be 16. Optimum: cost 11, devices 3, rows used 3, counts [1, 1, 1].
    inst = make_instance(
        "min_cost", service=[0, 0, 0], role=[COLOCATED, PREFILL, DECODE], hw=[0, 0, 0],
        devices=[1, 1, 1], cap=[4, 6, 6], cost=[5, 3, 3], power=[1, 1, 1], ub=[3, 3, 3],
        specs=[spec(demand=10)], supply=(5,),
    )
    bf, sol = check_against_brute_force(inst)
    assert (bf["cost"], bf["devices"], bf["configs"]) == (11, 3, 3)
    assert sol.counts.tolist() == [1, 1, 1]
    assert sol.colocated_share[0] * 1000 + sol.disaggregated_share[0] * 1000 >= 10 - 1e-9


def test_known_max_throughput_under_budget_and_ratio():
    # Max throughput, demand weight 4 milli-QPS, budget 20, prefill:decode devices in [1, 1]
    # (lo = hi = 1000 / RATIO_DEN).
    #   row 0 prefill: cap 5, cost 4, 2 devices
    #   row 1 decode:  cap 3, cost 2, 1 device
    #   row 2 decode:  cap 7, cost 6, 2 devices
    # The ratio forces decode devices == prefill devices (2 per prefill instance).
    # a prefill instances (cost 4a) + b of row 1 + c of row 2 with b + 2c = 2a and
    # 4a + 2b + 6c <= 20. Served = min(5a, 3b + 7c).
    #   a=2: devices 4 = b + 2c; cost 8 + 2b + 6c <= 20 -> 2b + 6c <= 12:
    #        (b=4,c=0): cost 16, decode cap 12 -> served min(10, 12) = 10
    #        (b=2,c=1): cost 18, decode cap 13 -> served 10
    #        (b=0,c=2): cost 20, decode cap 14 -> served 10
    #   a=3: cost 12 + 2b + 6c <= 20 with b + 2c = 6 -> 2b + 6c >= 12: impossible (>= 24 > 20 - 12).
    #   a=1: served <= 5.
    # Best served 10 -> scale floor(1000 * 10 / 4) = 2500; then fewest devices: 4 + 4 = 8 in all
    # three; fewest rows used: 2 (b=4,c=0 or b=0,c=2); cheapest of those: b=4 (cost 16).
    inst = make_instance(
        "max_throughput", service=[0, 0, 0], role=[PREFILL, DECODE, DECODE], hw=[0, 0, 0],
        devices=[2, 1, 2], cap=[5, 3, 7], cost=[4, 2, 6], power=[1, 1, 1], ub=[4, 4, 4],
        specs=[spec(demand=4, colocated=False, lo=1000, hi=1000)], supply=(None,), budget=20,
    )
    bf, sol = check_against_brute_force(inst)
    assert (bf["scale"], bf["devices"], bf["configs"], bf["cost"]) == (2500, 8, 2, 16)
    assert sol.scale == 2.5
    assert sol.counts.tolist() == [2, 4, 0]


def test_known_two_services_share_a_supply_and_a_config_limit():
    # Two services on one hardware type with 6 devices, at most 1 distinct config per role.
    #   svc0 (demand 8):  row 0 colocated cap 8, cost 10, 4 devices; row 1 colocated cap 4, cost 4, 1 device
    #   svc1 (demand 6):  row 2 colocated cap 3, cost 2, 1 device;   row 3 colocated cap 6, cost 9, 2 devices
    # Unconstrained, svc0 takes 2 x row 1 (cost 8, 2 devices) and svc1 2 x row 2 (cost 4,
    # 2 devices): cost 12, 4 devices <= 6. The config limit (1 per role and service) allows that.
    # With supply 3 it is infeasible: svc0 needs >= 2 devices (2 x row 1) and svc1 >= 2.
    rows = dict(service=[0, 0, 1, 1], role=[COLOCATED] * 4, hw=[0] * 4, devices=[4, 1, 1, 2],
                cap=[8, 4, 3, 6], cost=[10, 4, 2, 9], power=[1] * 4, ub=[2, 3, 3, 2])
    specs = [spec("a", demand=8, disaggregated=False, k=1), spec("b", demand=6, disaggregated=False, k=1)]
    bf, sol = check_against_brute_force(make_instance("min_cost", **rows, specs=specs, supply=(6,)))
    assert (bf["cost"], bf["devices"], bf["configs"]) == (12, 4, 2)
    assert sol.counts.tolist() == [0, 2, 2, 0]
    bf, sol = check_against_brute_force(make_instance("min_cost", **rows, specs=specs, supply=(3,)))
    assert bf is None and sol.status == "infeasible"
    text = " ".join(sol.infeasible_groups)
    assert "supply of hw0" in text, sol.infeasible_groups


def test_brute_force_self_check():
    """The enumeration itself: count vectors and a hand-evaluated row."""
    assert enumerate_counts(np.array([1, 2])).tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    inst = make_instance(
        "min_cost", service=[0, 0, 0], role=[COLOCATED, PREFILL, DECODE], hw=[0, 0, 1],
        devices=[1, 2, 1], cap=[4, 6, 6], cost=[5, 3, 3], power=[1, 1, 1], ub=[3, 3, 3],
        specs=[spec(demand=10, lo=2000)], supply=(4, None),
    )
    # 1 colocated + 1 pair: cap 4 + 6 = 10; prefill devices 2 / decode 1 = 2.0 >= 2.0
    assert terms_of(inst, [1, 1, 1]) == {"ok": True, "cost": 11, "devices": 4, "configs": 3, "scale": 0}
    # 2 pairs: prefill devices 4 on hw0 plus nothing else: supply 4 holds; cap 12
    assert terms_of(inst, [0, 2, 2])["ok"]
    # 2 pairs + 1 colocated: 5 devices on hw0 > 4
    assert not terms_of(inst, [1, 2, 2])["ok"]
    # ratio 2/2 = 1.0 < 2.0
    assert not terms_of(inst, [1, 1, 2])["ok"]


# ---- build_instance's upper bounds never cut off the optimum -------------------------------------
#
# `build_instance` bounds each row's count by supply, budget and power and, for min_cost, by
# ceil(demand / capacity) plus what a prefill:decode ratio may force. Those bounds must keep
# every optimum: solving over them must equal solving (or enumerating) over bounds from the
# supply alone.

import dataclasses  # noqa: E402
from functools import lru_cache  # noqa: E402
from pathlib import Path  # noqa: E402

from solver.candidates.build import build_candidates  # noqa: E402
from solver.candidates.table import CandidateSet, CandidateTable, PruneStats  # noqa: E402
from solver.fleet.instance import build_instance  # noqa: E402
from solver.problem.load import ResolvedProblem, load_problem, resolve  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@lru_cache(maxsize=None)
def _online() -> ResolvedProblem:
    return load_problem(ROOT / "problems" / "llama3-70b-online.yaml")


def _variant(qps=None, ratio=(None, None), supplies=None, budget=None, runtime=None,
             objective=None) -> ResolvedProblem:
    rp = _online()
    p = rp.problem
    svc = p.services[0]
    upd = {}
    if qps is not None:
        upd["workload"] = svc.workload.model_copy(update={"qps": qps})
    if runtime is not None:
        upd["runtime"] = runtime
    r = p.constraints.prefill_decode_ratio.model_copy(update={"min": ratio[0], "max": ratio[1]})
    update = {
        "services": [svc.model_copy(update=upd)],
        "constraints": p.constraints.model_copy(update={"prefill_decode_ratio": r}),
        "budget_per_hour": budget,
    }
    if supplies is not None:
        update["hardware"] = [h.model_copy(update={"supply": s}) for h, s in zip(p.hardware, supplies)]
    if objective is not None:
        update["objective"] = objective
    return resolve(p.model_copy(update=update), rp.doc)


def _fake_candidates(rows: list[dict], prices: tuple[float, ...]) -> CandidateSet:
    n = len(rows)
    col = lambda k, dt=int: np.array([r[k] for r in rows], dtype=dt)  # noqa: E731
    z = np.zeros(n)
    one = np.ones(n, dtype=int)
    devices, hw = col("devices"), col("hw")
    table = CandidateTable(
        service=np.zeros(n, dtype=int), role=col("role"), hw=hw, tp=devices, pp=one, ep=one, dp=one,
        batch=one, chunk=np.zeros(n, dtype=int), devices=devices, capacity_qps=col("cap", float),
        cost_per_hour=devices * np.array(prices)[hw], power_w=devices * 700.0,
        ttft_p50_ms=z, ttft_p99_ms=z, tpot_p50_ms=z, tpot_p99_ms=z, memory_gib=z,
    )
    roles = tuple(sorted({r["role"] for r in rows}))
    return CandidateSet(table, PruneStats(), {}, {0: roles})


@pytest.mark.parametrize("ratio, supplies, budget", [
    ((None, None), None, None),
    ((6.0, None), None, None),
    ((None, 2.0), None, None),
    ((1.0, 1.0), None, None),
    ((0.3333, None), None, None),
    ((7.77, 8.0), None, None),
    ((3.0, 3.0), (40, None), None),
    ((None, None), (24, 20), None),
])
def test_real_candidate_bounds_keep_the_optimum(ratio, supplies, budget):
    rp = _variant(ratio=ratio, supplies=supplies, budget=budget)
    inst = build_instance(rp, build_candidates(rp))
    a = solve(inst, OPTS)
    wide = dataclasses.replace(inst, ub=inst.ub * 3 + 4)  # still finite; supply stays a constraint
    b = solve(wide, OPTS)
    assert a.status == b.status
    if a.status != "infeasible":
        assert [(s.name, s.value) for s in a.stages[:2]] == [(s.name, s.value) for s in b.stages[:2]]


@st.composite
def _fake_problems(draw):
    """A real problem's fleet settings over a small made-up candidate table (one service)."""
    runtime = draw(st.sampled_from(["auto", "colocated", "disaggregated"]))
    roles = {"auto": [COLOCATED, PREFILL, DECODE], "colocated": [COLOCATED],
             "disaggregated": [PREFILL, DECODE]}[runtime]
    need = [COLOCATED] if runtime == "colocated" else [PREFILL, DECODE]
    n = draw(st.integers(max(2, len(need)), 5))
    rows = [dict(role=r) for r in need] + [dict(role=draw(st.sampled_from(roles))) for _ in range(n - len(need))]
    for r in rows:
        r.update(hw=draw(st.integers(0, 1)), devices=draw(st.sampled_from([1, 2, 4])),
                 cap=draw(st.integers(1, 25)) / 1000)
    supplies = (draw(st.integers(2, 6)), draw(st.integers(2, 6)))
    ratio = (draw(st.sampled_from([None, 0.3333, 0.5, 1.0, 1.7])), draw(st.sampled_from([None, 1.0, 2.5, 3.0])))
    if None not in ratio and ratio[0] > ratio[1]:
        ratio = (ratio[1], ratio[0])
    rp = _variant(qps=draw(st.integers(1, 40)) / 1000, ratio=ratio, supplies=supplies, runtime=runtime)
    return rp, rows


def test_build_instance_bounds_keep_the_brute_force_optimum():
    ran = []

    @settings(max_examples=60, deadline=None, derandomize=True, database=None)
    @given(case=_fake_problems())
    def check(case):
        rp, rows = case
        cs = _fake_candidates(rows, rp.prices)
        inst = build_instance(rp, cs)
        # enumerate over the supply bound alone: the instance's other bounds must lose nothing
        by_supply = np.array([rp.supplies[r["hw"]] // r["devices"] for r in rows], dtype=np.int64)
        assert np.all(inst.ub <= by_supply)
        bf = brute_force(dataclasses.replace(inst, ub=by_supply))
        sol = solve(inst, OPTS)
        if bf is None:
            assert sol.status == "infeasible"
        else:
            assert sol.status == "optimal", (rows, bf, sol.infeasible_groups, inst.ub.tolist())
            got = terms_of(inst, sol.counts)
            assert (got["cost"], got["devices"]) == (bf["cost"], bf["devices"]), (rows, bf, inst.ub.tolist())
        ran.append(bf is not None)

    check()
    assert len(ran) >= 50 and sum(ran) >= 10, (len(ran), sum(ran))


def test_ratio_extra_bound_uses_the_integer_ratio():
    # demand 3 QPS; prefill: 1 device, 5 QPS; decode: 1 device, 0.001 QPS -> 3000 decode devices.
    # ratio min 0.3333 -> model lo = ceil(333.3) / 1000 = 0.334 -> prefill devices >= 1002.
    rp = _variant(qps=3.0, ratio=(0.3333, None), runtime="disaggregated", supplies=(None, 0))
    rows = [dict(role=PREFILL, hw=0, devices=1, cap=5.0), dict(role=DECODE, hw=0, devices=1, cap=0.001)]
    inst = build_instance(rp, _fake_candidates(rows, rp.prices))
    wide = solve(dataclasses.replace(inst, ub=np.array([5000, 5000])), OPTS)
    assert wide.status == "optimal" and wide.counts.tolist() == [1002, 3000]
    assert solve(inst, OPTS).status == "optimal", inst.ub.tolist()
