"""Prefix caching (solver/perf/prefix.py) against hand-computed numbers.

A prompt of s = 8192 tokens with c = 4096 of them cached prefills u = 4096 tokens, each attending
over the cached prefix and the new tokens before it: u c + u (u + 1) / 2 = 16,777,216 +
8,390,656 = 25,167,872 causal pairs, priced as u tokens of an equivalent prompt of
2 c + u = 12,288 tokens (4096 x 12,289 / 2 = the same 25,167,872).
"""

from __future__ import annotations

import numpy as np
import pytest

from solver.perf import prefix
from solver.perf import runtime as rt
from solver.perf.operators.counts import prefix_reads, window_pairs
from solver.perf.stages import Load, stage_time
from solver.perf.tables import Plans
from solver.schema.engine import EngineParams

E = EngineParams(step_overhead_ms=1.0, kernels_per_layer=10.0)


def plans(**kw) -> Plans:
    cols = dict(hw=0, tp=8, pp=1, ep=1, dp=1, batch=1.0, wprec=1, kvprec=1)
    cols.update(kw)
    return Plans.of(**cols)


def test_cached_prefix_load_hand_numbers():
    for wl in (rt.Workload(8192.0, 256.0, prefix_hit_rate=0.5),
               rt.Workload(8192.0, 256.0, shared_prefix_tokens=4096.0)):
        load = prefix.prefill_load(2.0, wl, 8192.0)
        assert float(load.pre_tokens) == 2 * 4096 and float(load.pre_prompt) == 12288
        assert float(load.pre_chunk) == 4096 and float(load.logits) == 2.0
        pairs = window_pairs(load.pre_tokens, load.pre_prompt, None)
        assert float(pairs) == 2 * 25_167_872
        # the cached tokens' KV is read once per prompt
        assert float(prefix_reads(load.pre_tokens, load.pre_prompt, load.pre_chunk, None)) == 2 * 4096
    plain = prefix.prefill_load(2.0, rt.Workload(8192.0, 256.0), 8192.0)
    assert float(plain.pre_tokens) == 2 * 8192 and float(plain.pre_prompt) == 8192


def test_cached_prefill_gemms_are_those_of_the_uncached_tokens(a70, h100):
    p = plans()
    cached = stage_time(a70, h100, p, prefix.prefill_load(1.0, rt.Workload(8192.0, 1.0, prefix_hit_rate=0.75),
                                                          8192.0), E)
    short = stage_time(a70, h100, p, Load.prefill(1.0, 2048.0), E)
    full = stage_time(a70, h100, p, Load.prefill(1.0, 8192.0), E)
    assert cached.gemm_s[0] == pytest.approx(short.gemm_s[0], rel=1e-12)
    # its attention sees the 6144 cached keys as well: above the short prompt's, below the full one's
    assert short.attention_s[0] < cached.attention_s[0] < full.attention_s[0]


def test_prefill_ttft_falls_and_capacity_rises_with_the_hit_rate(a70, h100):
    slo = rt.Slo(ttft_p50_ms=5000)
    out = [rt.prefill_role(a70, h100, plans(), rt.Workload(8192.0, 256.0, prefix_hit_rate=h), slo, E)
           for h in (0.0, 0.5, 0.9)]
    lat = [float(m.prefill_ms[0]) for m in out]
    cap = [float(m.capacity_qps[0]) for m in out]
    assert lat[0] > lat[1] > lat[2] and cap[0] < cap[1] < cap[2]
    # at h = 0.5 half the tokens are computed, with their attention over the whole prompt
    assert lat[0] / 2 < lat[1] < lat[0] * 0.6


def test_shared_prefix_kv_is_held_once_per_rank(a70, h100):
    # 64 sequences at context 8192 + 128, 4096 of it shared: 64 x 4224 + 4096 tokens instead of
    # 64 x 8320, per sequence 8320 - 4096 + 4096 / 64 = 4288
    assert float(prefix.kv_context(rt.Workload(8192.0, 256.0, shared_prefix_tokens=4096.0), 8320.0, 64.0)) == 4288.0
    slo = rt.Slo(tpot_p50_ms=100)
    d0 = rt.decode_role(a70, h100, plans(batch=64.0), rt.Workload(8192.0, 256.0), slo, E)
    d1 = rt.decode_role(a70, h100, plans(batch=64.0), rt.Workload(8192.0, 256.0, shared_prefix_tokens=4096.0), slo, E)
    assert d1.memory.kv_cache[0] == pytest.approx(d0.memory.kv_cache[0] * 4288 / 8320, rel=1e-12)
    # a hit rate says nothing about sharing: the KV stays
    dh = rt.decode_role(a70, h100, plans(batch=64.0), rt.Workload(8192.0, 256.0, prefix_hit_rate=0.5), slo, E)
    assert dh.memory.kv_cache[0] == d0.memory.kv_cache[0]
    assert np.isfinite(d1.tpot_p50_ms[0]) and d1.tpot_p50_ms[0] == d0.tpot_p50_ms[0]
