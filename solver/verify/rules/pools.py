"""Rules on each pool: its arithmetic, the runtime it is pinned to, the SLO and the memory."""

from __future__ import annotations

from solver.problem.load import ResolvedProblem
from solver.schema.pool import LATENCY_DECIMALS, MEMORY_DECIMALS, rounding_slack
from solver.schema.problem import Service
from solver.schema.result import PlanResult, Pool
from solver.verify.tally import PoolFigures, Tally, le, where


def _arithmetic(f: PoolFigures) -> list[str]:
    pool, w = f.pool, where(f.result, f.pool)
    out = []
    if pool.devices_per_instance != pool.tp * pool.pp * pool.dp * (pool.cp or 1):
        out.append(f"{w}: devices_per_instance != tp x pp x dp x cp")
    if pool.devices != pool.instances * pool.devices_per_instance:
        out.append(f"{w}: devices != instances x devices_per_instance")
    if abs(pool.capacity_qps - pool.instances * pool.capacity_qps_per_instance) > 1e-6 * max(1, pool.capacity_qps):
        out.append(f"{w}: capacity_qps != instances x capacity per instance")
    cost = f.cost or 0.0
    if abs(cost - pool.cost_per_hour) > 1e-6 * max(1.0, cost):
        out.append(f"{w}: cost ${pool.cost_per_hour:.4f}/h, recomputed ${cost:.4f}/h")
    return out


def check_pool_arithmetic(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """Every pool is on the problem's hardware, runs at least one instance, and its devices,
    capacity and cost follow from its instances (the cost at its site's price)."""
    out: list[str] = []
    for sf in t.services:
        for pool in sf.result.pools:
            if pool.hardware not in rp.hardware_names:
                out.append(f"{where(sf.result, pool)}: hardware not in the problem")
    for f in t.pools:
        if f.pool.instances < 1:
            out.append(f"{where(f.result, f.pool)}: {f.pool.instances} instances")
        if f.counted:
            out += _arithmetic(f)
    return out


def check_runtime(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """Pools keep the runtime a service is pinned to, and the reported runtime is the pools'."""
    out: list[str] = []
    for f in t.pools:
        if not f.counted:
            continue
        if f.spec.runtime == "colocated" and f.pool.role != "colocated":
            out.append(f"{where(f.result, f.pool)}: service is pinned to colocated")
        if f.spec.runtime == "disaggregated" and f.pool.role == "colocated":
            out.append(f"{where(f.result, f.pool)}: service is pinned to disaggregated")
    for sf in t.services:
        implied = (
            "mixed" if sf.cap["colocated"] > 0 and sf.dev["prefill"]
            else "disaggregated" if sf.dev["prefill"] else "colocated"
        )
        if sf.result.runtime != implied:
            out.append(f"service '{sf.result.name}': runtime '{sf.result.runtime}' but the pools are {implied}")
    return out


def check_distinct_configs(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """A service runs at most `search.max_distinct_configs` configurations per role."""
    k = rp.problem.search.max_distinct_configs
    if k is None:
        return []
    return [f"service '{sf.result.name}': {len(cfgs)} distinct {role} configurations, limit {k}"
            for sf in t.services for role, cfgs in sf.configs.items() if len(cfgs) > k]


def _latency_bounds(svc: Service, pool: Pool) -> list[tuple[str, float | None, float | None]]:
    """(label, predicted ms, bound ms) of the SLO terms a pool's role answers for."""
    slo, pr = svc.slo, pool.predicted
    out = []
    if slo.ttft_ms and pool.role in ("prefill", "colocated"):
        out += [("TTFT p50", pr.ttft_ms, slo.ttft_ms.p50), ("TTFT p99", pr.ttft_p99_ms, slo.ttft_ms.p99)]
    if slo.tpot_ms and pool.role in ("decode", "colocated"):
        out += [("TPOT p50", pr.tpot_ms, slo.tpot_ms.p50), ("TPOT p99", pr.tpot_p99_ms, slo.tpot_ms.p99)]
    return out


def check_slo(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """Each pool's predicted latencies, inflated by the safety margin, meet its service's SLO.
    The document rounds latencies to LATENCY_DECIMALS decimals (half a unit either way), so a
    latency is checked at the least value that rounds to it: a pool the model sized to exactly
    bound / (1 + margin) passes after rounding up, one above it by more than the rounding fails."""
    margin = rp.problem.constraints.safety_margin
    slack = rounding_slack(LATENCY_DECIMALS)
    out: list[str] = []
    for f in t.pools:
        if not f.counted:
            continue
        for label, value, bound in _latency_bounds(f.spec, f.pool):
            if bound is not None and (value is None or not le((value - slack) * (1 + margin), bound)):
                out.append(f"{where(f.result, f.pool)}: predicted {label} {value} ms x (1 + {margin}) "
                           f"exceeds {bound} ms")
    return out


def check_memory(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """Each pool's predicted memory per device fits the card's usable memory."""
    usable = {c.name: c.memory_gib * rp.engine.gpu_memory_utilization for c in rp.hardware}
    out: list[str] = []
    for f in t.pools:
        gib = f.pool.predicted.memory_gib_per_device
        if f.counted and not le(gib - rounding_slack(MEMORY_DECIMALS), usable[f.pool.hardware]):
            out.append(f"{where(f.result, f.pool)}: {gib:.2f} GiB per device exceeds usable "
                       f"{usable[f.pool.hardware]:.2f} GiB")
    return out
