"""The axes of a (service, role)'s candidate grid, pruned one axis at a time, and its size limit.

Search spaces that are valid one by one can explode together (64 values on each of tp, pp,
batch and chunk_tokens are 16.7 million rows per hardware type, before precisions and power
caps). Two things keep the grid bounded before a single row is built:

- axis pruning: a value that breaks a validity rule on its own (solver/perf/validity.py: tp
  not dividing the attention heads or the KV heads, pp above the layers, ep not dividing the
  experts) makes every row it is in invalid, so it is dropped from its axis; the rows it would
  have made are counted as evaluated and pruned invalid, exactly as if they had been built;
- a limit: a grid of more than MAX_GRID_ROWS rows after axis pruning is refused with an error
  that names the problem's `search:` line and the size of every axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solver.errors import InputError
from solver.perf.arch import ModelArch
from solver.perf.speculative import speculation_axis
from solver.perf.tables import precision_code
from solver.problem.load import ResolvedProblem
from solver.schema.problem import Service
from solver.schema.roles import COLOCATED, ROLES

# rows of one (service, role)'s grid: the performance model evaluates some 30,000 rows a second
# on one loaded core and holds ~40 float columns per row, so 500,000 rows are ~15 s and ~0.2 GB;
# the shipped examples' grids have a few thousand rows
MAX_GRID_ROWS = 500_000


@dataclass(frozen=True)
class Axes:
    """The pruned axes and how many rows the dropped values would have made."""

    values: dict[str, list]
    full_rows: int  # rows of the unpruned grid
    rows: int  # rows of the pruned one

    @property
    def dropped(self) -> int:
        return self.full_rows - self.rows


def _ok_tp(arch: ModelArch, tp: int) -> bool:
    if arch.heads % tp != 0:
        return False
    return bool(arch.mla_latent) or arch.kv_heads % tp == 0 or tp % arch.kv_heads == 0


def prune_axes(arch: ModelArch, axes: dict[str, list], extra_factor: int = 1) -> Axes:
    """`axes` (name -> values, every axis of the grid) with the values that break a rule on
    their own removed; `extra_factor` multiplies the rows (chunk sizes, KV links)."""
    full = math.prod(len(v) for v in axes.values()) * extra_factor
    out = dict(axes)
    out["tp"] = [t for t in axes["tp"] if t >= 1 and _ok_tp(arch, t)]
    out["pp"] = [p for p in axes["pp"] if 1 <= p <= arch.layers]
    if arch.moe_layers:
        out["ep"] = [e for e in axes["ep"] if e >= 1 and arch.num_experts % e == 0]
    rows = math.prod(len(v) for v in out.values()) * extra_factor
    return Axes(out, full, rows)


def check_grid_size(axes: Axes, where: str, service: str, role: str, extra: dict[str, int]) -> None:
    """Refuse a grid over MAX_GRID_ROWS rows, naming every axis's size."""
    if axes.rows <= MAX_GRID_ROWS:
        return
    sizes = {k: len(v) for k, v in axes.values.items() if len(v) > 1}
    sizes.update({k: n for k, n in extra.items() if n > 1})
    label = {"hw": "hardware options", "wprec": "precisions", "kvprec": "KV precisions", "spec": "speculation"}
    shown = " x ".join(f"{n} {label.get(k, k)}" for k, n in sizes.items())
    raise InputError(f"{where}: search: the {role} grid of service '{service}' has {axes.rows:,} "
                     f"rows ({shown}), over the limit of {MAX_GRID_ROWS:,}; give fewer values in "
                     "search: (or fewer hardware entries, power caps or precisions)")


def grid_axes(rp: ResolvedProblem, s: Service, arch: ModelArch, role: int, n_hw: int) -> tuple[Axes, np.ndarray]:
    """The pruned axes of a (service, role)'s grid on `n_hw` hardware variants and its chunk
    sizes, refused (`check_grid_size`) when over the limit."""
    search = rp.problem.search
    moe = arch.moe_layers > 0
    kv = s.kv_precisions
    chunks = np.asarray(search.chunk_tokens) if role == COLOCATED else np.zeros(1, dtype=int)
    axes = prune_axes(arch, {
        "hw": list(range(n_hw)), "tp": list(search.tp), "pp": list(search.pp),
        "ep": list(search.ep) if moe else [1], "dp": list(search.dp) if moe else [1],
        "batch": list(search.batch), "wprec": [precision_code(p) for p in s.precisions],
        "kvprec": [precision_code(p) for p in kv] if kv is not None else [0],
        "cp": list(search.cp), "spec": list(speculation_axis(rp.speculation_of(s.name), role)),
    }, len(chunks))
    line = rp.doc.line_of(("search",))
    check_grid_size(axes, f"{rp.doc.path}:{line if line is not None else '?'}", s.name,
                    ROLES[role], {"chunk_tokens": len(chunks)})
    return axes, chunks


def check_grid_sizes(rp: ResolvedProblem, roles_of) -> None:
    """Every (service, role) grid of the problem within the limit, without building a row
    (`fleetplan check`); `roles_of(service)` gives a service's roles."""
    n_hw = sum(len(rp.caps_of(j)) for j in range(len(rp.hardware)))  # one variant per power cap
    for si, s in enumerate(rp.problem.services):
        for role in roles_of(s):
            grid_axes(rp, s, rp.archs[si], role, n_hw)
