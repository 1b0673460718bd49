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

from solver.candidates.misses import miss_messages
from solver.candidates.table import (
    MIN_CAPACITY_QPS,
    CandidateSet,
    CandidateTable,
    PruneStats,
    kv_links,
)
from solver.perf import runtime as rt
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.speculative import Speculation, speculation_axis
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.perf.validity import valid_mask
from solver.problem.load import ResolvedProblem
from solver.schema.problem import Service
from solver.schema.roles import COLOCATED, DECODE, PREFILL


def _link_classes(links: np.ndarray, p: int, decode_types: list[int], heterogeneous: bool) -> list[tuple[float, float]]:
    """The distinct KV links from prefill type p to the decode types in use, own link first,
    then slower ones (lower bandwidth first, then higher latency)."""
    own = (float(links[p, p, 0]), float(links[p, p, 1]))
    if not heterogeneous:
        return [own]
    others = {(float(links[p, d, 0]), float(links[p, d, 1])) for d in decode_types} - {own}
    return [own] + sorted(others, key=lambda x: (-x[0], x[1]))


def service_roles(s: Service) -> tuple[int, ...]:
    return {
        "auto": (COLOCATED, PREFILL, DECODE),
        "colocated": (COLOCATED,),
        "disaggregated": (PREFILL, DECODE),
    }[s.runtime]


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


def _grid(rp: ResolvedProblem, s: Service, arch: ModelArch, role: int) -> tuple[Plans, np.ndarray]:
    search = rp.problem.search
    moe = arch.moe_layers > 0
    plans = Plans.grid(
        hw=range(len(rp.hardware)),
        tp=search.tp,
        pp=search.pp,
        ep=search.ep if moe else [1],
        dp=search.dp if moe else [1],
        batch=search.batch,
        wprec=[precision_code(s.precision)],
        kvprec=[precision_code(s.kv_precision or s.precision)],
        cp=search.cp,
        spec=speculation_axis(rp.speculation_of(s.name), role),
    )
    if role != COLOCATED:
        return plans, np.zeros(len(plans), dtype=int)
    chunks = np.asarray(search.chunk_tokens)
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
        return rt.prefill_role(arch, hw, plans, wl, slo, engine, kv_link)
    if role == DECODE:
        return rt.decode_role(arch, hw, plans, wl, slo, engine)
    return rt.colocated_role(arch, hw, plans, wl, slo, engine, chunks)


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


def _expand_links(plans: Plans, chunks: np.ndarray, classes: list[list[tuple[float, float]]]):
    """Each prefill plan once per KV link class of its hardware type: the own-link rows first
    (in grid order), then the second class's, and so on. Returns the expanded plans and
    chunks, the original plan index and class number of each row, and the link arrays."""
    n_cls = np.array([len(c) for c in classes])[plans.hw]
    orig = np.concatenate([np.flatnonzero(n_cls > c) for c in range(int(n_cls.max(initial=1)))])
    cls = np.concatenate([np.full(int((n_cls > c).sum()), c) for c in range(int(n_cls.max(initial=1)))])
    p = plans.take(orig)
    bw = np.array([classes[h][c][0] for h, c in zip(p.hw, cls)], dtype=float)
    lat = np.array([classes[h][c][1] for h, c in zip(p.hw, cls)], dtype=float)
    return p, chunks[orig], orig, cls, bw, lat


def _slower_link_matches(idx: np.ndarray, orig: np.ndarray, bw: np.ndarray, lat: np.ndarray,
                         cap: np.ndarray) -> np.ndarray:
    """Rows (of idx) to drop: another kept row of the same plan on a link no faster in either
    respect (it reaches every decode type this one reaches) has at least its capacity."""
    drop = np.zeros(len(idx), dtype=bool)
    by_plan: dict[int, list[int]] = {}
    for j, r in enumerate(idx):
        by_plan.setdefault(int(orig[r]), []).append(j)
    for js in by_plan.values():
        if len(js) < 2:
            continue
        for a in js:
            ra = idx[a]
            for b in js:
                rb = idx[b]
                if a != b and bw[rb] <= bw[ra] and lat[rb] >= lat[ra] and cap[rb] >= cap[ra]:
                    drop[a] = True
                    break
    return drop


def build_candidates(rp: ResolvedProblem) -> CandidateSet:
    hw = HardwareTable.from_cards(
        rp.hardware, rp.prices, rp.engine, measured_tables(rp.hardware, rp.problem.software.engine)
    )
    links = kv_links(hw)
    hetero = rp.problem.constraints.heterogeneous_prefill_decode
    power = np.array(rp.power_w)
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
            part = _role_candidates(rp, si, s, arch, hw, power, role, links,
                                    decode_types, hetero, stats, misses)
            if part is not None:
                built[role] = part
                if role == DECODE:
                    decode_types = sorted({int(h) for h in part.hw})
        parts += [built[r] for r in roles_of[si] if r in built]
    return CandidateSet(CandidateTable.concat(parts), stats, misses, roles_of, links)


def _role_candidates(rp, si, s, arch, hw, power, role, links, decode_types, hetero, stats,
                     misses) -> CandidateTable | None:
    """The kept rows of one (service, role), or None (and the closest misses) when none is left."""
    plans, chunks = _grid(rp, s, arch, role)
    orig = cls = kv_link = None
    if role == PREFILL:
        classes = [_link_classes(links, p, decode_types, hetero) for p in range(len(hw))]
        plans, chunks, orig, cls, kv_bw, kv_lat = _expand_links(plans, chunks, classes)
        kv_link = (kv_bw, kv_lat)
    n = len(plans)
    stats.evaluated += n
    valid = valid_mask(arch, plans)
    topo_ok = ~_topology_bad(hw, plans, rp.instance_supplies)
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
        drop = _slower_link_matches(idx, orig, kv_link[0], kv_link[1], m.capacity_qps)
        stats.pruned["dominated"] += int(drop.sum())
        idx = idx[~drop]
    keep = idx[_dominance_keep(plans.hw[idx], plans.devices[idx], m.capacity_qps[idx],
                               None if cls is None else cls[idx])]
    stats.pruned["dominated"] += int(idx.size - keep.size)
    return _rows(rp, si, s, arch, hw, power, role, plans, chunks, m, keep, kv_link)


def _rows(rp, si, s, arch, hw, power, role, plans, chunks, m, k, kv_link) -> CandidateTable:
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
        hw=plans.hw[k],
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
        cost_per_hour=devices * hw.price[plans.hw[k]],
        power_w=devices * power[plans.hw[k]],
        ttft_p50_ms=m.ttft_p50_ms[k],
        ttft_p99_ms=m.ttft_p99_ms[k],
        tpot_p50_ms=m.tpot_p50_ms[k],
        tpot_p99_ms=m.tpot_p99_ms[k],
        memory_gib=m.memory.total_gib[k],
        kv_bw=np.asarray(link_k[0], dtype=float),
        kv_lat=np.asarray(link_k[1], dtype=float),
        kv_ms=np.asarray(kv_ms, dtype=float),
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
    plans = Plans.of(hw=hw_idx, tp=tp, pp=pp, ep=ep, dp=dp, batch=batch,
                     wprec=precision_code(s.precision),
                     kvprec=precision_code(s.kv_precision or s.precision))
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
    return dataclasses.replace(cs, table=dataclasses.replace(t, cost_per_hour=t.devices * price[t.hw]))
