"""`fleetplan catalog`: the shipped cards as a table or JSON."""

from __future__ import annotations

import json

from solver import catalog
from solver.perf.arch import ModelArch
from solver.report.text import table


def _models() -> list[dict]:
    rows = []
    for name in catalog.names("models"):
        c = catalog.model_card(name)
        a = ModelArch.from_card(c)
        rows.append({
            "name": name, "total_params_b": round(a.total_params / 1e9, 2),
            "active_params_b": round(a.active_params / 1e9, 2), "layers": c.num_layers,
            "hidden": c.hidden_size, "attention": c.attention.kind,
            "experts": c.moe.num_experts if c.moe else None,
            "top_k": c.moe.experts_per_token if c.moe else None,
            "max_context": c.max_context_tokens,
        })
    return rows


def _hardware() -> list[dict]:
    rows = []
    for name in catalog.names("hardware"):
        c = catalog.hardware_card(name)
        rows.append({
            "name": name, "vendor": c.vendor, "memory_gib": c.memory_gib,
            "hbm_tb_s": c.hbm_bandwidth_tb_s, "bf16_tflops": c.peak_tflops.bf16,
            "fp8_tflops": c.peak_tflops.fp8, "fp4_tflops": c.peak_tflops.fp4,
            "scale_up_devices": c.scale_up.domain_devices, "power_w": c.power_w,
            "price_per_hour": c.price_per_hour, "price_date": c.price_date,
        })
    return rows


_LISTS = {"models": _models, "hardware": _hardware}


def catalog_json(kinds: list[str]) -> str:
    return json.dumps({k: _LISTS[k]() for k in kinds}, indent=2)


def catalog_text(kinds: list[str]) -> str:
    parts = []
    for k in kinds:
        rows = _LISTS[k]()
        headers = list(rows[0].keys()) if rows else ["name"]
        parts.append(f"{k}:\n" + table(headers, [[r[h] for h in headers] for r in rows]))
    return "\n\n".join(parts)
