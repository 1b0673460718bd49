"""Candidate tables: every way to run one instance of one service in one role, evaluated and pruned.

A candidate is (service, role, hardware type, tp, pp, ep, dp, batch, chunk, precision). All rows
of a (service, role) are evaluated at once by the vectorised performance model, then pruned:

- invalid: the plan cannot run (tp not dividing heads, ep on a dense model, ...);
- topology: the instance cannot be placed (more devices than the supply, a stage that does not
  tile the nodes);
- memory: weights + KV + activations + reserve exceed the usable memory;
- slo: the prediction, inflated by the safety margin, breaks a TTFT/TPOT bound at any load;
- dominated: within (service, role, hardware type), another row whose device count divides this
  one's gives at least the capacity per device; k copies of it replace one copy of this row at
  the same cost, power and device count, so no optimum needs this row.

The survivors form the table the CP-SAT fleet model reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from solver.perf import runtime as rt
from solver.perf.arch import ModelArch
from solver.perf.calibration import measured_tables
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.perf.validity import valid_mask
from solver.problem import ResolvedProblem
from solver.schema.problem import Service

ROLES = ("colocated", "prefill", "decode")
COLOCATED, PREFILL, DECODE = 0, 1, 2
PRUNE_REASONS = ("invalid", "topology", "memory", "slo", "dominated")
MIN_CAPACITY_QPS = 0.001  # the fleet model counts capacity in milli-QPS


@dataclass(frozen=True, slots=True)
class CandidateTable:
    """Kept candidates, one row each (struct of arrays)."""

    service: np.ndarray
    role: np.ndarray
    hw: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    ep: np.ndarray
    dp: np.ndarray
    batch: np.ndarray
    chunk: np.ndarray  # prefill tokens per colocated iteration (0 for other roles)
    devices: np.ndarray
    capacity_qps: np.ndarray
    cost_per_hour: np.ndarray
    power_w: np.ndarray
    ttft_p50_ms: np.ndarray
    ttft_p99_ms: np.ndarray
    tpot_p50_ms: np.ndarray
    tpot_p99_ms: np.ndarray
    memory_gib: np.ndarray

    def __len__(self) -> int:
        return len(self.service)

    def take(self, idx) -> CandidateTable:
        return CandidateTable(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    @classmethod
    def concat(cls, parts: list[CandidateTable]) -> CandidateTable:
        if not parts:
            return cls.empty()
        return cls(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls)})

    @classmethod
    def empty(cls) -> CandidateTable:
        ints = {"service", "role", "hw", "tp", "pp", "ep", "dp", "batch", "chunk", "devices"}
        return cls(**{f.name: np.zeros(0, dtype=int if f.name in ints else float) for f in fields(cls)})

    def rows(self, service: int, role: int) -> np.ndarray:
        return np.flatnonzero((self.service == service) & (self.role == role))


@dataclass
class PruneStats:
    evaluated: int = 0
    pruned: dict[str, int] = field(default_factory=lambda: {r: 0 for r in PRUNE_REASONS})

    @property
    def kept(self) -> int:
        return self.evaluated - sum(self.pruned.values())


@dataclass(frozen=True)
class CandidateSet:
    table: CandidateTable
    stats: PruneStats
    misses: dict[tuple[int, int], list[str]]  # (service, role) with no candidate -> why
    roles: dict[int, tuple[int, ...]]  # service -> roles considered


def service_roles(s: Service) -> tuple[int, ...]:
    return {
        "auto": (COLOCATED, PREFILL, DECODE),
        "colocated": (COLOCATED,),
        "disaggregated": (PREFILL, DECODE),
    }[s.runtime]


def workload_of(s: Service) -> rt.Workload:
    w = s.workload
    return rt.Workload(
        input_tokens=w.input_tokens.mean_tokens,
        output_tokens=w.output_tokens.mean_tokens,
        input_p99_tokens=w.input_tokens.p99_tokens,
        output_p99_tokens=w.output_tokens.p99_tokens,
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
    )
    if role != COLOCATED:
        return plans, np.zeros(len(plans), dtype=int)
    chunks = np.asarray(search.chunk_tokens)
    idx = np.repeat(np.arange(len(plans)), len(chunks))
    return plans.take(idx), np.tile(chunks, len(plans))


def _topology_bad(hw: HardwareTable, plans: Plans, supplies: tuple[int | None, ...]) -> np.ndarray:
    supply = np.array([np.inf if s is None else s for s in supplies])[plans.hw]
    per_node = hw.per_node[plans.hw]
    stage = plans.tp * plans.dp
    tiles = np.where(stage >= per_node, stage % per_node == 0, per_node % stage == 0)
    return (plans.devices > supply) | ~tiles


def _evaluate(rp, s, arch, hw, role, plans, chunks) -> rt.RoleMetrics:
    margin = rp.problem.constraints.safety_margin
    wl, slo, engine = workload_of(s), slo_of(s, margin), rp.engine
    if role == PREFILL:
        return rt.prefill_role(arch, hw, plans, wl, slo, engine)
    if role == DECODE:
        return rt.decode_role(arch, hw, plans, wl, slo, engine)
    return rt.colocated_role(arch, hw, plans, wl, slo, engine, chunks)


def _dominance_keep(hw_idx: np.ndarray, devices: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Indices (into the given arrays) of rows not dominated; see the module docstring."""
    keep: list[int] = []
    for h in np.unique(hw_idx):
        rows = np.flatnonzero(hw_idx == h)
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


def _fmt_plan(p: Plans, j: int, chunk: int) -> str:
    s = f"tp{p.tp[j]} pp{p.pp[j]}"
    if p.ep[j] > 1 or p.dp[j] > 1:
        s += f" ep{p.ep[j]} dp{p.dp[j]}"
    s += f" batch {int(p.batch[j])}"
    if chunk:
        s += f" chunk {chunk}"
    return s


def _miss_messages(rp, s, arch, hw, role, plans, chunks, m, valid, topo_ok) -> list[str]:
    """Explain an empty (service, role): the closest miss per hardware type."""
    what = f"{ROLES[role]} configuration of {arch.name} for service '{s.name}'"
    if not valid.any():
        return [f"no valid {what} in the search space (check search.tp/pp/ep/dp against the model)"]
    base = valid & topo_ok
    if not base.any():
        return [f"no {what} can be placed: every instance needs more devices than the supply"]
    out: list[str] = []
    margin = rp.problem.constraints.safety_margin
    mtxt = f" with the {margin:.0%} safety margin" if margin else ""
    for h in range(len(rp.hardware)):
        on = base & (plans.hw == h)
        if not on.any():
            continue
        hname = hw.names[h]
        fits = on & m.fits
        if not fits.any():
            j = int(np.flatnonzero(on)[np.argmin(m.memory.total_gib[on])])
            out.append(
                f"no {what} fits in memory on {hname}: the smallest needs "
                f"{m.memory.total_gib[j]:.1f} GiB per device at {_fmt_plan(plans, j, int(chunks[j]))} "
                f"(usable {m.memory.capacity[j] / 2**30:.1f} GiB)"
            )
            continue
        checks = []
        if s.slo.ttft_ms and role in (COLOCATED, PREFILL):
            checks += [("TTFT p50", m.ttft_p50_ms, s.slo.ttft_ms.p50), ("TTFT p99", m.ttft_p99_ms, s.slo.ttft_ms.p99)]
        if s.slo.tpot_ms and role in (COLOCATED, DECODE):
            checks += [("TPOT p50", m.tpot_p50_ms, s.slo.tpot_ms.p50), ("TPOT p99", m.tpot_p99_ms, s.slo.tpot_ms.p99)]
        reported = False
        for label, vals, bound in checks:
            if bound is None:
                continue
            v = np.where(fits, np.nan_to_num(vals, nan=np.inf), np.inf)
            j = int(np.argmin(v))
            if v[j] * (1 + margin) > bound:
                out.append(
                    f"no {what} on {hname} meets {label} {bound:g} ms{mtxt}; the fastest is "
                    f"{v[j]:.0f} ms at {_fmt_plan(plans, j, int(chunks[j]))}"
                )
                reported = True
        if not reported:
            out.append(
                f"no {what} on {hname} meets every SLO bound at once (each bound alone is "
                f"reachable, not together{mtxt})"
            )
    return out


def build_candidates(rp: ResolvedProblem) -> CandidateSet:
    hw = HardwareTable.from_cards(
        rp.hardware, rp.prices, rp.engine, measured_tables(rp.hardware, rp.problem.software.engine)
    )
    power = np.array(rp.power_w)
    stats = PruneStats()
    parts: list[CandidateTable] = []
    misses: dict[tuple[int, int], list[str]] = {}
    roles_of: dict[int, tuple[int, ...]] = {}
    for si, s in enumerate(rp.problem.services):
        arch = rp.archs[si]
        roles_of[si] = service_roles(s)
        for role in roles_of[si]:
            plans, chunks = _grid(rp, s, arch, role)
            n = len(plans)
            stats.evaluated += n
            valid = valid_mask(arch, plans)
            topo_ok = ~_topology_bad(hw, plans, rp.supplies)
            stats.pruned["invalid"] += int((~valid).sum())
            stats.pruned["topology"] += int((valid & ~topo_ok).sum())
            m = _evaluate(rp, s, arch, hw, role, plans, chunks)
            base = valid & topo_ok
            fits = base & m.fits
            ok = fits & m.slo_ok & (m.capacity_qps >= MIN_CAPACITY_QPS)
            stats.pruned["memory"] += int((base & ~m.fits).sum())
            stats.pruned["slo"] += int((fits & ~ok).sum())
            idx = np.flatnonzero(ok)
            if idx.size == 0:
                misses[(si, role)] = _miss_messages(rp, s, arch, hw, role, plans, chunks, m, valid, topo_ok)
                continue
            keep = idx[_dominance_keep(plans.hw[idx], plans.devices[idx], m.capacity_qps[idx])]
            stats.pruned["dominated"] += int(idx.size - keep.size)
            k = keep
            devices = plans.devices[k]
            parts.append(
                CandidateTable(
                    service=np.full(k.size, si),
                    role=np.full(k.size, role),
                    hw=plans.hw[k],
                    tp=plans.tp[k],
                    pp=plans.pp[k],
                    ep=plans.ep[k],
                    dp=plans.dp[k],
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
                )
            )
    return CandidateSet(CandidateTable.concat(parts), stats, misses, roles_of)


def reprice(cs: CandidateSet, prices: Sequence[float]) -> CandidateSet:
    """The same candidates at other prices per device-hour (one per hardware entry, as
    `ResolvedProblem.prices`). Nothing in the pruning above reads a price (dominance compares
    rows of one hardware type, whose costs scale alike with the device count), so the kept rows
    are the same and only the cost column changes, computed as `build_candidates` does."""
    t = cs.table
    price = np.asarray(prices, dtype=float)
    return dataclasses.replace(cs, table=dataclasses.replace(t, cost_per_hour=t.devices * price[t.hw]))
