"""Candidate tables: every way to run one instance of one service in one role, evaluated and pruned.

A candidate is (service, role, hardware type, tp, pp, ep, dp, batch, chunk, precision). All rows
of a (service, role) are evaluated at once by the vectorised performance model, then pruned:

- invalid: the plan cannot run (tp not dividing heads, ep on a dense model, ...);
- topology: the instance cannot be placed (more devices than the supply, a stage that does not
  tile the nodes);
- memory: weights + KV + activations + reserve exceed the usable memory;
- slo: the prediction, inflated by the safety margin, breaks a TTFT/TPOT bound at any load;
- dominated: within (service, role, hardware type, KV link), another row whose device count
  divides this one's gives at least the capacity per device; k copies of it replace one copy of
  this row at the same cost, power and device count, so no optimum needs this row.

Prefill rows carry the link their KV cache crosses to the decode pool (`kv_bw`, `kv_lat`): the
prefill card's own scale-out link when the decode pool is on the same type, and for a decode
pool on another type the slower of the two cards' links (lower bandwidth, higher latency). The
transfer is part of the prefill's TTFT, so the same plan is evaluated once per distinct link to
the decode types the service can use; a row serves every decode type whose link is at least
as fast as its own (`reach`). A row whose capacity a slower link's row of the same plan matches
is dropped (the slower one serves more decode types at the same capacity).

The survivors form the table the CP-SAT fleet model reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver.candidates.dilation import dilate
from solver.candidates.grid import check_grid_sizes, grid_axes
from solver.candidates.links import expand_links, link_classes, slower_link_matches
from solver.candidates.misses import miss_messages
from solver.candidates.table import (
    MIN_CAPACITY_QPS,
    CandidateSet,
    CandidateTable,
    PruneStats,
    kv_links,
)
from solver.candidates.variants import Variants, build_variants
from solver.perf import runtime as rt
from solver.perf.arch import ModelArch
from solver.perf.colocated import colocated_role
from solver.perf.operators.tables import measured_tables
from solver.perf.speculative import Speculation
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.perf.validity import valid_mask
from solver.problem.load import ResolvedProblem
from solver.schema.problem import Service
from solver.schema.roles import COLOCATED, DECODE, PREFILL


def service_roles(s: Service) -> tuple[int, ...]:
    return {
        "auto": (COLOCATED, PREFILL, DECODE),
        "colocated": (COLOCATED,),
        "disaggregated": (PREFILL, DECODE),
    }[s.runtime]


def check_grids(rp: ResolvedProblem) -> None:
    """Every (service, role)'s grid within the row limit, checked without building it
    (`fleetplan check`: the same error `plan` gives)."""
    check_grid_sizes(rp, service_roles)


def workload_of(s: Service, speculation: Speculation | None = None) -> rt.Workload:
    w = s.workload
    pc = w.prefix_cache
    return rt.Workload(
        input_tokens=w.input_tokens.mean_tokens,
        output_tokens=w.output_tokens.mean_tokens,
        input_p99_tokens=w.input_tokens.p99_tokens,
        output_p99_tokens=w.output_tokens.p99_tokens,
        speculation=speculation,
        prefix_hit_rate=(pc.hit_rate or 0.0) if pc is not None else 0.0,
        shared_prefix_tokens=float(pc.shared_prefix_tokens or 0) if pc is not None else 0.0,
        arrival_cv=w.arrival_cv or 1.0,
    )


def slo_of(s: Service, margin: float) -> rt.Slo:
    t, o = s.slo.ttft_ms, s.slo.tpot_ms
    return rt.Slo(
        ttft_p50_ms=t.p50 if t else None,
        ttft_p99_ms=t.p99 if t else None,
        tpot_p50_ms=o.p50 if o else None,
        tpot_p99_ms=o.p99 if o else None,
        safety_margin=margin,
    )


def _grid(rp: ResolvedProblem, s: Service, arch: ModelArch, role: int, n_hw: int,
          stats: PruneStats) -> tuple[Plans, np.ndarray]:
    """The (service, role)'s grid, its axes pruned one by one first (solver/candidates/grid.py):
    the rows of dropped values count as evaluated and invalid."""
    axes, chunks = grid_axes(rp, s, arch, role, n_hw)
    kv = s.kv_precisions
    stats.evaluated += axes.dropped
    stats.pruned["invalid"] += axes.dropped
    plans = Plans.grid(**axes.values)
    if kv is None:  # the KV cache in the weights' precision
        plans = dataclasses.replace(plans, kvprec=plans.wprec.copy())
    if role != COLOCATED:
        return plans, np.zeros(len(plans), dtype=int)
    idx = np.repeat(np.arange(len(plans)), len(chunks))
    return plans.take(idx), np.tile(chunks, len(plans))


def _topology_bad(hw: HardwareTable, plans: Plans, supplies: tuple[int | None, ...]) -> np.ndarray:
    supply = np.array([np.inf if s is None else s for s in supplies])[plans.hw]
    per_node = hw.per_node[plans.hw]
    stage = plans.tp * plans.dp * plans.cp
    tiles = np.where(stage >= per_node, stage % per_node == 0, per_node % stage == 0)
    return (plans.devices > supply) | ~tiles


def _evaluate(rp, s, arch, hw, role, plans, chunks, kv_link=None) -> rt.RoleMetrics:
    margin = rp.problem.constraints.safety_margin
    wl, slo, engine = workload_of(s, rp.speculation_of(s.name)), slo_of(s, margin), rp.engine
    if role == PREFILL:
        m = rt.prefill_role(arch, hw, plans, wl, slo, engine, kv_link)
    elif role == DECODE:
        m = rt.decode_role(arch, hw, plans, wl, slo, engine)
    else:
        m = colocated_role(arch, hw, plans, wl, slo, engine, chunks)
    return dilate(rp.latency_scale, s.name, role, hw, plans, m, slo) if rp.latency_scale else m


def _dominance_keep(hw_idx: np.ndarray, devices: np.ndarray, cap: np.ndarray,
                    link: np.ndarray | None = None) -> np.ndarray:
    """Indices (into the given arrays) of rows not dominated; see the module docstring. `link`
    (a class number per row) keeps rows of different KV links apart."""
    keep: list[int] = []
    group = hw_idx if link is None else hw_idx * 1_000 + link
    for h in np.unique(group):
        rows = np.flatnonzero(group == h)
        best: dict[int, int] = {}
        for r in rows:  # best row per device count; ties keep the first (canonical order)
            d = int(devices[r])
            if d not in best or cap[r] > cap[best[d]]:
                best[d] = r
        for d, r in sorted(best.items()):
            per_dev = cap[r] / d
            dominated = any(
                d2 < d and d % d2 == 0 and cap[r2] / d2 >= per_dev for d2, r2 in best.items()
            )
            if not dominated:
                keep.append(r)
    return np.array(sorted(keep), dtype=int)


def build_candidates(rp: ResolvedProblem) -> CandidateSet:
    var = build_variants(rp)
    hw = var.table
    first = np.array([int(np.flatnonzero(var.entry == j)[0]) for j in range(len(rp.hardware))])
    links = kv_links(hw)[np.ix_(first, first)]  # per entry: a power cap does not change a link
    hetero = rp.problem.constraints.heterogeneous_prefill_decode
    stats = PruneStats()
    parts: list[CandidateTable] = []
    misses: dict[tuple[int, int], list[str]] = {}
    roles_of: dict[int, tuple[int, ...]] = {}
    for si, s in enumerate(rp.problem.services):
        arch = rp.archs[si]
        roles_of[si] = service_roles(s)
        built: dict[int, CandidateTable] = {}
        decode_types: list[int] = []
        # decode first: the decode types in use set the KV links prefill rows are evaluated for
        for role in sorted(roles_of[si], key=lambda r: r != DECODE):
            part = _role_candidates(rp, si, s, arch, hw, var, role, links,
                                    decode_types, hetero, stats, misses)
            if part is not None:
                built[role] = part
                if role == DECODE:
                    decode_types = sorted({int(h) for h in part.hw})
        parts += [built[r] for r in roles_of[si] if r in built]
    return CandidateSet(CandidateTable.concat(parts), stats, misses, roles_of, links)


def _role_candidates(rp, si, s, arch, hw, var: Variants, role, links, decode_types, hetero, stats,
                     misses) -> CandidateTable | None:
    """The kept rows of one (service, role), or None (and the closest misses) when none is left."""
    plans, chunks = _grid(rp, s, arch, role, len(hw), stats)
    orig = cls = kv_link = None
    if role == PREFILL:
        classes = [link_classes(links, int(e), decode_types, hetero) for e in var.entry]
        plans, chunks, orig, cls, kv_bw, kv_lat = expand_links(plans, chunks, classes)
        kv_link = (kv_bw, kv_lat)
    n = len(plans)
    stats.evaluated += n
    valid = valid_mask(arch, plans)
    topo_ok = ~_topology_bad(hw, plans, var.supplies(rp.instance_supplies))
    stats.pruned["invalid"] += int((~valid).sum())
    stats.pruned["topology"] += int((valid & ~topo_ok).sum())
    m = _evaluate(rp, s, arch, hw, role, plans, chunks, kv_link)
    base = valid & topo_ok
    fits = base & m.fits
    ok = fits & m.slo_ok & (m.capacity_qps >= MIN_CAPACITY_QPS)
    stats.pruned["memory"] += int((base & ~m.fits).sum())
    stats.pruned["slo"] += int((fits & ~ok).sum())
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        misses[(si, role)] = miss_messages(rp, s, arch, hw, role, plans, chunks, m, valid, topo_ok)
        return None
    if kv_link is not None and cls.max(initial=0) > 0:
        drop = slower_link_matches(idx, orig, kv_link[0], kv_link[1], m.capacity_qps)
        stats.pruned["dominated"] += int(drop.sum())
        idx = idx[~drop]
    # per variant and precision pair: a dominated precision keeps its best rows (its runner-up)
    group = plans.hw[idx] * 16 + plans.wprec[idx] * 4 + plans.kvprec[idx]
    keep = idx[_dominance_keep(group, plans.devices[idx], m.capacity_qps[idx],
                               None if cls is None else cls[idx])]
    stats.pruned["dominated"] += int(idx.size - keep.size)
    return _rows(rp, si, s, arch, hw, var, role, plans, chunks, m, keep, kv_link)


def _rows(rp, si, s, arch, hw, var, role, plans, chunks, m, k, kv_link) -> CandidateTable:
    """The candidate table of the kept rows `k` of one (service, role)'s evaluated grid."""
    devices = plans.devices[k]
    nan = np.full(k.size, np.nan)
    if kv_link is not None:
        link_k = (kv_link[0][k], kv_link[1][k])
        kv_ms = rt.kv_transfer_s(arch, hw, plans.take(k), workload_of(s).input_tokens, rp.engine,
                                 link_k) * 1e3
    else:
        link_k, kv_ms = (nan, nan), nan
    return CandidateTable(
        service=np.full(k.size, si),
        role=np.full(k.size, role),
        hw=var.entry[plans.hw[k]],
        tp=plans.tp[k],
        pp=plans.pp[k],
        ep=plans.ep[k],
        dp=plans.dp[k],
        cp=plans.cp[k],
        spec=plans.spec[k],
        batch=plans.batch[k].astype(int),
        chunk=chunks[k].astype(int),
        devices=devices.astype(int),
        capacity_qps=m.capacity_qps[k],
        cost_per_hour=devices * var.cost[plans.hw[k]],
        power_w=devices * var.cap_w[plans.hw[k]],
        ttft_p50_ms=m.ttft_p50_ms[k],
        ttft_p99_ms=m.ttft_p99_ms[k],
        tpot_p50_ms=m.tpot_p50_ms[k],
        tpot_p99_ms=m.tpot_p99_ms[k],
        memory_gib=m.memory.total_gib[k],
        kv_bw=np.asarray(link_k[0], dtype=float),
        kv_lat=np.asarray(link_k[1], dtype=float),
        kv_ms=np.asarray(kv_ms, dtype=float),
        power_cap_w=var.cap_w[plans.hw[k]], wprec=plans.wprec[k], kvprec=plans.kvprec[k],
        owned_cost=var.owned[plans.hw[k]],
    )


@dataclass(frozen=True)
class PoolEstimate:
    """The performance model's view of one given pool configuration (a current deployment's)."""

    valid: bool  # the plan can run (degrees fit the model) and be placed
    fits: bool  # fits in memory
    slo_ok: bool  # meets the service's SLO bounds (with the safety margin) at some load
    capacity_qps: float  # per instance, 0 when it cannot serve
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    tpot_p50_ms: float | None
    tpot_p99_ms: float | None
    memory_gib: float


def estimate_pool(rp: ResolvedProblem, si: int, role: int, hw_idx: int, tp: int, pp: int,
                  ep: int, dp: int, batch: int, chunk: int | None,
                  kv_link: tuple[float, float] | None = None) -> PoolEstimate:
    """Evaluate one configuration of service si's role on hardware hw_idx through the same
    performance model and SLO check as the candidate tables (without any pruning)."""
    hw = HardwareTable.from_cards(
        rp.hardware, rp.prices, rp.engine, measured_tables(rp.hardware, rp.problem.software.engine)
    )
    s = rp.problem.services[si]
    arch = rp.archs[si]
    kv = s.kv_precisions
    plans = Plans.of(hw=hw_idx, tp=tp, pp=pp, ep=ep, dp=dp, batch=batch,
                     wprec=precision_code(s.precisions[0]),
                     kvprec=precision_code(kv[0] if kv else s.precisions[0]))
    chunks = np.array([chunk or 0])
    link = None if kv_link is None or role != PREFILL else (np.array([kv_link[0]]), np.array([kv_link[1]]))
    m = _evaluate(rp, s, arch, hw, role, plans, chunks, link)
    valid = bool(valid_mask(arch, plans)[0]) and not bool(_topology_bad(hw, plans, rp.instance_supplies)[0])

    def f(x) -> float | None:
        v = float(np.asarray(x)[0])
        return v if np.isfinite(v) else None

    return PoolEstimate(
        valid=valid, fits=bool(m.fits[0]), slo_ok=bool(m.slo_ok[0]),
        capacity_qps=float(m.capacity_qps[0]) if valid else 0.0,
        ttft_p50_ms=f(m.ttft_p50_ms), ttft_p99_ms=f(m.ttft_p99_ms),
        tpot_p50_ms=f(m.tpot_p50_ms), tpot_p99_ms=f(m.tpot_p99_ms),
        memory_gib=float(m.memory.total_gib[0]),
    )


def reprice(cs: CandidateSet, prices: Sequence[float]) -> CandidateSet:
    """The same candidates at other prices per device-hour (one per hardware entry, as
    `ResolvedProblem.prices`). Nothing in the pruning above reads a price (dominance compares
    rows of one hardware type, whose costs scale alike with the device count), so the kept rows
    are the same and only the cost column changes, computed as `build_candidates` does."""
    t = cs.table
    price = np.asarray(prices, dtype=float)
    return dataclasses.replace(cs, table=dataclasses.replace(
        t, cost_per_hour=t.devices * (price[t.hw] + t.owned_cost)))
