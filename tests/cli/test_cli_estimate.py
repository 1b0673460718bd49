"""`fleetplan estimate` and `fleetplan catalog` run as real commands (`python -m solver`).

Checks the SPEC keys of `estimate --format json` and their relations, card paths, and that bad
input exits 2 with one line on stderr that names the problem (file and line for card files) and
never a traceback.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import ROOT, cli

MODELS = sorted(p.stem for p in (ROOT / "models").glob("*.yaml"))
HARDWARE = sorted(p.stem for p in (ROOT / "hardware").glob("*.yaml"))
SPEC_KEYS = ("fits", "memory_gib_per_device", "prefill_ms", "decode_step_ms", "ttft_ms",
             "tpot_ms", "throughput_qps", "tokens_per_s")


def fleetplan(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return cli(*args, cwd=cwd, timeout=120)


def estimate_json(*args: str) -> dict:
    r = fleetplan("estimate", *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return json.loads(r.stdout)


def assert_input_error(r: subprocess.CompletedProcess, *needles: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


# ---- estimate: values ----------------------------------------------------------------------


def test_decode_70b_fp8_tp8_h100_batch64():
    d = estimate_json("--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "8",
                      "--precision", "fp8", "--stage", "decode", "--batch", "64")
    for k in SPEC_KEYS:
        assert k in d
    assert d["fits"] is True
    assert d["stage"] == "decode" and d["devices_per_instance"] == 8
    assert d["precision"] == d["kv_precision"] == d["math_precision"] == "fp8"
    # weights 70.55e9 x 1 B / 8 (+ bf16 ends) ~ 8.5 GiB, KV 64 x 2176 x 20,480 B = 2.66 GiB,
    # + 3.9 GiB reserve: 10-25 GiB of the 72 GiB usable
    assert 10 < d["memory_gib_per_device"] < 25
    assert 60 <= d["memory"]["usable_gib"] <= 80  # 80 GiB x gpu_memory_utilization (0.9 today)
    assert d["memory"]["device_gib"] == 80.0
    assert d["prefill_ms"] is None and d["ttft_ms"] is None
    assert 5 < d["tpot_ms"] < 60
    assert d["decode_step_ms"] == d["tpot_ms"]
    assert d["tokens_per_s"] == pytest.approx(64 / d["tpot_ms"] * 1000, rel=1e-6)
    assert d["throughput_qps"] == pytest.approx(64 / (128 * d["tpot_ms"] / 1000), rel=1e-6)
    b = d["breakdown"]
    assert b["pipeline_hop_ms"] == 0.0
    parts = b["gemm_ms"] + b["attention_ms"] + b["communication_ms"] + b["kernel_overhead_ms"]
    # one stage (pp1) + the engine's step overhead (1 ms today); breakdown rounded to 1e-4 ms
    assert 0 <= d["tpot_ms"] - parts <= 5.0


def test_decode_fp8_faster_than_bf16():
    args = ("--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "8", "--stage",
            "decode", "--batch", "64")
    fp8 = estimate_json(*args, "--precision", "fp8")
    bf16 = estimate_json(*args)
    assert fp8["tpot_ms"] < bf16["tpot_ms"]
    assert fp8["memory"]["weights_gib"] < bf16["memory"]["weights_gib"]


def test_prefill_stage_8b():
    d = estimate_json("--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--stage", "prefill",
                      "--batch", "1", "--input-tokens", "2048")
    assert d["fits"] is True
    assert d["decode_step_ms"] is None and d["tpot_ms"] is None
    assert d["ttft_ms"] == d["prefill_ms"]
    # 2 x 8.03e9 x 2048 / 989e12 = 33 ms at peak; the model must not beat it
    assert 2 * 8.03e9 * 2048 / 989e12 * 1e3 < d["prefill_ms"] < 200
    assert d["tokens_per_s"] == pytest.approx(d["throughput_qps"] * 2048, rel=1e-9)


def test_static_batch_both_stages():
    d = estimate_json("--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "8")
    assert d["stage"] == "both"
    assert d["prefill_ms"] > 0 and d["decode_step_ms"] > 0
    assert d["ttft_ms"] == d["prefill_ms"] and d["tpot_ms"] == d["decode_step_ms"]
    # a static batch: 8 requests per (prefill + 128 decode steps)
    total_s = (d["prefill_ms"] + 128 * d["decode_step_ms"]) / 1e3
    assert d["throughput_qps"] == pytest.approx(8 / total_s, rel=1e-9)
    assert d["tokens_per_s"] == pytest.approx(d["throughput_qps"] * 128, rel=1e-9)


def test_405b_on_one_h100_does_not_fit():
    d = estimate_json("--model", "llama-3.1-405b", "--hardware", "h100-sxm", "--stage", "decode")
    assert d["fits"] is False
    assert d["memory_gib_per_device"] > 700
    assert any("does not fit" in n for n in d["notes"])


def test_concurrency_closed_loop():
    d = estimate_json("--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "8",
                      "--concurrency", "32")
    for k in SPEC_KEYS:
        assert k in d
    assert d["stage"] == "closed_loop" and d["concurrency"] == 32 and d["batch"] is None
    assert d["fits"] is True
    for k in ("ttft_ms", "tpot_ms", "tokens_per_s", "throughput_qps"):
        assert isinstance(d[k], float) and d[k] > 0
    assert 5 < d["tpot_ms"] < 200
    assert d["tokens_per_s"] == pytest.approx(d["throughput_qps"] * 128, rel=1e-9)
    # at most 32 requests in flight, each taking TTFT + 127 x TPOT (Little's law over the closed
    # loop, arrival waves included)
    per_request_s = (d["ttft_ms"] + 127 * d["tpot_ms"]) / 1e3
    assert d["throughput_qps"] == pytest.approx(32 / per_request_s, rel=0.1)
    # the note names the arrival-wave size the engine's calibration gives at N = 32
    from solver.catalog.calibration import engine_params

    e = engine_params(None)  # the default engine (vLLM)
    g = min(32.0, max(1.0, e.wave_size_coefficient * 32 ** e.wave_size_exponent))
    assert any(f"prompts arrive in waves of {g:.1f} " in n for n in d["notes"]), d["notes"]


def test_table_format():
    r = fleetplan("estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm")
    assert r.returncode == 0, r.stderr
    assert "llama-3.1-8b" in r.stdout and "h100-sxm" in r.stdout


def test_card_paths(tmp_path):
    model = tmp_path / "my-8b.yaml"
    hw = tmp_path / "my-h100.yaml"
    shutil.copy(ROOT / "models" / "llama-3.1-8b.yaml", model)
    shutil.copy(ROOT / "hardware" / "h100-sxm.yaml", hw)
    by_name = estimate_json("--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "4")
    by_path = estimate_json("--model", str(model), "--hardware", str(hw), "--batch", "4")
    assert by_path == by_name
    # a relative path from another working directory
    r = fleetplan("estimate", "--model", "./my-8b.yaml", "--hardware", "h100-sxm", "--batch", "4",
                  "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tpot_ms"] == by_name["tpot_ms"]


# ---- estimate: bad input -------------------------------------------------------------------


BASE = ("estimate", "--model", "llama-3.1-70b", "--hardware", "h100-sxm")


@pytest.mark.parametrize(
    "args, needles",
    [
        (("estimate", "--model", "llama-9", "--hardware", "h100-sxm"), ("llama-9", "model")),
        (("estimate", "--model", "llama-3.1-70b", "--hardware", "tpu-v9"), ("tpu-v9", "hardware")),
        ((*BASE, "--tp", "3"), ("tp=3", "llama-3.1-70b", "heads")),
        ((*BASE, "--tp", "0"), ("--tp", "0")),
        ((*BASE, "--tp", "two"), ("--tp", "two")),
        ((*BASE, "--batch", "4", "--concurrency", "8"), ("--batch", "--concurrency")),
        ((*BASE, "--concurrency", "8", "--stage", "decode"), ("--concurrency", "--stage")),
        ((*BASE, "--ep", "2"), ("ep",)),
        ((*BASE, "--precision", "int4"), ("--precision", "int4")),
        ((*BASE, "--input-tokens", "-5"), ("--input-tokens",)),
        # longer than the model's context (llama-3.1-70b: 131072 tokens), issue 18
        ((*BASE, "--input-tokens", "200000"), ("--input-tokens", "200000", "llama-3.1-70b", "131072")),
        ((*BASE, "--input-tokens", "200000", "--stage", "prefill"), ("--input-tokens", "131072")),
        ((*BASE, "--input-tokens", "131000", "--output-tokens", "500", "--stage", "decode"),
         ("--input-tokens", "--output-tokens", "131072")),
        ((*BASE, "--input-tokens", "131000", "--output-tokens", "500", "--concurrency", "4"),
         ("--output-tokens", "131072")),
        (("estimate", "--model", "llama-3.1-70b"), ("--hardware",)),
        (("estimate", "--model", "/no/such/card.yaml", "--hardware", "h100-sxm"), ("/no/such/card.yaml",)),
    ],
)
def test_bad_arguments_exit_2(args, needles):
    assert_input_error(fleetplan(*args), *needles)


def _card_with(tmp_path: Path, src: Path, name: str, edit) -> Path:
    lines = src.read_text(encoding="utf-8").splitlines()
    out = tmp_path / name
    out.write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")
    return out


def test_card_file_unknown_key(tmp_path):
    src = ROOT / "models" / "llama-3.1-8b.yaml"
    card = _card_with(tmp_path, src, "typo.yaml", lambda ls: ls + ["bogus_key: 1"])
    line = len(src.read_text(encoding="utf-8").splitlines()) + 1
    msg = assert_input_error(fleetplan("estimate", "--model", str(card), "--hardware", "h100-sxm"),
                             str(card), "bogus_key")
    assert re.search(rf"{re.escape(str(card))}:{line}\b", msg), msg


def test_card_file_unknown_nested_key(tmp_path):
    src = ROOT / "hardware" / "h100-sxm.yaml"
    lines = src.read_text(encoding="utf-8").splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("scale_up:"))

    def edit(ls):
        return ls[: at + 1] + ["  warp_speed: 9"] + ls[at + 1:]

    card = _card_with(tmp_path, src, "hw.yaml", edit)
    msg = assert_input_error(fleetplan("estimate", "--model", "llama-3.1-8b", "--hardware", str(card)),
                             str(card), "warp_speed")
    assert f"{card}:{at + 2}:" in msg, msg  # the inserted line, 1-based


def test_card_file_yaml_syntax_error(tmp_path):
    card = tmp_path / "broken.yaml"
    # line 3 is indented under a scalar: "mapping values are not allowed here"
    card.write_text("name: broken\nnum_layers: 32\n  hidden_size: 4096\n", encoding="utf-8")
    msg = assert_input_error(fleetplan("estimate", "--model", str(card), "--hardware", "h100-sxm"),
                             str(card), "YAML")
    assert f"{card}:3:" in msg, msg


def test_card_file_bad_value(tmp_path):
    src = ROOT / "models" / "llama-3.1-8b.yaml"
    lines = src.read_text(encoding="utf-8").splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("num_layers:"))
    card = _card_with(tmp_path, src, "neg.yaml",
                      lambda ls: ls[:at] + ["num_layers: -4"] + ls[at + 1:])
    msg = assert_input_error(fleetplan("estimate", "--model", str(card), "--hardware", "h100-sxm"),
                             str(card), "num_layers")
    assert f"{card}:{at + 1}:" in msg, msg


# ---- catalog ---------------------------------------------------------------------------------


def test_catalog_lists_everything():
    assert len(MODELS) == 10
    r = fleetplan("catalog")
    assert r.returncode == 0, r.stderr
    for name in MODELS + HARDWARE:
        assert re.search(rf"^{re.escape(name)}\s", r.stdout, re.M), name


def test_catalog_json():
    r = fleetplan("catalog", "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert sorted(m["name"] for m in d["models"]) == MODELS
    assert sorted(h["name"] for h in d["hardware"]) == HARDWARE
    r = fleetplan("catalog", "models")
    assert r.returncode == 0 and "h100-sxm" not in r.stdout and "llama-3.1-70b" in r.stdout


def test_catalog_bad_kind_exit_2():
    assert_input_error(fleetplan("catalog", "gpus"), "gpus")


def test_estimate_routing_changes_the_busiest_rank_and_is_reported():
    common = ("--model", "llama-4-maverick", "--hardware", "h100-sxm", "--tp", "8", "--dp", "4",
              "--ep", "32", "--stage", "prefill", "--batch", "8", "--precision", "fp8")
    bal = estimate_json(*common)
    hot = estimate_json(*common, "--routing", "hottest:7%")
    heavy = estimate_json(*common, "--routing", "zipf:1.2", "--placement", "in_order")
    assert bal["routing"] == "balanced"
    assert hot["routing"] == "hottest expert 7.0% of routed tokens, load_balanced placement"
    assert heavy["routing"] == "Zipf s=1.2, in_order placement"
    assert bal["prefill_ms"] < hot["prefill_ms"] < heavy["prefill_ms"]
    dense = estimate_json("--model", "llama-3.1-8b", "--hardware", "h100-sxm")
    assert dense["routing"] is None


@pytest.mark.parametrize(("spec", "needle"), [
    ("zipf:x", "could not convert"),
    ("hottest:0.001", "balanced share 1/128"),
    ("histogram:1,2,3", "3 entries but the model has 128 experts"),
    ("uniform", "expected balanced, zipf:S"),
])
def test_estimate_bad_routing_exits_2(spec, needle):
    r = fleetplan("estimate", "--model", "llama-4-maverick", "--hardware", "h100-sxm",
                  "--routing", spec)
    assert_input_error(r, "--routing", needle)


# ---- estimate: context parallelism and speculative decoding (issue 15) ---------------------


def test_estimate_cp_splits_a_long_prefill():
    args = ("--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "8", "--stage", "prefill",
            "--input-tokens", "131072", "--precision", "fp8")
    one, four = estimate_json(*args), estimate_json(*args, "--cp", "4")
    assert one["cp"] == 1 and four["cp"] == 4 and four["devices_per_instance"] == 32
    assert one["prefill_ms"] / 4 < four["prefill_ms"] < one["prefill_ms"]
    # weights stay, the KV of the prompt and the pass's activations divide by 4
    assert four["memory"]["weights_gib"] == one["memory"]["weights_gib"]
    assert four["memory"]["kv_cache_gib"] == pytest.approx(one["memory"]["kv_cache_gib"] / 4, abs=2e-3)
    assert four["memory_gib_per_device"] < one["memory_gib_per_device"]


def test_estimate_speculative_decode_step():
    args = ("--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "4", "--stage", "decode",
            "--batch", "32", "--precision", "fp8")
    plain, spec = estimate_json(*args), estimate_json(*args, "--speculative", "eagle:3:0.75")
    assert plain["speculative"] is None and spec["speculative"] == "eagle:3:0.75"
    # a weight-bound step: verifying 4 positions costs little more than one step, E = 2.734
    assert plain["tpot_ms"] / 2.734375 < spec["tpot_ms"] < plain["tpot_ms"] / 2
    assert spec["throughput_qps"] > 2 * plain["throughput_qps"]
    assert spec["memory"]["weights_gib"] > plain["memory"]["weights_gib"]  # the head's layer
    assert any("2.734 tokens per verification" in n for n in spec["notes"])


@pytest.mark.parametrize("value, needle", [
    ("eagle:3", "METHOD:K:A"),
    ("eagle:x:0.7", "K must be a whole number"),
    ("eagle:3:1.5", "less than or equal to 1"),
    ("medusa:3:0.5", "'draft', 'eagle', 'mtp' or 'ngram'"),
    ("draft:4:0.7", "needs a draft_model"),
    ("draft:4:0.7:qwen3-32b", "share the tokenizer"),
])
def test_estimate_bad_speculative_is_an_input_error(value, needle):
    r = fleetplan("estimate", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--stage", "decode",
                  "--speculative", value)
    assert_input_error(r, "--speculative", needle)


def test_estimate_cp_bounded():
    r = fleetplan("estimate", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--cp", "65")
    assert_input_error(r, "--cp", "64")
