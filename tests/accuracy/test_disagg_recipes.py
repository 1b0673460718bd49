"""InferenceX's disaggregated recipes read for the decode limit the runs launched with
(benchmarks/inferencex_disagg_recipes.py), and the shipped sample carries those limits."""

from __future__ import annotations

import csv
from pathlib import Path

from benchmarks.inferencex_disagg_recipes import decode_limit, find_recipe

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"

ROW = {"precision": "fp8", "hardware": "h100-sxm", "engine": "trtllm", "input_tokens": "1024",
       "output_tokens": "1024", "concurrency": "6", "prefill_tp": "1", "prefill_ep": "16", "prefill_dp": "16",
       "prefill_workers": "1", "decode_tp": "16", "decode_ep": "16", "decode_dp": "1", "decode_workers": "3"}


def _point(conc, decode_workers, cfg, spec=None):
    p = {"conc-list": conc,
         "prefill": {"num-worker": 1, "tp": 16, "ep": 16, "dp-attn": True, "additional-settings": [f"CONFIG_FILE={cfg}"]},
         "decode": {"num-worker": decode_workers, "tp": 16, "ep": 16, "dp-attn": False}}
    if spec:
        p["spec-decoding"] = spec
    return p


MASTER = {"dsr1-fp8-h100-dynamo-trt": {"seq-len-configs": [
    {"isl": 8192, "osl": 1024, "search-space": [_point([6], 3, "r/8k.yaml")]},
    {"isl": 1024, "osl": 1024, "search-space": [
        _point([6], 3, "r/mtp.yaml", "mtp"),  # speculative: not the plain-decoding row
        _point([6], 2, "r/two.yaml"),  # another decode layout
        _point([6], 3, "r/stp.yaml")]}]}}


def test_the_row_finds_its_own_point():
    # lengths, concurrency, plain decoding and both roles' layouts (attention DP as dp = tp)
    assert find_recipe(ROW, MASTER) == "r/stp.yaml"
    assert find_recipe({**ROW, "concurrency": "9"}, MASTER) is None
    assert find_recipe({**ROW, "engine": "sglang"}, MASTER) is None  # dsr1-fp8-h100-dynamo-sglang: absent


def test_decode_limits_per_attention_dp_rank():
    trt = {"backend": {"trtllm_config": {"decode": {"max_batch_size": 16}, "prefill": {"max_batch_size": 2}}}}
    assert decode_limit(trt, "trtllm", 1) == 16
    sgl = {"backend": {"sglang_config": {"decode": {"max-running-requests": 256}}}}
    assert decode_limit(sgl, "sglang", 8) == 32  # the server's limit over its 8 DP ranks
    assert decode_limit(sgl, "sglang", 1) == 256
    assert decode_limit({"backend": {"sglang_config": {"decode": {}}}}, "sglang", 1) is None


def test_the_shipped_sample_carries_the_recipes_limits():
    table = {r["source_id"]: r for r in csv.DictReader((DATA / "inferencex_disagg_recipes.csv").open())}
    rows = {r["source_id"]: r for r in csv.DictReader((DATA / "silicon_sample_disagg_validate.csv").open())}
    assert len(table) >= 60
    for sid, t in table.items():
        assert rows[sid]["decode_batch"] == t["decode_max_batch"], sid
    # the H100 6-client point: three decode workers of one slot each (its recipe's max_batch_size)
    six = [r for r in rows.values() if r["hardware"] == "h100-sxm" and r["concurrency"] == "6"]
    assert six and all(r["decode_batch"] == "1" and r["decode_workers"] == "3" for r in six)
