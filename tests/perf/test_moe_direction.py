"""Direction checks of the paper's findings 3 and 4 (docs/sources.md, "The paper") on the shipped MoE and topology problems.

Each check evaluates the performance model on a shipped problem's own inputs (model, hardware,
workload, SLO, engine calibration) and, where the finding is about a choice, plans the problem
through the real flow. Figures are in the issue note; the paper's are in comments.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from solver.candidates.build import slo_of, workload_of
from solver.perf import runtime as rt
from solver.perf.operators.tables import measured_tables
from solver.perf.stages import Load, stage_time
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.plan.planner import plan
from solver.problem.load import ResolvedProblem, load_problem
from tests.support.binomial import binomial_expected_max

ROOT = Path(__file__).resolve().parents[2]

BATCHES = [1, 4, 16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096]


@cache
def problem(name: str) -> ResolvedProblem:
    return load_problem(ROOT / "problems" / f"{name}.yaml")


def table(rp: ResolvedProblem, measured: bool = True) -> HardwareTable:
    """The problem's hardware; `measured=False` puts every card on the roofline (the 1.8T
    findings: hypothetical models no table measured, and a hypothetical pod card without
    tables beside real B200 servers that have them since aiconfigurator-core's B200 data ships)."""
    profiles = measured_tables(rp.hardware, rp.problem.software.engine) if measured else None
    return HardwareTable.from_cards(rp.hardware, rp.prices, rp.engine, profiles)


def decode_qps_per_device(rp: ResolvedProblem, service: int, hw: int, tp: int, dp: int, ep: int,
                          arch=None, measured: bool = True) -> float:
    """Best decode QPS per device of one parallelism over the batch grid, within the SLO."""
    s = rp.problem.services[service]
    arch = arch or rp.archs[service]
    prec = precision_code(s.precision)
    plans = Plans.grid(hw=[hw], tp=[tp], pp=[1], ep=[ep], dp=[dp], batch=BATCHES,
                       wprec=[prec], kvprec=[prec])
    m = rt.decode_role(arch, table(rp, measured), plans, workload_of(s),
                       slo_of(s, rp.problem.constraints.safety_margin), rp.engine)
    return float(np.max(m.capacity_qps / plans.devices))


@cache
def planned(name: str):
    return plan(problem(name), timings=False)


def pools(result, service: str, role: str):
    svc = next(s for s in result.services if s.name == service)
    return [p for p in svc.pools if p.role == role]


# ---- finding 3: Maverick decode on 8-GPU servers -------------------------------------------

def test_maverick_tp16_across_servers_loses_to_tp8():
    rp = problem("maverick-decode")
    tp8 = decode_qps_per_device(rp, 0, 0, 8, 1, 8)
    # Maverick has 40 query heads, so TP16 is not a plan vLLM can run; the performance model
    # still prices it (heads split 2.5 per rank) as the paper's simulator did.
    tp16 = decode_qps_per_device(rp, 0, 0, 16, 1, 16)
    assert tp16 < 0.9 * tp8  # paper: 329 vs 618 QPS (0.53x); fleetplan 0.85x


def test_maverick_ep_across_servers_keeps_or_beats_tp8_and_wider_hybrid_wins():
    rp = problem("maverick-decode")
    tp8 = decode_qps_per_device(rp, 0, 0, 8, 1, 8)
    two = decode_qps_per_device(rp, 0, 0, 8, 2, 16)  # TP8 per server, 2-way EP/DP across
    four = decode_qps_per_device(rp, 0, 0, 8, 4, 32)
    # paper: 608 (0.98x TP8); fleetplan predicts a gain (more KV room, half the expert
    # weights read per device), see the issue note
    assert two >= 0.95 * tp8
    assert four >= 1.3 * tp8  # paper: 899 QPS, +45%
    assert four > two


def test_maverick_planner_scales_decode_with_ep_not_tp_across_servers():
    r = planned("maverick-decode")
    (dec,) = pools(r, "maverick-chat", "decode")
    assert dec.dp > 1 and dec.ep > 1  # experts spread over servers
    assert dec.tp <= 8  # TP stays inside one server
    assert dec.devices_per_instance > 8


# ---- finding 3: routing skew ----------------------------------------------------------------

def test_routing_skew_changes_prefill_cost_at_medium_batch():
    rp = problem("routing-skew")
    hw = table(rp)
    plan = Plans.of(hw=0, tp=8, pp=1, ep=32, dp=4, batch=8, wprec=1, kvprec=1)
    load = Load.prefill(2.0, 2048)  # 8 prompts over 4 attention ranks
    t = [float(stage_time(rp.archs[i], hw, plan, load, rp.engine).stage_s[0]) for i in range(3)]
    balanced, hot7, heavy = t
    # the whole iteration (attention and dense layers included): fleetplan 1.14x and ~2.5x
    assert hot7 > 1.1 * balanced
    assert heavy > 1.8 * balanced  # paper: up to 3.5x
    # the MoE block alone: the busiest of 32 ranks computes 2.6x / 8.7x its even share
    busiest = [float(rp.archs[i].expert_routing.busiest_share([32])[0]) * 32 for i in range(3)]
    assert busiest[0] == pytest.approx(1.0)
    assert busiest[1] > 2.0 and busiest[2] > 6.0


def test_routing_skew_reduces_experts_touched_in_decode():
    rp = problem("routing-skew")
    touched = [float(rp.archs[i].expert_routing.touched([64.0], [8])[0]) for i in range(3)]
    assert touched[0] > touched[1] > touched[2]
    # balanced: each of a rank's 16 experts touched with h = 1 - (127/128)^64; the busiest of 8
    # ranks (E[max] of 8 Binomial(16, h), tests/support/binomial.py) reads 9.11, the mean 6.31
    assert touched[0] == pytest.approx(binomial_expected_max(16, 1 - (127 / 128) ** 64, 8), rel=1e-9)
    # expert weights a 64-sequence decode step reads (all experts on one rank): balanced reads
    # 1.9x what the heavy skew reads (50.5 vs 26.8 experts)
    whole = [float(rp.archs[i].expert_routing.touched([64.0], [1])[0]) for i in range(3)]
    assert whole[0] / whole[2] > 1.8


def test_routing_skew_changes_the_planners_choice():
    r = planned("routing-skew")
    # balanced routing: experts spread over expert-parallel ranks; heavy skew: the planner
    # shards every expert over TP instead (no rank holds the hot experts alone)
    for role in ("prefill", "decode"):
        assert all(p.ep > 1 for p in pools(r, "balanced", role))
        assert all(p.ep == 1 for p in pools(r, "heavy-skew", role))
    cost = {s.name: s.cost_per_hour for s in r.services}
    # the cost follows instance granularity, not the skew: with the replay-fitted vLLM
    # calibration (hardware/calibration/vllm.yaml) heavy-skew's decode is 7 instances of 8
    # devices (56) and balanced's 2 of 32 (64); both prefill on 40, so
    # the whole difference is balanced's 8 surplus devices at $2.50 ($260 vs $240 per hour)
    dec = {name: sum(p.devices for p in pools(r, name, "decode")) for name in ("balanced", "heavy-skew")}
    pre = {name: sum(p.devices for p in pools(r, name, "prefill")) for name in ("balanced", "heavy-skew")}
    assert pre["balanced"] == pre["heavy-skew"]
    assert cost["balanced"] - cost["heavy-skew"] == pytest.approx((dec["balanced"] - dec["heavy-skew"]) * 2.50)
    # per device, the skewed service gets less out of either role
    for role in ("prefill", "decode"):
        per_device = {name: sum(p.capacity_qps for p in pools(r, name, role))
                      / sum(p.devices for p in pools(r, name, role)) for name in ("balanced", "heavy-skew")}
        assert per_device["heavy-skew"] < per_device["balanced"]


# ---- finding 4: 1.8T dense and MoE, servers vs a scale-up pod --------------------------------

def _dense_step(rp, hw_index: int, tp: int) -> float:
    plan = Plans.of(hw=hw_index, tp=tp, pp=1, ep=1, dp=1, batch=64, wprec=1, kvprec=1)
    return float(stage_time(rp.archs[0], table(rp, measured=False), plan, Load.decode(64.0, 2300.0),
                            rp.engine).stage_s[0])


def test_dense_wide_tp_across_servers_is_eaten_by_all_reduce():
    rp = problem("dense-vs-moe-1.8t")
    hw = table(rp, measured=False)
    steps = {tp: _dense_step(rp, 0, tp) for tp in (16, 32, 64)}
    assert steps[32] > steps[16] and steps[64] > steps[32]  # wider is slower across servers
    parts = {tp: stage_time(rp.archs[0], hw, Plans.of(hw=0, tp=tp, pp=1, ep=1, dp=1, batch=64,
                                                        wprec=1, kvprec=1),
                            Load.decode(64.0, 2300.0), rp.engine) for tp in (16, 64)}
    comm_growth = parts[64].comm_s[0] / parts[16].comm_s[0]
    gemm_shrink = parts[16].gemm_s[0] / parts[64].gemm_s[0]
    assert comm_growth > 2.0 and gemm_shrink > 3.0
    assert parts[64].comm_s[0] > parts[64].gemm_s[0]


def test_scale_up_pod_keeps_wide_tp_viable_with_diminishing_returns():
    rp = problem("dense-vs-moe-1.8t")
    s8, s16, s32, s64 = (_dense_step(rp, 1, tp) for tp in (8, 16, 32, 64))
    assert s8 > s16 > s32 > s64
    assert s16 / s32 < s8 / s16 and s32 / s64 < s16 / s32  # each doubling gains less


def test_moe_scales_decode_on_servers_with_ep():
    rp = problem("dense-vs-moe-1.8t")
    ep_across = decode_qps_per_device(rp, 1, 0, 8, 2, 16, measured=False)
    tp_across = decode_qps_per_device(rp, 1, 0, 16, 1, 16, measured=False)
    assert ep_across > 1.5 * tp_across
    r = planned("dense-vs-moe-1.8t")
    (moe_dec,) = pools(r, "moe-1.8t", "decode")
    dense_decs = pools(r, "dense-1.8t", "decode")  # tp16 and tp32 pools with the replay-fitted calibration
    assert moe_dec.hardware == "b200" and moe_dec.dp > 1  # ordinary servers, EP across them
    assert dense_decs and all(p.hardware == "b200-pod64" and p.tp > 8 for p in dense_decs)  # the pod's wide TP
