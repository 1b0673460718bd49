"""`fleetplan plan PROBLEM --current RESULT.json --measured FILE[@POOL]`: a running plan, one pool
measured 30% slower than predicted; the drift section names that pool's broken bound and the
re-plan adds devices there (tests/accuracy/data/drift/: the running problem and a calibration
file with bands of 8% / 5%)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from solver.candidates.dilation import dilate
from solver.perf import runtime as rt
from solver.perf.tables import Plans
from tests.support.cli import cli

DATA = Path(__file__).parent / "data" / "drift"
BENCH = Path(__file__).parent / "data" / "bench" / "vllm_bench_serve.json"
# the switching costs of the re-plan (test values; problems/transition.yaml explains the terms)
REPLAN = """current: [{service: chat, role: colocated, hardware: a100-sxm, config: "tp1 batch 32 chunk 512", instances: 3}]
transition: {per_device_moved_usd: 25, per_instance_resharded_usd: 100, drained_hours_per_change: 1, horizon_hours: 720}
"""


def _measured(pool: dict, factor: float, path: Path) -> None:
    """A `vllm bench serve` result of the pool at its batch and planned lengths, every latency
    `factor` x the plan's prediction."""
    d = json.loads(BENCH.read_text())
    p = pool["predicted"]
    d.update(model_id="meta-llama/Llama-3.1-8B-Instruct", tokenizer_id="meta-llama/Llama-3.1-8B-Instruct",
             hardware="a100-sxm", tp=str(pool["tp"]), max_concurrency=pool["batch"],
             max_concurrent_requests=pool["batch"], completed=200, num_prompts=200,
             total_input_tokens=1024 * 200, total_output_tokens=128 * 200,
             mean_ttft_ms=p["ttft_ms"] * factor, median_ttft_ms=p["ttft_ms"] * factor,
             p99_ttft_ms=p["ttft_p99_ms"] * factor, mean_tpot_ms=p["tpot_ms"] * factor,
             median_tpot_ms=p["tpot_ms"] * factor, p99_tpot_ms=p["tpot_p99_ms"] * factor)
    path.write_text(json.dumps(d))


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    d = tmp_path_factory.mktemp("drift")
    for f in DATA.iterdir():
        shutil.copy(f, d / f.name)
    r = cli("plan", str(d / "running.yaml"), "--format", "json", "--no-timings", "--no-replay")
    assert r.returncode == 0, r.stderr
    (d / "result.json").write_text(r.stdout)
    (d / "replan.yaml").write_text((d / "running.yaml").read_text() + REPLAN)
    return d, json.loads(r.stdout)


def test_a_pool_30pct_slower_breaks_its_bound_and_the_replan_adds_capacity_there(running):
    d, before = running
    chat = before["services"][0]["pools"][0]
    _measured(chat, 1.3, d / "chat.json")
    r = cli("plan", str(d / "replan.yaml"), "--current", str(d / "result.json"), "--measured",
            f"{d / 'chat.json'}@1", "--format", "json", "--no-timings", "--no-replay")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    drift = doc["drift"]
    [pool] = drift["pools"]
    assert (pool["pool"], pool["service"], pool["role"], pool["hardware"]) == (1, "chat", "colocated", "a100-sxm")
    assert pool["factor"] == pytest.approx(1.3, abs=1e-3)  # measured / predicted TPOT p50, outside the 5% band
    # the running plan's TPOT p50 had a margin under 30% of its 40 ms bound: 1.3 x breaks it
    assert chat["predicted"]["tpot_ms"] * 1.3 > 40
    assert "tpot_p50_ms" in pool["violated"] and drift["bounds_hold"] is False
    tpot = next(x for x in pool["latencies"] if x["metric"] == "tpot_p50_ms")
    assert tpot["inside_band"] is False
    assert tpot["margin_pct"] == pytest.approx((40 - chat["predicted"]["tpot_ms"] * 1.3) / 40 * 100, abs=0.01)
    changes = {c["service"]: c for c in drift["changes"]}
    assert changes["chat"]["devices_after"] > changes["chat"]["devices_before"]  # capacity added there
    assert changes["summarize"]["devices_after"] == changes["summarize"]["devices_before"]  # not measured
    # the re-plan's chat pool meets its bound with the dilated prediction; the transition is charged
    assert doc["services"][0]["pools"][0]["predicted"]["tpot_ms"] * 1.05 <= 40
    assert doc["transition"]["recommendation"] == "move" and doc["transition"]["switching_cost_usd"] > 0
    md = cli("plan", str(d / "replan.yaml"), "--current", str(d / "result.json"), "--measured",
             f"{d / 'chat.json'}@1", "--format", "markdown", "--no-timings", "--no-replay", "--no-record")
    assert md.returncode == 0, md.stderr
    assert "## Drift" in md.stdout and "bounds broken: tpot_p50_ms" in md.stdout
    assert "| 1: chat colocated a100-sxm | tpot_p50_ms |" in md.stdout


def test_a_pool_inside_its_band_is_replanned_as_predicted(running):
    d, before = running
    _measured(before["services"][0]["pools"][0], 1.02, d / "ok.json")  # inside 8% / 5%
    r = cli("plan", str(d / "replan.yaml"), "--current", str(d / "result.json"), "--measured",
            f"{d / 'ok.json'}@1", "--format", "json", "--no-timings", "--no-replay", "--no-record")
    assert r.returncode == 0, r.stderr
    drift = json.loads(r.stdout)["drift"]
    assert drift["pools"][0]["factor"] == 1.0 and drift["pools"][0]["outside_band"] == []
    assert all(c["devices_after"] == c["devices_before"] for c in drift["changes"])


def test_measured_without_current_and_current_without_transition_exit_2(running):
    d, _ = running
    r = cli("plan", str(d / "running.yaml"), "--measured", str(BENCH))
    assert r.returncode == 2 and "--measured needs --current" in r.stderr
    r = cli("plan", str(d / "running.yaml"), "--current", str(d / "result.json"))
    assert r.returncode == 2 and "transition:" in r.stderr and r.stderr.count("\n") == 1


def test_dilation_scales_times_and_capacity_of_the_named_pool_only():
    # two rows on hardware 0 ("a100-sxm"), factor 1.3 on the colocated role of 'chat'
    n = 2
    m = rt.RoleMetrics(memory=None, prefill_ms=np.array([10.0, 20.0]), decode_step_ms=np.array([30.0, 30.0]),
                       ttft_p50_ms=np.array([100.0, 200.0]), ttft_p99_ms=np.array([300.0, 600.0]),
                       tpot_p50_ms=np.array([30.0, 38.0]), tpot_p99_ms=np.array([33.0, 39.0]),
                       capacity_qps=np.array([13.0, 26.0]), tokens_per_s=np.array([1300.0, 2600.0]),
                       utilization=np.ones(n), slo_ok=np.ones(n, dtype=bool), breakdown=None)
    plans = Plans.of(hw=0, tp=np.array([1, 2]), pp=1, ep=1, dp=1, batch=np.array([8, 16]), wprec=0, kvprec=0)

    class HW:
        names = ("a100-sxm",)

    slo = rt.Slo(ttft_p50_ms=1000.0, ttft_p99_ms=None, tpot_p50_ms=40.0, tpot_p99_ms=None, safety_margin=0.0)
    out = dilate((("chat", "colocated", "a100-sxm", 1.3),), "chat", 0, HW, plans, m, slo)
    assert out.tpot_p50_ms.tolist() == pytest.approx([39.0, 49.4])
    assert out.capacity_qps.tolist() == pytest.approx([10.0, 20.0])
    assert out.slo_ok.tolist() == [True, False]  # 39 <= 40; 49.4 > 40
    assert dilate((("chat", "decode", "a100-sxm", 1.3),), "chat", 0, HW, plans, m, slo) is m
    assert dilate((("other", "colocated", "a100-sxm", 1.3),), "chat", 0, HW, plans, m, slo) is m
