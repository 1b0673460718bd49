"""The replay's side of issue 15's dimensions: a cached prefix's prefill is skipped, a
speculating decode plan decodes at the performance model's rate per token, the workload's
prefix cache reaches the generated requests."""

from __future__ import annotations

import numpy as np
import pytest

from solver.catalog import shipped
from solver.perf import runtime as rt
from solver.perf import speculative as spm
from solver.perf.arch import ModelArch
from solver.perf.stages import Load
from solver.perf.tables import HardwareTable, Plans
from solver.replay.loop import run
from solver.replay.schedulers import make_policy
from solver.replay.sources.open_loop import gamma_source
from solver.replay.speculation import speculating
from solver.replay.steptime import Limits, StepTimes
from solver.schema.engine import EngineParams
from solver.schema.prefix import PrefixCache
from solver.schema.problem import TokenDist
from tests.replay.steps_stub import ListSource, instance


@pytest.mark.parametrize("cached, ttft", [(False, [0.20, 0.20]), (True, [0.20, 0.05])])
def test_a_cached_prefix_prefills_only_the_rest(cached, ttft):
    # FixedSteps: an iteration with prefill 50 ms. A 256-token prompt in chunks of 64 tokens
    # takes 4 prefill iterations. The first request misses (nothing cached yet) and computes its
    # 192-token prefix; the second, after it, finds the prefix's 12 blocks cached and computes
    # the other 64 tokens in one iteration
    inst = instance(make_policy("vllm", 256, 64))
    inst.cached_prefill = cached
    run(ListSource(inst.table, [0.0, 1.0], [256, 256], [1, 1], prefix_id=0, prefix_tokens=192), inst)
    assert inst.table.first_token_s - inst.table.arrival_s == pytest.approx(ttft)
    # vLLM's prefix_cache_queries / hits: 512 prompt tokens looked up, 192 found
    assert (inst.kv.query_tokens, inst.kv.hit_tokens) == ((512, 192) if cached else (0, 0))


def test_a_whole_prompt_prefix_still_computes_its_last_block():
    # a 128-token prompt that is all prefix: the second request may reuse at most 127 tokens,
    # whole blocks of them: 7 blocks (112 tokens), and computes the last 16 in one iteration
    inst = instance(make_policy("vllm", 256, 64))
    inst.cached_prefill = True
    run(ListSource(inst.table, [0.0, 1.0], [128, 128], [1, 1], prefix_id=0, prefix_tokens=128), inst)
    assert inst.table.first_token_s - inst.table.arrival_s == pytest.approx([0.10, 0.05])
    assert inst.kv.hit_tokens == 112


def test_workload_prefix_cache_reaches_the_requests():
    dist = TokenDist(mean=1000.0)
    shared = gamma_source(10.0, 1.0, 50, dist, TokenDist(mean=10.0), prefix_cache=PrefixCache(shared_prefix_tokens=600))
    t = shared.table
    assert set(t.prefix_id.tolist()) == {0} and np.all(t.prefix_tokens == np.minimum(600, t.prompt_tokens))
    hit = gamma_source(10.0, 1.0, 200, TokenDist(mean=1000.0, p50=1000.0, p99=3000.0), TokenDist(mean=10.0),
                       prefix_cache=PrefixCache(hit_rate=0.5))
    t = hit.table
    # 8 groups of 25 requests share one prefix each; the members after the first hold half of
    # all prompt tokens in their prefixes (the replay's hits with a cache that keeps them all)
    assert len(set(t.prefix_id.tolist())) == 8 and np.all(np.bincount(t.prefix_id) == 25)
    first = np.zeros(200, dtype=bool)
    first[np.unique(t.prefix_id, return_index=True)[1]] = True
    assert t.prefix_tokens[~first].sum() / t.prompt_tokens.sum() == pytest.approx(0.5, abs=0.002)
    assert np.all(t.prefix_tokens < t.prompt_tokens)
    for g in range(8):  # one prefix length per group
        assert len(set(t.prefix_tokens[t.prefix_id == g].tolist())) == 1
    plain = gamma_source(10.0, 1.0, 50, dist, TokenDist(mean=10.0))
    assert np.all(plain.table.prefix_id == -1)


@pytest.mark.parametrize("h", [0.3, 0.75])
def test_replayed_hit_rate_is_the_workloads_when_the_cache_holds_every_prefix(h):
    # 1,000 requests of ~2,000-token prompts at hit rate h through one instance whose cache
    # holds every group's prefix (8 groups): the measured token hit rate is h, less the block
    # rounding (under 16 tokens a request: < 0.8%)
    src = gamma_source(50.0, 1.0, 1000, TokenDist(mean=2000.0, p50=1800.0, p99=6000.0), TokenDist(mean=20.0),
                       seed=3, prefix_cache=PrefixCache(hit_rate=h))
    inst = instance(make_policy("vllm", 64, 8192), blocks=200_000, table=src.table)
    inst.cached_prefill = True
    run(src, inst)
    kv = inst.kv
    assert kv.query_tokens == int(src.table.prompt_tokens.sum())
    assert h - 0.01 <= kv.hit_tokens / kv.query_tokens <= h
    assert kv.evicted == 0


def test_speculating_steps_are_the_models_per_token_time():
    engine = EngineParams()
    hw = HardwareTable.from_cards([shipped.hardware_card("h100-sxm")], engine=engine)
    arch = ModelArch.from_card(shipped.model_card("llama-3.1-70b"))
    plan = Plans.of(hw=0, tp=4, pp=1, ep=1, dp=1, batch=32.0, wprec=1, kvprec=1, spec=1)
    sp = spm.Speculation("eagle", 3, 0.75)
    steps = speculating(StepTimes.build(arch, hw, plan, engine, Limits(32, 2048, 4096)), arch, hw, plan, engine, sp)
    for n, ctx in ((8, 2048.0), (32, 3000.0)):
        p = plan.with_batch(float(n))
        plain, _ = rt.cycle(arch, hw, p, Load.decode(float(n), ctx), engine)
        want = spm.per_token_s(arch, hw, p, float(n), ctx, engine, sp, plain, rt.cycle)[0]
        # the grid's context nodes are geometric: between them the lookup interpolates
        assert steps.decode_cycle_s(n, ctx) == pytest.approx(want, rel=0.01)
        assert steps.decode_cycle_s(n, ctx) < float(plain[0]) / 2


@pytest.mark.parametrize("spec, b_first, a_finish", [(False, 0.12, 0.18), (True, 0.17, 0.19)])
def test_colocated_speculation_budget_and_gain_by_hand(spec, b_first, a_finish):
    # FixedSteps: 10 ms a decode iteration, 50 ms one with prefill; budget 64 tokens. A (64-token
    # prompt, 10 tokens out) prefills in [0, 0.05) and decodes alone until B (62-token prompt,
    # 1 token out) arrives at 0.065: the decode stretch stops after the iteration in flight (0.07),
    # A has 3 tokens. Plain: [0.07, 0.12) A decodes and B's 62 tokens fit beside its 1 (B's first
    # token at 0.12); A's 6 more tokens end at 0.18. Speculating, k = 3 drafts, E = 2.5 tokens per
    # iteration: A takes 4 tokens of the budget, B gets 60 then 2 ([0.12, 0.17): first token 0.17);
    # A gains 1 + 1.5 tokens per mixed iteration: 1 + 1 (credit 0.5) after the first, 1 + 2 after
    # the second, so 8 tokens at 0.17 and 2 more decode steps end at 0.19
    policy = make_policy("vllm", 256, 64)
    inst = instance(policy)
    if spec:
        policy.decode_tokens = 4
        inst.spec_gain = 1.5
    run(ListSource(inst.table, [0.0, 0.065], [64, 62], [10, 1]), inst)
    t = inst.table
    assert t.first_token_s[0] == pytest.approx(0.05)
    assert t.first_token_s[1] == pytest.approx(b_first) and t.finish_s[1] == pytest.approx(b_first)
    assert t.finish_s[0] == pytest.approx(a_finish)


def test_speculating_mixed_iteration_prices_drafted_positions_and_drafts():
    engine = EngineParams()
    hw = HardwareTable.from_cards([shipped.hardware_card("h100-sxm")], engine=engine)
    arch = ModelArch.from_card(shipped.model_card("llama-3.1-70b"))
    plan = Plans.of(hw=0, tp=4, pp=1, ep=1, dp=1, batch=32.0, wprec=1, kvprec=1, spec=1)
    sp = spm.Speculation("eagle", 3, 0.75)
    plain = StepTimes.build(arch, hw, plan, engine, Limits(32, 2048, 4096))
    steps = speculating(StepTimes.build(arch, hw, plan, engine, Limits(32, 2048, 4096)), arch, hw, plan, engine, sp)
    assert steps.spec_k == 3 and steps.spec_gain == pytest.approx(2.734375)
    n, ctx, t, s = 16, 2048.0, 1024, 1024.0
    kn = 3 * n
    s_all = (t * s + kn * (2 * ctx - 1)) / (t + kn)
    p = plan.with_batch(float(n))
    draft = spm.draft_s(arch, hw, p, float(n), ctx, engine, sp, rt.cycle)[0]
    want = plain.cycle_s(n, ctx, t + kn, s_all, 1 + kn) + draft
    assert steps.cycle_s(n, ctx, t, s, 1) == pytest.approx(want, rel=0.01)
    assert steps.cycle_s(0, ctx, t, s, 1) == plain.cycle_s(0, ctx, t, s, 1)  # no decoders: no drafts


def test_only_colocated_instances_charge_drafts_to_the_token_budget():
    # a decode instance's budget is its batch (solver/plan/sim_instances.py): charging k + 1
    # tokens per decoder there would cap it at batch / (k + 1) sequences
    from solver.replay.instance import InstancePlan
    from solver.replay.requests import RequestTable
    from tests.replay.steps_stub import FixedSteps

    steps = FixedSteps()
    steps.spec_k, steps.spec_gain = 3, 2.5
    ip = InstancePlan(steps, 1000, "vllm", 64, 512)
    col, dec = ip.instance(RequestTable(), role="colocated"), ip.instance(RequestTable(), role="decode")
    assert (col.policy.decode_tokens, col.spec_gain) == (4, 1.5)
    assert dec.policy.decode_tokens == 1
