"""Measured benchmark CSVs, colocated or disaggregated: reading their rows (every error names
the file, line and field) and the report of predictions against them."""

from __future__ import annotations

import csv
import io
import math
import re
import typing
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from solver.accuracy.readers.common import MAX_LITERAL, shown
from solver.errors import InputError
from solver.schema.speculative import MAX_SPEC_TOKENS, Speculative
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

SPEC_METHODS = typing.get_args(Speculative.model_fields["method"].annotation)
MAX_SPEC_TEXT = 600  # METHOD:K:A:DRAFT, a draft model's card name or path of at most 500


@dataclass(frozen=True)
class RowSpeculation:
    """The speculative decoding a measured row ran: its method, the tokens drafted per step and,
    where the row records it, the acceptance rate (`spec`). The rate belongs to the traffic and
    the proposer, not to the engine, and the row's TPOT turns on it, so a row without it cannot
    be predicted (`validate` reports it as not predicted, with the reason)."""

    method: str
    tokens: int
    spec: Speculative | None = None
    source: str = "the row's speculative column"

    @property
    def label(self) -> str:
        return self.spec.label if self.spec is not None else f"{self.method}:{self.tokens}"

    def unpredictable(self) -> str | None:
        """Why the row cannot be predicted (no acceptance rate), or None."""
        if self.spec is not None:
            return None
        return (f"ran speculative decoding {self.label} ({self.source}) at an acceptance rate the row does not "
                f"record; give it as METHOD:K:A in a speculative column")

    def why_not(self, model: str, closed_form: str) -> str | None:
        """Why predictor `model` gives the row nothing: no acceptance rate, or `closed_form` (the
        closed form's reason) when `model` is not the replay; None when the replay predicts it."""
        return self.unpredictable() or (closed_form if model != "replay" else None)


def row_speculation(raw: dict, bad: Bad) -> RowSpeculation | None:
    """A row's `speculative` column: empty (none), METHOD:K (ran it, acceptance not recorded) or
    METHOD:K:A[:DRAFT] as `estimate --speculative` reads it (solver/schema/speculative.py)."""
    text = (raw.get("speculative") or "").strip()
    if not text:
        return None
    if len(text) > MAX_SPEC_TEXT:
        raise bad("speculative", f"expected METHOD:K[:A[:DRAFT]] of at most {MAX_SPEC_TEXT} characters")
    parts = text.split(":")
    if len(parts) == 2:
        method, k = parts
        if method not in SPEC_METHODS:
            raise bad("speculative", f"method must be one of {', '.join(SPEC_METHODS)}")
        if not k.isdigit() or not 1 <= int(k) <= MAX_SPEC_TOKENS:
            raise bad("speculative", f"K (tokens drafted per step) must be a whole number in 1..{MAX_SPEC_TOKENS}")
        return RowSpeculation(method, int(k))
    try:
        spec = Speculative.from_spec(text)
    except ValueError as exc:
        raise bad("speculative", str(exc)) from None
    return RowSpeculation(spec.method, spec.tokens, spec)


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
    """Over the rows with a prediction (a nan prediction is a row not predicted)."""
    ok = np.isfinite(pred)
    err = (pred[ok] - meas[ok]) / meas[ok] * 100.0
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
    (hardware, model, engine) per row; rows not predicted (nan, their reason in the row) count
    in no group, and a group of none is left out."""
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    done = np.isfinite(pred[0]) & np.isfinite(pred[1])
    for k, key in enumerate(keys):
        if done[k]:
            groups[key].append(k)
    if not done.any():
        first = next((r for r in out_rows if r.not_predicted), out_rows[0])
        raise InputError(f"{path}:{first.line}: no row could be predicted ({first.not_predicted or 'no prediction'})")
    pred = (np.where(done, pred[0], np.nan), np.where(done, pred[1], np.nan))
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


