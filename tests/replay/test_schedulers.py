"""Each engine's batch choice on a hand-made state."""

from __future__ import annotations

import pytest

from solver.replay.schedulers import SglangScheduler, TrtllmScheduler, VllmScheduler, make_policy
from solver.replay.schedulers.base import Seq
from tests.replay.steps_stub import instance


def _decoder(inst, rid, prompt, output, generated=1):
    """A running request past its prompt, decoding."""
    s = Seq(rid, prompt, output, computed=prompt + generated - 1, generated=generated)
    inst.waiting.append(s)
    inst.admit(s)
    assert inst.kv.grow(s, s.computed)
    inst.join_decoders(s)
    return s


def _prefilling(inst, rid, prompt, output, computed):
    """A running request part way through its prompt (chunked prefill)."""
    s = Seq(rid, prompt, output, computed=computed)
    inst.waiting.append(s)
    inst.admit(s)
    assert inst.kv.grow(s, computed)
    return s


def _waiting(inst, rid, prompt, output):
    s = Seq(rid, prompt, output)
    inst.waiting.append(s)
    return s


def _table(inst, n):
    inst.table.add([0.0] * n, 1, 1)


def _prefilled(inst, batch):
    """The batch's one prompt computed: that request decodes from now on."""
    (done, tokens), = batch.prefill
    done.computed, done.generated = tokens, 1
    inst.prefilling.remove(done)
    inst.join_decoders(done)


def test_vllm_running_first_then_waiting_in_the_remaining_budget():
    inst = instance(VllmScheduler(max_num_seqs=256, max_num_batched_tokens=8192), blocks=10_000)
    _table(inst, 5)
    _decoder(inst, 0, 100, 50)
    _decoder(inst, 1, 200, 50)
    p = _prefilling(inst, 2, 6000, 50, computed=1000)
    w1, w2 = _waiting(inst, 3, 3000, 50), _waiting(inst, 4, 3000, 50)
    batch = inst.policy.schedule(inst)
    # budget 8192: 2 decode tokens, the running prompt's remaining 5000, then FCFS 3000 and a
    # chunk of the last 190
    assert batch.decode and inst.kv.n_dec == 2
    assert [(s.id, c) for s, c in batch.prefill] == [(p.id, 5000), (w1.id, 3000), (w2.id, 190)]
    assert not inst.waiting and not batch.stable and batch.preempted == 0


def test_vllm_sequence_limit_and_kv_block_head_of_line():
    inst = instance(VllmScheduler(max_num_seqs=2, max_num_batched_tokens=8192), blocks=10_000)
    _table(inst, 3)
    _decoder(inst, 0, 100, 50)
    _waiting(inst, 1, 100, 50)
    _waiting(inst, 2, 100, 50)
    batch = inst.policy.schedule(inst)
    assert [s.id for s, _ in batch.prefill] == [1] and len(inst.waiting) == 1  # max_num_seqs 2
    inst2 = instance(VllmScheduler(256, 8192), blocks=10)
    _table(inst2, 3)
    _decoder(inst2, 0, 100, 50)  # 7 blocks of 16
    _waiting(inst2, 1, 100, 50)  # needs 7: does not fit, and blocks the next one (FCFS)
    _waiting(inst2, 2, 10, 50)
    batch = inst2.policy.schedule(inst2)
    assert batch.decode and not batch.prefill and batch.stable and len(inst2.waiting) == 2


def test_vllm_preempts_the_last_admitted_by_recompute():
    inst = instance(VllmScheduler(256, 8192), blocks=4)
    _table(inst, 2)
    a = _decoder(inst, 0, 31, 50)  # holds 32 tokens' slots: 2 blocks
    b = _decoder(inst, 1, 31, 50)
    inst.kv.step += 1  # one decode ran: each needs a third block now (33 tokens)
    batch = inst.policy.schedule(inst)
    assert batch.preempted == 1 and batch.decode and not batch.prefill  # no admissions this step
    assert list(inst.waiting) == [b] and b.computed == 0 and b.generated == 2 and b.blocks == 0
    assert inst.kv.n_dec == 1 and a.admit >= 0
    assert inst.table.preemptions[1] == 1


def test_sglang_prefill_first():
    inst = instance(SglangScheduler(max_running_requests=64, chunked_prefill_size=8192), blocks=100_000)
    _table(inst, 3)
    _decoder(inst, 0, 100, 50)
    _waiting(inst, 1, 3000, 50)
    _waiting(inst, 2, 6000, 50)
    batch = inst.policy.schedule(inst)
    # a prefill batch alone (the decoder waits), the second prompt chunked to the 8192 budget
    assert not batch.decode
    assert [(s.id, c) for s, c in batch.prefill] == [(1, 3000), (2, 5192)]
    # the chunked request goes first next time
    for s, c in batch.prefill:
        s.computed += c
    inst.prefilling.remove(batch.prefill[0][0])
    batch = inst.policy.schedule(inst)
    assert [(s.id, c) for s, c in batch.prefill] == [(2, 808)]


def test_sglang_mixed_chunk_decodes_inside_both_token_limits():
    # --enable-mixed-chunk: the prefill batch carries the 2 decoders' tokens, which come out of
    # chunked_prefill_size (8192 - 2 = 8190) and max_prefill_tokens (5000 - 2 = 4998): the
    # first prompt (3000) is added whole, the second (6000) is at least the 1998 left under
    # max_prefill_tokens with the batch not empty, so the batch closes (AddReqResult.OTHER)
    policy = SglangScheduler(64, 8192, max_prefill_tokens=5000, mixed_chunk=True)
    inst = instance(policy, blocks=100_000)
    _table(inst, 4)
    _decoder(inst, 0, 100, 50)
    _decoder(inst, 1, 100, 50)
    _waiting(inst, 2, 3000, 50)
    _waiting(inst, 3, 6000, 50)
    batch = policy.schedule(inst)
    assert batch.decode and inst.kv.n_dec == 2
    assert [(s.id, c) for s, c in batch.prefill] == [(2, 3000)]
    _prefilled(inst, batch)
    # next loop, 3 decoders: the 6000-token prompt is first in its batch, so max_prefill_tokens
    # does not hold it; it is chunked to 8192 - 3 = 8189 >= 6000: whole
    batch = policy.schedule(inst)
    assert batch.decode and [(s.id, c) for s, c in batch.prefill] == [(3, 6000)]


def test_sglang_max_prefill_tokens_caps_a_prefill_batch_without_mixing():
    # SGLang's default max_prefill_tokens (16384) under a larger chunked_prefill_size (32768,
    # as InferenceX launches DeepSeek-R1): 10000 + 6000 fit; the third prompt (1000) is at
    # least the 384 left, so it waits; the decoder does not step (no mixing by default)
    policy = SglangScheduler(64, 32768)
    assert policy.max_prefill_tokens == 16384 and not policy.mixed_chunk
    planned = make_policy("sglang", 64, 32768)  # a plan's budget is launched as both flags
    assert (planned.max_tokens, planned.max_prefill_tokens) == (32768, 32768)
    assert make_policy("sglang", 64, 4096).max_prefill_tokens == 16384
    inst = instance(policy, blocks=100_000)
    _table(inst, 4)
    _decoder(inst, 0, 100, 50)
    for rid, prompt in ((1, 10000), (2, 6000), (3, 1000)):
        _waiting(inst, rid, prompt, 50)
    batch = policy.schedule(inst)
    assert not batch.decode
    assert [(s.id, c) for s, c in batch.prefill] == [(1, 10000), (2, 6000)]


def test_sglang_receive_interval_holds_arrivals_for_decode_iterations():
    # --scheduler-recv-interval 3: the first schedule (no batch before: idle) receives; while
    # it only decodes, a new arrival is taken after 3 decode iterations since that receive
    policy = SglangScheduler(max_running_requests=64, chunked_prefill_size=8192)
    policy.recv_interval = 3
    inst = instance(policy, blocks=100_000)
    _table(inst, 3)
    _decoder(inst, 0, 100, 50)
    assert policy.schedule(inst).decode  # received (nothing waits), counter 0
    _waiting(inst, 1, 300, 8)
    inst.stats.iterations = 1
    batch = policy.schedule(inst)  # one decode since the receive: not yet
    assert batch.decode and not batch.prefill and policy.stretch_limit(inst) == 2
    inst.stats.iterations = 3  # a stretch of the two decode iterations left
    batch = policy.schedule(inst)
    assert [(s.id, c) for s, c in batch.prefill] == [(1, 300)]
    _prefilled(inst, batch)
    # after that prefill batch (weight 1000) the next loop receives at once
    _waiting(inst, 2, 200, 8)
    inst.stats.iterations = 4
    assert [(s.id, c) for s, c in policy.schedule(inst).prefill] == [(2, 200)]


def test_sglang_receive_interval_one_is_every_loop():
    policy = SglangScheduler(max_running_requests=64, chunked_prefill_size=8192)
    inst = instance(policy, blocks=100_000)
    _table(inst, 2)
    _decoder(inst, 0, 100, 50)
    assert policy.schedule(inst).decode
    _waiting(inst, 1, 300, 8)
    inst.stats.iterations = 1
    assert len(policy.schedule(inst).prefill) == 1


def test_sglang_new_token_ratio_holds_back_admission_until_it_decays():
    # 1000 token slots; a decoder of prompt 100 (holds 101), 499 tokens still to generate;
    # a waiting prompt of 300 with 300 to generate needs 300 + 300 <= free - 499 x ratio
    policy = SglangScheduler(64, 8192)
    inst = instance(policy, blocks=1000)
    _table(inst, 2)
    _decoder(inst, 0, 100, 500)
    _waiting(inst, 1, 300, 300)
    assert inst.kv.free == 899
    assert policy.ratio == pytest.approx(0.7)  # 899 - 349.3 = 549.7 < 600
    batch = policy.schedule(inst)
    assert batch.decode and not batch.prefill
    assert policy.stretch_limit(inst) == 1  # the ratio may admit it at the next step
    policy.decoded(300)  # 0.7 - 300 x (0.7 - 0.098) / 600 = 0.399: 899 - 199.1 = 699.9 >= 600
    assert policy.ratio == pytest.approx(0.7 - 300 * (0.7 - 0.098) / 600)
    batch = policy.schedule(inst)
    assert [(s.id, c) for s, c in batch.prefill] == [(1, 300)] and not batch.decode
    policy.decoded(10_000)
    assert policy.ratio == pytest.approx(0.7 * 0.14)


def test_sglang_retracts_the_request_with_the_fewest_output_tokens():
    policy = SglangScheduler(64, 8192)
    inst = instance(policy, blocks=230)
    _table(inst, 2)
    a = _decoder(inst, 0, 100, 200, generated=10)  # 110 slots
    b = _decoder(inst, 1, 110, 200, generated=5)  # 115 slots
    inst.kv.step += 3  # 116 + 118 = 234 > 230 for the next step
    batch = policy.schedule(inst)
    assert batch.preempted == 1 and list(inst.waiting) == [b] and a.offset is not None
    # ratio = min(1, (decoded + 20 x running) / (sum of max_new_tokens + 1)) over the rest
    assert policy.ratio == pytest.approx((13 + 20) / 201)


def test_trtllm_guaranteed_no_evict_reserves_every_requests_full_length():
    # 10 blocks of 32 tokens; running: 64 + 128 tokens reserved (6 blocks) though it holds 3
    policy = TrtllmScheduler(max_batch_size=64, max_num_tokens=8192, overlap=False)  # capacity alone
    inst = instance(policy, blocks=10)
    _table(inst, 3)
    w0 = _waiting(inst, 0, 64, 128)
    batch = policy.schedule(inst)
    assert [(s.id, c) for s, c in batch.prefill] == [(0, 64)] and policy.reserved == 6
    w0.computed, w0.generated = 64, 1
    inst.prefilling.remove(w0)
    inst.join_decoders(w0)
    _waiting(inst, 1, 64, 64)  # 4 blocks: 6 + 4 fits
    _waiting(inst, 2, 32, 32)  # 2 more would not: waits although only 3 + 2 blocks are in use
    batch = policy.schedule(inst)
    assert batch.decode and [(s.id, c) for s, c in batch.prefill] == [(1, 64)]
    assert policy.reserved == 10 and [s.id for s in inst.waiting] == [2]
    assert inst.kv.free > 2  # the blocks are there; the reservation holds it back
    policy.left(w0)
    assert policy.reserved == 4


def test_trtllm_chunks_in_block_multiples_and_waits_unchunked():
    policy = TrtllmScheduler(64, 1000, chunked=True)
    assert policy._chunk(1500, 1000) == 992  # 31 blocks of 32
    assert policy._chunk(600, 1000) == 600
    unchunked = TrtllmScheduler(64, 1000, chunked=False)
    assert unchunked._chunk(800, 500) == 0  # waits for an iteration with room for all of it
    assert unchunked._chunk(1500, 1000) == 992  # longer than the budget: chunked anyway


def _trtllm(decoders, requests, max_tokens=8192, **settings):
    """A TensorRT-LLM policy (no overlap) with `settings` and an instance with `decoders`
    requests decoding."""
    policy = TrtllmScheduler(64, max_tokens, overlap=False)
    for name, value in settings.items():
        setattr(policy, name, value)
    inst = instance(policy)
    _table(inst, requests)
    for rid in range(decoders):
        _decoder(inst, rid, 16, 100)
    return policy, inst


def _held(policy, inst, limits):
    """Schedules at iterations 0, 1, ...: each a decode-only stable batch (the contexts held)
    whose stretch may last `limits[it]` iterations."""
    for it, limit in enumerate(limits):
        inst.stats.iterations = it
        batch = policy.schedule(inst)
        assert batch.decode and not batch.prefill and batch.stable
        assert policy.stretch_limit(inst) == limit


def _balanced(ranks=2, timeout=3, batching=0, requests=4):
    """A balancing TensorRT-LLM policy and an instance whose two ranks each decode one request."""
    return _trtllm(2, requests, adp_balance=True, adp_ranks=ranks, adp_timeout_iters=timeout,
                   adp_batching_wait_iters=batching)


def test_trtllm_attention_dp_balance_holds_a_lone_context_until_its_timeout():
    # two decoders (every rank has a generation request), one context: held for the first
    # timeout - 1 = 2 iterations (counted by the instance's iterations), sent at the 3rd
    policy, inst = _balanced()
    _waiting(inst, 2, 64, 8)
    _held(policy, inst, [2, 1])  # a decode stretch ends at the timeout
    inst.stats.iterations = 2
    batch = policy.schedule(inst)
    assert [(s.id, c) for s, c in batch.prefill] == [(2, 64)] and policy.stretch_limit(inst) == 1 << 30


def test_trtllm_attention_dp_balance_counts_iterations_without_contexts_too():
    # the engine's count runs while no context waits: after two context-free iterations a
    # context arriving in the third reaches the timeout (3) at once and goes
    policy, inst = _balanced()
    for it in range(2):
        inst.stats.iterations = it
        assert policy.schedule(inst).decode and policy.stretch_limit(inst) == 1 << 30
    _waiting(inst, 2, 64, 8)
    inst.stats.iterations = 2
    batch = policy.schedule(inst)
    assert [(s.id, c) for s, c in batch.prefill] == [(2, 64)]
    _prefilled(inst, batch)
    # the count restarted at the release: the next lone context waits a whole cycle again
    _waiting(inst, 3, 32, 8)
    inst.stats.iterations = 3
    assert not policy.schedule(inst).prefill and policy.stretch_limit(inst) == 2


def test_trtllm_attention_dp_balance_sends_when_every_rank_has_a_context():
    policy, inst = _balanced()
    _waiting(inst, 2, 64, 8)
    assert not policy.schedule(inst).prefill  # one context for two ranks: held
    _waiting(inst, 3, 32, 8)
    inst.stats.iterations = 1
    batch = policy.schedule(inst)  # two: one per rank, both go at once
    assert [(s.id, c) for s, c in batch.prefill] == [(2, 64), (3, 32)]


def test_trtllm_attention_dp_balance_does_not_hold_when_a_rank_has_no_generation():
    policy, inst = _balanced(ranks=3)  # two decoders for three ranks: one rank idle
    _waiting(inst, 2, 64, 8)
    assert [(s.id, c) for s, c in policy.schedule(inst).prefill] == [(2, 64)]


def test_trtllm_attention_dp_batching_wait_holds_full_rounds_too():
    # every rank has a context and a generation request: batching_wait_iters = 1 more iteration
    policy, inst = _balanced(batching=1)
    _waiting(inst, 2, 64, 8)
    _waiting(inst, 3, 64, 8)
    assert not policy.schedule(inst).prefill and policy.stretch_limit(inst) == 1
    assert len(policy.schedule(inst).prefill) == 2


def test_trtllm_attention_dp_balance_is_off_by_default():
    policy = TrtllmScheduler(64, 8192, overlap=False)
    policy.adp_ranks = 8  # attention DP without enable_balance (TensorRT-LLM's default)
    inst = instance(policy)
    _table(inst, 2)
    _decoder(inst, 0, 16, 100)
    _waiting(inst, 1, 64, 8)
    assert len(policy.schedule(inst).prefill) == 1


def _waits(timeout=3, ratio=0.5, max_tokens=1000, requests=4):
    """A batch-waiting TensorRT-LLM policy and an instance with one request decoding."""
    return _trtllm(1, requests, max_tokens, batch_wait_timeout_iters=timeout, batch_wait_max_tokens_ratio=ratio)


def test_trtllm_batch_waiting_holds_contexts_until_the_timeout():
    # one decoder, one 64-token context: 64 + 1 tokens < 0.5 x 1000, so it waits while the
    # count (0, 1, 2) is below the timeout 3 and goes at the 4th schedule, the count restarted
    policy, inst = _waits()
    _waiting(inst, 1, 64, 8)
    _held(policy, inst, [3, 2, 1])  # a decode stretch may cover the rest of the wait
    inst.stats.iterations = 3
    assert [(s.id, c) for s, c in policy.schedule(inst).prefill] == [(1, 64)]
    assert policy._wait_count == 0 and policy.stretch_limit(inst) == 1 << 30


def test_trtllm_batch_waiting_counts_the_iterations_a_stretch_held():
    # the first hold allows a stretch of 3 decode iterations; after it the count is 3: release
    policy, inst = _waits()
    _waiting(inst, 1, 64, 8)
    assert not policy.schedule(inst).prefill and policy.stretch_limit(inst) == 3
    inst.stats.iterations = 3
    assert len(policy.schedule(inst).prefill) == 1


def test_trtllm_batch_waiting_releases_at_the_token_ratio():
    # 300 + 250 prompt tokens + 1 decode token = 551 >= 0.5 x 1000: both go at once
    policy, inst = _waits()
    _waiting(inst, 1, 300, 8)
    assert not policy.schedule(inst).prefill  # 301 < 500: held
    _waiting(inst, 2, 250, 8)
    inst.stats.iterations = 1
    assert [(s.id, c) for s, c in policy.schedule(inst).prefill] == [(1, 300), (2, 250)]


def test_trtllm_batch_waiting_needs_generation_requests_and_a_timeout():
    policy = TrtllmScheduler(64, 1000, overlap=False)
    policy.batch_wait_timeout_iters, policy.batch_wait_max_tokens_ratio = 3, 0.5
    inst = instance(policy)
    _table(inst, 2)
    _waiting(inst, 0, 64, 8)  # nothing decodes: no waiting (the engine avoids a dead wait)
    assert len(policy.schedule(inst).prefill) == 1
    policy, inst = _waits(timeout=0)  # a ratio alone: the count is always at the timeout 0
    _waiting(inst, 1, 64, 8)
    assert len(policy.schedule(inst).prefill) == 1
    policy, inst = _waits()
    policy.adp_ranks = 2  # attention DP: the engine never batch-waits
    _waiting(inst, 1, 64, 8)
    assert len(policy.schedule(inst).prefill) == 1


def test_make_policy_sets_the_planned_batch_and_chunk():
    p = make_policy("vllm", batch=128, chunk=4096)
    assert (p.max_seqs, p.max_tokens, p.block_tokens) == (128, 4096, 16)
    d = make_policy("sglang")
    assert (d.max_tokens, d.block_tokens) == (8192, 1)
    t = make_policy("trtllm")
    assert (t.max_seqs, t.max_tokens, t.block_tokens) == (2048, 8192, 32)
    assert make_policy("vllm").max_seqs == 1024
    with pytest.raises(ValueError, match="no scheduler"):
        make_policy("tgi")
