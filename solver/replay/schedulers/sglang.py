"""SGLang's scheduler (python/sglang/srt/managers/scheduler.py `get_next_batch_to_run`,
`get_new_batch_prefill`, `update_running_batch`; python/sglang/srt/managers/schedule_policy.py
`PrefillAdder`, at commit ad0119f; python/sglang/global_config.py for the ratio's defaults).

Followed:
- prefill first: when requests wait and some fit, the iteration is a prefill batch of them
  alone (decoding requests wait that iteration); otherwise every running request decodes. With
  `--enable-mixed-chunk` (off by default; `mixed_chunk`) the prefill batch also carries one
  decode token of every running request (`mix_with_running`), and those tokens come out of
  both token limits below (PrefillAdder's `mixed_with_decode_tokens` = the running batch size);
- a prefill batch takes the request being chunked first, then waiting requests FCFS while its
  tokens stay within `chunked_prefill_size` (the last admitted one is chunked to fit) and fewer
  than `max_running_requests` run; `--max-prefill-tokens` (default 16384) caps the batch's
  prompt tokens too: a waiting request of at least the tokens left under it is not added unless
  the batch is still empty (`AddReqResult.OTHER`), and the batch closes once either limit is
  spent (`budget_state`);
- admission by reserved tokens (`PrefillAdder.rem_total_tokens`): free KV tokens minus, for
  each running request, min(max_new_tokens - generated, 4096) x new_token_ratio, minus for each
  request admitted in this batch its prompt + min(max_new_tokens, 4096); a request is admitted
  while its prompt + min(max_new_tokens, 4096) fits (`CLIP_MAX_NEW_TOKENS_ESTIMATION` 4096,
  python/sglang/srt/managers/env_vars.py);
- new_token_ratio starts at 0.7 (`SGLANG_INIT_NEW_TOKEN_RATIO`), decays by (0.7 - 0.7 x 0.14) /
  600 per decode iteration (`SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR` 0.14,
  `SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS` 600) down to 0.7 x 0.14;
- when a decode step's KV does not fit (`check_decode_mem`), requests are retracted
  (`retract_decode`: the one with the fewest output tokens, then the longest prompt, first) back
  to the waiting queue, to be recomputed, and the ratio is reset to
  min(1, (tokens decoded + 20 x running) / (sum of max_new_tokens + 1)) (`retract_decode_steps`
  20).

Receive interval (`--scheduler-recv-interval`, default 1 = every loop;
python/sglang/srt/managers/scheduler_recv_skipper.py `SchedulerRecvSkipper`, weights from
python/sglang/srt/environ.py): the scheduler takes new requests from the tokenizer only when a
counter reaches the interval; each loop adds the weight of the batch it last ran (a decode 1,
no batch 1, anything else, a prefill, 1000) and the counter restarts at 0 at each receive. So
while the instance only decodes, a request that arrived waits until `recv_interval` decode
iterations have passed since the last receive; after a prefill batch the next loop receives.
An idle scheduler's loops are not timed: it receives at once.

max_new_tokens is the request's output length (benchmarks send it with ignore_eos). Defaults:
`chunked_prefill_size` 8192 on GPUs of 35-160 GB (16384 above; python/sglang/srt/server_args.py),
`max_running_requests` 1024 here (SGLang derives it from the KV pool size); token-granular KV
(page size 1).
"""

from __future__ import annotations

from solver.replay.schedulers.base import Batch, Policy, Seq

CLIP_MAX_NEW = 4096  # CLIP_MAX_NEW_TOKENS_ESTIMATION
MAX_PREFILL_TOKENS = 16384  # --max-prefill-tokens default (server_args.py `max_prefill_tokens`)
RETRACT_STEPS = 20  # global_config.retract_decode_steps


class SglangScheduler(Policy):
    name = "sglang"

    def __init__(self, max_running_requests: int = 1024, chunked_prefill_size: int = 8192,
                 block_tokens: int = 1, init_new_token_ratio: float = 0.7,
                 min_new_token_ratio_factor: float = 0.14, decay_steps: float = 600.0,
                 max_prefill_tokens: int = MAX_PREFILL_TOKENS, mixed_chunk: bool = False) -> None:
        self.max_seqs = int(max_running_requests)
        self.max_tokens = int(chunked_prefill_size)
        self.max_prefill_tokens = int(max_prefill_tokens)
        self.mixed_chunk = bool(mixed_chunk)
        self.block_tokens = int(block_tokens)
        self.init_ratio = float(init_new_token_ratio)
        self.min_ratio = min(self.init_ratio * min_new_token_ratio_factor, 1.0)
        self.decay = (self.init_ratio - self.min_ratio) / decay_steps
        self.ratio = self.init_ratio
        self.recv_interval = 1  # --scheduler-recv-interval (module docstring)
        self._recv_count = 0  # the skipper's counter since the last receive
        self._last: tuple[str, int] | None = None  # (kind of the batch last scheduled, iteration)

    def plan_budget(self, tokens: int) -> None:
        """A planned budget is launched as `--chunked-prefill-size` and, above the default cap,
        `--max-prefill-tokens` alike (solver/deploy/engines.py `sglang_args`)."""
        self.max_tokens = int(tokens)
        self.max_prefill_tokens = max(self.max_prefill_tokens, int(tokens))

    def _receive(self, inst) -> None:
        """`SchedulerRecvSkipper.handle` at this loop: mark the waiting requests received (`seen`)
        when the counter reaches the interval (module docstring)."""
        if self.recv_interval <= 1:
            return  # every loop: everything waiting is received (`_received`)
        if self._last is None or self._last[0] != "decode":
            due = True  # after a prefill (weight 1000) or from idle
        else:  # one per decode iteration since the last schedule
            self._recv_count += inst.stats.iterations - self._last[1]
            due = self._recv_count >= self.recv_interval
        if due:
            self._recv_count = 0
            for seq in reversed(inst.waiting):  # newcomers are at the back
                if seq.seen:
                    break
                seq.seen = True

    def _received(self, seq: Seq) -> bool:
        return self.recv_interval <= 1 or seq.seen

    def _reserved_tokens(self, inst) -> float:
        return sum(min(s.output - inst.generated(s), CLIP_MAX_NEW) for s in inst.running.values()) * self.ratio

    def schedule(self, inst) -> Batch:
        self._receive(inst)
        batch = self._choose(inst)
        kind = "prefill" if batch.prefill else "decode" if batch.decode else None
        self._last = (kind, inst.stats.iterations) if kind else None
        return batch

    def _choose(self, inst) -> Batch:
        batch = Batch()
        kv = inst.kv
        if inst.prefilling or (inst.waiting and self._received(inst.waiting[0])):
            self._prefill(inst, batch)
            if batch.prefill and self.mixed_chunk and kv.n_dec and kv.dec_fits():
                batch.decode = True  # mix_with_running
            if batch.prefill or batch.decode:
                return batch
        if kv.n_dec and not kv.dec_fits():
            self._retract(inst, batch)
        batch.decode = kv.n_dec > 0
        batch.stable = batch.decode and not batch.preempted
        return batch

    def _prefill(self, inst, batch: Batch) -> None:
        kv, bt = inst.kv, inst.kv.block_tokens
        mixed = kv.n_dec if self.mixed_chunk else 0  # mixed_with_decode_tokens
        budget = self.max_tokens - mixed  # rem_chunk_tokens
        prompt_left = self.max_prefill_tokens - mixed  # rem_input_tokens
        for seq in list(inst.prefilling):  # the request being chunked goes first
            new = min(seq.target - seq.computed, budget)
            if new > 0 and kv.grow(seq, seq.computed + new):
                batch.prefill.append((seq, new))
                budget -= new
                prompt_left -= new
        rem = kv.free * bt - self._reserved_tokens(inst)
        waiting = inst.waiting
        while (waiting and budget > 0 and prompt_left > 0 and len(inst.running) < self.max_seqs
               and self._received(waiting[0])):
            seq = waiting[0]
            inst.lookup(seq)
            need = seq.target - seq.computed
            new_max = min(seq.output - seq.generated, CLIP_MAX_NEW)
            if need + new_max > rem or (need >= prompt_left and batch.prefill):
                break
            new = min(need, budget)
            if not kv.grow(seq, seq.computed + new):
                break
            inst.admit(seq)
            rem -= need + new_max
            if new == 1 and seq.generated >= 1:  # holds its KV already (decode role)
                inst.join_decoders(seq)
                batch.decode = True
            else:
                batch.prefill.append((seq, new))
            budget -= new
            prompt_left -= new

    def _retract(self, inst, batch: Batch) -> None:
        kv = inst.kv
        while kv.n_dec and not kv.dec_fits():
            victim = min(inst.running.values(), key=lambda s: (inst.generated(s), -s.prompt, -s.admit))
            inst.preempt(victim)
            batch.preempted += 1
        running = list(inst.running.values())
        decoded = sum(inst.generated(s) for s in running)
        total = sum(s.output for s in running)
        self.ratio = min(1.0, (decoded + RETRACT_STEPS * len(running)) / (total + 1))

    def stretch_limit(self, inst) -> int:
        # the ratio decays every step, so a waiting request may fit at any step, unless the
        # running limit holds it back (that changes only when a request finishes)
        if not inst.waiting or len(inst.running) >= self.max_seqs:
            return 1 << 30
        if not self._received(inst.waiting[0]):  # nothing received waits: a stretch up to the next receive
            return max(self.recv_interval - self._recv_count, 1)
        return 1

    def decoded(self, steps: int) -> None:
        self.ratio = max(self.ratio - steps * self.decay, self.min_ratio)

    def preempted(self, inst, seq: Seq) -> None:
        pass
