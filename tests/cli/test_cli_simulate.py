"""`fleetplan simulate` end to end through the real command line (tests/support/cli.py), on the
shipped offline problem (a mixed service: colocated, prefill and decode pools) planned once
into a result document, and on the default problem given directly."""

from __future__ import annotations

import json

import jsonschema
import pytest

from solver.schema.result import PlanResult
from tests.support.cli import cli

pytest.importorskip("solver.replay.instance")  # the engine instances and sources of the replay
pytest.importorskip("solver.replay.sources")
SimulationResult = pytest.importorskip("solver.schema.simulation").SimulationResult
json_schema = pytest.importorskip("solver.schema.publish").json_schema


@pytest.fixture(scope="module")
def result_json(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim") / "offline.json"
    r = cli("plan", "llama3-70b-offline", "--no-record", "--no-timings", "--format", "json", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out


def _sim_json(*args: str) -> tuple[SimulationResult, str]:
    r = cli("simulate", *args, "--format", "json", "--no-timings")
    assert r.returncode == 0, r.stderr
    jsonschema.Draft202012Validator(json_schema("simulation")).validate(json.loads(r.stdout))
    return SimulationResult.model_validate_json(r.stdout), r.stdout


def test_result_document_replays_every_planned_pool(result_json):
    plan = PlanResult.model_validate_json(result_json.read_text())
    doc, _ = _sim_json(str(result_json), "--requests", "150", "--seed", "3")
    assert doc.problem == "llama3-70b-offline" and doc.seed == 3 and doc.requests_per_service == 150
    s, ps = doc.services[0], plan.services[0]
    assert [(p.role, p.hardware, p.tp, p.pp, p.instances) for p in s.pools] == [
        (p.role, p.hardware, p.tp, p.pp, p.instances) for p in ps.pools]
    assert s.offered_qps == pytest.approx(ps.demand_qps, rel=1e-6)
    assert s.replay.requests + s.replay.unfinished == 150
    for r in [s.replay] + [p.replay for p in s.pools]:
        assert r.ttft.p50_ms <= r.ttft.p99_ms and 0.0 <= r.goodput_share <= 1.0
    # colocated + disaggregated (prefill, then decode) = every request of the service; with the
    # replay-fitted calibration (mixed-batch slowdown 1) the offline plan is all colocated
    # (tests/plan/test_simulate.py keeps a mixed one for the wiring)
    n = {role: sum(p.replay.requests + p.replay.unfinished for p in s.pools if p.role == role)
         for role in ("colocated", "prefill", "decode")}
    assert n["colocated"] + n["prefill"] == 150 and n["prefill"] == n["decode"]
    for p in s.pools:
        if p.role != "prefill":
            assert p.replay.tpot.p50_ms > 0 and p.replay.instances.mean_kv_use > 0


def test_same_seed_same_bytes(result_json):
    a = _sim_json(str(result_json), "--requests", "80", "--arrival", "gamma:2")[1]
    b = _sim_json(str(result_json), "--requests", "80", "--arrival", "gamma:2")[1]
    assert a == b and json.loads(a)["arrival"] == "gamma:2"


def test_problem_is_planned_then_replayed_as_a_table():
    r = cli("simulate", "llama3-70b-online", "--requests", "300", "--rate-scale", "0.5")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("llama3-70b-online: replay of the optimal plan")
    assert "0.5 x demand, 300 requests per service" in lines[0]
    head = next(i for i, ln in enumerate(lines) if ln.startswith("role "))
    body = lines[head + 2:]
    rows = [ln.split()[0] for ln in body[:body.index("")]] if "" in body else [ln.split()[0] for ln in body]
    assert rows[0] == "service" and len(rows) > 1 and set(rows[1:]) <= {"prefill", "decode"}
    assert "offered 100 QPS" in r.stdout  # 200 QPS x 0.5


def test_closed_loop_and_trace_arrivals(result_json, tmp_path):
    doc, _ = _sim_json(str(result_json), "--requests", "60", "--arrival", "closed:4")
    assert doc.services[0].replay.requests == 60 and doc.arrival == "closed:4"
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,prompt_tokens,output_tokens\n" + "".join(
        f"{0.25 * i},{1000 + 10 * i},{50}\n" for i in range(40)))
    doc, _ = _sim_json(str(result_json), "--requests", "30", "--arrival", f"trace:{trace}")
    assert doc.services[0].replay.requests == 30  # the trace's first 30


def test_out_may_not_be_the_arrival_trace(result_json, tmp_path, capsys):
    # `--arrival trace:FILE` is one of simulate's inputs: --out/--plot there are refused, the
    # trace left as it was
    from solver.cli.main import main

    trace = tmp_path / "t.csv"
    text = "timestamp,prompt_tokens,output_tokens\n" + "".join(f"{0.25 * i},{1000 + 10 * i},50\n" for i in range(40))
    trace.write_text(text)
    for flag in ("--out", "--plot"):
        assert main(["simulate", str(result_json), "--requests", "30", "--arrival", f"trace:{trace}",
                     flag, str(trace)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{flag} {trace}: is the input" in err[0], err
        assert trace.read_text() == text


def test_plot_writes_a_png(result_json, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "cdf.png"
    r = cli("simulate", str(result_json), "--requests", "60", "--plot", str(png))
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, says", [
    (("--requests", "0"), "--requests: must be in 1..1,000,000"),
    (("--requests", "2000001"), "--requests: must be in 1..1,000,000"),
    (("--rate-scale", "-1"), "--rate-scale: must be in"),
    (("--rate-scale", "nan"), "--rate-scale: must be in"),
    (("--arrival", "gamma:x"), "gamma:CV needs a number"),
    (("--arrival", "closed:0"), "closed:N needs a whole number"),
    (("--arrival", "closed:4:locust"), "TOOL is one of vllm, aiperf, sglang"),
    (("--arrival", "uniform"), "one of poisson, gamma:CV, trace:FILE, closed:N"),
    (("--router", "random"), "invalid choice"),
    (("--seed", "-3"), "--seed: must be in"),
])
def test_bad_flags_exit_2_with_one_line(args, says, capsys):
    # in-process (solver.cli.main, what the console script runs): the parser refuses them
    # before anything is read or planned
    from solver.cli.main import main

    assert main(["simulate", "no-such.json", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


def test_bad_flag_through_the_command_line(result_json):
    r = cli("simulate", str(result_json), "--requests", "0")
    assert r.returncode == 2 and "--requests: must be in 1..1,000,000" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_bad_result_documents_exit_2(result_json, tmp_path):
    data = json.loads(result_json.read_text())
    data["services"][0]["pools"][0]["instances"] = "many"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data, indent=2))
    r = cli("simulate", str(bad))
    assert r.returncode == 2 and "bad.json" in r.stderr and "instances" in r.stderr
    data = json.loads(result_json.read_text())
    data["problem"] = "my-own-problem"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    r = cli("simulate", str(other))
    assert r.returncode == 2 and "--problem FILE" in r.stderr and "my-own-problem" in r.stderr
    r = cli("simulate", str(result_json), "--problem", "problems/llama3-70b-online.yaml")
    assert r.returncode == 2 and "batch-summaries" in r.stderr and "--problem FILE" in r.stderr
    r = cli("simulate", "llama3-70b-online", "--problem", "problems/llama3-70b-online.yaml")
    assert r.returncode == 2 and "--problem: only with a result document" in r.stderr
