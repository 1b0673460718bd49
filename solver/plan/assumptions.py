"""What a plan's predictions rest on: the engine, its calibration, the measured tables (and
which are stale or from another engine version), the workloads and the hardware."""

from __future__ import annotations

import datetime as dt

from solver import __version__
from solver.candidates.build import service_roles
from solver.catalog.calibration import DEFAULT_ENGINE, CalibrationFile, load_calibration
from solver.perf.operators.measured import families_asked
from solver.perf.operators.tables import measured_tables
from solver.plan.services import slo_bounds
from solver.problem.load import ResolvedProblem
from solver.schema.calibration import Calibration
from solver.schema.result import (
    Assumptions,
    CalibrationUse,
    HardwareAssumption,
    ProfileUse,
    ServiceResult,
    WorkloadAssumption,
)
from solver.schema.roles import ROLES

Drawn = dict[str, frozenset[str]]  # hardware card name -> table families
REMEASURE_AFTER_DAYS = 180  # profiles older than this are flagged for re-measurement


def families_drawn(rp: ResolvedProblem, services: list[ServiceResult]) -> Drawn:
    """Per hardware card: the table families the plan's pools drew time from."""
    out: dict[str, set[str]] = {}
    for si, sr in enumerate(services):
        for pool in sr.pools:
            card = rp.hardware[rp.hw_index(pool.hardware)]
            out.setdefault(card.name, set()).update(families_asked(
                rp.archs[si], prefills=pool.role != "decode", decodes=pool.role != "prefill",
                tp=pool.tp, domain=card.scale_up.domain_devices, fp8=pool.precision == "fp8"))
    return {k: frozenset(v) for k, v in out.items()}


def _precisions(service) -> list[str]:
    p = service.precision
    return list(p) if isinstance(p, list) else [p]


def families_considered(rp: ResolvedProblem) -> Drawn:
    """Per hardware card: the table families the evaluation of the candidates drew time from
    (a problem without a plan: every role and tensor-parallel size the search allowed)."""
    out: dict[str, set[str]] = {}
    for si, s in enumerate(rp.problem.services):
        roles = {ROLES[r] for r in service_roles(s)}
        for card in rp.hardware:
            for tp in rp.problem.search.tp:
                out.setdefault(card.name, set()).update(families_asked(
                    rp.archs[si], prefills=bool(roles - {"decode"}), decodes=bool(roles - {"prefill"}),
                    tp=tp, domain=card.scale_up.domain_devices, fp8="fp8" in _precisions(s)))
    return {k: frozenset(v) for k, v in out.items()}


def _calibration_use(cal: Calibration, cf: CalibrationFile | None) -> CalibrationUse:
    held = cal.split.held_out_error if cal.split is not None else None
    return CalibrationUse(
        engine=cal.engine, fitted_on=cal.fitted_on, fitted_at=cal.fitted_at,
        source_sha256=cal.source_sha256, ttft_median_abs_pct=cal.fit_error.ttft_median_abs_pct,
        tpot_median_abs_pct=cal.fit_error.tpot_median_abs_pct,
        file=cf.path if cf is not None else None, file_sha256=cf.sha256 if cf is not None else None,
        held_out_ttft_median_abs_pct=held.ttft_median_abs_pct if held is not None else None,
        held_out_tpot_median_abs_pct=held.tpot_median_abs_pct if held is not None else None)


def assumptions(rp: ResolvedProblem, drawn: Drawn, today: dt.date | None = None) -> Assumptions:
    """Which engine, calibration and measured tables the predictions rest on (the tables of
    the families in `drawn`, per card), and which of them are stale or were measured on another
    engine version than the one declared."""
    engine = rp.problem.software.engine or DEFAULT_ENGINE
    declared = rp.problem.software.version
    today = today or dt.date.today()
    cf = rp.calibration_file
    cal = cf.calibration if cf is not None else load_calibration(engine)
    uses: list[ProfileUse] = []
    missing: list[str] = []
    for card, tables in zip(rp.hardware, measured_tables(rp.hardware, engine).members):
        if not tables.provenance:
            missing.append(card.name)
        for family, prov in sorted(tables.provenance.items()):
            if family not in drawn.get(card.name, frozenset()):
                continue
            dated = prov.dated_on  # collected on, else no later than the source's release
            age = (today - dt.date.fromisoformat(dated)).days if dated else None
            uses.append(ProfileUse(
                hardware=card.name, family=family, framework=prov.framework,
                framework_version=prov.framework_version, collected_on=prov.collected_on,
                age_days=age, content_sha256=prov.content_sha256,
                source=prov.source.name if prov.source else "local measurement",
                stale=age is None or age > REMEASURE_AFTER_DAYS,
                stack_differs=declared is not None and declared != prov.framework_version,
                source_released_on=prov.source.released_on if prov.source else None,
            ))
    return Assumptions(
        engine=engine, engine_version=declared,
        calibration=None if cal is None else _calibration_use(cal, cf),
        profiles=uses, hardware_without_profiles=missing, remeasure_after_days=REMEASURE_AFTER_DAYS,
        workloads=[
            WorkloadAssumption(
                service=s.name, model=rp.models[i].name, qps=s.workload.qps,
                input_tokens_mean=s.workload.input_tokens.mean_tokens,
                input_tokens_p99=s.workload.input_tokens.p99_tokens,
                output_tokens_mean=s.workload.output_tokens.mean_tokens,
                output_tokens_p99=s.workload.output_tokens.p99_tokens,
                slo=slo_bounds(s),
                routing=rp.archs[i].expert_routing.description if rp.archs[i].moe_layers else None,
                arrival_cv=s.workload.arrival_cv or 1.0, data=s.workload.trace or s.workload.lengths,
            )
            for i, s in enumerate(rp.problem.services)
        ],
        hardware=[
            HardwareAssumption(
                name=c.name, price_per_hour=rp.prices[j],
                price_source="problem file" if h.price_per_hour is not None else c.price_source,
                supply=rp.supplies[j], power_w=rp.power_w[j],
            )
            for j, (h, c) in enumerate(zip(rp.problem.hardware, rp.hardware))
        ],
        safety_margin=rp.problem.constraints.safety_margin,
        fleetplan_version=__version__,
    )
