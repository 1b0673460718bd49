"""The plan states which measured tables and calibration it rests on, and flags stale ones."""

from __future__ import annotations

from pathlib import Path

from solver.plan.assumptions import REMEASURE_AFTER_DAYS, assumptions
from solver.problem.load import load_problem, resolve

ROOT = Path(__file__).resolve().parents[2]


def _with_software(rp, **software):
    problem = rp.problem.model_copy(
        update={"software": rp.problem.software.model_copy(update=software)}
    )
    return resolve(problem, rp.doc)


def test_tables_and_calibration_are_listed_and_flagged():
    rp = load_problem(ROOT / "problems" / "mixed-supply.yaml")
    a = assumptions(rp)
    assert a.engine == "vllm" and a.calibration is not None
    assert a.calibration.fitted_on.startswith("silicon_sample_validate.csv")
    hw = {p.hardware for p in a.profiles}
    assert hw == {"h100-sxm", "h200-sxm"}
    assert a.hardware_without_profiles == ["mi300x"]
    assert {p.family for p in a.profiles} >= {"gemm", "attention_context", "attention_generation"}
    # aiconfigurator-core records no collection date for its tables: flagged for re-measurement
    assert all(p.collected_on is None and p.age_days is None and p.stale for p in a.profiles)
    assert not any(p.stack_differs for p in a.profiles)  # no engine version declared
    assert a.remeasure_after_days == REMEASURE_AFTER_DAYS


def test_declared_engine_version_that_differs_is_flagged():
    rp = _with_software(load_problem(ROOT / "problems" / "llama3-70b-online.yaml"), version="0.11.0")
    a = assumptions(rp)
    vllm = [p for p in a.profiles if p.framework == "vllm"]
    assert vllm and all(p.stack_differs for p in vllm)  # the tables are vLLM 0.24.0
    same = assumptions(_with_software(rp, version=vllm[0].framework_version))
    assert not any(p.stack_differs for p in same.profiles if p.framework == "vllm")



def test_assumptions_record_workload_slo_prices_supply_margin_and_version():
    from pathlib import Path

    from solver import __version__
    from solver.plan.assumptions import assumptions
    from solver.problem.load import load_problem

    rp = load_problem(Path(__file__).resolve().parents[2] / "problems" / "mixed-supply.yaml")
    a = assumptions(rp)
    (w,) = a.workloads
    s = rp.problem.services[0]
    assert (w.service, w.model, w.qps) == (s.name, "llama-3.1-70b", s.workload.qps)
    assert (w.input_tokens_mean, w.output_tokens_mean) == (2048.0, 150.0)
    assert (w.slo.ttft_p50_ms, w.slo.tpot_p99_ms) == (s.slo.ttft_ms.p50, s.slo.tpot_ms.p99)
    assert [(h.name, h.price_per_hour, h.supply) for h in a.hardware] == [
        (h.name, h.price_per_hour, h.supply) for h in rp.problem.hardware]
    assert all(h.price_source == "problem file" for h in a.hardware)
    assert a.safety_margin == rp.problem.constraints.safety_margin
    assert a.fleetplan_version == __version__
