"""A non-editable install ships the cards and problems inside the package (SPEC layout); `make
plan` installs the runtime and the plots only, `make test` everything the tests need."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
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


# ---- what `make plan` and `make test` install (issue 18) ----------------------------------------

# packages of hundreds of MB (with their own trees) that planning never imports: the tests and the
# optional commands bring them in; `make plan` and the runtime dependencies must not
HEAVY = {"torch", "ray", "pyarrow", "pandas", "aiperf", "transformers", "datasets", "scipy",
         "tensorflow", "jax", "dash"}


def _name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement.strip()).group(0).lower().replace("_", "-")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _make_rules(text: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The Makefile's rules: target -> prerequisites, target -> recipe lines (variables expanded)."""
    var: dict[str, str] = {}
    deps: dict[str, list[str]] = {}
    recipes: dict[str, list[str]] = {}
    current: list[str] = []

    def expand(s: str) -> str:
        for _ in range(5):
            s = re.sub(r"\$\((\w+)\)", lambda m: var.get(m.group(1), m.group(0)), s)
        return s

    for line in text.splitlines():
        if line.startswith("\t"):
            for t in current:
                recipes[t].append(expand(line.strip()))
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.match(r"^(\w+)\s*(?::=|\?=|=)\s*(.*)$", line)
        if m:
            var[m.group(1)] = expand(m.group(2).strip())
            current = []
            continue
        m = re.match(r"^([^:=#]+):(?!=)\s*(.*)$", line)
        if m:
            current = expand(m.group(1)).split()
            for t in current:
                deps[t] = expand(m.group(2)).split()
                recipes[t] = []
    return deps, recipes


def _installs(target: str) -> list[str]:
    """Every `pip install` argument the recipes of `target` and its prerequisites run."""
    deps, recipes = _make_rules((ROOT / "Makefile").read_text())
    seen, todo, args = set(), [target], []
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        todo += deps.get(t, [])
        for line in recipes.get(t, []):
            m = re.search(r"pip install (.*?)(?:\|\||$)", line)
            if m:
                args += [a.strip("'\"") for a in m.group(1).split() if not a.startswith("-")]
    return args


def _packages(args: list[str]) -> set[str]:
    """The distributions those arguments name: `.[extra,...]` expands to the extras' requirements."""
    extras = _pyproject()["project"]["optional-dependencies"]
    out: set[str] = set()
    for a in args:
        m = re.fullmatch(r"\.(?:\[(.*)\])?", a)
        if m is None:
            out.add(_name(a))
            continue
        out |= {_name(r) for r in _pyproject()["project"]["dependencies"]}
        for extra in filter(None, (m.group(1) or "").split(",")):
            out |= {_name(r) for r in extras[extra.strip()]}
    return out


def test_runtime_dependencies_are_light():
    heavy = {_name(r) for r in _pyproject()["project"]["dependencies"]} & HEAVY
    assert not heavy, f"heavy packages in [project].dependencies: {sorted(heavy)}"


def test_make_plan_installs_the_runtime_and_plots_only():
    pulled = _packages(_installs("plan"))
    assert "ortools" in pulled and "matplotlib" in pulled, pulled  # it can plan and draw
    assert not pulled & HEAVY, f"`make plan` installs {sorted(pulled & HEAVY)}"
    assert not pulled & {"pytest", "hypothesis", "ruff"}, "`make plan` installs the test extras"


def test_make_test_installs_what_the_tests_need():
    pulled = _packages(_installs("test"))
    assert {"pytest", "pytest-xdist", "hypothesis", "ruff", "pyarrow", "ray", "torch", "aiperf",
            "kubernetes", "jsonschema", "matplotlib"} <= pulled, pulled
    assert "make test" in (ROOT / ".ci" / "run").read_text()
