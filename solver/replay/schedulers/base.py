"""What every scheduler policy sees and returns.

A policy object's `schedule(inst)` is called at an iteration boundary of one instance. It reads
and updates the instance's queues (`inst.running`: a dict of running sequences by admission
order; `inst.waiting`: a deque of sequences waiting, FCFS, preempted ones at the front) and its
KV cache (`inst.kv`, solver/replay/kv.py), through the instance's helpers `admit`, `preempt`
and `decoders_fit`, and returns a `Batch`: how many decoding sequences step (all of them, or
none), which sequences compute how many prefill tokens, how many were preempted. The instance
then runs the iteration and applies it.

Decoding sequences (exactly one token to compute, their prompt done) are held in aggregate by
the instance (see solver/replay/kv.py `dec_join`): a policy steps them all or none, which is
what vLLM, SGLang's decode batches and TensorRT-LLM do whenever the decode count fits the token
budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class Seq:
    """One request inside an instance. Token counts follow vLLM's request model: `target` =
    prompt + generated tokens is what must have KV computed before the next token is sampled;
    `computed` tokens have it. A fresh request has target = prompt; completing it samples the
    first token; a decoder computes one token per step; a preempted one recomputes from 0."""

    __slots__ = ("id", "prompt", "output", "computed", "generated", "blocks", "shared", "prefix_id",
                 "prefix_tokens", "offset", "base", "admit", "started", "reserved", "looked", "seen")

    def __init__(self, rid: int, prompt: int, output: int, prefix_id: int = -1, prefix_tokens: int = 0,
                 computed: int = 0, generated: int = 0) -> None:
        self.id = rid
        self.prompt = prompt
        self.output = output
        self.computed = computed
        self.generated = generated
        self.blocks = 0  # own KV blocks (solver/replay/kv.py)
        self.shared = 0  # shared-prefix blocks it refers to
        self.prefix_id = prefix_id
        self.prefix_tokens = min(prefix_tokens, prompt) if prefix_id >= 0 else 0
        self.offset = None  # KV aggregate offset while decoding (None: not a decoder)
        self.base = 0  # decode step at which computed / generated were last synced
        self.admit = -1  # admission order while running
        self.started = False  # scheduled at least once (queued_s recorded)
        self.reserved = 0  # blocks a no-evict policy reserved for it
        self.looked = 0  # prompt tokens its last prefix-cache lookup found (solver/replay/kv.py)
        self.seen = False  # waiting when a policy last scheduled (TensorRT-LLM's overlap lag)

    @property
    def target(self) -> int:
        return self.prompt + self.generated


@dataclass(slots=True)
class Batch:
    """One iteration's work as a policy chose it."""

    decode: bool = False  # every decoding sequence steps (one token each)
    prefill: list[tuple[Seq, int]] = field(default_factory=list)  # (sequence, tokens computed)
    preempted: int = 0
    stable: bool = False  # pure decode that the policy repeats until a finish / KV runs out

    def empty(self) -> bool:
        return not self.decode and not self.prefill


class Policy:
    """Defaults of the hooks an instance calls; engines override what they need."""

    name = "policy"
    block_tokens = 16
    max_seqs = 256
    max_tokens = 8192
    # budget tokens one decoding sequence takes per iteration: 1, or k + 1 when the instance
    # speculates (its sampled token and k drafts: solver/replay/speculation.py)
    decode_tokens = 1
    # an overlap scheduler: an iteration's outputs are handled after the next one is launched
    # (solver/replay/instance.py)
    late_first_token = False

    def schedule(self, inst) -> Batch:  # pragma: no cover - every engine defines it
        raise NotImplementedError

    def plan_budget(self, tokens: int) -> None:
        """A plan's token budget per iteration, as `fleetplan deploy` launches it
        (solver/deploy/engines.py): the engine's per-iteration token limit."""
        self.max_tokens = int(tokens)

    def stretch_limit(self, inst) -> int:
        """Pure decode steps the policy would repeat unchanged (no finish, no KV shortage)."""
        return 1 << 30

    def decoded(self, steps: int) -> None:
        """`steps` pure decode iterations ran (SGLang decays its new-token ratio)."""

    def left(self, seq: Seq) -> None:
        """A sequence finished or left the instance."""

    def preempted(self, inst, seq: Seq) -> None:
        """A sequence was preempted (its reservation, if any, goes)."""
