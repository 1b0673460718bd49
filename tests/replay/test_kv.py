"""KV blocks: counts from the memory model, per-block growth, shared prefixes counted once,
and the decoding aggregate against a sequence-by-sequence count."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.perf.memory import memory
from solver.replay.kv import BLOCK_TOKENS, KVCache, kv_capacity_tokens
from solver.replay.schedulers.base import Seq
from tests.replay.test_steptime import _plan, _setup


def test_capacity_from_the_memory_model():
    arch, hw, engine = _setup()
    plan = _plan(tp=4)
    m = memory(arch, hw, plan, 0.0, 8192, engine)
    free = m.capacity[0] - m.weights[0] - m.activations[0] - m.reserve[0]
    # llama-3.1-70b fp8 KV at tp4: 80 layers x 2 (K, V) x 8/4 heads x 128 x 1 byte per device
    assert float(m.kv_bytes_per_token[0]) == 80 * 2 * 2 * 128
    assert kv_capacity_tokens(arch, hw, plan, engine, 8192) == int(free // (80 * 2 * 2 * 128))
    kv = KVCache.for_plan(arch, hw, plan, engine, 8192, BLOCK_TOKENS["vllm"])
    assert kv.total == kv_capacity_tokens(arch, hw, plan, engine, 8192) // 16


def test_attention_dp_multiplies_the_tokens():
    arch, hw, engine = _setup()
    one = kv_capacity_tokens(arch, hw, _plan(tp=4, dp=1), engine, 4096)
    two = kv_capacity_tokens(arch, hw, _plan(tp=4, dp=2), engine, 8192)  # same per-rank pass
    assert two == 2 * one


def test_no_room_when_the_weights_do_not_fit():
    arch, hw, engine = _setup()
    assert kv_capacity_tokens(arch, hw, _plan(tp=1), engine, 8192) == 0  # 70B fp8 on one 80 GB card


def test_blocks_grow_per_block_and_free():
    kv = KVCache(10, 16)
    a = Seq(0, 20, 5)
    assert kv.grow(a, 20) and a.blocks == 2 and kv.used == 2
    assert kv.grow(a, 32) and a.blocks == 2  # still inside the second block
    assert kv.grow(a, 33) and a.blocks == 3
    b = Seq(1, 200, 5)
    assert not kv.can_allocate(b, 113)  # 8 blocks, 7 free
    assert not kv.grow(b, 113) and b.blocks == 0 and kv.used == 3
    assert kv.grow(b, 112) and kv.free == 0
    kv.release(a)
    assert kv.free == 3 and a.blocks == 0


def test_shared_prefix_counted_once_per_instance():
    kv = KVCache(100, 16)
    a, b, c = Seq(0, 100, 5, prefix_id=7, prefix_tokens=40), Seq(1, 90, 5, 7, 40), Seq(2, 60, 5)
    assert kv.need(a, 100) == 7  # 2 full prefix blocks brought in + 5 of its own
    assert kv.grow(a, 100) and kv.used == 7 and kv.shared_blocks == 2
    assert kv.need(b, 90) == 4  # the prefix is there: ceil(90 / 16) - 2
    assert kv.grow(b, 90) and kv.used == 11
    assert kv.grow(c, 60) and kv.used == 15
    kv.release(a)
    assert kv.used == 10 and kv.shared_blocks == 2  # b still holds the prefix
    kv.release(b)
    assert kv.used == 4 and kv.shared_blocks == 0


@settings(max_examples=150, deadline=None)
@given(block=st.sampled_from([1, 16, 32]), total=st.integers(5, 600), step0=st.integers(0, 100),
       ctxs=st.lists(st.integers(1, 400), min_size=1, max_size=10), extra=st.integers(0, 5),
       limit=st.integers(1, 3000), leave=st.integers(0, 9))
def test_decoder_aggregate_equals_the_per_sequence_count(block, total, step0, ctxs, extra, limit, leave):
    kv = KVCache(total, block)
    kv.step = step0
    joined = []
    for i, c in enumerate(ctxs):
        s = Seq(i, c, 10)
        if not kv.grow(s, c):
            break
        joined.append((s, c, kv.dec_join(s, c)))
    kv.used += extra
    kv.step += 3  # the decoders ran 3 steps

    def blocks_at(j):  # every decoder holds context + steps run + the next token's slot
        return sum(-(-(c + 4 + j) // block) for _, c, _ in joined)

    for j in (0, 1, 5, 17, 40):
        assert kv.dec_used(kv.step + j) == blocks_at(j)
    fits = 0
    while fits < limit and kv.used + blocks_at(fits) <= total:
        fits += 1
    assert kv.dec_steps_fitting(limit) == fits
    if joined:
        s, c, a = joined[min(leave, len(joined) - 1)]
        before = kv.used + kv.dec_used(kv.step)
        kv.dec_leave(s, a)
        assert s.blocks == -(-(c + 4) // block)
        assert kv.used + kv.dec_used(kv.step) == before  # its blocks are its own again
        kv.release(s)
        assert kv.used + kv.dec_used(kv.step) == before - (-(-(c + 4) // block))


def test_block_sizes_of_the_engines():
    assert BLOCK_TOKENS == {"vllm": 16, "sglang": 1, "trtllm": 32}
    with pytest.raises(ValueError):
        KVCache(10, 0)


def test_freed_prefixes_stay_cached_and_the_least_recent_is_evicted_tail_first():
    # 10 blocks of 16 tokens. Prefix 1 and prefix 2 are 64 tokens (4 blocks) each
    kv = KVCache(10, 16)
    a = Seq(0, 80, 5, prefix_id=1, prefix_tokens=64)
    assert kv.lookup(a) == 0 and a.computed == 0  # nothing cached: a miss
    assert kv.grow(a, 80) and kv.used == 5  # 4 prefix blocks + 1 of its own
    kv.release(a)
    assert kv.used == 0 and kv.cached == 4 and kv.free == 10  # cached blocks count as free
    b = Seq(1, 80, 5, prefix_id=1, prefix_tokens=64)
    assert kv.lookup(b) == 64 and b.computed == 64  # a hit on all 4 blocks
    assert kv.need(b, 80) == 5  # its own block and the 4 cached ones it takes out of the cache
    assert kv.grow(b, 80) and kv.used == 5 and kv.cached == 0 and kv.shared_blocks == 4
    kv.release(b)
    c = Seq(2, 96, 5, prefix_id=2, prefix_tokens=64)
    assert kv.lookup(c) == 0
    assert kv.grow(c, 96) and kv.used == 6 and kv.cached == 4  # 6 + 4 = 10: nothing evicted
    kv.release(c)
    assert kv.cached == 8 and kv.evicted == 0  # prefix 1 freed first, then prefix 2
    d = Seq(3, 48, 5)  # no prefix: 3 blocks, 2 of them truly empty, 1 taken from the cache
    assert kv.grow(d, 48) and kv.used == 3
    e = Seq(4, 80, 5, prefix_id=1, prefix_tokens=64)
    # the lookup settles the cache: one block evicted, from the tail of prefix 1 (least recent)
    assert kv.lookup(e) == 48 and kv.evicted == 1 and kv.cached == 7
    f = Seq(5, 96, 5, prefix_id=2, prefix_tokens=64)
    assert kv.lookup(f) == 64  # prefix 2 untouched
    assert kv.grow(e, 80) and kv.used == 3 + 4 + 1  # e brings back the evicted block
    assert kv.cached == 4  # prefix 2 only


def test_a_cached_prefix_never_blocks_an_allocation():
    kv = KVCache(8, 16)
    a = Seq(0, 128, 5, prefix_id=7, prefix_tokens=128)
    assert kv.grow(a, 128)
    kv.release(a)
    assert kv.cached == 8 and kv.free == 8
    b = Seq(1, 128, 5)
    assert kv.grow(b, 128) and kv.used == 8  # the whole cache evicted, at the next settle
    c = Seq(2, 128, 5, prefix_id=7, prefix_tokens=128)
    assert kv.lookup(c) == 0 and kv.cached == 0 and kv.evicted == 8
