"""`fleetplan batch --ray` on a real local Ray instance (2 CPUs, a small object store, no
dashboard; started once for this module): the same batch planned on Ray, in this process and
through the command line connecting to the instance's address, gives byte-identical results
and summary to the local run (without decision records, to keep it quick: the record is
the same function in a worker, and the other tests plan with it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from solver.batch.runner import BatchOptions, run_batch
from tests.support.cli import cli

ray = pytest.importorskip("ray")  # in the dev extra; `fleetplan[ray]` for users

REFS = ["good", "bad/*.yaml"]


@pytest.fixture(scope="module")
def cluster():
    ctx = ray.init(num_cpus=2, object_store_memory=80 * 1024 * 1024, include_dashboard=False,
                   log_to_driver=False, logging_level="ERROR")
    yield ctx.address_info["gcs_address"]
    ray.shutdown()


def outputs(out: Path) -> dict[str, bytes]:
    got = {f"results/{p.name}": p.read_bytes() for p in sorted((out / "results").iterdir())}
    for name in ("summary.csv", "summary.json"):
        got[name] = (out / name).read_bytes()
    return got


@pytest.fixture(scope="module")
def local(batch_tree) -> dict[str, bytes]:
    cwd = os.getcwd()
    os.chdir(batch_tree)
    try:
        s = run_batch(REFS, BatchOptions(out=Path("local"), timings=False, record=False), progress_stream=None)
    finally:
        os.chdir(cwd)
    assert s.exit_code == 2 and s.counts.optimal == 8
    return outputs(batch_tree / "local")


def test_ray_in_process_equals_the_local_run(cluster, batch_tree, local, monkeypatch):
    monkeypatch.chdir(batch_tree)
    s = run_batch(REFS, BatchOptions(out=Path("on-ray"), timings=False, record=False, ray="auto"),
                  progress_stream=None)
    assert ray.is_initialized()  # the batch used the caller's connection and left it open
    assert s.exit_code == 2
    assert outputs(batch_tree / "on-ray") == local


def test_fleetplan_batch_ray_address_equals_the_local_run(cluster, batch_tree, local):
    r = cli("batch", *REFS, "--out", "cli-ray", "--no-timings", "--no-record", "--ray", cluster,
            cwd=batch_tree)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout.splitlines()[-1].startswith("10 problems: 8 planned, 1 infeasible, 1 invalid")
    assert outputs(batch_tree / "cli-ray") == local


def test_an_unreachable_address_is_bad_input(batch_tree, capsys, monkeypatch):
    from solver.cli.main import main

    monkeypatch.chdir(batch_tree)
    assert main(["batch", "good/small.yaml", "--out", "x", "--ray", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --ray 127.0.0.1:1: cannot connect to a Ray cluster: nothing "
                          "answers at 127.0.0.1:1 ("), err
    assert not (batch_tree / "x").exists()  # nothing planned, nothing written
