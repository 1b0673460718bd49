"""Where `fleetplan simulate` takes each service's requests from: `--arrival SPEC` made into a
source by `solver.replay.sources.workload_source` over the service's workload, at the plan's
demand for the service (its `demand_qps`: the problem's qps, times the served scale of a
max_throughput plan) x `--rate-scale`.

- `poisson` (default): open loop, Poisson arrivals, prompt and output lengths drawn from the
  service's workload distributions (capped by `max_context`);
- `gamma:CV`: the same with Gamma inter-arrival times of coefficient of variation CV (CV 1 is
  Poisson; `vllm bench serve --burstiness B` is CV = 1 / sqrt(B));
- `trace:FILE`: a trace file (CSV or JSONL of arrival time, prompt tokens, output tokens; the
  Azure LLM inference trace format loads as it is), time compressed by the rate scale; a trace
  is one service's requests, so it needs a plan of one service;
- `closed:N` (or `closed:N:vllm|aiperf|sglang`): N clients per service sending back to back as
  that benchmark tool runs them (`vllm bench serve --max-concurrency N` by default);
- `workload` (the command's default): each service's own arrivals (`workload_arrival`): the
  trace its workload names (`workload: {trace: FILE}`), time compressed so that its mean rate
  ((requests - 1) / span, solver/problem/workload_data.py) is the plan's demand x the rate
  scale; else `gamma:CV` for a workload's `arrival_cv`; else `poisson`.

`--requests` per service; without it the sources' defaults: 2,000 for open loops, 10 per client
for closed loops, the whole trace. Service k of the plan draws with seed + k.

This module stays free of numpy at import: the command line's parser reads its constants.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.problem.load import ResolvedProblem
    from solver.replay.requests import Source

MAX_REQUESTS = 1_000_000  # per service: the replay keeps every request in memory
DEFAULT_REQUESTS = 2_000  # open loops (solver.replay.sources DEFAULT_REQUESTS)
CLOSED_PER_CLIENT = 10  # closed loops (the same module's CLOSED_PER_CLIENT)
MAX_CLIENTS = 100_000
MAX_CV = 100.0
TOOLS = ("vllm", "aiperf", "sglang")
# the routers' policies (solver/replay/router.py POLICIES; a test keeps them equal), named here
# so that the command line can list them without importing numpy
ROUTERS = ("round_robin", "least_queue", "least_kv")


def parse_arrival(text: str) -> str:
    """Check an `--arrival` spec before anything is planned; ValueError with the reason."""
    kind, _, arg = text.partition(":")
    if kind in ("poisson", "workload") and not arg:
        return text
    if kind == "gamma":
        try:
            cv = float(arg)
        except ValueError:
            raise ValueError(f"gamma:CV needs a number, got '{arg}'") from None
        if not (math.isfinite(cv) and 0 < cv <= MAX_CV):
            raise ValueError(f"gamma:CV: CV must be in (0, {MAX_CV:g}], got {arg}")
        return text
    if kind == "trace" and arg:
        return text
    if kind == "closed":
        n, _, tool = arg.partition(":")
        if not n.isdigit() or not 1 <= int(n) <= MAX_CLIENTS:
            raise ValueError(f"closed:N needs a whole number of clients in 1..{MAX_CLIENTS:,}, got '{n}'")
        if tool and tool not in TOOLS:
            raise ValueError(f"closed:N:TOOL: TOOL is one of {', '.join(TOOLS)}, got '{tool}'")
        return text
    raise ValueError(f"'{text}': one of poisson, gamma:CV, trace:FILE, closed:N, closed:N:{'|'.join(TOOLS)} "
                     "or workload")


def expected_requests(arrival: str, requests: int | None) -> int:
    """Requests one service will send (0: unknown until a trace is read)."""
    if requests is not None:
        return requests
    kind, _, arg = arrival.partition(":")
    if kind == "workload":
        return 0
    if kind == "closed":
        return min(CLOSED_PER_CLIENT * int(arg.partition(":")[0]), MAX_REQUESTS)
    return 0 if kind == "trace" else DEFAULT_REQUESTS


def total_requests(rp: ResolvedProblem, names: list[str], arrival: str, requests: int | None) -> int:
    """Requests the named services will send together (0: unknown until a trace is read)."""
    index = [s.name for s in rp.problem.services]
    counts = [expected_requests(workload_arrival(rp, index.index(n), arrival), requests) if n in index else 0
              for n in names]
    return 0 if 0 in counts else sum(counts)


def workload_arrival(rp: ResolvedProblem, si: int, arrival: str = "workload") -> str:
    """The arrival spec service si replays under `arrival` (`workload`: its own, see above)."""
    if arrival != "workload":
        return arrival
    wl = rp.problem.services[si].workload
    if wl.trace is not None:
        return f"trace:{wl.trace}"
    if wl.arrival_cv is not None and wl.arrival_cv != 1.0:
        return f"gamma:{wl.arrival_cv!r}"
    return "poisson"


def arrival_label(rp: ResolvedProblem, services: list[int], arrival: str) -> str:
    """What the simulation document records: the one spec every service replays, else `workload`."""
    specs = {workload_arrival(rp, si, arrival) for si in services}
    return specs.pop() if len(specs) == 1 else arrival


def service_source(rp: ResolvedProblem, si: int, qps: float, arrival: str, requests: int | None, seed: int,
                   rate_scale: float = 1.0) -> Source:
    """Service si's requests (their own request table) at `qps` (the plan's demand x the rate
    scale); the same seed gives the same requests."""
    from solver.errors import InputError
    from solver.replay.sources import workload_source

    wl = rp.problem.services[si].workload
    if arrival == "workload" and wl.trace is not None:  # the workload's trace, at the planned rate
        from pathlib import Path

        from solver.problem.workload_data import DEFAULT_WINDOW_S, data_path, summarize

        base = None if rp.doc.path.startswith("<") else Path(rp.doc.path).parent
        path = str(data_path(wl.trace, base).resolve())  # as the problem's loading resolved it
        mean = summarize(path, wl.window_s or DEFAULT_WINDOW_S).mean_rate_qps or 1.0
        return workload_source(f"trace:{path}", wl, requests, seed, qps / mean, where=f"services[{si}].workload")
    arrival = workload_arrival(rp, si, arrival)
    kind = arrival.partition(":")[0]
    if kind in ("poisson", "gamma") and not qps > 0:
        raise InputError(f"services[{si}]: the plan serves no traffic of '{rp.problem.services[si].name}' "
                         "(demand 0 QPS): nothing to replay")
    # the open loops' rate: the workload's qps x rate_scale, so the planned demand goes in as qps
    planned = wl.model_copy(update={"qps": qps / rate_scale}) if kind in ("poisson", "gamma") else wl
    return workload_source(arrival, planned, requests, seed, rate_scale, where=f"services[{si}].workload")
