"""What a benchmark tool's result file says about one measured load point, tool-neutral.

Each reader (aiperf.py, vllm_bench.py, guidellm.py, mlperf.py) maps its tool's file to
`BenchPoint`s. Latencies are milliseconds; TPOT is the time per output token after the first,
(latency - TTFT) / (output tokens - 1) per request, which is what aiperf's
`inter_token_latency`, vLLM's `tpot`, guidellm's `inter_token_latency_ms` and loadgen's
"time per output token" measure. A field the file does not carry is None.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solver.errors import InputError
from solver.schema.userfile import MAX_RESULT_BYTES, read_user_text

# A result file larger than this is refused (bounded input; aiperf's and vLLM's summaries are
# kilobytes, guidellm's report with per-request samples a few MiB). Our own limit, no tool's.
MAX_FILE_BYTES = MAX_RESULT_BYTES
# time units the tools write, in milliseconds (aiperf's MetricTimeUnit names: ns, us, ms, s)
TIME_UNITS_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1000.0, "sec": 1000.0}
# characters of one number literal (a measured value has a few dozen at most): longer ones are
# refused before int/float conversion (Python refuses integers over 4,300 digits with a
# ValueError of its own, and float() turns 400 digits into inf)
MAX_LITERAL = 64
SHOWN = 60  # characters of a bad value quoted in an error message


@dataclass(frozen=True)
class Stat:
    """One latency's statistics over the measured requests, in milliseconds."""

    mean: float
    p50: float | None
    p99: float | None


@dataclass(frozen=True)
class BenchPoint:
    tool: str  # aiperf | vllm | guidellm | mlperf
    where: str  # which part of the file, e.g. "benchmarks[2]"
    model: str | None  # the model as the tool records it (a HuggingFace id, usually)
    concurrency: int | None  # closed loop: clients
    rate_qps: float | None  # open loop: the requested arrival rate
    input_tokens: float | None  # mean over the measured requests
    output_tokens: float | None
    requests: int | None  # measured requests that finished
    throughput_qps: float | None
    ttft: Stat
    tpot: Stat
    tool_version: str | None = None
    labels: dict[str, str] = field(default_factory=dict)  # user metadata the file carries


def read_user_file(path: str | Path) -> str:
    """A user's result file as text: a regular file of at most MAX_FILE_BYTES, UTF-8."""
    return read_user_text(path, MAX_FILE_BYTES, "result file")


def shown(value: Any) -> str:
    """`value`'s repr for an error message, cut to SHOWN characters."""
    r = repr(value)
    return r if len(r) <= SHOWN else f"{r[:SHOWN]}... ({len(r):,} characters)"


class _LongLiteral(ValueError):
    pass


def _bounded_literal(kind: type):
    def parse(text: str):
        if len(text) > MAX_LITERAL:
            raise _LongLiteral(text)
        return kind(text)
    return parse


def _loads(path: str, text: str, line: int = 1) -> Any:
    try:
        return json.loads(text, parse_int=_bounded_literal(int), parse_float=_bounded_literal(float))
    except _LongLiteral as exc:
        at = line + text.count("\n", 0, max(text.find(exc.args[0]), 0))
        raise InputError(f"{path}:{at}: a number of {len(exc.args[0]):,} characters (at most "
                         f"{MAX_LITERAL})") from None
    except RecursionError:
        raise InputError(f"{path}: not valid JSON: nested too deeply") from None


def load_json(path: str, text: str) -> Any:
    """The JSON document of a result file (JSON lines, as `vllm bench serve --append-result`
    writes them, give a list); a truncated or malformed file names its line, and so does a
    number literal longer than MAX_LITERAL."""
    try:
        return _loads(path, text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise InputError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # an integer over 4,300 digits, nesting too deep
        raise InputError(f"{path}: not valid JSON: {str(exc)[:120]}") from None
    docs = []
    for i, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                docs.append(_loads(path, line, i))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{i}: not valid JSON: {exc.msg} (column {exc.colno})") from None
            except (ValueError, RecursionError) as exc:
                raise InputError(f"{path}:{i}: not valid JSON: {str(exc)[:120]}") from None
    return docs


def line_of(text: str, dotted: str) -> int:
    """The line of a dotted key (`a.b[2].c`) in a JSON text: each key searched after the one
    before it, the deepest one found counts (1 where none is): errors name a line."""
    at, found = 0, -1
    for part in dotted.replace("]", "").split("."):
        name = part.split("[", 1)[0]
        hit = text.find(f'"{name}"', at) if name else -1
        if hit < 0:
            break
        at = found = hit
    return text.count("\n", 0, found) + 1 if found >= 0 else 1


class Fields:
    """Typed access to one JSON object of a result file; errors name file, line and field."""

    def __init__(self, path: str, text: str, obj: Any, where: str):
        if not isinstance(obj, dict):
            raise InputError(f"{path}:1: {where or 'document'}: expected a JSON object")
        self.path, self.text, self.obj, self.where = path, text, obj, where

    def _name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def bad(self, key: str, why: str) -> InputError:
        return InputError(f"{self.path}:{line_of(self.text, self._name(key))}: {self._name(key)}: {why}")

    def get(self, key: str, required: bool = True) -> Any:
        """`key` may be dotted (a path of nested objects)."""
        cur: Any = self.obj
        for part in key.split("."):
            if not isinstance(cur, dict) or cur.get(part) is None:
                if required:
                    raise self.bad(key, "missing (the file is not a complete result of its tool)")
                return None
            cur = cur[part]
        return cur

    def sub(self, key: str) -> "Fields":
        return Fields(self.path, self.text, self.get(key), self._name(key))

    def number(self, key: str, required: bool = True, positive: bool = True) -> float | None:
        v = self.get(key, required)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise self.bad(key, f"expected a finite number (got {v!r})")
        if positive and v <= 0:
            raise self.bad(key, f"must be positive (got {v!r})")
        return float(v)

    def count(self, key: str, required: bool = True) -> int | None:
        v = self.number(key, required)
        if v is None:
            return None
        if v != int(v):
            raise self.bad(key, f"expected a whole number (got {v!r})")
        return int(v)

    def text_value(self, key: str, required: bool = True) -> str | None:
        v = self.get(key, required)
        if v is None:
            return None
        if not isinstance(v, str) or not v.strip():
            raise self.bad(key, f"expected a name (got {v!r})")
        return v.strip()


def labels_of(obj: Any) -> dict[str, str]:
    """String-valued user metadata (hardware=..., tp=...) kept as text."""
    if not isinstance(obj, dict):
        return {}
    return {str(k): str(v) for k, v in obj.items() if isinstance(v, (str, int)) and not isinstance(v, bool)}


# the row fields a user may record in the tool's own metadata (vLLM's --metadata KEY=VALUE,
# guidellm's labels) so that validate finds them in the file
LABEL_KEYS = ("hardware", "precision", "engine", "tp", "pp", "ep", "dp")


def known_labels(obj: Any) -> dict[str, str]:
    return {k: v for k, v in labels_of(obj).items() if k in LABEL_KEYS}
