"""Context parallelism (solver/perf/context_parallel.py) against hand-computed numbers.

Card values used below: llama-3.1-70b has 80 layers, 64 query heads, 8 KV heads of 128;
h100-sxm: NVLink 450 GB/s x 0.8 = 360 GB/s per direction with 8 us latency inside its 8-device
domain, the NIC 50 GB/s x 0.73 = 36.5 GB/s with 10 us (tests/perf/test_perf_formulas.py
checks the same card numbers).
"""

from __future__ import annotations

import numpy as np
import pytest

from solver.catalog import shipped
from solver.perf import context_parallel as cpm
from solver.perf.memory import memory
from solver.perf.stages import Load, pass_latency, stage_time
from solver.perf.tables import HardwareTable, Plans
from solver.schema.engine import EngineParams

BF16, FP8 = 0, 1
E = EngineParams(gpu_memory_utilization=0.90, runtime_reserve_gib=3.5, collective_buffer_gib=0.4,
                 step_overhead_ms=1.0, kernels_per_layer=10.0)
NVLINK, NVLINK_LAT = 360e9, 8e-6
NIC, NIC_LAT = 36.5e9, 10e-6
PROMPT = 131072  # 128K tokens


def plans(**kw) -> Plans:
    cols = dict(hw=0, tp=8, pp=1, ep=1, dp=1, batch=1, wprec=FP8, kvprec=BF16, cp=1)
    cols.update(kw)
    return Plans.of(**cols)


def test_devices_per_instance_include_cp():
    p = plans(tp=np.array([8, 8, 4]), pp=np.array([1, 2, 2]), cp=np.array([1, 4, 2]))
    assert list(p.devices) == [8, 64, 16]
    assert list(Plans.of(hw=0, tp=2, pp=1, ep=1, dp=1, batch=1, wprec=0, kvprec=0).cp) == [1]


def test_ring_step_hand_numbers(a70, h100):
    # tp8 cp4 = 32 devices > the 8-device domain: the ring's slowest hop is the NIC. A rank of a
    # 128K prompt holds 32768 tokens; one device's K and V of them for its 8 / 8 = 1 KV head:
    # 32768 x 2 x 1 x 128 elements x 2 bytes = 16 MiB per step and layer
    p = plans(tp=np.array([8, 2]), cp=np.array([4, 4]))
    assert cpm.kv_block_bytes(a70, p, 32768.0) == pytest.approx([16 * 2**20, 64 * 2**20])
    step = cpm.ring_step_s(a70, h100, p, 32768.0)
    # tp2 cp4 = 8 devices stay on NVLink; each device holds 8 / 2 = 4 KV heads: 64 MiB
    assert step[0] == pytest.approx(NIC_LAT + 16 * 2**20 / NIC, rel=1e-12)  # 0.4697 ms
    assert step[1] == pytest.approx(NVLINK_LAT + 64 * 2**20 / NVLINK, rel=1e-12)  # 0.1944 ms


def test_ring_exchange_hides_behind_attention_until_it_cannot(a70, h100):
    p = plans(cp=np.array([4, 4, 1]))
    send = NIC_LAT + 16 * 2**20 / NIC
    # 4 ms of attention per layer: 1 ms per step hides the 0.47 ms send; 0.4 ms: 0.1 ms per
    # step, 3 steps expose 3 x (send - 0.1 ms); cp 1 has no ring
    exposed = cpm.ring_exposed_s(a70, h100, p, 32768.0, np.array([4e-3, 0.4e-3, 0.4e-3]))
    assert exposed == pytest.approx([0.0, 3.0 * (send - 0.1e-3), 0.0], abs=1e-15)


def test_decode_merge_hand_numbers(a70, h100):
    # 64 decoding tokens x 64 / 8 = 8 query heads x 128 x 2 bytes = 131072 bytes per device.
    # tp8 cp2: the two CP ranks sit in two domains: one inter-domain all-reduce step pair,
    # 2 (m - 1) alpha + 2 (m - 1) / m x S / NIC with m = 2
    p = plans(cp=np.array([2, 1]))
    merge = cpm.decode_merge_s(a70, h100, p, 64.0)
    assert merge[0] == pytest.approx(2 * NIC_LAT + 131072 / NIC, rel=1e-12)
    assert merge[1] == 0.0
    # tp2 cp4 inside one node: ring all-reduce of 4 on NVLink, alpha + 2 x 3 / 4 x S / busbw,
    # S = 64 x 32 heads x 128 x 2 bytes
    inside = cpm.decode_merge_s(a70, h100, plans(tp=2, cp=4), 64.0)
    assert inside[0] == pytest.approx(NVLINK_LAT + 1.5 * 524288 / NVLINK, rel=1e-12)


def test_shard_splits_prefill_tokens_and_decode_context():
    load = Load.mixed(8.0, 4000.0, 2048.0, 8192.0)
    r = cpm.shard(load, plans(cp=4))
    assert float(r.pre_tokens[0]) == 512.0 and float(r.dec_ctx[0]) == 1000.0
    assert float(r.dec_seqs) == 8.0 and float(r.pre_prompt) == 8192.0
    # logits: the 8 decoding rows on every rank, the prompts completing (2048 / 8192) split
    assert float(r.logits[0]) == pytest.approx(8.0 + 0.25 / 4)


@pytest.mark.parametrize("profiles", [False, True], ids=["roofline", "measured"])
def test_cp4_prefill_of_128k_faster_than_cp1_slower_than_a_quarter(a70, profiles):
    card = shipped.hardware_card("h100-sxm")
    tables = None
    if profiles:
        from solver.perf.operators.tables import measured_tables
        tables = measured_tables([card], "vllm")
    hw = HardwareTable.from_cards([card], profiles=tables)
    p = plans(cp=np.array([1, 2, 4]))
    st = stage_time(a70, hw, p, Load.prefill(1.0, PROMPT), E)
    t = pass_latency(p, st, E)
    assert t[0] > t[1] > t[2]
    assert t[2] > t[0] / 4 and t[1] > t[0] / 2
    # the fixed costs (step overhead, kernels per layer) are what a rank cannot split; the rest
    # divides by cp within 2% at 128K (the exchange hides behind the attention)
    fixed = E.step_overhead_ms * 1e-3 + 80 * E.kernels_per_layer * 3e-6
    assert (t[2] - fixed) == pytest.approx((t[0] - fixed) / 4, rel=0.02)


def test_memory_per_device_falls_as_cp_grows(a70, h100):
    p = plans(cp=np.array([1, 2, 4, 8]), batch=2.0)
    m = memory(a70, h100, p, PROMPT, 2.0 * PROMPT, E)
    total = m.total
    assert np.all(np.diff(total) < 0)
    assert np.all(m.weights == m.weights[0])  # weights are replicated on every CP rank
    # KV: 2 sequences x 128K x 80 layers x 2 x 1 head x 128 x 2 bytes / cp
    kv1 = 2 * PROMPT * 80 * 2 * 128 * 2
    assert m.kv_cache == pytest.approx([kv1, kv1 / 2, kv1 / 4, kv1 / 8])
