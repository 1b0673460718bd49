"""A small hand-made plan result (one service, two colocated pools) for tests that read plans:
predictions, SLO bounds and error bands chosen for hand-computed expectations."""

from __future__ import annotations

from solver.schema.decision import DecisionRecord, PoolBand, Uncertainty
from solver.schema.pool import Pool, Predicted
from solver.schema.result import (
    Assumptions,
    Objective,
    PlanResult,
    PruneCounts,
    ServiceResult,
    SloBounds,
    SolverInfo,
    WorkloadAssumption,
)

SLO = SloBounds(ttft_p50_ms=300.0, ttft_p99_ms=600.0, tpot_p50_ms=25.0, tpot_p99_ms=9.0)


def pool(hardware: str, ttft: tuple[float, float], tpot: tuple[float, float], batch: int = 8) -> Pool:
    return Pool(role="colocated", hardware=hardware, tp=1, pp=1, ep=1, dp=1, devices_per_instance=1, instances=2,
                devices=2, batch=batch, capacity_qps=12.0, cost_per_hour=6.0,
                predicted=Predicted(ttft_ms=ttft[0], ttft_p99_ms=ttft[1], tpot_ms=tpot[0], tpot_p99_ms=tpot[1],
                                    memory_gib_per_device=40.0),
                precision="fp8", power_kw=1.4, capacity_qps_per_instance=6.0)


def plan_doc(decision: bool = True) -> PlanResult:
    pools = [pool("h100-sxm", (110.0, 200.0), (8.0, 9.5)), pool("h200-sxm", (90.0, 180.0), (7.0, 8.0))]
    svc = ServiceResult(name="chat", model="llama-3.1-8b", demand_qps=12.0, capacity_qps=24.0, runtime="colocated",
                        prefill_decode_ratio=None, pools=pools, colocated_qps=12.0, disaggregated_qps=0.0,
                        slo=SLO, cost_per_hour=12.0, devices=4)
    bands = [PoolBand(service="chat", role="colocated", hardware=h, band_ttft_pct=15.0, band_tpot_pct=10.0,
                      band_source=f"test band for {h}", checks=[]) for h in ("h100-sxm", "h200-sxm")]
    record = DecisionRecord(uncertainty=Uncertainty(pools=bands, central_only=[]), runners_up=[], fallback=None,
                            validity=None, input_sha256="0" * 64, fleetplan_version="0.1.0")
    workload = WorkloadAssumption(service="chat", model="llama-3.1-8b", qps=12.0, input_tokens_mean=1024.0,
                                  input_tokens_p99=1024.0, output_tokens_mean=128.0, output_tokens_p99=128.0, slo=SLO)
    return PlanResult(
        problem="bench-test", status="optimal", objective=Objective(kind="min_cost", value=12.0), cost_per_hour=12.0,
        total_devices=4, devices_by_type={"h100-sxm": 2, "h200-sxm": 2}, services=[svc], infeasible_because=[],
        solver=SolverInfo(wall_s=None, candidates_evaluated=2, candidates_in_model=2, gap=0.0,
                          pruned=PruneCounts(invalid=0, topology=0, memory=0, slo=0, dominated=0), stages=[],
                          seed=0, workers=1, time_limit_s=60.0, version="9.15"),
        power_kw=2.8,
        assumptions=Assumptions(engine="vllm", engine_version=None, calibration=None, profiles=[],
                                hardware_without_profiles=[], remeasure_after_days=90, workloads=[workload]),
        decision=record if decision else None,
    )


def write_plan(path, decision: bool = True) -> str:
    path.write_text(plan_doc(decision).model_dump_json(indent=2))
    return str(path)
