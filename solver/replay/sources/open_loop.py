"""Open-loop sources: every request's arrival is known before the replay starts (Poisson or
Gamma arrivals over the problem's length distributions, a trace file), so they are all written
to the request table at once and handed to the server as the clock passes them.

Gamma arrivals with coefficient of variation CV have inter-arrival times Gamma(shape 1/CV^2,
scale CV^2 / rate): mean 1/rate, CV as given; CV 1 is Poisson. This is `vllm bench serve
--burstiness B` with B = 1/CV^2 (vLLM `vllm/benchmarks/serve.py` `get_request`:
`np.random.gamma(shape=burstiness, scale=1/(request_rate*burstiness))`). Unlike vLLM, the
sum of the gaps is not rescaled to exactly n/rate (vLLM does that to steady its throughput
across seeds); a replay states its seed instead.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from solver.errors import InputError
from solver.replay.requests import NOT_YET, RequestTable
from solver.replay.sources.lengths import sample_lengths
from solver.replay.sources.prefixes import workload_prefixes
from solver.schema.prefix import PrefixCache
from solver.schema.problem import TokenDist

MAX_REQUESTS = 50_000_000  # a bound on one replay's requests (memory: ~100 bytes per request)


def measurement_window(table: RequestTable, ids: np.ndarray | None = None) -> tuple[float, float]:
    """(first send, last finish) over the measured requests among `ids` (all rows if None): the
    benchmark duration of `vllm bench serve` (`benchmark_start_time` to the end of the gather)
    and aiperf's `benchmark_duration` (max response timestamp - min request timestamp).
    Unfinished requests do not extend it; (0, 0) when nothing was measured."""
    rows = np.arange(len(table)) if ids is None else np.asarray(ids, dtype=np.int64)
    rows = rows[table.measured[rows]]
    if not len(rows):
        return 0.0, 0.0
    fin = table.finish_s[rows]
    fin = fin[np.isfinite(fin)]
    start = float(table.arrival_s[rows].min())
    return start, float(fin.max()) if len(fin) else start


class ArrivalSource:
    """Requests with known arrival times (sorted stably by arrival when they are not), appended
    to `table` (a new one if None) in arrival order; `ids` are their rows."""

    def __init__(self, arrival_s, prompt_tokens, output_tokens, prefix_id=-1, prefix_tokens=0,
                 measured=True, table: RequestTable | None = None, label: str = "open loop") -> None:
        a = np.atleast_1d(np.asarray(arrival_s, dtype=float))
        if len(a) > MAX_REQUESTS:
            raise InputError(f"{label}: {len(a)} requests, more than {MAX_REQUESTS:,} in one replay")
        if not np.all(np.isfinite(a)):
            raise InputError(f"{label}: arrival times must be finite")
        order = np.argsort(a, kind="stable")
        cols = [np.broadcast_to(np.asarray(c), a.shape)[order]
                for c in (prompt_tokens, output_tokens, prefix_id, prefix_tokens, measured)]
        self.table = table if table is not None else RequestTable(len(a))
        self.label = label
        self.ids = self.table.add(a[order], *cols)
        self._arrival = a[order]
        self._arrival_list = self._arrival.tolist()  # the same floats, read per event without numpy
        self._next = 0

    def next_arrival_s(self) -> float:
        return self._arrival_list[self._next] if self._next < len(self._arrival_list) else NOT_YET

    def take(self, until_s: float) -> np.ndarray:
        # bisect on the sorted list: np.searchsorted(side="right")'s index, from the next one on
        hi = bisect.bisect_right(self._arrival_list, until_s, lo=self._next)
        out = self.ids[self._next:hi]
        self._next = hi
        return out

    def finished(self, ids: np.ndarray, t_s: float) -> None:
        return None  # open loop: finishes do not change what arrives

    def done(self) -> bool:
        return self._next >= len(self._arrival)

    def window(self) -> tuple[float, float]:
        """The measurement window over this source's requests (see `measurement_window`)."""
        return measurement_window(self.table, self.ids)

    def describe(self) -> str:
        return self.label


def gamma_arrivals(rate_qps: float, n: int, rng: np.random.Generator, cv: float = 1.0,
                   start_s: float = 0.0) -> np.ndarray:
    """`n` arrival times: the first at `start_s`, then gaps Gamma(1/cv^2, cv^2/rate)
    (exponential when cv = 1: a Poisson process)."""
    if not (math.isfinite(rate_qps) and rate_qps > 0):
        raise InputError(f"arrival rate must be a positive number of requests/s (got {rate_qps})")
    if not (math.isfinite(cv) and 0 < cv <= 100):
        raise InputError(f"gamma arrivals: CV must be in (0, 100] (got {cv})")
    if n <= 0:
        return np.empty(0)
    shape = 1.0 / (cv * cv)
    gaps = rng.gamma(shape, 1.0 / (rate_qps * shape), size=int(n) - 1)
    return start_s + np.concatenate([[0.0], np.cumsum(gaps)])


def _check_count(n: int, label: str) -> int:
    if isinstance(n, bool) or int(n) != n or not 1 <= n <= MAX_REQUESTS:
        raise InputError(f"{label}: request count must be a whole number in 1..{MAX_REQUESTS:,} (got {n})")
    return int(n)


def poisson_source(rate_qps: float, n: int, input_tokens: TokenDist, output_tokens: TokenDist,
                   seed: int = 0, table: RequestTable | None = None, max_context: int | None = None,
                   where: str = "workload") -> ArrivalSource:
    """`n` requests, Poisson arrivals at `rate_qps`, lengths drawn from the problem's
    distributions; the same seed gives the same requests."""
    return gamma_source(rate_qps, 1.0, n, input_tokens, output_tokens, seed, table, max_context, where)


def gamma_source(rate_qps: float, cv: float, n: int, input_tokens: TokenDist, output_tokens: TokenDist,
                 seed: int = 0, table: RequestTable | None = None, max_context: int | None = None,
                 where: str = "workload", prefix_cache: PrefixCache | None = None) -> ArrivalSource:
    """As `poisson_source`, with Gamma inter-arrival times of coefficient of variation `cv`.
    With `max_context`, prompts are capped at max_context - 1 and outputs at what is left.
    `prefix_cache` (the workload's): every request shares prefix 0 of `shared_prefix_tokens`,
    or, with a `hit_rate` h, groups of requests share prefixes sized so that a cache holding
    them all hits h of the prompt tokens (solver/replay/sources/prefixes.py)."""
    n = _check_count(n, where)
    rng = np.random.default_rng(seed)
    arrivals = gamma_arrivals(rate_qps, n, rng, cv)
    prompt = sample_lengths(input_tokens, n, rng, f"{where}.input_tokens",
                            None if max_context is None else max(max_context - 1, 1))
    output = sample_lengths(output_tokens, n, rng, f"{where}.output_tokens")
    if max_context is not None:
        output = np.maximum(np.minimum(output, max_context - prompt), 1)
    kind = "poisson" if cv == 1.0 else f"gamma:{cv:g}"
    pid, ptok = workload_prefixes(prefix_cache, prompt)
    return ArrivalSource(arrivals, prompt, output, pid, ptok, table=table,
                         label=f"{kind} {rate_qps:g} req/s x {n}")
