"""The sample's InferenceX MoE layouts read as the runs launched them
(benchmarks/silicon_to_validate.py `run_layout`), and the shipped CSV holds no world size larger
than its node."""

from __future__ import annotations

import csv
from pathlib import Path

from benchmarks.silicon_to_validate import run_layout

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
