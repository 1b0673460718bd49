"""aiperf's profile export JSON (`aiperf profile`: artifacts/<run>/profile_export_aiperf.json).

Writer: ai-dynamo/aiperf, release 0.13.0 (PyPI aiperf==0.13.0, the version the integration test
runs): aiperf/exporters/json_exporter.py (`JsonExporter.export`) dumps
aiperf/common/models/export_models.py (`JsonExportData`): one object per metric, named by its
tag, with `unit` and `avg`, `p50`, `p99`, `min`, `max`, `std`, ... in display units
(aiperf/exporters/display_units_utils.py: latencies in "ms"), and `input_config`, the user
configuration as aiperf/config/config.py's `BenchmarkConfig` dumps it (`models.items[].name`;
`phases[]`, aiperf/config/phases.py: the phase of `kind` "profiling" has `type` ("concurrency",
"poisson", "gamma", "constant", ...), `concurrency` and, for rate phases, `rate`), and
`aiperf_version`.
Metrics used: `time_to_first_token`, `inter_token_latency` (per request (latency - TTFT) /
(output tokens - 1): TPOT), `input_sequence_length`, `output_sequence_length` (tokens),
`request_count`, `request_throughput` (requests/sec); `is_complete` false or `was_cancelled` true
(a degraded run) is refused.
"""

from __future__ import annotations

from typing import Any

from solver.accuracy.readers.common import TIME_UNITS_MS, BenchPoint, Fields, Stat, load_json

LATENCIES = ("time_to_first_token", "inter_token_latency")


def looks_like(doc: Any) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("time_to_first_token"), dict)
            and "unit" in doc["time_to_first_token"])


def _stat(f: Fields, metric: str) -> Stat:
    m = f.sub(metric)
    unit = m.text_value("unit")
    if unit not in TIME_UNITS_MS:
        raise m.bad("unit", f"{unit!r} is not a time unit ({', '.join(TIME_UNITS_MS)})")
    scale = TIME_UNITS_MS[unit]
    p50, p99 = m.number("p50", required=False), m.number("p99", required=False)
    return Stat(mean=m.number("avg") * scale,  # type: ignore[operator]
                p50=None if p50 is None else p50 * scale, p99=None if p99 is None else p99 * scale)


def _tokens(f: Fields, metric: str) -> float:
    m = f.sub(metric)
    unit = m.text_value("unit")
    if unit != "tokens":
        raise m.bad("unit", f"expected 'tokens' (got {unit!r})")
    return m.number("avg")  # type: ignore[return-value]


def _model(f: Fields) -> str | None:
    items = f.get("input_config.models.items", required=False)
    if isinstance(items, list) and items and isinstance(items[0], dict) and isinstance(items[0].get("name"), str):
        return items[0]["name"]
    return None


def _load(f: Fields) -> tuple[int | None, float | None]:
    """(concurrency, rate) of the profiling phase (warm-up phases are not measured)."""
    phases = f.get("input_config.phases", required=False)
    for i, ph in enumerate(phases if isinstance(phases, list) else []):
        if isinstance(ph, dict) and ph.get("kind") == "profiling":
            p = Fields(f.path, f.text, ph, f"input_config.phases[{i}]")
            return p.count("concurrency", required=False), p.number("rate", required=False)
    return None, None


def _complete(f: Fields) -> None:
    """A run aiperf marks incomplete (`is_complete` false: it degraded before finishing) or
    cancelled is not a measurement to compare."""
    if f.get("is_complete", required=False) is False:
        why = f.get("incomplete_reason", required=False) or "no reason given"
        raise f.bad("is_complete", f"aiperf marks the run incomplete ({why})")
    if f.get("was_cancelled", required=False) is True:
        raise f.bad("was_cancelled", "the run was cancelled before it finished")


def read(path: str, text: str) -> list[BenchPoint]:
    f = Fields(path, text, load_json(path, text), "")
    _complete(f)
    conc, rate = _load(f)
    return [BenchPoint(
        tool="aiperf", where="document", model=_model(f), concurrency=conc, rate_qps=rate,
        input_tokens=_tokens(f, "input_sequence_length"), output_tokens=_tokens(f, "output_sequence_length"),
        requests=f.count("request_count.avg"), throughput_qps=f.number("request_throughput.avg", required=False),
        ttft=_stat(f, "time_to_first_token"), tpot=_stat(f, "inter_token_latency"),
        tool_version=f.text_value("aiperf_version", required=False),
    )]
