"""`fleetplan deploy` and `fleetplan canary` through the real command: the files written, the same
bytes on a second run, and bad input as one line on stderr with exit 2."""

from __future__ import annotations

import os
import re

import pytest

from tests.deploy.plans import INPUT_SHA, result, write
from tests.support.cli import cli


@pytest.fixture
def doc(tmp_path):
    return write(tmp_path, result(record=True))


def _tree(d):
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


@pytest.mark.parametrize("target", ["vllm", "kubernetes"])
def test_deploy_writes_every_pool_and_is_reproducible(tmp_path, doc, target):
    a, b = tmp_path / "a", tmp_path / "b"
    r1 = cli("deploy", str(doc), "--target", target, "--out", str(a))
    r2 = cli("deploy", str(doc), "--target", target, "--out", str(b))
    assert r1.returncode == 0 == r2.returncode, r1.stderr
    ext = ".sh" if target == "vllm" else ".yaml"
    names = ["big-colocated-h100-sxm-tp8pp2ep1dp1", "chat-colocated-h100-sxm-tp2pp1ep1dp1",
             "rag-decode-mi300x-tp4pp1ep1dp1", "rag-prefill-h100-sxm-tp1pp2ep1dp1"]
    assert sorted(_tree(a)) == [n + ext for n in names]
    assert _tree(a) == _tree(b)  # same input, same bytes
    assert r1.stdout.splitlines() == [str(a / (n + ext)) for n in
                                      [names[1], names[3], names[2], names[0]]]  # document order
    for text in _tree(a).values():
        assert f"input sha256 {INPUT_SHA}".encode() in text and b"problem 'hand-made'" in text
    if target == "vllm":
        assert all(os.access(p, os.X_OK) for p in a.iterdir())


def test_canary_prints_the_runbook_and_writes_it(tmp_path, doc):
    r = cli("canary", str(doc), "--tool", "guidellm", "--duration", "60")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# Canary runbook: hand-made\n")
    out = tmp_path / "canary.md"
    assert cli("canary", str(doc), "--tool", "guidellm", "--duration", "60", "--out", str(out)).returncode == 0
    assert out.read_text() == r.stdout


def _one_line_error(r, text: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and text in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_not_a_result_document(tmp_path):
    bad = tmp_path / "problem.json"
    bad.write_text('{"name": "x", "services": []}')
    for cmd in ("deploy", "canary"):
        extra = ["--target", "vllm", "--out", str(tmp_path / "o")] if cmd == "deploy" else []
        _one_line_error(cli(cmd, str(bad), *extra), f"{bad}: not a fleetplan result document")
    _one_line_error(cli("canary", str(tmp_path / "missing.json")), "missing.json: no such file")


def test_a_result_document_with_a_wrong_field(tmp_path):
    d = result()
    d["services"][0]["pools"][0]["tp"] = "two"
    path = write(tmp_path, d)
    r = cli("canary", str(path))
    _one_line_error(r, "not a valid result document: ")
    assert re.search(r"result\.json:\d+: services\[0\]\.pools\[0\]\.tp: Input should be a valid integer", r.stderr)


def test_unknown_target_and_tool(tmp_path, doc):
    _one_line_error(cli("deploy", str(doc), "--target", "k8s", "--out", str(tmp_path)), "invalid choice: 'k8s'")
    _one_line_error(cli("canary", str(doc), "--tool", "locust"), "invalid choice: 'locust'")
    _one_line_error(cli("canary", str(doc), "--duration", "5"), "must be in 10..86,400")
    _one_line_error(cli("canary", str(doc), "--url", "ftp://host"), "--url: expected an http:// or https:// URL")
    _one_line_error(cli("deploy", str(doc), "--target", "kubernetes", "--out", str(tmp_path), "--image", "a b"),
                    "--image: expected a container image reference")


def test_unwritable_out(tmp_path, doc):
    blocker = tmp_path / "file"
    blocker.write_text("")
    _one_line_error(cli("deploy", str(doc), "--target", "vllm", "--out", str(blocker / "d")), "cannot create the folder")
    _one_line_error(cli("canary", str(doc), "--out", str(blocker / "c.md")), "cannot write")


def test_refusals_are_one_line(tmp_path, doc):
    _one_line_error(cli("deploy", str(doc), "--target", "llm-d", "--out", str(tmp_path / "o")),
                    "spans 2 h100-sxm nodes; --target llm-d")
    d = result()
    d["services"][0]["pools"][0]["hardware"] = "my-asic"
    path = write(tmp_path, d, "custom.json")
    _one_line_error(cli("deploy", str(path), "--target", "vllm", "--out", str(tmp_path / "o")),
                    "hardware 'my-asic' of the plan is not a shipped card; pass its card with --card")


def test_an_infeasible_plan_has_nothing_to_deploy(tmp_path):
    d = result()
    d.update(status="infeasible", services=[], infeasible_because=["budget"])
    path = write(tmp_path, d, "none.json")
    _one_line_error(cli("deploy", str(path), "--target", "vllm", "--out", str(tmp_path / "o")),
                    "the plan is infeasible and has no pools to deploy")
    _one_line_error(cli("canary", str(path)), "the plan is infeasible and has no pools to validate")
    assert not (tmp_path / "o").exists()
