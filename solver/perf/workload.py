"""A service's token lengths and latency bounds as the runtime models read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from solver.schema.engine import EngineParams

if TYPE_CHECKING:
    from solver.perf.speculative import Speculation


@dataclass(frozen=True, slots=True)
class Workload:
    """Token lengths of one service (means and tails, tokens) and the burstiness of its arrivals:
    `arrival_cv`, the coefficient of variation of inter-arrival times (1: Poisson), which scales
    the queueing waits by its square (runtime.py `queue_wait`)."""

    input_tokens: float
    output_tokens: float
    input_p99_tokens: float | None = None
    output_p99_tokens: float | None = None
    speculation: Speculation | None = None  # decode plans with `spec` on speculate (speculative.py)
    prefix_hit_rate: float = 0.0  # share of prompt tokens served from the prefix cache (prefix.py)
    shared_prefix_tokens: float = 0.0  # tokens every prompt shares, KV once per instance (prefix.py)
    arrival_cv: float = 1.0

    @property
    def arrival_cv2(self) -> float:
        return self.arrival_cv * self.arrival_cv

    @property
    def input_p99(self) -> float:
        return self.input_p99_tokens or self.input_tokens

    @property
    def output_p99(self) -> float:
        return self.output_p99_tokens or self.output_tokens

    @property
    def decode_context(self) -> float:
        """Mean KV context of a decoding sequence: input + output / 2.

        Also the KV cache an instance is sized for, per sequence: an engine holds each
        sequence's current context (vLLM allocates KV blocks as tokens are generated), and in
        the staggered steady state of continuous batching a sequence is on average halfway
        through its output, so `batch` sequences hold batch x (input + output / 2) tokens. A
        static batch (all sequences in lockstep) needs the full input + output at its end."""
        return self.input_tokens + self.output_tokens / 2.0


@dataclass(frozen=True, slots=True)
class Slo:
    """Latency bounds in ms (None: unconstrained) and the safety margin on predictions."""

    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None
    safety_margin: float = 0.0

    @property
    def bounds_tpot(self) -> bool:
        """Whether any TPOT bound applies (offline work has none)."""
        return self.tpot_p50_ms is not None or self.tpot_p99_ms is not None


def slot_fill(slo: Slo, engine: EngineParams) -> float:
    """Average occupancy of the decode batch slots the capacity counts on.

    Online (a TPOT bound): `decode_slot_fill`, slots left free as Poisson arrivals come and go.
    Offline (no TPOT bound): 1. Requests wait in the engine's queue and the scheduler refills
    every freed slot at the next iteration (vLLM v1 admits waiting requests each step while
    `max_num_seqs` and the KV blocks allow), so a saturated batch runs full."""
    return engine.decode_slot_fill if slo.bounds_tpot else 1.0
