"""Context parallelism: a prompt split over `cp` ranks (ring attention), its KV sharded for decode.

Prefill (ring attention, pass-KV: Liu, Zaharia, Abbeel, "Ring Attention with Blockwise
Transformers for Near-Infinite Context", arXiv 2310.01889, 2023; the inference form with
load-balanced causal sharding: Yang et al. (Meta), "Context Parallelism for Scalable
Million-Token Inference", arXiv 2411.01783, 2024, sections 3.2-3.4). Each rank holds 1/cp of
every prompt's tokens, two mirrored chunks of it, so that every rank computes the same share of
the causal pairs: the projections, MLP, all-reduces and pipeline hand-offs of a rank carry
tokens / cp, and its attention 1/cp of the pairs. Per layer the KV blocks travel around the
ring in cp - 1 steps; step i sends the rank's block (tokens / cp x the KV elements of its TP
shard) to the next rank while the rank computes attention against the block it holds, so a
step costs max(compute, send) and only what the send exceeds is exposed:
(cp - 1) x max(0, send - attention / cp) per layer. The ring's slowest hop sets every step's
time: the scale-out link when the stage (tp x dp x cp devices) is wider than one scale-up
domain, the scale-up link otherwise.

Decode (Yang et al. section 3.5: the KV of a sequence stays where its prefill left it, sharded
over the ranks): every rank runs every decoding token through the GEMMs (weights replicated per
rank), attends over its 1/cp share of the context, and the ranks merge their partial outputs
(one all-reduce of the query heads' outputs per layer, the log-sum-exp terms being negligible).

Weights are replicated on every CP rank; the KV cache and the activations of one device shrink
by cp (solver/perf/memory.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from solver.perf import ops
from solver.perf.arch import ModelArch
from solver.perf.tables import ACT_BYTES, PRECISION_BYTES, Fabric, HardwareTable, Plans


def shard(load, plans: Plans):
    """The load of one CP rank: 1/cp of the prefill tokens (and their pairs), every decoding
    sequence over 1/cp of its context. The identity where cp == 1."""
    cp = plans.cp.astype(float)
    if not np.any(cp > 1):
        return load
    return dataclasses.replace(
        load,
        pre_tokens=load.pre_tokens / cp,
        dec_ctx=load.dec_ctx / cp,
        logits=load.dec_seqs + (load.logits - load.dec_seqs) / cp,
    )


def kv_block_bytes(arch: ModelArch, plans: Plans, rank_tokens) -> np.ndarray:
    """Bytes one device sends per ring step and layer: its rank's prefill tokens' K and V for
    its TP shard of the KV heads (the MLA latent is not split by TP)."""
    t = plans.tp.astype(float)
    if arch.mla_latent:
        elems = np.full_like(t, float(arch.kv_cache_elems_per_token_per_layer))
    else:
        elems = 2.0 * np.ceil(arch.kv_heads / t) * arch.head_dim
    return np.asarray(rank_tokens, dtype=float) * elems * PRECISION_BYTES[plans.kvprec]


def _spans(hw: HardwareTable, plans: Plans) -> np.ndarray:
    """Whether a stage's CP group reaches beyond one scale-up domain."""
    return plans.tp * plans.dp * plans.cp > hw.su_domain[plans.hw]


def ring_step_s(arch: ModelArch, hw: HardwareTable, plans: Plans, rank_tokens) -> np.ndarray:
    """Seconds of one ring step's send (one layer), on the ring's slowest link."""
    fabric = hw.fabric(plans.hw)
    return ops.p2p(kv_block_bytes(arch, plans, rank_tokens), _spans(hw, plans), fabric)


def ring_exposed_s(arch: ModelArch, hw: HardwareTable, plans: Plans, rank_tokens,
                   attention_s) -> np.ndarray:
    """Per layer: the ring exchange time not hidden behind the rank's attention (`attention_s`
    for the layer); 0 where cp == 1 or the rank has no prefill tokens."""
    cp = plans.cp.astype(float)
    send = ring_step_s(arch, hw, plans, rank_tokens)
    exposed = (cp - 1.0) * np.maximum(send - attention_s / np.maximum(cp, 1.0), 0.0)
    return np.where((cp > 1) & (np.asarray(rank_tokens) > 0), exposed, 0.0)


def _cp_fabric(hw: HardwareTable, plans: Plans) -> Fabric:
    """The fabric as a CP group sees it: its ranks sit tp x dp devices apart, so one scale-up
    domain holds domain / (tp x dp) of them."""
    f = hw.fabric(plans.hw)
    per_domain = np.maximum(np.floor(f.su_domain / (plans.tp * plans.dp)), 1.0)
    return dataclasses.replace(f, su_domain=per_domain)


def decode_merge_s(arch: ModelArch, hw: HardwareTable, plans: Plans, dec_seqs) -> np.ndarray:
    """Per layer: the all-reduce that merges the ranks' partial attention outputs of every
    decoding token (query heads of the TP shard x value width, bf16); 0 where cp == 1."""
    heads = np.ceil(arch.heads / plans.tp.astype(float))
    sent = np.asarray(dec_seqs, dtype=float) * heads * arch.v_dim * ACT_BYTES
    merge = ops.all_reduce(sent, plans.cp.astype(float), _cp_fabric(hw, plans))
    return np.where((plans.cp > 1) & (np.asarray(dec_seqs) > 0), merge, 0.0)


def exchange_s(arch: ModelArch, hw: HardwareTable, plans: Plans, rank_load, attention_s) -> np.ndarray:
    """Per layer: the ring exchange left exposed plus the decode merge of one CP rank's load."""
    if not np.any(plans.cp > 1):
        return np.zeros(len(plans))
    return (ring_exposed_s(arch, hw, plans, rank_load.pre_tokens, attention_s)
            + decode_merge_s(arch, hw, plans, rank_load.dec_seqs))
