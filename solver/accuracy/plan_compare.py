"""`fleetplan validate MEASURED --plan RESULT.json`: measured against predicted, per pool.

Each measured point (a benchmark tool's file: solver/accuracy/readers/) is assigned to one pool
of the plan: `--pool N` (pools numbered from 1 over the services in order), or the one pool
whose model, hardware, layout and precision agree with what the file and the flags say. For
each latency the pool predicts (TTFT p50/p99, TPOT p50/p99) it reports the measured value, the
plan's prediction and its error band (the decision record's, else the calibration's:
solver/decision/bands.py), whether the measurement lies inside predicted x (1 -/+ band), and
whether the SLO bound holds and by what margin.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from solver.accuracy.bench_rows import Known, file_values
from solver.accuracy.readers.common import BenchPoint, read_user_file
from solver.catalog import shipped
from solver.catalog.calibration import load_calibration_file
from solver.decision.bands import error_band
from solver.errors import InputError
from solver.perf.arch import ModelArch
from solver.schema.bench_compare import MeasuredLatency, PlanComparison, PoolComparison
from solver.schema.calibration import Calibration
from solver.schema.pool import Pool
from solver.schema.result import PlanResult, ServiceResult

LAYOUT = ("hardware", "tp", "pp", "ep", "dp", "precision")
# a measured load this far from the planned one is noted (our choice: the tools' run-to-run
# spread is a few percent, a different load point is a different prediction)
LOAD_NOTE_PCT = 10.0


def load_plan(path: str) -> PlanResult:
    text = read_user_file(path)
    try:
        return PlanResult.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise InputError(f"{path}: {loc}: {err['msg']} (not a fleetplan plan result)") from None
    except (ValueError, RecursionError) as exc:  # an integer over 4,300 digits, nesting too deep
        raise InputError(f"{path}: not valid JSON: {str(exc)[:120]}") from None


@dataclass(frozen=True)
class PlanPool:
    number: int
    service: ServiceResult
    pool: Pool


def plan_pools(doc: PlanResult) -> list[PlanPool]:
    out, n = [], 0
    for s in doc.services:
        for p in s.pools:
            n += 1
            out.append(PlanPool(n, s, p))
    return out


def _agrees(pp: PlanPool, want: dict[str, object]) -> bool:
    if "model" in want and want["model"] != pp.service.model:
        return False
    return all(str(getattr(pp.pool, k)) == str(want[k]) for k in LAYOUT if k in want)


def pick_pool(path: str, plan_path: str, pools: list[PlanPool], p: BenchPoint, flags: Known,
              number: int | None) -> tuple[PlanPool, str]:
    """The pool a point validates and how it was chosen."""
    if number is not None:
        if not 1 <= number <= len(pools):
            raise InputError(f"--pool: {number}: the plan {plan_path} has pools 1 to {len(pools)}")
        return pools[number - 1], f"--pool {number}"
    want = {**file_values(p), **{k: v for k, v in flags.values.items() if v is not None}}
    match = [pp for pp in pools if _agrees(pp, want)]
    if len(match) == 1:
        return match[0], "the only pool" if len(pools) == 1 else "model and layout"
    listing = "; ".join(f"{pp.number}: {pp.service.name} {pp.pool.role} {pp.pool.hardware} "
                        f"tp{pp.pool.tp} pp{pp.pool.pp} ep{pp.pool.ep} dp{pp.pool.dp}" for pp in pools)
    which = "no pool" if not match else f"pools {', '.join(str(pp.number) for pp in match)}"
    where = "" if p.where == "document" else f" {p.where}:"
    raise InputError(f"{path}:{where} {which} of {plan_path} agree with the measurement "
                     f"({', '.join(f'{k}={v}' for k, v in sorted(want.items()) if k in LAYOUT + ('model',)) or 'nothing known'});"
                     f" pass --pool N (pools: {listing})")


def _plan_calibration(doc: PlanResult) -> Calibration | None:
    """The calibration file the plan was made with (`assumptions.calibration.file`), where it
    is still there; None: the shipped one."""
    use = doc.assumptions.calibration if doc.assumptions else None
    if use is None or use.file is None or not Path(use.file).is_file():
        return None
    return load_calibration_file(use.file, "the plan's assumptions.calibration.file").calibration


def _band(doc: PlanResult, pp: PlanPool) -> tuple[float, float, str]:
    bands = doc.decision.uncertainty.pools if doc.decision else []
    if len(bands) == sum(len(s.pools) for s in doc.services):
        b = bands[pp.number - 1]
        if (b.service, b.role, b.hardware) == (pp.service.name, pp.pool.role, pp.pool.hardware):
            return b.band_ttft_pct, b.band_tpot_pct, b.band_source
    engine = doc.assumptions.engine if doc.assumptions else None
    moe = ModelArch.from_card(shipped.model_card(pp.service.model)).moe_layers > 0
    e = error_band(engine, pp.pool.hardware, moe, pp.service.model, _plan_calibration(doc))
    why = "the plan's decision record has no band for this pool" if doc.decision else "the plan carries no decision record"
    return e.ttft_pct, e.tpot_pct, f"{e.source} ({why})"


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


def latency(metric, measured: float | None, predicted: float | None, bound: float | None,
            band_pct: float) -> MeasuredLatency:
    lo = None if predicted is None else predicted * (1.0 - band_pct / 100.0)
    hi = None if predicted is None else predicted * (1.0 + band_pct / 100.0)
    both = measured is not None and predicted is not None
    return MeasuredLatency(
        metric=metric, measured_ms=_r(measured), predicted_ms=_r(predicted), bound_ms=bound,
        band_pct=band_pct, band_low_ms=_r(lo), band_high_ms=_r(hi),
        error_pct=_r((measured - predicted) / predicted * 100.0, 3) if both else None,  # type: ignore[operator]
        inside_band=(lo <= measured <= hi) if both else None,  # type: ignore[operator]
        holds=(measured <= bound) if measured is not None and bound is not None else None,
        margin_pct=_r((bound - measured) / bound * 100.0, 3) if measured is not None and bound else None,
        predicted_margin_pct=_r((bound - predicted) / bound * 100.0, 3) if predicted is not None and bound else None,
    )


def _latencies(p: BenchPoint, pp: PlanPool, ttft_band: float, tpot_band: float) -> list[MeasuredLatency]:
    pred, slo = pp.pool.predicted, pp.service.slo
    rows = [("ttft_p50_ms", p.ttft.p50, pred.ttft_ms, slo.ttft_p50_ms, ttft_band),
            ("ttft_p99_ms", p.ttft.p99, pred.ttft_p99_ms, slo.ttft_p99_ms, ttft_band),
            ("tpot_p50_ms", p.tpot.p50, pred.tpot_ms, slo.tpot_p50_ms, tpot_band),
            ("tpot_p99_ms", p.tpot.p99, pred.tpot_p99_ms, slo.tpot_p99_ms, tpot_band)]
    return [latency(m, meas, pr, b, band) for m, meas, pr, b, band in rows if pr is not None]


def _off(measured: float | None, planned: float | None) -> bool:
    return measured is not None and bool(planned) and abs(measured - planned) / planned * 100.0 > LOAD_NOTE_PCT  # type: ignore[operator]


def _notes(p: BenchPoint, pp: PlanPool, lengths: tuple[float | None, float | None]) -> list[str]:
    notes = []
    if _off(p.concurrency, pp.pool.batch):
        notes.append(f"measured at {p.concurrency} concurrent requests; the pool is planned for a batch of "
                     f"{pp.pool.batch} per instance")
    per_instance = pp.pool.capacity_qps_per_instance
    if p.concurrency is None and _off(p.rate_qps, per_instance):
        notes.append(f"measured at {p.rate_qps:g} req/s; one instance is planned for {per_instance:g} req/s")
    for name, meas, plan in (("input", p.input_tokens, lengths[0]), ("output", p.output_tokens, lengths[1])):
        if _off(meas, plan):
            notes.append(f"mean {name} length {meas:g} tokens; the plan's workload has {plan:g}")
    return notes


def _planned_lengths(doc: PlanResult, service: str) -> tuple[float | None, float | None]:
    for w in (doc.assumptions.workloads if doc.assumptions else []):
        if w.service == service:
            return w.input_tokens_mean, w.output_tokens_mean
    return None, None


def compare(path: str, fmt: str, points: list[BenchPoint], plan_path: str, flags: Known,
            pool_number: int | None = None) -> PlanComparison:
    doc = load_plan(plan_path)
    pools = plan_pools(doc)
    if not pools:
        raise InputError(f"{plan_path}: the plan has no pools (status {doc.status})")
    out = []
    for p in points:
        pp, how = pick_pool(path, plan_path, pools, p, flags, pool_number)
        ttft_band, tpot_band, source = _band(doc, pp)
        lengths = _planned_lengths(doc, pp.service.name)
        pl = pp.pool
        out.append(PoolComparison(
            pool=pp.number, service=pp.service.name, role=pl.role, hardware=pl.hardware, tp=pl.tp, pp=pl.pp,
            ep=pl.ep, dp=pl.dp, batch=pl.batch, matched_by=how, tool=p.tool, where=p.where,
            measured_concurrency=p.concurrency, measured_rate_qps=p.rate_qps,
            measured_input_tokens=_r(p.input_tokens, 2), measured_output_tokens=_r(p.output_tokens, 2),
            planned_input_tokens=lengths[0], planned_output_tokens=lengths[1], band_source=source,
            latencies=_latencies(p, pp, ttft_band, tpot_band), notes=_notes(p, pp, lengths),
        ))
    lat = [x for c in out for x in c.latencies]
    return PlanComparison(source=path, format=fmt, plan=doc.problem, pools=out,
                          bounds_hold=all(x.holds is not False for x in lat),
                          inside_band=all(x.inside_band is not False for x in lat))
