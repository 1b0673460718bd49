"""`fleetplan calibrate MEASURED... --engine E --out FILE.yaml`'s arguments (the command,
solver/cli/commands.py, refits with solver/accuracy/user_calibration.py, prints the summary of
solver/report/calibration_views.py and writes the calibration file)."""

from __future__ import annotations

import argparse

from solver.cli import argtypes as at


def add_parser(sub) -> argparse.ArgumentParser:
    from solver.accuracy.user_fit import MAX_EVALS
    from solver.accuracy.user_rows import MAX_FILES

    c = sub.add_parser("calibrate", help="refit an engine calibration (efficiency factors, step and request "
                       "overheads) from your own measurements, with a held-out split")
    c.add_argument("measured", nargs="+", metavar="MEASURED",
                   help=f"validate CSVs or benchmark tools' result files (aiperf, vllm bench serve, guidellm, "
                   f"MLPerf), at most {MAX_FILES}")
    c.add_argument("--engine", required=True, choices=["vllm", "sglang", "trtllm"], help="the engine measured")
    c.add_argument("--out", required=True, metavar="FILE.yaml", help="the calibration file to write")
    c.add_argument("--model", choices=["replay", "closed-form"], default="replay",
                   help="the predictor the fit runs through: the replay of each row's benchmark (default, as the "
                   "shipped files are fitted; about a second per row and evaluation) or the closed form (milliseconds)")
    c.add_argument("--held-out", type=at.number(0.05, 0.9), default=0.25,
                   help="share of each hardware and model's rows held out, never fitted on (default 0.25)")
    c.add_argument("--seed", type=at.seed(), default=0,
                   help="seed of the held-out draw (default 0)")
    c.add_argument("--max-evals", type=at.whole(1, MAX_EVALS), default=None,
                   help="evaluations of the fit (default 30 for the replay, 400 for the closed form)")
    g = c.add_argument_group("benchmark tools' result files", "what the file does not record")
    g.add_argument("--model-card", help="the fleetplan model card (default: matched from the file's model)")
    g.add_argument("--hardware")
    g.add_argument("--precision")
    for flag in ("tp", "pp", "ep", "dp"):
        g.add_argument(f"--{flag}", type=at.whole(1, at.PARALLEL))
    g.add_argument("--concurrency", type=at.whole(1, at.CONCURRENCY))
    g.add_argument("--input-tokens", type=at.whole(1, at.TOKENS))
    g.add_argument("--output-tokens", type=at.whole(1, at.TOKENS))
    return c
