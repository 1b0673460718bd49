"""The small two-type problem the question tests plan (imported by test_questions*.py).

Llama 3.1 8B, colocated only, tp1/tp2, pp1, batches 8 and 32, one chunk size: after pruning
exactly one candidate row per hardware type survives (tp1, one device each), so every fleet is
a pair of instance counts and brute force can enumerate them."""

from __future__ import annotations


def small_problem(qps: float = 100, budget: float | None = None, h200_price: float = 3.5) -> str:
    b = f"budget_per_hour: {budget}\n" if budget is not None else ""
    return f"""\
name: small-two-types
objective: min_cost
{b}services:
  - name: chat
    model: llama-3.1-8b
    precision: fp8
    workload: {{qps: {qps}, input_tokens: 1024, output_tokens: 128, max_context: 4096}}
    slo: {{ttft_ms: 1000, tpot_ms: 40}}
    runtime: colocated
hardware:
  - {{type: h100-sxm, price_per_hour: 2.5}}
  - {{type: h200-sxm, price_per_hour: {h200_price}}}
search: {{tp: [1, 2], pp: [1], batch: [8, 32], chunk_tokens: [2048]}}
"""
