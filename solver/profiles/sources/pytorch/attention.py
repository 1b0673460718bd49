"""Attention: scaled_dot_product_attention, causal over a prompt (context) or one query token
per sequence over its cached K/V (generation), K/V with num_kv_heads (GQA)."""

from __future__ import annotations

import time
from pathlib import Path

from solver.profiles.sources.pytorch.device import TORCH_DTYPES, free, working_dtype
from solver.profiles.sources.pytorch.grid import Shapes
from solver.profiles.sources.pytorch.timing import Outcome, Timer, call_unit
from solver.profiles.sources.pytorch.writing import Writer

METHOD = {
    "attention_context": "torch.nn.functional.scaled_dot_product_attention(is_causal=True) on "
                         "q [batch, heads, isl, head_dim] and K/V [batch, kv_heads, isl, head_dim]",
    "attention_generation": "torch.nn.functional.scaled_dot_product_attention of q [batch, heads, "
                            "1, head_dim] over K/V [batch, kv_heads, kv_tokens, head_dim] "
                            "(contiguous cache, not paged)",
}


def columns(cpu: bool) -> dict[str, dict[str, str]]:
    heads = {
        "kv_dtype": "element type of q, K and V",
        "num_heads": "query heads",
        "num_kv_heads": "key/value heads",
        "head_dim": "elements per head",
    }
    return {
        "attention_context": heads | {
            "batch": "prompts in the call",
            "isl_tokens": "tokens per prompt (all new, causal)",
            "latency_us": call_unit(cpu),
        },
        "attention_generation": heads | {
            "batch": "sequences decoding one token each",
            "kv_tokens": "cached tokens attended per sequence",
            "latency_us": call_unit(cpu),
        },
    }


def _gqa_mode(torch, dev, dt) -> bool:
    """True when scaled_dot_product_attention takes enable_gqa (PyTorch >= 2.5)."""
    q = torch.zeros(1, 2, 2, 8, dtype=dt, device=dev)
    kv = torch.zeros(1, 1, 2, 8, dtype=dt, device=dev)
    try:
        torch.nn.functional.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
        return True
    except (TypeError, RuntimeError):
        return False


def _attention_fn(torch, dev, dt, gqa: bool, heads: int, kv_heads: int, head_dim: int,
                  batch: int, q_len: int, kv_len: int, causal: bool):
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q = torch.randn(batch, heads, q_len, head_dim, device=dev, dtype=dt)
    k = torch.randn(batch, kv_heads, kv_len, head_dim, device=dev, dtype=dt)
    v = torch.randn(batch, kv_heads, kv_len, head_dim, device=dev, dtype=dt)
    if heads != kv_heads:
        if heads % kv_heads:
            raise ValueError(f"num_heads {heads} is not a multiple of num_kv_heads {kv_heads}")
        if gqa:
            return lambda: sdpa(q, k, v, is_causal=causal, enable_gqa=True)
        rep = heads // kv_heads  # older PyTorch: expand the cache once, outside the timing
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    return lambda: sdpa(q, k, v, is_causal=causal)


def measure_attention(torch, dev, timer: Timer, shapes: Shapes, phase: str, kv_dtype: str,
                       log) -> Outcome:
    out = Outcome()
    dt = getattr(torch, TORCH_DTYPES[kv_dtype])
    gqa = _gqa_mode(torch, dev, dt)
    out.notes.append(
        "GQA: scaled_dot_product_attention(enable_gqa=True)" if gqa else
        "GQA: K/V expanded to the query heads with repeat_interleave before timing "
        "(this PyTorch has no enable_gqa)"
    )
    points = shapes.context_points() if phase == "context" else shapes.generation_points()
    t0 = time.perf_counter()
    for heads, kv_heads, head_dim in shapes.attention_groups:
        for batch, tokens in points:
            q_len = tokens if phase == "context" else 1
            try:
                fn = _attention_fn(torch, dev, dt, gqa, heads, kv_heads, head_dim, batch,
                                   q_len, tokens, causal=phase == "context")
                fn()
                out.rows.append((kv_dtype, heads, kv_heads, head_dim, batch, tokens, timer(fn)))
            except (RuntimeError, ValueError, TypeError) as exc:
                out.skip(torch, exc, f"heads {heads}/{kv_heads}x{head_dim} batch {batch} tokens {tokens}")
            finally:
                fn = None
                free(torch, dev)
    log(f"attention_{phase}: {len(shapes.attention_groups) * len(points)} shapes in "
        f"{time.perf_counter() - t0:.1f} s")
    return out


def collect_attention(torch, dev, timer: Timer, shapes: Shapes, phase: str, writer: Writer,
                      log) -> Path:
    """Measure and write the `attention_<phase>` table (phase: context or generation)."""
    family = f"attention_{phase}"
    kv_dtype = working_dtype(torch, dev, "bf16")
    oc = measure_attention(torch, dev, timer, shapes, phase, kv_dtype, log)
    cap = shapes.max_context_tokens if phase == "context" else shapes.max_generation_tokens
    axis = "isl_tokens" if phase == "context" else "kv_tokens"
    return writer.table(family, oc, f"{kv_dtype}; every head group of the grid; batch x {axis} <= {cap}",
                        [], METHOD[family], columns(writer.cpu)[family])
