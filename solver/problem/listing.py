"""The shipped cards as rows of `fleetplan catalog` (rendered by `solver/report/catalog.py`)."""

from __future__ import annotations

from solver.catalog import shipped
from solver.perf.arch import ModelArch


def model_rows() -> list[dict]:
    rows = []
    for name in shipped.names("models"):
        c = shipped.model_card(name)
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


def hardware_rows() -> list[dict]:
    rows = []
    for name in shipped.names("hardware"):
        c = shipped.hardware_card(name)
        rows.append({
            "name": name, "vendor": c.vendor, "memory_gib": c.memory_gib,
            "hbm_tb_s": c.hbm_bandwidth_tb_s, "bf16_tflops": c.peak_tflops.bf16,
            "fp8_tflops": c.peak_tflops.fp8, "fp4_tflops": c.peak_tflops.fp4,
            "scale_up_devices": c.scale_up.domain_devices, "power_w": c.power_w,
            "price_per_hour": c.price_per_hour, "price_date": c.price_date,
        })
    return rows


LISTS = {"models": model_rows, "hardware": hardware_rows}
