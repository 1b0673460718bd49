"""`fleetplan validate`'s flags for benchmark tools' result files: the row fields a tool's file
may not record, `--plan RESULT.json` and `--pool N`."""

from __future__ import annotations

import argparse

from solver.cli import argtypes as at
from solver.schema.cards import PRECISIONS

# bounds of the flags (ours: far above any serving layout or benchmark, low enough to catch typos)
MAX_POOL = 100_000


def add(v: argparse.ArgumentParser) -> None:
    g = v.add_argument_group("benchmark tools' result files (aiperf, vllm bench serve, guidellm, MLPerf)",
                             "what the file does not record; a flag wins over the file")
    g.add_argument("--model-card", help="the fleetplan model card (default: matched from the file's model)")
    g.add_argument("--hardware", help="the hardware card the benchmark ran on")
    g.add_argument("--precision", choices=PRECISIONS)
    g.add_argument("--engine", choices=["vllm", "sglang", "trtllm"])
    for flag in ("tp", "pp", "ep", "dp"):
        g.add_argument(f"--{flag}", type=at.whole(1, at.PARALLEL))
    g.add_argument("--concurrency", type=at.whole(1, at.CONCURRENCY))
    g.add_argument("--input-tokens", type=at.whole(1, at.TOKENS), help="mean prompt length (MLPerf files lack it)")
    g.add_argument("--output-tokens", type=at.whole(1, at.TOKENS))
    g.add_argument("--plan", metavar="RESULT.json",
                   help="compare the measurements with this plan's predictions, SLO bounds and error bands")
    g.add_argument("--pool", type=at.whole(1, MAX_POOL),
                   help="with --plan: the pool measured (1-based over the services' pools; default: the one "
                   "pool that agrees with the file and the flags)")


def row_fields(a: argparse.Namespace) -> dict[str, object]:
    """The flags as row fields (None: not given)."""
    return {"model": a.model_card, "hardware": a.hardware, "precision": a.precision, "engine": a.engine,
            "tp": a.tp, "pp": a.pp, "ep": a.ep, "dp": a.dp, "concurrency": a.concurrency,
            "input_tokens": a.input_tokens, "output_tokens": a.output_tokens}
