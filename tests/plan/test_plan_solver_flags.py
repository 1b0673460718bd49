"""`fleetplan plan --solver-log` and `--export-model FILE` through the command line (in-process):
the log goes to stderr and leaves stdout's document unchanged; the exported file is the main
plan solve's CP-SAT model as a text-format CpModelProto, written once per plan even when the
homogeneous comparison and the decision record solve again; a bad path exits 2."""

from __future__ import annotations

import json

from google.protobuf import text_format
from ortools.sat import cp_model_pb2

from solver.cli.main import main
from solver.fleet import solve as fleet_solve

SMALL = ["plan", "maverick-decode", "--no-timings", "--format", "json"]


def run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main([*args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_solver_log_on_stderr_and_the_document_unchanged(capsys):
    rc, plain, quiet = run(capsys, *SMALL, "--no-record")
    rc_log, out, err = run(capsys, *SMALL, "--no-record", "--solver-log")
    assert rc == rc_log == 0
    assert out == plain and "Starting CP-SAT" not in out
    doc = json.loads(out)
    assert "Starting CP-SAT solver" not in quiet
    assert err.count("Starting CP-SAT solver") >= len(doc["solver"]["stages"]) > 0


def test_exported_model_is_the_plans_model(capsys, tmp_path):
    path = tmp_path / "model.pbtxt"
    rc, out, _ = run(capsys, *SMALL, "--no-record", "--export-model", str(path))
    assert rc == 0
    doc = json.loads(out)
    proto = text_format.Parse(path.read_text(), cp_model_pb2.CpModelProto())
    counts = [i for i, v in enumerate(proto.variables) if v.name.startswith("n[")]
    assert len(counts) == doc["solver"]["candidates_in_model"] > 0
    assert sorted(proto.objective.vars) == counts  # the primary stage: cost over every column
    assert proto.constraints and {f"demand:{s['name']}" for s in doc["services"]} <= {
        c.name for c in proto.constraints}


def test_record_and_comparison_solves_do_not_export(capsys, tmp_path, monkeypatch):
    """The decision record re-solves (runners-up, fallback, validity) and a heterogeneous plan
    is solved again with homogeneous routes: the model is still exported once, by the main
    solve, and the record leaves the file as --no-record writes it."""
    written: list[object] = []
    real = fleet_solve.export_model
    monkeypatch.setattr(fleet_solve, "export_model", lambda m, p: (written.append(p), real(m, p)))
    with_record, without = tmp_path / "record.txt", tmp_path / "plain.txt"
    assert run(capsys, *SMALL, "--export-model", str(with_record))[0] == 0
    assert run(capsys, *SMALL, "--no-record", "--export-model", str(without))[0] == 0
    assert written == [with_record, without]
    assert with_record.read_text() == without.read_text()
    rc, out, _ = run(capsys, "plan", "hetero-prefill-decode", "--no-record", "--no-timings", "--format", "json",
                     "--export-model", str(tmp_path / "hetero.txt"))
    assert rc == 0 and json.loads(out)["heterogeneity"] is not None  # the comparison did solve
    assert written[2:] == [tmp_path / "hetero.txt"]


def test_unwritable_export_path_exits_2(capsys, tmp_path):
    bad = tmp_path / "no-such-folder" / "model.txt"
    rc, out, err = run(capsys, *SMALL, "--no-record", "--export-model", str(bad))
    assert rc == 2 and out == ""
    assert err.startswith("error: --export-model ") and ": cannot write: " in err and str(bad) in err
    assert err.count("\n") == 1
