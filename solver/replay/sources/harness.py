"""The benchmark tools' closed loops, set up as each tool runs them (what their code does, with
versions and files: `solver/replay/sources/closed.py`). Each returns a `ClosedLoop` whose
measured requests are the tool's counted ones and whose `window()` is the tool's benchmark
duration."""

from __future__ import annotations

import math

import numpy as np

from solver.errors import InputError
from solver.replay.requests import RequestTable
from solver.replay.sources.closed import ClosedLoop, Phase, as_lengths, check_counts, vllm_send_offsets
from solver.replay.sources.lengths import normal_lengths, uniform_lengths

UNLIMITED = 1 << 40  # a semaphore no phase fills (SGLang's warm-up is not concurrency-limited)


def _copies(prompt: np.ndarray, output: np.ndarray, n: int, max_output: int | None = None):
    out = int(output[0]) if max_output is None else min(int(output[0]), max_output)
    return np.full(n, int(prompt[0]), dtype=np.int64), np.full(n, out, dtype=np.int64)


def vllm_bench_serve(n_clients: int, prompt_tokens, output_tokens, num_warmups: int = 0,
                     ready_check: bool = False, request_rate: float = math.inf, burstiness: float = 1.0,
                     seed: int = 0, send_delay_s: float = 0.0, table: RequestTable | None = None,
                     ramp_up: tuple[str, float, float] | None = None) -> ClosedLoop:
    """`vllm bench serve --max-concurrency n_clients --num-prompts len(prompt_tokens)`:
    [ready check: the first request alone], [`num_warmups` copies of the first request through
    n_clients slots], then every request through n_clients slots, all eligible at once
    (`request_rate` inf) or at vLLM's precomputed Gamma times (`ramp_up`: `--ramp-up-strategy`
    with its start and end rps, `vllm_send_offsets`). Measured: the run's requests."""
    p, o = as_lengths(prompt_tokens, output_tokens)
    check_counts(n_clients, len(p), "num_prompts")
    phases = []
    if ready_check:
        phases.append(Phase("ready check", *_copies(p, o, 1), concurrency=1, measured=False))
    if num_warmups > 0:
        phases.append(Phase("warm-up", *_copies(p, o, int(num_warmups)), concurrency=n_clients, measured=False))
    offsets = vllm_send_offsets(len(p), request_rate, burstiness, np.random.default_rng(seed), ramp_up)
    phases.append(Phase("run", p, o, concurrency=n_clients, measured=True, offsets_s=offsets))
    rate = "" if math.isinf(request_rate) else f" --request-rate {request_rate:g} --burstiness {burstiness:g}"
    if ramp_up is not None:
        rate += f" --ramp-up-strategy {ramp_up[0]} --ramp-up-start-rps {ramp_up[1]:g} --ramp-up-end-rps {ramp_up[2]:g}"
    return ClosedLoop(phases, send_delay_s=send_delay_s, table=table,
                      label=f"vllm bench serve --max-concurrency {n_clients} --num-prompts {len(p)}"
                            f" --num-warmups {num_warmups}{rate}")


def inferencex_benchmark_serving(n_clients: int, input_len: int, output_len: int, range_ratio: float = 0.8,
                                 prompts_per_client: int = 10, warmups_per_client: int = 2, seed: int = 0,
                                 send_delay_s: float = 0.0, table: RequestTable | None = None) -> ClosedLoop:
    """InferenceX's benchmark (`run_benchmark_serving`): its benchmark_serving.py at request rate
    inf, `--num-prompts prompts_per_client * N`, `--num-warmups warmups_per_client * N`, lengths
    uniform on [int(range_ratio * L), L] for prompt and output alike."""
    check_counts(n_clients, prompts_per_client * n_clients, "num_prompts")
    rng = np.random.default_rng(seed)
    n = prompts_per_client * n_clients
    p = uniform_lengths(input_len, range_ratio, n, rng)
    o = uniform_lengths(output_len, range_ratio, n, rng)
    loop = vllm_bench_serve(n_clients, p, o, num_warmups=warmups_per_client * n_clients, seed=seed,
                            send_delay_s=send_delay_s, table=table)
    loop.label = (f"InferenceX benchmark_serving.py --max-concurrency {n_clients} --num-prompts {n} "
                  f"--num-warmups {warmups_per_client * n_clients} --random-range-ratio {range_ratio:g}")
    return loop


def aiperf_concurrency(n_clients: int, prompt_tokens, output_tokens, warmup_prompt_tokens=None,
                       warmup_output_tokens=None, send_delay_s: float = 0.0,
                       table: RequestTable | None = None) -> ClosedLoop:
    """`aiperf profile --concurrency n_clients --request-count len(prompt_tokens)
    --warmup-request-count len(warmup_prompt_tokens)`: the warm-up phase through n_clients
    credits, drained, then the profiling phase through n_clients credits. Measured: profiling."""
    p, o = as_lengths(prompt_tokens, output_tokens)
    check_counts(n_clients, len(p), "request_count")
    phases = []
    if warmup_prompt_tokens is not None and len(np.atleast_1d(warmup_prompt_tokens)):
        wp, wo = as_lengths(warmup_prompt_tokens, warmup_output_tokens)
        phases.append(Phase("warm-up", wp, wo, concurrency=n_clients, measured=False))
    phases.append(Phase("profiling", p, o, concurrency=n_clients, measured=True))
    warm = len(phases[0]) if len(phases) > 1 else 0
    return ClosedLoop(phases, send_delay_s=send_delay_s, table=table,
                      label=f"aiperf --concurrency {n_clients} --request-count {len(p)} --warmup-request-count {warm}")


def aiconfigurator_aiperf(n_clients: int, isl: float, osl: float, isl_stddev: float = 0.0,
                          osl_stddev: float = 0.0, multi_round: int = 20, warmups_per_client: int = 2,
                          seed: int = 0, send_delay_s: float = 0.0, table: RequestTable | None = None) -> ClosedLoop:
    """aiconfigurator's generated benchmark: aiperf with `--num-requests multi_round * C
    --warmup-request-count 2 * C`, lengths ceil(normal(isl, isl_stddev)) (fixed at stddev 0)."""
    check_counts(n_clients, multi_round * n_clients, "num_requests")
    rng = np.random.default_rng(seed)
    n, w = multi_round * n_clients, warmups_per_client * n_clients
    lengths = [normal_lengths(isl, isl_stddev, n + w, rng), normal_lengths(osl, osl_stddev, n + w, rng)]
    loop = aiperf_concurrency(n_clients, lengths[0][w:], lengths[1][w:], lengths[0][:w], lengths[1][:w],
                              send_delay_s=send_delay_s, table=table)
    loop.label = f"aiconfigurator bench_run.sh: {loop.label}"
    return loop


def sglang_bench_serving(n_clients: int, prompt_tokens, output_tokens, warmup_requests: int = 1,
                         request_rate: float = math.inf, seed: int = 0, send_delay_s: float = 0.0,
                         table: RequestTable | None = None) -> ClosedLoop:
    """`python -m sglang.bench_serving --max-concurrency n_clients`: `warmup_requests` copies
    of the first request (output capped at 32 tokens) all at once, a 1 s pause, then the run
    through n_clients slots (Poisson gaps from the first send when the rate is finite)."""
    p, o = as_lengths(prompt_tokens, output_tokens)
    check_counts(n_clients, len(p), "num_prompts")
    phases = []
    if warmup_requests > 0:
        phases.append(Phase("warm-up", *_copies(p, o, int(warmup_requests), max_output=32),
                            concurrency=UNLIMITED, measured=False))
    offsets = None
    if not math.isinf(request_rate):
        gaps = np.random.default_rng(seed).exponential(1.0 / request_rate, size=len(p) - 1)
        offsets = np.concatenate([[0.0], np.cumsum(gaps)])
    phases.append(Phase("run", p, o, concurrency=n_clients, measured=True, offsets_s=offsets,
                        gap_before_s=1.0 if phases else 0.0))  # bench_serving.py: time.sleep(1.0)
    return ClosedLoop(phases, send_delay_s=send_delay_s, table=table,
                      label=f"sglang.bench_serving --max-concurrency {n_clients} --num-prompts {len(p)}")


BENCHMARKS = ("inferencex", "aiconfigurator", "vllm", "aiperf", "sglang")


def benchmark_source(tool: str, concurrency: int, input_tokens: int, output_tokens: int, seed: int = 0,
                     table: RequestTable | None = None) -> ClosedLoop:
    """The closed loop of one measured benchmark point (concurrency C, nominal lengths): as
    InferenceX runs it (`inferencex`: 10C requests, 2C warm-ups, lengths over [0.8 L, L]),
    aiconfigurator's generated aiperf benchmark (`aiconfigurator`: 20C requests, 2C warm-ups,
    fixed lengths), or a tool at its defaults with 10C fixed-length requests (`vllm`: no
    warm-up; `aiperf`: no warm-up; `sglang`: its one warm-up request)."""
    if tool == "inferencex":
        return inferencex_benchmark_serving(concurrency, input_tokens, output_tokens, seed=seed, table=table)
    if tool == "aiconfigurator":
        return aiconfigurator_aiperf(concurrency, input_tokens, output_tokens, seed=seed, table=table)
    n = 10 * int(concurrency)
    p, o = np.full(n, int(input_tokens)), np.full(n, int(output_tokens))
    if tool == "vllm":
        return vllm_bench_serve(concurrency, p, o, seed=seed, table=table)
    if tool == "aiperf":
        return aiperf_concurrency(concurrency, p, o, table=table)
    if tool == "sglang":
        return sglang_bench_serving(concurrency, p, o, seed=seed, table=table)
    raise InputError(f"benchmark tool must be one of {', '.join(BENCHMARKS)} (got {tool!r})")
