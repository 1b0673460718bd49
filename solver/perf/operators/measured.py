"""The measured implementation of `OperatorTimes`: the tables first, the roofline elsewhere.

It wraps a `RooflineTimes` (built without a ledger) and the measured tables of each plan's
hardware (`solver/profiles/hooks.py` maps the stage model's operators onto table queries). For
every operator and plan the table's answer stands where it has one; where it has none (no
profile for that hardware, fp4 GEMMs on Hopper, a TP group wider than the measured NVLink
domain) the wrapped roofline's number stands, so hardware without profiles gets exactly the
analytic model. Each answer is charged to the ledger under its source (measured,
interpolated, extrapolated, roofline), and the last source of each operator is kept in
`sources`.

What the tables are asked for: projections, attention and the LM head only for GQA models
(MLA's latent attention has no table, and its projections and LM head have always stayed on
the roofline with it); the dense MLP and the routed experts only for gated MLPs (the table
shapes are gate+up / down); the TP all-reduce always; the MoE all-to-all and pipeline hops
never (no queried table).
"""

from __future__ import annotations

import numpy as np

from solver.perf.arch import ModelArch
from solver.perf.operators.counts import MoeLoad
from solver.perf.operators.roofline import RooflineTimes
from solver.profiles import EXTRAPOLATED, ROOFLINE, Estimate, ProfileSet, SourceTally, hooks
from solver.schema.cards import PRECISIONS
from solver.schema.engine import EngineParams

# the table family each operator of the protocol asks (the others ask none)
OPERATOR_FAMILY = {
    "projections": "gemm", "dense_mlp": "gemm", "lm_head": "gemm",
    "prefill_attention": "attention_context", "decode_attention": "attention_generation",
    "tp_all_reduce": "allreduce", "moe_block": "moe_experts",
}
# for MLA models the attention operators carry the whole MLA block (projections answer zero)
MLA_OPERATOR_FAMILY = OPERATOR_FAMILY | {
    "projections": "mla_context", "prefill_attention": "mla_context", "decode_attention": "mla_generation",
}


def families_asked(arch: ModelArch, *, prefills: bool, decodes: bool, tp: int, domain: int,
                   fp8: bool = False) -> frozenset[str]:
    """The table families `MeasuredTimes` draws time from for an instance of this model with
    attention TP `tp` on hardware whose scale-up domain holds `domain` devices, when its
    iterations carry prefill tokens and/or decoding sequences (the rules of the module
    docstring; the MoE block's router and shared experts ask the GEMM table); `fp8`: FP8
    weights, whose static-scaled GEMMs also ask the compute-scale table."""
    gqa = not arch.mla_latent
    moe = arch.moe_layers > 0 and arch.gated_mlp
    out = {"gemm"}  # the LM head at least
    if fp8 and arch.fp8_gemm == "fp8_static":
        out.add("compute_scale")
    if gqa and prefills:
        out.add("attention_context")
    if gqa and decodes:
        out.add("attention_generation")
    if not gqa and prefills:  # the MLA block (answered where both MLA tables cover the plan)
        out.add("mla_context")
    if not gqa and decodes:
        out.add("mla_generation")
    if 1 < tp <= domain:
        out.add("allreduce")
    if moe:
        out.add("moe_experts")
    return frozenset(out)


# the measured expert time is rescaled (hold the kernel's efficiency, scale by the roofline) when
# the modelled routing differs from the collector's; a factor within 1% of one counts as none
ROUTING_TOLERANCE = 0.01


class MeasuredTimes:
    """Operator seconds per plan from measured tables, the wrapped roofline where none covers."""

    def __init__(self, roofline: RooflineTimes, tables: ProfileSet, ledger: SourceTally) -> None:
        self.roofline, self.tables, self.ledger = roofline, tables, ledger
        self.arch, self.plans = roofline.arch, roofline.plans
        self.gqa = not self.arch.mla_latent
        self.sources: dict[str, np.ndarray] = {}
        self._mla: np.ndarray | None = None
        self._gemm_dtype: np.ndarray | None = None

    def _settle(self, name: str, est: Estimate, fallback: np.ndarray, count) -> np.ndarray:
        """The table's seconds where it answered, the roofline's elsewhere; charged and recorded."""
        seconds = np.where(est.source == ROOFLINE, np.broadcast_to(fallback, np.shape(est.seconds)), est.seconds)
        self.ledger.add(Estimate(seconds, est.source), count)
        self.sources[name] = est.source
        return seconds

    def _roofline_only(self, name: str, seconds: np.ndarray, count) -> np.ndarray:
        self.ledger.add_roofline(seconds, count)
        self.sources[name] = np.full(len(self.plans), ROOFLINE, dtype=np.int8)
        return seconds

    def _attention_keys(self, window) -> dict:
        a, p = self.arch, self.plans
        return dict(heads=a.heads, kv_heads=a.kv_heads, head_dim=a.head_dim, tp=self.roofline.tp,
                    kv_precision=p.kvprec, window=window)

    def _mla_covered(self) -> np.ndarray:
        """Plans whose MLA block both MLA tables answer (hardware, weight and KV formats, heads)."""
        if self._mla is None:
            a, p, one = self.arch, self.plans, np.ones(len(self.plans))
            gen = hooks.mla_decode(self.tables, p.hw, one, one, a.heads, self.roofline.tp, p.wprec, p.kvprec)
            ctx = hooks.mla_prefill(self.tables, p.hw, one, one, a.heads, self.roofline.tp, p.wprec, p.kvprec)
            self._mla = (gen.source != ROOFLINE) & (ctx.source != ROOFLINE)
        return self._mla

    def _mla_block(self, name: str, est: Estimate, fallback: np.ndarray, count) -> np.ndarray:
        covered = self._mla_covered()
        src = np.where(covered, est.source, ROOFLINE).astype(np.int8)
        return self._settle(name, Estimate(np.where(covered, est.seconds, 0.0), src), fallback, count)

    def _gemm_precision(self) -> np.ndarray:
        """The GEMM table dtype of each plan's dense weights: its precision's name, fp8 read as
        the model's FP8 checkpoint format (`ModelArch.fp8_gemm`: fp8_static, fp8 or fp8_block)."""
        if self._gemm_dtype is None:
            names = np.asarray(PRECISIONS, dtype=object)[np.asarray(self.plans.wprec, dtype=int)]
            self._gemm_dtype = np.where(names == "fp8", self.arch.fp8_gemm, names)
        return self._gemm_dtype

    # ---- the protocol ------------------------------------------------------------------------

    def projections(self, tokens, count=1.0) -> np.ndarray:
        fallback = self.roofline.projections(tokens)
        if not self.gqa:  # inside the MLA block where its tables cover the plan
            zero = np.zeros(len(self.plans))
            return self._mla_block("projections", Estimate(zero, np.zeros(len(self.plans), np.int8)),
                                   fallback, count)
        a, p = self.arch, self.plans
        est = hooks.attention_projections(self.tables, p.hw, tokens, a.hidden, a.heads, a.kv_heads,
                                          a.head_dim, self.roofline.tp, self._gemm_precision())
        return self._settle("projections", est, fallback, count)

    def decode_attention(self, seqs, context, window, count=1.0) -> np.ndarray:
        fallback = self.roofline.decode_attention(seqs, context, window)
        if not self.gqa:
            p = self.plans
            est = hooks.mla_decode(self.tables, p.hw, seqs, context, self.arch.heads, self.roofline.tp,
                                   p.wprec, p.kvprec)
            return self._mla_block("decode_attention", est, fallback, count)
        est = hooks.decode_attention(self.tables, self.plans.hw, seqs, context, **self._attention_keys(window))
        return self._settle("decode_attention", est, fallback, count)

    def prefill_attention(self, tokens, prompt, chunk, window, count=1.0) -> np.ndarray:
        fallback = self.roofline.prefill_attention(tokens, prompt, chunk, window)
        if not self.gqa:
            p = self.plans
            est = hooks.mla_prefill(self.tables, p.hw, tokens, prompt, self.arch.heads, self.roofline.tp,
                                    p.wprec, p.kvprec)
            return self._mla_block("prefill_attention", est, fallback, count)
        est = hooks.prefill_attention(self.tables, self.plans.hw, tokens, prompt, **self._attention_keys(window))
        return self._settle("prefill_attention", est, fallback, count)

    def dense_mlp(self, tokens, count=1.0) -> np.ndarray:
        fallback = self.roofline.dense_mlp(tokens)
        a, p = self.arch, self.plans
        if not a.gated_mlp:
            return self._roofline_only("dense_mlp", fallback, count)
        est = hooks.dense_mlp(self.tables, p.hw, tokens, a.hidden, a.dense_mlp_params / (3 * a.hidden),
                              self.roofline.tp, self._gemm_precision())
        return self._settle("dense_mlp", est, fallback, count)

    def moe_block(self, tokens, count=1.0) -> np.ndarray:
        block = self.roofline.moe_block(tokens)
        if not self.arch.gated_mlp:
            return self._roofline_only("moe_block", block, count)
        return self._measured_moe(tokens, block, count)

    def tp_all_reduce(self, tokens, count=1.0) -> np.ndarray:
        fallback = self.roofline.tp_all_reduce(tokens)
        p = self.plans
        est = hooks.tp_allreduce(self.tables, p.hw, tokens, self.arch.hidden, self.roofline.tp,
                                 self.roofline.hw.su_domain[p.hw])
        return self._settle("tp_all_reduce", est, fallback, count)

    def moe_all_to_all(self, tokens, count=1.0) -> np.ndarray:
        return self._roofline_only("moe_all_to_all", self.roofline.moe_all_to_all(tokens), count)

    def lm_head(self, rows, count=1.0) -> np.ndarray:
        fallback = self.roofline.lm_head(rows)
        a = self.arch
        est = hooks.lm_head(self.tables, self.plans.hw, rows, a.hidden, a.vocab, self.roofline.tp)
        return self._settle("lm_head", est, fallback, count)

    def pipeline_hop(self, tokens) -> np.ndarray:
        return self.roofline.pipeline_hop(tokens)

    def elementwise(self, tokens, count=1.0) -> np.ndarray:
        """No table measures the norms and the activation: their HBM traffic on the roofline."""
        return self._roofline_only("elementwise", self.roofline.elementwise(tokens), count)

    def layer_kernel_overhead(self, engine: EngineParams) -> np.ndarray:
        """Measured GEMM kernels include their launch cost: where the projections came from a
        table this iteration, only the unmeasured kernels (norms, activation, residual adds)
        pay the fixed cost."""
        src = self.sources.get("projections")
        measured = np.zeros(len(self.plans), dtype=bool) if src is None else src != ROOFLINE
        kernels = np.where(measured, engine.unmeasured_kernels_per_layer, engine.kernels_per_layer)
        return self.roofline.hw.kernel_s[self.plans.hw] * kernels

    # ---- the MoE block -----------------------------------------------------------------------

    def _routing_factor(self, moe: MoeLoad) -> np.ndarray:
        """Roofline of the modelled routing over that of the collector's balanced routing.

        The expert table was timed with the device computing T k / ep token-expert pairs and
        reading clip(T k / ep, 1, E / ep) experts (tokens spread over as many experts as
        possible). The stage's routing model gives the busiest rank's pairs and the experts it
        reads (uniform-random or skewed routing touches fewer experts at small T, and a hot
        rank computes more pairs). The measured time is scaled by this ratio: the kernel's
        achieved efficiency held."""
        a, e = self.arch, self.plans.ep.astype(float)
        pairs_table = moe.group_tokens * a.top_k / e
        read_table = np.clip(pairs_table, 1.0, a.num_experts / e)
        modelled = self.roofline.routed_experts(moe.pairs, moe.touched, moe.expert_w)
        return modelled / np.maximum(self.roofline.routed_experts(pairs_table, read_table, moe.expert_w), 1e-30)

    def _measured_moe(self, tokens, block: np.ndarray, count) -> np.ndarray:
        """Routed experts from the `moe_experts` table (rescaled to the modelled routing,
        flagged extrapolated where that changes them by more than `ROUTING_TOLERANCE`), router
        and shared experts from the GEMM table. Where the routed experts have no table the
        block's own single roofline stands, so hardware or precisions without MoE tables keep
        the analytic model exactly."""
        a, p, rl = self.arch, self.plans, self.roofline
        moe = MoeLoad.of(a, p, tokens)
        factor = self._routing_factor(moe)
        expert_inter = int(round(a.expert_params / (3.0 * float(a.hidden))))
        routed = hooks.moe_experts(self.tables, p.hw, moe.group_tokens, a.hidden, expert_inter,
                                   a.num_experts, a.top_k, moe.moe_tp, p.ep, p.wprec)
        covered = routed.source != ROOFLINE
        scaled = np.abs(factor - 1.0) > ROUTING_TOLERANCE
        routed_s = np.where(covered, routed.seconds * factor, routed.seconds)
        routed_src = np.where(covered & scaled, np.maximum(routed.source, EXTRAPOLATED), routed.source)
        rest = hooks.moe_router_and_shared(self.tables, p.hw, tokens, a.hidden, a.num_experts,
                                           a.shared_expert_params / (3.0 * float(a.hidden)), rl.tp,
                                           self._gemm_precision())
        rest_s = np.where(rest.source == ROOFLINE, rl.router_and_shared(tokens), rest.seconds)
        z = np.zeros_like(routed_s)
        self.ledger.add(Estimate(np.where(covered, routed_s, z), routed_src.astype(np.int8)), count)
        self.ledger.add(Estimate(np.where(covered, rest_s, z), rest.source), count)
        self.ledger.add_roofline(np.where(covered, z, block), count)
        self.sources["moe_block"] = np.where(covered, np.maximum(routed_src, rest.source), ROOFLINE).astype(np.int8)
        return np.where(covered, routed_s + rest_s, block)
