"""Request traces: a CSV (header row, named columns) or JSONL file (one object per line) of
arrival time, prompt tokens and output tokens, optionally a shared-prefix id and its length.

Columns (names matched without regard to case; `columns=` overrides them):

| role | names understood |
|---|---|
| arrival | `timestamp`, `arrival_s`, `arrival_time`, `time_s`, `time` |
| prompt tokens | `prompt_tokens`, `input_tokens`, `ContextTokens`, `input_length`, `prompt_len` |
| output tokens | `output_tokens`, `GeneratedTokens`, `output_length`, `output_len` |
| prefix id (optional) | `prefix_id`, `prefix` |
| prefix tokens (optional) | `prefix_tokens`, `prefix_len` |

So the Azure LLM inference trace (`TIMESTAMP,ContextTokens,GeneratedTokens`, wall-clock
strings such as `2023-11-16 18:15:46.6805900`) loads as it is. A timestamp is a number of
seconds or an ISO 8601 date-time (fractions beyond microseconds are cut; a time without a zone
is read as UTC). Arrivals are relative to the earliest request; rows out of time order are
sorted (stably). `rate_scale` X compresses time (X = 2 replays the trace at twice its rate);
`limit` keeps the first N requests in time. A prefix id is any string (the same string is the
same prefix); a row with a prefix id and no prefix length shares its whole prompt.

Only regular files of at most `MAX_TRACE_BYTES` are read (no FIFOs, devices or endless
files); every bad row is an InputError naming the file, the line and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from solver import files
from solver.errors import InputError
from solver.replay.requests import RequestTable
from solver.replay.sources.open_loop import MAX_REQUESTS, ArrivalSource
from solver.schema.userfile import MAX_DATA_BYTES, read_user_text

MAX_TRACE_BYTES = MAX_DATA_BYTES  # 256 MiB, 256 MiB: ~6 million rows of the Azure format (~37 bytes a row), all held in memory
MAX_TOKENS = 10_000_000  # per request, as the problem file's token counts (solver/schema/problem.py)

ALIASES = {
    "arrival": ("timestamp", "arrival_s", "arrival_time", "time_s", "time"),
    "prompt": ("prompt_tokens", "input_tokens", "contexttokens", "input_length", "prompt_len"),
    "output": ("output_tokens", "generatedtokens", "output_length", "output_len"),
    "prefix_id": ("prefix_id", "prefix"),
    "prefix_tokens": ("prefix_tokens", "prefix_len"),
}
REQUIRED = ("arrival", "prompt", "output")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Trace:
    """A loaded trace: arrays in arrival order, arrivals in seconds from the first request."""

    path: str
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    prefix_id: np.ndarray
    prefix_tokens: np.ndarray
    lines: np.ndarray  # the file line of each request, for messages

    def __len__(self) -> int:
        return len(self.arrival_s)


def _short(raw) -> str:
    """A value as a message shows it: at most 40 characters of it."""
    text = repr(raw)
    return text if len(text) <= 42 else text[:40] + "..."


def read_regular(path: str | Path, limit_bytes: int = MAX_TRACE_BYTES) -> str:
    """The text of a regular file of at most `limit_bytes`; anything else is an InputError
    (solver/schema/userfile.py)."""
    return read_user_text(path, limit_bytes, "trace file")


def parse_time(raw, where: str) -> float | int:
    """Seconds (a float) from a number or numeric string, or whole microseconds since the epoch
    (an int, exact) from an ISO 8601 date-time string."""
    if isinstance(raw, bool):
        raise InputError(f"{where}: expected seconds or an ISO date-time (got {_short(raw)})")
    if isinstance(raw, (int, float)):
        value = float(raw)
    else:
        text = str(raw).strip()
        try:
            value = float(text)
        except ValueError:
            return _iso_microseconds(text, where)
    if not math.isfinite(value) or abs(value) > 1e12:
        raise InputError(f"{where}: expected a finite time under 1e12 s (got {_short(raw)})")
    return value


def _iso_microseconds(text: str, where: str) -> int:
    head, dot, frac = text.partition(".")
    if dot:  # Python reads at most 6 fraction digits: keep them, and any zone after the digits
        digits = len(frac) - len(frac.lstrip("0123456789"))
        text = f"{head}.{frac[:min(digits, 6)]}{frac[digits:]}" if digits else text
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{where}: expected seconds or an ISO date-time (got {text!r})") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return (dt - EPOCH) // timedelta(microseconds=1)


def parse_tokens(raw, where: str, minimum: int) -> int:
    """A whole number of tokens in [minimum, MAX_TOKENS]."""
    if isinstance(raw, bool):
        raise InputError(f"{where}: expected a whole number of tokens (got {_short(raw)})")
    try:
        value = float(str(raw).strip()) if not isinstance(raw, (int, float)) else float(raw)
    except ValueError:
        raise InputError(f"{where}: expected a whole number of tokens (got {_short(raw)})") from None
    if not math.isfinite(value) or value != int(value) or not minimum <= value <= MAX_TOKENS:
        raise InputError(f"{where}: expected a whole number of tokens in {minimum}..{MAX_TOKENS:,} (got {_short(raw)})")
    return int(value)


def _columns(names: list[str], path: str, given: dict[str, str] | None) -> dict[str, str]:
    lower = {n.strip().lower(): n for n in names}
    found: dict[str, str] = {}
    for role, aliases in ALIASES.items():
        want = (given or {}).get(role)
        if want is not None:
            if want.lower() not in lower:
                raise InputError(f"{path}:1: column '{want}' (for {role}) not in the header")
            found[role] = lower[want.lower()]
            continue
        hit = next((lower[a] for a in aliases if a in lower), None)
        if hit is not None:
            found[role] = hit
    missing = [r for r in REQUIRED if r not in found]
    if missing:
        raise InputError(f"{path}:1: no column for {', '.join(missing)} (names understood: "
                         + "; ".join(f"{r}: {', '.join(ALIASES[r])}" for r in missing) + ")")
    return found


def _records(text: str, path: str, jsonl: bool):
    """(line number, mapping) per data row."""
    if jsonl:
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError) as exc:  # ValueError: also an integer over 4,300 digits
                raise InputError(f"{path}:{i}: not a JSON object ({getattr(exc, 'msg', exc)})") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{i}: expected a JSON object per line (got {type(obj).__name__})")
            yield i, obj
        return
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"{path}: empty trace") from None
    except csv.Error as exc:
        raise InputError(f"{path}:1: {exc}") from None
    yield 1, header
    try:
        for row in reader:
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise InputError(f"{path}:{reader.line_num}: {len(row)} values for {len(header)} columns")
            yield reader.line_num, dict(zip(header, row))
    except csv.Error as exc:
        raise InputError(f"{path}:{reader.line_num}: {exc}") from None


def load_trace(path: str | Path, rate_scale: float = 1.0, limit: int | None = None,
               columns: dict[str, str] | None = None) -> Trace:
    """Read a trace file (see the module docstring)."""
    p = str(path)
    if not (math.isfinite(rate_scale) and 0 < rate_scale <= 1e6):
        raise InputError(f"rate scale must be a number in (0, 1e6] (got {rate_scale})")
    if limit is not None and (isinstance(limit, bool) or int(limit) != limit or not 1 <= limit <= MAX_REQUESTS):
        raise InputError(f"request limit must be a whole number in 1..{MAX_REQUESTS:,} (got {limit})")
    text = read_regular(p)
    jsonl = p.lower().endswith((".jsonl", ".json", ".ndjson")) or text.lstrip().startswith("{")
    rows = _records(text, p, jsonl)
    cols = None if jsonl else _columns(next(rows)[1], p, columns)
    if cols is not None and "prefix_id" not in cols:
        return _csv(p, rows, cols, rate_scale, limit)
    out: list[tuple] = []
    for line, rec in rows:
        if jsonl and cols is None:
            cols = _columns(list(rec), p, columns)
        out.append(_row(rec, cols, f"{p}:{line}", line))  # type: ignore[arg-type]
        if len(out) > MAX_REQUESTS:
            raise InputError(f"{p}: more than {MAX_REQUESTS:,} requests")
    if not out:
        raise InputError(f"{p}: no requests in the trace")
    return _assemble(p, out, rate_scale, limit)


NAIVE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?")


def _csv(path: str, rows, cols: dict[str, str], rate_scale: float, limit: int | None) -> Trace:
    """A CSV without prefix columns, converted a column at a time (a million rows in seconds);
    any value the fast conversion does not take goes through the row-by-row path, which reads
    what is valid and names the first line that is not."""
    names = [cols[r] for r in REQUIRED]
    raw: list[list[str]] = [[], [], []]
    lines: list[int] = []
    for line, rec in rows:
        for col, name in zip(raw, names):
            col.append(rec[name])
        lines.append(line)
        if len(lines) > MAX_REQUESTS:
            raise InputError(f"{path}: more than {MAX_REQUESTS:,} requests")
    fast = _fast(raw)
    if fast is None:
        out = [_row(dict(zip(names, vals)), cols, f"{path}:{line}", line) for *vals, line in zip(*raw, lines)]
        if not out:
            raise InputError(f"{path}: no requests in the trace")
        return _assemble(path, out, rate_scale, limit)
    t, prompt, output, iso = fast
    order = np.argsort(t, kind="stable")[: None if limit is None else int(limit)]
    rel = t[order] - t[order[0]]
    zeros = np.zeros(len(order), dtype=np.int64)
    return Trace(path, (rel / 1e6 if iso else rel) / rate_scale, prompt[order], output[order], zeros - 1, zeros,
                 np.asarray(lines, dtype=np.int64)[order])


def _fast(raw: list[list[str]]):
    """(times, prompt, output, iso) when every value converts cleanly, else None."""
    if not raw[0]:
        return None
    try:
        tokens = [np.array(c).astype(np.float64) for c in raw[1:]]
    except ValueError:
        return None
    if not all(np.isfinite(x).all() and (x == np.floor(x)).all() and x.min() >= 1 and x.max() <= MAX_TOKENS
               for x in tokens):
        return None
    try:
        t = np.array(raw[0]).astype(np.float64)
        iso = False
        if not (np.isfinite(t).all() and np.abs(t).max() <= 1e12):
            return None
    except ValueError:
        if not all(NAIVE_TIME.fullmatch(v.strip()) for v in raw[0]):
            return None  # zones, other forms or errors: the row-by-row path
        t = np.array([v.strip() for v in raw[0]], dtype="datetime64[us]").astype(np.int64)
        iso = True
    return t, tokens[0].astype(np.int64), tokens[1].astype(np.int64), iso


def _row(rec: dict, cols: dict[str, str], where: str, line: int) -> tuple:
    def field(role: str):
        name = cols[role]
        if name not in rec or rec[name] is None or (isinstance(rec[name], str) and not rec[name].strip()):
            raise InputError(f"{where}: {name}: missing value")
        return name, rec[name]

    name, raw = field("arrival")
    t = parse_time(raw, f"{where}: {name}")
    name, raw = field("prompt")
    prompt = parse_tokens(raw, f"{where}: {name}", 1)
    name, raw = field("output")
    output = parse_tokens(raw, f"{where}: {name}", 1)
    pid, ptok = None, 0
    if "prefix_id" in cols and str(rec.get(cols["prefix_id"], "") or "").strip():
        pid = str(rec[cols["prefix_id"]]).strip()
        ptok = prompt
        if "prefix_tokens" in cols and str(rec.get(cols["prefix_tokens"], "") or "").strip():
            ptok = parse_tokens(rec[cols["prefix_tokens"]], f"{where}: {cols['prefix_tokens']}", 0)
            if ptok > prompt:
                raise InputError(f"{where}: {cols['prefix_tokens']}: prefix of {ptok} tokens is longer "
                                 f"than the prompt ({prompt})")
    return t, prompt, output, pid, ptok, line


def _assemble(path: str, rows: list[tuple], rate_scale: float, limit: int | None) -> Trace:
    iso = [isinstance(r[0], int) for r in rows]
    if any(iso) and not all(iso):
        odd = rows[iso.index(not iso[0])]
        raise InputError(f"{path}:{odd[5]}: arrival: mixes seconds and date-times with line {rows[0][5]}")
    # date-times as exact whole microseconds until made relative: float seconds since 1970
    # would keep only ~0.2 us (2^-22 s) of a 1.7e9 s time
    t = np.array([r[0] for r in rows], dtype=np.int64 if iso[0] else float)
    order = np.argsort(t, kind="stable")
    if limit is not None:
        order = order[: int(limit)]
    names: dict[str, int] = {}
    pid = np.array([-1 if rows[i][3] is None else names.setdefault(rows[i][3], len(names)) for i in order],
                   dtype=np.int64)
    rel = t[order] - t[order[0]]
    arrival = (rel / 1e6 if iso[0] else rel) / rate_scale
    return Trace(path, arrival,
                 np.array([rows[i][1] for i in order], dtype=np.int64),
                 np.array([rows[i][2] for i in order], dtype=np.int64),
                 pid,
                 np.array([rows[i][4] for i in order], dtype=np.int64),
                 np.array([rows[i][5] for i in order], dtype=np.int64))


def trace_source(path: str | Path, rate_scale: float = 1.0, limit: int | None = None,
                 table: RequestTable | None = None, columns: dict[str, str] | None = None) -> ArrivalSource:
    """An open-loop source replaying a trace file (see `load_trace`)."""
    tr = load_trace(path, rate_scale, limit, columns)
    label = f"trace {Path(path).name} ({len(tr)} requests" + (f", rate x{rate_scale:g})" if rate_scale != 1 else ")")
    return ArrivalSource(tr.arrival_s, tr.prompt_tokens, tr.output_tokens, tr.prefix_id, tr.prefix_tokens,
                         table=table, label=label)


def write_trace(path: str | Path, arrival_s, prompt_tokens, output_tokens, prefix_id=None) -> None:
    """Write a CSV trace that `load_trace` reads back exactly (times as repr'd floats)."""
    header = ["arrival_s", "prompt_tokens", "output_tokens"] + (["prefix_id"] if prefix_id is not None else [])
    fh = io.StringIO(newline="")
    w = csv.writer(fh)
    w.writerow(header)
    for i in range(len(arrival_s)):
        row = [repr(float(arrival_s[i])), int(prompt_tokens[i]), int(output_tokens[i])]
        if prefix_id is not None:
            row.append("" if prefix_id[i] is None or prefix_id[i] == -1 else str(prefix_id[i]))
        w.writerow(row)
    files.write_text(path, fh.getvalue(), "--out")
