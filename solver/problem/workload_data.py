"""A workload from data: a request trace (`workload: {trace: FILE}`) or a length distribution
(`workload: {lengths: FILE}`) made into the figures the planner reads (docs/trace.md).

- lengths: the histogram of prompt and output tokens (one bin per distinct count, weighted by
  requests or by share), so the performance model reads their mean and p99 (`TokenDist`) and
  the replay draws from them;
- burstiness: the coefficient of variation of the inter-arrival gaps inside each window of
  `window_s` (default 60 s); the planner's `arrival_cv` is sqrt(sum_w m_w cv_w^2 / sum_w m_w)
  over windows w with m_w gaps (the queueing terms scale with ca^2, solver/perf/runtime.py
  `queue_wait`). The window keeps the slow drift of the rate (a daily cycle) out of the
  burstiness: that is demand over time, not arrival noise;
- rate: qps = (requests - 1) / (last arrival - first arrival), 1 / the mean gap;
- the trace itself: `fleetplan simulate` replays it (solver/plan/sim_sources.py).

Fields the problem gives (qps, input_tokens, output_tokens, arrival_cv) override the data's.
A file name resolves against the problem file's folder, then the working directory; a bare
name (no `/`, no suffix) is a shipped trace (`traces/NAME.csv`).

A length-distribution file is a CSV `field,tokens,share` (field `input_tokens` or
`output_tokens`, tokens a whole count >= 0, share >= 0; each field's shares need not sum to 1; a
bin of 0 tokens counts as 1: a request takes at least one token, as an engine emits the first).
"""

from __future__ import annotations

import csv
import io
import math
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from solver.catalog import shipped
from solver.errors import InputError
from solver.replay.sources.trace import load_trace, parse_tokens, read_regular
from solver.schema.problem import TokenDist, Workload
from solver.schema.suggest import unknown_name
from solver.schema.trace import LengthStats, TraceSummary, TraceWindow
from solver.schema.userfile import read_user_bytes

DEFAULT_WINDOW_S = 60.0  # one minute: many gaps per window at the Azure traces' 2.6-5.5 req/s
MAX_WINDOWS = 1_000_000  # windows a summary holds (a week at 1 s windows is 604,800)
MAX_LENGTHS_BYTES = 64 << 20  # 64 MiB: over a million bins of `field,tokens,share` (~30 bytes a row)
MAX_SHARE = 1e12  # a row's share (a request count or a fraction); a field's sum stays within TokenDist's weights
FIELDS = ("input_tokens", "output_tokens")
_SUFFIXES = (".csv", ".jsonl", ".json", ".ndjson")


def data_path(ref: str, base: Path | None) -> Path:
    """The file a problem's `trace:` / `lengths:` names (see the module docstring)."""
    if "/" not in ref and not ref.lower().endswith(_SUFFIXES) and not ref.startswith("."):
        p = shipped.data_dir("traces") / f"{ref}.csv"
        if not p.is_file():
            known = [q.stem for q in shipped.data_dir("traces").glob("*.csv")]
            text = unknown_name("trace", ref, known, "`fleetplan catalog`")
            raise InputError(f"{text} (or give a path to a file)")
        return p
    p = Path(ref)
    if base is not None and not p.is_absolute() and (base / p).exists():
        p = base / p
    return p


def length_stats(tokens: np.ndarray, weights: np.ndarray) -> LengthStats:
    """Mean and inverse-CDF percentiles of a weighted set of token counts."""
    order = np.argsort(tokens, kind="stable")
    t, w = np.asarray(tokens, dtype=float)[order], np.asarray(weights, dtype=float)[order]
    cum = np.cumsum(w) / w.sum()

    def q(p: float) -> float:  # smallest count whose cumulative share reaches p (TokenDist.p99_tokens)
        return float(t[min(int(np.searchsorted(cum, p - 1e-12)), len(t) - 1)])

    return LengthStats(mean_tokens=float(np.dot(t, w) / w.sum()), p50_tokens=q(0.5), p90_tokens=q(0.9),
                       p99_tokens=q(0.99), max_tokens=float(t[-1]), distinct_values=len(np.unique(t)))


def _histogram(tokens: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(distinct counts, summed weight) of a set of counts."""
    values, inverse = np.unique(np.asarray(tokens), return_inverse=True)
    w = np.ones(len(inverse)) if weights is None else np.asarray(weights, dtype=float)
    return values.astype(float), np.bincount(inverse, weights=w, minlength=len(values))


def _windows(arrival: np.ndarray, window_s: float, where: str):
    """Per window: start, length, requests, gap count, gap CV (NaN under 2 gaps or a zero mean)."""
    duration = float(arrival[-1] - arrival[0])
    n_win = max(1, math.ceil(duration / window_s))
    if n_win > MAX_WINDOWS:
        raise InputError(f"{where}: window of {window_s:g} s cuts {duration:,.0f} s into more than "
                         f"{MAX_WINDOWS:,} windows; give a longer window")
    k = np.minimum(np.floor((arrival - arrival[0]) / window_s).astype(np.int64), n_win - 1)
    starts = np.arange(n_win) * window_s
    lengths = np.minimum(window_s, duration - starts)
    counts = np.bincount(k, minlength=n_win)
    gaps = np.diff(arrival)
    inside = k[1:] == k[:-1]  # both ends of the gap in the same window
    kw = k[1:][inside]
    m = np.bincount(kw, minlength=n_win).astype(float)
    s1 = np.bincount(kw, weights=gaps[inside], minlength=n_win)
    s2 = np.bincount(kw, weights=gaps[inside] ** 2, minlength=n_win)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / m
        var = np.maximum(s2 / m - mean**2, 0.0)
        cv = np.where((m >= 2) & (mean > 0), np.sqrt(var) / mean, np.nan)
    return starts, lengths, counts, m, cv


def trace_summary(path: str, arrival: np.ndarray, prompt: np.ndarray, output: np.ndarray,
                  window_s: float = DEFAULT_WINDOW_S) -> TraceSummary:
    """The summary of a trace's arrays (arrivals in time order, seconds); see the module docstring."""
    if not (math.isfinite(window_s) and 0 < window_s <= 86_400 * 366):
        raise InputError(f"{path}: window must be a positive number of seconds up to a year (got {window_s})")
    duration = float(arrival[-1] - arrival[0]) if len(arrival) else 0.0
    if len(arrival) < 2 or duration <= 0:
        raise InputError(f"{path}: a trace needs at least two requests at different times "
                         f"(got {len(arrival)} over {duration:g} s)")
    starts, lengths, counts, m, cv = _windows(arrival, window_s, path)
    gaps = np.diff(arrival)
    ok = np.isfinite(cv)
    overall = float(gaps.std() / gaps.mean())
    arrival_cv = float(np.sqrt(np.dot(m[ok], cv[ok] ** 2) / m[ok].sum())) if ok.any() else overall
    rates = counts / np.maximum(lengths, 1e-12)
    windows = [TraceWindow(start_s=float(s), length_s=float(ln), requests=int(c), rate_qps=float(r),
                           interarrival_cv=float(v) if math.isfinite(v) else None)
               for s, ln, c, r, v in zip(starts, lengths, counts, rates, cv)]
    return TraceSummary(
        file=path, kind="trace", requests=len(arrival), duration_s=duration,
        mean_rate_qps=(len(arrival) - 1) / duration, peak_rate_qps=float(rates.max()), window_s=window_s,
        interarrival_cv=overall, arrival_cv=arrival_cv,
        input_tokens=length_stats(*_histogram(prompt)), output_tokens=length_stats(*_histogram(output)),
        windows=windows)


def _lengths_rows(text: str, path: str):
    """(field, tokens, share, line) per data row of a length-distribution CSV."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise InputError(f"{path}: empty length-distribution file") from None
    except csv.Error as exc:
        raise InputError(f"{path}:1: {exc}") from None
    missing = [c for c in ("field", "tokens", "share") if c not in header]
    if missing:
        raise InputError(f"{path}:1: no column {', '.join(missing)} (a length distribution has the "
                         "columns field,tokens,share)")
    idx = [header.index(c) for c in ("field", "tokens", "share")]
    try:
        for row in reader:
            if not row or all(not c.strip() for c in row):
                continue
            where = f"{path}:{reader.line_num}"
            if len(row) != len(header):
                raise InputError(f"{where}: {len(row)} values for {len(header)} columns")
            field, tokens, share = (row[i].strip() for i in idx)
            yield field, tokens, share, where
    except csv.Error as exc:
        raise InputError(f"{path}:{reader.line_num}: {exc}") from None


def read_lengths(path: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per field, (distinct token counts, summed share) of a length-distribution CSV."""
    rows: dict[str, tuple[list[int], list[float]]] = {f: ([], []) for f in FIELDS}
    for field, tokens, share, where in _lengths_rows(read_regular(path, MAX_LENGTHS_BYTES), path):
        if field not in rows:
            raise InputError(f"{where}: field: expected one of {', '.join(FIELDS)} (got {field!r})")
        t = max(parse_tokens(tokens, f"{where}: tokens", 0), 1)  # 0 tokens: a request still takes one
        try:
            w = float(share)
        except ValueError:
            w = math.nan
        if not (math.isfinite(w) and 0 <= w <= MAX_SHARE):
            raise InputError(f"{where}: share: expected a finite number >= 0 and at most {MAX_SHARE:g} (got {share[:40]!r})")
        rows[field][0].append(t)
        rows[field][1].append(w)
    out = {}
    for f, (t, w) in rows.items():
        if not t or sum(w) <= 0:
            raise InputError(f"{path}: field: no {f} rows with a positive share")
        values, weights = _histogram(np.array(t), np.array(w))
        keep = weights > 0
        out[f] = values[keep], weights[keep]
    return out


def is_lengths_file(path: str) -> bool:
    """Whether a CSV's header is a length distribution's (a `field` column: field, tokens, share)."""
    try:
        head = read_user_bytes(path, MAX_LENGTHS_BYTES, "length-distribution file", head=4096)
    except InputError:
        return False  # the reader names what is wrong with the file
    head = head.decode("utf-8-sig", errors="replace").splitlines()[0] if head.strip() else ""
    return "field" in {h.strip().lower() for h in head.split(",")}


def lengths_summary(path: str) -> TraceSummary:
    h = read_lengths(path)
    return TraceSummary(file=path, kind="lengths", requests=None, duration_s=None, mean_rate_qps=None,
                        peak_rate_qps=None, window_s=None, interarrival_cv=None, arrival_cv=None,
                        input_tokens=length_stats(*h["input_tokens"]), output_tokens=length_stats(*h["output_tokens"]))


@lru_cache(maxsize=32)
def _trace_data(path: str, stamp: tuple[int, int], window_s: float):
    """(summary, input histogram, output histogram) of a trace file; `stamp` (mtime, size) keys the cache."""
    tr = load_trace(path)
    summary = trace_summary(path, tr.arrival_s, tr.prompt_tokens, tr.output_tokens, window_s)
    return summary, _histogram(tr.prompt_tokens), _histogram(tr.output_tokens)


@lru_cache(maxsize=32)
def _lengths_data(path: str, stamp: tuple[int, int]):
    return read_lengths(path)


def _stamp(p: Path) -> tuple[int, int]:
    try:
        st = os.stat(p)
    except OSError:
        return (0, 0)  # the reader reports the missing file
    return (st.st_mtime_ns, st.st_size)


def summarize(ref: str, window_s: float = DEFAULT_WINDOW_S, base: Path | None = None) -> TraceSummary:
    """The summary of a trace or length-distribution file (`fleetplan trace FILE`)."""
    p = data_path(ref, base)
    if p.suffix.lower() == ".csv" and is_lengths_file(str(p)):
        return lengths_summary(str(p))
    return _trace_data(str(p), _stamp(p), float(window_s))[0]


def _dist(values: np.ndarray, weights: np.ndarray) -> TokenDist:
    return TokenDist(histogram=[(float(t), float(w)) for t, w in zip(values, weights)])


def fill_workload(wl: Workload, base: Path | None) -> Workload:
    """The workload with the fields its data file gives filled in (the given ones kept; the file's
    name stays as written, so that a problem's document does not depend on where it lies); a
    workload without data comes back as it is."""
    if not wl.from_data:
        return wl
    ref = wl.trace if wl.trace is not None else wl.lengths
    p = data_path(ref, base).resolve()  # type: ignore[arg-type]
    upd: dict = {}
    if wl.trace is not None:
        summary, h_in, h_out = _trace_data(str(p), _stamp(p), float(wl.window_s or DEFAULT_WINDOW_S))
        upd.update(qps=wl.qps or summary.mean_rate_qps, arrival_cv=wl.arrival_cv or summary.arrival_cv)
    else:
        hist = _lengths_data(str(p), _stamp(p))
        h_in, h_out = hist["input_tokens"], hist["output_tokens"]
    upd["input_tokens"] = wl.input_tokens or _dist(*h_in)
    upd["output_tokens"] = wl.output_tokens or _dist(*h_out)
    return wl.model_copy(update=upd)
