"""The frontier as a PNG (matplotlib, the optional `plot` extra). Drawing only."""

from __future__ import annotations

from solver.errors import InputError
from solver.report.question_views import mix_text
from solver.schema.questions import FrontierResult

INSTALL_HINT = "pip install 'fleetplan[plot]'"


def require_matplotlib(flag: str) -> None:
    """Fail early, as bad input (exit 2), when a plot is asked for without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InputError(f"{flag} needs matplotlib, which is not installed ({INSTALL_HINT})") from None


def frontier_png(doc: FrontierResult, path: str, flag: str = "--plot") -> None:
    require_matplotlib(flag)
    from matplotlib.figure import Figure  # no pyplot: no global backend or figure state

    fig = Figure(figsize=(9, 5.5), dpi=110)
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
            ax.annotate(mix_text(p.devices_by_type), (p.traffic_qps, p.cost_per_hour),
                        textcoords="offset points", xytext=(4, -10), fontsize=6, color="0.3")
    if doc.max_scale_swept >= 1:  # the problem's own demand is on the chart
        ax.axvline(doc.demand_qps, color="tab:green", ls=":", label=f"demand ({doc.demand_qps:g} QPS)")
    lim = doc.limit
    if lim is not None and lim.max_traffic_qps is not None:
        ax.axvline(lim.max_traffic_qps, color="tab:red", ls="--",
                   label=f"most traffic the limits allow ({lim.max_traffic_qps:,.4g} QPS)")
    ax.set_xlabel("served traffic (QPS, the demand mix scaled)")
    ax.set_ylabel("cost (USD / hour)")
    ax.set_title(f"{doc.problem}: cost vs served traffic")
    right = max([p.traffic_qps for p in ok] + [lim.max_traffic_qps if lim and lim.max_traffic_qps else 0.0])
    ax.set_xlim(0, right * 1.2 if right > 0 else None)  # room for the last point's label
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    try:
        fig.savefig(path, format="png")
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write: {exc.strerror or exc}") from None
