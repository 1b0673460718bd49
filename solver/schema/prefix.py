"""Prefix caching of a service's prompts (a workload input, `services[].workload.prefix_cache`).

An engine with automatic prefix caching (vLLM `enable_prefix_caching`, SGLang RadixAttention:
Zheng et al., "SGLang: Efficient Execution of Structured Language Model Programs", 2024,
arXiv 2312.07104) keeps the KV blocks of earlier prompts and prefills only the tokens after the
longest cached prefix. A service states it as one of:

- `hit_rate` h: the share of prompt tokens served from the cache (what vLLM's
  `prefix_cache_hits / prefix_cache_queries` metrics report); prefill computes (1 - h) of every
  prompt, after a cached prefix of h of it;
- `shared_prefix_tokens` n: every prompt starts with the same n tokens (a system prompt, a
  few-shot header), computed once and held once per instance; prefill computes the rest.

The performance model (solver/perf/prefix.py) turns either into prefill work, TTFT, capacity
and KV memory.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from solver.schema.base import Strict

# An input bound: at h = 1 no prompt token is computed and prefill degenerates; 0.99 already
# means a 100x smaller prefill.
MAX_HIT_RATE = 0.99


class PrefixCache(Strict):
    hit_rate: float | None = Field(None, ge=0, le=MAX_HIT_RATE,
                                   description="share of prompt tokens served from the prefix cache")
    shared_prefix_tokens: int | None = Field(None, ge=1, le=10_000_000,
                                             description="tokens every prompt shares (KV once per instance)")

    @model_validator(mode="after")
    def _one(self) -> PrefixCache:
        if (self.hit_rate is None) == (self.shared_prefix_tokens is None):
            raise ValueError("give either hit_rate or shared_prefix_tokens")
        return self
