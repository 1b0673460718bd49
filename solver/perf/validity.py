"""Which parallelism plans are well-formed for a model (vectorised masks with reasons).

A plan that breaks one of these rules cannot be run by a serving engine at all; plans that run
but are slow (TP across nodes) are charged by the cost model, not rejected here.
"""

from __future__ import annotations

import numpy as np

from solver.perf.arch import ModelArch
from solver.perf.tables import Plans

# reason -> explanation shown to users
RULES: dict[str, str] = {
    "tp_heads": "tp must divide the model's attention heads",
    "tp_kv_heads": "tp must divide the KV heads or be a multiple of them (even split or "
    "replication of K/V heads)",
    "pp_layers": "pp cannot exceed the model's layers",
    "dense_ep": "ep > 1 needs a mixture-of-experts model",
    "dense_dp": "attention data parallelism (dp > 1) is for mixture-of-experts models; "
    "for a dense model run more instances instead",
    "ep_experts": "ep must divide the number of experts",
    "ep_group": "ep must divide tp x dp (experts are spread over one stage's devices)",
    "batch_dp": "batch must be at least dp (one sequence per attention rank)",
    "positive": "tp, pp, ep, dp, cp and batch must be positive",
}


def invalid_reasons(arch: ModelArch, plans: Plans) -> dict[str, np.ndarray]:
    """Boolean mask per rule: True where the plan breaks it."""
    tp, pp, ep, dp = plans.tp, plans.pp, plans.ep, plans.dp
    positive = (tp >= 1) & (pp >= 1) & (ep >= 1) & (dp >= 1) & (plans.cp >= 1) & (plans.batch >= 1)
    safe = np.where(positive, 1, 1)  # avoid modulo by zero below; masked by `positive`
    tp_s, ep_s = np.maximum(tp, safe), np.maximum(ep, safe)
    out = {
        "positive": ~positive,
        "tp_heads": positive & (arch.heads % tp_s != 0),
        "tp_kv_heads": positive
        & (not arch.mla_latent)
        & (arch.kv_heads % tp_s != 0)
        & (tp_s % arch.kv_heads != 0),
        "pp_layers": positive & (pp > arch.layers),
        "batch_dp": positive & (plans.batch < dp),
    }
    if arch.moe_layers:
        out["ep_experts"] = positive & (arch.num_experts % ep_s != 0)
        out["ep_group"] = positive & ((tp_s * np.maximum(dp, 1)) % ep_s != 0)
    else:
        out["dense_ep"] = ep > 1
        out["dense_dp"] = dp > 1
    return out


def valid_mask(arch: ModelArch, plans: Plans) -> np.ndarray:
    bad = np.zeros(len(plans), dtype=bool)
    for mask in invalid_reasons(arch, plans).values():
        bad |= mask
    return ~bad
