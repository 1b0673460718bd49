"""Speculating instances in the replay (decode pools and colocated instances).

A speculative iteration (solver/perf/speculative.py) drafts k tokens per sequence, verifies
k + 1 positions and yields E = (1 - a^(k+1)) / (1 - a) tokens per sequence on average. The
replay keeps its one-token-per-iteration bookkeeping:

- a pure decode iteration is charged the speculative iteration's time per token,
  (drafts + verification) / E, at the iteration's decode count and context: the mean rate of
  the performance model;
- a mixed iteration (colocated: decoders and prefill chunks in one pass) is the real iteration:
  the scheduler charges each decoder k + 1 tokens of the budget (vLLM's
  `num_tokens_with_spec - num_computed_tokens`, solver/replay/schedulers/vllm.py), the step
  time prices the drafted positions beside the chunk and the draft passes
  (steptime.py `_spec_mixed_s`), and after it the decoders take the E - 1 tokens it yielded
  beyond the one the bookkeeping gives, as whole decode steps of no time once they add up to
  one (`Instance.spec_gain`), so a prompt's chunks are as far apart as in the engine and the
  decoders' rate is E per iteration.

What it leaves out is the spread of accepted lengths between sequences and iterations (a
sequence's TPOT varies around the mean; throughput does not).
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
    speculative iteration's seconds per token, and the drafts' seconds on the same nodes for
    the mixed iterations (module docstring)."""
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
    draft = speculative.draft_s(arch, hw, rows, np.maximum(g_n, 1.0), g_c, engine, sp, rt.cycle)
    draft = draft.reshape(len(n), len(steps.ctx_x))
    draft[0] = 0.0
    steps._draft_rows = draft.tolist()
    steps.spec_k, steps.spec_gain = int(sp.tokens), float(sp.expected_tokens)
    return steps
