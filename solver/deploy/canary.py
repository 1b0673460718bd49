"""`fleetplan canary`: the small-scale benchmark that validates a plan before rollout.

Per pool: start one instance of the pool (its launch command from `fleetplan deploy`), drive it
at the request rate the plan gives one instance (`capacity_qps_per_instance`) with the planned
prompt and output lengths (the workload's means) for a fixed duration, and compare the measured
p50/p99 TTFT and TPOT with the predicted ones: a measurement within the plan's error band
(the decision record's, where it carries one) of the prediction, and within the SLO bound,
passes. Prefill pools are judged on TTFT, decode pools on TPOT, colocated pools on both; a
disaggregated pool is driven through one prefill and one decode instance behind the KV-aware
proxy, so that the pool under test is the bottleneck.

The commands use the flags of the pinned tools in solver/deploy/flags.py.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

from solver.deploy.facts import Plan, PoolFacts, pool_facts
from solver.deploy.flags import BENCHMARKS, Tool
from solver.errors import InputError

TOOLS = tuple(BENCHMARKS)
METRICS = {"prefill": ("ttft",), "decode": ("tpot",), "colocated": ("ttft", "tpot")}


@dataclass(frozen=True)
class Check:
    metric: str  # ttft_p50_ms ...
    predicted_ms: float
    band_pct: float | None  # the decision record's error band of the metric; None: no record
    accept_ms: float  # the most a measurement may be: predicted x (1 + band), or the prediction
    bound_ms: float | None  # the SLO bound


@dataclass(frozen=True)
class PoolCanary:
    facts: PoolFacts
    rate_qps: float
    input_tokens: int
    output_tokens: int
    duration_s: int
    command: list[str]  # argv of the benchmark
    checks: list[Check]

    @property
    def shell(self) -> str:
        return shlex.join(self.command)


@dataclass(frozen=True)
class Canary:
    plan: Plan
    tool: Tool
    pools: list[PoolCanary]


def _band(plan: Plan, f: PoolFacts) -> tuple[float | None, float | None, str | None]:
    r = plan.doc.decision
    if r is None:
        return None, None, None
    for b in r.uncertainty.pools:
        if (b.service, b.role, b.hardware) == (f.service.name, f.pool.role, f.pool.hardware):
            return b.band_ttft_pct, b.band_tpot_pct, b.band_source
    return None, None, None


def checks(plan: Plan, f: PoolFacts) -> list[Check]:
    """The latencies pool f must meet: the metrics of its role that the plan predicts."""
    band_ttft, band_tpot, _ = _band(plan, f)
    pred, slo = f.pool.predicted, f.service.slo
    out = []
    for m in METRICS[f.pool.role]:
        band = band_ttft if m == "ttft" else band_tpot
        for q in ("p50", "p99"):
            value = getattr(pred, f"{m}_ms" if q == "p50" else f"{m}_p99_ms")
            if value is None:
                continue
            accept = value * (1 + band / 100) if band is not None else value
            out.append(Check(f"{m}_{q}_ms", value, band, round(accept, 4), getattr(slo, f"{m}_{q}_ms")))
    return out


def command(tool: str, f: PoolFacts, rate: float, lengths: tuple[int, int], duration: int, url: str) -> list[str]:
    """The benchmark's argv for pool f (flags of the pinned tool, solver/deploy/flags.py)."""
    isl, osl = (str(x) for x in lengths)
    r = f"{rate:.6g}"
    m = f.model_id
    if tool == "aiperf":
        return ["aiperf", "profile", "--model", m, "--url", url, "--endpoint-type", "completions", "--streaming",
                "--tokenizer", m, "--synthetic-input-tokens-mean", isl, "--synthetic-input-tokens-stddev", "0",
                "--output-tokens-mean", osl, "--output-tokens-stddev", "0", "--request-rate", r,
                "--benchmark-duration", str(duration), "--random-seed", "0", "--artifact-dir", f"canary/{f.name}"]
    if tool == "vllm":
        n = max(1, math.ceil(rate * duration))
        return ["vllm", "bench", "serve", "--backend", "openai", "--base-url", url, "--endpoint", "/v1/completions",
                "--model", m, "--dataset-name", "random", "--random-input-len", isl, "--random-output-len", osl,
                "--random-range-ratio", "0", "--request-rate", r, "--num-prompts", str(n), "--seed", "0",
                "--ignore-eos", "--percentile-metrics", "ttft,tpot", "--metric-percentiles", "50,99",
                "--save-result", "--result-filename", f"canary-{f.name}.json"]
    return ["guidellm", "benchmark", "run", "--target", url, "--model", m, "--processor", m,
            "--data", f"prompt_tokens={isl},output_tokens={osl}", "--rate-type", "constant", "--rate", r,
            "--max-seconds", str(duration), "--random-seed", "0", "--output-path", f"canary-{f.name}.json"]


def protocol(plan: Plan, tool: str = "aiperf", duration: int = 300, url: str = "http://localhost:8000",
             cards: dict | None = None) -> Canary:
    """The canary of every pool of the plan, for benchmark `tool`."""
    if tool not in BENCHMARKS:
        raise InputError(f"--tool: unknown benchmark tool '{tool}' (one of {', '.join(TOOLS)})")
    if plan.doc.status == "infeasible":
        raise InputError(f"{plan.path}: the plan is infeasible and has no pools to validate")
    pools = []
    for f in pool_facts(plan, cards, need_hardware=False):
        if f.workload is None:
            raise InputError(f"{plan.path}: assumptions.workloads has no workload of service '{f.service.name}'; "
                             "the canary needs the planned prompt and output lengths")
        lengths = (round(f.workload.input_tokens_mean), round(f.workload.output_tokens_mean))
        rate = f.pool.capacity_qps_per_instance
        pools.append(PoolCanary(f, rate, *lengths, duration, command(tool, f, rate, lengths, duration, url),
                                checks(plan, f)))
    return Canary(plan, BENCHMARKS[tool], pools)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.2f}"


def pool_lines(c: Canary, p: PoolCanary) -> list[str]:
    """One pool's step of the runbook (markdown)."""
    f = p.facts
    at = f.workload_at
    lines = [f"### {f.where}: '{f.service.name}' {f.pool.role} on {f.pool.hardware}"
             + (f" at {f.pool.site}" if f.pool.site else ""), "",
             f"- one instance (tp{f.pool.tp} pp{f.pool.pp} ep{f.pool.ep} dp{f.pool.dp}, batch {f.pool.batch}); "
             f"rate {p.rate_qps:.6g} QPS ({f.at('capacity_qps_per_instance')}), "
             f"{p.input_tokens} prompt / {p.output_tokens} output tokens ({at}.input_tokens_mean, "
             f"{at}.output_tokens_mean), {p.duration_s} s",
             "", "```", p.shell, "```", ""]
    rows = [f"| {k.metric} | {_ms(k.predicted_ms)} | {'-' if k.band_pct is None else f'{k.band_pct:g}%'} | "
            f"{_ms(k.accept_ms)} | {_ms(k.bound_ms)} |" for k in p.checks]
    lines += ["| metric | predicted ms | band | pass at most ms | SLO bound ms |", "|---|---|---|---|---|", *rows, ""]
    return lines


def runbook_lines(c: Canary) -> list[str]:
    """The runbook's body (markdown, without a title): the steps, then one section per pool."""
    t = c.tool
    band = ("the decision record's error band" if c.plan.doc.decision is not None
            else "no error band (plan --no-record): the prediction itself")
    lines = [f"Benchmark tool: {t.program}, pinned at {t.source()} (flags as defined in {t.file}).", "",
             "1. Start one instance of the pool (`fleetplan deploy RESULT.json --target ...`); a prefill or "
             "decode pool with one instance of the other role behind the KV-aware proxy.",
             "2. Run the pool's command below against it.",
             f"3. Pass when every measured percentile is at most 'pass at most' ({band}) and within the SLO bound; "
             "otherwise re-measure the operator tables of that hardware and plan again.", ""]
    for p in c.pools:
        lines += pool_lines(c, p)
    return lines


def to_markdown(c: Canary) -> str:
    head = [f"# Canary runbook: {c.plan.doc.problem}", "", *[f"- {x}" for x in c.plan.header()], ""]
    return "\n".join(head + runbook_lines(c)).rstrip("\n") + "\n"
