"""`fleetplan trace FILE`: the summary of a workload data file as a table, JSON or a PNG.
Rendering only: every number comes from the TraceSummary document."""

from __future__ import annotations

import json

from solver import files
from solver.report.plots import _figure, _plain
from solver.schema.trace import LengthStats, TraceSummary

MAX_TABLE_WINDOWS = 48  # rows of the per-window table; more are summarised (the JSON has them all)


def to_json(doc: TraceSummary) -> str:
    return json.dumps(doc.model_dump(mode="json"), indent=2) + "\n"


def _lengths_line(name: str, s: LengthStats) -> str:
    return (f"  {name:<14} mean {s.mean_tokens:>9,.1f}  p50 {s.p50_tokens:>8,.0f}  p90 {s.p90_tokens:>8,.0f}  "
            f"p99 {s.p99_tokens:>8,.0f}  max {s.max_tokens:>8,.0f}  ({s.distinct_values:,} distinct)")


def _cv(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def trace_text(doc: TraceSummary) -> str:
    lines = [f"{doc.file}: {'request trace' if doc.kind == 'trace' else 'length distribution'}"]
    if doc.kind == "trace":
        lines += [
            f"  requests       {doc.requests:,} over {doc.duration_s:,.1f} s",
            f"  rate           mean {doc.mean_rate_qps:,.3f} req/s, peak {doc.peak_rate_qps:,.3f} req/s "
            f"(windows of {doc.window_s:g} s)",
            f"  inter-arrival  CV {_cv(doc.interarrival_cv)} overall; {_cv(doc.arrival_cv)} within windows "
            "(the planner's arrival_cv)",
        ]
    lines += ["  tokens", _lengths_line("input", doc.input_tokens), _lengths_line("output", doc.output_tokens)]
    if doc.windows:
        lines += ["", f"  {'window start s':>14}  {'requests':>8}  {'req/s':>9}  {'CV':>6}"]
        shown = doc.windows[:MAX_TABLE_WINDOWS]
        lines += [f"  {w.start_s:>14,.1f}  {w.requests:>8,}  {w.rate_qps:>9,.3f}  {_cv(w.interarrival_cv):>6}"
                  for w in shown]
        if len(doc.windows) > len(shown):
            lines.append(f"  ... {len(doc.windows) - len(shown):,} more windows (--format json lists them all)")
    return "\n".join(lines) + "\n"


def trace_png(doc: TraceSummary, path: str) -> None:
    """Rate and CV per window (a trace) and the length percentiles, as one PNG."""
    fig = _figure(10, 6.5 if doc.kind == "trace" else 3.5)
    rows = 2 if doc.kind == "trace" else 1
    if doc.kind == "trace":
        ax = fig.add_subplot(rows, 1, 1)
        t = [w.start_s for w in doc.windows]
        ax.step(t, [w.rate_qps for w in doc.windows], where="post", color="tab:blue", label="req/s")
        ax.axhline(doc.mean_rate_qps, color="tab:blue", ls=":", label=f"mean {doc.mean_rate_qps:.3g} req/s")
        ax.set_xlabel("time from the first request (s)")
        ax.set_ylabel(f"req/s per {doc.window_s:g} s window")
        cv = ax.twinx()
        cv.plot(t, [w.interarrival_cv if w.interarrival_cv is not None else float("nan") for w in doc.windows],
                ".", color="tab:red", label="inter-arrival CV")
        cv.axhline(1.0, color="tab:red", ls=":", lw=0.8)
        cv.set_ylabel("inter-arrival CV (1: Poisson)")
        ax.legend(loc="upper left", fontsize=8)
        cv.legend(loc="upper right", fontsize=8)
        ax.set_title(_plain(doc.file.rsplit("/", 1)[-1]))
    ax2 = fig.add_subplot(rows, 1, rows)
    names = ["mean", "p50", "p90", "p99", "max"]
    for k, (label, s) in enumerate((("input", doc.input_tokens), ("output", doc.output_tokens))):
        vals = [s.mean_tokens, s.p50_tokens, s.p90_tokens, s.p99_tokens, s.max_tokens]
        ax2.bar([i + 0.4 * k for i in range(len(names))], vals, width=0.4, label=f"{label} tokens")
    ax2.set_xticks([i + 0.2 for i in range(len(names))], names)
    ax2.set_yscale("log")
    ax2.set_ylabel("tokens")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    with files.replacing(path, "--plot") as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
