"""Convert aiconfigurator-core's measured end-to-end sample into `fleetplan validate` input.

    python benchmarks/silicon_to_validate.py [--source PATH/silicon_sample.csv] [--out FILE]

Run it with the project's environment (it checks each plan with fleetplan's validity rules);
--source points at the sample when aiconfigurator-core is installed elsewhere.

The source is `systems/silicon_sample.csv` of the PyPI package aiconfigurator-core (Apache-2.0,
NVIDIA; see NOTICE); by default it is looked up in the installed package. Only colocated
("agg") rows of models and systems that have fleetplan cards are converted; the rest are
counted and skipped. The sample's `batch_size` is per attention data-parallel rank, so the
benchmark's concurrency is batch_size x attention_dp_size (aiconfigurator-core 0.12.0,
sdk/backends/base_backend.py: `global_bs = bs * attention_dp_size` and `concurrency = global_bs`
in the static estimate; the sample's own `silicon_concurrency=` field equals batch_size x
attention_dp_size on 168 of its 169 aggregated DP rows; every converted row has pp 1). Its
InferenceX MoE rows that record TP x EP as the world size are read as the run's TP and EP
(`run_layout`). Extra
columns (id, source system, model path, engine version, measurement source) are passed through.
A measurement the sample carries more than once (an InferenceX run in its database dump and its
dated exports) is written once (`distinct`). Measured data is precious: this file is for judging accuracy and,
for the h100_sxm rows only, for calibration (benchmarks/calibrate.py).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import sys
from collections import Counter
from pathlib import Path

MODELS = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Llama-3.1-405B": "llama-3.1-405b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "nvidia/Qwen3-32B-NVFP4": "qwen3-32b",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "Qwen/Qwen3-235B-A22B": "qwen3-235b-a22b",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "deepseek-ai/DeepSeek-R1": "deepseek-v3",  # same architecture as V3
    "nvidia/DeepSeek-R1-NVFP4": "deepseek-v3",
    "nvidia/DeepSeek-V3.1-NVFP4": "deepseek-v3",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
}
SYSTEMS = {
    "a100_sxm": "a100-sxm",
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200-nvl72",
}
PRECISION = {"": "bf16", "bf16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "fp4": "fp4", "nvfp4": "fp4"}
COLUMNS = ["model", "hardware", "precision", "mode", "input_tokens", "output_tokens", "concurrency",
           "tp", "pp", "ep", "dp", "ttft_ms", "tpot_ms", "engine",
           "source_id", "source_system", "source_model", "engine_version", "measured", "gemm_quant_mode"]


def default_source() -> Path:
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("aiconfigurator-core is not installed: pip install 'fleetplan[aic]' or pass --source")
    return Path(list(spec.submodule_search_locations)[0]) / "systems" / "silicon_sample.csv"


def _measured(source: str) -> str:
    for part in source.split(";"):
        if part.strip().startswith("measured="):
            return part.split("=", 1)[1].strip()[:10]
    return ""


def _plan_ok(model: str, tp: int, pp: int, ep: int, dp: int) -> str | None:
    """None if fleetplan can represent the plan, else why not (the sample also holds plans with
    other conventions, e.g. tp=72 world sizes for DeepSeek on NVL72)."""
    from solver.catalog import shipped
    from solver.perf.arch import ModelArch
    from solver.perf.tables import Plans
    from solver.perf.validity import invalid_reasons

    arch = ModelArch.from_card(shipped.model_card(model))
    plans = Plans.of(hw=0, tp=tp, pp=pp, ep=ep, dp=dp, batch=max(dp, 1), wprec=0, kvprec=0)
    bad = [k for k, m in invalid_reasons(arch, plans).items() if m[0]]
    return f"plan not representable ({', '.join(bad)})" if bad else None


def measured_fields(r: dict) -> dict:
    """The measured latencies and the provenance columns every converted row carries."""
    return {"ttft_ms": r["silicon_ttft_ms"], "tpot_ms": r["silicon_tpot_ms"], "engine": r["backend"],
            "source_id": r["id"], "source_system": r["system"], "source_model": r["model_path"],
            "engine_version": r["backend_version"], "measured": _measured(r["silicon_data_source"])}


def write_rows(out: Path, columns: list[str], rows: list[dict], skipped: Counter) -> None:
    """The converted CSV, and what was skipped and why on stderr."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} rows written to {out}", file=sys.stderr)
    for why, n in skipped.most_common():
        print(f"  skipped {n}: {why}", file=sys.stderr)


NODE_GPUS = {"a100_sxm": 8, "h100_sxm": 8, "h200_sxm": 8, "b200_sxm": 8, "b300_sxm": 8}  # HGX nodes


def run_layout(system: str, tp: int, dp: int, moe_tp: int, ep: int) -> tuple[int, int, int]:
    """(tp, dp, ep) of the run. The sample's InferenceX MoE rows on one 8-GPU node that ran
    TP = EP = k (InferenceX's single-node scripts: `--tp_size=$TP --ep_size=$EP_SIZE`; the dated
    exports spell it in their id, `..._tp8_ep8_...`) record moe_tp_size = moe_ep_size = k and
    tp_size (attention_dp_size with attention DP) = k x k: 16 or 64 GPUs on an 8-GPU node. The
    same measurements exported on 2026-03-25 carry tp 8, ep 8 (or tp 1, dp 8). Such a row is read
    as tp k, ep k (attention DP: tp 1, dp k); every other row as it stands."""
    k, node = moe_tp, NODE_GPUS.get(system)
    if node and k > 1 and ep == k and k * k > node and sorted((tp, dp)) == [1, k * k]:
        return (k, 1, ep) if tp == k * k else (1, k, ep)
    return tp, dp, ep


def vllm_moe_layout(tp: int, dp: int, moe_tp: int, ep: int) -> int:
    """The tensor-parallel size of a vLLM MoE run whose MoE parallelism (moe_tp x moe_ep) exceeds
    its recorded attention layout (tp x attention_dp): vLLM shards attention and experts over one
    tensor-parallel group, and aiconfigurator's generator deploys such a configuration with
    `tensor_parallel_size = moe_tp x moe_ep / data_parallel_size` (rule_plugin/vllm.rule at
    152b9612: "Without this, MoE models get tp=1 and the full model is replicated per GPU,
    causing OOM"); the rows were measured, so they ran on moe_tp x moe_ep GPUs (Qwen3-235B-A22B-FP8,
    about 235 GB of weights, does not fit the 141 GB of one H200 the sample's tp 1 would give it).
    Every other row keeps its tp."""
    world = moe_tp * ep
    return world // dp if tp * dp < world and world % dp == 0 else tp


def concurrency(batch_size: str, dp: int) -> str:
    """The closed loop's concurrency: the sample's per-DP-rank batch times the DP ranks."""
    return "" if batch_size in ("", "0") else str(int(batch_size) * dp)


def convert(src: Path) -> tuple[list[dict], Counter]:
    skipped: Counter = Counter()
    out = []
    for r in csv.DictReader(src.open(newline="")):
        if r["mode"] != "agg":
            skipped["not colocated (disagg)"] += 1
            continue
        model = MODELS.get(r["model_path"])
        hw = SYSTEMS.get(r["system"])
        quant = r["precision"] or r["gemm_quant_mode"]
        if model is None:
            skipped[f"no card for model {r['model_path']}"] += 1
            continue
        if hw is None:
            skipped[f"no card for system {r['system']}"] += 1
            continue
        if quant not in PRECISION:
            skipped[f"precision {quant}"] += 1
            continue
        # empty or 0 means "not used" in the sample: one-way
        tp = max(1, int(r["tp_size"] or 1))
        dp_sample = dp = max(1, int(r["attention_dp_size"] or 1))
        ep = max(1, int(r["moe_ep_size"] or 1))
        tp, dp, ep = run_layout(r["system"], tp, dp, max(1, int(r["moe_tp_size"] or 1)), ep)
        if r["backend"] == "vllm" and (r["moe_tp_size"] or r["moe_ep_size"]):
            tp = vllm_moe_layout(tp, dp, max(1, int(r["moe_tp_size"] or 1)), ep)
        why = _plan_ok(model, tp, max(1, int(r["pp_size"] or 1)), ep, dp)
        if why:
            skipped[why] += 1
            continue
        out.append({
            "model": model, "hardware": hw, "precision": PRECISION[quant], "mode": "colocated",
            "input_tokens": r["isl"], "output_tokens": r["osl"], "concurrency": concurrency(r["batch_size"], dp_sample),
            "tp": tp, "pp": max(1, int(r["pp_size"] or 1)), "ep": ep, "dp": dp,
            **measured_fields(r),
            # the sample's label of the run's GEMM quantisation (solver/accuracy/measured.py
            # `fp8_scaling` reads it)
            "gemm_quant_mode": r["gemm_quant_mode"],
        })
    return out, skipped


# what identifies one measurement: the run's model, system, precision, engine, plan, lengths and
# clients, and its latencies (to the sample's 15-17 significant digits)
RUN = ("model", "hardware", "precision", "engine", "tp", "pp", "ep", "dp", "input_tokens", "output_tokens",
       "concurrency", "ttft_ms", "tpot_ms")


def distinct(rows: list[dict], skipped: Counter) -> list[dict]:
    """One row per measurement: the sample carries some InferenceX runs in its database dump and in
    one or both dated exports (2026-03-25, 2026-04-06), the same latencies under three ids; the
    first is kept (the copies differ only in their ids, their `source_model` DeepSeek-V3 or -R1,
    both block-scaled FP8 checkpoints, and a date's time of day), the others counted as skipped."""
    seen: set[tuple] = set()
    out = []
    for r in rows:
        key = tuple(str(r[c]) for c in RUN)
        if key in seen:
            skipped["the same measurement as an earlier row (another export of the run)"] += 1
            continue
        seen.add(key)
        out.append(r)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "data" / "silicon_sample_validate.csv")
    a = ap.parse_args()
    src = a.source or default_source()
    rows, skipped = convert(src)
    rows = distinct([r for r in rows if r["concurrency"] not in ("", "0")], skipped)
    write_rows(a.out, COLUMNS, rows, skipped)


if __name__ == "__main__":
    main()
