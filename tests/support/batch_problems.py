"""The problem files the batch tests plan (imported by test_batch*.py).

Every problem is the small two-type problem of the question tests (Llama 3.1 8B, colocated,
one candidate row per hardware type after pruning: each plan takes ~60 ms), so a batch of
them is quick. `make_tree` lays out

    good/small.yaml        100 QPS: optimal
    good/infeasible.yaml   5000 QPS within $100/hour: infeasible
    good/sweep.yaml        h200-sxm price [2, 3] x chat qps 50..150 (3 values): 6 variants
    good/custom-card.yaml  a hardware card given by path (cards/test-gpu.yaml, a copy of
                           h100-sxm renamed), for resume after a card changes
    bad/qps_nan.yaml       invalid (qps: .nan, line 10)
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.cli import ROOT
from tests.support.questions_problem import small_problem

SWEEP = """\
sweep:
  hardware[h200-sxm].price_per_hour: [2, 3]
  services[chat].workload.qps: {from: 50, to: 150, count: 3}
"""

CUSTOM = """\
name: custom-card
objective: min_cost
services:
  - name: chat
    model: llama-3.1-8b
    precision: fp8
    workload: {qps: 100, input_tokens: 1024, output_tokens: 128, max_context: 4096}
    slo: {ttft_ms: 1000, tpot_ms: 40}
    runtime: colocated
hardware:
  - {type: cards/test-gpu.yaml}
search: {tp: [1, 2], pp: [1], batch: [8, 32], chunk_tokens: [2048]}
"""


def named(text: str, name: str) -> str:
    return text.replace("name: small-two-types", f"name: {name}", 1)


def gpu_card(price: float = 2.5) -> str:
    """hardware/h100-sxm.yaml renamed test-gpu, at `price` per device-hour."""
    lines = []
    for ln in (ROOT / "hardware" / "h100-sxm.yaml").read_text().splitlines():
        if ln.startswith("name:"):
            ln = "name: test-gpu"
        elif ln.startswith("price_per_hour:"):
            ln = f"price_per_hour: {price}"
        lines.append(ln)
    return "\n".join(lines) + "\n"


def make_tree(root: Path) -> Path:
    good, bad, cards = root / "good", root / "bad", root / "good" / "cards"
    for d in (good, bad, cards):
        d.mkdir(parents=True, exist_ok=True)
    (good / "small.yaml").write_text(named(small_problem(), "small"))
    (good / "infeasible.yaml").write_text(named(small_problem(qps=5000, budget=100), "infeasible"))
    (good / "sweep.yaml").write_text(named(small_problem(), "sweep") + SWEEP)
    (good / "custom-card.yaml").write_text(CUSTOM)
    (cards / "test-gpu.yaml").write_text(gpu_card())
    shutil.copy(ROOT / "tests" / "problem" / "malformed" / "qps_nan.yaml", bad / "qps_nan.yaml")
    return root
