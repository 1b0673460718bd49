"""The KV cache of one engine instance as blocks: how many there are, who holds them.

Total blocks come from the memory model (solver/perf/memory.py `memory`): what the engine has
left per device after weights, activations of the largest forward pass and its reserves,
divided by the KV bytes one token of context takes on that device (at the KV precision, the
stage's layers, KV heads split over TP), times the attention-DP ranks (each holds its own
sequences), in blocks of the engine's size:

- vLLM: 16 tokens (`CacheConfig.block_size` default 16, vllm/config/cache.py);
- SGLang: token-granular, 1 (`--page-size` default 1, python/sglang/srt/server_args.py);
- TensorRT-LLM: 32 (`KvCacheConfig.tokens_per_block` default 32,
  tensorrt_llm/llmapi/llm_args.py).

A sequence holds ceil(tokens / block) blocks of its own and grows block by block as its context
grows; finishing (or a preemption) frees them.

Prefix caching, as vLLM's block pool keeps it (vllm/v1/core/block_pool.py, kv_cache_manager.py):
sequences with one `prefix_id` share the full blocks of their first `prefix_tokens` tokens (a
prefix id names a token string; a sequence shares as many of its leading blocks as its own
`prefix_tokens` cover). A prefix's blocks are counted once per instance while held (an entry:
holders, blocks). When the last holder frees them they stay cached: evictable, in a
least-recently-freed order (vLLM's `free_block_queue`: `free_blocks` appends a freed request's
blocks, its tail block first, and `get_new_blocks` pops from the head, evicting the cached
block it pops: `_maybe_evict_cached_block`). Cached blocks count as free for allocation; when
the blocks in use and the cached ones exceed the total, the least recently freed entry loses
blocks from its tail until they fit, then the next one. A waiting sequence's lookup
(`lookup`, vLLM's `get_computed_blocks` for a request with no computed tokens) finds the
leading blocks of its prefix still cached (at most its prompt less one token: vLLM computes the
last prompt token always) and its prefill starts after them; a hit on an evicted or never
computed prefix computes those tokens and caches them for the next one. Holding an entry again
takes its blocks out of the evictable ones (`touch`). Eviction is applied lazily, at the next
lookup, touch or release, which gives the order eager eviction would (nothing else reads or
reorders the evictable entries). The counters `query_tokens` and `hit_tokens` are vLLM's
`prefix_cache_queries` / `prefix_cache_hits` (prompt tokens looked up, tokens found).

Sliding-window layers are counted at full context (conservative for models with local layers).
"""

from __future__ import annotations

from collections import OrderedDict

from solver.perf.arch import ModelArch
from solver.perf.memory import memory
from solver.perf.tables import HardwareTable, Plans
from solver.schema.engine import EngineParams

BLOCK_TOKENS = {"vllm": 16, "sglang": 1, "trtllm": 32}  # sources: module docstring


def kv_capacity_tokens(arch: ModelArch, hw: HardwareTable, plan: Plans, engine: EngineParams,
                       pass_tokens: float) -> int:
    """Tokens of KV context one instance of `plan` (one row) holds, after weights, the
    activations of a forward pass of `pass_tokens` tokens, and the runtime reserve; 0 when the
    weights alone do not fit."""
    m = memory(arch, hw, plan, 0.0, pass_tokens, engine)
    free = float(m.capacity[0] - m.weights[0] - m.activations[0] - m.reserve[0])
    per_token = float(m.kv_bytes_per_token[0])
    if free <= 0 or per_token <= 0:
        return 0
    # attention DP ranks hold their own sequences; context-parallel ranks a share of each one's
    return int(free // per_token) * int(plan.dp[0]) * int(plan.cp[0])


class KVCache:
    """Block accounting of one instance. Sequences are any objects with integer attributes
    `blocks` (own blocks held), `shared` (prefix blocks it refers to, 0 until it holds its
    prefix), `prefix_id` (-1: none) and `prefix_tokens`."""

    __slots__ = ("total", "block_tokens", "used", "_prefixes", "_shared_blocks", "step", "_cnt", "_floor",
                 "n_dec", "_dec_cache", "_lru", "cached", "evicted", "query_tokens", "hit_tokens")

    def __init__(self, total_blocks: int, block_tokens: int = 16) -> None:
        if total_blocks < 0 or block_tokens < 1:
            raise ValueError("KVCache needs total_blocks >= 0 and block_tokens >= 1")
        self.total = int(total_blocks)
        self.block_tokens = int(block_tokens)
        self.used = 0
        self._prefixes: dict[int, list[int]] = {}  # prefix id -> [holders, blocks]
        self._shared_blocks = 0
        self._lru: OrderedDict[int, None] = OrderedDict()  # entries without holders, least recent first
        self.cached = 0  # blocks of those entries (evictable, counted as free)
        self.evicted = 0  # cached blocks evicted so far
        self.query_tokens = 0  # prompt tokens looked up
        self.hit_tokens = 0  # of them, found cached
        # decoding sequences, held in aggregate (see `dec_join`): the decode step counter, and
        # per residue r of their offsets mod block_tokens the count, plus the sum of floors
        self.step = 0
        self._cnt = [0] * self.block_tokens
        self._floor = 0
        self.n_dec = 0
        self._dec_cache = (-1, 0)

    @classmethod
    def for_plan(cls, arch: ModelArch, hw: HardwareTable, plan: Plans, engine: EngineParams,
                 pass_tokens: float, block_tokens: int = 16) -> KVCache:
        tokens = kv_capacity_tokens(arch, hw, plan, engine, pass_tokens)
        return cls(tokens // block_tokens, block_tokens)

    @property
    def free(self) -> int:
        """Blocks not held (negative for a moment when decoding sequences ran past the end:
        the scheduler's next decode check then fails and it preempts)."""
        return self.total - self.used - self.dec_used(self.step)

    # ---- decoding sequences in aggregate ------------------------------------------------------
    # A decoding sequence grows one token per decode step. Joining at step G with c tokens of
    # context computed, it holds ceil((c + 1) / b) - prefix blocks (the +1: the slot of the token
    # the next step writes), and at step G' ceil((a + G') / b) with offset
    # a = c + 1 - G - prefix * b. With a = b q + r, that is q + ceil((r + G') / b): a count per
    # residue r and the sum of the q give every decoder's blocks at any step in O(b).

    def dec_offset(self, seq, computed: int) -> int:
        return computed + 1 - self.step - self._prefix_blocks(seq) * self.block_tokens

    def dec_join(self, seq, computed: int) -> int:
        """Move a sequence's own blocks into the decoding aggregate; returns its offset."""
        a = self.dec_offset(seq, computed)
        self.used -= seq.blocks
        seq.blocks = 0
        q, r = divmod(a, self.block_tokens)
        step = self.step
        used = self.dec_used(step)  # the cache at the current step, then kept exact
        self._cnt[r] += 1
        self._floor += q
        self.n_dec += 1
        self._dec_cache = (step, used + q + (r + step + self.block_tokens - 1) // self.block_tokens)
        return a

    def dec_leave(self, seq, a: int) -> None:
        """Take a decoder out of the aggregate; it holds its current blocks on its own again."""
        q, r = divmod(a, self.block_tokens)
        step = self.step
        used = self.dec_used(step)
        self._cnt[r] -= 1
        self._floor -= q
        self.n_dec -= 1
        self._dec_cache = (step, used - q - (r + step + self.block_tokens - 1) // self.block_tokens)
        own = max(-(-(a + self.step) // self.block_tokens), 0)
        seq.blocks = own
        self.used += own

    def dec_used(self, step: int) -> int:
        """Blocks of the decoding sequences at decode step `step` (their next token's slot in)."""
        s0, used = self._dec_cache
        if s0 == step:
            return used
        b = self.block_tokens
        if s0 >= 0 and 0 <= step - s0 <= b:  # a few steps on: add the decoders whose block fills at each
            cnt = self._cnt
            for g in range(s0, step):
                used += cnt[-g % b]
            self._dec_cache = (step, used)
            return used
        used = self._floor
        for r, c in enumerate(self._cnt):
            if c:
                used += c * ((r + step + b - 1) // b)
        self._dec_cache = (step, used)
        return used

    def dec_fits(self, steps: int = 0) -> bool:
        """Whether every decoder can take its next token after `steps` more decode steps."""
        return self.used + self.dec_used(self.step + steps) <= self.total

    def dec_steps_fitting(self, limit: int) -> int:
        """How many decode steps from now (at most `limit`) every decoder gets its blocks: the
        steps at self.step, self.step + 1, ... up to the first that would run out."""
        if self.n_dec == 0:
            return limit
        room = self.total - self.used - self.dec_used(self.step)
        if room < 0:
            return 0
        b = self.block_tokens
        j = (room // self.n_dec) * b  # each block_tokens steps every decoder takes one block
        if j + 1 >= limit:
            return limit
        used = self.dec_used(self.step + j)
        cap = self.total - self.used
        while j + 1 < limit:
            used += self._cnt[(-(self.step + j)) % b]  # the decoders whose block fills at this step
            if used > cap:
                break
            j += 1
        return j + 1

    def blocks_for(self, tokens: int) -> int:
        return -(-int(tokens) // self.block_tokens)

    def _prefix_blocks(self, seq) -> int:
        """Full blocks of the sequence's shared prefix (0 without one)."""
        return seq.prefix_tokens // self.block_tokens if seq.prefix_id >= 0 else 0

    def _bring(self, seq, hold: int) -> int:
        """Blocks a sequence extending its hold on its prefix to `hold` blocks takes beyond its
        own: the prefix blocks no holder has brought in yet, and, on its first hold of an entry
        nobody holds, that entry's cached blocks (they stop being evictable)."""
        if hold <= seq.shared:
            return 0
        entry = self._prefixes.get(seq.prefix_id)
        if entry is None:
            return hold
        touch = entry[1] if entry[0] == 0 and not seq.shared else 0
        return max(hold - entry[1], 0) + touch

    def _split(self, seq, tokens: int) -> tuple[int, int]:
        """(prefix blocks held, own blocks) for `tokens` tokens of context: the blocks inside
        the prefix are the entry's (as its tokens are computed), the rest the sequence's own."""
        blocks = -(-int(tokens) // self.block_tokens)
        prefix = self._prefix_blocks(seq)
        return min(prefix, blocks), max(blocks - prefix, 0)

    def need(self, seq, tokens: int) -> int:
        """New blocks the sequence needs to hold `tokens` tokens of context (its own blocks
        beyond the shared prefix, and what holding the prefix takes: `_bring`)."""
        hold, own = self._split(seq, tokens)
        return max(own - seq.blocks, 0) + self._bring(seq, hold)

    def can_allocate(self, seq, tokens: int) -> bool:
        return self.need(seq, tokens) <= self.free

    def lookup(self, seq) -> int:
        """The tokens of a waiting sequence's prefix found cached (whole blocks, its prompt less
        one token at most); its `computed` is set to them."""
        prefix = self._prefix_blocks(seq)
        if not prefix:
            return 0
        self._settle()
        entry = self._prefixes.get(seq.prefix_id)
        hit = min(entry[1], prefix, (seq.prompt - 1) // self.block_tokens) if entry is not None else 0
        seq.computed = hit * self.block_tokens
        return seq.computed

    def grow(self, seq, tokens: int) -> bool:
        """Hold `tokens` tokens of context for `seq` if the blocks are free (True), else
        change nothing (False)."""
        if seq.prefix_id < 0:  # the fast path
            add = -(-tokens // self.block_tokens) - seq.blocks
            if add <= 0:
                return True
            if add > self.free:
                return False
            seq.blocks += add
            self.used += add
            return True
        hold, own = self._split(seq, tokens)
        own = max(own - seq.blocks, 0)
        if own + self._bring(seq, hold) > self.free:
            return False
        if hold > seq.shared:
            self._hold(seq, hold)
        seq.blocks += own
        self.used += own
        return True

    def _hold(self, seq, hold: int) -> None:
        """Extend the sequence's hold on its prefix's entry to `hold` blocks (a new holder on its
        first hold: an entry nobody held is touched, its cached blocks in use again)."""
        pid = seq.prefix_id
        entry = self._prefixes.get(pid)
        if not seq.shared:
            if entry is not None and entry[0] == 0:
                self._settle()
                entry = self._prefixes.get(pid)
                if entry is not None:
                    del self._lru[pid]
                    self.cached -= entry[1]
                    self.used += entry[1]
                    self._shared_blocks += entry[1]
            if entry is None:
                entry = self._prefixes[pid] = [0, 0]
            entry[0] += 1
        extend = max(hold - entry[1], 0)
        entry[1] += extend
        self.used += extend
        self._shared_blocks += extend
        seq.shared = hold

    def release(self, seq) -> None:
        """Free the sequence's own blocks and its hold on a shared prefix (the prefix stays
        cached, evictable, when it was the last holder)."""
        self.used -= seq.blocks
        seq.blocks = 0
        if seq.shared:
            pid = seq.prefix_id
            entry = self._prefixes[pid]
            entry[0] -= 1
            if entry[0] == 0:
                self.used -= entry[1]
                self._shared_blocks -= entry[1]
                self.cached += entry[1]
                self._lru[pid] = None
                self._settle()
            seq.shared = 0

    def _settle(self) -> None:
        """Evict cached blocks, least recently freed entry first and its tail first, until the
        blocks in use and the cached ones fit the total."""
        over = self.used + self.dec_used(self.step) + self.cached - self.total
        lru, prefixes = self._lru, self._prefixes
        while over > 0 and lru:
            pid = next(iter(lru))
            entry = prefixes[pid]
            take = min(entry[1], over)
            entry[1] -= take
            self.cached -= take
            self.evicted += take
            over -= take
            if entry[1] == 0:
                del lru[pid]
                del prefixes[pid]

    @property
    def shared_blocks(self) -> int:
        """Blocks held by shared prefixes (counted once each)."""
        return self._shared_blocks

