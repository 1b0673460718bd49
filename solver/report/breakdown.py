"""Numbers the reports regroup from a plan document: cost by service and device type, and each
pool's latencies against its SLO bounds (with the decision record's error band when the plan has
one). Regrouping only: every number comes from the document, nothing is recomputed."""

from __future__ import annotations

from dataclasses import dataclass

from solver.schema.result import PlanResult, Pool, ServiceResult

# what a plan's power figures are: the devices' board power at their TDP (or at the power cap a
# pool runs at), nothing else; printed next to every power figure
POWER_NOTE = "device TDP only"
POWER_NOTE_LONG = ("device board power at TDP (or at a pool's power cap) only: hosts, network and "
                   "cooling are not counted")

METRIC_NAMES = {"ttft_p50_ms": "TTFT p50", "ttft_p99_ms": "TTFT p99", "tpot_p50_ms": "TPOT p50",
                "tpot_p99_ms": "TPOT p99"}


def parallel_text(p: Pool) -> str:
    s = f"tp{p.tp} pp{p.pp}"
    if p.ep > 1 or p.dp > 1:
        s += f" ep{p.ep} dp{p.dp}"
    if p.cp:
        s += f" cp{p.cp}"
    if p.speculative:
        s += f" +{p.speculative}"
    return s


def pool_label(service: str, p: Pool) -> str:
    return f"{service} {p.role} ({p.instances} x {p.hardware} {parallel_text(p)})"


@dataclass(frozen=True)
class CostRow:
    service: str
    by_type: dict[str, float]  # USD/hour per device type, every type of the plan (0 when unused)
    devices_by_type: dict[str, int]
    cost_per_hour: float
    devices: int


@dataclass(frozen=True)
class CostBreakdown:
    types: list[str]  # the plan's device types, in its devices_by_type order
    rows: list[CostRow]  # one per service
    type_cost: dict[str, float]  # USD/hour per type, all services
    type_devices: dict[str, int]
    type_power_kw: dict[str, float]
    cost_per_hour: float
    devices: int
    components: tuple[tuple[str, float], ...] = ()  # USD/hour by component (cost_components)


def cost_breakdown(doc: PlanResult) -> CostBreakdown:
    types = list(doc.devices_by_type)
    rows = []
    for s in doc.services:
        cost = {t: 0.0 for t in types}
        devs = {t: 0 for t in types}
        for p in s.pools:
            cost[p.hardware] = cost.get(p.hardware, 0.0) + p.cost_per_hour
            devs[p.hardware] = devs.get(p.hardware, 0) + p.devices
        rows.append(CostRow(s.name, cost, devs, s.cost_per_hour, s.devices))
    power = {t: 0.0 for t in types}
    for s in doc.services:
        for p in s.pools:
            power[p.hardware] = power.get(p.hardware, 0.0) + p.power_kw
    return CostBreakdown(
        types=types, rows=rows,
        type_cost={t: sum(r.by_type.get(t, 0.0) for r in rows) for t in types},
        type_devices={t: sum(r.devices_by_type.get(t, 0) for r in rows) for t in types},
        type_power_kw=power, cost_per_hour=doc.cost_per_hour, devices=doc.total_devices,
        components=tuple(cost_components(doc)),
    )


@dataclass(frozen=True)
class LatencyRow:
    """One pool's prediction of one latency metric against its bound."""

    service: str
    pool: str  # pool_label()
    metric: str  # METRIC_NAMES value
    predicted_ms: float
    bound_ms: float
    band_pct: float | None  # None: the plan carries no decision record (no error band)
    upper_edge_ms: float | None

    @property
    def holds_at_edge(self) -> bool | None:
        return None if self.upper_edge_ms is None else self.upper_edge_ms <= self.bound_ms

    @property
    def margin_pct(self) -> float:
        """(bound - predicted) / bound x 100: negative when the central estimate breaks it."""
        return (self.bound_ms - self.predicted_ms) / self.bound_ms * 100.0

    @property
    def holds(self) -> bool:
        return self.predicted_ms <= self.bound_ms


def latency_rows(doc: PlanResult) -> list[LatencyRow]:
    """Every pool's bounded latencies, in pool order. With a decision record, its SLO checks
    (prediction, band edge, bound) are used; without one, the pools' predictions against the
    service's bounds, without a band."""
    pools = [(s, p) for s in doc.services for p in s.pools]
    bands = doc.decision.uncertainty.pools if doc.decision is not None else None
    if bands is not None and [(b.service, b.role, b.hardware) for b in bands] != [
            (s.name, p.role, p.hardware) for s, p in pools]:
        raise ValueError("the decision record's bands do not match the plan's pools")
    out: list[LatencyRow] = []
    for i, (s, p) in enumerate(pools):
        label = pool_label(s.name, p)
        if bands is not None:
            b = bands[i]
            for c in b.checks:
                band = b.band_ttft_pct if c.metric.startswith("ttft") else b.band_tpot_pct
                out.append(LatencyRow(s.name, label, METRIC_NAMES[c.metric], c.predicted_ms,
                                      c.bound_ms, band, c.upper_edge_ms))
            continue
        pairs = [("ttft_p50_ms", p.predicted.ttft_ms, s.slo.ttft_p50_ms),
                 ("ttft_p99_ms", p.predicted.ttft_p99_ms, s.slo.ttft_p99_ms),
                 ("tpot_p50_ms", p.predicted.tpot_ms, s.slo.tpot_p50_ms),
                 ("tpot_p99_ms", p.predicted.tpot_p99_ms, s.slo.tpot_p99_ms)]
        for metric, pred, bound in pairs:
            if pred is not None and bound is not None:
                out.append(LatencyRow(s.name, label, METRIC_NAMES[metric], pred, bound, None, None))
    return out


COMPONENT_NAMES = ("rental", "capital", "network", "energy", "hosting")


def cost_components(doc: PlanResult) -> list[tuple[str, float]]:
    """The plan's USD/hour by component: the document's (problems with `cost:` entries), else
    everything is rental."""
    c = doc.cost_components
    if c is None:
        return [(k, doc.cost_per_hour if k == "rental" else 0.0) for k in COMPONENT_NAMES]
    return [(k, getattr(c, k)) for k in COMPONENT_NAMES]


def components_text(doc: PlanResult) -> str:
    return "cost by component ($/h): " + ", ".join(f"{k} {v:,.2f}" for k, v in cost_components(doc))


def choices_text(p: Pool) -> str | None:
    """A pool's power cap and precisions, when the problem offered a choice of them."""
    if p.power_cap_w is None and p.kv_precision is None:
        return None
    parts = [f"{p.role} {p.hardware} {parallel_text(p)} batch {p.batch}:"]
    if p.power_cap_w is not None:
        parts.append(f"at {p.power_cap_w:g} W,")
    parts.append(f"{p.precision} weights" + (f", {p.kv_precision} KV" if p.kv_precision else ""))
    return " ".join(parts)


def survive_text(s: ServiceResult) -> str | None:
    """The failures the service must survive (the problem's `survive:`) and the capacity left in
    the worst case of each, against its demand; None when it must survive none."""
    v = s.survive
    if v is None:
        return None

    def qps(x: float | None) -> str:
        return "-" if x is None else f"{x:,.1f}"

    parts = []
    if v.lose_instances:
        parts.append(f"losing {v.lose_instances} instance{'s' if v.lose_instances > 1 else ''} of any "
                     f"one type leaves at worst {qps(v.worst_instances_loss_qps)} QPS "
                     f"({v.worst_instances_loss_hardware or '-'})")
    if v.lose_site:
        parts.append(f"losing any one site leaves at worst {qps(v.worst_site_loss_qps)} QPS "
                     f"(without {v.worst_site_loss_site or '-'})")
    return f"must survive (demand {s.demand_qps:g} QPS): " + "; ".join(parts or ["nothing"])


def fleet_lines(s: ServiceResult) -> list[str]:
    """Sites, KV routes across hardware types and failure margins of one service, a line each."""
    out = [f"choice: {c}" for c in (choices_text(p) for p in s.pools) if c]
    if s.sites:
        out.append("by site: " + "; ".join(
            f"{x.site} sized for {x.qps:g} QPS (capacity {x.capacity_qps:.1f})" for x in s.sites))
    if s.kv_routes:
        out.append("KV routes: " + "; ".join(
            (f"{r.site}: " if r.site else "") + f"{r.prefill_hardware} -> {r.decode_hardware} "
            f"{r.qps:g} QPS ({r.link_gb_s:g} GB/s, {r.link_latency_us:g} us)" for r in s.kv_routes))
    survive = survive_text(s)
    if survive:
        out.append(survive)
    return out


def site_rows(doc: PlanResult) -> list[list[object]]:
    return [[x.name, x.devices, ", ".join(f"{n} x {k}" for k, n in x.devices_by_type.items()) or "-",
             round(x.cost_per_hour, 2), round(x.power_kw, 1),
             "-" if x.power_cap_kw is None else x.power_cap_kw] for x in doc.sites or []]


SITE_HEADERS = ["site", "devices", "by type", "$/h", "device kW", "kW cap"]
