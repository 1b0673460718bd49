"""Many short `fleetplan` runs, each in a process of its own, without paying the imports each time.

A `python -m solver` process spends about a second importing (numpy, pydantic, the schema
models) before it reads its file; a run that fails on a bad input file spends a few
milliseconds after that. `run_forked(jobs)` starts ONE helper interpreter (with `cli_env()`, in
ROOT) that imports `solver.cli.main` and `PRELOAD` once, then forks a fresh child for every job:
the child points fds 1 and 2 at files of its own, sets `sys.argv[0]` as `python -m solver` does,
runs `main(argv)` and exits with its code as `sys.exit` would (an uncaught exception prints its
traceback and exits 1). Each run gets a clean copy of the imported process, so no state passes
between runs, and up to `workers` run at once.

What the real entry point adds (`solver/__main__.py`, interpreter start-up) is checked by
running a sample of the same jobs through `python -m solver` and comparing the outcomes byte for
byte (tests/problem/test_malformed_problems.py). The child leaves with `os._exit` after flushing
stdout and stderr (no atexit handlers), so this is for runs whose effect is their exit code and
what they print, e.g. bad input files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import ROOT, cli_env

# what `plan`, `check` and the other commands import inside their functions, imported once
PRELOAD = ("solver.problem.load", "solver.problem.sweep", "solver.fleet.solve", "solver.plan.planner",
           "solver.report.plan_views")


@dataclass(frozen=True)
class Outcome:
    rc: int | None  # None: timed out (killed)
    stdout: str
    stderr: str


_HELPER = r"""
import importlib, json, os, signal, sys, time, traceback

import solver
from solver.cli.main import main  # imported once; every job forks from here

spec = json.loads(sys.stdin.read())
for name in spec["preload"]:
    importlib.import_module(name)
argv0 = os.path.join(os.path.dirname(solver.__file__), "__main__.py")  # as `python -m solver` sets it


def child(job):
    for fd, path in ((1, job["out"]), (2, job["err"])):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    sys.argv = [argv0, *job["argv"]]
    try:
        code = main(job["argv"])
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


jobs = list(enumerate(spec["jobs"]))
running = {}  # pid -> (index, deadline)
results = {}
while jobs or running:
    while jobs and len(running) < spec["workers"]:
        i, job = jobs.pop(0)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            child(job)
        running[pid] = (i, time.monotonic() + spec["timeout"])
    pid, status = os.waitpid(-1, os.WNOHANG)
    if pid == 0:
        now = time.monotonic()
        for p, (i, deadline) in list(running.items()):
            if now > deadline:
                os.kill(p, signal.SIGKILL)
                os.waitpid(p, 0)
                del running[p]
                results[i] = None
        time.sleep(0.002)
        continue
    i, _ = running.pop(pid)
    results[i] = os.waitstatus_to_exitcode(status)
print(json.dumps([results[i] for i in range(len(spec["jobs"]))]))
"""


def run_forked(jobs: list[list[str]], workers: int | None = None, timeout: float = 60.0) -> list[Outcome]:
    """`fleetplan ARGV` for each ARGV of `jobs` (arguments only, no program name), each in a
    forked child of one helper that imported the CLI once; the outcomes in the order of `jobs`."""
    workers = workers or max(2, os.cpu_count() or 2)
    with tempfile.TemporaryDirectory(prefix="forked-cli-") as tmp:
        files = [(Path(tmp) / f"{i}.out", Path(tmp) / f"{i}.err") for i in range(len(jobs))]
        spec = {"jobs": [{"argv": list(argv), "out": str(o), "err": str(e)} for argv, (o, e) in zip(jobs, files)],
                "workers": workers, "timeout": timeout, "preload": list(PRELOAD)}
        helper = subprocess.run([sys.executable, "-c", _HELPER], input=json.dumps(spec), capture_output=True,
                                text=True, cwd=ROOT, env=cli_env(), timeout=timeout * max(1, len(jobs)))
        assert helper.returncode == 0, f"the forking helper failed:\n{helper.stderr}"
        codes = json.loads(helper.stdout.splitlines()[-1])
        return [Outcome(rc, _read(o), _read(e) if rc is not None else f"TIMEOUT after {timeout:g} s\n{_read(e)}")
                for rc, (o, e) in zip(codes, files)]


def _read(path: Path) -> str:
    """The text a `text=True, errors="replace"` subprocess run would give for this output."""
    return path.read_bytes().decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n") \
        if path.exists() else ""
