"""The `fleetplan` command line: parse (solver/cli/parser.py), run the command
(solver/cli/commands.py), and map every error to one line and its exit code."""

from __future__ import annotations

import os
import sys
from typing import Sequence

# pydantic looks for plugins (observability hooks) through every installed distribution's entry
# points when the first model is built, ~0.1 s of a command's start; the command line uses none
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

from solver.cli.commands import COMMANDS, check_outputs  # noqa: E402 - after the environment is set
from solver.cli.parser import build_parser
from solver.errors import FleetplanError


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        check_outputs(args)
        return COMMANDS[args.command](args)
    except FleetplanError as exc:
        if os.environ.get("FLEETPLAN_DEBUG"):
            raise
        print(f"error: {exc}" if exc.exit_code != 3 else f"internal error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, exit 3
        if os.environ.get("FLEETPLAN_DEBUG"):
            raise
        print(f"internal error: {type(exc).__name__}: {exc} (set FLEETPLAN_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 3

