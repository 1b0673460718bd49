"""Iteration seconds of one engine instance for an actual batch composition, from grids.

The performance model (`solver/perf/stages.py` `stage_time`) prices a `Load` over arrays of plans;
`StepTimes.build` evaluates it once per (model, hardware, plan, engine) in ONE vectorised call whose
rows are grid points, and the replay's iterations (tens of thousands a second) are looked up.

The grid follows how `stage_time` adds up an iteration, so that nothing the model keeps apart is
interpolated together. For a stage carrying `tokens = n + T` tokens (n decoding sequences of
mean context `ctx`, T prefill tokens), `logits` LM-head rows:

    stage = P(tokens) + L(logits) + Ad(n, ctx) + Ap(T, s)

- P: projections, MLP / MoE block, all-reduces / all-to-all and kernel fixed costs, a function of the
  token count alone, at EVERY integer up to 16,384 (geometric, ratio 1.01, beyond), so the steps of
  the measured GEMM tables (53 us at 512 rows, 100 us at 513 on hardware/profiles/h100-sxm; nodes at
  2^k and 2^k + 1) are reproduced exactly.
- L: the LM head over the rows that need logits, every integer up to the largest count.
- Ad: decode attention over (n, ctx): integer n up to 64 then geometric (ratio 1.06), ctx on 4
  nodes per octave plus every power of two (the measured table's own nodes).
- Ap: prefill attention over (T, s), s the "equivalent prompt": T tokens of prompts of s tokens are
  T (s + 1) / 2 causal pairs, so a chunk of c tokens at position p of its prompt is priced at
  s = 2p + c, several chunks at the token-weighted mean. T on 8 nodes per octave, s on 4.

Bilinear inside each 2-D table: exact at the nodes, within 1% of `stage_time` off them (tests/replay/test_steptime.py).

Per iteration, as `solver/perf/stages.py` `pass_latency` does, `step_overhead_ms` is added once. A
mixed iteration (decoders and prefill tokens) charges its prefill share `mixed_batch_slowdown` times,
as `solver/perf/runtime.py` `mixed_iteration` does (settable: `slowdown=1.0` turns it off).

Eager iterations (`eager_layer_host_ms`): TensorRT-LLM's PyTorch backend replays a CUDA graph
only for a batch without context requests (tensorrt_llm/_torch/pyexecutor/scheduler.py
`ScheduledRequests.can_run_cuda_graph` = no context requests; model_engine.py
`_maybe_get_cuda_graph` returns None otherwise), and SGLang only in decode / verify / idle modes
(python/sglang/srt/model_executor/forward_batch_info.py `ForwardMode.is_cuda_graph`; EXTEND and
MIXED batches run eagerly). An eager forward launches every kernel from Python; the launches are
asynchronous, so the stage lasts max(GPU time, host launch time), the host's being the layers
of the stage x the per-layer host time. A stage carrying prompt tokens is floored there; pure
decode stages (graphed) are not. The measured operator tables are GPU times (kernels timed in
isolation), so nothing else holds this cost.

Data parallel attention: a rank serves whole requests (TensorRT-LLM's `enable_attention_dp`, SGLang's
DP attention), so it carries ceil(n / dp) decoders and the busiest one ceil(pieces / dp) prompt pieces
(>= ceil(T / dp) tokens); the MoE block and all-to-all (`StageTime.group_s`) see every rank's tokens.
The iteration waits for the busiest rank. Pipeline parallelism: see `cycle_s`.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from solver.perf.arch import ModelArch
from solver.perf.stages import Load, stage_time
from solver.perf.tables import HardwareTable, Plans
from solver.schema.engine import EngineParams

EXACT_TOKENS = 16_384  # token counts tabulated at every integer (the GEMM tables step at m = 2^k + 1)


def _geom(lo: float, hi: float, per_octave: float) -> np.ndarray:
    """Integer-rounded geometric nodes from lo to hi (both included), plus the powers of two."""
    if hi <= lo:
        return np.array([float(lo)])
    k = max(int(math.ceil(math.log2(hi / lo) * per_octave)), 1)
    pts = np.round(np.geomspace(lo, hi, k + 1))
    pow2 = 2.0 ** np.arange(0, math.floor(math.log2(hi)) + 1)
    return np.unique(np.concatenate([pts, pow2[(pow2 >= lo) & (pow2 <= hi)], [lo, hi]]))


def _token_nodes(hi: int) -> np.ndarray:
    exact = np.arange(0.0, min(hi, EXACT_TOKENS) + 1.0)
    if hi <= EXACT_TOKENS:
        return exact
    return np.unique(np.concatenate([exact, _geom(EXACT_TOKENS, hi, 70.0)]))  # ratio ~1.01


def _seq_nodes(hi: int) -> np.ndarray:
    exact = np.arange(0.0, min(hi, 64) + 1.0)
    if hi <= 64:
        return exact
    return np.unique(np.concatenate([exact, _geom(64, hi, 12.0)]))  # ratio ~1.06


def _interp2(xs: list, ys: list, table: list, x: float, y: float) -> float:
    """Bilinear interpolation of table[i][j] over nodes xs[i], ys[j] (clamped, pure Python)."""
    i = min(max(bisect.bisect_right(xs, x) - 1, 0), len(xs) - 2)
    j = min(max(bisect.bisect_right(ys, y) - 1, 0), len(ys) - 2)
    x0, x1, y0, y1 = xs[i], xs[i + 1], ys[j], ys[j + 1]
    u = min(max((x - x0) / (x1 - x0), 0.0), 1.0)
    v = min(max((y - y0) / (y1 - y0), 0.0), 1.0)
    r0, r1 = table[i], table[i + 1]
    a = r0[j] + v * (r0[j + 1] - r0[j])
    b = r1[j] + v * (r1[j + 1] - r1[j])
    return a + u * (b - a)


def _interp2_np(xs: np.ndarray, ys: np.ndarray, table: np.ndarray, x, y) -> np.ndarray:
    """Vectorised bilinear interpolation (clamped at the edges)."""
    x = np.clip(np.asarray(x, dtype=float), xs[0], xs[-1])
    y = np.clip(np.asarray(y, dtype=float), ys[0], ys[-1])
    i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, len(xs) - 2)
    j = np.clip(np.searchsorted(ys, y, side="right") - 1, 0, len(ys) - 2)
    u = (x - xs[i]) / (xs[i + 1] - xs[i])
    v = (y - ys[j]) / (ys[j + 1] - ys[j])
    a = table[i, j] + v * (table[i, j + 1] - table[i, j])
    b = table[i + 1, j] + v * (table[i + 1, j + 1] - table[i + 1, j])
    return a + u * (b - a)


@dataclass(frozen=True, slots=True)
class Limits:
    """The largest batch a grid must cover (per instance; lookups beyond are clamped)."""

    max_seqs: int = 256  # decoding sequences in one iteration
    max_tokens: int = 8192  # tokens of one iteration (the token budget)
    max_context: int = 8192  # KV context of one sequence


class StepTimes:
    """Iteration seconds of one plan (pp stages, dp attention ranks), looked up from grids.

    Build with `StepTimes.build`. Vectorised lookups: `stage_s`; scalar ones for the replay's
    inner loop: `cycle_s` (any iteration) and `decode_cycle_s` / `decode_cycles_s` (pure decode,
    a precomputed row per decode count, ~1 us per scalar lookup).
    """

    def __init__(self, *, pp: int, dp: int, step_s: float, slowdown: float, tok_x: np.ndarray,
                 tok_s: np.ndarray, hop_s: np.ndarray, lm_s: np.ndarray, ad_n: np.ndarray,
                 ctx_x: np.ndarray, ad_s: np.ndarray, ap_t: np.ndarray, ap_p: np.ndarray,
                 ap_s: np.ndarray, eager_s: float = 0.0, grp_s: np.ndarray | None = None) -> None:
        self.pp, self.dp, self.step_s, self.slowdown = int(pp), int(dp), float(step_s), float(slowdown)
        self.eager_s = float(eager_s)  # host launch time of one eager stage (module docstring)
        self.tok_x, self.tok_s, self.hop_s, self.lm_s = tok_x, tok_s, hop_s, lm_s
        self.ad_n, self.ctx_x, self.ad_s = ad_n, ctx_x, ad_s
        self.ap_t, self.ap_p, self.ap_s = ap_t, ap_p, ap_s
        self._tok = tok_s.tolist()
        self.grp_s = np.zeros_like(tok_s) if grp_s is None else grp_s  # of tok_s, the MoE group's terms
        self._grp = self.grp_s.tolist()
        self._hop = hop_s.tolist()
        self._lm = lm_s.tolist()
        self._tok_exact = int(min(tok_x[-1], EXACT_TOKENS))
        self._ctx = ctx_x.tolist()
        self._ap_t, self._ap_p, self._ap = ap_t.tolist(), ap_p.tolist(), ap_s.tolist()
        rank_max = int(ad_n[-1])
        self.max_seqs = rank_max * self.dp  # instance-level decode count the rows cover
        # decode attention at every integer n per rank (rows), and the decode-only stage rows
        n_rank = np.arange(0.0, rank_max + 1.0)
        ad_all = np.stack([np.interp(n_rank, ad_n, ad_s[:, j]) for j in range(len(ctx_x))], axis=1)
        ad_all[0] = 0.0
        self._ad_rows = ad_all.tolist()
        self._dec_stage = self.tokens_s(n_rank)[:, None] + self.lm_np(n_rank)[:, None] + ad_all
        self._dec_stage[0] = 0.0
        self._dec_cycle = self._decode_cycle_rows(np.arange(0.0, self.max_seqs + 1.0))
        self._dec_rows = self._dec_cycle.tolist()
        # speculation (solver/replay/speculation.py `speculating` sets them): drafted tokens per
        # decoder, tokens a decoder gains per iteration (E), draft seconds per decode count x ctx
        self.spec_k, self.spec_gain, self._draft_rows = 0, 1.0, None

    # ---- building ----------------------------------------------------------------------------

    @classmethod
    def build(cls, arch: ModelArch, hw: HardwareTable, plan: Plans, engine: EngineParams,
              limits: Limits = Limits(), slowdown: float | None = None) -> StepTimes:
        """Evaluate the grids of one plan (`plan` holds one row) in one `stage_time` call."""
        if len(plan) != 1:
            raise ValueError("StepTimes.build takes one plan")
        dp, pp = int(plan.dp[0]), int(plan.pp[0])
        seqs = max(-(-limits.max_seqs // dp), 1)
        tokens = max(limits.max_tokens + seqs, 2)  # a rank may carry a whole iteration's prompt tokens
        tok_x = _token_nodes(tokens)
        ad_n = _seq_nodes(seqs)
        ctx_x = _geom(1, max(limits.max_context, 2), 4.0)
        ap_t = np.unique(np.concatenate([[0.0], _geom(1, tokens, 8.0)]))
        ap_p = _geom(1, 2 * max(limits.max_context, 2), 4.0)
        nt, nn, nc, npt, npp = len(tok_x), len(ad_n), len(ctx_x), len(ap_t), len(ap_p)
        z = lambda k: np.zeros(k)  # noqa: E731
        g_n, g_c = (a.ravel() for a in np.meshgrid(ad_n, ctx_x, indexing="ij"))
        g_t, g_p = (a.ravel() for a in np.meshgrid(ap_t, ap_p, indexing="ij"))
        blocks = [
            # P: prefill-shaped tokens, no logits (the attention terms are read elsewhere)
            (z(nt), z(nt), tok_x, np.maximum(tok_x, 1.0), np.maximum(tok_x, 1.0), z(nt)),
            # L: one token, `tok_x` logit rows
            (z(nt), z(nt), np.ones(nt), np.ones(nt), np.ones(nt), tok_x),
            # Ad: decoding sequences only
            (g_n, g_c, z(nn * nc), z(nn * nc), z(nn * nc), g_n),
            # Ap: prefill tokens of equivalent prompt s
            (z(npt * npp), z(npt * npp), g_t, g_p, np.minimum(g_t, g_p), z(npt * npp)),
        ]
        cols = [np.concatenate([b[i] for b in blocks]) for i in range(6)]
        rows = plan.take(np.zeros(len(cols[0]), dtype=np.int64))
        st = stage_time(arch, hw, rows, Load(*cols), engine)
        a, b, c = nt, 2 * nt, 2 * nt + nn * nc
        tok_s = st.gemm_s[:a] + st.comm_s[:a] + st.overhead_s[:a]
        grp_s = st.group_s[:a] if st.group_s is not None else None
        lm_s = st.gemm_s[a:b] - st.gemm_s[a]
        ad_s = st.attention_s[b:c].reshape(nn, nc)
        ap_s = st.attention_s[c:].reshape(npt, npp)
        ad_s[ad_n == 0] = 0.0
        ap_s[ap_t == 0] = 0.0
        eager_s = engine.eager_layer_host_ms * 1e-3 * -(-arch.layers // pp)  # layers of one stage
        return cls(pp=pp, dp=dp, step_s=engine.step_overhead_ms * 1e-3, eager_s=eager_s,
                   slowdown=engine.mixed_batch_slowdown if slowdown is None else slowdown,
                   tok_x=tok_x, tok_s=tok_s, hop_s=st.hop_s[:a], lm_s=lm_s, ad_n=ad_n, ctx_x=ctx_x,
                   ad_s=ad_s, ap_t=ap_t, ap_p=ap_p, ap_s=ap_s, grp_s=grp_s)

    def _decode_cycle_rows(self, n_all: np.ndarray) -> np.ndarray:
        """Cycle seconds of a pure decode iteration of n sequences (rows) at each ctx node."""
        n_rank = np.ceil(n_all / self.dp)
        m = np.maximum(np.minimum(n_rank, self.pp), 1.0)
        big = np.ceil(n_rank / m)
        small = np.floor(n_rank / m)
        n_big = n_rank - small * m  # micro-batches of `big` sequences
        s_big = self._dec_stage[big.astype(int)]
        s_small = self._dec_stage[small.astype(int)]
        total = n_big[:, None] * s_big + (m - n_big)[:, None] * s_small
        if self.pp > 1:
            hop = self.tokens_hop_s(big)[:, None]
            total = np.maximum(total, self.pp * s_big + (self.pp - 1) * hop)
        total = total + self.step_s
        total[0] = self.step_s
        return total

    # ---- vectorised lookups ------------------------------------------------------------------

    def tokens_s(self, tokens) -> np.ndarray:
        """P(tokens): the token-count terms of one stage (seconds)."""
        return self._lin(tokens, self.tok_s)

    def tokens_hop_s(self, tokens) -> np.ndarray:
        return self._lin(tokens, self.hop_s)

    def lm_np(self, rows) -> np.ndarray:
        return self._lin(rows, self.lm_s)

    def _lin(self, x, ys: np.ndarray) -> np.ndarray:
        """Linear in the nodes, the last segment's slope beyond the grid."""
        x = np.asarray(x, dtype=float)
        xs = self.tok_x
        out = np.interp(x, xs, ys)
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        return np.where(x > xs[-1], ys[-1] + (x - xs[-1]) * slope, out)

    def stage_s(self, dec_seqs, dec_ctx, pre_tokens=0.0, pre_prompt=1.0, logits=None) -> np.ndarray:
        """Seconds of one stage for a per-rank load, as `stage_time(...).stage_s` (arrays);
        `pre_prompt` is the equivalent prompt s of the prefill tokens (module docstring);
        `logits` defaults to the decoding sequences. No mixed slowdown, no step overhead."""
        n = np.asarray(dec_seqs, dtype=float)
        t = np.asarray(pre_tokens, dtype=float)
        rows = n if logits is None else np.asarray(logits, dtype=float)
        ad = _interp2_np(self.ad_n, self.ctx_x, self.ad_s, n, dec_ctx)
        ap = _interp2_np(self.ap_t, self.ap_p, self.ap_s, t, pre_prompt)
        return self.tokens_s(n + t) + self.lm_np(rows) + np.where(n > 0, ad, 0.0) + np.where(t > 0, ap, 0.0)

    def iterations_s(self, dec_seqs, dec_ctx, pre_tokens, pre_prompt, completing) -> np.ndarray:
        """`cycle_s` over arrays of iterations (one chunk of prefill each, where any)."""
        n = np.asarray(dec_seqs, dtype=float)
        args = np.broadcast_arrays(n, dec_ctx, pre_tokens, pre_prompt, completing)
        if self.pp == 1:
            d = float(self.dp)
            group = (args[0] + args[2]) / d  # the MoE group's tokens per rank; one prefill piece: on one rank
            n, ctx, t, s, c = (np.ceil(a / d) if i in (0, 4) else np.asarray(a, dtype=float)
                               for i, a in enumerate(args))
            dec = self.stage_s(n, ctx)
            full = self.stage_s(n, ctx, t, s, n + c)
            mixed = np.where((n > 0) & (t > 0), dec + self.slowdown * (full - dec), full)
            mixed = np.where(t > 0, np.maximum(mixed, self.eager_s), mixed)  # eager: host floor
            if self.dp > 1:
                mixed = mixed + np.where(t > 0, self._lin(group, self.grp_s) - self._lin(n + t, self.grp_s), 0.0)
            return mixed + self.step_s
        cycle = np.frompyfunc(lambda *a: self.cycle_s(int(a[0]), float(a[1]), int(a[2]), float(a[3]), int(a[4])),
                              5, 1)
        return cycle(*args).astype(float)

    def decode_cycles_s(self, n: int, ctx0: float, k: int) -> np.ndarray:
        """Cycle seconds of k consecutive pure decode iterations of n sequences whose mean
        context is ctx0 in the first and grows by one token per iteration."""
        ctx = ctx0 + np.arange(k, dtype=float)
        return np.interp(ctx, self.ctx_x, self._dec_cycle[min(n, self.max_seqs)])

    # ---- scalar lookups (the replay's inner loop) ----------------------------------------------

    def _p(self, x: float) -> float:
        if x <= self._tok_exact:
            return self._tok[int(x)]
        return float(self.tokens_s(x))

    def _h(self, x: float) -> float:
        if x <= self._tok_exact:
            return self._hop[int(x)]
        return float(self.tokens_hop_s(x))

    def _l(self, x: float) -> float:
        if x <= self._tok_exact:
            return self._lm[int(x)]
        return float(self.lm_np(x))

    def decode_cycle_s(self, n: int, ctx: float) -> float:
        """Cycle seconds of one pure decode iteration of n sequences at mean context ctx."""
        row = self._dec_rows[min(n, self.max_seqs)]
        xs = self._ctx
        j = min(max(bisect.bisect_right(xs, ctx) - 1, 0), len(xs) - 2)
        v = min(max((ctx - xs[j]) / (xs[j + 1] - xs[j]), 0.0), 1.0)
        return row[j] + v * (row[j + 1] - row[j])

    def _stage(self, n: int, ctx: float, t: int, s: float, logits: int) -> tuple[float, float]:
        """(stage seconds, hop seconds) of one micro-batch, with the mixed slowdown."""
        p = self._p(n + t)
        ad = self._ad(n, ctx) if n else 0.0
        dec = self._p(n) + self._l(n) + ad if n else 0.0
        if not t:
            return dec, self._h(n)
        ap = _interp2(self._ap_t, self._ap_p, self._ap, t, s)
        full = p + self._l(logits) + ad + ap
        if n:
            full = dec + self.slowdown * (full - dec)
        return max(full, self.eager_s), self._h(n + t)  # prompt tokens: an eager stage

    def _ad(self, n: int, ctx: float) -> float:
        """Decode attention of n sequences (per rank, clamped to the grid) at mean context ctx."""
        row = self._ad_rows[min(n, len(self._ad_rows) - 1)]
        xs = self._ctx
        j = min(max(bisect.bisect_right(xs, ctx) - 1, 0), len(xs) - 2)
        v = min(max((ctx - xs[j]) / (xs[j + 1] - xs[j]), 0.0), 1.0)
        return row[j] + v * (row[j + 1] - row[j])

    def cycle_s(self, n: int, ctx: float, t: int = 0, s: float = 0.0, completing: int = 0,
                pieces: int = 1) -> float:
        """Seconds of one iteration of the instance: n decoding sequences of mean context ctx,
        t prefill tokens of equivalent prompt s in `pieces` chunks, `completing` of which end
        their prompt (they need logits).

        Pipeline parallelism (pp stages): the iteration's batch is split into m = min(pp,
        sequences + chunks) micro-batches that are in flight together, as vLLM (up to pp
        scheduled batches in flight) and TensorRT-LLM (micro-batches) keep them. Decoding
        sequences spread evenly over the m; the prefill chunks over min(m, pieces) of them (a
        chunk stays whole: one chunk rides in one micro-batch, the performance model's
        `chunk_latency` assumption). The cycle, until every sequence of the batch can go again,
        is max(sum of the micro-batches' stage times, the slowest one's full pass) + the step
        overhead; with equal micro-batches that is `pass_latency` of one, as `cycle` in
        solver/perf/runtime.py. pp == 1: stage time + step overhead.
        """
        if not t:
            return self.decode_cycle_s(n, ctx)
        if self.spec_k and n:
            return self._spec_mixed_s(n, ctx, t, s, completing, pieces)
        return self._cycle_s(n, ctx, t, s, completing, pieces)

    def _spec_mixed_s(self, n: int, ctx: float, t: int, s: float, completing: int, pieces: int) -> float:
        """A mixed iteration of a speculating instance: its n decoders' k drafted positions ride
        as prefill tokens of equivalent prompt 2 ctx - 1 beside the t chunk tokens (their causal
        pairs add; they need logits), plus the k draft passes (solver/perf/colocated.py)."""
        kn = self.spec_k * n
        s_all = (t * s + kn * max(2.0 * ctx - 1.0, 1.0)) / (t + kn)
        row = self._draft_rows[min(n, self.max_seqs)]
        xs = self._ctx
        j = min(max(bisect.bisect_right(xs, ctx) - 1, 0), len(xs) - 2)
        v = min(max((ctx - xs[j]) / (xs[j + 1] - xs[j]), 0.0), 1.0)
        draft = row[j] + v * (row[j + 1] - row[j])
        return self._cycle_s(n, ctx, t + kn, s_all, completing + kn, pieces) + draft

    def _g(self, x: float) -> float:
        return self._grp[int(x)] if x <= self._tok_exact and x == int(x) else float(self._lin(x, self.grp_s))

    def _busiest_prefill(self, t: int, pieces: int) -> int:
        """Prefill tokens of the busiest attention-DP rank: its whole pieces (module docstring)."""
        pieces = max(pieces, 1)
        return max(-(-t // self.dp), min(t, -(-t * -(-pieces // self.dp) // pieces)))

    def _cycle_s(self, n: int, ctx: float, t: int, s: float, completing: int, pieces: int) -> float:
        dp = self.dp
        fix = 0.0
        if dp > 1:
            group = (n + t) / dp
            n, completing = -(-n // dp), -(-completing // dp)
            t = self._busiest_prefill(t, pieces)
            fix = self._g(group) - self._g(n + t)  # the MoE terms at the group's tokens
        pp = self.pp
        if pp == 1:
            return self._stage(n, ctx, t, s, n + completing)[0] + fix + self.step_s
        m = min(pp, n + max(pieces, 1))
        k = max(min(m, pieces), 1)  # micro-batches carrying prefill
        total = slowest = hop = 0.0
        for j in range(m):
            n_j = n // m + (j < n % m)
            t_j = t // k + (j < t % k) if j < k else 0
            c_j = completing // k + (j < completing % k) if j < k else 0
            st_j, hop_j = self._stage(n_j, ctx, t_j, s, n_j + c_j)
            total += st_j
            if st_j > slowest:
                slowest, hop = st_j, hop_j
        return max(total + fix, pp * slowest + (pp - 1) * hop) + self.step_s

    def pass_s(self, n: int, ctx: float, t: int = 0, s: float = 0.0, completing: int = 0) -> float:
        """One micro-batch of this load through every stage and hop, plus the step overhead
        (`pass_latency` of solver/perf/stages.py, with the mixed slowdown)."""
        st, hop = self._stage(n, ctx, t, s, n + completing)
        return self.pp * st + (self.pp - 1) * hop + self.step_s
