"""Benchmark: the analytic capacity of one instance against the replay's, over 300+ plans.

The candidate table prices every plan with the closed-form runtime model
(solver/perf/runtime.py `prefill_role`, `decode_role`, `colocated_role`: `capacity_qps`, the
requests/s one instance sustains within the SLO). Issue 14 asks that it agree with the replay
(solver/replay/): median |analytic - simulated| / simulated capacity within 10% over at least
300 plans spanning models (dense, MoE), hardware (with measured operator tables: h100-sxm,
h200-sxm for vLLM and TensorRT-LLM; roofline only: b200, mi300x, and SGLang everywhere),
runtimes (colocated, prefill, decode; vllm, sglang, trtllm) and SLO tightness.

Cases: a grid over those axes, token workloads and three SLO tiers is priced analytically in
one vectorised call per (model, hardware, engine, role, workload, SLO); of the plans it finds
feasible (capacity > 0), a seeded draw keeps a few per group.

The replay's capacity of a case: ONE instance of the role (solver/replay/instance.py, limits as
`fleetplan simulate` sets them: solver/plan/sim_instances.py `_budget`), fed `--requests`
Poisson arrivals at a rate r (one seed, lengths from the workload); r meets the SLO when the
measured requests' (all but the first 10% by arrival) p50 and p99 TTFT and TPOT, inflated by
the safety margin exactly as runtime.py `_within` inflates the analytic ones, are within the
bounds. The capacity is found by a geometric bisection of r over [1/4, 4] x the analytic
capacity (`--iters` trials after the two end points), reusing the plan's step-time grid. So
that both sides count the same terms:
- every simulated TTFT gets the engine's `request_overhead_ms` (the analytic TTFT adds it, the
  replay does not);
- a prefill instance's TTFT gets the KV transfer (runtime.py `kv_transfer_s`), as the analytic
  prefill TTFT does;
- a decode instance's requests arrive holding their KV and first token (role "decode"), so its
  TPOT, (finish - arrival) / (output - 1), includes the wait for a slot, as a user sees it.

    .venv/bin/python benchmarks/bench_replay_capacity.py [--cases N] [--requests N] [--iters N]
        [--seed N] [--out DIR] [--md FILE]

Writes DIR/replay_capacity.csv (one row per case) and FILE (default
benchmarks/replay_capacity.md: median and p90 |error| per group, the worst groups).
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.perf import runtime as rt
from solver.perf.arch import ModelArch
from solver.perf.colocated import colocated_role
from solver.perf.operators.tables import measured_tables
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.perf.validity import valid_mask
from solver.replay.instance import instance_plan
from solver.replay.loop import run
from solver.replay.sources.open_loop import poisson_source
from solver.schema.problem import TokenDist

HERE = Path(__file__).resolve().parent
MODELS = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "mixtral-8x7b", "qwen3-235b-a22b")
HARDWARE = ("h100-sxm", "h200-sxm", "b200", "mi300x")
MEASURED = {("h100-sxm", "vllm"), ("h100-sxm", "trtllm"), ("h200-sxm", "vllm"), ("h200-sxm", "trtllm")}
ENGINES = ("vllm", "sglang", "trtllm")
ROLES = ("colocated", "prefill", "decode")
# (name, input mean, input p99, output mean, output p99) in tokens; "online" is
# problems/llama3-70b-online.yaml's, the others a chat-like spread and a long-output one
WORKLOADS = (("online", 2048, 2048, 150, 150), ("chat", 1000, 3000, 300, 800), ("long-out", 512, 512, 1024, 1024))
# SLO tiers (ms): tight ~ an interactive chat bound, medium ~ the default problem's, loose ~ batch-like
SLOS = {
    "tight": dict(ttft_p50_ms=300.0, ttft_p99_ms=1000.0, tpot_p50_ms=25.0, tpot_p99_ms=40.0),
    "medium": dict(ttft_p50_ms=1000.0, ttft_p99_ms=3000.0, tpot_p50_ms=50.0, tpot_p99_ms=80.0),
    "loose": dict(ttft_p50_ms=5000.0, ttft_p99_ms=15000.0, tpot_p50_ms=100.0, tpot_p99_ms=200.0),
}
MARGIN = 0.05  # the problems' default safety_margin (solver/schema/problem.py)
TP = (1, 2, 4, 8)
BATCH = {"prefill": (1, 2, 4, 8, 16), "decode": (16, 32, 64, 128, 256), "colocated": (16, 32, 64, 128, 256)}
CHUNKS = (1024, 2048, 4096, 8192)
KEEP_UP = 0.95  # finishes / arrivals over the measured arrivals' span: below it the queue grows (see `metrics`)
WARMUP = 0.1  # share of requests (by arrival) left out of the percentiles


@dataclass(frozen=True)
class Case:
    model: str
    moe: bool
    hardware: str
    engine: str
    role: str
    workload: tuple
    slo: str
    tp: int
    ep: int
    batch: int
    chunk: int
    analytic_qps: float


def _slo(tier: str) -> rt.Slo:
    return rt.Slo(**SLOS[tier], safety_margin=MARGIN)


def _wl(w: tuple) -> rt.Workload:
    return rt.Workload(float(w[1]), float(w[3]), float(w[2]), float(w[4]))


_CACHE: dict = {}


def context(model: str, hardware: str, engine: str):
    """(arch, hardware table, engine parameters) of one combination, built once."""
    key = (model, hardware, engine)
    if key not in _CACHE:
        card = shipped.hardware_card(hardware)
        params = engine_params(engine)
        hw = HardwareTable.from_cards([card], engine=params, profiles=measured_tables([card], engine))
        _CACHE[key] = (ModelArch.from_card(shipped.model_card(model)), hw, params)
    return _CACHE[key]


def _grid(arch: ModelArch, role: str) -> tuple[Plans, np.ndarray]:
    moe = arch.moe_layers > 0
    tp = np.array([t for t in TP for _ in (0, 1)][:: 1 if moe else 2])
    ep = np.where(np.arange(len(tp)) % 2 == 1, tp, 1) if moe else np.ones(len(tp), dtype=int)
    b = np.array(BATCH[role])
    chunks = np.array(CHUNKS if role == "colocated" else (0,))
    ti, bi, ci = (a.ravel() for a in np.meshgrid(np.arange(len(tp)), np.arange(len(b)), np.arange(len(chunks)),
                                                 indexing="ij"))
    fp8 = precision_code("fp8")
    plans = Plans.of(hw=0, tp=tp[ti], pp=1, ep=ep[ti], dp=1, batch=b[bi], wprec=fp8, kvprec=fp8)
    return plans, chunks[ci]


def _analytic(arch, hw, plans, chunks, role, wl, slo, engine) -> np.ndarray:
    if role == "prefill":
        return rt.prefill_role(arch, hw, plans, wl, slo, engine).capacity_qps
    if role == "decode":
        return rt.decode_role(arch, hw, plans, wl, slo, engine).capacity_qps
    return colocated_role(arch, hw, plans, wl, slo, engine, chunks).capacity_qps


def _group_cases(key: tuple) -> list[Case]:
    """The feasible plans (analytic capacity > 0) of one (model, hardware, engine, role, workload, SLO)."""
    model, hardware, engine, role, w, tier = key
    arch, hw, params = context(model, hardware, engine)
    plans, chunks = _grid(arch, role)
    cap = _analytic(arch, hw, plans, chunks, role, _wl(w), _slo(tier), params)
    idx = np.nonzero(valid_mask(arch, plans) & (cap > 1e-3))[0]
    return [Case(model, arch.moe_layers > 0, hardware, engine, role, w, tier, int(plans.tp[j]), int(plans.ep[j]),
                 int(plans.batch[j]), int(chunks[j]), float(cap[j])) for j in idx]


def draw_cases(n: int, seed: int, per: int = 2) -> list[Case]:
    """`per` feasible plans from each group in a seeded order of the groups, until `n` cases
    (groups are priced only when reached: each costs one vectorised model call)."""
    rng = np.random.default_rng(seed)
    keys = [(m, h, e, r, w, t) for m in MODELS for h in HARDWARE for e in ENGINES for r in ROLES
            for w in WORKLOADS for t in SLOS]
    out: list[Case] = []
    for i in rng.permutation(len(keys)):
        pool = _group_cases(keys[i])
        if pool:
            out += [pool[j] for j in sorted(rng.choice(len(pool), size=min(per, len(pool)), replace=False))]
        if len(out) >= n:
            break
    return out[:n]


def _budget(case: Case, wl: rt.Workload) -> tuple[int, int, int]:
    """(max sequences, token budget, longest context), as solver/plan/sim_instances.py sets them."""
    context_max = int(2 * (wl.input_p99 + wl.output_p99))
    if case.role == "colocated":
        return case.batch, case.chunk, context_max
    if case.role == "prefill":
        return case.batch, max(case.batch * int(math.ceil(wl.input_p99)), 1), context_max
    return case.batch, case.batch, context_max


class Trial:
    """Replays of one case at chosen rates (the plan's step-time grid built once)."""

    def __init__(self, case: Case, n: int, seed: int) -> None:
        self.case, self.n, self.seed = case, n, seed
        arch, hw, params = context(case.model, case.hardware, case.engine)
        self.wl = _wl(case.workload)
        self.params, self.slo = params, _slo(case.slo)
        fp8 = precision_code("fp8")
        plan = Plans.of(hw=0, tp=case.tp, pp=1, ep=case.ep, dp=1, batch=case.batch, wprec=fp8, kvprec=fp8)
        seqs, tokens, self.max_context = _budget(case, self.wl)
        self.ip = instance_plan(arch, hw, plan, params, case.engine, seqs, tokens, self.max_context)
        w = case.workload
        self.dists = (TokenDist(mean=w[1], p99=w[2]) if w[2] != w[1] else TokenDist(mean=w[1]),
                      TokenDist(mean=w[3], p99=w[4]) if w[4] != w[3] else TokenDist(mean=w[3]))
        self.extra_ttft_s = params.request_overhead_ms * 1e-3
        if case.role == "prefill":  # the KV transfer the analytic prefill TTFT counts
            self.kv_s = float(rt.kv_transfer_s(arch, hw, plan, 1.0, params, None)[0])
            self.kv_per_token_s = float(rt.kv_transfer_s(arch, hw, plan, 1001.0, params, None)[0]) - self.kv_s
            self.kv_per_token_s /= 1000.0

    def metrics(self, rate: float) -> tuple[float, ...]:
        """(TTFT p50, p99, TPOT p50, p99) in ms at `rate` (NaN where the role has none), and the
        keep-up ratio: requests leaving during the second half of the measured requests'
        arrival span over the requests arriving in it. A finite run past saturation can still
        meet a latency bound (a backlog of a few seconds spread over a decode's 150 tokens
        barely moves its TPOT), so the instance must also keep up: in a steady state as many
        leave as arrive (within the noise of the window's edges, ~1% at 1,000 requests), an
        overloaded instance lets only its saturated throughput leave. (Over the whole span the
        ratio reads low for long decodes even when nothing queues: the instance is still
        filling up.)"""
        src = poisson_source(rate, self.n, *self.dists, seed=self.seed, max_context=self.max_context)
        table = src.table
        inst = self.ip.instance(table, 0, self.case.role)
        run(src, inst)
        rows = np.argsort(table.arrival_s, kind="stable")[int(WARMUP * self.n):]
        arr, fin = table.arrival_s[rows], table.finish_s[rows]
        first = arr if self.case.role == "decode" else table.first_token_s[rows]
        ttft = first - arr + self.extra_ttft_s
        if self.case.role == "prefill":
            ttft = ttft + self.kv_s + self.kv_per_token_s * (table.prompt_tokens[rows] - 1.0)
        out = table.output_tokens[rows]
        multi = out > 1
        tpot = (fin[multi] - first[multi]) / (out[multi] - 1)
        p = (lambda v, q: float(np.percentile(v, q)) * 1e3 if len(v) else math.nan)
        ttft_p = (math.nan, math.nan) if self.case.role == "decode" else (p(ttft, 50), p(ttft, 99))
        tpot_p = (math.nan, math.nan) if self.case.role == "prefill" else (p(tpot, 50), p(tpot, 99))
        # keeping up: the requests finishing while the measured ones arrive, against those arriving
        left = table.first_token_s if self.case.role == "prefill" else table.finish_s  # a prompt leaves at its token
        t0, t1 = arr[len(arr) // 2], arr[-1]  # the second half: the instance has filled up by then
        done = np.count_nonzero((left >= t0) & (left <= t1))
        came = np.count_nonzero((table.arrival_s >= t0) & (table.arrival_s <= t1))
        return ttft_p + tpot_p + (done / max(came, 1),)

    def meets(self, rate: float) -> bool:
        *m, kept_up = self.metrics(rate)
        s = self.slo
        bounds = (s.ttft_p50_ms, s.ttft_p99_ms, s.tpot_p50_ms, s.tpot_p99_ms)
        return kept_up >= KEEP_UP and all(math.isnan(v) or v * (1.0 + s.safety_margin) <= b for v, b in zip(m, bounds, strict=True)
                   if b is not None)


def replay_capacity(trial: Trial, analytic: float, iters: int) -> tuple[float, str]:
    """Highest Poisson rate meeting the SLO, by geometric bisection over [1/4, 4] x analytic;
    ("<" / ">" flags a capacity outside the bracket, reported at the bound)."""
    lo, hi = analytic / 4.0, analytic * 4.0
    if not trial.meets(lo):
        return lo, "<"
    if trial.meets(hi):
        return hi, ">"
    for _ in range(iters):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if trial.meets(mid) else (lo, mid)
    return math.sqrt(lo * hi), ""


FIELDS = ("model", "moe", "hardware", "tables", "engine", "role", "workload", "slo", "tp", "ep", "batch", "chunk",
          "analytic_qps", "replay_qps", "flag", "rel_error", "seconds")


def measure(cases: list[Case], n: int, iters: int, seed: int) -> list[dict]:
    rows = []
    t_all = time.perf_counter()
    for k, c in enumerate(cases):
        t0 = time.perf_counter()
        trial = Trial(c, n, seed)
        sim, flag = replay_capacity(trial, c.analytic_qps, iters)
        err = (c.analytic_qps - sim) / sim
        rows.append(dict(model=c.model, moe=c.moe, hardware=c.hardware,
                         tables="measured" if (c.hardware, c.engine) in MEASURED else "roofline", engine=c.engine,
                         role=c.role, workload=c.workload[0], slo=c.slo, tp=c.tp, ep=c.ep, batch=c.batch,
                         chunk=c.chunk, analytic_qps=round(c.analytic_qps, 4), replay_qps=round(sim, 4), flag=flag,
                         rel_error=round(err, 4), seconds=round(time.perf_counter() - t0, 2)))
        if k % 25 == 0:
            print(f"[{k + 1}/{len(cases)}] {time.perf_counter() - t_all:.0f} s: {c.model} {c.hardware} {c.engine} "
                  f"{c.role} {c.workload[0]} {c.slo} tp{c.tp} b{c.batch} c{c.chunk}: analytic "
                  f"{c.analytic_qps:.3f} replay {flag}{sim:.3f} QPS ({100 * err:+.0f}%)", flush=True)
    return rows


def _stats(errs: list[float]) -> tuple[float, float, float]:
    a = np.abs(np.asarray(errs))
    return float(np.median(a)), float(np.percentile(a, 90)), float(np.median(errs))


def summary(rows: list[dict], title: str, seconds: float) -> str:
    lines = [f"## {title}", "", f"{len(rows)} cases, {seconds:.0f} s. Error = (analytic - replay) / replay; "
             "|error| median / p90, and the signed median (positive: the analytic model promises more).", ""]
    med, p90, sgn = _stats([r["rel_error"] for r in rows])
    lines += [f"**All: median |error| {100 * med:.1f}%, p90 {100 * p90:.1f}%, signed median {100 * sgn:+.1f}%**",
              ""]
    groups = []
    for key in ("moe", "tables", "hardware", "role", "engine", "slo", "workload"):
        lines += [f"| {key} | cases | median abs | p90 abs | signed median |", "|---|---|---|---|---|"]
        for v in sorted({str(r[key]) for r in rows}):
            errs = [r["rel_error"] for r in rows if str(r[key]) == v]
            m, p, s = _stats(errs)
            lines.append(f"| {v} | {len(errs)} | {100 * m:.1f}% | {100 * p:.1f}% | {100 * s:+.1f}% |")
        lines.append("")
    for role in ROLES:
        for eng in ENGINES:
            for tier in SLOS:
                errs = [r["rel_error"] for r in rows if (r["role"], r["engine"], r["slo"]) == (role, eng, tier)]
                if len(errs) >= 3:
                    groups.append((_stats(errs), len(errs), f"{role} / {eng} / {tier}"))
    groups.sort(key=lambda g: -g[0][0])
    lines += ["Worst (role / engine / SLO) groups:", "", "| group | cases | median abs | signed median |",
              "|---|---|---|---|"]
    lines += [f"| {g} | {n} | {100 * s[0]:.1f}% | {100 * s[2]:+.1f}% |" for s, n, g in groups[:8]]
    return "\n".join(lines) + "\n"


def _case_of(r: dict) -> Case:
    w = next(x for x in WORKLOADS if x[0] == r["workload"])
    return Case(r["model"], r["moe"] == "True", r["hardware"], r["engine"], r["role"], w, r["slo"], int(r["tp"]),
                int(r["ep"]), int(r["batch"]), int(r["chunk"]), float(r["analytic_qps"]))


def reanalyse(path: Path) -> list[dict]:
    """The rows of a previous run's CSV with the analytic capacity recomputed by the current
    solver/perf/runtime.py and the replay's capacity kept: the replay does not use runtime.py
    (solver/replay/ prices iterations with solver/perf/stages.py through its step-time grids),
    so a correction of the analytic model is measured without replaying again."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        c = _case_of(r)
        arch, hw, params = context(c.model, c.hardware, c.engine)
        fp8 = precision_code("fp8")
        plan = Plans.of(hw=0, tp=c.tp, pp=1, ep=c.ep, dp=1, batch=c.batch, wprec=fp8, kvprec=fp8)
        cap = float(_analytic(arch, hw, plan, np.array([c.chunk]), c.role, _wl(c.workload), _slo(c.slo), params)[0])
        sim = float(r["replay_qps"])
        out.append({**r, "analytic_qps": round(cap, 4), "rel_error": round((cap - sim) / sim, 4)})
    return out


def _write(rows: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "replay_capacity.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "data")
    ap.add_argument("--md", type=Path, default=HERE / "replay_capacity.md")
    ap.add_argument("--title", default="Analytic vs replay capacity")
    ap.add_argument("--reanalyse", type=Path, help="a previous run's CSV: recompute only the analytic side")
    a = ap.parse_args()
    t0 = time.perf_counter()
    if a.reanalyse:
        rows = reanalyse(a.reanalyse)
    else:
        cases = draw_cases(a.cases, a.seed)
        print(f"{len(cases)} cases drawn in {time.perf_counter() - t0:.1f} s", flush=True)
        rows = measure(cases, a.requests, a.iters, a.seed)
    _write(rows, a.out)
    text = summary(rows, a.title, time.perf_counter() - t0)
    a.md.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
