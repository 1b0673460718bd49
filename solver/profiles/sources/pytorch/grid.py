"""The points to measure: the model cards' grid (`default_shapes`) and a tiny one for tests
(`quick_shapes`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

COLLECTIVE_OPS: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")


def _pow2(lo: int, hi: int) -> tuple[int, ...]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return tuple(out)


@dataclass(frozen=True)
class Shapes:
    """The points to measure. GEMM: every m with every (n, k); attention: every head group with
    every (batch, tokens) whose batch x tokens stays under the cap; communication: every message
    size at every world size (GPUs; processes in the CPU gloo mode) that the host has."""

    gemm_m: tuple[int, ...]
    gemm_nk: tuple[tuple[int, int], ...]
    attention_groups: tuple[tuple[int, int, int], ...]  # (num_heads, num_kv_heads, head_dim)
    context_batch: tuple[int, ...]
    context_isl: tuple[int, ...]
    generation_batch: tuple[int, ...]
    generation_kv: tuple[int, ...]
    max_context_tokens: int  # batch x isl_tokens
    max_generation_tokens: int  # batch x kv_tokens
    allreduce_bytes: tuple[int, ...]
    collective_bytes: tuple[int, ...]
    collective_ops: tuple[str, ...] = COLLECTIVE_OPS
    num_gpus: tuple[int, ...] = (2, 4, 8)
    description: str = ""

    def context_points(self) -> list[tuple[int, int]]:
        return [(b, s) for b in self.context_batch for s in self.context_isl
                if b * s <= self.max_context_tokens]

    def generation_points(self) -> list[tuple[int, int]]:
        return [(b, s) for b in self.generation_batch for s in self.generation_kv
                if b * s <= self.max_generation_tokens]


def quick_shapes() -> Shapes:
    """A tiny grid (seconds on a CPU) for tests and smoke runs."""
    return Shapes(
        gemm_m=(1, 16, 256),
        gemm_nk=tuple((n, k) for n in (64, 256) for k in (64, 256)),
        attention_groups=((4, 2, 64),),
        context_batch=(1, 2),
        context_isl=(16, 64),
        generation_batch=(1, 4),
        generation_kv=(16, 128),
        max_context_tokens=1 << 20,
        max_generation_tokens=1 << 20,
        allreduce_bytes=(1024, 16384, 262144),
        collective_bytes=(1024, 16384, 262144),
        num_gpus=(2,),
        description="quick grid (m 1/16/256, n and k 64/256; heads 4, kv heads 2, head_dim 64; "
        "batch 1-4, 16-128 tokens; messages 1 KiB-256 KiB)",
    )


def default_shapes(models: Sequence[str] | None = None) -> Shapes:
    """The grid the shipped model cards need (per device, TP 1/2/4/8), as the importer keeps."""
    from solver.catalog import shipped
    from solver.profiles.sources.shapes import attention_groups, gemm_shapes

    names = list(models) if models else shipped.names("models")
    cards = [shipped.model_card(n) for n in names]
    nk = sorted({(s.n, s.k) for c in cards for s in gemm_shapes(c)})
    groups = sorted({(g.num_heads, g.num_kv_heads, g.head_dim) for c in cards for g in attention_groups(c)})
    m = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072,
         4096, 6144, 8192)
    return Shapes(
        gemm_m=m,
        gemm_nk=tuple(nk),
        attention_groups=tuple(groups),
        context_batch=_pow2(1, 256),
        context_isl=(1,) + _pow2(16, 16384),
        generation_batch=_pow2(1, 1024),
        generation_kv=_pow2(16, 131072),
        max_context_tokens=65536,
        max_generation_tokens=1 << 21,
        allreduce_bytes=_pow2(256, 1 << 30),
        collective_bytes=_pow2(512, 1 << 29),
        num_gpus=(2, 4, 8),
        description=(
            f"the per-device weight matrices ({len(nk)} (n, k) pairs) and attention head groups "
            f"({len(groups)}) of the model cards {', '.join(names)} at TP 1/2/4/8; m "
            f"{m[0]}-{m[-1]}; context batch x isl_tokens <= 65536; generation batch x kv_tokens "
            f"<= 2097152; messages 256 B-1 GiB (all-reduce), 512 B-512 MiB (collectives)"
        ),
    )
