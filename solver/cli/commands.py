"""The `fleetplan` commands: each takes the parsed arguments, calls its step, prints the
rendered document and returns the exit code (`COMMANDS` maps a command's name to it)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from solver import files
from solver.catalog import shipped
from solver.cli import profiles as profiles_cli
from solver.errors import InputError


def _problem_path(ref: str) -> str:
    if os.path.exists(ref) or ref.endswith((".yaml", ".yml")) or "/" in ref:
        return ref
    return str(shipped.resolve("problems", ref))


def _routing(spec: str | None, placement: str):
    from solver.schema.routing import Routing

    if spec is None:
        return None
    try:
        return Routing.from_spec(spec, placement)
    except ValueError as exc:
        raise InputError(f"--routing: {exc}") from None


def _speculative(spec: str | None):
    from solver.schema.speculative import Speculative

    if spec is None:
        return None
    try:
        return Speculative.from_spec(spec)
    except ValueError as exc:
        raise InputError(f"--speculative: {exc}") from None


def _cmd_schema(a: argparse.Namespace) -> int:
    from solver.schema.publish import DOCUMENTS, render

    if a.out:
        out = files.folder(a.out)
        for name in DOCUMENTS:
            files.write_text(out / f"{name}.schema.json", render(name))
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
        tp=a.tp, pp=a.pp, ep=a.ep, dp=a.dp, cp=a.cp, stage=a.stage, batch=a.batch,
        concurrency=a.concurrency, input_tokens=a.input_tokens, output_tokens=a.output_tokens,
        precision=a.precision, kv_precision=a.kv_precision, engine_name=a.engine,
        routing=_routing(a.routing, a.placement), speculative=_speculative(a.speculative),
        prefix_hit_rate=a.prefix_hit_rate, power_cap_w=a.power_cap,
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
    from solver.accuracy.drift import drift_section, replan_inputs

    rp, drift = replan_inputs(_load_base(a.problem), a.current, a.measured)
    if a.no_record:
        doc = plan(rp, opts, timings=not a.no_timings)
    else:
        from solver.decision.record import decide

        doc = decide(rp, opts, timings=not a.no_timings, replay=not a.no_replay,
                     record_seconds=a.record_seconds)
    if drift is not None:
        doc = doc.model_copy(update={"drift": drift_section(a.current, a.measured or [], drift, doc)})
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
    from solver.questions.frontier import any_feasible, frontier
    from solver.report import question_views as views
    from solver.report.plots import frontier_png, require_matplotlib

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
        timings=not a.no_timings, record=not a.no_record, jobs=a.jobs, force_jobs=a.force_jobs, ray=a.ray, resume=a.resume, recursive=a.recursive,
        pivot=tuple(a.pivot) if a.pivot else None, pivot_value=a.pivot_value, plot=a.plot,
        plot_x=a.plot_x,
    )
    summary = run_batch(a.paths, opts, sys.stderr, a.progress)
    if a.pivot and not a.quiet:
        sys.stdout.write(views.pivot_text(summary.rows, *a.pivot, a.pivot_value) + "\n")
    sys.stdout.write(views.summary_text(summary, a.out, a.quiet))
    return summary.exit_code


def _cmd_simulate(a: argparse.Namespace) -> int:
    from solver.fleet.solve import SolveOptions
    from solver.plan.sim_input import is_result_file, plan_to_simulate
    from solver.plan.sim_sources import total_requests
    from solver.plan.simulate import SimulateOptions, check_plan, simulate
    from solver.report import simulate as views

    if a.plot:
        views.require_matplotlib("--plot")  # before any planning
    ref = a.input if is_result_file(a.input) else _problem_path(a.input)
    rp, doc = plan_to_simulate(ref, a.problem, SolveOptions(time_limit_s=a.time_limit, seed=a.seed),
                               timings=not a.no_timings)
    if doc.status == "infeasible":
        print(f"{doc.problem}: infeasible: nothing to simulate ({'; '.join(doc.infeasible_because)})")
        return 1
    check_plan(doc)
    opts = SimulateOptions(rate_scale=a.rate_scale, arrival=a.arrival, requests=a.requests, seed=a.seed,
                           router=a.router)
    bar = views.Progress(total_requests(rp, [s.name for s in doc.services], a.arrival, a.requests), sys.stderr)
    try:
        res = simulate(rp, doc, opts, on_finished=bar.advance, timings=not a.no_timings)
    finally:
        bar.close()
    if a.plot:
        views.simulate_png(res, a.plot)
    text = views.to_json(res) if a.format == "json" else views.simulate_text(res)
    if a.out:
        _write_atomic(a.out, text)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_trace(a: argparse.Namespace) -> int:
    from solver.problem.workload_data import summarize
    from solver.report import trace_views as views

    if a.plot:
        from solver.report.plots import require_matplotlib

        require_matplotlib("--plot")
    doc = summarize(a.file, a.window)
    if a.plot:
        views.trace_png(doc, a.plot)
    return _write_or_print(a.out, views.to_json(doc) if a.format == "json" else views.trace_text(doc))


# the flags that name a file a command writes, and those that name what it reads
OUTPUT_FLAGS = ("out", "out_json", "plot", "export_model")
FOLDER_OUTPUTS = {"batch", "deploy", "schema", "profiles"}  # their --out is a folder
INPUT_FLAGS = ("problem", "problems", "input", "file", "measured", "result", "plan", "card", "paths")


def inputs_of(a: argparse.Namespace) -> list[str]:
    """The files the command reads (as given, and shipped problems by their path)."""
    refs: list[str] = []
    for name in INPUT_FLAGS:
        v = getattr(a, name, None)
        refs += [v] if isinstance(v, str) else [r for r in (v or []) if isinstance(r, str)]
    arrival = getattr(a, "arrival", None)  # simulate --arrival trace:FILE
    if isinstance(arrival, str) and arrival.startswith("trace:"):
        refs.append(arrival.removeprefix("trace:"))
    out = []
    for ref in refs:
        out.append(ref)
        try:
            out.append(_problem_path(ref))
        except InputError:
            pass
    return out


def check_outputs(a: argparse.Namespace) -> None:
    """Before any work: every output file flag names a regular file (or a new one) that is
    none of the command's inputs (solver/files.py)."""
    inputs = inputs_of(a)
    for name in OUTPUT_FLAGS:
        path = getattr(a, name, None)
        if isinstance(path, str) and not (name == "out" and a.command in FOLDER_OUTPUTS):
            files.target(path, "--" + name.replace("_", "-"), inputs)


def _write_atomic(path: str, text: str, flag: str = "--out") -> None:
    files.write_text(path, text, flag)


def _cmd_check(a: argparse.Namespace) -> int:
    from solver.candidates.build import check_grids
    from solver.problem.load import load_problem
    from solver.problem.sweep import describe, expand

    bad = 0
    for ref in a.problems:
        try:
            rp = load_problem(_problem_path(ref))
            variants = expand(rp)  # validates every value of a sweep
            for v in variants:  # the grids `plan` would refuse (solver/candidates/grid.py)
                check_grids(v.problem)
        except InputError as exc:
            bad += 1
            print(f"error: {exc}", file=sys.stderr)
            continue
        sweep = describe(rp, variants)
        print(f"ok: {ref} ({rp.name}: {len(rp.problem.services)} services, "
              f"{len(rp.hardware)} hardware types{'; ' + sweep if sweep else ''})")
    return 2 if bad else 0


def _cmd_validate(a: argparse.Namespace) -> int:
    from solver.accuracy.bench_validate import validate_measured
    from solver.cli.validate_flags import row_fields
    from solver.report import bench_compare_views
    from solver.report import validation_views as views
    from solver.schema.bench_compare import PlanComparison

    report, original = validate_measured(a.measured, a.model, row_fields(a), a.plan, a.pool)
    if isinstance(report, PlanComparison):
        if a.format == "csv":
            raise InputError("validate: --plan prints a table or json, not csv")
        return _write_or_print(a.out, bench_compare_views.to_table(report) if a.format == "table"
                     else bench_compare_views.to_json(report))
    text = {
        "table": lambda: views.to_table(report),
        "json": lambda: views.to_json(report),
        "csv": lambda: views.to_csv(report, original),
    }[a.format]()
    return _write_or_print(a.out, text)


def _write_or_print(out: str | None, text: str) -> int:
    if out:
        _write_atomic(out, text)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_catalog(a: argparse.Namespace) -> int:
    from solver.problem.listing import LISTS
    from solver.report.catalog import catalog_json, catalog_text

    lists = {k: LISTS[k]() for k in ([a.kind] if a.kind else ["models", "hardware"])}
    print(catalog_json(lists) if a.format == "json" else catalog_text(lists))
    return 0


def _cmd_deploy(a: argparse.Namespace) -> int:
    from solver.deploy.facts import load_cards, load_plan, pool_facts
    from solver.deploy.render import files as launch_files
    from solver.deploy.render import write

    plan = load_plan(a.result)
    engine = a.engine or _plan_engine(plan.doc)
    texts = launch_files(plan, pool_facts(plan, load_cards(a.card)), a.target, engine, a.image)
    for path in write(a.out, texts, inputs_of(a)):
        print(path)
    return 0


def _plan_engine(doc) -> str:
    declared = doc.assumptions.engine if doc.assumptions is not None else None
    return declared if declared in ("vllm", "sglang", "trtllm") else "vllm"


def _cmd_canary(a: argparse.Namespace) -> int:
    from solver.deploy.canary import protocol, to_markdown
    from solver.deploy.facts import load_cards, load_plan

    plan = load_plan(a.result)
    return _write_or_print(a.out, to_markdown(protocol(plan, a.tool, a.duration, a.url, load_cards(a.card))))


def _cmd_calibrate(a: argparse.Namespace) -> int:
    from solver.accuracy.user_calibration import calibrate
    from solver.accuracy.user_fit import BOUNDS
    from solver.catalog.calibration import load_calibration
    from solver.report.calibration_views import calibration_text, calibration_yaml

    flags = {"model": a.model_card, "hardware": a.hardware, "precision": a.precision, "tp": a.tp, "pp": a.pp,
             "ep": a.ep, "dp": a.dp, "concurrency": a.concurrency, "input_tokens": a.input_tokens,
             "output_tokens": a.output_tokens}
    r = calibrate(a.measured, a.engine, flags, a.model, a.seed, a.held_out, a.max_evals)
    _write_atomic(a.out, calibration_yaml(r.calibration))
    bounds = {n: (lo, hi) for n, lo, hi in BOUNDS}
    sys.stdout.write(calibration_text(r.calibration, bounds, load_calibration(a.engine), a.out) + "\n")
    return 0


COMMANDS = {
    "plan": _cmd_plan,
    "batch": _cmd_batch,
    "simulate": _cmd_simulate,
    "trace": _cmd_trace,
    "check": _cmd_check,
    "frontier": _cmd_frontier,
    "price-sweep": _cmd_price_sweep,
    "estimate": _cmd_estimate,
    "schema": _cmd_schema,
    "validate": _cmd_validate,
    "catalog": _cmd_catalog,
    "deploy": _cmd_deploy,
    "canary": _cmd_canary,
    "profiles": profiles_cli.run,
    "calibrate": _cmd_calibrate,
}
