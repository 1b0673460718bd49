"""Speculative decoding: the step time, TPOT and memory of a decode instance that speculates.

One speculative iteration (the service's `speculative:`, solver/schema/speculative.py) is

- k sequential draft steps: `draft`, k decode passes of the draft model (on the instance's TP
  group, pp 1, the target's context parallelism; its KV beside the target's); `eagle` and `mtp`,
  k passes of a head of one decoder layer of the target's shape plus the LM head (EAGLE,
  arXiv 2401.15077 section 4; DeepSeek-V3 MTP, arXiv 2412.19437 section 2.2: one block, the
  embedding and output head shared with the model, so the head adds one layer's weights and
  KV); `ngram`, nothing (prompt lookup on the CPU). A draft pass pays its kernels but not the
  engine's per-iteration step overhead (the scheduler runs once per verification);
- the target's verification of k + 1 positions per sequence in one iteration: the GEMMs see
  batch x (k + 1) tokens (weights read once), every sequence's KV is read once (multi-query
  verification kernels) and each of the k drafted queries attends over the whole context (as
  causal pairs of a prompt of 2 ctx - 1 tokens, whose mean keys per query are ctx).

It yields E = (1 - a^(k+1)) / (1 - a) tokens per sequence (Leviathan et al. 2023), so
TPOT = (verification + drafts) / E. While the decode step is bound by reading the weights
(small batch) the verification costs about one plain step and speculation divides TPOT by
about E; once the step is compute-bound the verification costs k + 1 plain steps' GEMMs and
speculation loses. The candidate table carries the plan with speculation on and off
(`Plans.spec`), decode and colocated rows alike (the colocated iteration with speculation:
solver/perf/colocated.py), so the fleet model picks it only where it pays.

The verification's activations grow with its k + 1 tokens per sequence; the target's KV for
the drafted positions is a few tokens per sequence and is not counted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from solver.perf import prefix
from solver.perf.arch import ModelArch
from solver.perf.memory import Memory, kv_bytes_per_token, memory, weight_bytes
from solver.perf.stages import Load
from solver.perf.tables import HardwareTable, Plans
from solver.schema.engine import EngineParams
from solver.schema.roles import COLOCATED, DECODE
from solver.schema.speculative import Speculative, expected_tokens

Cycle = Callable[..., tuple[np.ndarray, object]]  # solver.perf.runtime.cycle


@dataclass(frozen=True, slots=True)
class Speculation:
    """A service's speculative decoding as the performance model reads it."""

    method: str
    tokens: int  # k
    acceptance_rate: float  # a
    draft: ModelArch | None = None  # method draft: the draft model; eagle/mtp: None (the head)

    @classmethod
    def of(cls, spec: Speculative, draft: ModelArch | None = None) -> Speculation:
        return cls(spec.method, spec.tokens, spec.acceptance_rate, draft)

    @property
    def expected_tokens(self) -> float:
        return expected_tokens(self.tokens, self.acceptance_rate)

    def with_acceptance(self, a: float) -> Speculation:
        return dataclasses.replace(self, acceptance_rate=a)


def speculation_axis(spec: Speculation | None, role: int) -> list[int]:
    """The values of `Plans.spec` a (service, role) is evaluated at: off and on for decode and
    colocated instances of a service that may speculate (colocated: solver/perf/colocated.py),
    off otherwise (prefill does not decode)."""
    return [0, 1] if spec is not None and role in (DECODE, COLOCATED) else [0]


def head_arch(arch: ModelArch) -> ModelArch:
    """EAGLE / MTP head: one decoder layer of the target (an MoE layer for an MoE model), no
    embedding or LM head weights of its own (shared with the target)."""
    moe = 1 if arch.moe_layers else 0
    return dataclasses.replace(arch, layers=1, moe_layers=moe, dense_layers=1 - moe, local_layers=0,
                               local_window_tokens=None, embed_params=0, lm_head_params=0)


def _proposer(arch: ModelArch, plans: Plans, sp: Speculation) -> tuple[ModelArch, Plans]:
    """The model that drafts and the plans it runs at (pp 1; a draft model without EP or DP)."""
    one = np.ones(len(plans), dtype=int)
    if sp.method == "draft" and sp.draft is not None:
        cols = dict(pp=one, ep=one, dp=one)
        return sp.draft, dataclasses.replace(plans, spec=0 * one, **cols)
    return head_arch(arch), dataclasses.replace(plans, pp=one, spec=0 * one)


def verify_load(seqs, context, k: int) -> Load:
    """The target's verification of k + 1 positions of `seqs` sequences at `context` (module
    docstring): the sequences decode, their k drafted tokens ride as prefill tokens."""
    seqs = np.asarray(seqs, dtype=float)
    ctx = np.asarray(context, dtype=float)
    z = np.zeros_like(seqs * ctx)
    prompt = np.maximum(2.0 * ctx - 1.0, 1.0) + z
    return Load(seqs + z, ctx + z, k * seqs + z, prompt, prompt, (k + 1.0) * seqs + z)


def draft_s(arch: ModelArch, hw: HardwareTable, plans: Plans, seqs, context, engine: EngineParams,
            sp: Speculation, cycle: Cycle) -> np.ndarray:
    """Seconds of the k draft passes of one speculative iteration (0 for ngram)."""
    if sp.method == "ngram":
        return np.zeros(len(plans))
    model, dplans = _proposer(arch, plans, sp)
    per_rank = np.asarray(seqs, dtype=float) * dplans.dp / plans.dp
    one_pass, _ = cycle(model, hw, dplans, Load.decode(per_rank, context), engine)
    return sp.tokens * np.maximum(one_pass - engine.step_overhead_ms * 1e-3, 0.0)


def step_s(arch: ModelArch, hw: HardwareTable, plans: Plans, seqs, context, engine: EngineParams,
           sp: Speculation, cycle: Cycle) -> np.ndarray:
    """Seconds of one speculative iteration: the drafts, then the verification."""
    verify, _ = cycle(arch, hw, plans, verify_load(seqs, context, sp.tokens), engine)
    return verify + draft_s(arch, hw, plans, seqs, context, engine, sp, cycle)


def per_token_s(arch: ModelArch, hw: HardwareTable, plans: Plans, seqs, context, engine: EngineParams,
                sp: Speculation | None, plain, cycle: Cycle) -> np.ndarray:
    """Seconds per output token: `plain` (the ordinary decode iteration) where the plan does not
    speculate, the speculative iteration / E where it does."""
    on = plans.spec == 1
    if sp is None or not np.any(on):
        return plain
    spec = step_s(arch, hw, plans, seqs, context, engine, sp, cycle) / sp.expected_tokens
    return np.where(on, spec, plain)


def decode_tpots(arch: ModelArch, hw: HardwareTable, plans: Plans, seqs, wl, long_context, engine: EngineParams,
                 tpot, tpot99, cycle: Cycle) -> tuple[np.ndarray, np.ndarray]:
    """The decode role's p50 and p99 seconds per token (`per_token_s` at the workload's mean
    decode context and at `long_context`) under the workload's speculation."""
    sp = wl.speculation
    return (per_token_s(arch, hw, plans, seqs, wl.decode_context, engine, sp, tpot, cycle),
            per_token_s(arch, hw, plans, seqs, long_context, engine, sp, tpot99, cycle))


def decode_memory(arch: ModelArch, hw: HardwareTable, plans: Plans, seqs, wl, engine: EngineParams) -> Memory:
    """The decode role's memory per device: `seqs` sequences at the workload's decode context
    (a shared prefix's KV once per rank, solver/perf/prefix.py) plus, where the plan
    speculates, the proposer's."""
    ctx = prefix.kv_context(wl, wl.decode_context, np.asarray(seqs, dtype=float) / plans.dp)
    mem = memory(arch, hw, plans, ctx, seqs, engine)
    return with_proposer_memory(mem, arch, plans, seqs, wl.decode_context, wl.speculation)


def with_proposer_memory(mem: Memory, arch: ModelArch, plans: Plans, seqs, context,
                         sp: Speculation | None, verify_in_pass: bool = False) -> Memory:
    """`mem` plus, where the plan speculates, the proposer's weights and KV per device and the
    verification's activations (k + 1 tokens per sequence; `verify_in_pass`: `mem`'s pass
    already counts them, as a colocated token budget does)."""
    on = plans.spec == 1
    if sp is None or not np.any(on):
        return mem
    act = mem.activations * np.where(on & (not verify_in_pass), sp.tokens + 1.0, 1.0)
    if sp.method == "ngram":
        return dataclasses.replace(mem, activations=act)
    model, dplans = _proposer(arch, plans, sp)
    rank_seqs = np.asarray(seqs, dtype=float) / plans.dp
    kv = rank_seqs * np.asarray(context, dtype=float) / plans.cp * kv_bytes_per_token(model, dplans)
    return dataclasses.replace(
        mem,
        weights=mem.weights + np.where(on, weight_bytes(model, dplans), 0.0),
        kv_cache=mem.kv_cache + np.where(on, kv, 0.0),
        activations=act,
    )
