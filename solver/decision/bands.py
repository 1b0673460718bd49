"""How far a pool's predicted latencies may be off: error bands from measured validation.

Every engine calibration (`hardware/calibration/<engine>.yaml`) records the prediction error of
the performance model, with the fitted parameters, per hardware card and model kind (dense or
mixture-of-experts) on aiconfigurator-core's measured closed-loop benchmarks. A pool's band is
the median absolute error of the group it belongs to (half the validated points fall within
it); where no measured point exists for that card and kind, it borrows, in order:

1. the other model kind on the same card;
2. the largest median error of any group of that calibration (a card nobody measured is
   assumed to be as badly predicted as the worst measured one).

An engine without a calibration borrows the default engine's (vLLM) bands by the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    text = f"{engine} calibration: {g.rows} measured {g.models} rows on {g.hardware} ({kind})"
    return f"{text}; {note}" if note else text


def error_band(engine: str | None, hardware: str, moe: bool, user: Calibration | None = None) -> ErrorBand:
    """The band of a pool on `hardware` from `user` (a problem's own calibration file) when
    given, else from the engine's shipped calibration; a group held out of a user's fit is
    preferred to its fitted twin (the held-out error is the honest one)."""
    name = user.engine if user is not None else engine or DEFAULT_ENGINE
    cal = user if user is not None else load_calibration(name)
    prefix = "" if user is None else "problem's calibration file: "
    if cal is None or not cal.validation:
        cal = load_calibration(DEFAULT_ENGINE)
        prefix = f"no calibration for {name}; "
        name = DEFAULT_ENGINE
    if cal is None or not cal.validation:
        raise FileNotFoundError(f"the {DEFAULT_ENGINE} calibration (hardware/calibration/) is missing")
    kind = "moe" if moe else "dense"
    same_card = sorted((g for g in cal.validation if g.hardware == hardware), key=lambda g: g.fitted)
    exact = [g for g in same_card if g.models == kind]
    if exact:
        g, note = exact[0], ""
    elif same_card:
        g, note = same_card[0], f"no {kind} rows on {hardware}, its {same_card[0].models} rows used"
    else:
        g = max(cal.validation, key=lambda v: (max(v.ttft_median_abs_pct, v.tpot_median_abs_pct), not v.fitted))
        note = f"no measured rows on {hardware}: the worst measured group is assumed"
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
            band = error_band(engine, pool.hardware, moe, user)
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
    return Uncertainty(pools=pools, central_only=central)
