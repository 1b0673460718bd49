"""Where `fleetplan simulate` takes each service's requests from (`solver.replay.sources`).

`--arrival` is one of:

- `poisson` (default): open loop, Poisson arrivals at the service's planned demand x rate scale,
  prompt and output lengths drawn from the service's workload distributions (capped by
  `max_context`);
- `gamma:CV`: the same with Gamma inter-arrival times of coefficient of variation CV (CV 1 is
  Poisson; `vllm bench serve --burstiness B` is CV = 1 / sqrt(B));
- `trace:FILE`: a trace file (CSV or JSONL of arrival time, prompt tokens, output tokens; the
  Azure LLM inference trace format loads as it is) replayed for every service as it is, time
  compressed by the rate scale, its first `--requests` requests;
- `closed:N`: N clients per service sending back to back as `vllm bench serve
  --max-concurrency N` does (no rate limit, no warm-up), `--requests` requests of the service's
  length distributions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from solver.errors import InputError

if TYPE_CHECKING:
    from solver.problem.load import ResolvedProblem
    from solver.replay.requests import Source

MAX_REQUESTS = 1_000_000  # per service: the replay keeps every request in memory
DEFAULT_REQUESTS = 2_000
MAX_CLIENTS = 100_000
# the routers' policies (solver/replay/router.py POLICIES; a test keeps them equal), named here
# so that the command line can list them without importing numpy
ROUTERS = ("round_robin", "least_queue", "least_kv")
MAX_CV = 100.0


@dataclass(frozen=True)
class Arrival:
    kind: str  # poisson | gamma | trace | closed
    cv: float = 1.0
    path: str | None = None
    clients: int = 0


def parse_arrival(text: str) -> Arrival:
    """`poisson`, `gamma:CV`, `trace:FILE` or `closed:N`; ValueError with the reason otherwise."""
    kind, _, arg = text.partition(":")
    if kind == "poisson" and not arg:
        return Arrival("poisson")
    if kind == "gamma":
        try:
            cv = float(arg)
        except ValueError:
            raise ValueError(f"gamma:CV needs a number, got '{arg}'") from None
        if not (math.isfinite(cv) and 0 < cv <= MAX_CV):
            raise ValueError(f"gamma:CV: CV must be in (0, {MAX_CV:g}], got {arg}")
        return Arrival("gamma", cv=cv)
    if kind == "trace" and arg:
        return Arrival("trace", path=arg)
    if kind == "closed":
        if not arg.isdigit() or not 1 <= int(arg) <= MAX_CLIENTS:
            raise ValueError(f"closed:N needs a whole number of clients in 1..{MAX_CLIENTS:,}, got '{arg}'")
        return Arrival("closed", clients=int(arg))
    raise ValueError(f"'{text}': one of poisson, gamma:CV, trace:FILE, closed:N")


def service_source(rp: ResolvedProblem, si: int, qps: float, arrival: Arrival, requests: int, seed: int,
                   rate_scale: float = 1.0) -> Source:
    """Service si's requests (its own request table); the same seed gives the same requests."""
    import numpy as np

    from solver.replay import sources as src

    wl = rp.problem.services[si].workload
    where = f"services[{si}].workload"
    if arrival.kind == "trace":
        return src.trace_source(arrival.path, rate_scale=rate_scale, limit=requests)
    if arrival.kind == "closed":
        rng = np.random.default_rng(seed)
        cap = None if wl.max_context is None else max(wl.max_context - 1, 1)
        prompt = src.sample_lengths(wl.input_tokens, requests, rng, f"{where}.input_tokens", cap)
        output = src.sample_lengths(wl.output_tokens, requests, rng, f"{where}.output_tokens")
        if wl.max_context is not None:
            output = np.maximum(np.minimum(output, wl.max_context - prompt), 1)
        return src.vllm_bench_serve(arrival.clients, prompt, output, seed=seed)
    if not qps > 0:
        raise InputError(f"{where}: the plan serves no traffic of this service (demand {qps:g} QPS): nothing to replay")
    return src.gamma_source(qps, arrival.cv, requests, wl.input_tokens, wl.output_tokens, seed,
                            max_context=wl.max_context, where=where)
