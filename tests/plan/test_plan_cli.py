"""Every shipped problem plans end to end through the real command line.

`python -m solver plan` runs in a subprocess (the console script where it is installed): exit
codes, the SPEC result document, byte-identical output for the same input and seed, the other
formats, `--out`, infeasible problems and their explanations. The direction checks at the end
plan in-process with every service's runtime forced, and compare with the paper's findings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.problem.load import ResolvedProblem, load_problem, resolve
from solver.schema.result import PlanResult
from tests.support.cli import EXACT_RECORD, cli_shared, plan_json

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = sorted((ROOT / "problems").glob("*.yaml"))
DEFAULT = ROOT / "problems" / "llama3-70b-online.yaml"
TIMEOUT = 300


def cli(*args: str, script: bool = False) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "fleetplan"
    cmd = [str(exe)] if script and exe.exists() else [sys.executable, "-m", "solver"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT)


def planned_json(path: str) -> subprocess.CompletedProcess:
    """Run once per test process, shared with test_schema_publish and test_decision."""
    return plan_json(path)


# ---- the result document -----------------------------------------------------------------------

POOL_KEYS = {"role", "hardware", "tp", "pp", "ep", "dp", "devices_per_instance", "instances",
             "devices", "batch", "capacity_qps", "cost_per_hour", "predicted"}
SERVICE_KEYS = {"name", "demand_qps", "capacity_qps", "runtime", "prefill_decode_ratio", "pools"}
TOP_KEYS = {"problem", "status", "objective", "cost_per_hour", "total_devices", "devices_by_type",
            "services", "infeasible_because", "solver"}


def check_document(doc: dict, name: str) -> None:
    assert TOP_KEYS <= doc.keys(), TOP_KEYS - doc.keys()
    assert doc["problem"] == name
    assert doc["status"] in ("optimal", "feasible")
    assert doc["infeasible_because"] == []
    assert set(doc["objective"]) >= {"kind", "value"}
    assert {"wall_s", "candidates_evaluated", "candidates_in_model", "gap"} <= doc["solver"].keys()
    assert doc["solver"]["wall_s"] is None  # --no-timings
    assert doc["solver"]["candidates_evaluated"] >= doc["solver"]["candidates_in_model"] > 0
    assert doc["solver"]["gap"] >= 0
    pool_cost = pool_devices = 0
    by_type: dict[str, int] = {}
    assert doc["services"]
    for s in doc["services"]:
        assert SERVICE_KEYS <= s.keys(), SERVICE_KEYS - s.keys()
        assert s["runtime"] in ("colocated", "disaggregated", "mixed")
        assert s["capacity_qps"] >= s["demand_qps"] * (1 - 1e-9) > 0
        assert s["pools"]
        roles = {p["role"] for p in s["pools"]}
        if s["runtime"] == "colocated":
            assert roles == {"colocated"} and s["prefill_decode_ratio"] is None
        else:
            assert {"prefill", "decode"} <= roles and s["prefill_decode_ratio"] > 0
        for p in s["pools"]:
            assert POOL_KEYS <= p.keys(), POOL_KEYS - p.keys()
            assert {"ttft_ms", "tpot_ms", "memory_gib_per_device"} <= p["predicted"].keys()
            assert p["role"] in ("prefill", "decode", "colocated")
            assert p["instances"] >= 1
            assert p["devices"] == p["instances"] * p["devices_per_instance"]
            assert p["devices_per_instance"] == p["tp"] * p["pp"] * p["dp"] * p.get("cp", 1)
            if p["role"] != "decode":
                assert p["predicted"]["ttft_ms"] is not None
            if p["role"] != "prefill":
                assert p["predicted"]["tpot_ms"] is not None
            pool_cost += p["cost_per_hour"]
            pool_devices += p["devices"]
            by_type[p["hardware"]] = by_type.get(p["hardware"], 0) + p["devices"]
    assert doc["cost_per_hour"] == pytest.approx(pool_cost, rel=1e-9, abs=1e-6)
    assert doc["total_devices"] == pool_devices
    assert doc["devices_by_type"] == by_type
    if doc["objective"]["kind"] == "min_cost":
        assert doc["objective"]["value"] == pytest.approx(doc["cost_per_hour"])
    else:
        assert doc["objective"]["value"] > 0


HEAVY = {"three-services", "daily-demand"}  # tens of seconds on two cores


@pytest.mark.parametrize("path", [
    pytest.param(p, id=p.stem, marks=[pytest.mark.slow] if p.stem in HEAVY else []) for p in PROBLEMS
])
def test_every_shipped_problem_plans(path: Path):
    r = planned_json(str(path))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    doc = json.loads(r.stdout)
    name = yaml.safe_load(path.read_text())["name"]
    check_document(doc, name)
    print(f"\n{name}: {doc['status']}, {doc['objective']}, {doc['total_devices']} devices, "
          f"{[(s['name'], s['runtime']) for s in doc['services']]}")


def test_there_are_shipped_problems():
    assert DEFAULT in PROBLEMS and len(PROBLEMS) >= 5


# ---- determinism, formats, --out ---------------------------------------------------------------


def test_same_input_and_seed_give_byte_identical_json():
    args = ("plan", str(DEFAULT), "--format", "json", "--no-timings", "--seed", "7", "--time-limit", "30",
            *EXACT_RECORD)
    a, b = cli(*args), cli(*args)
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert a.stdout == b.stdout
    doc = json.loads(a.stdout)
    assert doc["solver"]["seed"] == 7 and doc["solver"]["time_limit_s"] == 30
    # the plan itself does not depend on the seed for this problem's unique optimum's cost
    assert doc["cost_per_hour"] == json.loads(planned_json(str(DEFAULT)).stdout)["cost_per_hour"]


def test_byte_identical_for_a_multi_type_problem():
    """A second problem (three hardware types under supply limits) planned twice with its
    decision record: the record's validity search is bounded by solves and CP-SAT's
    deterministic time, not by the clock, so the two runs agree byte for byte (its wall-clock
    safety net is set out of reach, as EXACT_RECORD explains, and did not fire); and the plan
    is the one the record-less run prints."""
    path = str(ROOT / "problems" / "mixed-supply.yaml")
    args = ("plan", path, "--format", "json", "--no-timings", *EXACT_RECORD)
    a, b = cli(*args), cli(*args)
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert a.stdout == b.stdout
    doc = json.loads(a.stdout)
    assert doc["decision"]["validity"]["cut_short"] is False
    bare = cli("plan", path, "--format", "json", "--no-timings", "--no-record")
    assert bare.returncode == 0, bare.stderr
    assert {**doc, "decision": None} == json.loads(bare.stdout)


def test_timings_are_reported_without_no_timings():
    r = cli("plan", str(DEFAULT), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["solver"]["wall_s"] > 0


@pytest.mark.parametrize("fmt", ["yaml", "markdown", "table"])
def test_other_formats(fmt: str):
    r = cli_shared("plan", str(DEFAULT), "--format", fmt, "--no-timings", *EXACT_RECORD)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() and "llama3-70b-online" in r.stdout
    if fmt == "yaml":
        assert yaml.safe_load(r.stdout) == json.loads(plan_json(DEFAULT, exact=True).stdout)


def test_table_is_the_default_format():
    r = cli_shared("plan", str(DEFAULT), "--no-timings", *EXACT_RECORD)  # shared with test_decision
    assert r.returncode == 0, r.stderr
    assert r.stdout == cli_shared("plan", str(DEFAULT), "--format", "table", "--no-timings", *EXACT_RECORD).stdout


def test_out_writes_the_file_and_prints_nothing(tmp_path: Path):
    out = tmp_path / "plan.json"
    r = cli("plan", str(DEFAULT), "--format", "json", "--no-timings", "--out", str(out), *EXACT_RECORD)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert out.read_text() == plan_json(DEFAULT, exact=True).stdout
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]  # no temporary left behind


# ---- infeasible problems -----------------------------------------------------------------------

TTFT_10MS = """\
name: ttft-too-tight
objective: min_cost
services:
  - name: assistant
    model: llama-3.1-405b
    precision: fp8
    workload: {qps: 10, input_tokens: 2048, output_tokens: 150, max_context: 8192}
    slo:
      ttft_ms: 10
      tpot_ms: 50
hardware:
  - type: h100-sxm
    price_per_hour: 2.50
"""


def supply_limited(supplies: dict[str, int]) -> str:
    hw = "".join(f"  - type: {k}\n    supply: {v}\n" for k, v in supplies.items())
    return f"""\
name: supply-limited
objective: min_cost
services:
  - name: chat
    model: llama-3.1-70b
    precision: fp8
    workload: {{qps: 200, input_tokens: 2048, output_tokens: 150, max_context: 8192}}
    slo:
      ttft_ms: {{p50: 500, p99: 1500}}
      tpot_ms: {{p50: 30, p99: 50}}
hardware:
{hw}"""


def test_ttft_too_tight_is_infeasible_and_says_why(tmp_path: Path):
    path = tmp_path / "tight.yaml"
    path.write_text(TTFT_10MS)
    r = cli("plan", str(path), "--format", "json", "--no-timings")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "infeasible" and doc["services"] == [] and doc["total_devices"] == 0
    why = " ".join(doc["infeasible_because"])
    assert "TTFT" in why and "h100-sxm" in why and "10 ms" in why, doc["infeasible_because"]
    table = cli("plan", str(path), "--no-timings")
    assert table.returncode == 1
    assert "INFEASIBLE" in table.stdout and "TTFT" in table.stdout


def _supply_case(tmp_path: Path, supplies: dict[str, int]) -> tuple[int, dict, str]:
    path = tmp_path / "supply.yaml"
    path.write_text(supply_limited(supplies))
    r = cli("plan", str(path), "--format", "json", "--no-timings", script=True)
    doc = json.loads(r.stdout) if r.stdout else {}
    return r.returncode, doc, r.stderr


def test_supply_limited_problem_names_supply_and_demand(tmp_path: Path):
    rc, doc, err = _supply_case(tmp_path, {"h100-sxm": 16})
    assert rc == 1, err
    assert doc["status"] == "infeasible"
    why = doc["infeasible_because"]
    assert any("supply of h100-sxm (16 devices)" in w for w in why), why
    assert any("demand of service 'chat'" in w for w in why), why


@pytest.mark.parametrize("supplies", [{"h100-sxm": 8}, {"h100-sxm": 8, "h200-sxm": 8}],
                         ids=["h100-8", "h100-8+h200-8"])
def test_supply_limited_explanation_names_every_binding_supply(tmp_path: Path, supplies):
    rc, doc, err = _supply_case(tmp_path, supplies)
    assert rc == 1, err
    why = doc["infeasible_because"]
    assert any("demand of service 'chat'" in w for w in why), why
    for name, s in supplies.items():
        assert any(f"supply of {name} ({s} devices)" in w for w in why), why


def test_budget_limited_explanation_names_the_budget(tmp_path: Path):
    path = tmp_path / "budget.yaml"
    text = (ROOT / "problems" / "budget-max-throughput.yaml").read_text()
    path.write_text(text.replace("budget_per_hour: 400", "budget_per_hour: 1"))
    r = cli("plan", str(path), "--format", "json", "--no-timings")
    assert r.returncode == 1, r.stderr
    why = json.loads(r.stdout)["infeasible_because"]
    assert any("budget of $1.00/hour" in w for w in why), why


def test_bad_input_exits_2(tmp_path: Path):
    path = tmp_path / "typo.yaml"
    path.write_text(TTFT_10MS.replace("objective: min_cost", "objectve: min_cost"))
    r = cli("plan", str(path), "--format", "json")
    assert r.returncode == 2
    assert r.stdout == "" and "Traceback" not in r.stderr and "objectve" in r.stderr
    missing = cli("plan", str(tmp_path / "missing.yaml"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


# ---- direction checks (the paper's finding 1) --------------------------------------------------

OPTS = SolveOptions(time_limit_s=30)


@lru_cache(maxsize=None)
def forced(name: str, runtime: str) -> PlanResult:
    rp: ResolvedProblem = load_problem(ROOT / "problems" / name)
    services = [s.model_copy(update={"runtime": runtime}) for s in rp.problem.services]
    doc = plan(resolve(rp.problem.model_copy(update={"services": services}), rp.doc), OPTS, timings=False)
    assert doc.status == "optimal", (name, runtime, doc.infeasible_because)
    return doc


def qps_per_device(doc: PlanResult) -> float:
    return sum(s.demand_qps for s in doc.services) / doc.total_devices


@pytest.mark.parametrize("name, paper", [("llama3-70b-online.yaml", "1.5-1.8x"),
                                         ("llama3-405b-online.yaml", "1.8-2.2x")])
def test_online_disaggregation_serves_more_qps_per_device(name: str, paper: str):
    col, dis, auto = (forced(name, r) for r in ("colocated", "disaggregated", "auto"))
    assert all(s.runtime == "colocated" for s in col.services)
    assert all(s.runtime == "disaggregated" for s in dis.services)
    ratio = qps_per_device(dis) / qps_per_device(col)
    print(f"\n{name}: QPS/device colocated {qps_per_device(col):.4f}, disaggregated "
          f"{qps_per_device(dis):.4f}: {ratio:.2f}x (paper {paper}); cost/h "
          f"{col.cost_per_hour} vs {dis.cost_per_hour}")
    assert ratio >= 1.3
    # auto may use either runtime, so it is never worse than the better one
    assert auto.cost_per_hour <= min(col.cost_per_hour, dis.cost_per_hour) + 1e-6


def test_offline_colocated_is_at_least_as_good_as_disaggregated():
    name = "llama3-70b-offline.yaml"
    col, dis, auto = (forced(name, r) for r in ("colocated", "disaggregated", "auto"))
    ratio = col.throughput_scale / dis.throughput_scale
    print(f"\n{name}: throughput scale colocated {col.throughput_scale}, disaggregated "
          f"{dis.throughput_scale}: colocated/disaggregated {ratio:.3f}")
    assert col.throughput_scale >= 0.95 * dis.throughput_scale
    assert auto.throughput_scale >= max(col.throughput_scale, dis.throughput_scale) - 1e-9
    assert col.total_devices <= 8 and dis.total_devices <= 8
