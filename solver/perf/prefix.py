"""Prefix caching: prefill computes only a prompt's uncached tokens; a shared prefix's KV is
held once per instance (the service's `workload.prefix_cache`, solver/schema/prefix.py).

A prompt of s tokens whose first c come from the cache prefills its u = s - c remaining tokens
as the last chunk of a chunked prefill: every one of them attends over the cached prefix and
over the new tokens before it, u c + u (u + 1) / 2 causal pairs, which the stage model prices
as u tokens of an "equivalent prompt" of 2 c + u tokens (mean keys per token (2c + u + 1) / 2),
and it re-reads the c cached tokens' KV once (the chunk's prefix read). The projections, MLP,
all-reduces and LM head see u tokens. With `hit_rate` h, c = h s; with
`shared_prefix_tokens` n, c = n.

KV memory: with a shared prefix every sequence of a rank refers to one copy of its n tokens,
so a rank of b sequences at mean context x holds b (x - n) + n tokens, i.e. x - n + n / b per
sequence. A hit rate says nothing about how prompts share their cached blocks, so each
sequence keeps its whole context (the cache's spare blocks live in the memory not planned for
running sequences). Disaggregated KV transfer still sends the whole prompt's KV (conservative:
the decode side is not assumed to hold the prefix).
"""

from __future__ import annotations

import numpy as np

from solver.perf.stages import Load

# `wl` below is a solver.perf.workload.Workload (not imported: workload.py names speculative.py,
# which imports this module)


def cached_tokens(wl, prompt_tokens) -> np.ndarray:
    """Prompt tokens served from the cache, for prompts of `prompt_tokens` tokens."""
    s = np.asarray(prompt_tokens, dtype=float)
    return wl.prefix_hit_rate * s + np.minimum(wl.shared_prefix_tokens, s)


def prefill_load(prompts, wl, prompt_tokens) -> Load:
    """`prompts` prompts of `prompt_tokens` tokens, their cached prefix not recomputed."""
    if not wl.prefix_hit_rate and not wl.shared_prefix_tokens:
        return Load.prefill(prompts, prompt_tokens)
    prompts = np.asarray(prompts, dtype=float)
    s = np.asarray(prompt_tokens, dtype=float)
    c = cached_tokens(wl, s)
    u = np.maximum(s - c, 1.0)
    z = np.zeros_like(prompts * s)
    return Load(z, z, prompts * u + z, 2.0 * c + u + z, u + z, prompts + z)


def kv_context(wl, context, seqs_per_rank) -> np.ndarray:
    """Per-sequence KV context to size memory by: x - n + n / b with a shared prefix of n."""
    x = np.asarray(context, dtype=float)
    n = wl.shared_prefix_tokens
    if not n:
        return x
    b = np.maximum(np.asarray(seqs_per_rank, dtype=float), 1.0)
    return x - n + n / b
