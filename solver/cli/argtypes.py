"""The typed arguments of the command line: every numeric flag of every command is a `Bounded`
number, with the range it accepts stated where the flag is declared (tests/cli/test_cli_bounds.py
walks the parser and fails on a numeric flag without one).

The ranges are what the solver and the models accept (CP-SAT's seed is a 32-bit integer, its
worker count and time limit are finite), far above any serving layout or benchmark, and low
enough that a typo (`--workers 10000000000`) is a one-line error naming the flag (exit 2)
rather than an overflow inside the solver."""

from __future__ import annotations

import argparse
import math

MAX_LITERAL = 40  # characters of a number on the command line (no 5,000-digit integers)

# the shared ranges
SEED = (0, 2**31 - 1)  # CP-SAT's random_seed is an int32
WORKERS = (1, 256)  # CP-SAT workers of one solve
TIME_LIMIT_S = 604_800.0  # a week
PARALLEL = 4096  # devices in one dimension of a layout
CONCURRENCY = 1_000_000
TOKENS = 10_000_000
JOBS = 1024  # batch problems at once (then capped at the usable CPUs unless --force-jobs)
# the same as solver/questions' (not imported: they import the solver, ~1 s of every command's start)
FRONTIER_POINTS = 1000  # solver.questions.frontier.MAX_POINTS
FRONTIER_SCALE = 1e4  # the most traffic a frontier sweeps, as a multiple of the demand mix
PRICE_STEPS = 1000  # solver.questions.price.MAX_STEPS
PRICE = 10_000.0  # USD per device-hour: solver.schema.problem.MAX_PRICE


class Bounded:
    """An argparse `type`: a number of `kind` (int or float) in [lo, hi], or (lo, hi] with
    `open_low` (a positive float); NaN and infinities are refused."""

    def __init__(self, kind: type, lo: float, hi: float, *, open_low: bool = False):
        if kind not in (int, float) or not lo <= hi:
            raise ValueError(f"bad range {kind.__name__} {lo}..{hi}")
        self.kind, self.lo, self.hi, self.open_low = kind, lo, hi, open_low
        self.__name__ = kind.__name__  # argparse names the type in some messages

    def describe(self) -> str:
        def fmt(v: float) -> str:
            return f"{v:,}" if self.kind is int else f"{v:g}"
        if self.open_low:
            return f"({fmt(self.lo)}, {fmt(self.hi)}]"
        return f"{fmt(self.lo)}..{fmt(self.hi)}"

    def __call__(self, text: str):
        what = "a whole number" if self.kind is int else "a number"
        if len(text) > MAX_LITERAL:
            raise argparse.ArgumentTypeError(f"expected {what} of at most {MAX_LITERAL} characters, "
                                             f"got {len(text):,} characters")
        try:
            v = self.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got '{text}'") from None
        low_ok = v > self.lo if self.open_low else v >= self.lo
        if not (math.isfinite(v) and low_ok and v <= self.hi):
            raise argparse.ArgumentTypeError(f"must be in {self.describe()}, got {text}")
        return v

    def __repr__(self) -> str:
        return f"Bounded({self.kind.__name__}, {self.describe()})"


def whole(lo: int, hi: int) -> Bounded:
    return Bounded(int, lo, hi)


def positive(hi: float) -> Bounded:
    """A float in (0, hi]."""
    return Bounded(float, 0.0, hi, open_low=True)


def number(lo: float, hi: float) -> Bounded:
    return Bounded(float, lo, hi)


def seed() -> Bounded:
    return whole(*SEED)


def workers() -> Bounded:
    return whole(*WORKERS)


def time_limit() -> Bounded:
    return positive(TIME_LIMIT_S)


def state_ranges(parser: argparse.ArgumentParser) -> None:
    """Append each bounded flag's range to its help text (every subcommand, recursively)."""
    for action in parser._actions:
        if isinstance(action.type, Bounded) and action.help is not argparse.SUPPRESS:
            rng = action.type.describe()
            if rng not in (action.help or ""):
                action.help = f"{action.help} [{rng}]" if action.help else f"[{rng}]"
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                state_ranges(sub)
