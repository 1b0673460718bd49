"""`fleetplan batch`: plan many problem files (and the variants of their sweeps).

1. find the files (`inputs.discover`), load, validate and expand each (`sweep.expand`); a file
   that fails is recorded as `invalid` with its error and the rest go on;
2. with `--resume`, take every problem whose record next to its result carries the same input
   hash (`inputs.input_sha256`) from the earlier run;
3. plan the rest through `work.plan_one` (the `fleetplan plan` flow) in this process, on a
   process pool or on Ray (`executors`), writing each result and its record atomically as it
   finishes (so an interrupted batch resumes where it stopped);
4. write the summary (`summary.json`, `summary.csv`, `summary.parquet` with pyarrow, and the
   pivot and plot when asked for) and return it; `BatchSummary.exit_code` is the command's.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence, TextIO

from solver import __version__, files
from solver.batch import executors
from solver.batch.inputs import discover, file_keys, input_sha256, printable, variant_key
from solver.batch.progress import Progress
from solver.batch.work import Flow, Planned
from solver.errors import InputError
from solver.fleet.solve import SolveOptions
from solver.problem.load import ResolvedProblem, load_problem
from solver.problem.sweep import expand
from solver.report import batch_views as views
from solver.report.plan_views import to_json
from solver.schema.batch import PLANNED, BatchRecord, BatchSummary, Counts, SummaryRow

RESULTS = "results"  # folder of the plan documents inside --out: results/<key>.json
RECORDS = "records"  # folder of their records (input hash, summary row): records/<key>.json


@dataclass(frozen=True)
class BatchOptions:
    out: Path
    solve: SolveOptions = field(default_factory=SolveOptions)
    timings: bool = True
    record: bool = True  # the decision record, as `fleetplan plan` (False: --no-record)
    jobs: int = 1
    force_jobs: bool = False  # more jobs than usable CPUs (else capped at them)
    ray: str | None = None  # a Ray address, "auto", or "local"
    resume: bool = False
    recursive: bool = False
    pivot: tuple[str, str] | None = None  # (row label, column label) -> summary.pivot.csv
    pivot_value: str = "cost_per_hour"
    plot: str | None = None  # PNG of cost vs a swept value
    plot_x: str | None = None

    @property
    def flow(self) -> Flow:
        return Flow(self.solve, self.timings, self.record)


@dataclass
class Job:
    """One problem to plan: a file, or one variant of a file's sweep."""

    index: int
    key: str
    file: Path
    base_problem: str
    name: str
    sweep: tuple[tuple[str, float], ...] = ()
    problem: ResolvedProblem | None = None
    input_sha256: str | None = None
    error: str | None = None  # not planned: failed to load
    load_status: str = "invalid"  # with `error`: invalid (bad input) or error (a bug)


def _load(path: Path, key: str, opts: BatchOptions, first: int) -> list[Job]:
    """The jobs of one file; any failure to load it is that file's row alone: `invalid` for bad
    input (an InputError, a file nested too deeply or too large to load), `error` for a bug."""
    try:
        rp = load_problem(path)
        return [Job(first + i, variant_key(key, v.values), path, rp.name, v.name, v.values, v.problem,
                    input_sha256(v.problem, opts.flow)) for i, v in enumerate(expand(rp))]
    except InputError as exc:
        error, status = str(exc), "invalid"
    except (RecursionError, MemoryError) as exc:
        error, status = f"{path}: cannot load: {type(exc).__name__} (nested too deeply or too large)", "invalid"
    except Exception as exc:  # noqa: BLE001 - a bug in loading this file fails it alone
        error, status = f"internal error: {path}: {type(exc).__name__}: {exc}", "error"
    return [Job(first, key, path, path.stem, path.stem, error=error, load_status=status)]


def prepare(paths: list[Path], opts: BatchOptions) -> list[Job]:
    jobs: list[Job] = []
    for path, key in zip(paths, file_keys(paths)):
        jobs += _load(path, key, opts, len(jobs))
    seen: set[str] = set()
    for job in jobs:  # keys made safe for file names could meet (also where case is ignored)
        base, n = job.key, 1
        while job.key.casefold() in seen:
            n += 1
            job.key = f"{base}~{n}"
        seen.add(job.key.casefold())
    return jobs


def _labels(jobs: list[Job]) -> list[str]:
    out: dict[str, None] = {}
    for j in jobs:
        for label, _ in j.sweep:
            out.setdefault(label)
    return list(out)


def check_views(jobs: list[Job], opts: BatchOptions) -> None:
    """`--pivot` and `--plot-x` must name swept fields of some problem (before planning)."""
    labels = _labels(jobs)
    known = ", ".join(labels) if labels else "none: no problem has a sweep"
    if opts.pivot is not None:
        row, col = opts.pivot
        if row == col:
            raise InputError(f"--pivot: the rows and the columns are the same field '{row}'")
        if not any({row, col} <= {k for k, _ in j.sweep} for j in jobs):
            raise InputError(f"--pivot {row} {col}: no problem sweeps both; swept fields: {known}")
    if opts.plot is not None:
        if not labels:
            raise InputError("--plot draws cost against a swept field, and no problem has a sweep")
        if opts.plot_x is not None and opts.plot_x not in labels:
            raise InputError(f"--plot-x {opts.plot_x}: not a swept field; swept fields: {known}")
    elif opts.plot_x is not None:
        raise InputError("--plot-x needs --plot FILE.png")


def _remove(*paths: Path) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            p.unlink(missing_ok=True)


class _Results:
    """The per-problem files: OUT/results/<key>.json and OUT/records/<key>.json (two folders, so
    that no problem's key can name another's record), written through `solver.files`, never
    over one of the batch's problem files."""

    def __init__(self, out: Path, inputs: list[Path]):
        self.folder = out / RESULTS
        self.records = out / RECORDS
        self.inputs = inputs

    def make(self) -> None:
        files.folder(self.folder)
        files.folder(self.records)

    def write(self, path: Path, text: str) -> None:
        files.write_text(path, text, "--out", self.inputs)

    def result(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def record(self, key: str) -> Path:
        return self.records / f"{key}.json"

    def rel(self, key: str) -> str:
        return f"{RESULTS}/{key}.json"

    def resumable(self, job: Job) -> SummaryRow | None:
        """The earlier row, when its record has this input hash and the result is there."""
        try:
            rec = BatchRecord.model_validate_json(self.record(job.key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if rec.input_sha256 != job.input_sha256 or rec.row.status not in (*PLANNED, "infeasible"):
            return None
        if not self.result(job.key).is_file():
            return None
        return rec.row.model_copy(update={"resumed": True, "file": printable(str(job.file))})


def _base_row(job: Job) -> dict:
    return {"problem": printable(job.name), "base_problem": printable(job.base_problem),
            "file": printable(str(job.file)), "sweep": dict(job.sweep), "input_sha256": job.input_sha256}


def _row(job: Job, out: Planned, results: _Results, timings: bool) -> SummaryRow:
    wall = round(out.wall_s, 3) if timings else None
    if out.version != __version__:
        out = Planned.failed(f"the worker runs fleetplan {out.version}, the driver {__version__}: "
                             "install the same version on every node")
    if out.doc is None:
        return SummaryRow(**_base_row(job), status=out.failure or "error", error=out.message,
                          wall_s=wall)
    d = out.doc
    ok = d.status in PLANNED
    return SummaryRow(
        **_base_row(job), status=d.status,
        objective_kind=d.objective.kind if d.objective else None,
        objective=d.objective.value if d.objective else None,
        cost_per_hour=d.cost_per_hour if ok else None,
        total_devices=d.total_devices if ok else None,
        devices_by_type=dict(d.devices_by_type), power_kw=d.power_kw if ok else None,
        wall_s=wall, result=results.rel(job.key),
        error="; ".join(d.infeasible_because) if d.infeasible_because else None,
    )


def exit_code(rows: list[SummaryRow]) -> int:
    """3 if any problem hit an internal error, else 2 if any was invalid, else 1 if any was
    infeasible, else 0: the worst outcome wins, in the order of `fleetplan plan`'s codes."""
    statuses = {r.status for r in rows}
    for status, code in (("error", 3), ("invalid", 2), ("infeasible", 1)):
        if status in statuses:
            return code
    return 0


def summarise(rows: list[SummaryRow]) -> BatchSummary:
    def n(status: str) -> int:
        return sum(r.status == status for r in rows)

    return BatchSummary(
        version=__version__, exit_code=exit_code(rows),
        counts=Counts(problems=len(rows), optimal=n("optimal"), feasible=n("feasible"),
                      infeasible=n("infeasible"), invalid=n("invalid"), error=n("error"),
                      resumed=sum(r.resumed for r in rows)),
        rows=rows,
    )


def run_batch(refs: list[str], opts: BatchOptions, progress_stream: TextIO | None = sys.stderr,
              progress: bool | None = None) -> BatchSummary:
    paths = discover(refs, opts.recursive)
    if opts.out.exists() and not opts.out.is_dir():
        raise InputError(f"--out {opts.out}: exists and is not a folder")
    with contextlib.ExitStack() as session:
        if opts.ray is not None:  # connect before anything is written
            session.enter_context(executors.ray_session(opts.ray, opts.force_jobs, progress_stream))
        return _run(paths, opts, progress_stream, progress)


def _run(paths: list[Path], opts: BatchOptions, progress_stream: TextIO | None,
         progress: bool | None) -> BatchSummary:
    jobs = prepare(paths, opts)
    check_views(jobs, opts)
    results = _Results(opts.out, paths)
    results.make()

    rows: dict[int, SummaryRow] = {}
    todo: list[Job] = []
    for job in jobs:
        if job.error is not None:
            rows[job.index] = SummaryRow(**_base_row(job), status=job.load_status, error=printable(job.error))
            _remove(results.result(job.key), results.record(job.key))
        elif opts.resume and (row := results.resumable(job)) is not None:
            rows[job.index] = row
        else:
            todo.append(job)

    bar = Progress.for_stream(len(todo), progress_stream, progress) if progress_stream else \
        Progress(len(todo), None, "off")
    by_index = {j.index: j for j in todo}

    def done(index: int, out: Planned) -> None:
        job = by_index[index]
        row = _row(job, out, results, opts.timings)
        if out.doc is not None and row.status != "error":
            results.write(results.result(job.key), to_json(out.doc))
            rec = BatchRecord(version=__version__, input_sha256=job.input_sha256 or "", row=row)
            results.write(results.record(job.key), rec.model_dump_json(indent=2) + "\n")
        else:
            _remove(results.result(job.key), results.record(job.key))
        rows[index] = row
        bar.advance(job.name, row.status)

    tasks = [(j.index, j.problem) for j in todo]
    bar.start()
    try:
        if opts.ray is not None:
            executors.run_ray(tasks, opts.flow, done)
        elif opts.jobs > 1 and len(tasks) > 1:
            executors.run_pool(tasks, opts.jobs, opts.flow, done, opts.force_jobs, progress_stream)
        else:
            executors.run_serial(tasks, opts.flow, done)
    finally:
        bar.close()

    summary = summarise([rows[j.index] for j in jobs])
    write_summary(summary, opts, paths)
    return summary


def write_summary(summary: BatchSummary, opts: BatchOptions, inputs: Sequence[Path] = ()) -> None:
    out = opts.out

    def write(name: str, text: str) -> None:
        files.write_text(out / name, text, "--out", inputs)

    write("summary.json", summary.model_dump_json(indent=2) + "\n")
    write("summary.csv", views.to_csv(summary.rows))
    if views.have_pyarrow():
        with files.replacing(out / "summary.parquet", "--out", inputs) as tmp:
            views.write_parquet(summary.rows, tmp)
    if opts.pivot is not None:
        write("summary.pivot.csv", views.pivot_csv(summary.rows, *opts.pivot, opts.pivot_value))
    if opts.plot is not None:
        views.sweep_png(summary.rows, opts.plot_x, opts.plot)
