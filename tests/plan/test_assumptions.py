"""The plan states which measured tables and calibration it rests on, and flags stale ones."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from solver.catalog import shipped
from solver.perf.arch import ModelArch
from solver.perf.operators.measured import families_asked
from solver.plan.assumptions import REMEASURE_AFTER_DAYS, assumptions, families_considered
from solver.problem.load import load_problem, resolve

ROOT = Path(__file__).resolve().parents[2]


def _with_software(rp, **software):
    problem = rp.problem.model_copy(
        update={"software": rp.problem.software.model_copy(update=software)}
    )
    return resolve(problem, rp.doc)


def test_tables_and_calibration_are_listed_and_flagged():
    rp = load_problem(ROOT / "problems" / "mixed-supply.yaml")
    a = assumptions(rp, families_considered(rp))
    assert a.engine == "vllm" and a.calibration is not None
    assert a.calibration.fitted_on.startswith("silicon_sample_validate.csv")
    hw = {p.hardware for p in a.profiles}
    assert hw == {"h100-sxm", "h200-sxm"}
    assert a.hardware_without_profiles == ["mi300x"]
    assert {p.family for p in a.profiles} >= {"gemm", "attention_context", "attention_generation"}
    # aiconfigurator-core records no collection date for its tables: they are aged from the
    # release of the package version they came from (0.12.0: 2026-09-18)
    assert all(p.collected_on is None and p.source_released_on == "2026-09-18" for p in a.profiles)
    dated = assumptions(rp, families_considered(rp), today=dt.date(2026, 12, 1))
    assert all(p.age_days == 74 and not p.stale for p in dated.profiles)
    assert not any(p.stack_differs for p in a.profiles)  # no engine version declared
    assert a.remeasure_after_days == REMEASURE_AFTER_DAYS


def test_declared_engine_version_that_differs_is_flagged():
    rp = _with_software(load_problem(ROOT / "problems" / "llama3-70b-online.yaml"), version="0.11.0")
    a = assumptions(rp, families_considered(rp))
    vllm = [p for p in a.profiles if p.framework == "vllm"]
    assert vllm and all(p.stack_differs for p in vllm)  # the tables are vLLM 0.24.0
    same_rp = _with_software(rp, version=vllm[0].framework_version)
    same = assumptions(same_rp, families_considered(same_rp))
    assert not any(p.stack_differs for p in same.profiles if p.framework == "vllm")


def test_assumptions_record_workload_slo_prices_supply_margin_and_version():
    from solver import __version__

    rp = load_problem(ROOT / "problems" / "mixed-supply.yaml")
    a = assumptions(rp, families_considered(rp))
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


def _arch(name: str) -> ModelArch:
    return ModelArch.from_card(shipped.model_card(name))


@pytest.mark.parametrize("model, role, tp, expected", [
    # dense GQA: GEMMs always, the attention of what the role runs, the all-reduce above TP 1
    ("llama-3.1-70b", "decode", 4, {"gemm", "attention_generation", "allreduce"}),
    ("llama-3.1-70b", "prefill", 1, {"gemm", "attention_context"}),
    ("llama-3.1-70b", "colocated", 8, {"gemm", "attention_context", "attention_generation", "allreduce"}),
    ("llama-3.1-70b", "decode", 16, {"gemm", "attention_generation"}),  # wider than the 8-GPU domain
    # MoE GQA: the expert tables too
    ("qwen3-235b-a22b", "decode", 1, {"gemm", "attention_generation", "moe_experts"}),
    # MLA: the whole attention block's table of the role's phase; the LM head, the dense first
    # layers and the MoE block's router and shared experts ask GEMMs
    ("deepseek-v3", "prefill", 8, {"gemm", "allreduce", "moe_experts", "mla_context"}),
    ("deepseek-v3", "decode", 8, {"gemm", "allreduce", "moe_experts", "mla_generation"}),
])
def test_families_a_pool_draws_time_from(model, role, tp, expected):
    got = families_asked(_arch(model), prefills=role != "decode", decodes=role != "prefill", tp=tp, domain=8)
    assert got == expected


def test_a_dense_plan_lists_no_moe_tables_and_a_tp1_plan_no_allreduce():
    """A plan lists only the table families its pools drew time from (the shipped h100 tables
    include moe_experts and allreduce; a dense TP-1 decode pool uses neither)."""
    rp = load_problem(ROOT / "problems" / "mixed-supply.yaml")
    drawn = {"h100-sxm": families_asked(_arch("llama-3.1-70b"), prefills=False, decodes=True, tp=1, domain=8)}
    a = assumptions(rp, drawn)
    assert {(p.hardware, p.family) for p in a.profiles} == {
        ("h100-sxm", "gemm"), ("h100-sxm", "attention_generation")}
    everything = assumptions(rp, families_considered(rp))
    assert "moe_experts" not in {p.family for p in everything.profiles}  # a dense service
    # the service may run fp8 (a Llama card: per-tensor static scales), so the compute-scale
    # table its fp8 GEMMs are composed with is listed too
    assert {p.family for p in everything.profiles if p.hardware == "h100-sxm"} == {
        "gemm", "attention_context", "attention_generation", "allreduce", "compute_scale"}


def test_assumptions_record_a_workload_from_data():
    rp = load_problem(ROOT / "problems" / "azure-conv-trace.yaml")
    (w,) = assumptions(rp, families_considered(rp)).workloads
    assert w.data == "azure-llm-2023-conv" and round(w.arrival_cv, 3) == 1.028 and round(w.qps, 2) == 5.53
    assert (w.input_tokens_p99, w.output_tokens_p99) == (4142.0, 601.0)
    other = load_problem(ROOT / "problems" / "mixed-supply.yaml")
    plain = assumptions(other, families_considered(other)).workloads[0]
    assert (plain.arrival_cv, plain.data) == (1.0, None)
