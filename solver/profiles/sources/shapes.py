"""The operator shapes the shipped model cards need, per device, for the parallelism the
planner searches (tensor parallelism 1, 2, 4, 8).

The importer (`aic/`) keeps only these shapes (plus the measured neighbours an interpolation
needs), so the shipped profiles stay small; the collector (`pytorch/`) measures them by default.
Everything here is plain integers from the cards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from solver.schema.cards import ModelCard

TP_DEGREES: tuple[int, ...] = (1, 2, 4, 8)


@dataclass(frozen=True, slots=True, order=True)
class GemmShape:
    """y[m, n] = x[m, k] @ W[k, n]; m (tokens) is not fixed by the model."""

    n: int
    k: int
    what: str = ""


@dataclass(frozen=True, slots=True, order=True)
class AttentionGroup:
    """Per-device attention geometry: query heads, key/value heads, head size."""

    num_heads: int
    num_kv_heads: int
    head_dim: int


def gemm_shapes(card: ModelCard, tp_degrees: Sequence[int] = TP_DEGREES) -> list[GemmShape]:
    """Per-device (n, k) of every weight matrix of `card` at each tensor-parallel degree.

    Dense and shared-expert MLPs, attention projections (GQA or MLA), the LM head, the MoE
    router, and one routed expert's matrices (with experts split `tp` ways, as MoE-TP does).
    """
    h = card.hidden_size
    a = card.attention
    mats = 2 if card.gated_mlp else 1  # gate+up fused into one GEMM of width mats * I
    out: set[GemmShape] = set()

    def add(n: float, k: float, what: str) -> None:
        n_i, k_i = int(math.ceil(n)), int(math.ceil(k))
        if n_i >= 1 and k_i >= 1:
            out.add(GemmShape(n_i, k_i, what))

    for tp in tp_degrees:
        heads = math.ceil(a.num_heads / tp)
        if a.kind == "mla" and a.mla is not None:
            m = a.mla
            qk = m.qk_nope_head_dim + m.qk_rope_head_dim
            if m.q_lora_rank:
                add(m.q_lora_rank, h, "mla_q_a")
                add(heads * qk, m.q_lora_rank, "mla_q_b")
            else:
                add(heads * qk, h, "mla_q")
            add(m.kv_lora_rank + m.qk_rope_head_dim, h, "mla_kv_a")
            add(heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, "mla_kv_b")
            add(h, heads * m.v_head_dim, "attn_o")
        else:
            kv = math.ceil(a.num_kv_heads / tp)
            add((heads + 2 * kv) * a.head_dim, h, "attn_qkv")
            add(h, heads * a.head_dim, "attn_o")
        dense_layers = card.num_layers - card.num_moe_layers
        if card.intermediate_size and dense_layers > 0:
            add(mats * card.intermediate_size / tp, h, "mlp_gate_up")
            add(h, card.intermediate_size / tp, "mlp_down")
        moe = card.moe
        if moe is not None:
            if moe.shared_experts:
                width = (moe.shared_expert_intermediate_size or moe.expert_intermediate_size)
                width *= moe.shared_experts
                add(mats * width / tp, h, "shared_gate_up")
                add(h, width / tp, "shared_down")
            add(mats * moe.expert_intermediate_size / tp, h, "expert_gate_up")
            add(h, moe.expert_intermediate_size / tp, "expert_down")
            if tp == 1:
                add(moe.num_experts, h, "router")
        add(card.vocab_size / tp, h, "lm_head")
    return sorted(out)


def attention_groups(card: ModelCard, tp_degrees: Sequence[int] = TP_DEGREES) -> list[AttentionGroup]:
    """Per-device (heads, kv heads, head_dim) of a GQA/MHA card; MLA cards have none (their
    attention is not the table's kernel)."""
    a = card.attention
    if a.kind == "mla":
        return []
    out = {
        AttentionGroup(math.ceil(a.num_heads / tp), math.ceil(a.num_kv_heads / tp), a.head_dim)
        for tp in tp_degrees
    }
    return sorted(out)


@dataclass(frozen=True, slots=True, order=True)
class MoEShape:
    """The routed experts of one MoE layer: hidden size, expert width (whole, before any
    expert tensor parallelism), experts per token, routed experts."""

    hidden_size: int
    inter_size: int
    topk: int
    num_experts: int


def moe_shapes(card: ModelCard) -> list[MoEShape]:
    """The routed-expert shape of a MoE card (none for a dense card). Expert and tensor
    parallelism are axes of the measured table, not part of the shape."""
    moe = card.moe
    if moe is None:
        return []
    return [MoEShape(card.hidden_size, moe.expert_intermediate_size, moe.experts_per_token,
                     moe.num_experts)]


def bracket(values: Iterable[int], grid: Sequence[int]) -> set[int]:
    """The grid values that bracket each of `values`: the value itself when measured,
    otherwise the nearest measured value on each side (one side at the edges)."""
    g = sorted(set(int(x) for x in grid))
    keep: set[int] = set()
    for v in values:
        if v in g:
            keep.add(v)
            continue
        lower = [x for x in g if x < v]
        upper = [x for x in g if x > v]
        if lower:
            keep.add(lower[-1])
        if upper:
            keep.add(upper[0])
    return keep
