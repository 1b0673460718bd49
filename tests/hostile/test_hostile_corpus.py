"""The hostile corpus (tests/hostile/corpus/, written by make_corpus.py) runs clean: every file
is refused with an InputError whose message is one line naming the file, in bounded time,
through the real loader of its kind; a sample (every file built to exhaust time or memory, and
every SAMPLE_EVERY-th other one) also through the command line, in a subprocess with capped
time and address space: exit 2, one line on stderr naming the file, no traceback.

Special files that cannot be committed (a FIFO, /dev/zero, /dev/urandom, a directory, a sparse
file over the size limit) are made at test time and given to every reader that takes a file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from solver.errors import InputError
from tests.support.cli import ROOT, cli_env

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
FILES = sorted(p for p in CORPUS.iterdir() if p.is_file())
LOAD_S = 30.0  # seconds one file may take in-process on a loaded CI machine (milliseconds is usual)
CLI_S = 60.0  # a command's whole run (imports included) on a loaded CI machine
CLI_BYTES = 2 << 30  # address space of a command: a file that expanded would fail here
SAMPLE_EVERY = 10
# built to exhaust time or memory: always through the command line, under its caps
HEAVY = ("deep-flow-list-5000", "bigint-qps-100000", "alias-billion", "alias-fan", "seq-sweep", "seq-block",
         "explode", "trace-deep", "result-deep", "histogram-weights-overflow", "inline-model-hidden-1e309")


def load(path: Path) -> None:
    """Read `path` through the loader of its kind (see make_corpus.py)."""
    name = path.name
    if name.startswith(("problem-", "grid-")):
        from solver.problem.load import load_problem

        rp = load_problem(path)
        if name.startswith("grid-"):
            from solver.candidates.build import build_candidates

            build_candidates(rp)
    elif name.startswith("model-"):
        from solver.catalog import shipped

        shipped.model_card(str(path))
    elif name.startswith("hardware-"):
        from solver.catalog import shipped

        shipped.hardware_card(str(path))
    elif name.startswith(("trace-", "lengths-")):
        from solver.problem.workload_data import summarize

        summarize(str(path))
    elif name.startswith("measured-"):
        from solver.accuracy.validate import validate_file

        validate_file(path)
    elif name.startswith("result-"):
        from solver.deploy.facts import load_plan

        load_plan(str(path))
    else:  # pragma: no cover - a file the generator did not name
        raise AssertionError(f"{name}: no loader for this prefix")


def command(path: Path) -> list[str]:
    name, p = path.name, str(path)
    if name.startswith("grid-"):
        return ["plan", p, "--time-limit", "5"]
    if name.startswith("problem-"):
        return ["check", p]
    if name.startswith("model-"):
        return ["estimate", "--model", p, "--hardware", "h100-sxm"]
    if name.startswith("hardware-"):
        return ["estimate", "--model", "llama-3.1-8b", "--hardware", p]
    if name.startswith(("trace-", "lengths-")):
        return ["trace", p]
    if name.startswith("measured-"):
        return ["validate", p]
    return ["canary", p]


def test_the_corpus_is_large_and_reproducible():
    sys.path.insert(0, str(HERE))
    try:
        import make_corpus
    finally:
        sys.path.remove(str(HERE))
    files = make_corpus.corpus()
    assert len(files) >= 120
    assert sorted(files) == [p.name for p in FILES], "run `python tests/hostile/make_corpus.py`"
    for name, content in files.items():
        raw = content.encode() if isinstance(content, str) else content
        assert (CORPUS / name).read_bytes() == raw, f"{name} differs: run tests/hostile/make_corpus.py"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_hostile_file_is_refused_in_one_line(path):
    t0 = time.monotonic()
    with pytest.raises(InputError) as info:
        load(path)
    took = time.monotonic() - t0
    msg = str(info.value)
    assert took < LOAD_S, f"{path.name}: {took:.1f} s"
    assert "\n" not in msg, f"{path.name}: more than one line: {msg[:500]}"
    assert path.name in msg, f"{path.name}: the message does not name the file: {msg[:300]}"
    assert len(msg) < 1000, f"{path.name}: a {len(msg)}-character message"


def _limit_memory() -> None:  # in the child, before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (CLI_BYTES, CLI_BYTES))


SAMPLE = [p for i, p in enumerate(FILES) if i % SAMPLE_EVERY == 0 or any(h in p.name for h in HEAVY)]


@pytest.mark.parametrize("path", SAMPLE, ids=[p.name for p in SAMPLE])
def test_hostile_file_through_the_command_line(path):
    r = subprocess.run([sys.executable, "-m", "solver", *command(path)], capture_output=True, text=True,
                       errors="replace", timeout=CLI_S, cwd=ROOT, env=cli_env(),
                       preexec_fn=_limit_memory if sys.platform == "linux" else None)
    assert r.returncode == 2, f"{path.name}: rc={r.returncode}\n{r.stderr[-2000:]}"
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and path.name in lines[0], r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


def _special_files(tmp_path: Path) -> dict[str, str]:
    files = {"directory": str(tmp_path)}
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.yaml")
        files["fifo"] = str(tmp_path / "fifo.yaml")
    for dev in ("/dev/zero", "/dev/urandom"):
        if os.path.exists(dev):
            files[dev] = dev
            link = tmp_path / f"{Path(dev).name}.yaml"
            link.symlink_to(dev)
            files[f"link to {dev}"] = str(link)
    big = tmp_path / "huge.yaml"
    with open(big, "wb") as fh:  # sparse: no disk used
        fh.write(b"name: x\n")
        fh.truncate((1 << 30) + 1)
    files["huge"] = str(big)
    return files


READERS = {
    "problem": lambda p: __import__("solver.problem.load", fromlist=["x"]).load_problem(p),
    "model card": lambda p: __import__("solver.catalog.shipped", fromlist=["x"]).model_card(p),
    "hardware card": lambda p: __import__("solver.catalog.shipped", fromlist=["x"]).hardware_card(p),
    "trace": lambda p: __import__("solver.replay.sources.trace", fromlist=["x"]).load_trace(p),
    "lengths": lambda p: __import__("solver.problem.workload_data", fromlist=["x"]).read_lengths(p),
    "measured": lambda p: __import__("solver.accuracy.validate", fromlist=["x"]).validate_file(p),
    "result": lambda p: __import__("solver.deploy.facts", fromlist=["x"]).load_plan(p),
    "simulate result": lambda p: __import__("solver.plan.sim_input", fromlist=["x"]).load_result(p),
    "bench result": lambda p: __import__("solver.accuracy.readers.common", fromlist=["x"]).read_user_file(p),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_special_files_are_refused_by_every_reader(tmp_path, reader):
    for what, path in _special_files(tmp_path).items():
        t0 = time.monotonic()
        with pytest.raises(InputError) as info:
            READERS[reader](path)
        assert time.monotonic() - t0 < 5.0, (reader, what)
        msg = str(info.value)
        assert "\n" not in msg and path in msg, (reader, what, msg)
        assert "not a regular file" in msg or "limit" in msg, (reader, what, msg)


def test_fifo_through_the_command_line(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "problem.yaml"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "solver", "check", str(fifo)], capture_output=True, text=True,
                       timeout=CLI_S, cwd=ROOT, env=cli_env())
    assert r.returncode == 2 and "FIFO" in r.stderr and str(fifo) in r.stderr, r.stderr
