"""`fleetplan plan PROBLEM --current RESULT.json --measured FILE[@POOL]...`: drift of a running
plan and the re-plan it asks for.

1. Each measured file (a benchmark tool's result file, as `validate --plan` reads it) is
   compared with the running plan's pool it measured (`@POOL`, else the one pool that agrees
   with the file: solver/accuracy/plan_compare.py): per latency, measured against predicted,
   bound and margin, inside the plan's error band or not.
2. A pool whose p50 of its stage (TTFT for prefill, TPOT for decode, the larger ratio of the two
   for colocated) lies outside the band runs `factor` = measured / predicted times as long as
   predicted; inside the band the factor is 1 (the measurement agrees with the prediction
   within what the calibration already admits). Several points of one pool: the largest factor.
3. The problem is planned again with the running plan as `current:` (so the transition cost of
   `transition:` is charged) and each factor as a time dilation of that pool's service, role
   and hardware type (solver/candidates/dilation.py).

Why a per-pool factor and not a refitted calibration: the measurements of a running fleet are
a few points per pool, fewer than a fit of four engine-wide parameters needs (`fleetplan
calibrate` refuses fewer than 8 fitted rows), and the engine's parameters are shared by every
pool: one slow pool would move every other pool's prediction without a measurement of it. The
factor says only what was measured: this pool, on this card, runs that much slower.
"""

from __future__ import annotations

from dataclasses import replace

from solver.accuracy.bench_rows import Known
from solver.accuracy.plan_compare import compare, load_plan
from solver.accuracy.readers.common import read_user_file
from solver.accuracy.readers.detect import detect, read_points
from solver.errors import InputError
from solver.problem.load import ResolvedProblem, resolve
from solver.schema.bench_compare import PoolComparison
from solver.schema.drift import Drift, DriftPool, PoolChange
from solver.schema.fleet import CurrentPool
from solver.schema.result import PlanResult

MAX_MEASURED = 64  # measured files of one re-plan (ours: a few per pool)
# a measured / predicted ratio outside this range is not drift of the planned configuration
# (another model, layout or load was measured): refused rather than planned on (ours)
FACTOR_RANGE = (0.2, 5.0)
STAGE = {"prefill": ("ttft_p50_ms",), "decode": ("tpot_p50_ms",), "colocated": ("ttft_p50_ms", "tpot_p50_ms")}
METHOD = ("per-pool time dilation: where a pool's measured p50 of its stage lies outside the plan's "
          "error band, every iteration of that service, role and hardware type takes measured / "
          "predicted times as long in the re-plan (and one instance sustains that much less); the "
          "engine calibration is not refitted (docs/calibrate.md, Drift)")


def _spec(ref: str) -> tuple[str, int | None]:
    path, sep, pool = ref.rpartition("@")
    if sep and pool.isdigit() and path:
        return path, int(pool)
    return ref, None


def compare_all(current: str, measured: list[str]) -> list[tuple[str, PoolComparison]]:
    if not 1 <= len(measured) <= MAX_MEASURED:
        raise InputError(f"--measured: 1 to {MAX_MEASURED} files (got {len(measured)})")
    out = []
    for ref in measured:
        path, pool = _spec(ref)
        text = read_user_file(path)
        fmt = detect(path, text)
        if fmt == "csv":
            raise InputError(f"{path}: --measured takes a benchmark tool's result file of a running pool "
                             "(aiperf, vllm bench serve, guidellm, MLPerf), not a validate CSV")
        cmp = compare(path, fmt, read_points(path, text, fmt), current, Known({}, "flags"), pool)
        out += [(path, c) for c in cmp.pools]
    return out


def _factor(c: PoolComparison) -> tuple[float, list[str]]:
    outside = [x.metric for x in c.latencies if x.inside_band is False]
    ratios = [x.measured_ms / x.predicted_ms for x in c.latencies
              if x.metric in STAGE[c.role] and x.inside_band is False and x.measured_ms and x.predicted_ms]
    return (max(ratios) if ratios else 1.0), outside


def drift_pools(found: list[tuple[str, PoolComparison]]) -> list[DriftPool]:
    by_pool: dict[int, DriftPool] = {}
    for path, c in found:
        f, outside = _factor(c)
        lo, hi = FACTOR_RANGE
        if not lo <= f <= hi:
            raise InputError(f"{path}: pool {c.pool} measured {f:.2f} x its prediction, outside {lo:g}..{hi:g}: "
                             "not drift of the planned configuration (check the load, lengths and layout)")
        violated = [x.metric for x in c.latencies if x.holds is False]
        d = by_pool.get(c.pool)
        if d is None:
            by_pool[c.pool] = DriftPool(pool=c.pool, service=c.service, role=c.role, hardware=c.hardware,
                                        sources=[f"{path} ({c.where})"], latencies=list(c.latencies),
                                        violated=violated, outside_band=outside, factor=round(f, 4))
        else:
            by_pool[c.pool] = d.model_copy(update={
                "sources": d.sources + [f"{path} ({c.where})"], "latencies": d.latencies + list(c.latencies),
                "violated": sorted(set(d.violated) | set(violated)),
                "outside_band": sorted(set(d.outside_band) | set(outside)), "factor": max(d.factor, round(f, 4))})
    return [by_pool[k] for k in sorted(by_pool)]


def current_pools(doc: PlanResult) -> list[CurrentPool]:
    """The running plan's pools as the problem's `current:` entries."""
    return [CurrentPool(service=s.name, role=p.role, hardware=p.hardware, site=p.site, tp=p.tp, pp=p.pp,
                        ep=p.ep, dp=p.dp, batch=p.batch, chunk_tokens=p.chunk_tokens, instances=p.instances)
            for s in doc.services for p in s.pools]


def drift_problem(rp: ResolvedProblem, current: str, pools: list[DriftPool]) -> ResolvedProblem:
    """The problem with the running plan as `current:` and the pools' dilations."""
    if rp.problem.transition is None:
        raise InputError(f"{rp.doc.path}: transition: --current needs the problem's transition: block "
                         "(the switching costs the re-plan is weighed against)")
    doc = load_plan(current)
    if doc.status == "infeasible":
        raise InputError(f"{current}: the running plan is infeasible; it has no pools to re-plan from")
    names = {s.name for s in rp.problem.services}
    missing = sorted({s.name for s in doc.services} - names)
    if missing:
        raise InputError(f"{current}: services {missing} are not in the problem {rp.doc.path}")
    problem = rp.problem.model_copy(update={"current": current_pools(doc)})
    scale = tuple((d.service, d.role, d.hardware, d.factor) for d in pools if d.factor != 1.0)
    return replace(resolve(problem, rp.doc), latency_scale=scale)


def changes(before: PlanResult, after: PlanResult) -> list[PoolChange]:
    def tally(doc: PlanResult) -> dict[tuple[str, str, str], tuple[int, int]]:
        out: dict[tuple[str, str, str], tuple[int, int]] = {}
        for s in doc.services:
            for p in s.pools:
                d, i = out.get((s.name, p.role, p.hardware), (0, 0))
                out[(s.name, p.role, p.hardware)] = (d + p.devices, i + p.instances)
        return out

    b, a = tally(before), tally(after)
    return [PoolChange(service=k[0], role=k[1], hardware=k[2], devices_before=b.get(k, (0, 0))[0],  # type: ignore[arg-type]
                       devices_after=a.get(k, (0, 0))[0], instances_before=b.get(k, (0, 0))[1],
                       instances_after=a.get(k, (0, 0))[1]) for k in sorted(set(b) | set(a))]


def drift_section(current: str, measured: list[str], pools: list[DriftPool], replan: PlanResult) -> Drift:
    return Drift(current=current, measured=[_spec(m)[0] for m in measured], method=METHOD, pools=pools,
                 bounds_hold=all(not d.violated for d in pools), changes=changes(load_plan(current), replan))


def replan_inputs(rp: ResolvedProblem, current: str | None, measured: list[str] | None
                  ) -> tuple[ResolvedProblem, list[DriftPool] | None]:
    """The problem to plan for `plan --current --measured` (unchanged without them), and the
    pools' drift (None without --current)."""
    if current is None:
        if measured:
            raise InputError("plan: --measured needs --current RESULT.json (the running plan measured)")
        return rp, None
    pools = drift_pools(compare_all(current, measured)) if measured else []
    return drift_problem(rp, current, pools), pools
