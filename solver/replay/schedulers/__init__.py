"""Scheduler policies, one module per engine, each citing the engine version and source it
follows: `vllm.py` (vLLM v1), `sglang.py`, `trtllm.py` (TensorRT-LLM's batch manager); the
interface they share is `base.py`."""

from __future__ import annotations

from solver.replay.schedulers.base import Batch, Policy, Seq
from solver.replay.schedulers.sglang import SglangScheduler
from solver.replay.schedulers.trtllm import TrtllmScheduler
from solver.replay.schedulers.vllm import VllmScheduler

POLICIES = {"vllm": VllmScheduler, "sglang": SglangScheduler, "trtllm": TrtllmScheduler}


def make_policy(engine: str, batch: int | None = None, chunk: int | None = None, **params) -> Policy:
    """The engine's scheduler with its defaults; `batch` (the planned concurrent sequences) and
    `chunk` (the planned token budget per iteration) override the engine's limits."""
    try:
        cls = POLICIES[engine]
    except KeyError:
        raise ValueError(f"no scheduler for engine {engine!r}; known: {', '.join(POLICIES)}") from None
    policy = cls(**params)
    if batch is not None:
        policy.max_seqs = int(batch)
    if chunk is not None:
        policy.plan_budget(int(chunk))
    return policy


__all__ = ["POLICIES", "Batch", "Policy", "Seq", "SglangScheduler", "TrtllmScheduler", "VllmScheduler",
           "make_policy"]
