"""The queueing waits of solver/perf/runtime.py: the prefill lane's (`queue_wait`, G/D/1), and
decode slots: how many decoders an instance runs and how long a request waits for one (used by
`colocated_role` and `decode_role`).

An instance holds at most `batch` decoding sequences (vLLM `max_num_seqs`, SGLang
`max_running_requests`, TensorRT-LLM `max_batch_size`). A request keeps its slot for its whole
decode, `output x TPOT` seconds, so the slots form an M/D/c queue with c = batch: below
saturation a request still finds every slot taken with the Erlang-C probability, and then waits
about service / (c (1 - rho)). The replay (solver/replay/instance.py, checked by
benchmarks/bench_replay_capacity.py) shows that wait: at a fixed slot occupancy such as 0.92 a
16-slot instance with 1,000-token outputs keeps new requests waiting seconds for a slot, which
breaks a TTFT bound the prefill lane alone would meet. The capacity of an instance is therefore
the occupancy at which that wait still meets the SLO (never above the engine's
`decode_slot_fill`), not a fixed occupancy.

Erlang C by the Halfin-Whitt approximation (S. Halfin and W. Whitt, "Heavy-traffic limits for
queues with many exponential servers", Operations Research 29(3), 1981):
C = 1 / (1 + sqrt(2 pi) beta Phi(beta) exp(beta^2 / 2)), beta = (1 - rho) sqrt(c). At c = 1
(exactly C = rho) it is 1% high at rho 0.5, 2% low at 0.9 and 23% high at 0.3 (where waits are
short anyway; the p99 wait it implies is 6% long); it is exact in the many-slot limit the decode
batches live in.
The wait tail is
P(W > t) = C exp(-2 c (1 - rho) t / D) for deterministic service D: the exponential-tail
approximation of runtime.py `queue_wait` (its form at c = 1), the factor 2 being the
deterministic service's half of the M/M/c queue's variance (Kingman).
"""

from __future__ import annotations

import numpy as np

_SQRT_2PI = np.sqrt(2.0 * np.pi)


def _norm_cdf(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF (Abramowitz and Stegun 7.1.26 for erf, |error| < 1.5e-7), x >= 0."""
    z = np.asarray(x, dtype=float) / np.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return 0.5 * (1.0 + (1.0 - poly * np.exp(-z * z)))


def erlang_c(rho, slots) -> np.ndarray:
    """Probability that an arrival finds all `slots` busy at occupancy `rho` (Halfin-Whitt)."""
    rho = np.clip(np.asarray(rho, dtype=float), 0.0, 1.0 - 1e-9)
    beta = (1.0 - rho) * np.sqrt(np.maximum(np.asarray(slots, dtype=float), 1.0))
    beta = np.minimum(beta, 30.0)  # C underflows to 0 long before; keeps exp finite
    return 1.0 / (1.0 + _SQRT_2PI * beta * _norm_cdf(beta) * np.exp(beta * beta / 2.0))


def queue_wait(rho, service_s, q: float, ca2: float = 1.0) -> np.ndarray:
    """q-quantile of the G/D/1 wait, exponential-tail approximation (seconds).

    P(W > t) = rho exp(-t / m), m = (ca^2 + cs^2) / 2 x S / (1 - rho) the mean wait of those who
    wait: Kingman's heavy-traffic G/G/1 approximation (J. F. C. Kingman, "The single server queue
    in heavy traffic", Proc. Cambridge Phil. Soc. 57, 1961; W. Whitt, "Approximations for the
    GI/G/m queue", Production and Operations Management 2(2), 1993), with cs = 0 for the
    deterministic service. Poisson arrivals (ca^2 = 1) give the M/D/1 form S / (2 (1 - rho)),
    whose mean is the exact M/D/1 mean; burstier arrivals (a trace's `arrival_cv`) wait ca^2
    times longer at the same occupancy."""
    rho = np.clip(rho, 0.0, 1.0 - 1e-9)
    tail = ca2 * service_s / (2.0 * (1.0 - rho)) * np.log(np.maximum(rho / (1.0 - q), 1.0))
    return np.where(rho > 1.0 - q, tail, 0.0)


def slot_wait(rho, slots, service_s, q: float, ca2: float = 1.0) -> np.ndarray:
    """q-quantile of the wait for a free slot (seconds): M/D/c, c = `slots`, occupancy `rho`,
    each request holding its slot `service_s`; arrivals of squared CV `ca2` make it G/D/c, whose
    conditional wait is ca2 times the M/D/c one (Whitt 1993's (ca^2 + cs^2) / 2 factor on the
    M/M/c wait with cs = 0, as runtime.py `queue_wait`; the probability of waiting is kept)."""
    rho = np.clip(np.asarray(rho, dtype=float), 0.0, 1.0 - 1e-9)
    c = np.maximum(np.asarray(slots, dtype=float), 1.0)
    busy = erlang_c(rho, c)
    hold = ca2 * np.asarray(service_s, dtype=float)
    tail = hold / (2.0 * c * (1.0 - rho)) * np.log(np.maximum(busy / (1.0 - q), 1.0))
    return np.where(busy > 1.0 - q, tail, 0.0)


def budget_decoders(batch, budget, input_tokens: float, output_tokens: float, chunked: bool) -> np.ndarray:
    """Decoding sequences a colocated instance can keep: at most `batch`, and, when the decode
    tokens count inside the iteration's token budget (chunked prefill: runtime.py
    `effective_chunk`), at most o c / (s + o): each request needs s prompt tokens and o decode
    tokens of budget, so with every iteration spending its whole budget c, n decoders leave
    c - n prefill tokens, which feed n new decoders only while n s / o <= c - n. Past that the
    engine runs fewer decoders than `batch` (its waiting prompts keep them from being admitted
    faster), rather than having no capacity."""
    b = np.asarray(batch, dtype=float)
    if not chunked:
        return b
    o = float(output_tokens)
    return np.minimum(b, np.floor(o * np.asarray(budget, dtype=float) / (float(input_tokens) + o)))
