"""One simulated engine instance: the `Server` of solver/replay/requests.py for one replica.

Iterations run back to back while there is work, and the instance idles otherwise. At each
iteration boundary the scheduler policy (solver/replay/schedulers/) picks the batch; the
iteration's seconds come from the plan's `StepTimes` (solver/replay/steptime.py); at its end the
tokens are applied. A request's first token is emitted at the end of the iteration that
completes its prompt (vLLM samples it in that step: vllm/v1/core/sched/scheduler.py
`update_from_output`), each further token at the end of each later iteration it decodes in.

Roles: "colocated" (prompts and decodes in one engine); "prefill" (disaggregated: a request
leaves, returned by `advance`, with its prompt computed and first token sampled, its KV freed:
the fleet owns the link); "decode" (requests arrive holding their prompt's KV and first token,
are admitted when their blocks fit and decode from the second token on).

Speed: a pure decode batch the policy would repeat (nothing waiting that could be admitted)
stays the same until a request finishes, a KV block runs out or a request arrives; such a
stretch of k iterations is priced by one vectorised lookup (`StepTimes.decode_cycles_s`) and
applied in O(1): decoders are held in aggregate (a step counter, solver/replay/kv.py
`dec_join`, a heap of finishing steps). An arrival cuts the stretch after the iteration in
flight. The event loop (solver/replay/loop.py) sees `next_event_s`, the next end.

A request submitted at a boundary whose iteration is already scheduled waits for the next one.
Under an overlap scheduler (`policy.late_first_token`) the first tokens of an iteration go out
once the next iteration is launched: that launch's host time (`StepTimes.eager_s`) when it
carries prompt tokens (eager), nothing when it is a graphed decode or the engine idles.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from solver.perf.arch import ModelArch
from solver.perf.tables import HardwareTable, Plans
from solver.replay.kv import KVCache
from solver.replay.requests import RequestTable
from solver.replay.schedulers import make_policy
from solver.replay.schedulers.base import Batch, Policy, Seq
from solver.replay.steptime import Limits, StepTimes
from solver.schema.engine import EngineParams

Role = Literal["colocated", "prefill", "decode"]
MAX_STRETCH = 4096  # iterations priced in one lookup at most (bounds the arrays)
SHORT_STRETCH = 8  # stretches up to this long are priced by scalar lookups (cheaper than numpy)
_NONE = np.zeros(0, dtype=np.int64)


class InstanceLoad(NamedTuple):
    """What a router sees of an instance."""

    running: int
    waiting: int
    kv_used_blocks: int
    kv_total_blocks: int


@dataclass(slots=True)
class InstanceStats:
    """Running totals of one instance (time integrals in request-seconds / block-seconds)."""

    iterations: int = 0
    busy_s: float = 0.0
    waiting_s: float = 0.0  # integral of the waiting queue's length over time
    running_s: float = 0.0  # integral of the running requests
    kv_block_s: float = 0.0  # integral of the KV blocks in use
    max_waiting: int = 0
    preemptions: int = 0
    finished: int = 0
    rejected: int = 0  # requests whose KV can never fit (finish_s stays inf)
    last_s: float = 0.0  # the time the integrals reach

    @property
    def in_system_s(self) -> float:
        return self.waiting_s + self.running_s


class Instance:
    """One engine instance serving requests of `table` (see the module docstring)."""

    def __init__(self, table: RequestTable, steps: StepTimes, policy: Policy, kv: KVCache,
                 index: int = 0, role: Role = "colocated") -> None:
        if role not in ("colocated", "prefill", "decode"):
            raise ValueError(f"unknown instance role {role!r}")
        self.table, self.steps, self.policy, self.kv, self.index, self.role = table, steps, policy, kv, index, role
        self.running: dict[int, Seq] = {}  # by admission order
        self.prefilling: list[Seq] = []  # running, prompt (or recompute) not done, admission order
        self.waiting: deque[Seq] = deque()
        self.stats, self.t, self._admits = InstanceStats(), 0.0, 0  # self.t: the boundary the state is at
        self._heap: list[tuple[int, int, Seq]] = []  # (finish step, admit, seq) of decoders
        self._ctx_off = 0  # sum over decoders of (computed - base): their context at step G is this + n G
        self._pending: tuple | None = None  # (end_s, kind, payload) of the iteration / stretch in flight
        self._done: list[int] = []  # ids that left, not yet returned by advance
        self._firsts: list[int] = []  # first tokens sampled by the last iteration (late_first_token)
        # prefix caching (the service's workload.prefix_cache): a waiting prompt's prefill
        # starts after the blocks of its prefix the KV cache still holds (`lookup`;
        # solver/replay/kv.py: cached under LRU eviction), at least its last token left to compute
        self.cached_prefill = False
        # speculation (solver/replay/speculation.py): tokens a decoder gains per mixed iteration
        # beyond the one the bookkeeping gives (E - 1), and what of them is not yet a whole step
        self.spec_gain = 0.0
        self._credit = 0.0

    # ---- the Server protocol -----------------------------------------------------------------

    def submit(self, ids: np.ndarray, t_s: float) -> None:
        if self._pending is None and t_s > self.t:
            self._tick(t_s)
            self.t = t_s  # idle until now
        else:
            self._tick(max(t_s, self.stats.last_s))
        tab = self.table
        prompt, out = tab._prompt_tokens, tab._output_tokens
        pid, ptok = tab._prefix_id, tab._prefix_tokens
        decode = self.role == "decode"
        for i in np.asarray(ids, dtype=np.int64).tolist():
            p = int(prompt[i])
            seq = Seq(i, p, max(int(out[i]), 1), int(pid[i]), int(ptok[i]),
                      computed=p if decode else 0, generated=1 if decode else 0)
            self.waiting.append(seq)
        self.stats.max_waiting = max(self.stats.max_waiting, len(self.waiting))
        if self._pending is not None and self._pending[1] == "stretch":
            self._cut_stretch(t_s)

    def next_event_s(self) -> float:
        if self._pending is None:
            self._plan()
        if self._done:  # rejected while planning: they leave now
            return self.t
        return self._pending[0] if self._pending is not None else np.inf

    def advance(self, t_s: float) -> np.ndarray:
        while True:
            if self._pending is None:
                self._plan()
            if self._pending is None or self._pending[0] > t_s:
                break
            self._commit()
        if not self._done:
            return _NONE
        done, self._done = self._done, []
        return np.asarray(done, dtype=np.int64)

    def load(self) -> InstanceLoad:
        kv = self.kv  # used blocks: total - kv.free, without the property
        return InstanceLoad(len(self.running), len(self.waiting), kv.used + kv.dec_used(kv.step), kv.total)

    # ---- helpers the policies call -------------------------------------------------------------

    def lookup(self, seq: Seq) -> None:
        """Before a policy sizes a waiting sequence's first chunk: with prefix caching, its
        computed tokens are the cached blocks of its prefix (looked up again while it waits:
        they may be evicted meanwhile)."""
        if self.cached_prefill and seq.prefix_id >= 0 and not seq.shared and seq.computed == seq.looked:
            seq.looked = self.kv.lookup(seq)

    def admit(self, seq: Seq) -> None:
        """The head of the waiting queue starts running."""
        self.waiting.popleft()
        if self.cached_prefill and self.role != "decode":  # vLLM's prefix_cache_queries / hits
            self.kv.query_tokens += seq.prompt
            self.kv.hit_tokens += seq.looked
        seq.admit = self._admits
        self._admits += 1
        self.running[seq.admit] = seq
        if seq.target - seq.computed > 1 or seq.generated == 0:
            self.prefilling.append(seq)
        if not seq.started:
            seq.started = True
            # time from arrival to the first scheduled iteration; on a decode instance, to the
            # admission that gives its landed KV a slot (solver/replay/fleet.py `Disaggregated`)
            self.table._queued_s[seq.id] = self.t - self.table._arrival_s[seq.id]
            if self.role != "prefill":
                self.table._instance[seq.id] = self.index

    def join_decoders(self, seq: Seq) -> None:
        """A running sequence with its context computed starts decoding one token per step."""
        kv = self.kv
        seq.offset = kv.dec_join(seq, seq.computed)
        seq.base = kv.step
        self._ctx_off += seq.computed - kv.step
        heapq.heappush(self._heap, (kv.step + seq.output - seq.generated, seq.admit, seq))

    def _leave_decoders(self, seq: Seq) -> None:
        kv = self.kv
        self._ctx_off -= seq.computed - seq.base
        d = kv.step - seq.base
        seq.computed += d
        seq.generated += d
        kv.dec_leave(seq, seq.offset)
        seq.offset = None

    def preempt_last(self) -> Seq:
        """Preempt (by recompute) the most recently admitted running sequence."""
        return self.preempt(self.running[next(reversed(self.running))])

    def generated(self, seq: Seq) -> int:
        """Tokens the sequence has generated so far (decoders are held in aggregate)."""
        return seq.generated + (self.kv.step - seq.base if seq.offset is not None else 0)

    def preempt(self, seq: Seq) -> Seq:
        """Preempt a running sequence by recompute: blocks freed, back at the queue's front."""
        del self.running[seq.admit]
        if seq.offset is not None:
            self._leave_decoders(seq)
        else:
            self.prefilling.remove(seq)
        self.kv.release(seq)
        seq.computed = seq.looked = 0
        seq.admit = -1
        self.waiting.appendleft(seq)
        self.table._preemptions[seq.id] += 1
        self.stats.preemptions += 1
        self.policy.preempted(self, seq)
        return seq

    # ---- planning and applying iterations --------------------------------------------------------

    def _plan(self) -> None:
        """Schedule the iteration (or stretch of pure decode iterations) starting at self.t."""
        firsts, self._firsts = self._firsts, []
        if not self.running and not self.waiting:
            return
        batch = self.policy.schedule(self)
        if firsts and batch.prefill and self.policy.late_first_token:  # out after an eager launch
            self.table._first_token_s[firsts] += self.steps.eager_s
        if batch.empty():
            if not self.running and self.waiting:  # the head can never fit: the engine rejects it
                seq = self.waiting.popleft()
                self.stats.rejected += 1
                self._done.append(seq.id)
                self._plan()
            return
        kv, steps = self.kv, self.steps
        n = kv.n_dec if batch.decode else 0
        ctx = (self._ctx_off + n * kv.step) / n + 1.0 if n else 0.0
        if batch.stable and self._heap:
            k = min(self._heap[0][0] - kv.step, kv.dec_steps_fitting(MAX_STRETCH),
                    self.policy.stretch_limit(self), MAX_STRETCH)
            if k > 1:
                if k <= SHORT_STRETCH:
                    ends, t = [], self.t
                    for j in range(k):
                        t += steps.decode_cycle_s(n, ctx + j)
                        ends.append(t)
                else:
                    ends = (self.t + np.cumsum(steps.decode_cycles_s(n, ctx, k))).tolist()
                self._pending = (ends[-1], "stretch", (ends, k, n))
                return
        if not batch.prefill:
            dt = steps.decode_cycle_s(n, ctx)
        else:
            t = pairs = completing = 0
            for seq, c in batch.prefill:
                t += c
                pairs += c * (2 * seq.computed + c)
                completing += seq.computed + c == seq.target
            pieces = len(batch.prefill)
            if steps.pp > 1:  # the pp batches in flight each carry at most a budget's share
                pieces = max(pieces, -(-t // max(self.policy.max_tokens // steps.pp, 1)))
            dt = steps.cycle_s(n, ctx, t, pairs / t, completing, pieces)
        self._pending = (self.t + dt, "iter", batch)

    def _cut_stretch(self, t_s: float) -> None:
        """An arrival at t_s: keep the stretch's iterations that started before it."""
        end, _, (ends, k, n) = self._pending
        keep = 1 + bisect.bisect_left(ends, t_s, 0, k - 1)
        if keep < k:
            self._pending = (float(ends[keep - 1]), "stretch", (ends, keep, n))

    def _commit(self) -> None:
        end, kind, payload = self._pending
        self._pending = None
        self._tick(end)
        kv = self.kv
        self.stats.kv_block_s += (kv.used + kv.dec_used(kv.step)) * (end - self.t)  # held at the start
        if kind == "stretch":
            _, k, _ = payload
            self._decode_steps(k, end)
            self.policy.decoded(k)
        else:
            k = 1
            self._apply(payload, end)
        self.stats.iterations += k
        self.stats.busy_s += end - self.t
        self.t = end

    def _decode_steps(self, k: int, end: float) -> None:
        """Every decoder advanced k tokens; those that reached their output leave."""
        kv = self.kv
        kv.step += k
        heap = self._heap
        while heap and heap[0][0] <= kv.step:
            _, admit, seq = heapq.heappop(heap)
            if seq.admit != admit or seq.offset is None:
                continue  # preempted since
            self._leave_decoders(seq)
            self._finish(seq, end)

    def _apply(self, batch: Batch, end: float) -> None:
        if batch.decode:
            self._decode_steps(1, end)
            self.policy.decoded(1)
            if self.spec_gain and batch.prefill:
                self._spec_steps(end)
        first = self.table._first_token_s
        for seq, c in batch.prefill:
            seq.computed += c
            if seq.computed < seq.target:
                continue
            seq.generated += 1
            self.prefilling.remove(seq)
            if seq.generated == 1 and self.role != "decode":
                first[seq.id] = end
                self._firsts.append(seq.id)
            if self.role == "prefill":
                self._leave(seq)
            elif seq.generated >= seq.output:
                self._finish(seq, end)
            else:
                self.join_decoders(seq)

    def _spec_steps(self, end: float) -> None:
        """After a speculating mixed iteration: the decoders' tokens beyond one, as whole decode
        steps at its end (as many as the KV blocks allow; the rest stays owed)."""
        self._credit += self.spec_gain
        k = int(self._credit)
        if not k or not self.kv.n_dec:
            return
        k = min(k, self.kv.dec_steps_fitting(k))
        if k:
            self._decode_steps(k, end)
            self.policy.decoded(k)
            self._credit -= k

    def _leave(self, seq: Seq) -> None:
        self.running.pop(seq.admit)
        self.kv.release(seq)
        self.policy.left(seq)
        seq.admit = -1
        self._done.append(seq.id)

    def _finish(self, seq: Seq, end: float) -> None:
        self.table._finish_s[seq.id] = end
        self.stats.finished += 1
        self._leave(seq)

    def _tick(self, t_s: float) -> None:
        """Carry the queue integrals up to t_s."""
        st, dt = self.stats, t_s - self.stats.last_s
        if dt > 0:
            st.waiting_s += len(self.waiting) * dt
            st.running_s += len(self.running) * dt
            st.last_s = t_s


@dataclass(frozen=True, slots=True)
class InstancePlan:
    """What every instance of one plan shares: its iteration-time grid, KV block count and
    scheduler settings (build once with `instance_plan`, then one `Instance` per replica)."""

    steps: StepTimes
    kv_blocks: int
    engine: str
    batch: int  # max_num_seqs / max_running_requests / max_batch_size
    chunk: int  # max_num_batched_tokens / chunked_prefill_size / max_num_tokens
    cached_prefill: bool = False  # prefills start after their prefix (Instance.cached_prefill)

    def instance(self, table: RequestTable, index: int = 0, role: Role = "colocated") -> Instance:
        """One replica. With pp stages the engine keeps pp scheduled batches in flight, each within
        the budget (vLLM v1's batch queue of `max_concurrent_batches` = pp, vllm/v1/engine/core.py
        `step_with_batch_queue`): a cycle carries up to pp x chunk tokens, the sequence limit over all."""
        policy = make_policy(self.engine, self.batch, self.chunk * self.steps.pp)
        if role == "colocated":  # a decode instance's budget is its batch: its decoders always fit
            policy.decode_tokens = self.steps.spec_k + 1
        inst = Instance(table, self.steps, policy, KVCache(self.kv_blocks, policy.block_tokens), index, role)
        inst.cached_prefill = self.cached_prefill
        inst.spec_gain = self.steps.spec_gain - 1.0
        return inst


def instance_plan(arch: ModelArch, hw: HardwareTable, plan: Plans, engine: EngineParams, engine_name: str,
                  batch: int, chunk: int, max_context: int, speculation=None,
                  cached_prefill: bool = False) -> InstancePlan:
    """The shared parts of instances of `plan` (one row): the step-time grid up to `batch`
    sequences, `chunk` tokens per iteration, `max_context` of context; the KV blocks left after a
    pass of `chunk` tokens, in the engine's block size; a speculating plan (`plan.spec`, the
    service's `speculation`) decodes at the speculative rate (solver/replay/speculation.py)."""
    steps = StepTimes.build(arch, hw, plan, engine, Limits(batch, chunk, max_context))
    if speculation is not None and int(plan.spec[0]):
        from solver.replay.speculation import speculating

        steps = speculating(steps, arch, hw, plan, engine, speculation)
    block = make_policy(engine_name).block_tokens
    kv = KVCache.for_plan(arch, hw, plan, engine, chunk, block)
    return InstancePlan(steps, kv.total, engine_name, int(batch), int(chunk), cached_prefill)
