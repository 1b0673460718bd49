"""vLLM v1's scheduler (vllm/v1/core/sched/scheduler.py `Scheduler.schedule`, vLLM main at
commit 00024d3, the V1 engine since v0.8).

Followed: one token budget per step, `max_num_batched_tokens`, shared by decode tokens and
prefill chunks; RUNNING requests first, in order, each getting min(tokens it still needs,
budget) tokens; then, only if nothing was preempted this step, WAITING requests FCFS while the
budget lasts and fewer than `max_num_seqs` run, a long prompt taking the rest of the budget as a
chunk (chunked prefill), the head of the queue blocking the rest when its KV blocks do not fit;
KV blocks allocated per block (16 tokens) as the tokens are scheduled (`allocate_slots`); when a
running request cannot get its blocks, the last request of the running list (the most recently
admitted) is preempted by recompute (its blocks freed, back at the front of the waiting queue,
its prompt and the tokens generated so far computed again when it resumes).

Defaults: `max_num_batched_tokens` 8192 and `max_num_seqs` 1024, vLLM's defaults for the
OpenAI server on GPUs of >= 70 GiB other than A100 (vllm/engine/arg_utils.py
`get_batch_defaults`); a plan's batch and chunk set them.

Speculative decoding: a running request's next tokens are `num_tokens_with_spec +
num_output_placeholders - num_computed_tokens` (vllm/v1/request.py `num_tokens_with_spec`:
prompt + output + spec tokens), its sampled token and k drafts, all taken from the same token
budget: `decode_tokens` = k + 1 per decoder (solver/replay/speculation.py).

Not modelled: `long_prefill_token_threshold` (default 0, off), priority scheduling, a decode
batch larger than the token budget (every decoder steps; the budget goes to zero).
"""

from __future__ import annotations

from solver.replay.schedulers.base import Batch, Policy


class VllmScheduler(Policy):
    name = "vllm"

    def __init__(self, max_num_seqs: int = 1024, max_num_batched_tokens: int = 8192,
                 block_tokens: int = 16) -> None:
        self.max_seqs = int(max_num_seqs)
        self.max_tokens = int(max_num_batched_tokens)
        self.block_tokens = int(block_tokens)

    def schedule(self, inst) -> Batch:
        kv = inst.kv
        batch = Batch()
        budget = self.max_tokens
        while kv.n_dec and not kv.dec_fits():
            inst.preempt_last()
            batch.preempted += 1
        if kv.n_dec:
            batch.decode = True
            budget -= kv.n_dec * self.decode_tokens
        for seq in list(inst.prefilling) if inst.prefilling else ():
            if budget <= 0:
                break
            if seq.admit < 0:  # preempted above
                continue
            new = min(seq.target - seq.computed, budget)
            while not kv.grow(seq, seq.computed + new):
                victim = inst.preempt_last()
                batch.preempted += 1
                if victim is seq:
                    break
            if seq.admit < 0:
                continue
            batch.prefill.append((seq, new))
            budget -= new
        if inst.waiting and not batch.preempted:
            budget = self._admit(inst, batch, budget)
        batch.decode = batch.decode or kv.n_dec > 0
        batch.stable = batch.decode and not batch.prefill and not batch.preempted
        return batch

    def _admit(self, inst, batch: Batch, budget: int) -> int:
        """WAITING requests, FCFS, while the budget, the sequence limit and the KV blocks last."""
        kv, waiting = inst.kv, inst.waiting
        while waiting and budget > 0 and len(inst.running) < self.max_seqs:
            seq = waiting[0]
            inst.lookup(seq)
            new = min(seq.target - seq.computed, budget)
            if not kv.grow(seq, seq.computed + new):
                break
            inst.admit(seq)
            if new == 1 and seq.generated >= 1:  # holds its KV already (decode role, resumed)
                inst.join_decoders(seq)
                batch.decode = True
            else:
                batch.prefill.append((seq, new))
            budget -= new
        return budget
