"""The replay of a planned fleet (solver/plan/simulate.py), on the shipped offline problem's plan
(a mixed service: one colocated pool, one prefill and one decode pool), with fixed-time
stand-in instances so that the fleet's wiring is checked apart from the engine model."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np
import pytest

from solver.catalog import shipped
from solver.errors import InputError
from solver.fleet.solve import SolveOptions
from solver.perf.tables import PRECISION_BYTES, precision_code
from solver.plan.planner import plan
from solver.plan.simulate import Makers, SimulateOptions, kv_link, pool_spec, simulate
from solver.plan.simulate import _hardware as hardware_table
from solver.problem.load import load_problem
from solver.schema.simulation import SimulationResult
from tests.support.replay_fakes import FifoServer, FixedSource

SERVICE_S = {"colocated": 0.3, "prefill": 0.05, "decode": 0.4}


# The wiring tests need a mixed plan. With the replay-fitted vLLM calibration (mixed-batch
# slowdown 1, hardware/calibration/vllm.yaml) the offline problem's plan is all colocated (2 x
# tp2 pp2 at batch 512); under the closed-form fit's slowdown (1.3459, its previous calibration)
# a mixed iteration costs more and the plan is the mixed one these tests were written on.
MIXED_SLOWDOWN = 1.3459


@lru_cache(maxsize=1)
def _offline():
    rp = load_problem(shipped.resolve("problems", "llama3-70b-offline"))
    rp = replace(rp, engine=rp.engine.model_copy(update={"mixed_batch_slowdown": MIXED_SLOWDOWN}))
    return rp, plan(rp, SolveOptions(time_limit_s=30), timings=False, compare=False)


@pytest.fixture(scope="module")
def offline():
    return _offline()


def replay_document(requests: int = 200) -> SimulationResult:
    """A replay of the offline plan on stand-in instances (the report tests render it)."""
    rp, doc = _offline()
    return simulate(rp, doc, SimulateOptions(requests=requests), _makers(), timings=False)


def _makers(made: list | None = None) -> Makers:
    def instance(spec, table, index):
        inst = FifoServer(table, SERVICE_S[spec.pool.role], spec.pool.role, index)
        if made is not None:
            made.append((spec, index))
        return inst

    def source(rp, si, qps, opts, seed):
        rng = np.random.default_rng(seed)
        n = opts.requests
        return FixedSource(np.cumsum(rng.exponential(1.0 / qps, n)), rng.integers(500, 3000, n), 20)

    return Makers(instance, source)


def test_every_pool_becomes_its_instances_in_the_plan_order(offline):
    rp, doc = offline
    made: list = []
    res = simulate(rp, doc, SimulateOptions(requests=300), _makers(made), timings=False)
    sr = doc.services[0]
    assert [(p.role, p.hardware, p.instances) for p in res.services[0].pools] == [
        (p.role, p.hardware, p.instances) for p in sr.pools]
    assert len(made) == sum(p.instances for p in sr.pools)
    # every request went to the colocated pool or through prefill + decode, by the plan's shares
    m = [p.replay.requests for p in res.services[0].pools]  # colocated, prefill, decode
    assert m[0] + m[1] == 300 and m[1] == m[2]
    share = sr.colocated_qps / (sr.colocated_qps + sr.disaggregated_qps)
    assert abs(m[0] - 300 * share) < 1.0


def test_replay_document_numbers(offline):
    rp, doc = offline
    res = simulate(rp, doc, SimulateOptions(requests=400, rate_scale=0.5, seed=5), _makers(), timings=False)
    SimulationResult.model_validate(res.model_dump())
    s = res.services[0]
    assert s.offered_qps == pytest.approx(doc.services[0].demand_qps * 0.5, rel=1e-6)
    assert s.replay.requests == 400 and s.replay.unfinished == 0
    for r in [s.replay] + [p.replay for p in s.pools]:
        assert r.ttft.p50_ms <= r.ttft.p90_ms <= r.ttft.p99_ms
        assert 0.0 <= r.goodput_share <= 1.0
    assert s.meets_slo == all(c.met for c in s.replay.slo) and len(s.replay.slo) == 1  # TTFT p50 only
    # a stand-in prefill takes 0.05 s: an unqueued disaggregated request's TTFT is at least
    # that plus its KV transfer; a colocated one's is the whole 0.3 s service
    assert s.pools[1].replay.ttft.p50_ms >= 50.0
    assert s.pools[0].replay.ttft.p50_ms == pytest.approx(300.0)  # most wait for nothing
    # the pools' quantiles (the plot's CDFs) run from the fastest to the slowest request
    q = s.pools[0].ttft_quantiles_ms
    assert len(q) == 101 and q == sorted(q) and q[50] == pytest.approx(s.pools[0].replay.ttft.p50_ms, abs=1e-3)


def test_same_seed_same_document_other_seed_other(offline):
    rp, doc = offline
    a, b, c = (simulate(rp, doc, SimulateOptions(requests=200, seed=k), _makers(), timings=False).model_dump_json()
               for k in (1, 1, 2))
    assert a == b and a != c


def test_kv_link_is_the_models_transfer(offline):
    # llama-3.1-70b: 80 layers x 8 KV heads x 128 dims x K and V = 163,840 KV elements per
    # token (models/llama-3.1-70b.yaml); fp8 = 1 byte; over the prefill instance's NICs
    rp, doc = offline
    pre = next(p for p in doc.services[0].pools if p.role == "prefill")
    spec = pool_spec(rp, 0, pre, hardware_table(rp))
    card = rp.hardware[rp.hw_index(pre.hardware)]
    bw = card.scale_out.bandwidth_gb_s * 1e9 * card.efficiency.scale_out * pre.devices_per_instance
    per_token = 80 * 8 * 128 * 2 * PRECISION_BYTES[precision_code(rp.problem.services[0].precision)]
    keep = 1.0 - rp.engine.kv_transfer_overlap
    expect = (card.scale_out.latency_us * 1e-6 + 2048 * per_token / bw) * keep
    assert float(kv_link(spec).seconds(2048)) == pytest.approx(expect, rel=1e-9)


def test_a_trace_replays_one_service(offline):
    rp, doc = offline
    two = doc.model_copy(update={"services": doc.services * 2})
    with pytest.raises(InputError, match="a trace replays one service; the plan has 2"):
        simulate(rp, two, SimulateOptions(arrival="trace:t.csv"), _makers())


def test_infeasible_plan_is_refused(offline):
    rp, doc = offline
    bad = doc.model_copy(update={"status": "infeasible", "infeasible_because": ["budget"]})
    with pytest.raises(InputError, match="infeasible"):
        simulate(rp, bad, SimulateOptions(requests=10), _makers())


def test_kv_link_of_a_heterogeneous_plan_is_the_planned_transfer():
    # the default problem's prefill pools carry the link their TTFT was planned with and the
    # transfer of a mean prompt (2,048 tokens) in it: the replay's link gives that time
    rp = load_problem(shipped.resolve("problems", "llama3-70b-online"))
    doc = plan(rp, SolveOptions(time_limit_s=30), timings=False, compare=False)
    hw = hardware_table(rp)
    pre = [p for p in doc.services[0].pools if p.role == "prefill"]
    assert pre and all(p.kv_link_gb_s is not None for p in pre)
    for p in pre:
        t_ms = float(kv_link(pool_spec(rp, 0, p, hw)).seconds(2048)) * 1e3
        assert t_ms == pytest.approx(p.kv_transfer_ms, rel=1e-3)
