"""One service's source from `fleetplan simulate --arrival SPEC`: what the command line names,
made into a `Source` over the service's workload.

| SPEC | requests |
|---|---|
| `poisson` | Poisson arrivals at the workload's qps x rate scale |
| `gamma:CV` | Gamma arrivals of coefficient of variation CV at that rate |
| `trace:FILE` | the trace file's requests (`trace.py`), time compressed by the rate scale |
| `closed:N` | N clients as `vllm bench serve --max-concurrency N` runs them |
| `closed:N:vllm` / `closed:N:aiperf` / `closed:N:sglang` | N clients as that tool runs them |

Lengths come from the workload's distributions (`lengths.py`) except for a trace, which carries
its own. The number of requests defaults to `DEFAULT_REQUESTS` for open loops, 10 per client
for closed ones (InferenceX's `--num-prompts 10*CONC`), the whole file for a trace. The tools'
warm-ups are their defaults: none for vLLM and aiperf, one request for SGLang.
"""

from __future__ import annotations

import math

import numpy as np

from solver.errors import InputError
from solver.replay.requests import RequestTable
from solver.replay.sources.harness import aiperf_concurrency, sglang_bench_serving, vllm_bench_serve
from solver.replay.sources.lengths import sample_lengths
from solver.replay.sources.merged import MergedSource
from solver.replay.sources.open_loop import MAX_REQUESTS, gamma_source
from solver.replay.sources.trace import trace_source
from solver.schema.problem import Workload

DEFAULT_REQUESTS = 2000  # open loops: enough for a p99 over ~20 requests above it
CLOSED_PER_CLIENT = 10  # InferenceX: --num-prompts 10 * CONC
TOOLS = ("vllm", "aiperf", "sglang")
SPECS = "poisson, gamma:CV, trace:FILE, closed:N or closed:N:" + "|".join(TOOLS)


def _number(text: str, what: str, spec: str, whole: bool = False) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v <= 0 or (whole and v != int(v)):
        kind = "a whole number >= 1" if whole else "a positive number"
        raise InputError(f"--arrival {spec}: {what} must be {kind} (got {text!r})")
    return v


def workload_source(spec: str, workload: Workload, requests: int | None = None, seed: int = 0,
                    rate_scale: float = 1.0, table: RequestTable | None = None, where: str = "workload"):
    """The source `--arrival spec` names for one service (see the module docstring); `where`
    names the workload in messages (e.g. `services[0].workload`)."""
    if not (math.isfinite(rate_scale) and 0 < rate_scale <= 1e6):
        raise InputError(f"--rate-scale must be a number in (0, 1e6] (got {rate_scale})")
    if requests is not None and (isinstance(requests, bool) or int(requests) != requests
                                 or not 1 <= requests <= MAX_REQUESTS):
        raise InputError(f"--requests must be a whole number in 1..{MAX_REQUESTS:,} (got {requests})")
    kind, _, rest = spec.strip().partition(":")
    if kind == "poisson" and not rest:
        return gamma_source(workload.qps * rate_scale, 1.0, requests or DEFAULT_REQUESTS, workload.input_tokens,
                            workload.output_tokens, seed, table, workload.max_context, where,
                            workload.prefix_cache)
    if kind == "gamma" and rest:
        cv = _number(rest, "CV", spec)
        return gamma_source(workload.qps * rate_scale, cv, requests or DEFAULT_REQUESTS, workload.input_tokens,
                            workload.output_tokens, seed, table, workload.max_context, where,
                            workload.prefix_cache)
    if kind == "trace" and rest:
        return trace_source(rest, rate_scale, requests, table)
    if kind == "closed" and rest:
        return _closed(spec, rest, workload, requests, seed, table, where)
    raise InputError(f"--arrival {spec!r}: expected {SPECS}")


def _closed(spec: str, rest: str, workload: Workload, requests: int | None, seed: int,
            table: RequestTable | None, where: str):
    n_text, _, tool = rest.partition(":")
    n = int(_number(n_text, "the number of clients N", spec, whole=True))
    tool = tool or "vllm"
    if tool not in TOOLS:
        raise InputError(f"--arrival {spec!r}: tool must be one of {', '.join(TOOLS)} (got {tool!r})")
    count = requests or min(CLOSED_PER_CLIENT * n, MAX_REQUESTS)
    rng = np.random.default_rng(seed)
    cap = workload.max_context
    prompt = sample_lengths(workload.input_tokens, count, rng, f"{where}.input_tokens",
                            None if cap is None else max(cap - 1, 1))
    output = sample_lengths(workload.output_tokens, count, rng, f"{where}.output_tokens")
    if cap is not None:
        output = np.maximum(np.minimum(output, cap - prompt), 1)
    if tool == "aiperf":
        return aiperf_concurrency(n, prompt, output, table=table)
    if tool == "sglang":
        return sglang_bench_serving(n, prompt, output, seed=seed, table=table)
    return vllm_bench_serve(n, prompt, output, seed=seed, table=table)


def services_source(spec: str, workloads: list[tuple[str, Workload]], requests: int | None = None,
                    seed: int = 0, rate_scale: float = 1.0) -> MergedSource:
    """One source per service (named, with its workload) on one request table, merged: service
    i draws with seed + i; `source.owner() == i` selects its requests. A trace names one
    service's requests, so `trace:FILE` needs exactly one service."""
    if not workloads:
        raise InputError("simulate: no service to replay")
    if spec.strip().startswith("trace:") and len(workloads) > 1:
        raise InputError(f"--arrival {spec!r}: a trace replays one service; the problem has "
                         f"{len(workloads)} ({', '.join(n for n, _ in workloads)})")
    table = RequestTable()
    sources = [workload_source(spec, w, requests, seed + i, rate_scale, table, f"services[{i}].workload")
               for i, (_, w) in enumerate(workloads)]
    return MergedSource(sources, labels=[f"{name}: {s.describe()}" for (name, _), s in zip(workloads, sources)])
