"""`fleetplan validate` on disaggregated rows: a hand-computed replay of prefill -> KV link ->
decode, the closed form's terms, the CLI end to end, and bad rows."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

from solver.accuracy.disagg_rows import kv_link, parse_disagg, role_setup
from solver.accuracy.replay_disagg import measured_means, replay_pools
from solver.accuracy.validate import validate_text
from solver.catalog.calibration import engine_params
from solver.errors import InputError
from solver.perf import runtime as rt
from solver.perf.workload import Slo
from solver.replay.fleet import KvLink
from solver.replay.instance import InstancePlan
from solver.replay.requests import RequestTable
from solver.schema.publish import json_schema
from tests.replay.steps_stub import FixedSteps, ListSource
from tests.support.cli import cli

HEADER = ("model,hardware,precision,mode,input_tokens,output_tokens,concurrency,prefill_tp,prefill_pp,"
          "prefill_ep,prefill_dp,prefill_workers,prefill_batch,decode_tp,decode_pp,decode_ep,decode_dp,"
          "decode_workers,decode_batch,ttft_ms,tpot_ms,engine,source_id\n")
ROWS = ("llama-3.1-8b,h100-sxm,bf16,disaggregated,512,8,2,1,1,1,1,1,1,1,1,1,1,2,2,40.0,8.0,vllm,x_cfg1\n"
        "llama-3.1-8b,h100-sxm,bf16,disaggregated,2048,64,8,1,1,1,1,2,1,1,1,1,1,1,8,90.0,9.0,vllm,x_cfg2\n")


def _two_requests(decode_step_s: float, decode_batch: int) -> RequestTable:
    """Two 1000-token prompts of 3 output tokens sent at 0 through one prefill worker (0.05 s per
    prompt, one at a time), the link 0.002 + 1000 x 1e-5 s and one decode worker."""
    t = RequestTable()
    src = ListSource(t, [0.0, 0.0], 1000, 3)
    pre = InstancePlan(FixedSteps(0.01, 0.05), 100_000, "vllm", 1, 8192)
    dec = InstancePlan(FixedSteps(decode_step_s, 0.05), 100_000, "vllm", decode_batch, 8192)
    replay_pools(src, (pre, dec), (1, 1), KvLink(0.002, 1e-5))
    return t


def test_hand_computed_replay_of_two_requests():
    # prefill 0.05 s per iteration, one prompt at a time; KV link 0.002 + 1000 x 1e-5 = 0.012 s;
    # decode iterations 0.01 s. Request 0: prefill 0-0.05, lands 0.062 (first token), tokens 2
    # and 3 at 0.072 and 0.082. Request 1 waits for the prefill: 0.05-0.10, lands 0.112,
    # finishes 0.132. Mean TTFT (0.062 + 0.112) / 2 = 87 ms (+ 5 ms overhead), TPOT 10 ms.
    t = _two_requests(decode_step_s=0.01, decode_batch=2)
    assert t.first_token_s[:2] == pytest.approx([0.062, 0.112], abs=1e-12)
    assert t.finish_s[:2] == pytest.approx([0.082, 0.132], abs=1e-12)
    ttft, tpot = measured_means(t, 5.0)
    assert ttft == pytest.approx(92.0, abs=1e-9) and tpot == pytest.approx(10.0, abs=1e-9)


def test_a_landed_request_waits_for_a_decode_slot_before_its_first_token():
    # as above, but the decode worker holds one sequence (max batch 1) and decodes in 0.04 s:
    # request 0 lands at 0.062 (first token), tokens 2 and 3 at 0.102 and 0.142. Request 1 lands
    # at 0.112 while request 0 holds the slot; admitted at 0.142, its first token is out then
    # (not at the landing), tokens 2 and 3 at 0.182 and 0.222. Mean TTFT (0.062 + 0.142) / 2 =
    # 102 ms; TPOT 40 ms each, the wait in neither's decode.
    t = _two_requests(decode_step_s=0.04, decode_batch=1)
    assert t.first_token_s[:2] == pytest.approx([0.062, 0.142], abs=1e-12)
    assert t.finish_s[:2] == pytest.approx([0.142, 0.222], abs=1e-12)
    assert t.queued_s[:2] == pytest.approx([0.0, 0.05], abs=1e-12)  # the prefill queueing
    ttft, tpot = measured_means(t, 0.0)
    assert ttft == pytest.approx(102.0, abs=1e-9) and tpot == pytest.approx(40.0, abs=1e-9)


def test_kv_link_is_the_planners_transfer():
    # Llama-3.1-8B bf16: 32 layers x 8 KV heads x 128 x (K, V) x 2 bytes = 131,072 B per token;
    # one H100's NIC: 50 GB/s x 0.73 efficiency, 10 us (hardware/h100-sxm.yaml)
    r = parse_disagg("d.csv", HEADER + ROWS)[0]
    params = engine_params("vllm")
    link = kv_link(role_setup("d.csv", r, "prefill", params, "vllm"), params)
    keep = 1.0 - params.kv_transfer_overlap
    assert float(link.seconds(512)) == pytest.approx((10e-6 + 512 * 131072 / (50e9 * 0.73)) * keep, rel=1e-9)


def test_closed_form_is_the_role_formulas_at_low_load():
    # two clients, 8 output tokens: the prefill runs far below rho 0.5, where the M/D/1 median
    # wait is 0, so TTFT = prompt latency + KV transfer + request overhead; TPOT: the decode
    # cycle of a worker running its share of the clients within its limit, min(2 x 1, ceil(2 / 2))
    # = 1 sequence
    rep = validate_text("d.csv", HEADER + ROWS)
    r = parse_disagg("d.csv", HEADER + ROWS)[0]
    params = engine_params("vllm")
    pre, dec = (role_setup("d.csv", r, role, params, "vllm") for role in ("prefill", "decode"))
    wl = rt.Workload(np.array([512.0]), np.array([8.0]))
    prompt = float(rt.prefill_role(pre.arch, pre.hw, pre.plan, wl, Slo(), params).prefill_ms[0])
    kv = float(rt.kv_transfer_s(pre.arch, pre.hw, pre.plan, 512.0, params)[0]) * 1e3
    assert dec.batch == 2 and pre.batch == 1
    assert rep.rows[0].predicted_ttft_ms == pytest.approx(prompt + kv + params.request_overhead_ms, abs=1e-3)
    share = role_setup("d.csv", r, "decode", params, "vllm", running=1)
    assert share.batch == 1
    tpot = float(rt.decode_role(share.arch, share.hw, share.plan, wl, Slo(), params).tpot_p50_ms[0])
    assert rep.rows[0].predicted_tpot_ms == pytest.approx(tpot, abs=1e-3)
    two = float(rt.decode_role(dec.arch, dec.hw, dec.plan, wl, Slo(), params).tpot_p50_ms[0])
    assert tpot < two  # not the decode cycle at the worker's limit of 2
    assert rep.rows[0].mode == "disaggregated" and rep.rows[0].tp is None
    assert rep.rows[1].decode.batch == 8 and rep.rows[1].prefill.workers == 2


def test_cli_validates_disaggregated_rows_end_to_end(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text(HEADER + ROWS)
    out = {}
    for model in ("closed-form", "replay"):
        r = cli("validate", str(f), "--model", model, "--format", "json")
        assert r.returncode == 0, r.stderr
        out[model] = json.loads(r.stdout)
    cf, rp = out["closed-form"], out["replay"]
    for doc in (cf, rp):  # the published schema holds disaggregated rows
        jsonschema.Draft202012Validator(json_schema("validation")).validate(doc)
    assert [x["line"] for x in rp["rows"]] == [2, 3]
    assert rp["rows"][0]["prefill"] == {"tp": 1, "pp": 1, "ep": 1, "dp": 1, "workers": 1, "batch": 1}
    assert rp["rows"][1]["decode"]["workers"] == 1 and rp["rows"][1]["mode"] == "disaggregated"
    for k in range(2):
        a, b = cf["rows"][k], rp["rows"][k]
        # the replay queues the harness's bunched arrivals at the prefill (two clients start
        # together), the closed form sees no wait: replay TTFT >= the wait-free prompt path,
        # within one more prompt of it; the decode cycle is the same grid either way
        assert a["predicted_ttft_ms"] * 0.98 <= b["predicted_ttft_ms"] <= 2.0 * a["predicted_ttft_ms"]
        assert b["predicted_tpot_ms"] == pytest.approx(a["predicted_tpot_ms"], rel=0.05)
    # the statistics are over these rows: median |error| of two rows is their mean
    errs = [abs(x["predicted_ttft_ms"] / m - 1.0) * 100.0 for x, m in zip(rp["rows"], (40.0, 90.0))]
    assert rp["overall"]["ttft"]["median_abs_pct"] == pytest.approx(sum(errs) / 2, abs=2e-3)
    assert rp["groups"][0]["ttft"]["rows"] == 2 and rp["columns"][-1] == "source_id"
    t = cli("validate", str(f))
    assert t.returncode == 0 and "P 1x tp1 pp1 dp1 / D 2x tp1 pp1 dp1" in t.stdout


@pytest.mark.parametrize("old, new, field", [
    ("disaggregated,512", "colocated,512", "mode"),
    (",1,1,1,1,1,1,1,1,1,1,2,2,", ",1,1,1,1,0,1,1,1,1,1,2,2,", "prefill_workers"),
    (",1,1,1,1,1,1,1,1,1,1,2,2,", ",3,1,1,1,1,1,1,1,1,1,2,2,", "prefill_tp/prefill_pp/prefill_ep/prefill_dp"),
    ("bf16", "fp3", "precision"),
    ("llama-3.1-8b", "no-such-model", "model"),
    (",40.0,", ",nan,", "ttft_ms"),
    (",1,1,1,1,1,1,1,1,1,1,2,2,", ",1,1,1,1,1,1,1,1,1,1,2000,2,", "decode_workers"),
    ("512,8,2,", "512,8,100000,", "concurrency"),
])
def test_bad_rows_exit_2_naming_file_line_and_field(tmp_path, old, new, field):
    f = tmp_path / "d.csv"
    f.write_text(HEADER + ROWS.replace(old, new, 1))
    r = cli("validate", str(f))
    assert r.returncode == 2
    assert f"d.csv:2: {field}" in r.stderr and "Traceback" not in r.stderr


def test_a_disaggregated_row_in_a_colocated_csv_points_at_the_role_columns():
    text = ("model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms\n"
            "llama-3.1-8b,h100-sxm,bf16,disaggregated,512,8,2,1,1,1,1,40.0,8.0\n")
    with pytest.raises(InputError, match=r"m\.csv:2: mode: .*prefill_/decode_ columns"):
        validate_text("m.csv", text)


def test_csv_output_keeps_the_columns_and_adds_the_predictions(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text(HEADER + ROWS)
    r = cli("validate", str(f), "--format", "csv")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == HEADER.strip() + ",predicted_ttft_ms,predicted_tpot_ms"
    assert lines[1].startswith(ROWS.splitlines()[0] + ",") and len(lines) == 3


def test_missing_role_column_is_an_error():
    with pytest.raises(InputError, match=r"d\.csv:1: missing column\(s\): decode_batch"):
        validate_text("d.csv", HEADER.replace(",decode_batch", "") + "x\n")


def test_a_speculating_disaggregated_row_speculates_on_its_decode_pool():
    head = HEADER.replace("source_id\n", "source_id,speculative\n")
    row = ROWS.splitlines()[1]
    text = head + "".join(f"{row},{spec}\n" for spec in ("", "mtp:3:0.8", "mtp:3"))
    rep = validate_text("d.csv", text, "replay")
    plain, spec, bare = rep.rows
    # the decode pool's steps yield (1 - 0.8^4) / 0.2 = 2.95 tokens: TPOT well below the plain one
    assert spec.speculative == "mtp:3:0.8" and spec.predicted_tpot_ms < 0.6 * plain.predicted_tpot_ms
    assert bare.predicted_ttft_ms is None and "does not record" in bare.not_predicted
    assert rep.overall.ttft.rows == 2
    closed = validate_text("d.csv", text, "closed-form")
    assert closed.rows[0].predicted_ttft_ms > 0 and closed.overall.ttft.rows == 1
    assert "does not model a speculating decode pool" in closed.rows[1].not_predicted
    with pytest.raises(InputError, match=r"d\.csv:3: speculative: method must be one of"):
        validate_text("d.csv", text.replace("mtp:3:0.8", "tree:3"), "replay")
