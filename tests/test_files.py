"""solver/files.py, the one way fleetplan writes an output file (issue 18, point 10): symlinks
followed, non-regular targets and the command's inputs refused, no temporary file left on
failure; and through the command line, exit 2 with one line."""

from __future__ import annotations

import os

import pytest

from solver import files
from solver.errors import InputError
from tests.support.cli import cli
from tests.support.questions_problem import small_problem


def _leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_symlink_is_followed_and_stays_a_link(tmp_path):
    (tmp_path / "real.txt").write_text("old")
    os.symlink("real.txt", tmp_path / "link.txt")
    files.write_text(tmp_path / "link.txt", "new")
    assert os.path.islink(tmp_path / "link.txt") and (tmp_path / "real.txt").read_text() == "new"


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_non_regular_targets_are_refused(tmp_path, kind):
    p = tmp_path / "t"
    os.mkfifo(p) if kind == "fifo" else p.mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        files.write_text(p, "x", "--out")
    assert _leftovers(tmp_path) == []


def test_an_input_is_refused(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("keep")
    os.symlink(p, tmp_path / "alias.yaml")
    with pytest.raises(InputError, match="--out .*alias.yaml: is the input"):
        files.write_text(tmp_path / "alias.yaml", "x", "--out", [str(p)])
    assert p.read_text() == "keep"


def test_no_temporary_file_is_left_on_failure(tmp_path, monkeypatch):
    def fail(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(InputError, match="--plot .*out.png: cannot write: No space left on device"):
        files.write_text(tmp_path / "out.png", "x", "--plot")
    monkeypatch.undo()
    with pytest.raises(ZeroDivisionError):
        with files.replacing(tmp_path / "y.txt") as tmp:
            tmp.write_text("half")
            1 / 0
    assert _leftovers(tmp_path) == [] and not (tmp_path / "y.txt").exists()


def test_a_missing_folder_or_a_bad_name_is_one_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot write: No such file or directory"):
        files.write_text(tmp_path / "no" / "such" / "f.json", "x")
    with pytest.raises(InputError, match="not a file name"):
        files.write_text(f"{tmp_path}/a\0b", "x")


@pytest.fixture
def problem(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(small_problem())
    return p


def _one_line_exit_2(r, *says):
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and all(s in lines[0] for s in says), r.stderr


def test_cli_refuses_to_overwrite_its_input(tmp_path, problem):
    before = problem.read_text()
    _one_line_exit_2(cli("plan", "p.yaml", "--no-record", "--out", "p.yaml", cwd=tmp_path, timeout=120),
                     "--out p.yaml", "is the input")
    os.symlink("p.yaml", tmp_path / "l.yaml")
    _one_line_exit_2(cli("plan", "p.yaml", "--no-record", "--out", "l.yaml", cwd=tmp_path, timeout=120),
                     "is the input")
    assert problem.read_text() == before


def test_cli_refuses_a_fifo_and_keeps_a_symlink(tmp_path, problem):
    os.mkfifo(tmp_path / "pipe")
    _one_line_exit_2(cli("plan", "p.yaml", "--no-record", "--out", "pipe", cwd=tmp_path, timeout=120),
                     "--out pipe", "a FIFO")
    (tmp_path / "doc.json").write_text("")
    os.symlink("doc.json", tmp_path / "latest.json")
    r = cli("plan", "p.yaml", "--no-record", "--format", "json", "--out", "latest.json", cwd=tmp_path,
            timeout=120)
    assert r.returncode == 0, r.stderr
    assert os.path.islink(tmp_path / "latest.json") and '"status"' in (tmp_path / "doc.json").read_text()
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("out", ["afile", "/proc/no-such-folder"])
def test_schema_out_onto_a_file_or_an_unwritable_place(tmp_path, out):
    (tmp_path / "afile").write_text("")
    _one_line_exit_2(cli("schema", "--out", out, cwd=tmp_path, timeout=60), f"--out {out}")
