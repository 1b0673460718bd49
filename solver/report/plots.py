"""Plots of the plan reports and the frontier as PNGs (matplotlib, the optional `plot` extra).
Drawing only: every number comes from a document (or from `breakdown`'s regrouping of one).

matplotlib is used without pyplot (no global backend or figure state). Text that comes from a
problem file (problem, service and hardware names) goes through `_plain`, so that a `$` in a
name is drawn as a dollar sign instead of starting matplotlib's math mode."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from solver import files
from solver.errors import InputError
from solver.report.breakdown import CostBreakdown, LatencyRow
from solver.report.question_views import mix_text
from solver.schema.periods_result import PeriodsResult
from solver.schema.questions import FrontierResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

INSTALL_HINT = "pip install 'fleetplan[plot]'"
DPI = 100
PALETTE = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink",
           "tab:olive", "tab:cyan", "tab:gray", "tab:red"]


def require_matplotlib(flag: str) -> None:
    """Fail early, as bad input (exit 2), when a plot is asked for without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InputError(f"{flag} needs matplotlib, which is not installed ({INSTALL_HINT})") from None


def _plain(text: str) -> str:
    """Literal text for matplotlib (no math mode)."""
    return text.replace("$", r"\$")


def _figure(width_in: float, height_in: float, dpi: int = DPI) -> "Figure":
    from matplotlib.figure import Figure

    return Figure(figsize=(width_in, height_in), dpi=dpi)


def png_bytes(fig: "Figure") -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


# ---- the frontier ------------------------------------------------------------------------------


def frontier_figure(doc: FrontierResult, plan_point: tuple[float, float] | None = None,
                    dpi: int = 110) -> "Figure":
    """Cost against served QPS; `plan_point` (served QPS, USD/hour) marks a plan on it."""
    fig = _figure(9, 5.5, dpi)
    ax = fig.add_subplot()
    ok = [p for p in doc.points if p.cost_per_hour is not None]
    front = [p for p in ok if p.pareto]
    dominated = [p for p in ok if not p.pareto]
    ax.plot([p.traffic_qps for p in front], [p.cost_per_hour for p in front], "o-",
            color="tab:blue", label="cheapest fleet (Pareto)")
    if dominated:
        ax.plot([p.traffic_qps for p in dominated], [p.cost_per_hour for p in dominated], "o",
                mfc="none", color="tab:gray", label="dominated (spare capacity)")
    if len(front) <= 12:
        for p in front:
            ax.annotate(_plain(mix_text(p.devices_by_type)), (p.traffic_qps, p.cost_per_hour),
                        textcoords="offset points", xytext=(4, -10), fontsize=6, color="0.3")
    if doc.max_scale_swept >= 1:  # the problem's own demand is on the chart
        ax.axvline(doc.demand_qps, color="tab:green", ls=":", label=f"demand ({doc.demand_qps:g} QPS)")
    lim = doc.limit
    if lim is not None and lim.max_traffic_qps is not None:
        ax.axvline(lim.max_traffic_qps, color="tab:red", ls="--",
                   label=f"most traffic the limits allow ({lim.max_traffic_qps:,.4g} QPS)")
    if plan_point is not None:
        ax.plot([plan_point[0]], [plan_point[1]], "*", ms=14, color="tab:orange",
                mec="black", mew=0.6, label="this plan", zorder=5)
    ax.set_xlabel("served traffic (QPS, the demand mix scaled)")
    ax.set_ylabel("cost (USD / hour)")
    ax.set_title(_plain(f"{doc.problem}: cost vs served traffic"))
    right = max([p.traffic_qps for p in ok] + [lim.max_traffic_qps if lim and lim.max_traffic_qps else 0.0]
                + ([plan_point[0]] if plan_point else []))
    ax.set_xlim(0, right * 1.2 if right > 0 else None)  # room for the last point's label
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def frontier_png(doc: FrontierResult, path: str, flag: str = "--plot") -> None:
    require_matplotlib(flag)
    fig = frontier_figure(doc)
    with files.replacing(path, flag) as tmp:
        fig.savefig(tmp, format="png")


# ---- latency against the SLO bounds ------------------------------------------------------------

HOLDS = "tab:green"  # meets the bound at the error band's upper edge (or, without a band, at all)
CENTRAL = "tab:orange"  # meets the bound at the central estimate only
BROKEN = "tab:red"


def latency_color(r: LatencyRow) -> str:
    if not r.holds:
        return BROKEN
    return CENTRAL if r.holds_at_edge is False else HOLDS


def latency_figure(rows: list[LatencyRow]) -> "Figure":
    """One horizontal bar per pool and bounded metric, as a share of its bound: the bar is the
    central prediction, the whisker runs to the error band's upper edge, the dashed line at 100%
    is the bound. Pools are grouped, top to bottom in plan order."""
    fig = _figure(9.5, 1.5 + 0.32 * len(rows))
    ax = fig.add_subplot()
    ys = list(range(len(rows)))[::-1]
    pct = [100.0 * r.predicted_ms / r.bound_ms for r in rows]
    ax.barh(ys, pct, height=0.62, color=[latency_color(r) for r in rows], alpha=0.85)
    right = 100.0
    for y, r, v in zip(ys, rows, pct):
        end = v
        if r.upper_edge_ms is not None:
            end = 100.0 * r.upper_edge_ms / r.bound_ms
            ax.errorbar([end], [y], xerr=[[end - v], [0]], fmt="none", ecolor="black",
                        elinewidth=1.0, capsize=3)
        edge = f" (edge {r.upper_edge_ms:,.0f})" if r.upper_edge_ms is not None else ""
        ax.text(max(end, v) + 2, y, f"{r.predicted_ms:,.0f}{edge} / {r.bound_ms:,.4g} ms",
                va="center", fontsize=7, color="0.2")
        right = max(right, end)
    ax.axvline(100.0, color="tab:red", ls="--", lw=1.2)
    # a light rule between pools
    for k in range(1, len(rows)):
        if rows[k].pool != rows[k - 1].pool:
            ax.axhline(ys[k] + 0.5, color="0.8", lw=0.6)
    ax.set_yticks(ys, [_plain(f"{r.pool} · {r.metric}") for r in rows], fontsize=7)
    ax.set_xlim(0, right * 1.45)
    banded = any(r.upper_edge_ms is not None for r in rows)
    ax.set_xlabel("predicted latency, % of the SLO bound"
                  + (" (whisker: the error band's upper edge)" if banded else ""))
    ax.set_title("latency vs SLO per pool", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(color=HOLDS, label="holds at the band's upper edge" if banded else "meets the bound")]
    if banded:
        handles.append(Patch(color=CENTRAL, label="holds at the central estimate only"))
    handles += [Patch(color=BROKEN, label="over the bound"),
                Line2D([], [], color="tab:red", ls="--", label="SLO bound (100%)")]
    _legend_below(fig, handles, len(handles))
    return fig


def _legend_below(fig: "Figure", handles: list, ncol: int) -> None:
    """A legend under the axes, in a strip kept free of them."""
    strip = 0.4 / fig.get_figheight()
    fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, strip, 1, 1))


# ---- cost breakdown ----------------------------------------------------------------------------


def cost_figure(cb: CostBreakdown) -> "Figure":
    """Cost per hour of each service, stacked by device type, with its dollars per segment."""
    fig = _figure(9.5, 1.7 + 0.45 * len(cb.rows) + 0.15 * (len(cb.types) // 4))
    ax = fig.add_subplot()
    ys = list(range(len(cb.rows)))[::-1]
    left = [0.0] * len(cb.rows)
    total = max((r.cost_per_hour for r in cb.rows), default=0.0)
    for k, t in enumerate(cb.types):
        vals = [r.by_type.get(t, 0.0) for r in cb.rows]
        ax.barh(ys, vals, left=left, height=0.6, color=PALETTE[k % len(PALETTE)],
                label=_plain(f"{t} (USD {cb.type_cost[t]:,.2f}/h, {cb.type_devices[t]} devices)"))
        for y, x0, v in zip(ys, left, vals):
            if total > 0 and v / total > 0.08:
                ax.text(x0 + v / 2, y, f"{v:,.0f}", ha="center", va="center", fontsize=7, color="white")
        left = [a + b for a, b in zip(left, vals)]
    for y, r in zip(ys, cb.rows):
        ax.text(r.cost_per_hour + total * 0.01, y, f"USD {r.cost_per_hour:,.2f}/h, {r.devices} devices",
                va="center", fontsize=7, color="0.2")
    ax.set_yticks(ys, [_plain(r.service) for r in cb.rows], fontsize=8)
    ax.set_xlim(0, total * 1.45 if total > 0 else 1)
    ax.set_xlabel("cost (USD / hour)")
    ax.set_title("cost by service and device type", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    _legend_below(fig, handles, min(len(cb.types), 3))
    return fig


# ---- demand over time (the document's periods: section) ----------------------------------------


def _period_axes(fig: "Figure", pr: PeriodsResult, ylabel: str, title: str):
    ax = fig.add_subplot()
    names = [f.name for f in pr.fleet]
    step = max(1, len(names) // 24)  # at most about 24 tick labels
    ax.set_xticks(range(0, len(names), step), [_plain(n) for n in names[::step]], fontsize=7,
                  rotation=45 if len(names) > 12 else 0)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_xlabel("period")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return ax


def _stacked(ax, layers: list[tuple[str, list[float]]], colors: list[str]) -> None:
    """One bar per period, stacked in the order of `layers` (label, value per period)."""
    xs = list(range(len(layers[0][1]))) if layers else []
    bottom = [0.0] * len(xs)
    for (label, vals), color in zip(layers, colors):
        ax.bar(xs, vals, bottom=bottom, width=0.8, color=color, label=_plain(label))
        bottom = [a + b for a, b in zip(bottom, vals)]


def periods_fleet_figure(pr: PeriodsResult) -> "Figure":
    """Devices per period, stacked by role and hardware type; the committed levels as lines."""
    keys = sorted({(role, t) for f in pr.fleet for role, by in f.devices_by_role.items() for t in by})
    layers = [(f"{role} · {t}", [float(f.devices_by_role.get(role, {}).get(t, 0)) for f in pr.fleet])
              for role, t in keys]
    fig = _figure(9.5, 4.2)
    ax = _period_axes(fig, pr, "devices", "fleet over time: devices by role and type")
    _stacked(ax, layers, [PALETTE[k % len(PALETTE)] for k in range(len(layers))])
    for c in pr.committed:
        ax.axhline(c.devices, color="black", ls="--", lw=1.0,
                   label=_plain(f"{c.hardware} committed ({c.devices})"))
    handles, _ = ax.get_legend_handles_labels()
    _legend_below(fig, handles, min(len(handles), 4))
    return fig


COST_LAYERS = (("committed", "committed_cost_usd", "tab:blue"),
               ("on demand", "on_demand_cost_usd", "tab:orange"),
               ("starts", "start_cost_usd", "tab:gray"))


def periods_cost_figure(pr: PeriodsResult) -> "Figure":
    """Cost per period (USD), stacked committed / on demand / starts."""
    layers = [(f"{label} (USD {getattr(pr, key):,.2f} in all)", [getattr(f, key) for f in pr.fleet], color)
              for label, key, color in COST_LAYERS if key != "start_cost_usd" or pr.start_cost_usd]
    fig = _figure(9.5, 4.0)
    ax = _period_axes(fig, pr, "cost (USD per period)",
                      f"cost per period: USD {pr.cost_usd:,.2f} over {pr.horizon_h:g} h")
    _stacked(ax, [(a, b) for a, b, _ in layers], [c for _, _, c in layers])
    handles, _ = ax.get_legend_handles_labels()
    _legend_below(fig, handles, len(handles))
    return fig


def periods_utilisation_figure(pr: PeriodsResult) -> "Figure":
    """Utilisation per period (mean rate / capacity), one line per service."""
    services = sorted({s for f in pr.fleet for s in f.utilisation})
    fig = _figure(9.5, 3.6)
    ax = _period_axes(fig, pr, "utilisation (% of capacity)", "utilisation per period (mean rate / capacity)")
    xs = list(range(len(pr.fleet)))
    for k, s in enumerate(services):
        ax.plot(xs, [100.0 * f.utilisation.get(s, 0.0) for f in pr.fleet], "o-", ms=3,
                color=PALETTE[k % len(PALETTE)], label=_plain(s))
    ax.set_ylim(0, 105)
    handles, _ = ax.get_legend_handles_labels()
    _legend_below(fig, handles, min(len(handles), 4))
    return fig
