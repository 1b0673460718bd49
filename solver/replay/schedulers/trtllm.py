"""TensorRT-LLM's batch manager: `SimpleScheduler` = a capacity scheduler, then a micro-batch
scheduler (tensorrt_llm/_torch/pyexecutor/scheduler.py at commit 034fffb, `BindCapacityScheduler`
defaulting to `GUARANTEED_NO_EVICT`, `PyMicroBatchScheduler`; the C++ ones they bind,
cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp and microBatchScheduler.cpp).

Followed:
- capacity scheduler, `GUARANTEED_NO_EVICT` (the default `CapacitySchedulerPolicy`): requests
  in flight keep running; a new request is admitted, FCFS, only if the KV blocks of its whole
  prompt + max new tokens fit next to the same full reservation of every request in flight, and
  fewer than `max_batch_size` are in flight; nothing is ever evicted;
- micro-batch scheduler: in-flight batching under `max_num_tokens` per iteration; generation
  requests first, one token each (1 + the draft tokens when the instance speculates:
  `decode_tokens`, microBatchScheduler.cpp counting a generation request's draft tokens
  against `max_num_tokens`), then context requests FCFS (`FIRST_COME_FIRST_SERVED`
  chunking) in the rest; with context chunking
  (`enable_chunked_prefill`) a context that does not fit is cut to a multiple of the KV block
  (`tokens_per_block` 32, `KvCacheConfig`, tensorrt_llm/llmapi/llm_args.py), without it a
  context waits until it fits whole (one longer than `max_num_tokens` is chunked anyway).

Overlap scheduler (the PyTorch backend's default since v0.20, `disable_overlap_scheduler`
False: PR #4174 "Enable scheduling overlap by default"; the sample's rows ran 1.0.0rc3):
`PyExecutor._executor_loop_overlap` (tensorrt_llm/_torch/pyexecutor/py_executor.py, 1.0
line) schedules and launches batch N+1 (`_schedule`, `_forward_step`, `_decode_async`) while
batch N still runs on the GPU, and only then handles batch N's outputs (`_update_requests`,
`_handle_responses`). So the batch that starts at a boundary was chosen at the start of the
iteration before it: a request that arrives while an iteration runs (a closed-loop client's
next request is sent after the previous one's last token came out) misses the batch already
scheduled and joins the one after it, two boundaries later, not one. The first tokens of
contexts completed in N go out once N+1 is launched (`late_first_token`): at N's end when N+1 is
a graphed decode, its eager launch time later when it carries prompt tokens (PR #14061, 2026,
makes an early emission opt-in; solver/replay/instance.py, solver/replay/steptime.py). When nothing is running the
executor waits for requests (`_fetch_new_requests`) and schedules one at once, so an arrival at
an idle engine (or one whose requests all finished) is not delayed. `overlap=False`
(`disable_overlap_scheduler: true`) schedules at each boundary what waits then.

Defaults: `max_batch_size` 2048 and `max_num_tokens` 8192 (tensorrt_llm/llmapi/llm_args.py);
chunking on here, as the planner's colocated plans assume (a plan's batch and chunk set them).

Attention-DP balancing (`attention_dp_config.enable_balance`, default off: `AttentionDpConfig`
in llm_args.py; `PyExecutor._balance_adp_requests` in py_executor.py, 1.0 line): with `adp_ranks`
attention-DP ranks, every iteration's context requests are held back (only the generation
requests run) until every rank has one; they go when every rank has one (after
`batching_wait_iters` more iterations if every rank also has generation requests), when the
count of iterations in which some rank had none (counted whether or not any context waits,
restarted at each release) reaches `timeout_iters`, or when some rank has no generation request.
The replay holds no ranks: every rank has a context when at least `adp_ranks` contexts would be
scheduled (the executor gives a new request to the rank with the fewest active ones, in a
closed loop the rank a finish freed), and generation requests when at least `adp_ranks`
sequences decode.

Batch waiting (`batch_wait_timeout_iters`, `batch_wait_max_tokens_ratio`, both 0 = off by
default in llm_args.py; `PyExecutor._waiting_requests`, called from `_schedule` only without
attention DP and when the scheduled batch has both context and generation requests): the
scheduled context requests are held (the generation requests run alone) until the iteration's
scheduled tokens (every held context's whole prompt plus one token per generation request)
reach ratio x `max_num_tokens`, or until the count of held iterations reaches the timeout; the
count restarts at each release and stands still in iterations without both kinds. With the
timeout at 0 the count is always at it: nothing waits. The policy holds them when
`adp_ranks` is 1 (set it to the attention-DP ranks of an attention-DP instance).
"""

from __future__ import annotations

from solver.replay.schedulers.base import Batch, Policy, Seq


class TrtllmScheduler(Policy):
    name = "trtllm"

    def __init__(self, max_batch_size: int = 2048, max_num_tokens: int = 8192, block_tokens: int = 32,
                 chunked: bool = True, overlap: bool = True) -> None:
        self.max_seqs = int(max_batch_size)
        self.max_tokens = int(max_num_tokens)
        self.block_tokens = int(block_tokens)
        self.chunked = bool(chunked)
        self.overlap = bool(overlap)
        self.late_first_token = self.overlap  # module docstring: outputs of N after N+1's launch
        self._fresh = False  # the last schedule saw requests it had not seen before
        self.reserved = 0  # blocks reserved for every request in flight (prompt + output)
        # attention-DP balancing (module docstring): off unless adp_ranks > 1 and adp_balance
        self.adp_ranks, self.adp_balance = 1, False
        self.adp_timeout_iters, self.adp_batching_wait_iters = 50, 10  # AttentionDpConfig defaults
        self._held_at: int | None = None  # iteration the contexts were first held at
        self._batching = 0  # held iterations while every rank had a context (batching wait)
        self._holding = 0  # iterations the hold still lasts at most (stretch_limit)
        # batch waiting (module docstring): off unless either is positive
        self.batch_wait_timeout_iters, self.batch_wait_max_tokens_ratio = 0, 0.0
        self._wait_count = 0  # held iterations since the last release
        self._wait_from: int | None = None  # iteration the last hold began at

    def _chunk(self, need: int, budget: int) -> int:
        """Tokens of a context that go into this iteration (0: it waits)."""
        if need <= budget:
            return need
        if not self.chunked and need <= self.max_tokens:
            return 0
        return budget // self.block_tokens * self.block_tokens

    def schedule(self, inst) -> Batch:
        kv = inst.kv
        batch = Batch()
        budget = self.max_tokens
        if kv.n_dec:  # reservations make this always fit
            batch.decode = True
            budget -= kv.n_dec * self.decode_tokens
        self._holding = 0
        if self._wait_from is not None:  # the iterations held by batch waiting since the last schedule
            self._wait_count += inst.stats.iterations - self._wait_from
            self._wait_from = None
        if (self.adp_balance and self.adp_ranks > 1 and self._hold_contexts(inst)) or (
                batch.decode and self._batch_waits(inst, budget)):
            batch.stable = batch.decode
            self._fresh = self._see(inst.waiting)
            return batch
        for seq in list(inst.prefilling):
            new = self._chunk(seq.target - seq.computed, budget)
            if new > 0 and kv.grow(seq, seq.computed + new):
                batch.prefill.append((seq, new))
                budget -= new
        waiting = inst.waiting
        lag = self.overlap and bool(inst.running)  # an idle executor schedules arrivals at once
        while waiting and len(inst.running) < self.max_seqs:
            seq = waiting[0]
            if lag and not seq.seen:  # arrived after this batch was chosen (module docstring)
                break
            inst.lookup(seq)
            full = kv.blocks_for(seq.prompt + seq.output)
            if self.reserved + full > kv.total:
                break
            ready = seq.target - seq.computed == 1 and seq.generated >= 1  # holds its KV (decode role)
            new = 1 if ready else self._chunk(seq.target - seq.computed, budget)
            if new <= 0 or not kv.grow(seq, seq.computed + new):
                break
            inst.admit(seq)
            seq.reserved = full
            self.reserved += full
            if ready:
                inst.join_decoders(seq)
                batch.decode = True
            else:
                batch.prefill.append((seq, new))
            budget -= new
        batch.stable = batch.decode and not batch.prefill
        self._fresh = self._see(waiting)
        return batch

    def _batch_waits(self, inst, budget: int) -> bool:
        """`_waiting_requests` for this iteration (module docstring): whether the contexts the
        iteration would schedule wait; sets how many iterations the hold lasts at most."""
        if self.adp_ranks > 1 or (self.batch_wait_timeout_iters <= 0 and self.batch_wait_max_tokens_ratio <= 0):
            return False
        tokens, contexts = inst.kv.n_dec * self.decode_tokens, 0
        for seq in inst.prefilling:
            new = self._chunk(seq.target - seq.computed, budget)
            if new > 0:
                tokens, budget, contexts = tokens + seq.prompt, budget - new, contexts + 1
        lag, reserved = self.overlap and bool(inst.running), self.reserved
        free = self.max_seqs - len(inst.running)
        for seq in inst.waiting:  # the admissions `schedule` would make, without making them
            full = inst.kv.blocks_for(seq.prompt + seq.output)
            if free <= 0 or (lag and not seq.seen) or reserved + full > inst.kv.total:
                break
            free, reserved = free - 1, reserved + full
            if seq.target - seq.computed == 1 and seq.generated >= 1:
                continue  # a decode-role request holding its KV: a generation request
            new = self._chunk(seq.target - seq.computed, budget)
            if new <= 0:
                break
            tokens, budget, contexts = tokens + seq.prompt, budget - new, contexts + 1
        if not contexts:
            return False
        if (self._wait_count >= self.batch_wait_timeout_iters
                or tokens >= self.batch_wait_max_tokens_ratio * self.max_tokens):
            self._wait_count = 0
            return False
        self._wait_from = inst.stats.iterations
        self._holding = self.batch_wait_timeout_iters - self._wait_count
        return True

    def _hold_contexts(self, inst) -> bool:
        """`_balance_adp_requests` for this iteration (module docstring): whether the context
        requests wait; sets how many iterations the hold lasts at most."""
        ranks, lag = self.adp_ranks, self.overlap and bool(inst.running)
        free = max(self.max_seqs - len(inst.running), 0)
        fresh = sum(1 for seq in inst.waiting if seq.seen or not lag)
        contexts = len(inst.prefilling) + min(fresh, free)
        gens = inst.kv.n_dec >= ranks
        self._holding = 0
        if contexts >= ranks:
            self._held_at = None
            if gens and self._batching < self.adp_batching_wait_iters:
                self._batching += 1
                self._holding = 1
                return True
            self._batching = 0
            return False
        # the engine's count runs in every iteration some rank lacks a context, none waiting
        # included, and restarts at the timeout: a lone context waits out the rest of the cycle
        if self._held_at is None:
            self._held_at = inst.stats.iterations
        count = (inst.stats.iterations - self._held_at) % self.adp_timeout_iters + 1
        if count >= self.adp_timeout_iters or not gens:
            self._held_at = None
            return False
        self._holding = self.adp_timeout_iters - count if contexts else 0
        return contexts > 0

    @staticmethod
    def _see(waiting) -> bool:
        """Mark what waits now as seen by this schedule (newcomers are at the back); whether
        any was new."""
        fresh = False
        for seq in reversed(waiting):
            if seq.seen:
                break
            seq.seen = fresh = True
        return fresh

    def stretch_limit(self, inst) -> int:
        """With the overlap lag, a pure decode batch chosen while newcomers wait is one
        iteration: they are considered at the next boundary."""
        if self.overlap and self._fresh:
            return 1
        return self._holding if self._holding else 1 << 30

    def left(self, seq: Seq) -> None:
        self.reserved -= seq.reserved
        seq.reserved = 0

    def preempted(self, inst, seq: Seq) -> None:
        self.left(seq)
