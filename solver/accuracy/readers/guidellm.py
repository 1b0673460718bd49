"""guidellm's benchmark report (`guidellm benchmark --outputs json`, benchmarks.json).

Writer: vllm-project/guidellm, tag v0.7.3 (commit 39383552962841086d05e25c37b58a83ef06c758):
src/guidellm/benchmark/schemas/report.py (`GenerativeBenchmarksReport`: `metadata.version` 2,
`metadata.guidellm_version`, `config` (the scenario: `config.spec.backend.model`,
`config.metadata.labels`), `benchmarks`), src/guidellm/benchmark/schemas/benchmark.py (each
benchmark: `config.strategy`, `metrics`), src/guidellm/benchmark/schemas/metrics.py
(`GenerativeMetrics`: `time_to_first_token_ms`, `inter_token_latency_ms`, `prompt_token_count`,
`output_token_count`, `requests_per_second`, `request_totals`), src/guidellm/schemas/statistics.py
(`StatusDistributionSummary`: `successful`/`incomplete`/`errored`/`total`, each with `mean`,
`median`, `percentiles.p50`/`p99`) and src/guidellm/scheduler/strategies.py (`type_`:
synchronous, concurrent (`streams`), throughput, constant and poisson (`rate`)).
TPOT is `inter_token_latency_ms` (after the first token, src/guidellm/schemas/request_stats.py);
guidellm's `time_per_output_token_ms` includes the first token and is not used. Statistics are
those of the successful requests. One report holds one benchmark per swept rate: one point each.
"""

from __future__ import annotations

from typing import Any

from solver.accuracy.readers.common import BenchPoint, Fields, Stat, known_labels, load_json


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list) and "metadata" in doc


def _stat(m: Fields, metric: str) -> Stat:
    s = m.sub(f"{metric}.successful")
    return Stat(mean=s.number("mean"), p50=s.number("percentiles.p50", required=False),  # type: ignore[arg-type]
                p99=s.number("percentiles.p99", required=False))


def _load(s: Fields) -> tuple[int | None, float | None]:
    """(concurrency, rate) of a scheduling strategy."""
    kind = s.text_value("type_")
    if kind == "synchronous":
        return 1, None
    if kind == "concurrent":
        return s.count("streams"), None
    if kind in ("constant", "poisson"):
        return s.count("max_concurrency", required=False), s.number("rate")
    if kind == "throughput":
        return s.count("max_concurrency", required=False), None
    raise s.bad("type_", f"strategy {kind!r} is not a load point fleetplan can compare "
                "(synchronous, concurrent, constant, poisson, throughput)")


def _point(path: str, text: str, b: Fields, model: str | None, version: str | None,
           labels: dict[str, str]) -> BenchPoint:
    conc, rate = _load(b.sub("config.strategy"))
    m = b.sub("metrics")
    return BenchPoint(
        tool="guidellm", where=b.where, model=model, concurrency=conc, rate_qps=rate,
        input_tokens=m.number("prompt_token_count.successful.mean"),
        output_tokens=m.number("output_token_count.successful.mean"),
        requests=m.count("request_totals.successful"),
        throughput_qps=m.number("requests_per_second.successful.mean", required=False),
        ttft=_stat(m, "time_to_first_token_ms"), tpot=_stat(m, "inter_token_latency_ms"),
        tool_version=version, labels=labels,
    )


def read(path: str, text: str) -> list[BenchPoint]:
    doc = Fields(path, text, load_json(path, text), "")
    version = doc.text_value("metadata.guidellm_version", required=False)
    model = doc.text_value("config.spec.backend.model", required=False)
    labels = known_labels(doc.get("config.metadata.labels", required=False))
    benchmarks = doc.get("benchmarks")
    if not benchmarks:
        raise doc.bad("benchmarks", "the report holds no benchmark")
    return [_point(path, text, Fields(path, text, b, f"benchmarks[{i}]"), model, version, labels)
            for i, b in enumerate(benchmarks)]
