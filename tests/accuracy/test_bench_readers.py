"""The benchmark tools' result files: each reader's numbers, format detection, bad files (exit 2),
and their rows through `fleetplan validate`. Fixtures: tests/accuracy/data/bench/README.md."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from solver.accuracy.bench_rows import Known, model_card_name, rows_csv
from solver.accuracy.readers.common import MAX_FILE_BYTES
from solver.accuracy.readers.detect import detect, read_points
from solver.errors import InputError
from tests.support.cli import ROOT, cli, env_lacking

DATA = Path(__file__).parent / "data" / "bench"
AIPERF, VLLM = DATA / "aiperf_profile_export_aiperf.json", DATA / "vllm_bench_serve.json"
GUIDELLM, MLPERF = DATA / "guidellm_benchmarks.json", DATA / "mlperf_log_summary.txt"


def points(path: Path):
    text = path.read_text()
    return read_points(str(path), text, detect(str(path), text))


@pytest.mark.parametrize("path, fmt", [(AIPERF, "aiperf"), (VLLM, "vllm"), (GUIDELLM, "guidellm"),
                                       (MLPERF, "mlperf")])
def test_formats_are_detected_from_the_content(path, fmt, tmp_path):
    renamed = tmp_path / "result.txt"  # the name plays no part
    renamed.write_text(path.read_text())
    assert detect(str(renamed), renamed.read_text()) == fmt


def test_a_validate_csv_is_detected_and_other_files_are_refused():
    assert detect("m.csv", "model,hardware,ttft_ms,tpot_ms\n") == "csv"
    assert detect("m.csv", "model,hardware\n") == "csv"  # the CSV reader then names the missing columns
    with pytest.raises(InputError, match=r"x.json:1: a JSON document of no known benchmark tool"):
        detect("x.json", '{"results": []}')
    with pytest.raises(InputError, match=r"x.txt:1: not a measured file"):
        detect("x.txt", "hello\n")


def test_aiperf_export():
    [p] = points(AIPERF)
    assert (p.tool, p.tool_version, p.model) == ("aiperf", "0.13.0", "meta-llama/Llama-3.1-8B-Instruct")
    assert (p.concurrency, p.rate_qps, p.requests) == (8, None, 160)  # the profiling phase, not the warm-up
    assert (p.input_tokens, p.output_tokens, p.throughput_qps) == (1024.0, 128.0, 7.25)
    assert (p.ttft.mean, p.ttft.p50, p.ttft.p99) == (120.5, 118.0, 190.25)
    assert (p.tpot.mean, p.tpot.p50, p.tpot.p99) == (8.5, 8.4, 9.9)


def test_aiperf_time_units_are_converted(tmp_path):
    doc = json.loads(AIPERF.read_text())
    doc["time_to_first_token"] = {"unit": "s", "avg": 0.25, "p50": 0.2, "p99": 0.5}
    doc["inter_token_latency"] = {"unit": "ns", "avg": 8_000_000.0}
    f = tmp_path / "a.json"
    f.write_text(json.dumps(doc))
    [p] = points(f)
    assert (p.ttft.mean, p.ttft.p50, p.ttft.p99) == (250.0, 200.0, 500.0)
    assert (p.tpot.mean, p.tpot.p50, p.tpot.p99) == (8.0, None, None)


def test_vllm_result():
    [p] = points(VLLM)
    assert (p.tool, p.model, p.concurrency, p.rate_qps, p.requests) == ("vllm", "Qwen/Qwen3-32B", 16, None, 200)
    assert (p.input_tokens, p.output_tokens) == (2048.0, 256.0)  # 409600 / 200, 51200 / 200
    assert (p.ttft.mean, p.ttft.p50, p.ttft.p99) == (250.5, 240.0, 410.0)
    assert (p.tpot.mean, p.tpot.p50, p.tpot.p99) == (22.5, 22.0, 30.0)
    assert p.labels == {"hardware": "h100-sxm", "tp": "2"}  # --metadata pairs; others are ignored


def test_vllm_appended_results_are_one_point_each(tmp_path):
    doc = json.loads(VLLM.read_text())
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(doc) + "\n" + json.dumps({**doc, "max_concurrency": None, "request_rate": 4.0}) + "\n")
    a, b = points(f)
    assert (a.where, a.concurrency, a.rate_qps) == ("results[0]", 16, None)
    assert (b.where, b.concurrency, b.rate_qps) == ("results[1]", None, 4.0)


def test_guidellm_report_has_one_point_per_benchmark():
    a, b = points(GUIDELLM)
    assert (a.tool, a.tool_version, a.model) == ("guidellm", "0.7.3", "meta-llama/Llama-3.1-8B-Instruct")
    assert (a.where, a.concurrency, a.rate_qps, a.requests) == ("benchmarks[0]", 4, None, 120)
    assert (b.where, b.concurrency, b.rate_qps, b.requests) == ("benchmarks[1]", None, 2.5, 150)
    assert (a.input_tokens, a.output_tokens) == (512.0, 256.0)
    assert (a.ttft.mean, a.ttft.p50, a.ttft.p99) == (85.0, 80.0, 140.0)
    # inter_token_latency_ms, not time_per_output_token_ms (x 1.2 in the fixture)
    assert (a.tpot.mean, a.tpot.p50, a.tpot.p99) == (7.5, 7.4, 9.0)
    assert a.labels == {"hardware": "h200-sxm", "tp": "1"}


def test_mlperf_summary_in_nanoseconds():
    [p] = points(MLPERF)
    assert (p.tool, p.where, p.concurrency, p.rate_qps, p.throughput_qps) == (
        "mlperf", "Server scenario", None, 12.5, 12.41)
    assert (p.model, p.input_tokens, p.output_tokens) == (None, None, None)
    assert (p.ttft.mean, p.ttft.p50, p.ttft.p99) == pytest.approx((450.0, 400.0, 1200.0))
    assert (p.tpot.mean, p.tpot.p50, p.tpot.p99) == pytest.approx((45.0, 44.0, 80.0))


def _edited(tmp_path: Path, src: Path, edit) -> Path:
    doc = json.loads(src.read_text())
    edit(doc)
    f = tmp_path / src.name
    f.write_text(json.dumps(doc, indent=2))
    return f


@pytest.mark.parametrize("src, edit, message", [
    (AIPERF, lambda d: d["time_to_first_token"].update(unit="tokens/sec"),
     r"\.json:20: time_to_first_token.unit: 'tokens/sec' is not a time unit"),
    (AIPERF, lambda d: d["input_sequence_length"].update(unit="ms"),
     r"\.json:44: input_sequence_length.unit: expected 'tokens' \(got 'ms'\)"),
    (AIPERF, lambda d: d.pop("inter_token_latency"), r":1: inter_token_latency: missing"),
    (AIPERF, lambda d: d.update(is_complete=False, incomplete_reason="record-stall watchdog fired"),
     r"is_complete: aiperf marks the run incomplete \(record-stall watchdog fired\)"),
    (AIPERF, lambda d: d.update(was_cancelled=True), r"was_cancelled: the run was cancelled"),
    (VLLM, lambda d: d.pop("mean_tpot_ms"), r":1: mean_tpot_ms: missing"),
    (VLLM, lambda d: d.update(mean_ttft_ms=-3.0), r"\.json:27: mean_ttft_ms: must be positive \(got -3.0\)"),
    (VLLM, lambda d: d.update(completed=2.5), r"completed: expected a whole number"),
    (GUIDELLM, lambda d: d["benchmarks"][1]["metrics"].pop("inter_token_latency_ms"),
     r"benchmarks\[1\].metrics.inter_token_latency_ms.successful: missing"),
    (GUIDELLM, lambda d: d["benchmarks"][0]["config"]["strategy"].update(type_="trace"),
     r"benchmarks\[0\].config.strategy.type_: strategy 'trace' is not a load point"),
])
def test_bad_json_files_name_the_field(tmp_path, src, edit, message):
    f = _edited(tmp_path, src, edit)
    with pytest.raises(InputError, match=message):
        points(f)


def test_a_truncated_file_names_its_line(tmp_path):
    f = tmp_path / "cut.json"
    f.write_text(AIPERF.read_text()[:700])
    with pytest.raises(InputError, match=r"cut.json:\d+: not valid JSON"):
        points(f)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("Scenario : Server", "Scenario : Offline"), r":5: Scenario: Offline: only Server"),
    (lambda t: t.replace("PerformanceOnly", "AccuracyOnly"), r":6: Mode: expected PerformanceOnly"),
    (lambda t: t.replace("Mean First Token latency (ns)               : 450000000", ""),
     r"'Mean First Token latency \(ns\)': missing"),
    (lambda t: t.replace(": 45000000\n", ": 4.5e7ms\n"), r":\d+: 'Mean Time per Output Token \(ns\)': expected a number"),
])
def test_bad_mlperf_summaries(tmp_path, edit, message):
    f = tmp_path / "mlperf_log_summary.txt"
    f.write_text(edit(MLPERF.read_text()))
    with pytest.raises(InputError, match=message):
        points(f)


def test_model_ids_map_to_cards():
    assert model_card_name("meta-llama/Llama-3.1-8B-Instruct") == "llama-3.1-8b"
    assert model_card_name("meta-llama/Meta-Llama-3.1-70B-Instruct") == "llama-3.1-70b"
    assert model_card_name("Qwen/Qwen3-235B-A22B-FP8") == "qwen3-235b-a22b"
    assert model_card_name("mistralai/Mixtral-8x7B-Instruct-v0.1") == "mixtral-8x7b"
    assert model_card_name("meta-llama/Llama-4-Scout-17B-16E-Instruct") == "llama-4-scout"
    assert model_card_name("qwen3-32b") == "qwen3-32b"
    assert model_card_name("stub-model") is None


def test_rows_take_flags_over_the_file_and_name_what_is_missing():
    [p] = points(VLLM)
    rows = list(csv.DictReader(io.StringIO(rows_csv("v.json", [p], Known({"precision": "fp8", "tp": 4})))))
    assert rows == [{"model": "qwen3-32b", "hardware": "h100-sxm", "precision": "fp8", "mode": "colocated",
                     "input_tokens": "2048", "output_tokens": "256", "concurrency": "16", "tp": "4", "pp": "1",
                     "ep": "1", "dp": "1", "ttft_ms": "250.5", "tpot_ms": "22.5", "engine": "",
                     "benchmark": "vllm", "source": "vllm:document"}]
    with pytest.raises(InputError, match=r"v.json: precision: not recorded by the vllm file; pass --precision"):
        rows_csv("v.json", [p], Known({}))
    [m] = points(MLPERF)
    with pytest.raises(InputError, match=r"concurrency: the mlperf run \(Server scenario\) is an open-loop run at "
                       r"12.5 req/s"):
        rows_csv("s.txt", [m], Known({"model": "llama-3.1-70b", "hardware": "h100-sxm", "precision": "fp8",
                                      "tp": 4, "input_tokens": 1024, "output_tokens": 256}))


def test_an_open_loop_run_with_a_concurrency_cap_is_not_predicted_as_a_closed_loop(tmp_path):
    f = _edited(tmp_path, VLLM, lambda d: d.update(request_rate=4.0))  # max_concurrency 16 stays
    [p] = points(f)
    assert (p.concurrency, p.rate_qps) == (16, 4.0)
    with pytest.raises(InputError, match=r"concurrency: the vllm run is an open-loop run at 4 req/s"):
        rows_csv("v.json", [p], Known({"precision": "fp8"}))
    [row] = csv.DictReader(io.StringIO(rows_csv("v.json", [p], Known({"precision": "fp8", "concurrency": 16}))))
    assert row["concurrency"] == "16"


def test_cli_predicts_a_tool_file_like_a_csv_row():
    r = cli("validate", str(VLLM), "--precision", "bf16", "--format", "json")
    assert r.returncode == 0, r.stderr
    [row] = json.loads(r.stdout)["rows"]
    assert (row["model"], row["hardware"], row["tp"], row["concurrency"]) == ("qwen3-32b", "h100-sxm", 2, 16)
    assert (row["measured_ttft_ms"], row["measured_tpot_ms"]) == (250.5, 22.5)
    assert row["predicted_ttft_ms"] > 0 and row["predicted_tpot_ms"] > 0
    same = cli("validate", str(VLLM), "--precision", "bf16", "--format", "csv")
    assert same.stdout.splitlines()[0].startswith("model,hardware,precision,mode,")
    assert same.stdout.splitlines()[1].endswith(f",{row['predicted_ttft_ms']},{row['predicted_tpot_ms']}")


def test_cli_bad_tool_files_exit_2_without_traceback(tmp_path):
    f = tmp_path / "cut.json"
    f.write_text(VLLM.read_text()[:300])
    r = cli("validate", str(f))
    assert r.returncode == 2 and "not valid JSON" in r.stderr and "Traceback" not in r.stderr
    r = cli("validate", str(AIPERF), "--hardware", "h100-sxm")
    assert r.returncode == 2 and "precision: not recorded by the aiperf file; pass --precision" in r.stderr
    r = cli("validate", str(DATA))
    assert r.returncode == 2 and "not a regular file" in r.stderr
    csv_file = tmp_path / "m.csv"
    csv_file.write_text("model,hardware,ttft_ms,tpot_ms\n")
    r = cli("validate", str(csv_file), "--tp", "2")
    assert r.returncode == 2 and "a validate CSV names every field in its columns; --tp applies" in r.stderr
    csv_file.write_text("model,hardware\nx,y\n")
    r = cli("validate", str(csv_file))
    assert r.returncode == 2 and "m.csv:1: missing column(s): precision, mode," in r.stderr
    r = cli("validate", str(VLLM), "--tp", "0")
    assert r.returncode == 2 and "must be in 1..4,096" in r.stderr


def test_file_size_is_bounded(tmp_path):
    f = tmp_path / "big.json"
    with f.open("wb") as out:
        out.truncate(MAX_FILE_BYTES + 1)
    r = cli("validate", str(f))
    assert r.returncode == 2 and f"over the {MAX_FILE_BYTES:,}-byte limit" in r.stderr


def test_reading_needs_no_aiperf_and_its_test_skips_without_it(tmp_path):
    env = env_lacking(tmp_path, "aiperf")
    # as an uninstalled package fails (pytest.importorskip skips on ModuleNotFoundError only)
    (tmp_path / "site" / "aiperf" / "__init__.py").write_text("raise ModuleNotFoundError('No module named aiperf')\n")
    r = cli("validate", str(AIPERF), "--hardware", "h100-sxm", "--precision", "fp8", "--tp", "1", env=env)
    assert r.returncode == 0, r.stderr
    run = subprocess.run([sys.executable, "-m", "pytest", "tests/accuracy/test_aiperf_integration.py", "-p",
                          "no:randomly", "-p", "no:cacheprovider", "-rs"], capture_output=True, text=True, cwd=ROOT,
                         env=env, timeout=120)
    # exit 5: a module skipped whole collects no test
    assert run.returncode == 5 and "1 skipped" in run.stdout and "could not import 'aiperf'" in run.stdout, run.stdout
