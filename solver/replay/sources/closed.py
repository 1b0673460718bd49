"""Closed loops: N client slots, each sending its next request when its previous one finished,
run in phases (a test request, warm-up, the measured run) as the benchmark tools run them.

`ClosedLoop` is the mechanism; `vllm_bench_serve`, `inferencex_benchmark_serving`,
`aiperf_concurrency`, `aiconfigurator_aiperf` and `sglang_bench_serving` set it up as each
tool does. What their code does, and so what is modelled:

vLLM `vllm bench serve` (`vllm/benchmarks/serve.py`, vllm-project/vllm at 009e6d4a):
- an optional ready check sends the first request alone (`--ready-check-timeout-sec`, default 0:
  skipped), then `--num-warmups` copies of the first request (default 0) through a semaphore of
  `--max-concurrency`, and waits for all of them (`asyncio.gather`) before the run;
- the run creates one task per request as `get_request` yields them: with `--request-rate inf`
  (the default) all at once, so the first N requests are sent together at the start and each
  later one when a slot frees (asyncio's semaphore wakes waiters first-in first-out); with a
  finite rate the send times are precomputed (`delay_ts`: cumulative Gamma(burstiness) gaps,
  rescaled so the last is at num_prompts / rate) and a request waits for both its time and a
  slot. `--ramp-up-strategy` changes only those times. There is no sleep between one request's
  end and the next one's start: the next send follows at once, less the client's own overhead;
- TTFT and E2E run from the send (`st` inside the request function, after the semaphore), TPOT
  per request = (latency - ttft) / (output_len - 1) for output_len > 1, percentiles are
  `np.percentile` (linear) over requests, ITLs pooled over all tokens; the benchmark duration runs
  from `benchmark_start_time` (just before the first send) to the end of the gather (the last
  completion), and throughput = completed / duration; warm-up requests are not counted.

InferenceX (`SemiAnalysisAI/InferenceX/benchmarks/benchmark_lib.sh` at 843c6254,
`run_benchmark_serving`, and its `utils/bench_serving/benchmark_serving.py`): its own fork of
vLLM's benchmark_serving.py, called with `--request-rate inf --num-prompts 10*CONC
--max-concurrency CONC --num-warmups 2*CONC --random-range-ratio 0.8 --ignore-eos` (the 10x
in the per-model scripts, 0.8 in `.github/workflows/benchmark-tmpl.yml`); no test request, the
warm-ups are copies of the first request; lengths uniform on [int(0.8 L), L] per request
(`sample_uniform`). Which tool measured aiconfigurator's `silicon_sample.csv` rows: its
"db-dump" rows carry InferenceX database fields (`config_id`, `workflow_run_id`, the serving
image); its dated source files (fields `model`, `image`, `wip`) and its "aic-auto-gap-analysis"
rows (most of the h100_sxm ones) name no tool; aiconfigurator's own generated benchmark is
aiperf (below).

aiperf `--concurrency N` (ai-dynamo/aiperf 0.1.1 at db4f6397, `aiperf/timing/
credit_issuing_strategy.py`, `request_rate_strategy.py`, `aiperf/workers/worker.py`): phases run
one after the other, warm-up (`--warmup-request-count`) then profiling (`--request-count`),
each waiting for all its credits to return before the next starts; a semaphore of N credits is
acquired before each credit drop and released when a worker returns it, and in concurrency mode
the next drop waits 0 s (`ConcurrencyBurstRateGenerator`), so the N first credits go out
back to back and each return sends one more (the return and the next drop each cross ZMQ).
Only profiling-phase records count (`records_manager.py`); `benchmark_duration` = max response
timestamp - min request timestamp; its "inter token latency" is the per-request (latency -
ttft) / (osl - 1), vLLM's TPOT; percentiles `np.percentile` (`aiperf/metrics/metric_dicts.py`).
aiconfigurator's generated benchmark (`src/aiconfigurator/generator/config/backend_templates/
benchmark/bench_run.sh.j2`, ai-dynamo/aiconfigurator at 095f58a5) runs `aiperf profile
--concurrency C --num-requests 20*C --warmup-request-count 2*C --isl L --isl-stddev 0 ...`
(stddev 0 by default: fixed lengths; lengths otherwise ceil(normal), `normal_lengths`).

SGLang `python -m sglang.bench_serving` (`python/sglang/bench_serving.py`, sgl-project/sglang at
0033168f; adapted from vLLM's benchmark_serving.py): `--warmup-requests` (default 1) copies of
the first request with at most 32 output tokens, sent together without the concurrency limit,
then a 1 s pause (`time.sleep(1.0)`), then the run through a semaphore of `--max-concurrency`
(Poisson gaps, not rescaled, when the rate is finite); each request opens its own HTTP session.

Lockstep: with fixed lengths and every client released together after a drained warm-up, a
replay's clients run in waves; that is what the tools do too, and what breaks the waves in
them is in the requests, not in client pacing (none of the tools staggers or delays clients):
InferenceX's random range ratio (lengths spread over 20%), aiperf's stddev when set, and the
server's own spread (prefill chunks, preemptions, admission) that the replay's scheduler
produces. `send_delay_s` (a client's overhead between a finish and the next send) and
`stagger_s` (between the first sends) are there for a measured client overhead; all tools'
code puts no explicit one there, so they default to 0.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from solver.errors import InputError
from solver.replay.requests import NOT_YET, RequestTable
from solver.replay.sources.open_loop import MAX_REQUESTS, measurement_window


@dataclass(frozen=True)
class Phase:
    """One phase of a closed loop: its requests in sending order, sent through `concurrency`
    slots; `offsets_s`: each request's earliest send after the phase start (None: as soon as a
    slot is free); `gap_before_s`: idle time after the previous phase's last finish."""

    name: str
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    concurrency: int
    measured: bool
    offsets_s: np.ndarray | None = None
    gap_before_s: float = 0.0
    prefix_id: np.ndarray | None = None
    prefix_tokens: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.prompt_tokens)


class ClosedLoop:
    """A `Source` running `phases` back to back from `start_s`: in each, the first
    min(concurrency, n) requests go at the phase start (`stagger_s` apart), every finish frees a
    slot and the next request goes `send_delay_s` later (or at its offset, if later); the next
    phase starts when all of this one finished. Rows are added to the table as they are sent."""

    def __init__(self, phases: list[Phase], start_s: float = 0.0, send_delay_s: float = 0.0,
                 stagger_s: float = 0.0, table: RequestTable | None = None, label: str = "closed loop") -> None:
        for name, v in (("start_s", start_s), ("send_delay_s", send_delay_s), ("stagger_s", stagger_s)):
            if not (math.isfinite(v) and v >= 0):
                raise InputError(f"{label}: {name} must be a finite number >= 0 (got {v})")
        if sum(len(p) for p in phases) > MAX_REQUESTS:
            raise InputError(f"{label}: more than {MAX_REQUESTS:,} requests in one replay")
        for p in phases:
            extra = [getattr(p, f) for f in ("offsets_s", "prefix_id", "prefix_tokens") if getattr(p, f) is not None]
            if any(len(a) != len(p) for a in [p.output_tokens, *extra]):
                raise ValueError(f"{label}: {p.name}: every column of a phase needs one value per request")
            if isinstance(p.concurrency, bool) or int(p.concurrency) != p.concurrency or p.concurrency < 1:
                raise InputError(f"{label}: {p.name}: concurrency must be a whole number >= 1 (got {p.concurrency})")
        self.phases = [p for p in phases if len(p)]
        self.table = table if table is not None else RequestTable(sum(len(p) for p in phases))
        self.label = label
        self.send_delay_s = float(send_delay_s)
        self.stagger_s = float(stagger_s)
        self._rows: list[int] = []
        self._times: list[float] = []
        self._taken = 0
        self._k = -1
        self._advance_phase(float(start_s))

    # -- the Source protocol

    def next_arrival_s(self) -> float:
        return self._times[self._taken] if self._taken < len(self._times) else NOT_YET

    def take(self, until_s: float) -> np.ndarray:
        hi = bisect.bisect_right(self._times, until_s, lo=self._taken)
        out = np.array(self._rows[self._taken:hi], dtype=np.int64)
        self._taken = max(hi, self._taken)
        return out

    def finished(self, ids: np.ndarray, t_s: float) -> None:
        k = len(ids)
        if not k or self._k >= len(self.phases):
            return
        self._finished += k
        self._free += k
        if self._finished >= len(self.phases[self._k]):
            self._advance_phase(t_s + self.send_delay_s)
        else:
            self._send(t_s + self.send_delay_s, stagger=0.0)

    def done(self) -> bool:
        last = self._k >= len(self.phases) - 1 and (
            self._k >= len(self.phases) or self._sent >= len(self.phases[self._k]))
        return last and self._taken >= len(self._times)

    # -- what the metrics need

    @property
    def ids(self) -> np.ndarray:
        """Rows of this loop's requests, in sending order."""
        return np.array(self._rows, dtype=np.int64)

    def window(self) -> tuple[float, float]:
        """The measurement window: first send to last finish of the measured requests."""
        return measurement_window(self.table, self.ids)

    def describe(self) -> str:
        return self.label

    # -- mechanics

    def _advance_phase(self, t_s: float) -> None:
        self._k += 1
        if self._k >= len(self.phases):
            return
        ph = self.phases[self._k]
        self._start = t_s + float(ph.gap_before_s)
        self._sent = 0
        self._finished = 0
        self._free = int(ph.concurrency)
        self._send(self._start, stagger=self.stagger_s)

    def _send(self, t_s: float, stagger: float) -> None:
        ph = self.phases[self._k]
        m = min(self._free, len(ph) - self._sent)
        if m <= 0:
            return
        if m == 1 and ph.offsets_s is None:  # one finish, one send: the common case, kept cheap
            self._send_one(ph, max(t_s, self._times[-1]) if self._times else t_s)
            return
        sl = slice(self._sent, self._sent + m)
        times = t_s + stagger * np.arange(m)
        if ph.offsets_s is not None:
            times = np.maximum(times, self._start + np.asarray(ph.offsets_s[sl], dtype=float))
        if self._times:
            times = np.maximum(times, self._times[-1])
        times = np.maximum.accumulate(times)  # sends leave in order
        ids = self.table.add(times, ph.prompt_tokens[sl], ph.output_tokens[sl],
                             -1 if ph.prefix_id is None else ph.prefix_id[sl],
                             0 if ph.prefix_tokens is None else ph.prefix_tokens[sl], ph.measured)
        self._rows.extend(ids.tolist())
        self._times.extend(times.tolist())
        self._sent += m
        self._free -= m


    def _send_one(self, ph: Phase, t_s: float) -> None:
        i = self._sent
        ids = self.table.add(t_s, ph.prompt_tokens[i], ph.output_tokens[i],
                             -1 if ph.prefix_id is None else ph.prefix_id[i],
                             0 if ph.prefix_tokens is None else ph.prefix_tokens[i], ph.measured)
        self._rows.append(int(ids[0]))
        self._times.append(t_s)
        self._sent += 1
        self._free -= 1


def check_counts(n_clients: int, n: int, what: str) -> None:
    for name, v in (("clients", n_clients), (what, n)):
        if isinstance(v, bool) or int(v) != v or not 1 <= v <= MAX_REQUESTS:
            raise InputError(f"closed loop: {name} must be a whole number in 1..{MAX_REQUESTS:,} (got {v})")


def as_lengths(prompt_tokens, output_tokens) -> tuple[np.ndarray, np.ndarray]:
    p = np.atleast_1d(np.asarray(prompt_tokens, dtype=np.int64))
    o = np.atleast_1d(np.asarray(output_tokens, dtype=np.int64))
    p, o = np.broadcast_arrays(p, o)
    if len(p) == 0 or p.min() < 1 or o.min() < 1:
        raise InputError("closed loop: every request needs at least 1 prompt and 1 output token")
    return p.copy(), o.copy()


def vllm_send_offsets(n: int, request_rate: float, burstiness: float, rng: np.random.Generator,
                      ramp_up: tuple[str, float, float] | None = None) -> np.ndarray | None:
    """vLLM's precomputed send times (`get_request`): None for an infinite rate without a ramp;
    else cumulative Gamma(burstiness, 1/(rate_i*burstiness)) gaps (the first included), rescaled
    so the last is at n / rate when the rate is fixed. `ramp_up` = (`linear`|`exponential`,
    start rps, end rps) sets rate_i from request i's progress i / (n - 1), as
    `--ramp-up-strategy` does (`_get_current_request_rate`)."""
    n = int(n)
    if ramp_up is None:
        if math.isinf(request_rate):
            return None
        rates = np.full(n, float(request_rate))
    else:
        kind, lo, hi = ramp_up
        progress = np.arange(n) / max(n - 1, 1)
        if kind == "linear":
            rates = lo + (hi - lo) * progress
        elif kind == "exponential" and lo > 0:
            rates = lo * (hi / lo) ** progress
        else:
            raise InputError(f"vllm bench serve: ramp-up must be linear or exponential from a start > 0 (got {ramp_up})")
    if not (np.all(rates > 0) and math.isfinite(burstiness) and burstiness > 0):
        raise InputError(f"vllm bench serve: request rate and burstiness must be > 0 (got {request_rate}, {burstiness})")
    delays = np.cumsum(rng.gamma(burstiness, 1.0 / (rates * burstiness)))
    if ramp_up is None and delays[-1] > 0:
        delays = delays * ((n / request_rate) / delays[-1])
    return delays
