"""The model export and the search log of a fleet solve, on a hand-made instance: one service
of 5 QPS and two colocated columns (3 QPS for $2/h, 5 QPS for $3/h per instance)."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format
from ortools.sat import cp_model_pb2

from solver.errors import InputError
from solver.fleet.build import build_model
from solver.fleet.instance import FleetInstance, ServiceSpec
from solver.fleet.objective import cost_expr
from solver.fleet.options import SolveOptions
from solver.fleet.solve import solve
from solver.fleet.status import SolveStatus
from solver.schema.roles import COLOCATED

OPTS = SolveOptions(time_limit_s=10)


def one_service() -> FleetInstance:
    spec = ServiceSpec(name="chat", demand=5000, colocated=True, disaggregated=False,
                       ratio_lo=None, ratio_hi=None, max_configs=None)
    return FleetInstance(
        objective="min_cost", service=np.zeros(2, dtype=np.int64),
        role=np.full(2, COLOCATED), hw=np.array([0, 1]), devices=np.array([1, 1]),
        cap=np.array([3000, 5000]), cost=np.array([20_000, 30_000]), power=np.array([700, 700]),
        ub=np.array([2, 1]), demand_ub=np.array([2, 1]), services=(spec,),
        hw_names=("a", "b"), supply=(None, None), budget=None, power_cap=None,
    )


def parse(path) -> cp_model_pb2.CpModelProto:
    return text_format.Parse(path.read_text(), cp_model_pb2.CpModelProto())


def test_export_is_the_primary_stage_model(tmp_path):
    """One service: no standalone bounds or hints, so the exported model is exactly the built
    model with the cost objective (the tie-break stages come after the export)."""
    inst = one_service()
    sol = solve(inst, SolveOptions(time_limit_s=10, export_model=tmp_path / "m.txt"))
    assert sol.status is SolveStatus.OPTIMAL and sol.counts.tolist() == [0, 1]  # $3 beats 2 x $2
    got = parse(tmp_path / "m.txt")
    ref = build_model(inst)
    ref.m.minimize(cost_expr(ref))
    assert got == text_format.Parse(str(ref.m.proto), cp_model_pb2.CpModelProto())
    assert [v.name for v in got.variables[:2]] == ["n[0]", "n[1]"]
    assert list(got.objective.coeffs) == [20_000, 30_000]
    assert any(c.name == "demand:chat" for c in got.constraints)


def test_no_export_without_the_option(tmp_path):
    solve(one_service(), OPTS)
    assert list(tmp_path.iterdir()) == []


def test_follow_up_options_drop_the_export_only(tmp_path):
    opts = SolveOptions(time_limit_s=7, solver_log=True, export_model=tmp_path / "m.txt")
    assert opts.follow_up(max_stages=2) == SolveOptions(time_limit_s=7, solver_log=True, max_stages=2)


def test_unwritable_path_names_the_flag_and_the_path(tmp_path):
    bad = tmp_path / "missing" / "m.txt"
    with pytest.raises(InputError, match=r"^--export-model .*missing/m\.txt: cannot write: ") as exc:
        solve(one_service(), SolveOptions(time_limit_s=10, export_model=bad))
    assert exc.value.exit_code == 2 and "\n" not in str(exc.value)


def test_solver_log_goes_to_stderr(capfd):
    sol = solve(one_service(), SolveOptions(time_limit_s=10, solver_log=True))
    out, err = capfd.readouterr()
    assert out == ""
    assert err.count("Starting CP-SAT solver") == len(sol.stages) == 3  # cost, devices, configs


def test_quiet_without_the_log(capfd):
    solve(one_service(), OPTS)
    assert capfd.readouterr() == ("", "")
