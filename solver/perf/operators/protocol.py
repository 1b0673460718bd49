"""`OperatorTimes`: the seconds of each operator of one engine iteration, over plans.

The stage model (solver/perf/stages.py) is a recipe over this interface: it asks each operator
of a layer once, weights them by how often they run on a stage and sums. Two implementations:
`roofline.RooflineTimes` (FLOPs and bytes over achievable peaks) and `measured.MeasuredTimes`
(measured tables, the wrapped roofline where a table does not cover the point).

Every argument is an array broadcastable to the plans (or a scalar), every answer an array of
seconds per plan for one run of the operator on one device. `count` is how many times the
operator runs on the stage per iteration: the implementation charges count x seconds to its
source ledger (the shares of measured, interpolated, extrapolated and roofline time); it does
not scale the answer. `window` is a local attention window in tokens, or None.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from solver.schema.engine import EngineParams


class OperatorTimes(Protocol):
    def projections(self, tokens, count=1.0) -> np.ndarray:
        """QKV and output projection GEMMs of one layer over `tokens` tokens."""

    def decode_attention(self, seqs, context, window, count=1.0) -> np.ndarray:
        """Attention core of `seqs` decoding sequences over `context` cached tokens (GQA or
        MLA's latent cache, as the model has)."""

    def prefill_attention(self, tokens, prompt, chunk, window, count=1.0) -> np.ndarray:
        """Causal attention core of `tokens` prefill tokens of prompts of `prompt` tokens,
        `chunk` of one prompt per iteration (== prompt when unchunked)."""

    def dense_mlp(self, tokens, count=1.0) -> np.ndarray:
        """A dense MLP layer."""

    def moe_block(self, tokens, count=1.0) -> np.ndarray:
        """One MoE layer's compute on the busiest expert-parallel rank: router, routed and
        shared experts (`tokens`: the tokens of one attention rank)."""

    def tp_all_reduce(self, tokens, count=1.0) -> np.ndarray:
        """The tensor-parallel all-reduce of a layer output."""

    def moe_all_to_all(self, tokens, count=1.0) -> np.ndarray:
        """MoE dispatch plus combine with attention data parallelism (0 where dp == 1)."""

    def lm_head(self, rows, count=1.0) -> np.ndarray:
        """The LM head on the rows that need logits."""

    def pipeline_hop(self, tokens) -> np.ndarray:
        """The hand-off of `tokens` activations to the next pipeline stage (0 where pp == 1)."""

    def elementwise(self, tokens, count=1.0) -> np.ndarray:
        """One layer's memory-bound small kernels (residual adds, norms, activation) over
        `tokens` tokens, without their fixed launch cost (`layer_kernel_overhead`)."""

    def layer_kernel_overhead(self, engine: EngineParams) -> np.ndarray:
        """Fixed per-kernel seconds of one layer not already inside a measured time (after the
        layer's projections were asked)."""
