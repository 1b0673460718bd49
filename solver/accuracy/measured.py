"""Measured benchmark CSVs, colocated or disaggregated: reading their rows (every error names
the file, line and field) and the report of predictions against them."""

from __future__ import annotations

import csv
import io
import math
import re
from collections import defaultdict
from typing import Callable, Iterator

import numpy as np

from solver.accuracy.readers.common import MAX_LITERAL, shown
from solver.errors import InputError
from solver.schema.validation import ErrorStats, GroupStats, ValidationReport, ValidationRow

ENGINES = ("vllm", "sglang", "trtllm")
# A measured row records the weights' precision only. Every FP4 run in the shipped sample keeps
# an FP8 KV cache: InferenceX's FP4 scripts (TensorRT-LLM `kv_cache_config: {dtype: fp8}`, SGLang
# `--kv-cache-dtype fp8_e4m3`, vLLM `kv-cache-dtype: fp8`: the DeepSeek-R1 FP4 B200 TensorRT-LLM
# and SGLang scripts and the Llama-3.1-70B FP4 B200 vLLM one of SemiAnalysisAI/InferenceX) and
# NVIDIA/srt-slurm's FP4 recipes (`dtype: fp8`, `kv-cache-dtype: "fp8_e4m3"`); no engine there
# keeps an FP4 one. Other precisions keep their own.
KV_OF_WEIGHTS = {"fp4": "fp8"}
# The FP8 checkpoint format (`ModelCard.fp8_scaling`, which GEMM rows the dense layers read) of
# a measured row's deployment, where its source says more than the model card, in this order:
# - InferenceX's runs serve the checkpoint their workflow names (`INFERENCEX_FP8`: the NVIDIA
#   Llama-3.1-70B runs serve nvidia/Llama-3.3-70B-Instruct-FP8, ModelOpt's per-tensor FP8 with
#   static input scales, SemiAnalysisAI/InferenceX .github/workflows/70b-tmpl.yml at 425f74d5);
# - a row whose `source_model` is a known FP8 checkpoint runs its format (`FP8_CHECKPOINTS`, from
#   each checkpoint's quantization config: DeepSeek's and Qwen's own are 128x128 block-scaled,
#   NVIDIA's ModelOpt ones per-tensor with static input scales);
# - a BF16 checkpoint quantised by the engine at load time (no input scales to read) runs what
#   aiconfigurator's sample labels the row (`gemm_quant_mode`, copied by
#   benchmarks/silicon_to_validate.py; `GEMM_QUANT_LABELS`): fp8 per-tensor with the scale
#   computed per call, fp8_block block-scaled;
# - otherwise the card's own format.
INFERENCEX_FP8 = {"llama-3.1-70b": "per_tensor_static"}
_DUMP = re.compile(r"_cfg\d+$")  # InferenceX database dumps in aiconfigurator's sample
_DATED = re.compile(r"^\d{4}_\d{2}_\d{2}_")  # InferenceX's dated result exports there
FP8_CHECKPOINTS = {
    "deepseek-ai/DeepSeek-R1": "block", "deepseek-ai/DeepSeek-V3": "block",
    "Qwen/Qwen3-235B-A22B-FP8": "block", "nvidia/Llama-3.1-8B-Instruct-FP8": "per_tensor_static",
}
GEMM_QUANT_LABELS = {"fp8": "per_tensor_dynamic", "fp8_static": "per_tensor_static", "fp8_block": "block"}
# every value a `gemm_quant_mode` column may hold (aiconfigurator's labels; the rest are not FP8)
GEMM_QUANT_MODES = ("", "bf16", *GEMM_QUANT_LABELS, "nvfp4")


def kv_precision(weights: str) -> str:
    """The KV-cache precision of a measured row whose weights are `weights` (`KV_OF_WEIGHTS`)."""
    return KV_OF_WEIGHTS.get(weights, weights)


def benchmark_tool(raw: dict[str, str]) -> str:
    """The benchmark tool that measured a row (solver/accuracy/replay_rows.py, module docstring)."""
    named = (raw.get("benchmark") or "").strip()
    if named:
        return named
    sid = (raw.get("source_id") or "").strip()
    if not sid:
        return "vllm"
    if _DUMP.search(sid) or _DATED.match(sid):
        return "inferencex"
    return "aiconfigurator"


def fp8_scaling(raw: dict[str, str], tool: str, card_default: str) -> str:
    """The FP8 checkpoint format a measured row ran (the rules above `INFERENCEX_FP8`)."""
    if tool == "inferencex" and str(raw.get("model", "")) in INFERENCEX_FP8:
        return INFERENCEX_FP8[str(raw.get("model", ""))]
    checkpoint = str(raw.get("source_model") or "").strip()
    if checkpoint in FP8_CHECKPOINTS:
        return FP8_CHECKPOINTS[checkpoint]
    if tool == "inferencex":
        return card_default
    return GEMM_QUANT_LABELS.get(str(raw.get("gemm_quant_mode") or "").strip(), card_default)


Bad = Callable[[str, str], InputError]


def csv_records(path: str, text: str, required: list[str]) -> tuple[list[str], Iterator[tuple[int, dict, Bad]]]:
    """The header and, per data row, (line, raw values, bad(field, why) -> InputError naming
    the file, line and field) of a measured CSV; missing columns and surplus values are errors."""
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(f"{path}:1: missing column(s): {', '.join(missing)}")

    def records():
        for i, raw in enumerate(reader, start=2):
            def bad(field: str, why: str, i=i, raw=raw) -> InputError:
                return InputError(f"{path}:{i}: {field}: {why} (got {shown(raw.get(field))})")

            if None in raw:
                raise InputError(f"{path}:{i}: more values than columns")
            yield i, raw, bad

    return list(header), records()


def _literal(text: str | None) -> float:
    """float(text), for at most MAX_LITERAL characters (a longer literal is a ValueError)."""
    if text is not None and len(text) > MAX_LITERAL:
        raise ValueError(f"more than {MAX_LITERAL} characters")
    return float(text)  # type: ignore[arg-type]


def whole_numbers(raw: dict, columns: list[str], bad: Bad) -> dict[str, int]:
    """Each column a whole number >= 1 (non-finite values and fractions are errors)."""
    out = {}
    for c in columns:
        try:
            v = _literal(raw[c])
        except (TypeError, ValueError):
            raise bad(c, f"expected a whole number of at most {MAX_LITERAL} characters") from None
        if not math.isfinite(v) or v < 1 or v != int(v):
            raise bad(c, "must be a whole number >= 1")
        out[c] = int(v)
    return out


def milliseconds(raw: dict, columns: tuple[str, ...], bad: Bad) -> list[float]:
    """Each column a positive finite number of milliseconds."""
    out = []
    for c in columns:
        try:
            v = _literal(raw[c])
        except (TypeError, ValueError):
            raise bad(c, f"expected a number of milliseconds of at most {MAX_LITERAL} characters") from None
        if not math.isfinite(v) or v <= 0:
            raise bad(c, "must be a positive finite number")
        out.append(v)
    return out


def error_stats(pred: np.ndarray, meas: np.ndarray) -> ErrorStats:
    err = (pred - meas) / meas * 100.0
    return ErrorStats(
        rows=int(err.size),
        median_abs_pct=round(float(np.median(np.abs(err))), 3),
        mean_abs_pct=round(float(np.mean(np.abs(err))), 3),
        bias_pct=round(float(np.mean(err)), 3),
        p90_abs_pct=round(float(np.percentile(np.abs(err), 90)), 3),
    )


def build_report(path: str, header: list[str], out_rows: list[ValidationRow], keys: list[tuple[str, str, str]],
                 pred: tuple[np.ndarray, np.ndarray], meas: tuple[np.ndarray, np.ndarray]) -> ValidationReport:
    """The report of predicted against measured (ttft, tpot) per row, grouped by `keys`
    (hardware, model, engine) per row."""
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for k, key in enumerate(keys):
        groups[key].append(k)
    group_stats = [
        GroupStats(hardware=h, model=m, engine=e, ttft=error_stats(pred[0][idx], meas[0][idx]),
                   tpot=error_stats(pred[1][idx], meas[1][idx]))
        for (h, m, e), idx in sorted(groups.items())
    ]
    return ValidationReport(
        source=path, rows=out_rows, groups=group_stats,
        overall=GroupStats(hardware="all", model="all", engine="all",
                           ttft=error_stats(pred[0], meas[0]), tpot=error_stats(pred[1], meas[1])),
        columns=header,
    )


