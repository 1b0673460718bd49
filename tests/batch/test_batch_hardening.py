"""fleetplan batch against hostile folders and a killed driver (issue 18, points 7, 8, 9)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from solver.batch import executors, runner
from solver.batch.runner import BatchOptions, run_batch
from tests.support.cli import cli, cli_env
from tests.support.questions_problem import small_problem


def _problem(folder: Path, file: str, name: str, qps: float = 100) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text(small_problem(qps=qps).replace("name: small-two-types", f"name: {name}"))


def test_a_hostile_file_fails_alone(tmp_path):
    """Point 7: a file the loader cannot even parse (nested 200,000 deep) is its row; the rest are
    planned and every file is written."""
    _problem(tmp_path / "in", "ok.yaml", "ok")
    (tmp_path / "in" / "deep.yaml").write_text("[" * 200_000 + "]" * 200_000)
    r = cli("batch", "in", "--out", "out", "--no-record", "--no-progress", cwd=tmp_path, timeout=300)
    assert r.returncode == 2, r.stderr
    rows = {row["problem"]: row for row in json.loads((tmp_path / "out" / "summary.json").read_text())["rows"]}
    assert rows["ok"]["status"] == "optimal" and (tmp_path / "out" / rows["ok"]["result"]).is_file()
    assert rows["deep"]["status"] == "invalid" and "deep.yaml" in rows["deep"]["error"]


def test_a_bug_while_loading_one_file_fails_it_alone(tmp_path, monkeypatch):
    for name in ("a", "b", "c"):
        _problem(tmp_path / "in", f"{name}.yaml", name)
    real = runner.load_problem

    def flaky(path):
        if Path(path).stem == "b":
            raise RuntimeError("boom")
        return real(path)

    monkeypatch.setattr(runner, "load_problem", flaky)
    s = run_batch([str(tmp_path / "in")], BatchOptions(out=tmp_path / "out", timings=False, record=False),
                  progress_stream=None)
    assert [(r.problem, r.status) for r in s.rows] == [("a", "optimal"), ("b", "error"), ("c", "optimal")]
    assert "RuntimeError: boom" in s.rows[1].error and s.exit_code == 3
    assert (tmp_path / "out" / "summary.json").is_file()


def test_result_and_record_names_never_meet(tmp_path):
    """Point 8: X.record.yaml's result is not X.yaml's record; both are planned and resumed."""
    _problem(tmp_path / "in", "x.yaml", "x", qps=100)
    _problem(tmp_path / "in", "x.record.yaml", "x-record", qps=50)
    _problem(tmp_path / "in", "X.yaml", "upper-x", qps=70)  # the same key where case is ignored
    opts = BatchOptions(out=tmp_path / "out", timings=False, record=False)
    s = run_batch([str(tmp_path / "in")], opts, progress_stream=None)
    assert sorted(r.status for r in s.rows) == ["optimal"] * 3
    results = {r.problem: r.result for r in s.rows}
    assert len({v.casefold() for v in results.values()}) == 3
    for name, rel in results.items():
        assert json.loads((tmp_path / "out" / rel).read_text())["problem"] == name
        rec = json.loads((tmp_path / "out" / rel.replace("results/", "records/", 1)).read_text())
        assert rec["row"]["problem"] == name
    again = run_batch([str(tmp_path / "in")], BatchOptions(out=tmp_path / "out", timings=False, record=False,
                                                           resume=True), progress_stream=None)
    assert [r.resumed for r in again.rows] == [True] * 3


def test_jobs_are_capped_at_the_usable_cpus(monkeypatch):
    monkeypatch.setattr(executors, "usable_cpus", lambda: 2)
    notes = io.StringIO()
    assert executors.capped_jobs(64, notes=notes) == 2
    assert "--jobs 64: capped at the 2 CPUs" in notes.getvalue() and "--force-jobs" in notes.getvalue()
    assert executors.capped_jobs(64, force=True) == 64 and executors.capped_jobs(2) == 2


def test_a_local_ray_instance_is_capped_at_the_usable_cpus(monkeypatch):
    # Ray counts the machine's CPUs (or its cgroup quota), not the affinity mask
    monkeypatch.setattr(executors, "usable_cpus", lambda: 2)
    monkeypatch.setattr(executors, "ray_default_cpus", lambda: 64)
    notes = io.StringIO()
    assert executors.local_ray_cpus(notes=notes) == 2
    assert notes.getvalue().startswith("--ray local (64 CPUs): capped at the 2 CPUs") and "--force-jobs" in notes.getvalue()
    assert executors.local_ray_cpus(force=True) == 64
    monkeypatch.setattr(executors, "ray_default_cpus", lambda: 2)
    assert executors.local_ray_cpus(notes=notes) == 2 and notes.getvalue().count("\n") == 1


def test_ray_local_starts_with_the_capped_cpus_without_starting_ray(monkeypatch):
    calls = []

    class FakeRay:
        def is_initialized(self):
            return False

        def init(self, **kw):
            calls.append(kw)

        def shutdown(self):
            calls.append("shutdown")

    monkeypatch.setattr(executors, "import_ray", FakeRay)
    monkeypatch.setattr(executors, "usable_cpus", lambda: 2)
    monkeypatch.setattr(executors, "ray_default_cpus", lambda: 64)
    notes = io.StringIO()
    with executors.ray_session("local", notes=notes):
        pass
    assert calls[0]["num_cpus"] == 2 and calls[1] == "shutdown" and "--ray local (64 CPUs)" in notes.getvalue()
    with executors.ray_session("local", force=True):
        pass
    assert calls[2]["num_cpus"] == 64


def _children() -> dict[int, int]:
    """pid -> parent pid of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            out[int(d)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def _descendants(root: int) -> set[int]:
    parents = _children()
    found, frontier = set(), {root}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_the_driver_leaves_no_process(tmp_path):
    """Point 9: the forkserver, the resource tracker and every worker go when the driver is killed."""
    for i in range(40):
        _problem(tmp_path / "in", f"p{i:02d}.yaml", f"p{i:02d}", qps=50 + i)
    p = subprocess.Popen([sys.executable, "-m", "solver", "batch", "in", "--out", "out", "--jobs", "2",
                          "--force-jobs", "--no-progress"], cwd=tmp_path, env=cli_env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and p.poll() is None:
            seen |= _descendants(p.pid)
            if len(seen) >= 4:  # resource tracker, forkserver, two workers
                break
            time.sleep(0.2)
        assert p.poll() is None and len(seen) >= 4, f"the batch ended or never started its workers ({seen})"
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(map(_alive, seen)):
            time.sleep(0.1)
        assert not [pid for pid in seen if _alive(pid)], "processes of the killed batch still run"
    finally:
        for pid in seen:  # only what this test started, and only while it still runs Python
            if _alive(pid) and b"python" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)
