"""The parts of `fleetplan batch` by hand: finding files, result file names, the input hash
(problem, cards, calibration, measured tables, options), the exit code's precedence, the
summary CSV, the pivot, the progress display."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from solver.batch import inputs
from solver.batch.inputs import (
    MAX_KEY,
    discover,
    file_keys,
    input_sha256,
    safe_name,
    variant_key,
)
from solver.batch.progress import Progress
from solver.batch.runner import exit_code
from solver.batch.work import Flow
from solver.errors import InputError
from solver.fleet.solve import SolveOptions
from solver.problem.load import load_problem
from solver.profiles.format import shipped_root
from solver.report import batch_views as views
from solver.schema.batch import BatchSummary, Counts, SummaryRow
from tests.support.batch_problems import CUSTOM, gpu_card
from tests.support.questions_problem import small_problem


def touch(p: Path, text: str = "name: x\n") -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_discover_folders_globs_names_and_duplicates(tmp_path):
    a, b = touch(tmp_path / "a.yaml"), touch(tmp_path / "b.yml")
    c = touch(tmp_path / "sub" / "c.yaml")
    touch(tmp_path / "notes.txt")
    d = str(tmp_path)
    assert discover([d]) == [a, b]
    assert discover([d], recursive=True) == [a, b, c]
    assert discover([f"{d}/**/*.yaml"]) == [a, c]
    assert discover([str(b), d, str(a)]) == [b, a]  # each file once, in the order first named
    assert discover(["llama3-70b-online"])[0].name == "llama3-70b-online.yaml"
    for ref, msg in ((f"{d}/missing.yaml", "no such file or folder"),
                     (f"{d}/*.json", "the pattern matches no .yaml file"),
                     (str(tmp_path / "sub" / "c.yaml") + "x", "no such file"),
                     ("no-such-shipped-problem", "unknown problem")):
        with pytest.raises(InputError, match=msg):
            discover([ref])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no .yaml file"):
        discover([str(tmp_path / "empty")])


def test_file_keys_keep_shared_stems_apart():
    paths = [Path("/x/q/p.yaml"), Path("/y/q/p.yaml"), Path("/z/r.yaml"), Path("/w/p.yml")]
    assert file_keys(paths) == ["x__q__p", "y__q__p", "r", "w__p"]


def test_safe_names():
    assert safe_name("a b/c[d]") == "a_b_c_d_"
    assert safe_name("..hidden") == "hidden"
    long = "p@" + ",".join(f"s{i}.qps={i}" for i in range(40))
    k = safe_name(long)
    assert len(k) == MAX_KEY and k != safe_name(long + "x")
    assert variant_key("f", (("h100-sxm.price", 2.5), ("chat.qps", 200.0))) == "f@h100-sxm.price=2.5,chat.qps=200"
    assert variant_key("f", ()) == "f"


# ---- the input hash ---------------------------------------------------------------------------


@pytest.fixture()
def custom(tmp_path):
    touch(tmp_path / "cards" / "test-gpu.yaml", gpu_card())
    return touch(tmp_path / "p.yaml", CUSTOM)


def sha(path: Path, opts: SolveOptions = SolveOptions(), timings: bool = False, record: bool = True) -> str:
    return input_sha256(load_problem(path), Flow(opts, timings, record))


def test_the_hash_follows_the_problem_and_its_card_file(custom):
    first = sha(custom)
    assert sha(custom) == first
    custom.write_text("# a comment changes nothing planned\n" + CUSTOM.replace("qps: 100", "qps: 100.0"))
    assert sha(custom) == first  # the problem's data, not its spelling
    custom.write_text(CUSTOM.replace("qps: 100", "qps: 101"))
    assert sha(custom) != first
    custom.write_text(CUSTOM)
    (custom.parent / "cards" / "test-gpu.yaml").write_text(gpu_card(price=2.75))
    assert sha(custom) != first
    (custom.parent / "cards" / "test-gpu.yaml").write_text(gpu_card())
    assert sha(custom) == first


def test_the_hash_follows_the_options(custom):
    first = sha(custom)
    assert sha(custom, SolveOptions(seed=1)) != first
    assert sha(custom, SolveOptions(time_limit_s=30)) != first
    assert sha(custom, timings=True) != first
    assert sha(custom, record=False) != first


def test_the_hash_follows_the_calibration_file(custom, tmp_path, monkeypatch):
    first = sha(custom)
    parts = dict(inputs.input_parts(load_problem(custom), Flow(timings=False)))
    assert parts["calibration:vllm"] != "none"  # the shipped vLLM calibration is hashed
    cal = tmp_path / "vllm.yaml"
    cal.write_text("engine: vllm\n")
    monkeypatch.setattr(inputs, "calibration_path", lambda engine: cal)
    changed = sha(custom)
    assert changed != first
    cal.write_text("engine: vllm\n# refitted\n")
    assert sha(custom) != changed


def test_the_hash_follows_the_measured_tables_sidecars(tmp_path, monkeypatch):
    """h100-sxm's vLLM tables are in the hash by their sidecars' content hashes."""
    problem = touch(tmp_path / "p.yaml", small_problem())
    root = tmp_path / "profiles"
    shutil.copytree(shipped_root() / "h100-sxm", root / "h100-sxm")
    monkeypatch.setenv("FLEETPLAN_PROFILES", str(root))
    parts = dict(inputs.input_parts(load_problem(problem), Flow(timings=False)))
    gemm = json.loads((root / "h100-sxm" / "vllm" / "gemm.meta.json").read_text())
    assert parts["profile:h100-sxm/vllm/gemm"].split()[0] == gemm["content_sha256"]
    assert not any(k.startswith("profile:h200-sxm") for k in parts)  # no tables under this root
    first = sha(problem)
    meta = root / "h100-sxm" / "vllm" / "gemm.meta.json"
    gemm["content_sha256"] = "0" * 64  # a re-measured table
    meta.write_text(json.dumps(gemm))
    assert sha(problem) != first


# ---- exit code, summary, pivot ----------------------------------------------------------------


def row(status: str, **kw) -> SummaryRow:
    base = {"problem": kw.pop("problem", "p"), "base_problem": kw.pop("base_problem", "p"), "file": "p.yaml"}
    return SummaryRow(**base, status=status, **kw)


@pytest.mark.parametrize(("statuses", "code"), [
    (["optimal", "feasible"], 0),
    (["optimal", "infeasible"], 1),
    (["infeasible", "invalid", "optimal"], 2),
    (["invalid", "error", "infeasible"], 3),
    ([], 0),
])
def test_exit_code_is_the_worst_outcome(statuses, code):
    assert exit_code([row(s) for s in statuses]) == code


def test_csv_columns_and_cells():
    rows = [
        row("optimal", problem="p[a=1]", sweep={"a": 1.0}, objective_kind="min_cost", objective=12.5,
            cost_per_hour=12.5, total_devices=5, devices_by_type={"h100-sxm": 5}, power_kw=3.5,
            result="results/p@a=1.json", input_sha256="ab"),
        row("invalid", problem="q", base_problem="q", error='bad, "quoted"'),
    ]
    lines = views.to_csv(rows).splitlines()
    assert lines[0] == ("problem,base_problem,file,sweep.a,status,objective_kind,objective,cost_per_hour,"
                        "total_devices,devices.h100-sxm,power_kw,wall_s,resumed,result,input_sha256,error")
    assert lines[1] == "p[a=1],p,p.yaml,1,optimal,min_cost,12.5,12.5,5,5,3.5,,false,results/p@a=1.json,ab,"
    assert lines[2] == 'q,q,p.yaml,,invalid,,,,,,,,false,,,"bad, ""quoted"""'


def test_summary_table_shows_cost_to_the_cent():
    rows = [row("optimal", problem="big", cost_per_hour=1234.567, total_devices=400),
            row("optimal", problem="mid", cost_per_hour=204.0, total_devices=76),
            row("optimal", problem="small", cost_per_hour=12.345, total_devices=5),
            row("infeasible", problem="none")]
    s = BatchSummary(version="0", exit_code=1, rows=rows, counts=Counts(
        problems=4, optimal=3, feasible=0, infeasible=1, invalid=0, error=0, resumed=0))
    lines = {ln.split()[0]: ln for ln in views.summary_text(s).splitlines()[2:-1]}
    assert "1,234.57" in lines["big"] and "204.00" in lines["mid"] and "12.35" in lines["small"]
    assert lines["none"].split()[2] == "-"


def test_parquet_has_typed_columns(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [row("optimal", sweep={"a": 1.0}, cost_per_hour=3.0, total_devices=2,
                devices_by_type={"x": 2}), row("infeasible", sweep={"a": 2.0})]
    views.write_parquet(rows, tmp_path / "s.parquet")
    t = pq.read_table(tmp_path / "s.parquet")
    assert t.column("sweep.a").to_pylist() == [1.0, 2.0]
    assert t.column("devices.x").to_pylist() == [2, None]
    assert str(t.schema.field("total_devices").type) == "int64"
    assert t.column("status").to_pylist() == ["optimal", "infeasible"]


def test_pivot_by_hand():
    rows = []
    for price in (3.0, 2.0):
        for qps in (100.0, 50.0):
            cost = price * qps / 10
            status = "infeasible" if (price, qps) == (3.0, 100.0) else "optimal"
            rows.append(row(status, problem=f"s[{price},{qps}]", base_problem="s",
                            sweep={"h.price": price, "c.qps": qps, "m": 1.0},
                            cost_per_hour=None if status == "infeasible" else cost))
    rows.append(row("optimal", problem="other", base_problem="other", cost_per_hour=1.0))
    headers, body = views.pivot(rows, "h.price", "c.qps")
    assert headers == ["problem", "m", "h.price", "c.qps=50", "c.qps=100"]
    assert body == [["s", 1.0, 2.0, 10.0, 20.0], ["s", 1.0, 3.0, 15.0, "infeasible"]]
    assert views.pivot_csv(rows, "h.price", "c.qps").splitlines() == [
        "problem,m,h.price,c.qps=50,c.qps=100", "s,1,2,10,20", "s,1,3,15,infeasible"]
    text = views.pivot_text(rows, "h.price", "c.qps")
    assert text.splitlines()[0] == "cost_per_hour by h.price (rows) and c.qps (columns)"
    assert "10.00" in text and "infeasible" in text


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_modes():
    assert Progress.for_stream(3, io.StringIO(), None).mode == "off"  # not a terminal
    assert Progress.for_stream(3, FakeTTY(), False).mode == "off"
    lines = io.StringIO()
    p = Progress.for_stream(2, lines, True)
    p.advance("a", "optimal")
    p.advance("b", "invalid")
    p.close()
    assert lines.getvalue() == "[1/2] optimal    a\n[2/2] invalid    b\n"
    tty = FakeTTY()
    bar = Progress.for_stream(4, tty, None)
    bar.start()
    assert tty.getvalue() == "\r[" + "-" * 28 + "] 0/4  0 planned  0:00\x1b[K"
    for s in ("optimal", "feasible", "infeasible", "optimal"):
        bar.advance("x", s)
    bar.close()
    last = tty.getvalue().rstrip("\n").split("\r")[-1]
    assert last.startswith("[" + "#" * 28 + "] 4/4  3 planned, 1 infeasible  0:0")
    assert tty.getvalue().endswith("\n")


# ---- failures inside a plan --------------------------------------------------------------------


def test_a_plan_that_fails_is_an_error_row_and_exit_3(tmp_path, monkeypatch):
    """A bug in one plan (here: planning raises) fails that problem alone, in this process."""
    from solver.batch import work
    from solver.batch.runner import BatchOptions, run_batch
    from solver.plan.planner import plan as real_plan

    for name, qps in (("a", 50), ("b", 60), ("c", 70)):
        touch(tmp_path / "in" / f"{name}.yaml", small_problem(qps=qps).replace(
            "name: small-two-types", f"name: {name}"))

    def flaky(rp, opts, timings):
        if rp.name == "b":
            raise RuntimeError("boom")
        return real_plan(rp, opts, timings)

    monkeypatch.setattr(work, "plan", flaky)
    out = tmp_path / "out"
    s = run_batch([str(tmp_path / "in")], BatchOptions(out=out, timings=False, record=False),
                  progress_stream=None)
    assert [(r.problem, r.status) for r in s.rows] == [("a", "optimal"), ("b", "error"), ("c", "optimal")]
    assert s.rows[1].error == "internal error: RuntimeError: boom" and s.rows[1].result is None
    assert s.exit_code == 3 and s.counts.error == 1
    assert sorted(p.name for p in (out / "results").iterdir()) == ["a.json", "c.json"]
    assert sorted(p.name for p in (out / "records").iterdir()) == ["a.json", "c.json"]


def test_a_result_from_another_fleetplan_version_is_an_error():
    from solver.batch.runner import Job, _Results, _row
    from solver.batch.work import Planned

    job = Job(0, "k", Path("p.yaml"), "p", "p")
    r = _row(job, Planned(None, "invalid", "x", 0.5, version="0.0.1"), _Results(Path("out"), []), True)
    assert r.status == "error" and "the worker runs fleetplan 0.0.1" in r.error
