"""The decision record's `choices` (solver/decision/dimensions.py) and the acceptance-rate
interval of the validity section, on the shipped problems of the two dimensions; every claim is
re-checked by planning the problem it describes."""

from __future__ import annotations

from functools import cache

from solver.candidates.build import build_candidates
from solver.decision.dimensions import break_even, choices, with_acceptance
from solver.decision.probe import SearchBudget
from solver.decision.validity import _acceptance_spec, _Rebuilding, _searched
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.problem.load import load_problem, resolve
from tests.support.cli import ROOT

OPTS = SolveOptions(time_limit_s=30.0)


@cache
def planned(name: str):
    rp = load_problem(ROOT / "problems" / f"{name}.yaml")
    cs = build_candidates(rp)
    return rp, cs, plan(rp, OPTS, timings=False, candidates=cs, compare=False)


def _speculates(doc, si: int) -> bool:
    return any(p.speculative for p in doc.services[si].pools)


def test_speculation_choices_name_the_effect_and_the_break_even():
    rp, cs, doc = planned("speculative-decoding")
    out = choices(rp, cs, doc, OPTS)
    assert [(c.dimension, c.service, c.used) for c in out] == [
        ("speculation", "assistant", "eagle"), ("speculation", "bulk", None)]
    used, unused = out
    # the plan without the assistant's speculation, planned afresh, costs what the record says
    services = list(rp.problem.services)
    services[0] = services[0].model_copy(update={"speculative": None})
    plain = plan(resolve(rp.problem.model_copy(update={"services": services}), rp.doc), OPTS,
                 timings=False, compare=False)
    assert used.cost_without_per_hour == plain.cost_per_hour > doc.cost_per_hour
    dec = lambda d: sum(p.devices for p in d.services[0].pools if p.role == "decode")  # noqa: E731
    saved = round((dec(plain) - dec(doc)) / dec(plain) * 100)
    assert f"saves {saved}% of the decode devices of 'assistant' ({dec(doc)} instead of {dec(plain)})" in used.effect
    assert "acceptance 0.75" in used.effect
    # the break-even brackets the change: at it the plan still speculates, a bisection step
    # (0.75 / 32) below it no longer does
    x = used.break_even_acceptance
    assert 0.0 < x < 0.75 and f"below acceptance {x:.2f} it would not pay" in used.effect
    at = lambda a, si: plan(with_acceptance(rp, si, a), OPTS, timings=False, compare=False)  # noqa: E731
    assert _speculates(at(x, 0), 0) and not _speculates(at(x - 0.75 / 32, 0), 0)
    # the bulk service: not used at 0.5; it would from the break-even (and not just below it)
    y = unused.break_even_acceptance
    assert 0.5 < y <= 1.0 and f"it would from acceptance {y:.2f}" in unused.effect
    assert _speculates(at(y, 1), 1) and not _speculates(at(y - 0.5 / 32, 1), 1)
    assert break_even(rp, 1, OPTS, used=False) == y


def test_context_parallelism_choice_says_it_is_what_meets_the_slo():
    rp, cs, doc = planned("long-context-cp")
    (c,) = choices(rp, cs, doc, OPTS)
    assert c.dimension == "context_parallelism" and c.used == "cp4" and c.cost_without_per_hour is None
    assert "with search.cp [1] no plan is feasible" in c.effect and "TTFT p50 3000 ms" in c.effect


def test_no_choices_without_either_dimension():
    rp, cs, doc = planned("llama3-70b-online")
    assert choices(rp, cs, doc, OPTS) is None


def test_acceptance_interval_holds_inside_and_is_clamped_at_one():
    rp, cs, doc = planned("speculative-decoding")
    i = _searched(_acceptance_spec(rp, 0), _Rebuilding(rp, doc, OPTS, SearchBudget(40, 120.0)))
    assert i.unit == "acceptance" and i.current == 0.75
    assert i.low < 0.75 < i.high <= 1.0
    assert i.high < 1.0 or i.high_is_search_limit
    # at the low end the plan's configurations are still (nearly) the cheapest
    low = with_acceptance(rp, 0, i.low)
    best = plan(low, OPTS, timings=False, compare=False)
    assert any(p.speculative == "eagle" for p in best.services[0].pools)


def test_prefix_hit_rate_interval_holds_inside():
    from solver.decision.dimensions import with_hit_rate
    from solver.decision.validity import _hit_rate_spec
    from solver.problem.load import parse_problem

    text = (ROOT / "problems" / "prefix-cache.yaml").read_text()
    rp = parse_problem(text.replace("{shared_prefix_tokens: 6144}", "{hit_rate: 0.75}"), "hit.yaml")
    doc = plan(rp, OPTS, timings=False, compare=False)
    i = _searched(_hit_rate_spec(rp, 0), _Rebuilding(rp, doc, OPTS, SearchBudget(40, 120.0)))
    assert i.unit == "hit rate" and i.current == 0.75 and i.low <= 0.75 <= i.high <= 0.99
    assert i.quantity == "prefix hit rate of 'support'"
    # the hit rate is what the plan is sized by: a lower one needs more prefill devices
    less = plan(with_hit_rate(rp, 0, 0.5), OPTS, timings=False, compare=False)
    pre = lambda d: sum(p.devices for p in d.services[0].pools if p.role == "prefill")  # noqa: E731
    assert pre(less) > pre(doc)


def test_prefix_cache_choice_names_the_prefill_devices_it_saves():
    rp, cs, doc = planned("prefix-cache")
    (c,) = choices(rp, cs, doc, OPTS)
    assert (c.dimension, c.service, c.used) == ("prefix_cache", "support", "shared_prefix")
    svc = rp.problem.services[0]
    plain_svc = svc.model_copy(update={"workload": svc.workload.model_copy(update={"prefix_cache": None})})
    plain = plan(resolve(rp.problem.model_copy(update={"services": [plain_svc]}), rp.doc), OPTS,
                 timings=False, compare=False)
    assert c.cost_without_per_hour == plain.cost_per_hour > doc.cost_per_hour
    pre = lambda d: sum(p.devices for p in d.services[0].pools if p.role == "prefill")  # noqa: E731
    saved = round((pre(plain) - pre(doc)) / pre(plain) * 100)
    assert "a shared prefix of 6144 tokens, 75% of the mean prompt" in c.effect
    assert f"saves {saved}% of the prefill devices of 'support' ({pre(doc)} instead of {pre(plain)})" in c.effect


def test_shared_prefix_has_a_hit_rate_interval():
    from solver.decision.dimensions import with_hit_rate
    from solver.decision.validity import _hit_rate_spec

    rp, cs, doc = planned("prefix-cache")
    # the shared prefix as a hit rate: 6144 / 8192 = 0.75, varied through the prefix's length
    assert with_hit_rate(rp, 0, 0.5).problem.services[0].workload.prefix_cache.shared_prefix_tokens == 4096
    i = _searched(_hit_rate_spec(rp, 0), _Rebuilding(rp, doc, OPTS, SearchBudget(40, 120.0)))
    assert i.unit == "hit rate" and i.current == 0.75 and i.low <= 0.75 <= i.high <= 0.99
    assert i.quantity == "prefix hit rate of 'support' (its shared prefix / the mean prompt)"
