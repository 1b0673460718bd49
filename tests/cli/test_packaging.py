"""A non-editable install ships the cards and problems inside the package (SPEC layout)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.cli import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(out)],
        check=True, capture_output=True, text=True,
    )
    (whl,) = out.glob("fleetplan-*.whl")
    return whl


def test_wheel_contains_cards_and_problems(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for kind, folder in (("models", "models"), ("hardware", "hardware"), ("problems", "problems")):
        shipped = {p.name for p in (ROOT / folder).glob("*.yaml")}
        packed = {n.rsplit("/", 1)[-1] for n in names if n.startswith(f"solver/_data/{kind}/")}
        assert shipped and shipped <= packed, f"{kind}: missing {sorted(shipped - packed)}"
    traces = {p.name for p in (ROOT / "traces").glob("*.csv")}  # the data shipped problems name
    assert traces and traces <= {n.rsplit("/", 1)[-1] for n in names if n.startswith("solver/_data/traces/")}
    assert "solver/_data/NOTICE" in names
    assert "solver/cli/main.py" in names
    assert any(n.endswith("entry_points.txt") for n in names)


def test_installed_package_finds_cards_without_a_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site))
    code = (
        "import solver.catalog.shipped as c; print(c.data_dir('models')); "
        "print(len(c.names('models')), len(c.names('hardware'))); "
        "print(c.model_card('llama-3.1-70b').num_layers, c.hardware_card('h100-sxm').memory_gib)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env,
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0].startswith(str(site)), out[0]
    assert out[1] == "10 10"
    assert out[2] == "80 80.0"
    trace = subprocess.run([sys.executable, "-m", "solver", "check", "azure-conv-trace"], cwd=elsewhere, env=env,
                           capture_output=True, text=True)
    assert trace.returncode == 0 and trace.stdout.startswith("ok: azure-conv-trace"), trace.stderr
    plan = subprocess.run([sys.executable, "-m", "solver", "plan", "llama3-70b-online", "--format", "json"],
                          cwd=elsewhere, env=env, capture_output=True, text=True)
    assert plan.returncode == 0, plan.stderr
    assert '"status": "optimal"' in plan.stdout
