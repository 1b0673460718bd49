"""`vllm bench serve --save-result` result JSON.

Writer: vllm-project/vllm, commit 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1,
vllm/benchmarks/serve.py (`main_async` builds `result_json`; `benchmark` returns the metrics;
`process_one_metric` writes `mean_<m>_ms`, `median_<m>_ms`, `std_<m>_ms` and `p<P>_<m>_ms` for
the `--metric-percentiles`, default "99", of ttft, tpot and itl). The same keys are written by
vLLM's older benchmark_serving.py script. Top-level fields used: `model_id`, `max_concurrency`
(null: unbounded), `request_rate` (a number or the string "inf"), `completed`,
`total_input_tokens`, `total_output_tokens`, `request_throughput` (req/s), and the
`--metadata KEY=VALUE` pairs vLLM copies to the top level (hardware=, tp=, ... are read).
`--append-result` writes one JSON document per line: each is one point.
"""

from __future__ import annotations

from typing import Any

from solver.accuracy.readers.common import BenchPoint, Fields, Stat, known_labels, load_json
from solver.errors import InputError


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and "mean_ttft_ms" in doc and "completed" in doc


def _stat(f: Fields, metric: str) -> Stat:
    return Stat(mean=f.number(f"mean_{metric}_ms"),  # type: ignore[arg-type]
                p50=f.number(f"median_{metric}_ms", required=False),
                p99=f.number(f"p99_{metric}_ms", required=False))


def _rate(f: Fields) -> float | None:
    v = f.get("request_rate", required=False)
    if v is None or v == "inf":
        return None
    return f.number("request_rate")


def point(path: str, text: str, doc: Any, where: str = "") -> BenchPoint:
    f = Fields(path, text, doc, where)
    done = f.count("completed")
    return BenchPoint(
        tool="vllm", where=where or "document", model=f.text_value("model_id", required=False),
        concurrency=f.count("max_concurrency", required=False), rate_qps=_rate(f),
        input_tokens=f.number("total_input_tokens") / done,  # type: ignore[operator]
        output_tokens=f.number("total_output_tokens") / done,  # type: ignore[operator]
        requests=done, throughput_qps=f.number("request_throughput", required=False),
        ttft=_stat(f, "ttft"), tpot=_stat(f, "tpot"), labels=known_labels(doc),
    )


def read(path: str, text: str) -> list[BenchPoint]:
    doc = load_json(path, text)
    docs = doc if isinstance(doc, list) else [doc]
    if not docs:
        raise InputError(f"{path}:1: no vLLM benchmark result in the file")
    if len(docs) == 1:
        return [point(path, text, docs[0])]
    return [point(path, text, d, f"results[{i}]") for i, d in enumerate(docs)]
