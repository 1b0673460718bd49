"""The sample's InferenceX MoE layouts read as the runs launched them
(benchmarks/silicon_to_validate.py `run_layout`), and the shipped CSV holds no world size larger
than its node."""

from __future__ import annotations

import csv
from pathlib import Path

from benchmarks.silicon_to_validate import distinct, run_layout, vllm_moe_layout

CSV = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "silicon_sample_validate.csv"


def test_tp_times_ep_on_one_node_is_read_as_tp_and_ep():
    # the sample: tp_size 64, moe_tp 8, moe_ep 8 for InferenceX's TP=8 EP_SIZE=8 run (id ..._tp8_ep8_...)
    assert run_layout("h200_sxm", 64, 1, 8, 8) == (8, 1, 8)
    assert run_layout("b200_sxm", 16, 1, 4, 4) == (4, 1, 4)
    # with attention DP: attention_dp_size 64 -> one attention rank per GPU, 8 of them
    assert run_layout("b200_sxm", 1, 64, 8, 8) == (1, 8, 8)
    assert run_layout("b200_sxm", 1, 16, 4, 4) == (1, 4, 4)


def test_other_layouts_stand():
    assert run_layout("h200_sxm", 8, 1, 8, 1) == (8, 1, 1)  # TP8 with the experts split 8 ways
    assert run_layout("h200_sxm", 8, 1, 1, 8) == (8, 1, 8)  # TP8 EP8 written the usual way
    assert run_layout("b300_sxm", 4, 1, 2, 2) == (4, 1, 2)  # 2 x 2 = 4 fits one node
    assert run_layout("gb200", 64, 1, 8, 8) == (64, 1, 8)  # NVL72: 64 GPUs can be one domain


def test_the_shipped_rows_fit_their_node():
    with CSV.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["hardware"] != "gb200-nvl72"]
    worlds = [int(r["tp"]) * int(r["dp"]) * int(r["pp"]) for r in rows]
    assert rows and max(worlds) <= 8


def test_a_vllm_moe_row_runs_on_its_moe_width():
    # the sample's Qwen3-235B-A22B-FP8 vLLM rows: tp 1 with moe_tp 2 (235 GB of weights on 2 GPUs)
    assert vllm_moe_layout(1, 1, 2, 1) == 2
    assert vllm_moe_layout(2, 1, 4, 1) == 4
    assert vllm_moe_layout(1, 1, 4, 1) == 4
    # consistent layouts stand: tp x dp already the MoE width, or wider
    assert vllm_moe_layout(4, 1, 4, 1) == 4
    assert vllm_moe_layout(4, 1, 1, 4) == 4
    assert vllm_moe_layout(1, 8, 1, 8) == 1
    assert vllm_moe_layout(8, 1, 1, 1) == 8


def test_distinct_keeps_one_row_per_measurement():
    from collections import Counter

    row = dict(model="m", hardware="h", precision="fp8", engine="vllm", tp=8, pp=1, ep=1, dp=1,
               input_tokens=1024, output_tokens=1024, concurrency=4, ttft_ms="260.1", tpot_ms="10.3")
    rows = [dict(row, source_id="a"), dict(row, source_id="b"), dict(row, source_id="c", tpot_ms="10.4")]
    skipped: Counter = Counter()
    kept = distinct(rows, skipped)
    assert [r["source_id"] for r in kept] == ["a", "c"]
    assert sum(skipped.values()) == 1
    with CSV.open(newline="") as fh:
        shipped = list(csv.DictReader(fh))
    keys = [tuple(r[c] for c in ("model", "hardware", "precision", "engine", "tp", "pp", "ep", "dp", "input_tokens",
                                  "output_tokens", "concurrency", "ttft_ms", "tpot_ms")) for r in shipped]
    assert len(keys) == len(set(keys))
