"""`sweep:` expansion: values by hand, names and order, how each field is written, a planned
variant equals the hand-edited problem planned, and (hypothesis) the product's invariants."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings

from solver.errors import InputError
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.problem.load import parse_problem
from solver.problem.sweep import (
    base_problem_note,
    describe,
    expand,
    format_value,
    variant_name,
)
from solver.report.plan_views import to_json
from solver.schema.problem import LatencyBound
from solver.schema.sweep import SweepRange, axis_values
from tests.support.questions_problem import small_problem
from tests.support.strategies import SWEEP_FIELDS, sweeps


def swept(sweep: str, base: str | None = None):
    return parse_problem((base or small_problem()) + "sweep:\n" + sweep, "<t>")


def test_range_values_by_hand():
    assert SweepRange.model_validate({"from": 100, "to": 400, "count": 4}).values() == (100, 200, 300, 400)
    # rounded to 6 decimals: no 0.30000000000000004
    assert SweepRange.model_validate({"from": 0.1, "to": 0.3, "count": 3}).values() == (0.1, 0.2, 0.3)
    # descending ranges are allowed and keep their order
    assert SweepRange.model_validate({"from": 3, "to": 1, "count": 3}).values() == (3, 2, 1)
    assert axis_values([2.5, 1]) == (2.5, 1.0)


def test_format_value_and_names():
    assert [format_value(v) for v in (200.0, 2.5, 0.05, 1e6, -3.0)] == ["200", "2.5", "0.05", "1000000", "-3"]
    assert variant_name("p", (("h100-sxm.price", 2.5), ("chat.qps", 200.0))) == "p[h100-sxm.price=2.5,chat.qps=200]"


def test_product_order_names_and_values():
    rp = swept("  hardware[h200-sxm].price_per_hour: [2, 3]\n"
               "  services[chat].workload.qps: {from: 50, to: 150, count: 3}\n")
    vs = expand(rp)
    assert [v.name for v in vs] == [
        "small-two-types[h200-sxm.price=2,chat.qps=50]",
        "small-two-types[h200-sxm.price=2,chat.qps=100]",
        "small-two-types[h200-sxm.price=2,chat.qps=150]",
        "small-two-types[h200-sxm.price=3,chat.qps=50]",
        "small-two-types[h200-sxm.price=3,chat.qps=100]",
        "small-two-types[h200-sxm.price=3,chat.qps=150]",
    ]
    for v, (price, qps) in zip(vs, itertools.product((2.0, 3.0), (50.0, 100.0, 150.0))):
        assert v.values == (("h200-sxm.price", price), ("chat.qps", qps))
        assert v.problem.prices == (2.5, price)  # h100-sxm as written
        assert v.problem.problem.services[0].workload.qps == qps
        assert v.problem.problem.sweep is None and v.problem.name == v.name
        assert "sweep" not in v.problem.doc.data
    assert describe(rp, vs) == "sweep: 6 variants over h200-sxm.price (2), chat.qps (3)"


def test_slo_bounds_supply_budget_and_power_are_written_where_they_belong():
    base = small_problem(budget=500).replace("slo: {ttft_ms: 1000, tpot_ms: 40}",
                                             "slo: {ttft_ms: 1000, tpot_ms: {p50: 40, p99: 80}}")
    rp = swept("  services[chat].slo.ttft_ms.p99: [2000]\n"
               "  services[chat].slo.tpot_ms: [30]\n"
               "  hardware[h100-sxm].supply: [4]\n"
               "  budget_per_hour: [250.5]\n"
               "  constraints.power_kw: [12]\n"
               "  constraints.safety_margin: [0.1]\n", base)
    (v,) = expand(rp)
    p = v.problem.problem
    assert p.services[0].slo.ttft_ms == LatencyBound(p50=1000, p99=2000)  # the number was a p50
    assert p.services[0].slo.tpot_ms == LatencyBound(p50=30, p99=80)  # p99 kept
    assert v.problem.supplies == (4, None) and isinstance(p.hardware[0].supply, int)
    assert p.budget_per_hour == 250.5
    assert p.constraints.power_kw == 12 and p.constraints.safety_margin == 0.1
    assert v.name == ("small-two-types[chat.ttft_ms.p99=2000,chat.tpot_ms=30,h100-sxm.supply=4,"
                      "budget=250.5,power_kw=12,safety_margin=0.1]")


def test_a_bound_the_problem_leaves_open_can_be_swept():
    base = small_problem().replace("slo: {ttft_ms: 1000, tpot_ms: 40}", "slo: {ttft_ms: 1000}")
    (v,) = expand(swept("  services[chat].slo.tpot_ms.p99: [60]\n", base))
    assert v.problem.problem.services[0].slo.tpot_ms == LatencyBound(p50=None, p99=60)


def test_without_a_sweep_the_problem_is_its_own_variant():
    rp = parse_problem(small_problem(), "<t>")
    (v,) = expand(rp)
    assert v.problem is rp and v.values == () and v.name == "small-two-types"
    assert base_problem_note(rp) is None and describe(rp) == ""


def test_a_variant_plans_as_the_hand_edited_problem():
    rp = swept("  hardware[h200-sxm].price_per_hour: [2, 3]\n"
               "  services[chat].workload.qps: [50, 150]\n")
    opts = SolveOptions()
    for v in expand(rp):
        price, qps = (x for _, x in v.values)
        by_hand = plan(parse_problem(small_problem(qps=qps, h200_price=price), "<t>"), opts, timings=False)
        got = plan(v.problem, opts, timings=False)
        assert got.problem == v.name
        assert to_json(got.model_copy(update={"problem": by_hand.problem})) == to_json(by_hand)


def test_errors_name_the_sweep_key_and_the_broken_field():
    with pytest.raises(InputError) as e:
        expand(swept("  services[chat].workload.qps: [10, 0]\n"))
    msg = str(e.value)
    assert msg.startswith("<t>:") and "sweep.services[chat].workload.qps: at chat.qps=0" in msg
    assert "services[0].workload.qps" in msg
    # the product breaks though no value alone does: the message names every value
    base = small_problem().replace("tpot_ms: 40}", "tpot_ms: {p50: 40, p99: 80}}")
    with pytest.raises(InputError, match=r"at chat.tpot_ms=70, chat.tpot_ms.p99=60 the problem is invalid"):
        expand(swept("  services[chat].slo.tpot_ms: [30, 70]\n"
                     "  services[chat].slo.tpot_ms.p99: [60, 90]\n", base))


# ---- properties -------------------------------------------------------------------------------

def _read(rp, label: str) -> float:
    p = rp.problem
    return {
        "h100-sxm.price": lambda: rp.prices[0],
        "h200-sxm.supply": lambda: rp.supplies[1],
        "chat.qps": lambda: p.services[0].workload.qps,
        "chat.ttft_ms": lambda: p.services[0].slo.ttft_ms.p50,
        "budget": lambda: p.budget_per_hour,
    }[label]()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sweeps())
def test_the_product_is_every_combination_once_with_its_values(sweep):
    text = "".join(f"  {k}: [{', '.join(repr(v) for v in vals)}]\n" for k, vals in sweep.items())
    vs = expand(swept(text))
    lists = list(sweep.values())
    n = 1
    for vals in lists:
        n *= len(vals)
    assert len(vs) == n
    assert len({v.name for v in vs}) == n
    for v, combo in zip(vs, itertools.product(*lists)):
        assert [lab for lab, _ in v.values] == [SWEEP_FIELDS[k][0] for k in sweep]
        for (label, value), want in zip(v.values, combo):
            assert value == want
            assert _read(v.problem, label) == want


def test_the_terms_prices_of_demand_over_time_can_be_swept():
    """`hardware[TYPE].on_demand.price_per_hour` and `.committed.price_per_hour` write into the
    entry's terms (docs/periods.md); a type without that term is an error naming the key."""
    from tests.support.cli import ROOT

    path = ROOT / "problems" / "daily-demand.yaml"
    base = path.read_text()
    rp = parse_problem(base + "sweep:\n  hardware[h100-sxm].on_demand.price_per_hour: [6, 3]\n"
                       "  hardware[h100-sxm].committed.price_per_hour: [2.49, 2]\n", str(path))
    vs = expand(rp)
    assert [v.name for v in vs] == [
        f"daily-demand[h100-sxm.on_demand_price={od},h100-sxm.committed_price={cp}]"
        for od in (6, 3) for cp in (2.49, 2)]
    for v in vs:
        od, cp = (x for _, x in v.values)
        h100 = v.problem.problem.hardware[0]
        assert (h100.on_demand.price_per_hour, h100.committed.price_per_hour) == (od, cp)
        assert h100.committed.supply is None and v.problem.problem.hardware[1].on_demand is None
    with pytest.raises(InputError, match=r"sweep.hardware\[h200-sxm\].on_demand.price_per_hour: "
                       r"hardware\[h200-sxm\] has no on_demand: terms"):
        expand(parse_problem(base + "sweep:\n  hardware[h200-sxm].on_demand.price_per_hour: [3]\n", str(path)))
