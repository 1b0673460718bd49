"""Assemble one engine iteration: operators per layer, summed along a pipeline stage.

The operators' seconds come from an `OperatorTimes` (solver/perf/operators/): the measured
tables where the hardware has them, the roofline elsewhere; this module only says which
operators a layer runs, how often, and how they add up.

An iteration (one forward pass) on one attention data-parallel rank carries a `Load`: some
decoding sequences (one new token each, reading their KV cache) and some prefill tokens (whole
prompts, or chunks of them). Prefill and decode are the two pure cases; colocated continuous
batching mixes them. Per layer we charge:

- QKV and output projections (GEMMs over all tokens of the iteration);
- attention: decode reads every sequence's KV; prefill is quadratic in the prompt (causal pairs),
  bounded by the window on chunked / sliding layers; MLA decode works on the latent cache;
- the MLP (dense) or the MoE block (router, experts sized by the tokens routed to a device, the
  weights of the experts actually touched, shared experts; measured routed-expert kernels where
  a `moe_experts` table covers the model, rescaled from the collector's balanced routing to the
  modelled one, see solver/perf/operators/measured.py);
- tensor-parallel all-reduces (attention out, MLP out) and, with attention data parallelism, the
  MoE dispatch/combine all-to-all; with context parallelism, the ring's exposed KV exchange
  and the decode merge (context_parallel.py);
- the small kernels (residual adds, norms, activation): a fixed cost per kernel plus their HBM
  traffic (`counts.elementwise`).

A stage holds ceil(L / pp) layers; the last stage also runs the LM head. Pipeline hand-offs are
point-to-point sends. Every quantity is an array over plans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.perf import context_parallel
from solver.perf.arch import ModelArch
from solver.perf.operators import OperatorTimes, operator_times
from solver.perf.tables import HardwareTable, Plans
from solver.profiles import SourceTally
from solver.schema.engine import EngineParams


@dataclass(frozen=True, slots=True)
class Load:
    """Work of one iteration on one attention-DP rank (arrays broadcastable to the plans)."""

    dec_seqs: np.ndarray  # decoding sequences, one token each
    dec_ctx: np.ndarray  # mean KV context (tokens) of those sequences
    pre_tokens: np.ndarray  # prefill tokens processed
    pre_prompt: np.ndarray  # length of the prompts those tokens belong to
    pre_chunk: np.ndarray  # tokens of one prompt per iteration (== prompt when unchunked)
    logits: np.ndarray  # rows that need the LM head (decoding seqs + prompts completing)

    @classmethod
    def prefill(cls, prompts, prompt_tokens) -> Load:
        prompts = np.asarray(prompts, dtype=float)
        s = np.asarray(prompt_tokens, dtype=float)
        z = np.zeros_like(prompts * s)
        return cls(z, z, prompts * s, s + z, s + z, prompts + z)

    @classmethod
    def decode(cls, seqs, context) -> Load:
        seqs = np.asarray(seqs, dtype=float)
        ctx = np.asarray(context, dtype=float)
        z = np.zeros_like(seqs * ctx)
        return cls(seqs + z, ctx + z, z, z, z, seqs + z)

    @classmethod
    def mixed(cls, seqs, context, chunk_tokens, prompt_tokens) -> Load:
        """Decode batch plus `chunk_tokens` of prefill work from prompts of `prompt_tokens`."""
        seqs = np.asarray(seqs, dtype=float)
        ctx = np.asarray(context, dtype=float)
        c = np.asarray(chunk_tokens, dtype=float)
        s = np.asarray(prompt_tokens, dtype=float)
        z = np.zeros_like(seqs * ctx * c * s)
        per_prompt = np.minimum(c, s)
        completing = c / np.maximum(s, 1.0)  # prompts finishing per iteration on average
        return cls(seqs + z, ctx + z, c + z, s + z, per_prompt + z, seqs + completing + z)

    def scaled(self, share) -> Load:
        """The load of one DP rank when the instance's load is split `share` ways."""
        return Load(
            self.dec_seqs / share,
            self.dec_ctx,
            self.pre_tokens / share,
            self.pre_prompt,
            self.pre_chunk,
            self.logits / share,
        )


@dataclass(frozen=True, slots=True)
class StageTime:
    """Seconds per pipeline stage for one iteration, with a breakdown (arrays)."""

    stage_s: np.ndarray  # slowest stage (the last, with the LM head)
    hop_s: np.ndarray  # point-to-point hand-off between stages
    gemm_s: np.ndarray  # projections, MLP/experts, LM head
    attention_s: np.ndarray
    comm_s: np.ndarray  # all-reduce / all-to-all inside the stage
    overhead_s: np.ndarray  # small kernels: fixed launch costs and their HBM traffic
    sources: dict[str, np.ndarray]  # share of operator time: measured, interpolated, ...
    # of gemm_s + comm_s, the MoE layers' expert block and all-to-all: work set by the tokens of
    # the whole MoE group (every attention-DP rank's), not the rank's own (zero for dense models)
    group_s: np.ndarray | None = None


def _attention(times: OperatorTimes, load: Load, window, count) -> np.ndarray:
    """Decode plus prefill attention of one layer with the given window (None: global)."""
    return (times.decode_attention(load.dec_seqs, load.dec_ctx, window, count)
            + times.prefill_attention(load.pre_tokens, load.pre_prompt, load.pre_chunk, window, count))


def _attention_layers(arch: ModelArch, times: OperatorTimes, load: Load, layers) -> np.ndarray:
    """Attention of the model's mean layer: global layers, and local (windowed) ones."""
    n_local = arch.local_layers
    n_global = arch.layers - n_local
    attn = _attention(times, load, None, layers * n_global / arch.layers) * (n_global / arch.layers)
    if n_local:
        w_local = layers * n_local / arch.layers
        attn = attn + _attention(times, load, arch.local_window_tokens, w_local) * (n_local / arch.layers)
    return attn


def _feed_forward(arch: ModelArch, times: OperatorTimes, plans: Plans, tokens, layers):
    """The mean layer's MLP or MoE compute, its all-reduces and all-to-all, and of those the
    MoE block and all-to-all (`StageTime.group_s` per layer)."""
    dense_share = arch.dense_layers / arch.layers
    moe_share = arch.moe_layers / arch.layers
    ffn = np.zeros_like(tokens)
    group = np.zeros_like(tokens)
    if arch.dense_layers:
        ffn = ffn + times.dense_mlp(tokens, layers * dense_share) * dense_share
    if arch.moe_layers:
        block = times.moe_block(tokens, layers * moe_share) * moe_share
        ffn = ffn + block
        a2a = times.moe_all_to_all(tokens, layers * moe_share)
        group = block + a2a * moe_share
    # the layer's all-reduces: after attention, and after the MLP or the MoE block
    tp_ar = times.tp_all_reduce(tokens, 2.0 * layers)
    comm = np.zeros_like(tokens)
    if arch.dense_layers:
        comm = comm + tp_ar * dense_share
    if arch.moe_layers:
        # dp == 1: tokens are replicated on the TP group; experts' partial outputs are summed
        # by the same all-reduce a dense MLP needs. dp > 1: dispatch and combine as well
        comm = comm + (a2a + tp_ar) * moe_share
    return ffn, comm + tp_ar, group  # with the attention output's all-reduce


def stage_time(
    arch: ModelArch, hw: HardwareTable, plans: Plans, load: Load, engine: EngineParams
) -> StageTime:
    """Time of one iteration of `load` (per DP rank) on the slowest pipeline stage; with context
    parallelism, of one CP rank's share (solver/perf/context_parallel.py)."""
    tally = SourceTally(len(plans))
    times = operator_times(arch, hw, plans, tally)
    load = context_parallel.shard(load, plans)
    layers = np.ceil(arch.layers / plans.pp.astype(float))
    tokens = load.dec_seqs + load.pre_tokens

    proj = times.projections(tokens, layers)
    attn = _attention_layers(arch, times, load, layers)
    ffn, comm, group = _feed_forward(arch, times, plans, tokens, layers)
    comm = comm + context_parallel.exchange_s(arch, hw, plans, load, attn)
    # the small kernels: their launch costs and their HBM traffic
    kernel_s = (times.layer_kernel_overhead(engine) + times.elementwise(tokens, layers)) * layers
    lm_head = times.lm_head(load.logits)  # last stage, vocabulary split over TP

    gemm_s = layers * (proj + ffn) + lm_head
    attention_s = layers * attn
    comm_s = layers * comm
    stage = gemm_s + attention_s + comm_s + kernel_s
    return StageTime(stage, times.pipeline_hop(tokens), gemm_s, attention_s, comm_s, kernel_s,
                     tally.shares(), layers * group)


def pass_latency(plans: Plans, st: StageTime, engine: EngineParams) -> np.ndarray:
    """One micro-batch through every pipeline stage and hop, plus the engine's step overhead."""
    p = plans.pp.astype(float)
    return p * st.stage_s + (p - 1.0) * st.hop_s + engine.step_overhead_ms * 1e-3
