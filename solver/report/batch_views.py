"""Renderings of a batch summary: terminal table, CSV, Parquet, pivot, plot. Formatting only.

The CSV (and Parquet) has one row per planned problem and the columns

    problem, base_problem, file, sweep.<label>..., status, objective_kind, objective,
    cost_per_hour, total_devices, devices.<type>..., power_kw, wall_s, resumed, result,
    input_sha256, error

with one `sweep.<label>` column per swept field and one `devices.<type>` column per hardware
type seen anywhere in the batch (empty where a row has none).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from solver import files
from solver.report.text import table
from solver.schema.batch import PLANNED, BatchSummary, SummaryRow
from solver.schema.sweep import format_value

PIVOT_VALUES = ("cost_per_hour", "objective", "total_devices", "power_kw")


def _labels(rows: list[SummaryRow]) -> list[str]:
    out: dict[str, None] = {}
    for r in rows:
        for k in r.sweep:
            out.setdefault(k)
    return list(out)


def _types(rows: list[SummaryRow]) -> list[str]:
    return sorted({t for r in rows for t in r.devices_by_type})


def columns(rows: list[SummaryRow]) -> list[tuple[str, str]]:
    """(column name, kind) with kind one of str, float, int, bool."""
    head = [("problem", "str"), ("base_problem", "str"), ("file", "str")]
    sweep = [(f"sweep.{k}", "float") for k in _labels(rows)]
    mid = [("status", "str"), ("objective_kind", "str"), ("objective", "float"),
           ("cost_per_hour", "float"), ("total_devices", "int")]
    devices = [(f"devices.{t}", "int") for t in _types(rows)]
    tail = [("power_kw", "float"), ("wall_s", "float"), ("resumed", "bool"), ("result", "str"),
            ("input_sha256", "str"), ("error", "str")]
    return head + sweep + mid + devices + tail


def _value(r: SummaryRow, name: str) -> Any:
    if name.startswith("sweep."):
        return r.sweep.get(name[len("sweep."):])
    if name.startswith("devices."):
        t = name[len("devices."):]
        return r.devices_by_type.get(t, 0 if r.status in PLANNED else None)
    return getattr(r, name)


def _csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return format_value(v)
    return str(v)


def to_csv(rows: list[SummaryRow]) -> str:
    cols = columns(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([c for c, _ in cols])
    for r in rows:
        w.writerow([_csv_cell(_value(r, c)) for c, _ in cols])
    return buf.getvalue()


def have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def write_parquet(rows: list[SummaryRow], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    kinds = {"str": pa.string(), "float": pa.float64(), "int": pa.int64(), "bool": pa.bool_()}
    cols = columns(rows)
    arrays = {c: pa.array([_value(r, c) for r in rows], type=kinds[k]) for c, k in cols}
    pq.write_table(pa.table(arrays), str(path))


# ---- pivot -------------------------------------------------------------------------------------


def pivot(rows: list[SummaryRow], row_label: str, col_label: str, value: str = "cost_per_hour"
          ) -> tuple[list[str], list[list[Any]]]:
    """A table with one row per (problem, other swept values, ROW value) and one column per COL
    value; each cell the value of the plan there, or its status where it has none (infeasible,
    invalid, error). Problems that do not sweep both fields are left out."""
    if value not in PIVOT_VALUES:
        raise ValueError(f"pivot value must be one of {PIVOT_VALUES}, got {value!r}")
    sel = [r for r in rows if row_label in r.sweep and col_label in r.sweep]
    others = [k for k in _labels(sel) if k not in (row_label, col_label)]
    col_values = sorted({r.sweep[col_label] for r in sel})
    problems = list(dict.fromkeys(r.base_problem for r in sel))
    cells: dict[tuple, dict[float, Any]] = {}
    for r in sel:
        key = (problems.index(r.base_problem), tuple(r.sweep.get(k) for k in others),
               r.sweep[row_label])
        v = getattr(r, value) if r.status in PLANNED else None
        cells.setdefault(key, {})[r.sweep[col_label]] = v if v is not None else r.status
    headers = ["problem", *others, row_label, *(f"{col_label}={format_value(c)}" for c in col_values)]
    out = []
    for key in sorted(cells, key=lambda k: (k[0], tuple(float("inf") if x is None else x for x in k[1]), k[2])):
        pi, other_values, rv = key
        out.append([problems[pi], *other_values, rv, *(cells[key].get(c) for c in col_values)])
    return headers, out


def pivot_csv(rows: list[SummaryRow], row_label: str, col_label: str, value: str = "cost_per_hour") -> str:
    headers, body = pivot(rows, row_label, col_label, value)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(headers)
    for r in body:
        w.writerow([_csv_cell(v) for v in r])
    return buf.getvalue()


def pivot_text(rows: list[SummaryRow], row_label: str, col_label: str, value: str = "cost_per_hour") -> str:
    headers, body = pivot(rows, row_label, col_label, value)
    keys = len(headers) - len({r.sweep[col_label] for r in rows
                               if row_label in r.sweep and col_label in r.sweep})

    def cell(i: int, v: Any) -> Any:
        if not isinstance(v, float):
            return v
        return format_value(v) if i < keys else f"{v:,.2f}"

    shown = [[cell(i, v) for i, v in enumerate(r)] for r in body]
    align = "l" * (keys - 1) + "r" * (len(headers) - keys + 1)
    return (f"{value} by {row_label} (rows) and {col_label} (columns)\n"
            + table(headers, shown, align=align) + "\n")


# ---- terminal summary --------------------------------------------------------------------------


def _devices(r: SummaryRow) -> str:
    return " ".join(f"{t}:{n}" for t, n in r.devices_by_type.items() if n) or "-"


def _short(text: str | None, width: int = 100) -> str:
    if not text:
        return ""
    line = text.splitlines()[0]
    return line if len(line) <= width else line[: width - 3] + "..."


def summary_text(s: BatchSummary, out: str | None = None, quiet: bool = False) -> str:
    lines = []
    if not quiet:
        body = [[r.problem, r.status + (" (resumed)" if r.resumed else ""),
                 None if r.cost_per_hour is None else f"{r.cost_per_hour:,.2f}",  # to the cent
                 r.total_devices, _devices(r), r.wall_s, _short(r.error)]
                for r in s.rows]
        lines.append(table(["problem", "status", "cost/h", "devices", "by type", "wall s", "error"],
                           body, align="llrrlrl"))
    c = s.counts
    parts = [f"{c.optimal + c.feasible} planned"] + [
        f"{n} {k}" for k, n in (("infeasible", c.infeasible), ("invalid", c.invalid),
                               ("error", c.error), ("resumed", c.resumed)) if n]
    where = f"; results in {out}" if out else ""
    lines.append(f"{c.problems} problems: {', '.join(parts)}{where} (exit {s.exit_code})")
    return "\n".join(lines) + "\n"


# ---- plot --------------------------------------------------------------------------------------


def default_plot_x(rows: list[SummaryRow]) -> str | None:
    labels = _labels(rows)
    return labels[0] if labels else None


def sweep_png(rows: list[SummaryRow], x_label: str | None, path: str, flag: str = "--plot") -> None:
    """Cost against one swept field: a line per problem and combination of its other swept
    values; infeasible points as crosses on the axis."""
    from solver.report.plots import require_matplotlib

    require_matplotlib(flag)
    from matplotlib.figure import Figure  # no pyplot: no global backend or figure state

    x_label = x_label or default_plot_x(rows)
    sel = [r for r in rows if x_label is not None and x_label in r.sweep]
    series: dict[tuple, list[SummaryRow]] = {}
    for r in sel:
        rest = tuple((k, v) for k, v in r.sweep.items() if k != x_label)
        series.setdefault((r.base_problem, rest), []).append(r)
    fig = Figure(figsize=(9, 5.5), dpi=110)
    ax = fig.add_subplot()
    failed_x: list[float] = []
    for (base, rest), pts in series.items():
        pts = sorted(pts, key=lambda r: r.sweep[x_label])
        ok = [r for r in pts if r.status in PLANNED and r.cost_per_hour is not None]
        failed_x += [r.sweep[x_label] for r in pts if r not in ok]
        name = base + (" " + ", ".join(f"{k}={format_value(v)}" for k, v in rest) if rest else "")
        ax.plot([r.sweep[x_label] for r in ok], [r.cost_per_hour for r in ok], "o-", label=name)
    if failed_x:
        ax.plot(failed_x, [0.0] * len(failed_x), "x", color="tab:red", label="not planned (infeasible)")
    ax.set_xlabel(x_label or "")
    ax.set_ylabel("cost (USD / hour)")
    ax.set_title(f"cost vs {x_label}")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if len(series) <= 20:
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    with files.replacing(path, flag) as tmp:
        fig.savefig(tmp, format="png")
