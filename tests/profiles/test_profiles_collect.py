"""`fleetplan profiles collect`: measure with PyTorch on the CPU (quick grid, gloo with two
processes for the communication families) and check the files end to end: provenance, hashes,
the loader, the interpolation, and the real CLI with `profiles check` on its output.

PyTorch is an optional dependency (`fleetplan[collect]`): the measuring tests skip without it;
the tests of the no-PyTorch behaviour run everywhere.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.perf.operators.tables import load_tables
from solver.profiles.format import (
    FAMILIES,
    available,
    csv_path_of,
    load_table,
    read_provenance,
)

REPO = Path(__file__).resolve().parents[2]
HW = "cpu-smoke"  # a custom hardware name: the tables are filed under it
FW = "torch-eager"
FAMS = ("gemm", "attention_context", "attention_generation", "allreduce", "collectives")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("FLEETPLAN_PROFILES", None)
    return env


def _card():
    from solver.catalog.shipped import hardware_card

    return hardware_card("h100-sxm").model_copy(update={"name": HW})


def _rows(path: Path) -> list[dict]:
    import gzip

    text = gzip.decompress(path.read_bytes()).decode() if path.name.endswith(".gz") else path.read_text()
    return list(csv.DictReader(text.splitlines()))


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    pytest.importorskip("torch")
    from solver.profiles.sources.pytorch import collect

    root = tmp_path_factory.mktemp("profiles")
    paths = collect(HW, FW, out_root=root, families=FAMS, quick=True, device="cpu",
                    repeats=5, warmup=1, processes=2, threads=1, log=lambda _m: None)
    return root, paths


# ---- without PyTorch --------------------------------------------------------------------------


def test_importing_the_package_does_not_import_torch():
    code = ("import sys, solver.cli.main, solver.profiles, solver.profiles.sources.pytorch, solver.cli.profiles; "
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    r = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0, r.stderr


def test_missing_torch_is_one_clear_line_exit_2(monkeypatch, capsys, tmp_path):
    from solver.cli.main import main

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    rc = main(["profiles", "collect", "--hardware", HW, "--quick", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err == "error: PyTorch is needed: pip install 'fleetplan[collect]'"
    assert not any(tmp_path.iterdir())


def test_bad_arguments_are_input_errors(tmp_path):
    from solver.profiles.sources.pytorch import collect

    with pytest.raises(InputError, match="unknown operator family 'matmul'"):
        collect(HW, out_root=tmp_path, families="gemm,matmul", quick=True)
    with pytest.raises(InputError, match="hardware name"):
        collect("../escape", out_root=tmp_path, quick=True)
    with pytest.raises(InputError, match="GEMM dtype 'int4'"):
        collect(HW, out_root=tmp_path, dtypes="int4", quick=True)


# ---- measuring on the CPU ---------------------------------------------------------------------


def test_every_family_is_written_with_valid_provenance(collected):
    root, paths = collected
    folder = root / HW / FW
    assert [p.name for p in paths] == [f"{f}.csv" for f in FAMS]
    assert sorted(available(root)) == sorted((HW, FW, f) for f in FAMS)
    import torch

    for family in FAMS:
        prov = read_provenance(folder / f"{family}.meta.json")  # validates (unknown keys refused)
        assert prov.family == family and prov.hardware == HW and prov.framework == FW
        assert prov.framework_version == torch.__version__
        assert prov.software["torch"] == torch.__version__
        assert prov.source is None  # first-party
        assert prov.collected_on and len(prov.collected_on) == 10
        assert prov.collection_method.startswith("fleetplan profiles collect on ")
        assert set(prov.columns) == set(FAMILIES[family].columns)
        assert prov.licence and prov.converter.startswith("fleetplan solver.profiles.collect/")
        table = load_table(csv_path_of(folder, family))  # hash and columns checked
        assert len(table) == prov.rows > 0
        assert (table.columns["latency_us"] > 0).all()
    comm = read_provenance(folder / "collectives.meta.json")
    assert comm.software["backend"] == "gloo"


def test_grids_and_keys_match_the_shipped_conventions(collected):
    root, _ = collected
    folder = root / HW / FW
    gemm = _rows(folder / "gemm.csv")
    assert len(gemm) == 3 * 4
    assert {r["dtype"] for r in gemm} == {"bf16"}  # this CPU build has bf16 matmul
    ctx = _rows(folder / "attention_context.csv")
    assert {(r["num_heads"], r["num_kv_heads"], r["head_dim"]) for r in ctx} == {("4", "2", "64")}
    assert len(ctx) == 4 and len(_rows(folder / "attention_generation.csv")) == 4
    ar = _rows(folder / "allreduce.csv")
    assert {(r["dtype"], r["num_gpus"]) for r in ar} == {("bf16", "2")} and len(ar) == 3
    coll = _rows(folder / "collectives.csv")
    assert {r["op"] for r in coll} == {"all_reduce", "all_gather", "reduce_scatter", "alltoall"}
    assert {(r["dtype"], r["num_gpus"]) for r in coll} == {("fp16", "2")}


def test_gemm_latency_grows_with_m(collected):
    root, _ = collected
    rows = _rows(root / HW / FW / "gemm.csv")
    lat = {(int(r["m"]), int(r["n"]), int(r["k"])): float(r["latency_us"]) for r in rows}
    ms = sorted({m for m, _, _ in lat})
    n = k = max(n for _, n, _ in lat)
    # 256x the FLOPs at the largest (n, k): far above timer noise
    assert lat[(ms[-1], n, k)] > 1.5 * lat[(ms[0], n, k)], lat
    # and not lower at the largest m for any (n, k)
    for (m, nn, kk), t in lat.items():
        if m == ms[0]:
            assert lat[(ms[-1], nn, kk)] > 0.8 * t, lat


def test_loader_answers_measured_points(collected):
    from solver.profiles import MEASURED

    root, _ = collected
    folder = root / HW / FW
    prof = load_tables(_card(), FW, root=root)
    assert set(prof.tables) == set(FAMS) - {"collectives"}  # written, not asked by the model

    g = _rows(folder / "gemm.csv")[-1]
    est = prof.gemm(m=int(g["m"]), n=int(g["n"]), k=int(g["k"]), precision="bf16")
    assert int(est.source) == MEASURED
    assert float(est.seconds) == pytest.approx(float(g["latency_us"]) * 1e-6, rel=1e-9)

    a = _rows(folder / "attention_context.csv")[1]
    est = prof.attention_context(int(a["batch"]), int(a["isl_tokens"]), 4, 2, 64)
    assert int(est.source) == MEASURED
    assert float(est.seconds) == pytest.approx(float(a["latency_us"]) * 1e-6, rel=1e-9)

    d = _rows(folder / "attention_generation.csv")[2]
    est = prof.attention_generation(int(d["batch"]), int(d["kv_tokens"]), 4, 2, 64)
    assert int(est.source) == MEASURED
    assert float(est.seconds) == pytest.approx(float(d["latency_us"]) * 1e-6, rel=1e-9)

    r = _rows(folder / "allreduce.csv")[0]
    est = prof.allreduce(int(r["message_bytes"]), 2)
    assert int(est.source) == MEASURED
    assert float(est.seconds) == pytest.approx(float(r["latency_us"]) * 1e-6, rel=1e-9)

    # between measured m: interpolated, between its neighbours
    from solver.profiles import INTERPOLATED

    est = prof.gemm(m=64, n=256, k=256, precision="bf16")
    assert int(est.source) == INTERPOLATED and float(est.seconds) > 0


def test_fp8_alone_is_refused_where_unsupported(tmp_path):
    torch = pytest.importorskip("torch")
    from solver.profiles.sources.pytorch import CollectError, collect

    with pytest.raises(CollectError, match="none of the dtypes fp8"):
        collect(HW, out_root=tmp_path, families="gemm", dtypes="fp8", quick=True,
                device="cpu", log=lambda _m: None)
    assert torch is not None


def test_cli_collect_then_check(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "prof"
    r = subprocess.run(
        [sys.executable, "-m", "solver", "profiles", "collect", "--hardware", "h100-sxm",
         "--quick", "--device", "cpu", "--threads", "1", "--repeats", "3", "--warmup", "1",
         "--families", "gemm,attention_generation", "--gzip", "--out", str(out)],
        env=_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False,
    )
    assert r.returncode == 0, r.stderr
    assert "2 tables under" in r.stdout
    folder = out / "h100-sxm" / FW
    assert sorted(p.name for p in folder.iterdir()) == [
        "attention_generation.csv.gz", "attention_generation.meta.json",
        "gemm.csv.gz", "gemm.meta.json",
    ]
    meta = json.loads((folder / "gemm.meta.json").read_text())
    assert meta["rows"] == 12 and meta["software"]["cpu_threads"] == "1"

    ck = subprocess.run([sys.executable, "-m", "solver", "profiles", "check", "--root", str(out)],
                        env=_env(), capture_output=True, text=True, timeout=120, check=False)
    assert ck.returncode == 0, ck.stderr
    assert "2 profile tables" in ck.stdout

    # a tampered table fails the check
    (folder / "gemm.meta.json").write_text(json.dumps(meta | {"rows": 11}))
    ck = subprocess.run([sys.executable, "-m", "solver", "profiles", "check", "--root", str(out)],
                        env=_env(), capture_output=True, text=True, timeout=120, check=False)
    assert ck.returncode == 2 and "gemm.csv.gz" in ck.stderr
