"""Speculative decode pools in the replay: the pure decode iterations of a plan that speculates.

A speculative iteration (solver/perf/speculative.py) drafts k tokens per sequence, verifies
k + 1 positions and yields E = (1 - a^(k+1)) / (1 - a) tokens per sequence on average. The
replay keeps its one-token-per-iteration bookkeeping and charges each pure decode iteration
the speculative iteration's time per token, (drafts + verification) / E, at the iteration's
decode count and context: the mean rate of the performance model. What it leaves out is the
spread of accepted lengths between sequences and iterations (a sequence's TPOT varies around
the mean; throughput does not).
"""

from __future__ import annotations

import numpy as np

from solver.perf import runtime as rt
from solver.perf import speculative
from solver.perf.arch import ModelArch
from solver.perf.tables import HardwareTable, Plans
from solver.replay.steptime import StepTimes
from solver.schema.engine import EngineParams


def speculating(steps: StepTimes, arch: ModelArch, hw: HardwareTable, plan: Plans, engine: EngineParams,
                sp: speculative.Speculation) -> StepTimes:
    """`steps` with its pure decode cycles (every decode count x context node) replaced by the
    speculative iteration's seconds per token; iterations that carry prefill are unchanged."""
    n = np.arange(0.0, steps.max_seqs + 1.0)
    g_n, g_c = (a.ravel() for a in np.meshgrid(n, steps.ctx_x, indexing="ij"))
    rows = plan.take(np.zeros(len(g_n), dtype=np.int64)).with_batch(np.maximum(g_n, 1.0))
    rows = Plans.of(**{**{f: getattr(rows, f) for f in Plans.__dataclass_fields__}, "spec": 1})
    plain = np.zeros(len(g_n))
    per_token = speculative.per_token_s(arch, hw, rows, np.maximum(g_n, 1.0), g_c, engine, sp, plain, rt.cycle)
    table = per_token.reshape(len(n), len(steps.ctx_x))
    table[0] = steps.step_s
    steps._dec_cycle = table
    steps._dec_rows = table.tolist()
    return steps
