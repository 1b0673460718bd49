"""MLPerf inference loadgen's `mlperf_log_summary.txt` (LLM benchmarks with token latencies).

Writer: mlcommons/inference, tag v5.1.1 (commit 6776245e99dce0600cfc9a6fb61efd310f87de3d),
loadgen/results.cc (`PerformanceSummary::LogSummary`: "key : value" lines; "Scenario : Server"
or "SingleStream"; with `use_token_latencies` the "Mean First Token latency (ns)" and
"Mean Time per Output Token (ns)" lines and one "<P> percentile first token latency (ns)" and
"<P> percentile time to output token (ns)" line per percentile in results.h (50, 90, 95, 97,
99, 99.9), P printed by `DoubleToString` with two decimals: "50.00", "99.00"; "Completed samples
per second" for Server) and loadgen/test_settings_internal.cc (`TestSettingsInternal::
LogSummary`: "target_qps : ..."). Loadgen's times are nanoseconds. The summary names no
model, lengths or concurrency: validate takes them from the plan or the flags. Offline runs
print no token latencies and cannot be compared.
"""

from __future__ import annotations

import math
import re

from solver.accuracy.readers.common import MAX_LITERAL, BenchPoint, Stat, shown
from solver.errors import InputError

HEADER = "MLPerf Results Summary"  # loadgen/results.cc LogSummary's banner
NS_TO_MS = 1e-6


def looks_like(text: str) -> bool:
    return HEADER in text[:2000]


def _entries(text: str) -> dict[str, tuple[int, str]]:
    """key (spaces collapsed) -> (line, value) of every "key : value" line; first one wins."""
    out: dict[str, tuple[int, str]] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        if ":" not in line:
            continue
        key, value = line.split(":", 1)
        key = re.sub(r"\s+", " ", key).strip()
        out.setdefault(key, (i, value.strip()))
    return out


def _number(path: str, e: dict, key: str, required: bool = True) -> float | None:
    if key not in e:
        if required:
            raise InputError(f"{path}: '{key}': missing (a Server or SingleStream run with token latencies "
                             "prints it)")
        return None
    line, raw = e[key]
    try:
        if len(raw) > MAX_LITERAL:
            raise ValueError(raw)
        v = float(raw)
    except ValueError:
        raise InputError(f"{path}:{line}: '{key}': expected a number of at most {MAX_LITERAL} characters "
                         f"(got {shown(raw)})") from None
    if not math.isfinite(v) or v <= 0:
        raise InputError(f"{path}:{line}: '{key}': must be a positive finite number (got {shown(raw)})")
    return v


def _stat(path: str, e: dict, mean_key: str, pct_key: str) -> Stat:
    ms = lambda k, req=True: (None if (v := _number(path, e, k, req)) is None else v * NS_TO_MS)  # noqa: E731
    return Stat(mean=ms(mean_key), p50=ms(f"50.00 {pct_key}", False),  # type: ignore[arg-type]
                p99=ms(f"99.00 {pct_key}", False))


def read(path: str, text: str) -> list[BenchPoint]:
    e = _entries(text)
    scenario = e.get("Scenario", (1, ""))[1]
    if scenario not in ("Server", "SingleStream"):
        line = e.get("Scenario", (1, ""))[0]
        raise InputError(f"{path}:{line}: Scenario: {scenario or 'missing'}: only Server and SingleStream "
                         "runs report the token latencies a plan predicts")
    if e.get("Mode", (1, ""))[1] != "PerformanceOnly":
        raise InputError(f"{path}:{e.get('Mode', (1, ''))[0]}: Mode: expected PerformanceOnly (an accuracy "
                         "run measures no latency)")
    server = scenario == "Server"
    return [BenchPoint(
        tool="mlperf", where=f"{scenario} scenario", model=None,
        concurrency=None if server else 1,
        rate_qps=_number(path, e, "target_qps") if server else None,
        input_tokens=None, output_tokens=None, requests=None,
        throughput_qps=_number(path, e, "Completed samples per second", required=False),
        ttft=_stat(path, e, "Mean First Token latency (ns)", "percentile first token latency (ns)"),
        tpot=_stat(path, e, "Mean Time per Output Token (ns)", "percentile time to output token (ns)"),
    )]
