"""Choices the planner makes beyond parallelism, on the shipped problems and small ones: the
power cap per pool under a binding fleet power cap, the device type under a high energy price,
pod sizes, and precision per pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver.candidates.build import build_candidates
from solver.plan.planner import plan
from solver.problem.load import load_problem, parse_problem, resolve
from solver.schema.roles import PREFILL

ROOT = Path(__file__).resolve().parents[2]


def _without(rp, **hw_update):
    """The problem with every hardware entry updated (and no power cap when power_kw=None)."""
    p = rp.problem
    hw = [h.model_copy(update=hw_update) for h in p.hardware]
    return resolve(p.model_copy(update={"hardware": hw}), rp.doc)


def test_binding_power_cap_buys_more_devices_at_lower_caps():
    rp = load_problem(ROOT / "problems" / "power-capped.yaml")
    doc = plan(rp, timings=False, compare=False)
    pools = [p for s in doc.services for p in s.pools]
    assert doc.status == "optimal" and doc.power_kw <= 15
    assert all(p.power_cap_w in (700.0, 550.0, 400.0) for p in pools)
    assert sum(p.power_kw for p in pools) == pytest.approx(sum(p.devices * p.power_cap_w / 1000 for p in pools))
    decode = [p for p in pools if p.role == "decode"]
    assert decode and all(p.power_cap_w == 400.0 for p in decode)  # memory-bound: free to cap
    assert any(p.role == "prefill" and p.power_cap_w < 700 for p in pools)
    # by hand: 10 devices at 700 W, 20 at 400 W = 7.0 + 8.0 = 15.0 kW; rented at the card's
    # $4.25 whatever the cap: 30 x 4.25 = $127.50/h
    by_cap = {c: sum(p.devices for p in pools if p.power_cap_w == c) for c in (700.0, 550.0, 400.0)}
    assert by_cap == {700.0: 10, 550.0: 0, 400.0: 20}
    assert doc.power_kw == pytest.approx(15.0) and doc.cost_per_hour == pytest.approx(127.5)
    # the same problem at full power only: no fleet fits in 15 kW ...
    full = _without(rp, power_caps_w=None)
    assert plan(full, timings=False, compare=False).status == "infeasible"
    # ... and without the power limit the cheapest full-power fleet has fewer devices
    free = full.problem.model_copy(update={"constraints": full.problem.constraints.model_copy(
        update={"power_kw": None})})
    unlimited = plan(resolve(free, rp.doc), timings=False, compare=False)
    assert unlimited.power_kw > 15 and unlimited.total_devices < doc.total_devices
    assert unlimited.cost_per_hour < doc.cost_per_hour
    # by hand (the numbers problems/power-capped.yaml states): 28 devices at 700 W = 19.6 kW,
    # 28 x 4.25 = $119.00/h
    assert unlimited.total_devices == 28 and unlimited.power_kw == pytest.approx(19.6)
    assert unlimited.cost_per_hour == pytest.approx(119.0)


def _at_energy_price(rp, usd_per_kwh: float):
    p = rp.problem
    site = p.sites[0].model_copy(update={"cost": p.sites[0].cost.model_copy(
        update={"energy_usd_per_kwh": usd_per_kwh})})
    return resolve(p.model_copy(update={"sites": [site]}), rp.doc)


def test_high_energy_price_changes_the_winning_type():
    rp = load_problem(ROOT / "problems" / "energy-price-tco.yaml")
    high = plan(rp, timings=False, compare=False)
    low = plan(_at_energy_price(rp, 0.08), timings=False, compare=False)
    # the winner flips: mostly A100s at $0.08/kWh, mostly H100s at $0.40/kWh
    assert low.devices_by_type["a100-sxm"] > 10 * low.devices_by_type.get("h100-sxm", 0)
    assert high.devices_by_type["h100-sxm"] > 10 * high.devices_by_type.get("a100-sxm", 0)
    # by hand, per device-hour: annuity factor 0.08 / (1 - 1.08^-4) = 0.3019208 on the capital
    # and on 20,000 / 8 of network per device; energy kW x 1.3 x price; hosting kW x 150 / 730
    a = 0.08 / (1 - 1.08**-4)

    def per_device(capital: float, kw: float, price: float) -> float:
        return (capital + 2500) * a / 8760 + kw * 1.3 * price + kw * 150 / 730

    for doc, price in ((low, 0.08), (high, 0.40)):
        n = doc.devices_by_type
        expect = (n.get("a100-sxm", 0) * per_device(2000, 0.4, price)
                  + n.get("h100-sxm", 0) * per_device(25000, 0.7, price))
        assert doc.cost_per_hour == pytest.approx(expect, abs=1e-5)
    c = high.cost_components
    assert c is not None and c.rental == 0.0
    assert c.capital + c.network + c.energy + c.hosting == pytest.approx(high.cost_per_hour, abs=1e-5)
    # energy = kW x PUE x price over the plan's devices at their power
    assert c.energy == pytest.approx(high.power_kw * 1.3 * 0.40, abs=1e-5)
    assert c.hosting == pytest.approx(high.power_kw * 150 / 730, abs=1e-5)


SMALL = """
name: pod
services:
  - name: s
    model: llama-3.1-70b
    precision: [bf16, fp8]
    kv_precision: [fp8, bf16]
    workload: {qps: 5, input_tokens: 2000, output_tokens: 100}
    runtime: disaggregated
hardware:
  - type: h100-sxm
    devices_per_node: 4
    scale_up_domain_devices: 4
search: {tp: [8], pp: [1], batch: [1]}
"""


def test_pod_size_override_moves_tp8_off_the_scale_up_domain():
    small = parse_problem(SMALL)
    card = small.hardware[0]
    assert (card.devices_per_node, card.scale_up.domain_devices) == (4, 4)
    normal = parse_problem(SMALL.replace("    devices_per_node: 4\n    scale_up_domain_devices: 4\n", ""))
    assert normal.hardware[0].scale_up.domain_devices == 8
    # a node's capital is shared by the overridden node size: 40,000 / 4 devices / 5 years
    owned = parse_problem(SMALL.replace("    scale_up_domain_devices: 4\n",
                                        "    scale_up_domain_devices: 4\n"
                                        "    cost: {capital_usd_per_node: 40000, lifetime_years: 5}\n"))
    assert owned.cost_parts(0, 0).capital == pytest.approx(40_000 / 4 / 5 / 8760)

    def fastest_prefill(rp):
        t = build_candidates(rp).table
        return min(t.ttft_p50_ms[r] for r in t.rows(0, PREFILL))

    # tp8 over two 4-device domains runs its all-reduces over the scale-out link: slower
    assert fastest_prefill(small) > fastest_prefill(normal)


def test_precision_is_chosen_per_pool_and_named():
    rp = parse_problem(SMALL.replace("search: {tp: [8], pp: [1], batch: [1]}", "search: {tp: [2, 4], pp: [1]}"))
    t = build_candidates(rp).table
    assert {(int(w), int(k)) for w, k in zip(t.wprec, t.kvprec)} >= {(1, 0), (1, 1)}
    doc = plan(rp, timings=False, compare=False)
    pools = [p for s in doc.services for p in s.pools]
    # fp8 weights halve the weight bytes and double the math: every pool picks them
    assert pools and all(p.precision == "fp8" for p in pools)
    assert all(p.kv_precision in ("fp8", "bf16") for p in pools)


def test_decision_record_names_the_cap_and_precision_choices():
    from solver.candidates.build import build_candidates as build
    from solver.decision.alternatives import runners_up
    from solver.fleet.solve import SolveOptions

    rp = load_problem(ROOT / "problems" / "power-capped.yaml")
    cs = build(rp)
    winner = plan(rp, timings=False, candidates=cs, compare=False)
    alts = {a.kind: a for a in runners_up(rp, cs, winner, SolveOptions())}
    cap = alts["power_cap"]
    # at full power no fleet fits in the hall's 15 kW: the caps are what makes the plan possible
    assert cap.status == "infeasible" and "h100-sxm at 400 W" in cap.excluded
    assert "precision" not in alts  # the service offers one precision

    small = parse_problem(SMALL.replace("search: {tp: [8], pp: [1], batch: [1]}", "search: {tp: [2, 4], pp: [1]}"))
    cs = build(small)
    winner = plan(small, timings=False, candidates=cs, compare=False)
    alts = {a.kind: a for a in runners_up(small, cs, winner, SolveOptions())}
    prec = alts["precision"]
    assert prec.excluded == "fp8 weights for 's'" and prec.status == "optimal"
    assert prec.delta_cost_per_hour > 0  # bf16 weights cost more devices
