"""How far a pool's predicted latencies may be off: error bands from measured validation.

Every engine calibration (`hardware/calibration/<engine>.yaml`) records the prediction error of
the performance model, with the fitted parameters, per hardware card and model kind (dense or
mixture-of-experts) on aiconfigurator-core's measured closed-loop benchmarks, and per model card
within a (card, kind) group that holds several. A pool's band is the median absolute error
(half the validated points fall within it) of the narrowest group it belongs to that has at
least MIN_GROUP_ROWS rows, in order:

1. its model card's rows on that hardware card (the group `model`), e.g. Llama-3.1-70B on
   h100-sxm with vLLM rather than every dense model there;
2. every model of its kind (dense or MoE) on that card;
3. the other model kind on the same card;
4. the largest median error of any (card, kind) group of that calibration with enough rows (a
   card nobody measured is assumed to be as badly predicted as the worst measured one).

The source names the group used, its signed bias, and why a narrower one was not.

An engine without a calibration borrows the default engine's (vLLM) bands by the same rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_GROUP_ROWS = 8  # a validation group with fewer measured rows is too small to state a median

from solver.catalog.calibration import DEFAULT_ENGINE, load_calibration
from solver.problem.load import ResolvedProblem
from solver.schema.calibration import Calibration, ValidationGroup
from solver.schema.decision import PoolBand, SloCheck, Uncertainty
from solver.schema.result import PlanResult


@dataclass(frozen=True)
class ErrorBand:
    ttft_pct: float  # median absolute % error of TTFT predictions in the group
    tpot_pct: float
    source: str  # which measured rows the band comes from, in words


def _describe(engine: str, g: ValidationGroup, note: str = "") -> str:
    kind = "fitted" if g.fitted else "held out"
    rows = f"{g.model} rows" if g.model else f"{g.models} rows"
    text = (f"{engine} calibration: {g.rows} measured {rows} on {g.hardware} ({kind}; bias TTFT "
            f"{g.ttft_bias_pct:+.0f}%, TPOT {g.tpot_bias_pct:+.0f}%)")
    return f"{text}; {note}" if note else text


def _pick(groups: list[ValidationGroup], hardware: str, kind: str,
          model: str | None) -> tuple[ValidationGroup, str]:
    """The narrowest group with enough rows for (hardware, kind, model), and a note on why a
    narrower one was not used ('' when the first choice was). A group held out of a user's fit
    comes before its fitted twin (the held-out error is the honest one), and counts the rows
    of its split, its own and its twin's (a 24-row group split 18 / 6 has 24)."""
    groups = sorted(groups, key=lambda g: g.fitted)
    fitted = {(g.hardware, g.models, g.model): g.rows for g in groups if g.fitted}

    def rows(g: ValidationGroup) -> int:
        return g.rows + (0 if g.fitted else fitted.get((g.hardware, g.models, g.model), 0))

    enough = [g for g in groups if rows(g) >= MIN_GROUP_ROWS]
    own = [g for g in groups if g.hardware == hardware and g.models == kind and g.model == model and model]
    mine = [g for g in enough if g.hardware == hardware and g.models == kind and g.model is None]
    note = ""
    if own and rows(own[0]) >= MIN_GROUP_ROWS:
        return own[0], ""
    if own:
        note = f"{own[0].rows} {model} rows on {hardware}, under {MIN_GROUP_ROWS}: every {kind} model's used"
    if mine:
        return mine[0], note
    other = [g for g in enough if g.hardware == hardware and g.model is None]
    if other:
        return other[0], f"no {kind} rows on {hardware} (at least {MIN_GROUP_ROWS}), its {other[0].models} rows used"
    kinds = [g for g in enough if g.model is None] or [g for g in groups if g.model is None] or groups
    worst = max(kinds, key=lambda v: (max(v.ttft_median_abs_pct, v.tpot_median_abs_pct), not v.fitted))
    return worst, f"no measured rows on {hardware}: the worst measured group is assumed"


def error_band(engine: str | None, hardware: str, moe: bool, model: str | None = None,
               user: Calibration | None = None) -> ErrorBand:
    """The band of a pool of `model` (a model card's name; None: any model of its kind) on
    `hardware`, from `user` (a problem's own calibration file) when given, else from the
    engine's shipped calibration."""
    name = user.engine if user is not None else engine or DEFAULT_ENGINE
    cal = user if user is not None else load_calibration(name)
    prefix = "" if user is None else "problem's calibration file: "
    if cal is None or not cal.validation:
        cal = load_calibration(DEFAULT_ENGINE)
        prefix = f"no calibration for {name}; "
        name = DEFAULT_ENGINE
    if cal is None or not cal.validation:
        raise FileNotFoundError(f"the {DEFAULT_ENGINE} calibration (hardware/calibration/) is missing")
    g, note = _pick(cal.validation, hardware, "moe" if moe else "dense", model)
    return ErrorBand(g.ttft_median_abs_pct, g.tpot_median_abs_pct, prefix + _describe(name, g, note))


def _checks(pool, slo, band: ErrorBand) -> list[SloCheck]:
    p = pool.predicted
    pairs = [
        ("ttft_p50_ms", p.ttft_ms, slo.ttft_ms.p50 if slo.ttft_ms else None, band.ttft_pct),
        ("ttft_p99_ms", p.ttft_p99_ms, slo.ttft_ms.p99 if slo.ttft_ms else None, band.ttft_pct),
        ("tpot_p50_ms", p.tpot_ms, slo.tpot_ms.p50 if slo.tpot_ms else None, band.tpot_pct),
        ("tpot_p99_ms", p.tpot_p99_ms, slo.tpot_ms.p99 if slo.tpot_ms else None, band.tpot_pct),
    ]
    out = []
    for metric, predicted, bound, pct in pairs:
        if predicted is None or bound is None:
            continue
        edge = predicted * (1.0 + pct / 100.0)
        out.append(SloCheck(
            metric=metric, predicted_ms=round(predicted, 4), upper_edge_ms=round(edge, 4),
            bound_ms=bound, margin_pct=round((bound - predicted) / bound * 100.0, 3),
            holds_at_upper_edge=edge <= bound,
        ))
    return out


def plan_uncertainty(rp: ResolvedProblem, doc: PlanResult) -> Uncertainty:
    """Every pool's predictions against its SLO bounds, at the centre and at the band's edge."""
    engine = rp.problem.software.engine
    user = rp.calibration_file.calibration if rp.calibration_file is not None else None
    pools: list[PoolBand] = []
    central: list[str] = []
    for si, svc in enumerate(doc.services):
        slo = rp.problem.services[si].slo
        moe = rp.archs[si].moe_layers > 0
        for pool in svc.pools:
            band = error_band(engine, pool.hardware, moe, rp.models[si].name, user)
            checks = _checks(pool, slo, band)
            pools.append(PoolBand(
                service=svc.name, role=pool.role, hardware=pool.hardware,
                band_ttft_pct=band.ttft_pct, band_tpot_pct=band.tpot_pct,
                band_source=band.source, checks=checks,
            ))
            for c in checks:
                if not c.holds_at_upper_edge:
                    central.append(
                        f"service '{svc.name}' {pool.role} on {pool.hardware}: {c.metric} "
                        f"{c.predicted_ms:.0f} meets {c.bound_ms:g} only at the central estimate "
                        f"(upper edge {c.upper_edge_ms:.0f})"
                    )
    return Uncertainty(pools=pools, central_only=central,
                       margin_below_band=margin_warning(rp.problem.constraints.safety_margin, pools))


def margin_warning(margin: float, pools: list[PoolBand]) -> str | None:
    """A sentence when `margin` is below the widest band of a bounded latency of the plan."""
    widest: tuple[float, str] | None = None
    for b in pools:
        for c in b.checks:
            pct = b.band_ttft_pct if c.metric.startswith("ttft") else b.band_tpot_pct
            metric = "TTFT" if c.metric.startswith("ttft") else "TPOT"
            if widest is None or pct > widest[0]:
                widest = (pct, f"{metric} +-{pct:g}% of service '{b.service}' {b.role} on {b.hardware}")
    if widest is None or margin * 100.0 >= widest[0]:
        return None
    held = all(c.holds_at_upper_edge for b in pools for c in b.checks)
    return (f"the safety margin ({margin * 100:g}%) is below the widest error band of the plan's pools "
            f"({widest[1]}): pools are sized to the bounds at the central estimate, not at the band's "
            f"edge{' (this plan still meets every bound at the edge)' if held else ''}; "
            f"constraints.safety_margin: {math.ceil(round(widest[0], 6)) / 100:.2f} would plan for the "
            f"edge (the fallback below is planned so)")
