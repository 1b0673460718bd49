"""The analytic implementation of `OperatorTimes`: counts (`counts.py`) over achievable peaks.

Compute runs at the card's peak times its GEMM efficiency (times the engine's factor) in the
plan's weight precision, attention math in bf16; memory at HBM bandwidth times the memory
efficiency; collectives and pipeline hops by the alpha-beta link models of `solver/perf/ops.py`.
An operator takes max(compute, memory) (`ops.roofline`).

With a `ledger` every answer is charged to it as roofline time (`count` times); the measured
implementation wraps one without a ledger and charges its own sources.
"""

from __future__ import annotations

import numpy as np

from solver.perf import ops
from solver.perf.arch import ModelArch
from solver.perf.operators import counts
from solver.perf.operators.counts import AttentionShape, MoeLoad, Work
from solver.perf.tables import ACT_BYTES, PRECISION_BYTES, HardwareTable, Plans
from solver.profiles import SourceTally
from solver.schema.engine import EngineParams


class RooflineTimes:
    """Operator seconds per plan from FLOPs, bytes and the hardware table."""

    def __init__(self, arch: ModelArch, hw: HardwareTable, plans: Plans,
                 ledger: SourceTally | None = None) -> None:
        i = plans.hw
        self.arch, self.hw, self.plans, self.ledger = arch, hw, plans, ledger
        self.tp = plans.tp.astype(float)
        self.b_w = PRECISION_BYTES[plans.wprec]
        self.b_kv = PRECISION_BYTES[plans.kvprec]
        self.gemm_flops = hw.gemm_flops[i, plans.wprec]
        self.attn_flops = hw.bf16_flops[i]
        self.mem_bw = hw.hbm_bw[i] * hw.mem_eff[i]
        self.fabric = hw.fabric(i)
        self.shape = AttentionShape.of(arch, self.tp)

    def _charge(self, seconds: np.ndarray, count) -> np.ndarray:
        if self.ledger is not None:
            self.ledger.add_roofline(seconds, count)
        return seconds

    def _gemm_time(self, work: Work) -> np.ndarray:
        return ops.roofline(work.flops, work.bytes, self.gemm_flops, self.mem_bw, 0.0)

    def _gemms_time(self, shapes, b, flops_per_s) -> np.ndarray:
        """One roofline per GEMM kernel, summed."""
        total = 0.0
        for m, n, k in shapes:
            w = counts.gemm(m, n, k, b)
            total = total + ops.roofline(w.flops, w.bytes, flops_per_s, self.mem_bw, 0.0)
        return total

    def _attention_time(self, work: Work) -> np.ndarray:
        return ops.roofline(work.flops, work.bytes, self.attn_flops, self.mem_bw, 0.0)

    # ---- the protocol ------------------------------------------------------------------------

    def projections(self, tokens, count=1.0) -> np.ndarray:
        if self.arch.mla_latent:
            seconds = self._gemm_time(counts.mla_projections(self.arch, self.tp, tokens, self.b_w))
        else:
            shapes = counts.projection_gemms(self.arch, self.tp, tokens)
            seconds = self._gemms_time(shapes, self.b_w, self.gemm_flops)
        return self._charge(seconds, count)

    def decode_attention(self, seqs, context, window, count=1.0) -> np.ndarray:
        work = counts.decode_attention(self.shape, seqs, context, window, self.b_kv)
        return self._charge(self._attention_time(work), count)

    def prefill_attention(self, tokens, prompt, chunk, window, count=1.0) -> np.ndarray:
        work = counts.prefill_attention(self.shape, tokens, prompt, chunk, window, self.b_kv)
        return self._charge(self._attention_time(work), count)

    def dense_mlp(self, tokens, count=1.0) -> np.ndarray:
        shapes = counts.mlp_gemms(self.arch, self.tp, tokens, self.arch.dense_mlp_params)
        return self._charge(self._gemms_time(shapes, self.b_w, self.gemm_flops), count)

    def moe_block(self, tokens, count=1.0) -> np.ndarray:
        moe = MoeLoad.of(self.arch, self.plans, tokens)
        return self._charge(self._gemm_time(counts.moe_block(self.arch, self.tp, tokens, moe, self.b_w)), count)

    def tp_all_reduce(self, tokens, count=1.0) -> np.ndarray:
        seconds = ops.all_reduce(counts.hidden_bytes(self.arch, tokens), self.tp, self.fabric)
        return self._charge(seconds, count)

    def moe_all_to_all(self, tokens, count=1.0) -> np.ndarray:
        """Dispatch and combine with attention data parallelism (dp > 1); with dp = 1 the
        experts' partial outputs are summed by the TP all-reduce a dense MLP needs: 0 here."""
        p = self.plans
        busiest = self.arch.expert_routing.busiest_share(p.ep)
        sent = counts.dispatch_bytes(self.arch, self.tp, p.ep.astype(float), tokens, busiest)
        a2a = 2.0 * ops.all_to_all(sent, self.tp * p.dp.astype(float), self.fabric)
        return self._charge(np.where(p.dp > 1, a2a, 0.0), count)

    def lm_head(self, rows, count=1.0) -> np.ndarray:
        seconds = self._gemms_time([counts.lm_head_gemm(self.arch, self.tp, rows)], ACT_BYTES, self.attn_flops)
        return self._charge(seconds + self.hw.kernel_s[self.plans.hw], count)

    def pipeline_hop(self, tokens) -> np.ndarray:
        """Activations to the next stage; off the node when the instance is wider than one
        scale-up domain. A hand-off, not a stage operator: not charged to the ledger."""
        p = self.plans
        crosses = p.devices > self.hw.su_domain[p.hw]
        hop = ops.p2p(counts.hidden_bytes(self.arch, tokens), crosses, self.fabric)
        return np.where(p.pp > 1, hop, 0.0)

    def elementwise(self, tokens, count=1.0) -> np.ndarray:
        work = counts.elementwise(self.arch, self.tp, np.asarray(tokens, dtype=float))
        return self._charge(work.bytes / self.mem_bw, count)

    def layer_kernel_overhead(self, engine: EngineParams) -> np.ndarray:
        return self.hw.kernel_s[self.plans.hw] * engine.kernels_per_layer

    # ---- parts the measured implementation rescales or stands in for --------------------------

    def routed_experts(self, pairs, experts_read, expert_w) -> np.ndarray:
        """The routed experts alone (not charged)."""
        return self._gemm_time(counts.routed_experts(self.arch, pairs, experts_read, expert_w, self.b_w))

    def router_and_shared(self, tokens) -> np.ndarray:
        """The MoE block's router and shared experts (not charged)."""
        return self._gemm_time(counts.router_and_shared(self.arch, self.tp, tokens, self.b_w))
