"""Each named rule of the verifier on its own: a planned document passes every check, and for
each check a document (or problem) tampered in one way that only that check rejects."""

from __future__ import annotations

from typing import Callable

import pytest

from solver.problem.load import ResolvedProblem
from solver.schema.result import PlanResult, Pool
from solver.verify import checks
from solver.verify.checks import CHECKS, violations
from solver.verify.tally import tally
from tests.verify.test_verify import (
    edited,
    latency_pool,
    planned,
    recompute,
    with_constraints,
    with_pool,
    with_pools,
    with_predicted,
)

Case = tuple[ResolvedProblem, PlanResult]


def _svc(doc: PlanResult, **update) -> PlanResult:
    return doc.model_copy(update={"services": [doc.services[0].model_copy(update=update)] + list(doc.services[1:])})


def extra_service() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    svcs = rp.problem.services
    return edited(rp, services=[*svcs, svcs[0].model_copy(update={"name": "extra"})]), doc


def pool_layout() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    p = doc.services[0].pools[0]
    return rp, with_pool(doc, 0, 0, devices_per_instance=p.devices_per_instance * 2)


def sites_without_sites() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    return rp, doc.model_copy(update={"sites": []})


def runtime_pinned() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    runtime = "colocated" if doc.services[0].runtime != "colocated" else "disaggregated"
    return edited(rp, services=[rp.problem.services[0].model_copy(update={"runtime": runtime})]), doc


def slo_missed() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    bound = rp.problem.services[0].slo.ttft_ms.p50
    return rp, with_predicted(doc, 0, latency_pool(doc, "prefill"), ttft_ms=bound * 2)


def memory_over() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    card = {c.name: c for c in rp.hardware}[doc.services[0].pools[0].hardware]
    return rp, with_predicted(doc, 0, 0, memory_gib_per_device=card.memory_gib + 1.0)


def route_link() -> Case:
    rp, doc = planned("hetero-prefill-decode.yaml")
    si = next(i for i, s in enumerate(doc.services) if s.kv_routes)
    routes = [r.model_copy(update={"link_gb_s": r.link_gb_s * 2}) for r in doc.services[si].kv_routes]
    services = list(doc.services)
    services[si] = services[si].model_copy(update={"kv_routes": routes})
    return rp, doc.model_copy(update={"services": services})


def survive_overstated() -> Case:
    rp, doc = planned("survive-failure.yaml")
    rep = doc.services[0].survive
    return rp, _svc(doc, survive=rep.model_copy(update={"worst_site_loss_qps": rep.worst_site_loss_qps + 1}))


def capacity_overstated() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    return rp, _svc(doc, capacity_qps=doc.services[0].capacity_qps * 10)


def headroom_overstated() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    return rp, doc.model_copy(update={"traffic_headroom_multiple": doc.traffic_headroom_multiple + 0.5})


def ratio_misreported() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    return rp, _svc(doc, prefill_decode_ratio=(doc.services[0].prefill_decode_ratio or 1.0) * 3)


def _part(p: Pool, n: int, **update) -> Pool:
    """Pool p with n of its instances (devices, capacity, cost and power in proportion)."""
    share = n / p.instances
    return p.model_copy(update={"instances": n, "devices": n * p.devices_per_instance,
                                "capacity_qps": n * p.capacity_qps_per_instance,
                                "cost_per_hour": p.cost_per_hour * share, "power_kw": p.power_kw * share,
                                **update})


def distinct_configs() -> Case:
    """The largest pool split in two of the same layout at two batch sizes: the same devices,
    capacity and cost in two configurations of its role, against a limit of one."""
    rp, doc = planned("llama3-70b-online.yaml")
    s = doc.services[0]
    pi = max(range(len(s.pools)), key=lambda i: s.pools[i].instances)
    p = s.pools[pi]
    assert p.instances >= 2
    half = p.instances // 2
    pools = [*s.pools[:pi], _part(p, half), _part(p, p.instances - half, batch=p.batch + 1), *s.pools[pi + 1:]]
    bad = recompute(with_pools(doc, 0, pools))
    bad = _svc(bad, capacity_qps=s.capacity_qps, prefill_decode_ratio=s.prefill_decode_ratio)
    return edited(rp, search=rp.problem.search.model_copy(update={"max_distinct_configs": 1})), bad


def supply_short() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    name, used = max(doc.devices_by_type.items(), key=lambda kv: kv[1])
    hardware = [h.model_copy(update={"supply": used - 1}) if h.name == name else h for h in rp.problem.hardware]
    return edited(rp, hardware=hardware), doc


def power_capped() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    return with_constraints(rp, power_kw=doc.power_kw * 0.9), doc


def comparison_missing() -> Case:
    rp, doc = planned("hetero-prefill-decode.yaml")
    return rp, doc.model_copy(update={"heterogeneity": None})


def transition_flipped() -> Case:
    rp, doc = planned("transition.yaml")
    flip = "stay" if doc.transition.recommendation == "move" else "move"
    return rp, doc.model_copy(update={"transition": doc.transition.model_copy(update={"recommendation": flip})})


def over_budget() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    return edited(rp, budget_per_hour=doc.cost_per_hour - 0.5), doc


def reasons_listed() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    return rp, doc.model_copy(update={"infeasible_because": ["no reason"]})


def devices_off() -> Case:
    rp, doc = planned("llama3-70b-online.yaml")
    return rp, doc.model_copy(update={"total_devices": doc.total_devices + 1})


# the check, the tampering only it rejects, and a phrase of its message
TAMPERED: dict[str, tuple[Callable[[], Case], str]] = {
    "check_listing": (extra_service, "services differ"),
    "check_pool_arithmetic": (pool_layout, "devices_per_instance != tp x pp x dp"),
    "check_sites": (sites_without_sites, "sites summary given"),
    "check_runtime": (runtime_pinned, "service is pinned to"),
    "check_slo": (slo_missed, "TTFT p50"),
    "check_memory": (memory_over, "GiB per device exceeds usable"),
    "check_kv_routes": (route_link, "the cards give"),
    "check_survive": (survive_overstated, "worst_site_loss_qps"),
    "check_demand_served": (capacity_overstated, "capacity_qps"),
    "check_headroom": (headroom_overstated, "traffic_headroom_multiple"),
    "check_ratio": (ratio_misreported, "prefill_decode_ratio"),
    "check_distinct_configs": (distinct_configs, "limit 1"),
    "check_supply": (supply_short, "devices used, supply"),
    "check_power": (power_capped, "exceeds the cap"),
    "check_heterogeneity": (comparison_missing, "does not state its saving"),
    "check_transition": (transition_flipped, "the figures say"),
    "check_budget": (over_budget, "exceeds the budget"),
    "check_objective": (reasons_listed, "lists reasons for infeasibility"),
    "check_totals": (devices_off, "total_devices"),
}


def test_every_check_has_a_tampered_case_and_the_rules_are_named():
    assert sorted(c.__name__ for c in CHECKS) == sorted(TAMPERED)
    for rule in ("demand_served", "supply", "budget", "power", "ratio", "slo", "kv_routes", "sites",
                 "survive", "transition"):
        assert getattr(checks, f"check_{rule}") in CHECKS


@pytest.mark.parametrize("name", ["llama3-70b-online.yaml", "hetero-prefill-decode.yaml",
                                  "survive-failure.yaml", "transition.yaml"])
def test_a_planned_document_passes_every_check(name):
    rp, doc = planned(name)
    t = tally(rp, doc)
    assert {c.__name__: c(rp, doc, t) for c in CHECKS} == {c.__name__: [] for c in CHECKS}


@pytest.mark.parametrize("check", sorted(TAMPERED))
def test_only_the_named_check_rejects_its_tampered_case(check):
    build, phrase = TAMPERED[check]
    rp, doc = build()
    t = tally(rp, doc)
    found = {c.__name__: c(rp, doc, t) for c in CHECKS}
    assert any(phrase in v for v in found[check]), found[check]
    assert {k: v for k, v in found.items() if v} == {check: found[check]}
    assert violations(rp, doc) == found[check]  # violations() is the ordered concatenation


def test_an_infeasible_document_is_checked_for_pools_only():
    rp, doc = planned("llama3-70b-online.yaml")
    assert violations(rp, doc.model_copy(update={"status": "infeasible"})) == ["an infeasible result lists pools"]
    # nothing else is checked: a wrong total on an infeasible document without pools passes
    empty = doc.model_copy(update={"status": "infeasible", "services": [], "total_devices": 0, "cost_per_hour": 5.0})
    assert violations(rp, empty) == []
