"""The `fleetplan` command line. It parses arguments, calls the flow, prints; no logic here."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from solver import __version__
from solver.catalog import shipped
from solver.cli import profiles as profiles_cli
from solver.errors import FleetplanError, InputError
from solver.report.plan_views import RENDERERS as PLAN_FORMATS
from solver.schema.cards import PRECISIONS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise InputError(f"{self.prog}: {message}")


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return v


def _problem_path(ref: str) -> str:
    if os.path.exists(ref) or ref.endswith((".yaml", ".yml")) or "/" in ref:
        return ref
    return str(shipped.resolve("problems", ref))


def _question_solver_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--time-limit", type=_positive_float, default=60.0,
                   help="seconds per plan (default 60)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=_positive, default=1, help="CP-SAT workers (default 1)")
    p.add_argument("--no-timings", action="store_true",
                   help="leave wall times null so that the same input gives byte-identical output")


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fleetplan", description="Plan LLM serving fleets that meet latency SLOs "
                "at the lowest cost.")
    p.add_argument("--version", action="version", version=f"fleetplan {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    e = sub.add_parser("estimate", help="the performance model for one configuration")
    e.add_argument("--model", required=True, help="model card name or path")
    e.add_argument("--hardware", required=True, help="hardware card name or path")
    for flag in ("tp", "pp", "ep", "dp"):
        e.add_argument(f"--{flag}", type=_positive, default=1)
    e.add_argument("--stage", choices=["prefill", "decode"])
    load = e.add_mutually_exclusive_group()
    load.add_argument("--batch", type=_positive)
    load.add_argument("--concurrency", type=_positive,
                      help="closed-loop benchmark: N requests always in flight")
    e.add_argument("--input-tokens", type=_positive, default=2048)
    e.add_argument("--output-tokens", type=_positive, default=128)
    e.add_argument("--precision", choices=PRECISIONS, default="bf16")
    e.add_argument("--kv-precision", choices=PRECISIONS)
    e.add_argument("--engine", choices=["vllm", "sglang", "trtllm"],
                   help="use the engine's calibrated parameters (hardware/calibration/)")
    e.add_argument("--routing", default=None, metavar="SPEC",
                   help="MoE routing: balanced, zipf:S, hottest:X (e.g. hottest:7%%) or "
                   "histogram:C1,C2,... (routed tokens per expert)")
    e.add_argument("--placement", choices=["load_balanced", "in_order"], default="load_balanced",
                   help="how experts are placed on expert-parallel ranks (with --routing)")
    e.add_argument("--format", choices=["table", "json"], default="table")

    pl = sub.add_parser("plan", help="plan a problem file: the cheapest (or largest) fleet")
    pl.add_argument("problem", help="problem YAML file, or the name of a shipped problem")
    pl.add_argument("--format", choices=list(PLAN_FORMATS), default="table",
                    help="html: one self-contained report with plots (needs matplotlib: pip "
                    "install 'fleetplan[plot]'); it also plans a small cost-vs-traffic frontier")
    pl.add_argument("--out", help="write the result to this file instead of stdout")
    pl.add_argument("--time-limit", type=_positive_float, default=60.0, help="seconds (default 60)")
    pl.add_argument("--seed", type=int, default=0)
    pl.add_argument("--workers", type=_positive, default=1,
                    help="CP-SAT workers (default 1: deterministic; more may be faster but "
                    "equal-cost plans can then differ between runs)")
    pl.add_argument("--no-record", action="store_true",
                    help="skip the decision record (uncertainty bands, runners-up, fallback, "
                    "validity intervals), which re-solves the problem a few dozen times")
    pl.add_argument("--no-timings", action="store_true",
                    help="leave solver.wall_s null so that the same input and seed give "
                    "byte-identical output")
    pl.add_argument("--solver-log", action="store_true",
                    help="print CP-SAT's search log of every solve on stderr (the plan's, then the "
                    "homogeneous comparison's and the decision record's; stdout stays the document)")
    pl.add_argument("--export-model", metavar="FILE",
                    help="write the CP-SAT model of the plan's main solve (its primary stage, before "
                    "solving) to FILE as CP-SAT's text proto (a CpModelProto)")

    fr = sub.add_parser("frontier", help="cost vs served traffic: the cheapest fleet at each "
                        "traffic level, up to the most the budget, power and supply allow")
    fr.add_argument("problem", help="problem YAML file, or the name of a shipped problem")
    fr.add_argument("--points", type=_positive, default=10, help="traffic levels (default 10)")
    fr.add_argument("--max-scale", type=_positive_float,
                    help="sweep up to this multiple of the demand mix (default: the most traffic "
                    "the problem's limits allow, or 1 when nothing limits it)")
    fr.add_argument("--format", choices=["table", "json"], default="table")
    fr.add_argument("--out-json", help="also write the JSON document to this file")
    fr.add_argument("--plot", "--out-png", dest="plot", metavar="FILE.png",
                    help="draw the frontier (needs matplotlib: pip install 'fleetplan[plot]')")
    _question_solver_args(fr)

    ps = sub.add_parser("price-sweep", help="the prices of one device type at which the chosen "
                        "mix changes (a sweep plus bisection)")
    ps.add_argument("problem", help="problem YAML file, or the name of a shipped problem")
    ps.add_argument("--hardware", required=True, help="the hardware type whose price is swept")
    ps.add_argument("--from", dest="price_from", type=_positive_float,
                    help="lowest price, USD per device-hour (default: half the problem's)")
    ps.add_argument("--to", dest="price_to", type=_positive_float,
                    help="highest price, USD per device-hour (default: twice the problem's)")
    ps.add_argument("--steps", type=_positive, default=10,
                    help="grid intervals (default 10: 11 grid prices)")
    ps.add_argument("--tolerance", type=_positive_float, default=0.001,
                    help="bisect each change to this width, USD per device-hour (default 0.001)")
    ps.add_argument("--max-solves", type=_positive, default=200,
                    help="stop bisecting after this many plans in all (default 200)")
    ps.add_argument("--compare", choices=["devices", "types"],
                    help="a change of mix: another device count of some type (default for "
                    "min_cost) or another set of types used (default for max_throughput)")
    ps.add_argument("--format", choices=["table", "json"], default="table")
    ps.add_argument("--out-json", help="also write the JSON document to this file")
    _question_solver_args(ps)

    b = sub.add_parser("batch", help="plan many problem files (folders, globs) and the variants "
                       "of their sweeps: one result file each and a summary table")
    b.add_argument("paths", nargs="+", metavar="PATH",
                   help="problem files, folders (their *.yaml), globs, or shipped problem names")
    b.add_argument("--out", required=True, metavar="DIR",
                   help="output folder: results/<problem>.json and summary.csv/.json/.parquet")
    where = b.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=_positive, default=1,
                       help="problems planned at once on a local process pool (default 1)")
    where.add_argument("--ray", metavar="ADDRESS",
                       help="plan on a Ray cluster: its address, 'auto' (the running cluster) or "
                       "'local' (start one here); needs pip install 'fleetplan[ray]'")
    b.add_argument("--resume", action="store_true",
                   help="skip problems whose result in DIR was planned from the same inputs "
                   "(problem, cards, calibration, measured tables, solver options)")
    b.add_argument("-r", "--recursive", action="store_true", help="search folders' subfolders too")
    b.add_argument("--pivot", nargs=2, metavar=("ROW", "COL"),
                   help="also write summary.pivot.csv (and print it): one row per value of the "
                   "swept field ROW, one column per value of COL (labels as in the summary's "
                   "sweep.* columns, e.g. h100-sxm.price chat.qps)")
    b.add_argument("--pivot-value", choices=["cost_per_hour", "objective", "total_devices", "power_kw"],
                   default="cost_per_hour", help="the pivot's cells (default cost_per_hour)")
    b.add_argument("--plot", metavar="FILE.png",
                   help="draw cost against a swept field (needs matplotlib: pip install "
                   "'fleetplan[plot]')")
    b.add_argument("--plot-x", metavar="LABEL",
                   help="the swept field on the plot's x axis (default: the first one)")
    shown = b.add_mutually_exclusive_group()
    shown.add_argument("--progress", dest="progress", action="store_true", default=None,
                       help="show progress on stderr even when it is not a terminal")
    shown.add_argument("--no-progress", dest="progress", action="store_false",
                       help="no progress bar (default: a bar when stderr is a terminal)")
    b.add_argument("--quiet", action="store_true", help="print only the counts, not the table")
    b.add_argument("--no-record", action="store_true",
                   help="skip each plan's decision record, as plan --no-record (much faster: "
                   "the record re-solves each problem a few dozen times)")
    _question_solver_args(b)

    ch = sub.add_parser("check", help="validate problem files without solving")
    ch.add_argument("problems", nargs="+")

    v = sub.add_parser("validate", help="predict measured benchmark points and report the error")
    v.add_argument("measured", help="CSV: model, hardware, precision, mode, input_tokens, "
                   "output_tokens, concurrency, tp, pp, ep, dp, ttft_ms, tpot_ms[, engine]")
    v.add_argument("--format", choices=["table", "json", "csv"], default="table")
    v.add_argument("--out", help="write the result to this file instead of stdout")

    c = sub.add_parser("catalog", help="list the shipped cards")
    c.add_argument("kind", nargs="?", choices=["models", "hardware"], default=None)
    c.add_argument("--format", choices=["table", "json"], default="table")

    sc = sub.add_parser("schema", help="the JSON Schema of fleetplan's input and output documents")
    sc.add_argument("name", nargs="?", help="one document (default: list them)")
    sc.add_argument("--out", help="write every schema to this folder as NAME.schema.json")

    profiles_cli.add_parser(sub)
    return p


def _routing(spec: str | None, placement: str):
    from solver.schema.routing import Routing

    if spec is None:
        return None
    try:
        return Routing.from_spec(spec, placement)
    except ValueError as exc:
        raise InputError(f"--routing: {exc}") from None


def _cmd_schema(a: argparse.Namespace) -> int:
    from solver.schema.publish import DOCUMENTS, render

    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        for name in DOCUMENTS:
            (out / f"{name}.schema.json").write_text(render(name))
        print(f"wrote {len(DOCUMENTS)} schemas to {out}")
        return 0
    if a.name is None:
        for name, (_, _, what) in DOCUMENTS.items():
            print(f"{name:<14} {what}")
        return 0
    if a.name not in DOCUMENTS:
        raise InputError(f"schema: unknown document '{a.name}' (one of {', '.join(DOCUMENTS)})")
    sys.stdout.write(render(a.name))
    return 0


def _cmd_estimate(a: argparse.Namespace) -> int:
    from solver.perf.estimate import estimate
    from solver.report.text import estimate_text

    r = estimate(
        shipped.model_card(a.model), shipped.hardware_card(a.hardware),
        tp=a.tp, pp=a.pp, ep=a.ep, dp=a.dp, stage=a.stage, batch=a.batch,
        concurrency=a.concurrency, input_tokens=a.input_tokens, output_tokens=a.output_tokens,
        precision=a.precision, kv_precision=a.kv_precision, engine_name=a.engine,
        routing=_routing(a.routing, a.placement),
    )
    print(r.model_dump_json(indent=2) if a.format == "json" else estimate_text(r))
    return 0


def _cmd_plan(a: argparse.Namespace) -> int:
    from solver.fleet.solve import SolveOptions
    from solver.plan.planner import plan
    from solver.report.plan_views import RENDERERS

    if a.format == "html":
        from solver.report.plots import require_matplotlib

        require_matplotlib("--format html")  # before any solving
    opts = SolveOptions(time_limit_s=a.time_limit, seed=a.seed, workers=a.workers, solver_log=a.solver_log,
                        export_model=Path(a.export_model) if a.export_model else None)
    rp = _load_base(a.problem)
    if a.no_record:
        doc = plan(rp, opts, timings=not a.no_timings)
    else:
        from solver.decision.record import decide

        doc = decide(rp, opts, timings=not a.no_timings)
    if a.format == "html":  # the report's frontier section: a small frontier of the same problem
        from solver.questions.report_frontier import report_frontier
        from solver.report.html import to_html

        text = to_html(doc, report_frontier(rp, doc, opts, timings=not a.no_timings))
    else:
        text = RENDERERS[a.format](doc)
    if a.out:
        _write_atomic(a.out, text)
    else:
        sys.stdout.write(text)
    return 1 if doc.status == "infeasible" else 0


def _load_base(ref: str):
    """A problem for a one-problem command; a `sweep:` is validated and the base problem (the
    file as written) is returned, with a note on stderr (`fleetplan batch` plans the variants)."""
    from solver.problem.load import load_problem
    from solver.problem.sweep import base_problem_note

    rp = load_problem(_problem_path(ref))
    note = base_problem_note(rp)
    if note:
        print(note, file=sys.stderr)
    return rp


def _emit(a: argparse.Namespace, text: str, json_text: str) -> None:
    if a.out_json:
        _write_atomic(a.out_json, json_text, "--out-json")
    sys.stdout.write(text)


def _cmd_frontier(a: argparse.Namespace) -> int:
    from solver.fleet.solve import SolveOptions
    from solver.questions.frontier import MAX_POINTS, any_feasible, frontier
    from solver.report import question_views as views
    from solver.report.plots import frontier_png, require_matplotlib

    if a.points > MAX_POINTS:
        raise InputError(f"--points: at most {MAX_POINTS}, got {a.points}")
    if a.plot:
        require_matplotlib("--plot/--out-png")  # before any solving
    rp = _load_base(a.problem)
    opts = SolveOptions(time_limit_s=a.time_limit, seed=a.seed, workers=a.workers)
    doc = frontier(rp, a.points, a.max_scale, opts, timings=not a.no_timings)
    if a.plot:
        frontier_png(doc, a.plot)
    js = views.to_json(doc)
    _emit(a, js if a.format == "json" else views.frontier_table(doc), js)
    return 0 if any_feasible(doc) else 1


def _cmd_price_sweep(a: argparse.Namespace) -> int:
    from solver.fleet.solve import SolveOptions
    from solver.questions.price import any_feasible, price_sweep
    from solver.report import question_views as views

    rp = _load_base(a.problem)
    opts = SolveOptions(time_limit_s=a.time_limit, seed=a.seed, workers=a.workers)
    doc = price_sweep(rp, a.hardware, a.price_from, a.price_to, a.steps, a.tolerance,
                      a.max_solves, opts, timings=not a.no_timings, compare=a.compare)
    js = views.to_json(doc)
    _emit(a, js if a.format == "json" else views.price_table(doc), js)
    return 0 if any_feasible(doc) else 1


def _cmd_batch(a: argparse.Namespace) -> int:
    from pathlib import Path

    from solver.batch.executors import import_ray
    from solver.batch.runner import BatchOptions, run_batch
    from solver.fleet.solve import SolveOptions
    from solver.report import batch_views as views
    from solver.report.plots import require_matplotlib

    if a.plot:
        require_matplotlib("--plot")  # before anything is planned
    if a.ray:
        import_ray()
    opts = BatchOptions(
        out=Path(a.out), solve=SolveOptions(time_limit_s=a.time_limit, seed=a.seed, workers=a.workers),
        timings=not a.no_timings, record=not a.no_record, jobs=a.jobs, ray=a.ray, resume=a.resume, recursive=a.recursive,
        pivot=tuple(a.pivot) if a.pivot else None, pivot_value=a.pivot_value, plot=a.plot,
        plot_x=a.plot_x,
    )
    summary = run_batch(a.paths, opts, sys.stderr, a.progress)
    if a.pivot and not a.quiet:
        sys.stdout.write(views.pivot_text(summary.rows, *a.pivot, a.pivot_value) + "\n")
    sys.stdout.write(views.summary_text(summary, a.out, a.quiet))
    return summary.exit_code


def _write_atomic(path: str, text: str, flag: str = "--out") -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write: {exc.strerror or exc}") from None


def _cmd_check(a: argparse.Namespace) -> int:
    from solver.problem.load import load_problem
    from solver.problem.sweep import describe, expand

    bad = 0
    for ref in a.problems:
        try:
            rp = load_problem(_problem_path(ref))
            variants = expand(rp)  # validates every value of a sweep
        except InputError as exc:
            bad += 1
            print(f"error: {exc}", file=sys.stderr)
            continue
        sweep = describe(rp, variants)
        print(f"ok: {ref} ({rp.name}: {len(rp.problem.services)} services, "
              f"{len(rp.hardware)} hardware types{'; ' + sweep if sweep else ''})")
    return 2 if bad else 0


def _cmd_validate(a: argparse.Namespace) -> int:
    from solver.accuracy.validate import validate_file
    from solver.report import validation_views as views

    report, original = validate_file(a.measured)
    text = {
        "table": lambda: views.to_table(report),
        "json": lambda: views.to_json(report),
        "csv": lambda: views.to_csv(report, original),
    }[a.format]()
    if a.out:
        _write_atomic(a.out, text)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_catalog(a: argparse.Namespace) -> int:
    from solver.problem.listing import LISTS
    from solver.report.catalog import catalog_json, catalog_text

    lists = {k: LISTS[k]() for k in ([a.kind] if a.kind else ["models", "hardware"])}
    print(catalog_json(lists) if a.format == "json" else catalog_text(lists))
    return 0


COMMANDS = {
    "plan": _cmd_plan,
    "batch": _cmd_batch,
    "check": _cmd_check,
    "frontier": _cmd_frontier,
    "price-sweep": _cmd_price_sweep,
    "estimate": _cmd_estimate,
    "schema": _cmd_schema,
    "validate": _cmd_validate,
    "catalog": _cmd_catalog,
    "profiles": profiles_cli.run,
}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except FleetplanError as exc:
        if os.environ.get("FLEETPLAN_DEBUG"):
            raise
        print(f"error: {exc}" if exc.exit_code != 3 else f"internal error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, exit 3
        if os.environ.get("FLEETPLAN_DEBUG"):
            raise
        print(f"internal error: {type(exc).__name__}: {exc} (set FLEETPLAN_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 3


def run() -> None:
    sys.exit(main())

