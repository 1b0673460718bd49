"""The `fleetplan` argument parser: one function per command, each adding its subparser.

`build_parser()` puts them together; `solver/cli/commands.py` runs the parsed command.
"""

from __future__ import annotations

import argparse
import re

from solver import __version__
from solver.cli import argtypes as at
from solver.cli import calibrate_cli, validate_flags
from solver.cli import profiles as profiles_cli
from solver.errors import InputError
from solver.report.plan_views import RENDERERS as PLAN_FORMATS
from solver.schema.cards import PRECISIONS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise InputError(f"{self.prog}: {message}")


def _question_solver_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--time-limit", type=at.time_limit(), default=60.0,
                   help="seconds per plan (default 60)")
    p.add_argument("--seed", type=at.seed(), default=0)
    p.add_argument("--workers", type=at.workers(), default=1, help="CP-SAT workers (default 1)")
    p.add_argument("--no-timings", action="store_true",
                   help="leave wall times null so that the same input gives byte-identical output")


def add_estimate(sub: argparse._SubParsersAction) -> None:
    """`fleetplan estimate`: the performance model for one configuration."""
    e = sub.add_parser("estimate", help="the performance model for one configuration")
    e.add_argument("--model", required=True, help="model card name or path")
    e.add_argument("--hardware", required=True, help="hardware card name or path")
    for flag in ("tp", "pp", "ep", "dp"):
        e.add_argument(f"--{flag}", type=at.whole(1, at.PARALLEL), default=1)
    e.add_argument("--cp", type=at.whole(1, at.PARALLEL), default=1,
                   help="context-parallel ranks: the prompt split over them (ring attention), "
                   "their KV sharded for decode; devices = tp x pp x dp x cp")
    e.add_argument("--stage", choices=["prefill", "decode"])
    load = e.add_mutually_exclusive_group()
    load.add_argument("--batch", type=at.whole(1, at.CONCURRENCY))
    load.add_argument("--concurrency", type=at.whole(1, at.CONCURRENCY),
                      help="closed-loop benchmark: N requests always in flight")
    e.add_argument("--input-tokens", type=at.whole(1, at.TOKENS), default=2048)
    e.add_argument("--output-tokens", type=at.whole(1, at.TOKENS), default=128)
    e.add_argument("--precision", choices=PRECISIONS, default="bf16")
    e.add_argument("--kv-precision", choices=PRECISIONS)
    e.add_argument("--power-cap", type=at.positive(1e5), metavar="W",
                   help="board power limit per device (the card's power_curve; default full power)")
    e.add_argument("--engine", choices=["vllm", "sglang", "trtllm"],
                   help="use the engine's calibrated parameters (hardware/calibration/)")
    e.add_argument("--routing", default=None, metavar="SPEC",
                   help="MoE routing: balanced, zipf:S, hottest:X (e.g. hottest:7%%) or "
                   "histogram:C1,C2,... (routed tokens per expert)")
    e.add_argument("--placement", choices=["load_balanced", "in_order"], default="load_balanced",
                   help="how experts are placed on expert-parallel ranks (with --routing)")
    e.add_argument("--speculative", default=None, metavar="METHOD:K:A[:DRAFT]",
                   help="decode speculatively: draft|eagle|mtp|ngram, K drafted tokens, acceptance "
                   "rate A, DRAFT the draft model's card for method draft (e.g. eagle:3:0.75, "
                   "draft:4:0.7:llama-3.1-8b); applies to the decode step")
    e.add_argument("--prefix-hit-rate", type=at.number(0.0, 0.99), default=None, metavar="H",
                   help="share of each prompt's tokens served from a prefix cache (0 to 0.99); "
                   "prefill computes the rest")
    e.add_argument("--format", choices=["table", "json"], default="table")


def add_plan(sub: argparse._SubParsersAction) -> None:
    """`fleetplan plan`: one problem file, the cheapest (or largest) fleet."""
    pl = sub.add_parser("plan", help="plan a problem file: the cheapest (or largest) fleet")
    pl.add_argument("problem", help="problem YAML file, or the name of a shipped problem")
    pl.add_argument("--format", choices=list(PLAN_FORMATS), default="table",
                    help="html: one self-contained report with plots (needs matplotlib: pip "
                    "install 'fleetplan[plot]'); it also plans a small cost-vs-traffic frontier")
    pl.add_argument("--out", help="write the result to this file instead of stdout")
    pl.add_argument("--time-limit", type=at.time_limit(), default=60.0, help="seconds (default 60)")
    pl.add_argument("--seed", type=at.seed(), default=0)
    pl.add_argument("--workers", type=at.workers(), default=1,
                    help="CP-SAT workers (default 1: deterministic; more may be faster but "
                    "equal-cost plans can then differ between runs)")
    pl.add_argument("--no-record", action="store_true",
                    help="skip the decision record (uncertainty bands, runners-up, fallback, "
                    "validity intervals), which re-solves the problem a few dozen times; implies --no-replay")
    pl.add_argument("--no-replay", action="store_true",
                    help="leave the replay out of the decision record: the plan is not replayed request by "
                    "request, and no configuration is derated and re-solved where the replay misses a bound")
    pl.add_argument("--record-seconds", type=at.positive(3600.0), default=15.0, metavar="S",
                    help="wall-clock safety net of the decision record's validity search (default 15, at "
                    "most 3600). The search itself is bounded by a fixed number of solves and CP-SAT's "
                    "deterministic time, so its numbers do not depend on machine load; when the safety "
                    "net fires the record says cut_short and marks the unfinished intervals partial")
    pl.add_argument("--no-timings", action="store_true",
                    help="leave solver.wall_s null so that the same input and seed give "
                    "byte-identical output")
    pl.add_argument("--solver-log", action="store_true",
                    help="print CP-SAT's search log of every solve on stderr (the plan's, then the "
                    "homogeneous comparison's and the decision record's; stdout stays the document)")
    pl.add_argument("--export-model", metavar="FILE",
                    help="write the CP-SAT model of the plan's main solve (its primary stage, before "
                    "solving) to FILE as CP-SAT's text proto (a CpModelProto)")
    pl.add_argument("--current", metavar="RESULT.json",
                    help="the running plan: re-plan from it, with the problem's transition: costs")
    pl.add_argument("--measured", nargs="+", metavar="FILE[@POOL]",
                    help="with --current: benchmark results of the running pools; the drift section says "
                    "which bounds no longer hold, and the re-plan dilates the pools measured slower than their band")


def add_frontier(sub: argparse._SubParsersAction) -> None:
    """`fleetplan frontier`: cost against served traffic."""
    fr = sub.add_parser("frontier", help="cost vs served traffic: the cheapest fleet at each "
                        "traffic level, up to the most the budget, power and supply allow")
    fr.add_argument("problem", help="problem YAML file, or the name of a shipped problem")
    fr.add_argument("--points", type=at.whole(1, at.FRONTIER_POINTS), default=10, help="traffic levels (default 10)")
    fr.add_argument("--max-scale", type=at.number(1e-3, at.FRONTIER_SCALE),
                    help="sweep up to this multiple of the demand mix (default: the most traffic "
                    "the problem's limits allow, or 1 when nothing limits it)")
    fr.add_argument("--format", choices=["table", "json"], default="table")
    fr.add_argument("--out-json", help="also write the JSON document to this file")
    fr.add_argument("--plot", "--out-png", dest="plot", metavar="FILE.png",
                    help="draw the frontier (needs matplotlib: pip install 'fleetplan[plot]')")
    _question_solver_args(fr)


def add_price_sweep(sub: argparse._SubParsersAction) -> None:
    """`fleetplan price-sweep`: the prices of one device type at which the mix changes."""
    ps = sub.add_parser("price-sweep", help="the prices of one device type at which the chosen "
                        "mix changes (a sweep plus bisection)")
    ps.add_argument("problem", help="problem YAML file, or the name of a shipped problem")
    ps.add_argument("--hardware", required=True, help="the hardware type whose price is swept")
    ps.add_argument("--from", dest="price_from", type=at.positive(at.PRICE),
                    help="lowest price, USD per device-hour (default: half the problem's)")
    ps.add_argument("--to", dest="price_to", type=at.positive(at.PRICE),
                    help="highest price, USD per device-hour (default: twice the problem's)")
    ps.add_argument("--steps", type=at.whole(1, at.PRICE_STEPS), default=10,
                    help="grid intervals (default 10: 11 grid prices)")
    ps.add_argument("--tolerance", type=at.positive(at.PRICE), default=0.001,
                    help="bisect each change to this width, USD per device-hour (default 0.001)")
    ps.add_argument("--max-solves", type=at.whole(1, 100_000), default=200,
                    help="stop bisecting after this many plans in all (default 200)")
    ps.add_argument("--compare", choices=["devices", "types"],
                    help="a change of mix: another device count of some type (default for "
                    "min_cost) or another set of types used (default for max_throughput)")
    ps.add_argument("--format", choices=["table", "json"], default="table")
    ps.add_argument("--out-json", help="also write the JSON document to this file")
    _question_solver_args(ps)


def add_batch(sub: argparse._SubParsersAction) -> None:
    """`fleetplan batch`: many problem files and their sweeps."""
    b = sub.add_parser("batch", help="plan many problem files (folders, globs) and the variants "
                       "of their sweeps: one result file each and a summary table")
    b.add_argument("paths", nargs="+", metavar="PATH",
                   help="problem files, folders (their *.yaml), globs, or shipped problem names")
    b.add_argument("--out", required=True, metavar="DIR",
                   help="output folder: results/<problem>.json and summary.csv/.json/.parquet")
    where = b.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=at.whole(1, at.JOBS), default=1,
                       help="problems planned at once on a local process pool (default 1; at most "
                       "the CPUs this process may use unless --force-jobs)")
    b.add_argument("--force-jobs", action="store_true",
                   help="run --jobs workers (or start --ray local with Ray's CPU count) even where that "
                   "is more than the usable CPUs")
    where.add_argument("--ray", metavar="ADDRESS",
                       help="plan on a Ray cluster: its address, 'auto' (the running cluster) or "
                       "'local' (start one here); needs pip install 'fleetplan[ray]'")
    b.add_argument("--resume", action="store_true",
                   help="skip problems whose result in DIR was planned from the same inputs "
                   "(problem, cards, calibration, measured tables, solver options)")
    b.add_argument("-r", "--recursive", action="store_true", help="search folders' subfolders too")
    b.add_argument("--pivot", nargs=2, metavar=("ROW", "COL"),
                   help="also write summary.pivot.csv (and print it): one row per value of the "
                   "swept field ROW, one column per value of COL (labels as in the summary's "
                   "sweep.* columns, e.g. h100-sxm.price chat.qps)")
    b.add_argument("--pivot-value", choices=["cost_per_hour", "objective", "total_devices", "power_kw"],
                   default="cost_per_hour", help="the pivot's cells (default cost_per_hour)")
    b.add_argument("--plot", metavar="FILE.png",
                   help="draw cost against a swept field (needs matplotlib: pip install "
                   "'fleetplan[plot]')")
    b.add_argument("--plot-x", metavar="LABEL",
                   help="the swept field on the plot's x axis (default: the first one)")
    shown = b.add_mutually_exclusive_group()
    shown.add_argument("--progress", dest="progress", action="store_true", default=None,
                       help="show progress on stderr even when it is not a terminal")
    shown.add_argument("--no-progress", dest="progress", action="store_false",
                       help="no progress bar (default: a bar when stderr is a terminal)")
    b.add_argument("--quiet", action="store_true", help="print only the counts, not the table")
    b.add_argument("--no-record", action="store_true",
                   help="skip each plan's decision record, as plan --no-record (much faster: "
                   "the record re-solves each problem a few dozen times)")
    _question_solver_args(b)


def _arrival(text: str) -> str:
    from solver.plan.sim_sources import parse_arrival

    try:
        parse_arrival(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_simulate(sub: argparse._SubParsersAction) -> None:
    """`fleetplan simulate`: replay a planned fleet request by request."""
    from solver.plan.sim_sources import CLOSED_PER_CLIENT, DEFAULT_REQUESTS, MAX_REQUESTS, ROUTERS

    si = sub.add_parser("simulate", help="replay a planned fleet (every pool and its router) request by "
                        "request and report its latency percentiles, goodput, queues and KV use")
    si.add_argument("input", metavar="PROBLEM.yaml|RESULT.json",
                    help="a problem (planned first, as plan --no-record), the name of a shipped problem, or "
                    "the result document of fleetplan plan --format json")
    si.add_argument("--problem", metavar="FILE",
                    help="with RESULT.json: the problem it was planned for (default: the shipped problem "
                    "of the name the result gives)")
    si.add_argument("--rate-scale", type=at.number(1e-3, 1e3), default=1.0,
                    help="arrival rate = planned demand x this (default 1; 0.001..1000)")
    si.add_argument("--arrival", type=_arrival, default="workload",
                    help="workload (default: the trace a service's workload names, gamma:arrival_cv where it "
                    "gives one, else poisson), poisson, gamma:CV, trace:FILE (CSV/JSONL: timestamp, prompt tokens, output "
                    "tokens) or closed:N[:vllm|aiperf|sglang] (N clients per service, as that benchmark tool "
                    "runs them; vllm bench serve --max-concurrency N by default)")
    si.add_argument("--requests", type=at.whole(1, MAX_REQUESTS), default=None,
                    help=f"requests per service (at most {MAX_REQUESTS:,}; default {DEFAULT_REQUESTS:,} for open "
                    f"loops, {CLOSED_PER_CLIENT} per client for closed ones, the whole trace)")
    si.add_argument("--seed", type=at.seed(), default=0)
    si.add_argument("--router", choices=ROUTERS, default="least_queue",
                    help="every pool's router (default least_queue)")
    si.add_argument("--format", choices=["table", "json"], default="table")
    si.add_argument("--out", help="write the result to this file instead of stdout")
    si.add_argument("--plot", metavar="FILE.png",
                    help="TTFT and TPOT CDFs per pool with the SLO bounds (needs matplotlib: pip install "
                    "'fleetplan[plot]')")
    si.add_argument("--time-limit", type=at.time_limit(), default=60.0,
                    help="with a problem: seconds to plan it (default 60)")
    si.add_argument("--no-timings", action="store_true",
                    help="leave wall times null so that the same input and seed give byte-identical output")


def add_trace(sub: argparse._SubParsersAction) -> None:
    """`fleetplan trace`: the summary of a request trace or a length distribution."""
    t = sub.add_parser("trace", help="summarise a request trace (rate over time, inter-arrival CV, length "
                       "percentiles) or a length-distribution file")
    t.add_argument("file", metavar="FILE", help="CSV or JSONL trace (Azure LLM inference format, timestamp / "
                   "prompt / output columns), a field,tokens,share length file, or a shipped trace's name")
    t.add_argument("--window", type=at.number(1e-3, 86_400.0), default=60.0,
                   help="window of the rate and burstiness, seconds (default 60)")
    t.add_argument("--format", choices=["table", "json"], default="table")
    t.add_argument("--plot", metavar="FILE.png",
                   help="draw rate, CV and lengths (needs matplotlib: pip install 'fleetplan[plot]')")
    t.add_argument("--out", help="write the summary to this file instead of stdout")


def add_check(sub: argparse._SubParsersAction) -> None:
    """`fleetplan check`: validate problem files without solving."""
    ch = sub.add_parser("check", help="validate problem files without solving")
    ch.add_argument("problems", nargs="+")


def add_validate(sub: argparse._SubParsersAction) -> None:
    """`fleetplan validate`: predictions against measured benchmark points."""
    v = sub.add_parser("validate", help="predict measured benchmark points and report the error")
    v.add_argument("measured", help="CSV: model, hardware, precision, mode, input_tokens, "
                   "output_tokens, concurrency, tp, pp, ep, dp, ttft_ms, tpot_ms[, engine][, speculative "
                   "METHOD:K:A, the speculative decoding the row ran]; or, for "
                   "disaggregated rows, prefill_/decode_ tp, pp, ep, dp, workers, batch instead of tp, pp, ep, dp; "
                   "or a benchmark tool's result file (aiperf profile_export_aiperf.json, vllm bench serve result "
                   "JSON, guidellm report JSON, MLPerf mlperf_log_summary.txt), detected from its content")
    v.add_argument("--format", choices=["table", "json", "csv"], default="table")
    v.add_argument("--model", choices=["closed-form", "replay"], default="replay",
                   help="predictor: a replay of each row's benchmark tool on a simulated engine instance "
                   "(default) or the closed-form closed loop")
    v.add_argument("--out", help="write the result to this file instead of stdout")
    validate_flags.add(v)


def add_catalog(sub: argparse._SubParsersAction) -> None:
    """`fleetplan catalog`: the shipped cards."""
    c = sub.add_parser("catalog", help="list the shipped cards")
    c.add_argument("kind", nargs="?", choices=["models", "hardware"], default=None)
    c.add_argument("--format", choices=["table", "json"], default="table")


def add_schema(sub: argparse._SubParsersAction) -> None:
    """`fleetplan schema`: the JSON Schemas of the documents."""
    sc = sub.add_parser("schema", help="the JSON Schema of fleetplan's input and output documents")
    sc.add_argument("name", nargs="?", help="one document (default: list them)")
    sc.add_argument("--out", help="write every schema to this folder as NAME.schema.json")


def _url(text: str) -> str:
    if len(text) > 2000 or not re.fullmatch(r"https?://[^\s'\"]+", text):
        raise argparse.ArgumentTypeError(f"expected an http:// or https:// URL of at most 2000 characters, got '{text[:80]}'")
    return text


def _image(text: str) -> str:
    if len(text) > 500 or not re.fullmatch(r"[\w.:/@-]+", text):
        raise argparse.ArgumentTypeError(f"expected a container image reference (at most 500 characters), got '{text[:80]}'")
    return text


def add_deploy(sub: argparse._SubParsersAction) -> None:
    """`fleetplan deploy`: launch configurations and manifests of a plan."""
    d = sub.add_parser("deploy", help="launch configurations and manifests for every pool of a plan (the result "
                       "document of fleetplan plan --format json)")
    d.add_argument("result", metavar="RESULT.json")
    d.add_argument("--target", required=True, choices=["vllm", "sglang", "trtllm", "dynamo", "llm-d", "kubernetes"],
                   help="engine launch scripts (vllm, sglang, trtllm), Kubernetes manifests (kubernetes: a "
                   "Deployment or LeaderWorkerSet per pool), or a disaggregated stack's format (dynamo, llm-d)")
    d.add_argument("--out", required=True, metavar="DIR", help="folder the files are written to (created)")
    d.add_argument("--engine", choices=["vllm", "sglang", "trtllm"],
                   help="with --target kubernetes: the engine the pods run (default: the plan's, else vllm)")
    d.add_argument("--image", type=_image, help="the container image of the manifests (default: the pinned engine version's)")
    d.add_argument("--card", action="append", default=[], metavar="FILE.yaml",
                   help="a hardware or model card the plan names that fleetplan does not ship (repeatable)")


def add_canary(sub: argparse._SubParsersAction) -> None:
    """`fleetplan canary`: the benchmark protocol that validates a plan before rollout."""
    c = sub.add_parser("canary", help="the small-scale benchmark protocol that validates a plan before rollout: "
                       "per pool, the benchmark command and the latencies it must meet")
    c.add_argument("result", metavar="RESULT.json")
    c.add_argument("--tool", choices=["aiperf", "vllm", "guidellm"], default="aiperf",
                   help="the benchmark tool (default aiperf; vllm: vllm bench serve)")
    c.add_argument("--duration", type=at.whole(10, 86_400), default=300,
                   help="seconds each benchmark runs (default 300; 10..86400)")
    c.add_argument("--url", type=_url, default="http://localhost:8000",
                   help="where the pool's canary instance serves (default http://localhost:8000)")
    c.add_argument("--card", action="append", default=[], metavar="FILE.yaml",
                   help="a model card the plan names that fleetplan does not ship (repeatable)")
    c.add_argument("--out", metavar="FILE", help="write the runbook to FILE instead of stdout")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: `fleetplan [--version] COMMAND ...`."""
    p = _Parser(prog="fleetplan", description="Plan LLM serving fleets that meet latency SLOs "
                "at the lowest cost.")
    p.add_argument("--version", action="version", version=f"fleetplan {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in (add_estimate, add_plan, add_frontier, add_price_sweep, add_batch, add_simulate, add_trace, add_check,
                add_validate, add_catalog, add_schema, add_deploy, add_canary, profiles_cli.add_parser,
                calibrate_cli.add_parser):
        add(sub)
    at.state_ranges(p)
    return p
