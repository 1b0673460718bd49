"""Bad problem files fail cleanly: exit 2, the file, the line and the field in the message.

Every file in tests/malformed/ is a near-copy of a valid problem with exactly one defect. Its
first two lines say what the error message must contain:

    # expect: services[0].workload.qps     (the field path, or the words, the message must name)
    # line: 10                             (the line the message must point at, or `any`)

Each file is run through the command line in a process of its own: `fleetplan check FILE` for
every file, and `fleetplan plan FILE` for half of them: every file in PLAN_ALWAYS and files
spread evenly over the rest (plan loads the problem through the same code as check). The runs
fork from one helper that imported the CLI once (tests/support/forked_cli.py: a `python -m
solver` process spends about a second on imports, a bad file a few milliseconds after them),
in parallel, once per test session; every REAL_EVERY-th of them also runs as `python -m solver`
subprocess and must give the same exit code, stdout and stderr byte for byte. The inputs
built to exhaust time or memory (LIMITS) always run as capped `python -m solver` subprocesses.

Cases that the code mishandles today are marked xfail(strict=True) in KNOWN_BUGS, so that a
fix turns them into failures to be un-marked (and so that they cannot silently regress again).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.support.cli import ROOT, cli_env
from tests.support.forked_cli import Outcome, run_forked

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "malformed"
GOOD = ROOT / "problems" / "llama3-70b-online.yaml"
FILES = sorted(CORPUS.glob("*.yaml"))
COMMANDS = ("check", "plan")
TIMEOUT_S = 60.0

# Files that only go through `check` (plan would add nothing but time).
CHECK_ONLY = {"yaml_alias_bomb.yaml", "yaml_alias_bomb_value.yaml"}
# Per-file limits for inputs built to exhaust time or memory: (seconds, bytes of address space).
LIMITS = {"yaml_alias_bomb.yaml": (3.0, 2 << 30), "yaml_alias_bomb_value.yaml": (3.0, 2 << 30)}

KNOWN_BUGS: dict[str, str] = {}  # all fixed; add 'file.yaml': 'BUG: ...' to track a new one

# Files that once exposed bugs (now fixed): planned too, so a regression shows on both paths.
FIXED_BUGS = {
    "bool_for_qps.yaml",
    "supply_bool.yaml",
    "duplicate_service_names.yaml",
    "duplicate_hardware.yaml",
    "max_throughput_unbounded.yaml",
    "supply_all_zero.yaml",
    "unknown_key_capitalized.yaml",
    "unknown_key_type_name.yaml",
    "yaml_recursive_alias.yaml",
    "yaml_alias_bomb.yaml",
    "yaml_alias_bomb_value.yaml",
    "yaml_syntax_unclosed_bracket.yaml",
    "yaml_syntax_unclosed_quote.yaml",
}

# Always planned too: every known bug (so a fix is seen on both paths) and the defects found
# only when cards are resolved, after the schema accepted the file.
PLAN_ALWAYS = set(KNOWN_BUGS) | FIXED_BUGS | {
    "unknown_model.yaml",
    "unknown_hardware.yaml",
    "model_card_path_missing.yaml",
    "max_context_above_model.yaml",
    "tokens_above_model_context.yaml",
}


@dataclass(frozen=True)
class Expect:
    field: str
    line: int | None  # None: any line


def expectation(path: Path) -> Expect:
    head = path.read_bytes().decode("utf-8", errors="replace").splitlines()[:2]
    assert len(head) == 2 and head[0].startswith("# expect: ") and head[1].startswith("# line: "), (
        f"{path.name}: must start with '# expect: FIELD' and '# line: N|any'"
    )
    field = head[0].removeprefix("# expect: ").strip()
    line = head[1].removeprefix("# line: ").strip()
    return Expect(field, None if line == "any" else int(line))


def _argv(command: str, path: Path) -> list[str]:
    return [sys.executable, "-m", "solver", command, str(path)]


def run_cli(argv: list[str], timeout: float = TIMEOUT_S) -> Outcome:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", cwd=ROOT,
                           env=cli_env(), timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return Outcome(None, _text(exc.stdout), f"TIMEOUT after {timeout:g} s\n{_text(exc.stderr)}")
    return Outcome(p.returncode, p.stdout, p.stderr)


def _text(b: bytes | str | None) -> str:
    if isinstance(b, bytes):
        return b.decode("utf-8", errors="replace")
    return b or ""


def _limited_start(argv: list[str], max_bytes: int):
    """Start a capped process (before any thread exists, so preexec_fn is safe)."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()

    def cap() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))

    proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=ROOT, env=cli_env(),
                            preexec_fn=cap if os.name == "posix" else None)
    return proc, out, err


def _limited_finish(job, deadline: float) -> Outcome:
    proc, out, err = job
    try:
        rc = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc = None
    out.seek(0)
    err.seek(0)
    stdout, stderr = _text(out.read()), _text(err.read())
    out.close()
    err.close()
    if rc is None:
        stderr = f"TIMEOUT (killed)\n{stderr}"
    return Outcome(rc, stdout, stderr)


def _plan_set() -> set[str]:
    """PLAN_ALWAYS plus files spread evenly over the rest: half the corpus, rounded up."""
    always = [f.name for f in FILES if f.name in PLAN_ALWAYS and f.name not in CHECK_ONLY]
    rest = [f.name for f in FILES if f.name not in PLAN_ALWAYS and f.name not in CHECK_ONLY]
    need = min(len(rest), max(0, (len(FILES) + 1) // 2 - len(always)))
    return set(always) | {rest[k * len(rest) // need] for k in range(need)}


PLANNED = _plan_set()


def _jobs() -> list[tuple[str, Path]]:
    return [(c, f) for f in FILES for c in COMMANDS if c == "check" or f.name in PLANNED]


@cache
def outcomes() -> dict[tuple[str, str], Outcome]:
    """Run every (command, file) once, forked in parallel; capped inputs run alongside, as
    capped subprocesses."""
    capped, plain = {}, []
    start = time.monotonic()
    for command, path in _jobs():
        if path.name in LIMITS:
            seconds, max_bytes = LIMITS[path.name]
            capped[(command, path.name)] = (_limited_start(_argv(command, path), max_bytes),
                                            start + seconds)
        else:
            plain.append((command, path))
    runs = run_forked([[c, str(p)] for c, p in plain], timeout=TIMEOUT_S)
    results = dict(zip(((c, p.name) for c, p in plain), runs))
    for key, (job, deadline) in capped.items():
        results[key] = _limited_finish(job, deadline)
    return results


def _real_sample() -> list[tuple[str, Path]]:
    """Every REAL_EVERY-th forked job, both commands, for the byte-for-byte comparison."""
    plain = [(c, p) for c, p in _jobs() if p.name not in LIMITS]
    return plain[::REAL_EVERY]


REAL_EVERY = 30  # of the ~210 forked runs, 7 also run as `python -m solver`


def _params():
    for command, path in _jobs():
        marks = []
        if path.name in KNOWN_BUGS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[path.name]))
        yield pytest.param(command, path, id=f"{command}-{path.stem}", marks=marks)


def test_corpus_is_large_and_annotated():
    assert len(FILES) >= 30, f"only {len(FILES)} malformed problems in {CORPUS}"
    for path in FILES:
        expectation(path)
    assert len(PLANNED) * 2 >= len(FILES), "at least half of the corpus must also go through plan"
    assert set(KNOWN_BUGS) <= {f.name for f in FILES}, "KNOWN_BUGS names a file that is gone"


@pytest.mark.parametrize(("command", "path"), list(_params()))
def test_malformed_problem_exits_2_naming_file_line_and_field(command: str, path: Path):
    want = expectation(path)
    got = outcomes()[(command, path.name)]
    report = f"\n--- rc={got.rc}\n--- stdout:\n{got.stdout}\n--- stderr:\n{got.stderr}"
    assert got.rc == 2, f"expected exit 2 (bad input){report}"
    assert "Traceback" not in got.stderr + got.stdout, report
    assert got.stdout == "", f"nothing but the error may be printed{report}"
    assert path.name in got.stderr, f"the message must name the file{report}"
    # One line of the message carries the file, the expected line and the field together.
    lines = [ln for ln in got.stderr.splitlines() if path.name in ln and want.field in ln]
    assert lines, f"no message line names both the file and {want.field!r}{report}"
    if want.line is not None:
        at = f"{path.name}:{want.line}:"
        assert any(at in ln for ln in lines), f"expected '{at}' on the line naming {want.field!r}{report}"


@pytest.mark.parametrize(("command", "path"), _real_sample(), ids=lambda x: getattr(x, "stem", x))
def test_forked_run_equals_the_real_command_line(command: str, path: Path):
    """The forked run of a job (what the corpus tests assert on) is exactly what `python -m
    solver` gives for it: exit code, stdout and stderr."""
    real = run_cli(_argv(command, path))
    assert real.rc == 2, real  # a corpus file: bad input either way
    assert outcomes()[(command, path.name)] == real


def test_valid_problem_passes_check():
    got = run_cli([sys.executable, "-m", "solver", "check", str(GOOD)])
    assert got.rc == 0, got.stderr
    assert got.stdout.startswith(f"ok: {GOOD}"), got.stdout
    assert got.stderr == ""


def test_check_reports_every_bad_file_and_still_passes_the_good_one():
    bad = [CORPUS / n for n in ("qps_nan.yaml", "unknown_top_key.yaml", "yaml_syntax_bad_indent.yaml",
                                "unknown_model.yaml")]
    argv = [sys.executable, "-m", "solver", "check", str(bad[0]), str(GOOD), *map(str, bad[1:])]
    got = run_cli(argv)
    assert got.rc == 2, got
    assert "Traceback" not in got.stderr
    assert f"ok: {GOOD}" in got.stdout, got
    assert got.stdout.count("ok:") == 1, got.stdout
    errors = [ln for ln in got.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == len(bad), got.stderr
    for path in bad:
        want = expectation(path)
        assert any(path.name in ln and want.field in ln for ln in got.stderr.splitlines()), (
            f"{path.name} not reported:\n{got.stderr}"
        )
