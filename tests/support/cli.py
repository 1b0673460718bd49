"""Running `fleetplan` (`python -m solver`) in a subprocess, as a user would, for the CLI tests.

`ROOT` is the repository's root. `cli(*args)` runs the command there (or in `cwd`) with
`cli_env()`: this environment without FLEETPLAN_DEBUG (which turns error lines into tracebacks
on purpose) and with the checkout first on PYTHONPATH. `env_lacking(tmp, *packages)` is such an
environment in which importing each of `packages` fails, as when it is not installed.

`cli_shared(*args)` is `cli(*args)` run once per test process: the modules that check the same
output (the shipped problems' plans, by test_plan_cli, test_schema_publish and test_decision)
share one run of it; `plan_json(path)` is the shared `plan PATH --format json --no-timings`.
A test that checks determinism compares a shared run with a fresh `cli` run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 300


def cli_env(*first_on_path: Path) -> dict[str, str]:
    """This process's environment for a `fleetplan` subprocess; `first_on_path` go before ROOT."""
    env = dict(os.environ)
    env.pop("FLEETPLAN_DEBUG", None)
    paths = [*map(str, first_on_path), str(ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    return env


def cli(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None,
        timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
    """`fleetplan ARGS...` in `cwd`, its output captured as text."""
    return subprocess.run([sys.executable, "-m", "solver", *args], capture_output=True, text=True,
                          cwd=cwd, env=cli_env() if env is None else env, timeout=timeout)


def env_lacking(tmp: Path, *packages: str) -> dict[str, str]:
    """A `cli_env()` in which `import PACKAGE` raises ImportError for each of `packages`."""
    site = tmp / "site"
    for pkg in packages:
        (site / pkg).mkdir(parents=True)
        (site / pkg / "__init__.py").write_text(f"raise ImportError('No module named {pkg}')\n")
    return cli_env(site)


@cache
def cli_shared(*args: str) -> subprocess.CompletedProcess:
    """`fleetplan ARGS...` in ROOT, run once per test process (do not use it where a test
    changes files the command reads)."""
    return cli(*args)


# The decision record's validity search is deterministic (bounded by solves and CP-SAT's
# deterministic time); its wall-clock safety net (--record-seconds, 15 s by default) only fires
# on a machine so loaded that the search (about half a second of CPU on the default problem)
# takes 15 s, and the record then says cut_short. Tests that compare two record-carrying runs
# byte for byte keep a net no run reaches, so that even then they compare like with like.
EXACT_RECORD = ("--record-seconds", "600")


def plan_json(path: str | Path, exact: bool = False) -> subprocess.CompletedProcess:
    """`fleetplan plan PATH --format json --no-timings` (with its decision record), run once;
    `exact`: with EXACT_RECORD, for tests that compare it with another record-carrying run."""
    return cli_shared("plan", str(path), "--format", "json", "--no-timings", *(EXACT_RECORD if exact else ()))
