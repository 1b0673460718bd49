"""Measure operator profiles on the local accelerator with PyTorch and write them in the
profile format (`solver/profiles/format.py`), so a user can plan with their own hardware's
numbers.

    fleetplan profiles collect --hardware h100-sxm [--framework torch-eager] [--out DIR]
                               [--families gemm,attention_context,...] [--quick]
                               [--device cpu|cuda] [--repeats N]

What is timed (PyTorch eager, one call at a time; latency: microseconds per call, the median of
`repeats` timed repeats after `warmup` untimed calls; each repeat times `inner` back-to-back
calls, with `inner` chosen so that one repeat lasts about `target_us`, and divides):

| family                 | operation                                                         |
|------------------------|-------------------------------------------------------------------|
| gemm                   | torch.matmul(X[m,k], W[k,n]) in bf16 (fp32 where the CPU lacks bf16); fp8: torch._scaled_mm with per-tensor scales, bf16 out (GPUs of compute capability >= 8.9 only) |
| attention_context      | scaled_dot_product_attention(is_causal=True), q [batch, heads, isl, head_dim], K/V with num_kv_heads (GQA) |
| attention_generation   | scaled_dot_product_attention of one query token per sequence over kv_tokens cached K/V |
| allreduce              | torch.distributed.all_reduce of a bf16 tensor of message_bytes per rank |
| collectives            | all_reduce, all_gather, reduce_scatter, alltoall (fp16; message_bytes as nccl-tests counts it: the larger buffer per rank) |

GPU times come from CUDA events; CPU times from `time.perf_counter`. The communication
families need several ranks: on CUDA one process per GPU (NCCL, only with 2 or more visible
GPUs, for each world size of the grid that fits), on the CPU a 'gloo' mode with 2 processes
(tiny messages; it proves the pipeline, it is no model of an NVLink domain). Processes are
started with `torch.multiprocessing` (spawn) and rendezvous through a file.

PyTorch is an optional dependency (`pip install 'fleetplan[collect]'`) and is imported only
when `collect` runs.

The default grids follow the shipped model cards as the importer does
(`solver/profiles/sources/shapes.py`): the per-device (n, k) of every weight matrix and the
per-device attention geometry at TP 1/2/4/8, over m / batch / token / message-size sweeps;
`quick_shapes()` is a tiny grid for tests and CPU smoke runs.

Modules: `grid` (the points to measure), `device` (torch, the device and its software),
`timing` (the timer, a family's tally), one module per operator family (`gemm`, `attention`,
`comm`: what one rank of the communication families times; `launch` starts the ranks),
`writing` (a run's tables and their provenance) and `driver` (`collect`, `summary`).
"""

from solver.profiles.sources.pytorch.device import CollectError, import_torch
from solver.profiles.sources.pytorch.driver import (
    ALL_FAMILIES,
    DEFAULT_FRAMEWORK,
    collect,
    summary,
)
from solver.profiles.sources.pytorch.gemm import fp8_supported
from solver.profiles.sources.pytorch.grid import COLLECTIVE_OPS, Shapes, default_shapes, quick_shapes
from solver.profiles.sources.pytorch.writing import COLLECTOR

__all__ = [
    "ALL_FAMILIES", "COLLECTIVE_OPS", "COLLECTOR", "CollectError", "DEFAULT_FRAMEWORK", "Shapes",
    "collect", "default_shapes", "fp8_supported", "import_torch", "quick_shapes", "summary",
]
