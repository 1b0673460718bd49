"""`fleetplan calibrate`'s input: the user's measured files as validate rows of one engine, and
their held-out split.

Every file is read as `fleetplan validate` reads it (a validate CSV, or a benchmark tool's
result file detected from its content, solver/accuracy/bench_validate.py); the flags supply
what a tool's file does not record. Only colocated rows are fitted (the replay and the closed
form of one instance); every row must be the calibrated engine's (a row naming another engine is
an error naming its line; a row naming none is taken to be it).

The split is deterministic: within each group of rows of one hardware card and one model
(sorted by file and line), a seeded permutation (numpy's PCG64, `numpy.random.default_rng(seed)`)
draws round(fraction x n) rows to hold out. It depends on the seed, the groups and the row
counts only, never on a measured value, so no held-out latency can change which rows are fitted.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from solver.accuracy.bench_rows import Known, rows_csv
from solver.accuracy.readers.common import read_user_file
from solver.accuracy.readers.detect import detect, read_points
from solver.accuracy.validate import Row, check_plans, parse_measured
from solver.errors import InputError

# bounds of the input (ours: far above a user's benchmark campaign, low enough to keep a fit's
# CPU time in minutes with the closed form; the replay costs about a second per row and
# evaluation, solver/accuracy/replay_fit.py)
MAX_FILES = 256
MAX_ROWS = 5000
# fewest rows a fit may use: two per fitted parameter (gemm and memory efficiency, step and
# request overhead), and fewest held-out rows for an error to be reported at all
MIN_FIT_ROWS = 8
MIN_HELD_OUT_ROWS = 2


@dataclass
class MeasuredRows:
    """Validate rows of one engine from the user's files, each with the file it came from."""

    rows: list[Row]
    files: list[str]  # per row: the path of its file
    texts: dict[str, str]  # per path: the file's content (its sha256 goes in the calibration)

    def where(self, k: int) -> str:
        return f"{self.files[k]}:{self.rows[k].line}"


def _file_rows(path: str, flags: dict[str, object]) -> tuple[list[Row], str]:
    text = read_user_file(path)
    fmt = detect(path, text)
    if fmt == "csv":
        header = next(csv.reader(io.StringIO(text)), [])
        if "prefill_tp" in header:
            raise InputError(f"{path}:1: disaggregated rows cannot be calibrated on (the fit replays "
                             "one colocated instance per row); give colocated measurements")
        given = {k: v for k, v in flags.items() if v is not None and k != "engine"}
        if given:
            raise InputError(f"{path}: a validate CSV names every field in its columns; "
                             f"{', '.join('--' + k.replace('_', '-') for k in given)} applies to a "
                             "benchmark tool's result file")
        csv_text = text
    else:
        csv_text = rows_csv(path, read_points(path, text, fmt), Known(
            {k: v for k, v in flags.items() if v is not None}, "flags"))
    _, rows = parse_measured(path, csv_text)
    return rows, text


def read_measured(paths: list[str], engine: str, flags: dict[str, object]) -> MeasuredRows:
    """Every row of `paths` (the engine's), checked as validate checks them (InputError names
    the file, line and field)."""
    if not paths:
        raise InputError("calibrate: no measured files given")
    if len(paths) > MAX_FILES:
        raise InputError(f"calibrate: {len(paths)} measured files, more than the {MAX_FILES} allowed")
    rows: list[Row] = []
    files: list[str] = []
    texts: dict[str, str] = {}
    for path in paths:
        if path in texts:
            raise InputError(f"{path}: given twice")
        got, texts[path] = _file_rows(path, {**flags, "engine": engine})
        for r in got:
            if r.engine not in (None, engine):
                raise InputError(f"{path}:{r.line}: engine: the row measured {r.engine}; "
                                 f"calibrate --engine {engine} fits {engine} rows only")
            if r.speculation is not None:
                raise InputError(f"{path}:{r.line}: speculative: a speculating row's TPOT turns on its "
                                 "acceptance rate, not on the engine parameters calibrate fits; "
                                 "calibrate on measurements without speculative decoding")
            r.engine = engine
        check_plans(path, got)
        rows += got
        files += [path] * len(got)
        if len(rows) > MAX_ROWS:
            raise InputError(f"calibrate: more than {MAX_ROWS} measured rows (at {path})")
    return MeasuredRows(rows, files, texts)


def split(m: MeasuredRows, seed: int, fraction: float) -> tuple[list[int], list[int]]:
    """(fitted, held-out) row indices (module docstring); InputError when either side is
    smaller than MIN_FIT_ROWS / MIN_HELD_OUT_ROWS."""
    if not 0.0 < fraction < 1.0:
        raise InputError(f"calibrate: --held-out must be between 0 and 1 (got {fraction})")
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for k, r in enumerate(m.rows):
        groups[(r.hardware, r.model)].append(k)
    rng = np.random.default_rng(seed)
    held: list[int] = []
    for key in sorted(groups):
        idx = sorted(groups[key], key=lambda k: (m.files[k], m.rows[k].line))
        n_held = int(math.floor(fraction * len(idx) + 0.5))
        held += [idx[i] for i in rng.permutation(len(idx))[:n_held]]
    held_set = set(held)
    fitted = [k for k in range(len(m.rows)) if k not in held_set]
    if len(fitted) < MIN_FIT_ROWS or len(held) < MIN_HELD_OUT_ROWS:
        raise InputError(
            f"calibrate: {len(m.rows)} measured rows: {len(fitted)} to fit and {len(held)} held out "
            f"(--held-out {fraction:g}); a fit needs at least {MIN_FIT_ROWS} fitted rows (two per "
            f"parameter) and {MIN_HELD_OUT_ROWS} held-out rows: measure more points")
    return fitted, sorted(held)
