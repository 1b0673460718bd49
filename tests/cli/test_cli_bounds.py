"""Every numeric flag of every command has a stated range (issue 18, point 3): the parser is
walked, and a flag parsed by a bare int/float (or any type that is not `argtypes.Bounded`) or
with a numeric default and no type fails here; a value outside the range is exit 2 with one
line naming the flag."""

from __future__ import annotations

import argparse

import pytest

from solver.cli import argtypes
from solver.cli.parser import build_parser
from tests.support.cli import cli

# string-valued types that validate a spelling, not a number
TEXT_TYPES = {"_url", "_image", "_arrival"}


def _actions(parser: argparse.ArgumentParser, prog: str = "fleetplan"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{prog} {name}")
        else:
            yield prog, action


def test_every_numeric_flag_is_bounded():
    bad = []
    for prog, a in _actions(build_parser()):
        flag = f"{prog} {'/'.join(a.option_strings) or a.dest}"
        if isinstance(a.type, argtypes.Bounded):
            assert a.type.describe() in a.help, f"{flag}: the range is not in the help"
            continue
        if a.type is not None and getattr(a.type, "__name__", "") not in TEXT_TYPES:
            bad.append(f"{flag}: type {a.type!r} is not argtypes.Bounded")
        numeric_default = isinstance(a.default, (int, float)) and not isinstance(a.default, bool)
        if a.type is None and numeric_default and a.nargs != 0:
            bad.append(f"{flag}: numeric default {a.default!r} without a bounded type")
    assert not bad, "\n".join(bad)


def test_question_constants_agree():
    from solver.questions.frontier import MAX_POINTS
    from solver.questions.price import MAX_STEPS
    from solver.schema.problem import MAX_PRICE

    assert (argtypes.FRONTIER_POINTS, argtypes.PRICE_STEPS, argtypes.PRICE) == (MAX_POINTS, MAX_STEPS, MAX_PRICE)


@pytest.mark.parametrize("text", ["-1", "2147483648", "1" * 5000, "nan", "inf", "x"])
def test_bounded_refuses(text):
    with pytest.raises(argparse.ArgumentTypeError):
        argtypes.seed()(text) if text not in ("nan", "inf") else argtypes.time_limit()(text)


@pytest.mark.parametrize("args", [
    ["plan", "llama3-70b-online", "--seed", "99999999999"],
    ["plan", "llama3-70b-online", "--workers", "100000000000"],
    ["frontier", "llama3-70b-online", "--max-scale", "1e300"],
    ["batch", "llama3-70b-online", "--out", "x", "--jobs", "0"],
    ["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--tp", "1" * 5000],
])
def test_out_of_range_flag_is_one_line_exit_2(args, tmp_path):
    r = cli(*args, cwd=tmp_path, timeout=120)
    assert r.returncode == 2, r.stderr
    flag = args[-2]
    assert flag in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
