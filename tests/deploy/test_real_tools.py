"""The canary commands parsed by the benchmark tools themselves, where they are installed (they
are not in the dev extra: aiperf alone brings about a gigabyte of dependencies): aiperf's
cyclopts app and guidellm's click command must accept every generated command as written, and
reject an unknown flag (so that the check can fail). Run by hand with `pip install aiperf==0.13.0
guidellm==0.3.0` in the environment of the tests."""

from __future__ import annotations

import pytest

from solver.deploy.canary import protocol
from solver.deploy.facts import load_plan
from tests.deploy.plans import result, write


def _commands(tmp_path, tool):
    c = protocol(load_plan(str(write(tmp_path, result(record=True)))), tool, 120)
    assert len(c.pools) == 4
    return [p.command for p in c.pools]


def test_aiperf_parses_the_commands(tmp_path):
    cli = pytest.importorskip("aiperf.cli")
    for argv in _commands(tmp_path, "aiperf"):
        assert argv[:2] == ["aiperf", "profile"]
        command, bound, _ = cli.app.parse_args(argv[1:], exit_on_error=False, print_error=False)
        assert command.__name__ == "profile" and bound.arguments
    with pytest.raises(Exception, match="--no-such-flag"):
        cli.app.parse_args([*argv[1:], "--no-such-flag", "1"], exit_on_error=False, print_error=False)


def test_guidellm_parses_the_commands(tmp_path):
    main = pytest.importorskip("guidellm.__main__")
    run = main.cli.commands["benchmark"].commands["run"]
    for argv in _commands(tmp_path, "guidellm"):
        assert argv[:3] == ["guidellm", "benchmark", "run"]
        ctx = run.make_context("run", argv[3:])
        assert ctx.params["rate_type"] == "constant" and ctx.params["max_seconds"] == 120.0
        assert ctx.params["data"].startswith("prompt_tokens=")
    with pytest.raises(Exception, match="--no-such-flag"):
        run.make_context("run", [*argv[3:], "--no-such-flag", "1"])
