"""`fleetplan batch` end to end through the real command line: folders and globs, a bad file
among good ones, exit codes and their precedence, results equal to `fleetplan plan`'s,
`--jobs 2` equal to `--jobs 1`, `--resume` skipping and re-planning after a card or a problem
changes, sweep expansion, the pivot, the plot, progress on stderr, and the errors for missing
extras and bad arguments. (A variant planned equals the hand-edited problem: test_sweep.py.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from solver.schema.batch import BatchRecord, BatchSummary
from solver.schema.result import PlanResult
from tests.support.batch_problems import SWEEP, gpu_card, make_tree, named
from tests.support.cli import ROOT, cli, env_lacking
from tests.support.questions_problem import small_problem


def summary(out: Path) -> BatchSummary:
    return BatchSummary.model_validate_json((out / "summary.json").read_text())


def files(out: Path) -> dict[str, bytes]:
    """Every result and record file, and the CSV summary, by name."""
    got = {p.name: p.read_bytes() for p in sorted((out / "results").iterdir())}
    got["summary.csv"] = (out / "summary.csv").read_bytes()
    return got


@pytest.fixture(scope="module")
def first(batch_tree) -> tuple[subprocess.CompletedProcess, Path]:
    """One batch over a folder and a glob: 4 good files (one a 6-variant sweep), 1 invalid."""
    out = batch_tree / "out-serial"
    r = cli("batch", "good", "bad/*.yaml", "--out", str(out), "--no-timings", "--no-record", cwd=batch_tree)
    return r, out


def test_a_bad_file_fails_alone_and_exit_2_wins_over_infeasible(first):
    r, out = first
    assert r.returncode == 2, r.stderr
    assert r.stderr == ""  # no progress bar when stderr is not a terminal; no traceback
    s = summary(out)
    assert s.exit_code == 2
    by = {row.problem: row for row in s.rows}
    assert [row.problem for row in s.rows] == [
        "custom-card", "infeasible", "small",
        *(f"sweep[h200-sxm.price={p},chat.qps={q}]" for p in (2, 3) for q in (50, 100, 150)),
        "qps_nan",
    ]
    assert s.counts.model_dump() == {"problems": 10, "optimal": 8, "feasible": 0, "infeasible": 1,
                                     "invalid": 1, "error": 0, "resumed": 0}
    bad = by["qps_nan"]
    assert bad.status == "invalid" and bad.result is None and bad.file == "bad/qps_nan.yaml"
    assert bad.error.startswith("bad/qps_nan.yaml:10: services[0].workload.qps:")
    inf = by["infeasible"]
    assert inf.error == "budget of $100.00/hour; demand of service 'chat' (5000 QPS)"
    assert inf.cost_per_hour is None and inf.result == "results/infeasible.json"
    # 100 QPS: 5 H100 at $2.50/h, tp1 batch 32 (20.2 QPS per instance)
    assert by["small"].cost_per_hour == 12.5 and by["small"].devices_by_type == {"h100-sxm": 5}
    custom = json.loads((out / "results" / "custom-card.json").read_text())  # the card's plan
    assert set(custom["devices_by_type"]) == {"test-gpu"}
    assert by["custom-card"].devices_by_type == custom["devices_by_type"]
    assert by["custom-card"].cost_per_hour == custom["cost_per_hour"]
    for row in s.rows:
        assert row.wall_s is None and not row.resumed
        if row.status != "invalid":
            doc = PlanResult.model_validate_json((out / row.result).read_text())
            assert doc.problem == row.problem and doc.status == row.status
            assert doc.cost_per_hour == (row.cost_per_hour or 0.0)
            assert dict(doc.devices_by_type) == row.devices_by_type
            rec = BatchRecord.model_validate_json((out / row.result.replace("results/", "records/", 1)).read_text())
            assert rec.input_sha256 == row.input_sha256 and rec.row == row
    # stdout: the table and the counts
    assert r.stdout.splitlines()[-1] == (f"10 problems: 8 planned, 1 infeasible, 1 invalid; results in "
                                         f"{out} (exit 2)")
    assert "qps_nan" in r.stdout and "sweep[h200-sxm.price=3,chat.qps=150]" in r.stdout
    # the CSV says the same as the JSON summary
    csv = (out / "summary.csv").read_text().splitlines()
    assert csv[0].startswith("problem,base_problem,file,sweep.h200-sxm.price,sweep.chat.qps,status,")
    assert len(csv) == 11
    if (out / "summary.parquet").exists() or _have_pyarrow():
        import pyarrow.parquet as pq

        t = pq.read_table(out / "summary.parquet")
        assert t.column("problem").to_pylist() == [row.problem for row in s.rows]
        assert t.column("cost_per_hour").to_pylist() == [row.cost_per_hour for row in s.rows]


def _have_pyarrow() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def test_results_are_the_bytes_fleetplan_plan_prints(first, batch_tree):
    """With the decision record (the default, as plan's) and without it (--no-record)."""
    _, out = first
    r = cli("batch", "good/small.yaml", "good/infeasible.yaml", "--out", "out-record", "--no-timings",
            "--quiet", cwd=batch_tree)
    assert r.returncode == 1, r.stderr
    for name, rc in (("small", 0), ("infeasible", 1)):
        p = cli("plan", f"good/{name}.yaml", "--format", "json", "--no-timings", cwd=batch_tree)
        assert p.returncode == rc, p.stderr
        assert (batch_tree / "out-record" / "results" / f"{name}.json").read_text() == p.stdout
        assert json.loads(p.stdout)["decision"]["runners_up"] is not None
    p = cli("plan", "good/small.yaml", "--format", "json", "--no-timings", "--no-record", cwd=batch_tree)
    assert (out / "results" / "small.json").read_text() == p.stdout
    assert json.loads(p.stdout)["decision"] is None


def test_jobs_2_gives_the_same_bytes_as_jobs_1(first, batch_tree):
    _, out = first
    par = batch_tree / "out-jobs2"
    r = cli("batch", "good", "bad/*.yaml", "--out", str(par), "--no-timings", "--no-record", "--jobs", "2",
            cwd=batch_tree)
    assert r.returncode == 2, r.stderr
    assert files(par) == files(out)
    assert r.stdout == cli_stdout_with(first, par)


def cli_stdout_with(first, out: Path) -> str:
    r, old = first
    return r.stdout.replace(str(old), str(out))


def test_resume_skips_unchanged_and_replans_what_changed(tmp_path):
    root = make_tree(tmp_path)
    good = root / "good"
    args = ("batch", "good", "--out", "out", "--no-timings", "--no-record", "--resume")
    r = cli(*args, cwd=root)
    assert r.returncode == 1, r.stderr  # one infeasible problem, no invalid one
    assert r.stdout.splitlines()[-1] == "9 problems: 8 planned, 1 infeasible; results in out (exit 1)"
    assert summary(root / "out").counts.resumed == 0
    before = {p.name: p.stat().st_mtime_ns for p in (root / "out" / "results").iterdir()}

    def again() -> dict[str, bool]:
        r = cli(*args, cwd=root)
        assert r.returncode == 1, r.stderr
        return {row.problem: row.resumed for row in summary(root / "out").rows}

    assert all(again().values())
    after = {p.name: p.stat().st_mtime_ns for p in (root / "out" / "results").iterdir()}
    assert after == before  # nothing rewritten

    # a card named by path changes, a problem changes, the sweep gains a value, another file
    # gains only a comment: the first three are planned again (the sweep's new variants only)
    (good / "cards" / "test-gpu.yaml").write_text(gpu_card(price=3.0))
    (good / "small.yaml").write_text(named(small_problem(qps=120), "small"))
    (good / "sweep.yaml").write_text(named(small_problem(), "sweep") + SWEEP.replace("[2, 3]", "[2, 3, 4]"))
    inf = good / "infeasible.yaml"
    inf.write_text("# a comment\n" + inf.read_text())
    assert sorted(k for k, v in again().items() if not v) == [
        "custom-card", "small", *(f"sweep[h200-sxm.price=4,chat.qps={q}]" for q in (100, 150, 50))]
    doc = json.loads((root / "out" / "results" / "custom-card.json").read_text())
    # every device at the card's new price ($3.00/h)
    assert doc["cost_per_hour"] == pytest.approx(3.0 * doc["devices_by_type"]["test-gpu"])

    # other solver options: everything is planned again
    r = cli(*args, "--seed", "3", cwd=root)
    assert summary(root / "out").counts.resumed == 0, r.stderr

    # a result deleted by hand is planned again
    (root / "out" / "results" / "small.json").unlink()
    r = cli(*args, "--seed", "3", cwd=root)
    assert [row.problem for row in summary(root / "out").rows if not row.resumed] == ["small"]


def test_pivot_plot_progress_and_exit_0(batch_tree):
    """Every problem planned: exit 0; timings on (the default); forced progress on stderr."""
    png = batch_tree / "cost.png"
    r = cli("batch", "good/sweep.yaml", "good/small.yaml", "--out", "out-pivot", "--progress", "--no-record",
            "--pivot", "h200-sxm.price", "chat.qps", "--plot", str(png), cwd=batch_tree)
    assert r.returncode == 0, r.stderr
    progress = r.stderr.splitlines()
    assert len(progress) == 7 and progress[0].startswith("[1/7] optimal    ")
    assert sorted(ln.split()[-1] for ln in progress) == sorted(row.problem for row in summary(batch_tree / "out-pivot").rows)
    assert "[1/7]" not in r.stdout
    assert r.stdout.splitlines()[-1] == "7 problems: 7 planned; results in out-pivot (exit 0)"
    s = summary(batch_tree / "out-pivot")
    assert all(row.wall_s > 0 for row in s.rows)
    cost = {(row.sweep["h200-sxm.price"], row.sweep["chat.qps"]): row.cost_per_hour
            for row in s.rows if row.sweep}
    # H200 at $2/h: ceil(qps / 22.9) H200; at $3/h 3 H100, 5 H100, 4 H100 + 3 H200 (20.5 and
    # 22.9 QPS per instance)
    assert cost == {(2, 50): 6.0, (2, 100): 10.0, (2, 150): 14.0, (3, 50): 7.5, (3, 100): 12.5, (3, 150): 19.0}
    pivot = (batch_tree / "out-pivot" / "summary.pivot.csv").read_text().splitlines()
    assert pivot == ["problem,h200-sxm.price,chat.qps=50,chat.qps=100,chat.qps=150",
                     "sweep,2,6,10,14", "sweep,3,7.5,12.5,19"]
    assert r.stdout.startswith("cost_per_hour by h200-sxm.price (rows) and chat.qps (columns)\n")
    assert "19.00" in r.stdout.split("\n\n")[0]

    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    assert img.shape[:2] == (605, 990)
    ink = (img[..., :3] < 0.9).any(axis=2).mean()
    assert 0.01 < ink < 0.5, ink


def test_plot_and_ray_without_their_packages_are_clear_errors(batch_tree, tmp_path):
    """Packages that cannot be imported stand in for missing installs: exit 2 before planning."""
    env = env_lacking(tmp_path, "matplotlib", "ray")
    r = cli("batch", "good/small.yaml", "--out", "out-none", "--plot", "x.png", cwd=batch_tree, env=env)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("error: --plot needs matplotlib, which is not installed "
                        "(pip install 'fleetplan[plot]')\n")
    r = cli("batch", "good/small.yaml", "--out", "out-none", "--ray", "auto", cwd=batch_tree, env=env)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "error: --ray needs Ray, which is not installed (pip install 'fleetplan[ray]')\n"
    assert not (batch_tree / "out-none").exists()


@pytest.mark.parametrize(("args", "message"), [
    (("nothing/*.yaml",), "error: nothing/*.yaml: the pattern matches no .yaml file"),
    (("good", "--pivot", "chat.qps", "chat.price"), "error: --pivot chat.qps chat.price: no problem "
     "sweeps both; swept fields: h200-sxm.price, chat.qps"),
    (("good", "--pivot", "chat.qps", "chat.qps"), "error: --pivot: the rows and the columns are the same"),
    (("good/small.yaml", "--plot", "x.png"), "error: --plot draws cost against a swept field, and no "
     "problem has a sweep"),
    (("good/sweep.yaml", "--plot-x", "chat.qps"), "error: --plot-x needs --plot FILE.png"),
    (("good", "--jobs", "2", "--ray", "auto"), "not allowed with argument"),
    (("good", "--jobs", "0"), "must be in 1..1,024"),
])
def test_bad_arguments_exit_2_before_planning(batch_tree, args, message, capsys, monkeypatch):
    """In this process (the same parser and runner; no interpreter start per case)."""
    from solver.cli.main import main

    monkeypatch.chdir(batch_tree)
    assert main(["batch", *args, "--out", "out-bad-args"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err and err.startswith("error: "), err
    assert len(err.splitlines()) == 1
    assert not (batch_tree / "out-bad-args").exists()


def test_out_must_be_a_folder(batch_tree, capsys, monkeypatch):
    from solver.cli.main import main

    monkeypatch.chdir(batch_tree)
    (batch_tree / "a-file").write_text("")
    assert main(["batch", "good/small.yaml", "--out", "a-file"]) == 2
    assert capsys.readouterr().err == "error: --out a-file: exists and is not a folder\n"


def test_plan_and_check_on_a_sweep_file(batch_tree):
    r = cli("plan", "good/sweep.yaml", "--format", "json", "--no-timings", "--no-record", cwd=batch_tree)
    assert r.returncode == 0
    assert r.stderr == ("note: good/sweep.yaml declares a sweep: 6 variants over h200-sxm.price (2), "
                        "chat.qps (3); planning the base problem as written (fleetplan batch "
                        "good/sweep.yaml --out DIR plans every variant)\n")
    doc = json.loads(r.stdout)
    assert doc["problem"] == "sweep" and doc["cost_per_hour"] == 12.5  # 100 QPS, h200 at 3.5
    r = cli("check", "good/sweep.yaml", cwd=batch_tree)
    assert r.returncode == 0 and r.stdout == ("ok: good/sweep.yaml (sweep: 1 services, 2 hardware "
                                              "types; sweep: 6 variants over h200-sxm.price (2), chat.qps (3))\n")


def test_the_example_sweep_checks():
    r = cli("check", "examples/sweep-price-demand.yaml")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("ok: examples/sweep-price-demand.yaml (llama3-70b-online-sweep: 1 services, "
                        "2 hardware types; sweep: 9 variants over h100-sxm.price (3), chat.qps (3))\n")


def test_documents_validate_against_the_published_schemas(first):
    """summary.json, a record and the example sweep file against schemas/ (fleetplan schema)."""
    import jsonschema
    import yaml

    from solver.schema.publish import json_schema

    _, out = first

    def check(name: str, doc) -> None:
        schema = json_schema(name)
        assert json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text()) == schema
        jsonschema.Draft202012Validator(schema).validate(doc)

    check("batch-summary", json.loads((out / "summary.json").read_text()))
    check("batch-record", json.loads((out / "records" / "small.json").read_text()))
    check("problem", yaml.safe_load((ROOT / "examples" / "sweep-price-demand.yaml").read_text()))
    bad = yaml.safe_load((ROOT / "examples" / "sweep-price-demand.yaml").read_text())
    bad["sweep"]["services[chat].workload.qps"] = {"from": 1, "to": 2, "steps": 3}
    assert list(jsonschema.Draft202012Validator(json_schema("problem")).iter_errors(bad))
