"""Where a replay's requests come from: open loops over the problem's length distributions
(`open_loop.py`, lengths in `lengths.py`), trace files (`trace.py`), the benchmark tools'
closed loops (`closed.py`, set up per tool in `harness.py`), several sources at once
(`merged.py`), and the source a command line's `--arrival` names (`spec.py`). Every source implements `solver.replay.requests.Source` and adds `ids` (its
rows), `window()` (its measurement window) and `describe()`."""

from solver.replay.sources.closed import ClosedLoop, Phase
from solver.replay.sources.harness import (
    BENCHMARKS,
    aiconfigurator_aiperf,
    aiperf_concurrency,
    benchmark_source,
    inferencex_benchmark_serving,
    sglang_bench_serving,
    vllm_bench_serve,
)
from solver.replay.sources.lengths import LengthLaw, length_law, normal_lengths, sample_lengths, uniform_lengths
from solver.replay.sources.merged import MergedSource
from solver.replay.sources.open_loop import (
    ArrivalSource,
    gamma_arrivals,
    gamma_source,
    measurement_window,
    poisson_source,
)
from solver.replay.sources.spec import services_source, workload_source
from solver.replay.sources.trace import Trace, load_trace, trace_source, write_trace

__all__ = [
    "BENCHMARKS", "benchmark_source", "ArrivalSource", "ClosedLoop", "MergedSource", "Phase", "Trace", "aiconfigurator_aiperf",
    "aiperf_concurrency", "gamma_arrivals", "gamma_source", "inferencex_benchmark_serving", "load_trace",
    "LengthLaw", "length_law", "measurement_window", "normal_lengths", "poisson_source", "sample_lengths",
    "sglang_bench_serving", "trace_source", "uniform_lengths", "services_source", "vllm_bench_serve", "workload_source", "write_trace",
]
