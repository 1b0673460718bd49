"""The candidate grid: built column by column in itertools.product's order, its axes pruned one
by one without losing a valid row, and refused above MAX_GRID_ROWS (solver/candidates/grid.py)."""

from __future__ import annotations

import itertools
from dataclasses import fields, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.candidates.grid import MAX_GRID_ROWS, check_grid_size, prune_axes
from solver.catalog import shipped
from solver.errors import InputError
from solver.perf.arch import ModelArch
from solver.perf.tables import Plans
from solver.perf.validity import valid_mask

DENSE = ModelArch.from_card(shipped.model_card("llama-3.1-70b"))
MOE = ModelArch.from_card(shipped.model_card("deepseek-v3"))

small = st.lists(st.integers(1, 96), min_size=1, max_size=6, unique=True)


def _axes(tp, pp, ep, dp, batch):
    return {"hw": [0, 1], "tp": tp, "pp": pp, "ep": ep, "dp": dp, "batch": batch, "wprec": [0], "kvprec": [0],
            "cp": [1], "spec": [0]}


def _valid_rows(arch, axes) -> set[tuple]:
    plans = Plans.grid(**axes)
    keep = valid_mask(arch, plans)
    names = [f.name for f in fields(Plans)]
    return {tuple(float(getattr(plans, k)[i]) for k in names) for i in np.flatnonzero(keep)}


@settings(max_examples=60, deadline=None)
@given(tp=small, pp=small, ep=small, dp=st.lists(st.integers(1, 8), min_size=1, max_size=3, unique=True),
       batch=st.lists(st.integers(1, 64), min_size=1, max_size=3, unique=True), moe=st.booleans())
def test_axis_pruning_keeps_every_valid_row_and_counts_the_rest(tp, pp, ep, dp, batch, moe):
    arch = MOE if moe else DENSE
    axes = _axes(tp, pp, ep if moe else [1], dp if moe else [1], batch)
    pruned = prune_axes(arch, axes, extra_factor=3)
    assert _valid_rows(arch, pruned.values) == _valid_rows(arch, axes)
    assert pruned.full_rows == 3 * len(Plans.grid(**axes))
    assert pruned.rows == 3 * len(Plans.grid(**pruned.values))


def test_grid_is_in_product_order_without_row_tuples():
    axes = _axes([1, 2, 4], [1, 2], [1, 8], [1], [1, 8, 64])
    plans = Plans.grid(**axes)
    names = [f.name for f in fields(Plans)]
    expect = list(itertools.product(*[axes[k] for k in names]))
    assert [tuple(float(getattr(plans, k)[i]) for k in names) for i in range(len(plans))] == \
        [tuple(map(float, r)) for r in expect]
    assert len(Plans.grid(**{**axes, "tp": []})) == 0


def test_a_grid_over_the_limit_is_refused_before_it_is_built():
    n = 64
    axes = _axes(list(range(1, n + 1)), list(range(1, n + 1)), [1], [1], list(range(1, n + 1)))
    pruned = prune_axes(DENSE, axes, extra_factor=n)  # 64 chunk sizes
    assert pruned.rows > MAX_GRID_ROWS
    with pytest.raises(InputError, match=r"p.yaml:9: search: the colocated grid of service 'chat' has "
                                         r"[\d,]+ rows \(2 hardware options x 7 tp x 64 pp x 64 batch x 64 "
                                         r"chunk_tokens\), over the limit of 500,000"):
        check_grid_size(pruned, "p.yaml:9", "chat", "colocated", {"chunk_tokens": n})
    check_grid_size(replace(pruned, rows=MAX_GRID_ROWS), "p.yaml:9", "chat", "colocated", {})


def test_exploding_search_space_fails_fast_with_exit_2(tmp_path):
    from solver.candidates.build import build_candidates
    from solver.problem.load import parse_problem

    text = (shipped.data_dir("problems") / "llama3-70b-online.yaml").read_text() + (
        "search:\n  pp: [" + ", ".join(map(str, range(1, 65))) + "]\n  batch: ["
        + ", ".join(map(str, range(1, 65))) + "]\n  chunk_tokens: [" + ", ".join(str(512 * i) for i in range(1, 65)) + "]\n")
    rp = parse_problem(text.replace("runtime: auto", "runtime: colocated"), "big.yaml")
    with pytest.raises(InputError, match="big.yaml:27: search: the colocated grid .* over the limit"):
        build_candidates(rp)


def test_check_refuses_the_grid_plan_refuses(tmp_path):
    """`fleetplan check` gives the exit-2 error `plan` gives for a search space over the limit."""
    from tests.support.cli import cli

    def values(step: int) -> str:
        return "[" + ", ".join(str(step * i) for i in range(1, 65)) + "]"

    text = (shipped.data_dir("problems") / "llama3-70b-online.yaml").read_text() + (
        f"search:\n  tp: {values(1)}\n  pp: {values(1)}\n  batch: {values(1)}\n  chunk_tokens: {values(512)}\n")
    big = tmp_path / "big.yaml"
    big.write_text(text.replace("runtime: auto", "runtime: colocated"))
    got = cli("check", str(big))
    assert got.returncode == 2, got
    err = got.stderr.strip().splitlines()
    assert len(err) == 1 and "search: the colocated grid" in err[0] and "over the limit of 500,000" in err[0], err
    assert str(big) in err[0] and got.stdout == ""
    planned = cli("plan", str(big), "--no-record", "--no-timings")
    assert planned.returncode == 2 and planned.stderr.strip() == err[0], planned
