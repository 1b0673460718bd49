"""Properties of the vectorised performance model over random valid plans (hypothesis).

Plans are drawn over shipped models (dense, GQA, MoE, chunked-local attention), hardware cards
(switched NVLink, fully connected xGMI mesh, a 72-device NVLink domain), every tp that divides
the attention heads (up to 64, so tp can exceed the KV heads and the scale-up domain), pp 1-8,
ep / attention dp for MoE models, batch 1-512 and every precision. Each example evaluates the
two plans it compares in one vectorised call.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from solver.perf import closed_loop as loop
from solver.perf import runtime as rt
from solver.perf.arch import ModelArch
from solver.perf.colocated import colocated_role
from solver.perf.memory import kv_bytes_per_token, memory, weight_bytes
from solver.perf.stages import Load, stage_time
from solver.perf.tables import Plans
from solver.perf.validity import valid_mask
from solver.schema.engine import DEFAULT_ENGINE as E
from tests.support.strategies import arch, divisors, hw_table, plan_dicts

SETTINGS = settings(max_examples=60, deadline=None)


def two(d: dict, **changes) -> tuple[ModelArch, Plans]:
    """Rows 0 (d as drawn) and 1 (d with `changes`), checked valid."""
    a = arch(d["model"])
    cols = {k: [d[k], changes.get(k, d[k])] for k in ("hw", "tp", "pp", "ep", "dp", "batch", "wprec", "kvprec")}
    p = Plans.of(**cols)
    assume(bool(valid_mask(a, p).all()))
    return a, p


context = st.integers(1, 32768)
prompt = st.integers(1, 16384)


@SETTINGS
@given(plan_dicts(), st.data())
def test_more_tp_never_raises_weight_memory(d, data):
    a = arch(d["model"])
    bigger = [t for t in divisors(a.heads, 64) if t > d["tp"]]
    assume(bigger)
    t2 = data.draw(st.sampled_from(bigger))
    a, p = two(d, tp=t2)
    w = weight_bytes(a, p)
    assert w[1] <= w[0], (d, t2, w)
    kv = kv_bytes_per_token(a, p)
    assert kv[1] <= kv[0]


@SETTINGS
@given(plan_dicts(max_batch=511), st.data(), context)
def test_decode_step_never_falls_as_batch_grows(d, data, ctx):
    b2 = data.draw(st.integers(d["batch"] + 1, 512))
    a, p = two(d, batch=b2)
    tpot, _ = rt.cycle(a, hw_table(), p, Load.decode(p.batch, float(ctx)), E)
    assert np.all(np.isfinite(tpot)) and np.all(tpot > 0)
    assert tpot[1] >= tpot[0] * (1 - 1e-12), (d, b2, ctx, tpot)


@SETTINGS
@given(plan_dicts(max_batch=64), prompt, st.data())
def test_prefill_never_falls_as_prompt_grows(d, s1, data):
    s2 = data.draw(st.integers(s1 + 1, 32768))
    a, p = two(d)
    p = p.take(np.array([0, 0]))
    s = np.array([float(s1), float(s2)])
    hw = hw_table()
    st_ = stage_time(a, hw, p, Load.prefill(p.batch / p.dp, s), E)
    pp = p.pp.astype(float)
    latency = pp * st_.stage_s + (pp - 1) * st_.hop_s
    assert latency[1] >= latency[0] * (1 - 1e-12), (d, s1, s2, latency)
    # the role's figure (which also adds the step overhead) agrees
    r1 = rt.prefill_role(a, hw, p.take(np.array([0])), rt.Workload(float(s1), 64.0), rt.Slo(), E)
    r2 = rt.prefill_role(a, hw, p.take(np.array([0])), rt.Workload(float(s2), 64.0), rt.Slo(), E)
    assert r2.prefill_ms[0] >= r1.prefill_ms[0] * (1 - 1e-12)
    assert r2.ttft_p50_ms[0] >= r1.ttft_p50_ms[0] * (1 - 1e-12)


@SETTINGS
@given(plan_dicts(max_batch=511), st.data(), context)
def test_memory_grows_with_batch(d, data, ctx):
    b2 = data.draw(st.integers(d["batch"] + 1, 512))
    a, p = two(d, batch=b2)
    # decode: pass tokens = batch; prefill: batch x prompt
    for pass_tokens in (p.batch, p.batch * ctx):
        m = memory(a, hw_table(), p, float(ctx), pass_tokens, E)
        assert m.total[1] > m.total[0], (d, b2, ctx)
        assert m.kv_cache[1] > m.kv_cache[0]
        assert m.activations[1] >= m.activations[0]
        assert m.weights[1] == m.weights[0]


@SETTINGS
@given(plan_dicts(), st.data(), context)
def test_more_pp_never_raises_kv_or_weights_per_device(d, data, ctx):
    p2 = data.draw(st.integers(d["pp"] + 1, 9))
    a, p = two(d, pp=p2)
    kv = kv_bytes_per_token(a, p)
    assert kv[1] <= kv[0]
    m = memory(a, hw_table(), p, float(ctx), p.batch, E)
    assert m.kv_cache[1] <= m.kv_cache[0]
    assert m.weights[1] <= m.weights[0]


def _finite_positive(x, name, d) -> None:
    x = np.asarray(x, dtype=float)
    assert np.all(np.isfinite(x)), (name, d, x)
    assert np.all(x > 0), (name, d, x)


@SETTINGS
@given(plan_dicts(), st.integers(1, 16384), st.integers(1, 4096))
def test_outputs_finite_and_positive(d, s, o):
    a, p = two(d)
    p = p.take(np.array([0]))
    hw = hw_table()
    wl = rt.Workload(float(s), float(o))
    slo = rt.Slo(ttft_p50_ms=2000.0, tpot_p50_ms=50.0, safety_margin=0.05)

    dec = rt.decode_role(a, hw, p, wl, slo, E)
    pre = rt.prefill_role(a, hw, p, wl, slo, E)
    col = colocated_role(a, hw, p, wl, slo, E, chunk_tokens=2048.0)
    for r in (dec, pre, col):
        m = r.memory
        for f in ("weights", "kv_cache", "activations", "reserve", "capacity", "kv_bytes_per_token"):
            _finite_positive(getattr(m, f), f, d)
        for f in ("stage_s", "gemm_s", "attention_s", "overhead_s"):
            _finite_positive(getattr(r.breakdown, f), f, d)
        for f in ("hop_s", "comm_s"):
            x = getattr(r.breakdown, f)
            assert np.all(np.isfinite(x)) and np.all(x >= 0), (f, d)
        for f in ("capacity_qps", "tokens_per_s", "utilization"):
            x = getattr(r, f)
            assert np.all(np.isfinite(x)) and np.all(x >= 0), (f, d)
        # capacity only where the plan fits and meets the SLO
        assert np.all((r.capacity_qps > 0) <= (r.fits & r.slo_ok))
    _finite_positive(dec.decode_step_ms, "decode_step_ms", d)
    _finite_positive(dec.tpot_p50_ms, "tpot_p50_ms", d)
    _finite_positive(dec.tpot_p99_ms, "tpot_p99_ms", d)
    _finite_positive(pre.prefill_ms, "prefill_ms", d)
    _finite_positive(pre.ttft_p50_ms, "ttft_p50_ms", d)
    _finite_positive(pre.ttft_p99_ms, "ttft_p99_ms", d)
    assert pre.ttft_p99_ms[0] >= pre.ttft_p50_ms[0]
    for f in ("decode_step_ms", "tpot_p50_ms", "tpot_p99_ms", "ttft_p50_ms", "ttft_p99_ms", "prefill_ms"):
        x = getattr(col, f)
        assert np.all(np.isfinite(x)) and np.all(x > 0), (f, d)
    assert col.tpot_p99_ms[0] >= col.tpot_p50_ms[0] >= col.decode_step_ms[0] * (1 - 1e-12)

    cl = loop.closed_loop(a, hw, p, wl, float(p.batch[0]), E)
    for f in ("ttft_ms", "tpot_ms", "throughput_qps", "output_tokens_per_s", "decode_batch"):
        _finite_positive(getattr(cl, f), f, d)
