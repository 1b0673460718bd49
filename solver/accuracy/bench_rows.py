"""A benchmark tool's measured points as `fleetplan validate` rows.

A tool's file records the load and the latencies; what it does not record (the hardware, the
parallel layout, often the model card's name) comes from `--hardware`, `--tp`, ... (flags win
over the file); against a plan (`--plan`, solver/accuracy/plan_compare.py) the pool supplies it.
A field none of them gives is an error naming the field and where it could come from.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from solver.accuracy.readers.common import BenchPoint
from solver.accuracy.validate import REQUIRED
from solver.catalog import shipped
from solver.errors import InputError

# the validate CSV columns a row needs besides the measured latencies (solver/accuracy/validate.py)
FIELDS = ("model", "hardware", "precision", "engine", "tp", "pp", "ep", "dp",
          "concurrency", "input_tokens", "output_tokens")
FLAG_OF = {"model": "--model-card", "input_tokens": "--input-tokens", "output_tokens": "--output-tokens"}
# the replay's harness names (solver/accuracy/replay_rows.py) of the tools it replays
HARNESS = {"aiperf": "aiperf", "vllm": "vllm"}
# suffixes of a HuggingFace repository name that leave the architecture unchanged
_SUFFIXES = re.compile(r"(-instruct|-chat|-hf|-fp8|-fp4|-nvfp4|-awq|-gptq|-v\d+(\.\d+)*)+$")


def _stem(name: str) -> str:
    base = name.strip().rsplit("/", 1)[-1].lower()
    base = base.removeprefix("meta-")
    return _SUFFIXES.sub("", base)


def model_card_name(model: str) -> str | None:
    """The shipped card for a model as a tool records it: the card's name, or the HuggingFace
    repository its `source` names (meta-llama/Llama-3.1-70B-Instruct -> llama-3.1-70b)."""
    cards = shipped.names("models")
    if model in cards:
        return model
    want = _stem(model)
    for name in cards:
        source = shipped.model_card(name).source or ""
        repo = source.split()[1] if source.startswith("HF ") and len(source.split()) > 1 else ""
        if want in (_stem(name), _stem(repo)):
            return name
    return None


@dataclass
class Known:
    """Row fields from one source (flags, or a plan pool), by field name."""

    values: dict[str, object] = field(default_factory=dict)
    source: str = ""


def file_values(p: BenchPoint) -> dict[str, object]:
    """The row fields the file itself gives (its model as a shipped card, where one matches)."""
    out: dict[str, object] = dict(p.labels)
    if p.model:
        card = model_card_name(p.model)
        if card is not None:
            out["model"] = card
    if p.concurrency is not None and p.rate_qps is None:  # a capped open-loop run is no closed loop
        out["concurrency"] = p.concurrency
    for k in ("input_tokens", "output_tokens"):
        v = getattr(p, k)
        if v is not None:
            out[k] = max(1, round(v))
    return out


def resolve_fields(path: str, p: BenchPoint, flags: Known) -> dict[str, object]:
    """Every row field: the flags' first, then the file's; InputError names a field neither gives."""
    values: dict[str, object] = {}
    for src in (file_values(p), flags.values):
        values.update({k: v for k, v in src.items() if v is not None and v != ""})
    values.setdefault("engine", "")
    for k in ("pp", "ep", "dp"):  # a layout that names only tp has no pipeline, expert or data parallelism
        values.setdefault(k, 1)
    for k in FIELDS:
        if values.get(k) is None:
            raise InputError(_missing(path, p, k))
    return values


def _missing(path: str, p: BenchPoint, k: str) -> str:
    flag = FLAG_OF.get(k, f"--{k.replace('_', '-')}")
    where = f" ({p.where})" if p.where != "document" else ""
    if k == "model" and p.model:
        return (f"{path}: model: '{p.model}'{where} matches no shipped model card; pass {flag} NAME "
                f"(one of {', '.join(shipped.names('models'))})")
    if k == "concurrency" and p.rate_qps is not None:
        return (f"{path}: concurrency: the {p.tool} run{where} is an open-loop run at {p.rate_qps:g} req/s; "
                "the closed-loop prediction needs a concurrency: pass --concurrency N, or compare with "
                "the plan's predictions with --plan RESULT.json")
    return f"{path}: {k}: not recorded by the {p.tool} file{where}; pass {flag} or --plan RESULT.json"


def rows_csv(path: str, points: list[BenchPoint], flags: Known) -> str:
    """The points as a validate CSV (the columns validate reads, plus `benchmark` and `source`)."""
    out = io.StringIO()
    cols = REQUIRED + ["engine", "benchmark", "source"]
    w = csv.DictWriter(out, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for p in points:
        v = resolve_fields(path, p, flags)
        w.writerow({**{k: v[k] for k in FIELDS}, "mode": "colocated", "ttft_ms": p.ttft.mean,
                    "tpot_ms": p.tpot.mean, "benchmark": HARNESS.get(p.tool, ""),
                    "source": f"{p.tool}:{p.where}"})
    return out.getvalue()
