"""`fleetplan validate`: predictions per measured row, error statistics, bad input."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from solver.accuracy.validate import validate_text
from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.errors import InputError
from solver.perf import closed_loop as loop
from solver.perf import runtime as rt
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.tables import HardwareTable, Plans
from tests.support.cli import cli

HEADER = "model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms,engine,note\n"
ROWS = (
    "llama-3.1-70b,h100-sxm,fp8,colocated,1024,1024,16,4,1,1,1,121.4,13.19,vllm,first\n"
    "llama-3.1-8b,h100-sxm,bf16,colocated,2048,128,8,1,1,1,1,80.0,9.0,,second\n"
)


def test_predictions_equal_the_closed_loop_model():
    rep = validate_text("m.csv", HEADER + ROWS)
    assert len(rep.rows) == 2
    r = rep.rows[0]
    arch = ModelArch.from_card(shipped.model_card("llama-3.1-70b"))
    params = engine_params("vllm")
    card = shipped.hardware_card("h100-sxm")
    hw = HardwareTable.from_cards([card], engine=params, profiles=measured_tables([card], "vllm"))
    plans = Plans.of(hw=0, tp=4, pp=1, ep=1, dp=1, batch=16, wprec=1, kvprec=1)
    cl = loop.closed_loop(arch, hw, plans, rt.Workload(1024.0, 1024.0), 16, params)
    assert r.predicted_ttft_ms == pytest.approx(cl.ttft_ms[0], abs=1e-4)
    assert r.predicted_tpot_ms == pytest.approx(cl.tpot_ms[0], abs=1e-4)
    # second row has no engine: uncalibrated defaults
    assert rep.rows[1].engine is None


def test_error_statistics_hand_computed():
    rep = validate_text("m.csv", HEADER + ROWS)
    pred = np.array([x.predicted_tpot_ms for x in rep.rows])
    meas = np.array([13.19, 9.0])
    err = (pred - meas) / meas * 100
    o = rep.overall.tpot
    assert o.rows == 2
    assert o.median_abs_pct == pytest.approx(np.median(np.abs(err)), abs=1e-3)
    assert o.mean_abs_pct == pytest.approx(np.mean(np.abs(err)), abs=1e-3)
    assert o.bias_pct == pytest.approx(np.mean(err), abs=1e-3)
    assert {(g.model, g.engine) for g in rep.groups} == {("llama-3.1-70b", "vllm"), ("llama-3.1-8b", "-")}


@pytest.mark.parametrize("row, field", [
    ("llama-3.1-70b,h100-sxm,fp8,colocated,1024,1024,0,4,1,1,1,121,13,vllm,x\n", "concurrency"),
    ("llama-3.1-70b,h100-sxm,fp8,colocated,1024,1024,16,4,1,1,1,-5,13,vllm,x\n", "ttft_ms"),
    ("llama-3.1-70b,h100-sxm,fp8,colocated,inf,1024,16,4,1,1,1,121,13,vllm,x\n", "input_tokens"),
    ("llama-3.1-70b,h100-sxm,fp8,colocated,1024,nan,16,4,1,1,1,121,13,vllm,x\n", "output_tokens"),
    ("llama-3.1-70b,h100-sxm,fp8,colocated,1024,1024,16.5,4,1,1,1,121,13,vllm,x\n", "concurrency"),
    ("llama-3.1-70b,h100-sxm,fp8,colocated,1024,1024,16,4,1,1,1,nan,13,vllm,x\n", "ttft_ms"),
    ("llama-3.1-70b,h100-sxm,fp9,colocated,1024,1024,16,4,1,1,1,121,13,vllm,x\n", "precision"),
    ("llama-3.1-70b,h100-sxm,fp8,disaggregated,1024,1024,16,4,1,1,1,121,13,vllm,x\n", "mode"),
    ("llama-3.1-70b,h100-sxm,fp8,colocated,1024,1024,16,4,1,1,1,121,13,tensorrt,x\n", "engine"),
    ("llama-9,h100-sxm,fp8,colocated,1024,1024,16,4,1,1,1,121,13,vllm,x\n", "model"),
    ("llama-3.1-70b,h100-sxm,fp8,colocated,1024,1024,16,3,1,1,1,121,13,vllm,x\n", "tp"),
])
def test_bad_rows_name_line_and_field(row, field):
    with pytest.raises(InputError, match=rf"m\.csv:3: .*{field}"):
        validate_text("m.csv", HEADER + ROWS.splitlines(keepends=True)[0] + row)


def test_missing_column():
    with pytest.raises(InputError, match=r"m\.csv:1: missing column\(s\): tpot_ms"):
        validate_text("m.csv", HEADER.replace(",tpot_ms", "") + "x\n")


def test_cli_formats(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(HEADER + ROWS)
    table = cli("validate", str(path))
    assert table.returncode == 0, table.stderr
    assert "TTFT med|%|" in table.stdout and "llama-3.1-70b" in table.stdout
    js = json.loads(cli("validate", str(path), "--format", "json").stdout)
    assert js["overall"]["tpot"]["rows"] == 2 and len(js["rows"]) == 2
    out = cli("validate", str(path), "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["note"] == "first" and rows[1]["note"] == "second"  # passthrough
    assert float(rows[0]["predicted_tpot_ms"]) > 0 and "predicted_ttft_ms" in rows[1]


def test_cli_bad_file_exit_2(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(HEADER + "llama-3.1-70b,h100-sxm,fp8,colocated,x,1024,16,4,1,1,1,121,13,vllm,x\n")
    r = cli("validate", str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{path}:2: input_tokens" in r.stderr
    assert cli("validate", str(tmp_path / "nope.csv")).returncode == 2


def test_shipped_silicon_sample_converts_to_valid_input():
    data = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "silicon_sample_validate.csv"
    rows = list(csv.DictReader(data.open()))
    assert len(rows) > 1000
    assert {r["mode"] for r in rows} == {"colocated"}
    assert {"h100-sxm", "h200-sxm", "b200"} <= {r["hardware"] for r in rows}


LABELLED = "model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms,engine,gemm_quant_mode\n"


def test_gemm_quant_mode_sets_the_rows_fp8_format_and_a_bad_one_names_line_and_field():
    base = "llama-3.1-70b,h100-sxm,fp8,colocated,1024,1024,16,4,1,1,1,121.4,13.19,trtllm,"
    rep = validate_text("m.csv", LABELLED + base + "\n" + base + "fp8\n")
    static, dynamic = rep.rows
    # the Llama card's static input scales skip the ~7 us compute-scale kernel of each of the
    # 80 layers' 4 GEMMs at 16 tokens: the labelled (dynamic) row's decode step is longer
    assert 80 * 4 * 6e-3 < dynamic.predicted_tpot_ms - static.predicted_tpot_ms < 80 * 4 * 9e-3
    with pytest.raises(InputError, match=r"m\.csv:2: gemm_quant_mode: expected one of bf16, fp8, "):
        validate_text("m.csv", LABELLED + base + "fp9\n")


@pytest.mark.parametrize("raw, tool, want", [
    ({"model": "llama-3.1-70b", "gemm_quant_mode": "fp8"}, "inferencex", "per_tensor_static"),
    ({"model": "deepseek-v3", "gemm_quant_mode": "fp8"}, "inferencex", "block"),  # the card's
    ({"model": "qwen3-235b-a22b", "source_model": "Qwen/Qwen3-235B-A22B-FP8", "gemm_quant_mode": "fp8"},
     "aiconfigurator", "block"),  # a known FP8 checkpoint over the label
    ({"model": "qwen3-32b", "source_model": "Qwen/Qwen3-32B", "gemm_quant_mode": "fp8"},
     "aiconfigurator", "per_tensor_dynamic"),  # a BF16 checkpoint quantised at load: the label
    ({"model": "llama-3.1-8b", "source_model": "meta-llama/Llama-3.1-8B-Instruct", "gemm_quant_mode": "fp8_block"},
     "aiconfigurator", "block"),
    ({"model": "llama-3.1-8b"}, "vllm", "per_tensor_static"),  # nothing said: the card's
])
def test_fp8_format_of_a_measured_row(raw, tool, want):
    from solver.accuracy.measured import fp8_scaling

    assert fp8_scaling(raw, tool, shipped.model_card(raw["model"]).fp8_scaling) == want


SPEC_HEADER = "model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms,engine,speculative\n"
SPEC_BASE = "llama-3.1-70b,h100-sxm,fp8,colocated,1024,256,8,4,1,1,1,120.0,9.0,vllm,"


@pytest.mark.parametrize("value, why", [
    ("medusa:3", "method must be one of draft, eagle, mtp, ngram"),
    ("medusa:3:0.7", "Input should be 'draft', 'eagle', 'mtp' or 'ngram'"),
    ("eagle:0", "K (tokens drafted per step) must be a whole number in 1..16"),
    ("eagle:x", "K (tokens drafted per step)"),
    ("eagle:3:1.5", "less than or equal to 1"),
    ("draft:3:0.7", "needs a draft_model"),
    ("eagle:3:0.7:" + "x" * 600, "at most 600 characters"),
])
def test_bad_speculative_column_names_line_and_field(value, why):
    with pytest.raises(InputError, match=r"m\.csv:2: speculative: .*" + why.replace("(", r"\(").replace(")", r"\)")):
        validate_text("m.csv", SPEC_HEADER + SPEC_BASE + value + "\n")


def test_speculative_rows_are_reported_not_predicted_with_the_reason_and_counted_in_no_error():
    text = SPEC_HEADER + SPEC_BASE + "\n" + SPEC_BASE + "eagle:3:0.7\n" + SPEC_BASE + "eagle:3\n"
    closed = validate_text("m.csv", text, "closed-form")
    plain, full, bare = closed.rows
    # the closed form models no speculation in a closed loop: both speculating rows have none
    assert plain.not_predicted is None and plain.predicted_tpot_ms > 0
    assert full.predicted_tpot_ms is None and "does not model speculative decoding" in full.not_predicted
    assert bare.speculative == "eagle:3" and "does not record" in bare.not_predicted
    assert closed.overall.tpot.rows == 1
    assert closed.overall.tpot.median_abs_pct == pytest.approx(abs(plain.predicted_tpot_ms / 9.0 - 1) * 100, abs=1e-3)
    replay = validate_text("m.csv", text, "replay")
    plain, full, bare = replay.rows
    # the replay speculates at the row's rate: fewer iterations per token, the same prompts
    assert full.not_predicted is None and full.speculative == "eagle:3:0.7"
    assert full.predicted_tpot_ms < 0.7 * plain.predicted_tpot_ms
    assert bare.predicted_ttft_ms is None and "give it as METHOD:K:A" in bare.not_predicted
    assert replay.overall.ttft.rows == 2
    js = json.loads(replay.model_dump_json())  # valid JSON: no NaN for the row without prediction
    assert js["rows"][2]["predicted_tpot_ms"] is None


def test_cli_speculative_rows_table_csv_and_none_predicted(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(SPEC_HEADER + SPEC_BASE + "\n" + SPEC_BASE + "mtp:2\n")
    table = cli("validate", str(path))
    assert table.returncode == 0, table.stderr
    assert "not predicted (1 of 2 rows; in no error below)" in table.stdout
    assert "line 3: ran speculative decoding mtp:2" in table.stdout
    rows = list(csv.DictReader(io.StringIO(cli("validate", str(path), "--format", "csv").stdout)))
    assert rows[1]["predicted_tpot_ms"] == "" and "acceptance rate" in rows[1]["not_predicted"]
    assert rows[0]["not_predicted"] == "" and float(rows[0]["predicted_tpot_ms"]) > 0
    path.write_text(SPEC_HEADER + SPEC_BASE + "mtp:2\n")
    r = cli("validate", str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{path}:2: no row could be predicted (ran speculative decoding mtp:2" in r.stderr


def test_a_draft_model_row_replays_with_its_draft_and_a_foreign_tokenizer_is_an_error():
    ok = validate_text("m.csv", SPEC_HEADER + SPEC_BASE + "draft:3:0.7:llama-3.1-8b\n", "replay")
    assert ok.rows[0].speculative == "draft:3:0.7:llama-3.1-8b" and ok.rows[0].predicted_tpot_ms > 0
    with pytest.raises(InputError, match=r"m\.csv:2: speculative: .*vocabulary of .* must share the tokenizer"):
        validate_text("m.csv", SPEC_HEADER + SPEC_BASE + "draft:3:0.7:qwen3-32b\n", "replay")
    with pytest.raises(InputError, match=r"m\.csv:2: speculative: "):
        validate_text("m.csv", SPEC_HEADER + SPEC_BASE + "draft:3:0.7:no-such-model\n", "replay")
    with pytest.raises(InputError, match=r"m\.csv:2: speculative: "):
        validate_text("m.csv", SPEC_HEADER + SPEC_BASE + "mtp:3:nan\n", "replay")
