"""The aiconfigurator-core importer and the `profiles` command.

The conversion tests run only where aiconfigurator-core's data and a Parquet reader are found
(AIC_SYSTEMS_DIR, default /tmp/aicvenv/.../aiconfigurator_core/systems, or the installed
package); they check that converting the same inputs gives the shipped files byte for byte.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
from pathlib import Path

import pytest

from solver.cli import profiles as cli
from solver.errors import InputError
from solver.perf.operators.tables import load_tables
from solver.profiles.format import available, load_table, read_provenance, shipped_root

DEFAULT_AIC = "/tmp/aicvenv/lib/python3.11/site-packages/aiconfigurator_core/systems"


def _aic_systems() -> Path | None:
    env = os.environ.get("AIC_SYSTEMS_DIR", DEFAULT_AIC)
    if env and (Path(env) / "data").is_dir():
        return Path(env)
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            if (Path(loc) / "systems" / "data").is_dir():
                return Path(loc) / "systems"
    return None


def _parquet_reader() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


AIC = _aic_systems()
needs_aic = pytest.mark.skipif(AIC is None or not _parquet_reader(),
                               reason="aiconfigurator-core data or pyarrow not available")
SHIPPED = sorted({(hw, fw) for hw, fw, _ in available(shipped_root())})


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fleetplan")
    sub = p.add_subparsers(dest="command", required=True)
    cli.add_parser(sub)
    return p


@needs_aic
@pytest.mark.parametrize("hardware,framework", SHIPPED)
def test_conversion_reproduces_the_shipped_files(hardware, framework):
    from solver.profiles.sources.aic import convert_aic, package_version

    folder = shipped_root() / hardware / framework
    gemm_meta = read_provenance(folder / "gemm.meta.json")
    if package_version(AIC) != gemm_meta.source.package_version:
        pytest.skip(f"aiconfigurator-core {package_version(AIC)} here, shipped from "
                    f"{gemm_meta.source.package_version}")
    from solver.profiles.sources.aic.source import SYSTEM_TO_HARDWARE

    system = {hw: sys_ for sys_, hw in SYSTEM_TO_HARDWARE.items()}.get(hardware, hardware.replace("-", "_"))
    tables = convert_aic(system, framework,
                         version=gemm_meta.framework_version, source=AIC)
    assert {t.family for t in tables} == {fam for hw, fw, fam in available(shipped_root())
                                          if (hw, fw) == (hardware, framework)}
    for t in tables:
        shipped = load_table(next(folder.glob(f"{t.family}.csv*")))
        text = gzip.decompress(shipped.path.read_bytes()).decode() if shipped.path.name.endswith(".gz") \
            else shipped.path.read_text()
        assert t.text == text, t.family
        assert t.provenance == shipped.provenance, t.family


@needs_aic
def test_import_writes_loadable_profiles(tmp_path):
    from solver.profiles.sources.aic import import_aic

    paths = import_aic("h100_sxm", "sglang", source=AIC, out_dir=tmp_path,
                       models=["llama-3.1-8b"])
    assert {p.name for p in paths} >= {"gemm.csv", "attention_context.csv", "attention_generation.csv"}
    assert "moe_experts.csv" not in {p.name for p in paths}  # a dense card needs no MoE table
    for p in paths:
        t = load_table(p)
        assert t.provenance.framework in ("sglang", "nccl")
        assert t.provenance.source.file_sha256 and len(t.provenance.source.file_sha256) == 64
    prof = load_tables("h100-sxm", "sglang", root=tmp_path)
    est = prof.gemm([16.0], 6144, 4096, "bf16")  # Llama-3.1-8B QKV at TP 1
    assert est.source[0] <= 1
    # the 8B-only filter keeps fewer shapes than the shipped all-cards one
    assert load_table(tmp_path / "h100-sxm" / "sglang" / "gemm.csv").provenance.rows < 20000


@needs_aic
def test_moe_import_keeps_the_cards_shapes_balanced_routing_and_two_formats(tmp_path):
    from solver.profiles.sources.aic import import_aic, read_parquet

    paths = import_aic("h100_sxm", "trtllm", version="1.3.0rc20", source=AIC, out_dir=tmp_path,
                       models=["qwen3-235b-a22b"])
    t = load_table(next(p for p in paths if p.name == "moe_experts.csv"))
    c = t.columns
    assert set(c["distribution"]) == {"balanced"} and set(c["dtype"]) == {"bf16", "fp8_block"}
    assert set(zip(c["hidden_size"], c["inter_size"], c["topk"], c["num_experts"])) == {(4096, 1536, 8, 128)}
    # every balanced bf16 / fp8_block row of that shape in the source, latency ms -> us
    src = read_parquet(AIC / "data/h100_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet")
    keep = [i for i in range(len(src["latency"]))
            if src["distribution"][i] == "balanced" and src["moe_dtype"][i] in ("bfloat16", "fp8_block")
            and (src["hidden_size"][i], src["inter_size"][i], src["topk"][i], src["num_experts"][i])
            == (4096, 1536, 8, 128)]
    assert t.provenance.rows == len(keep) > 1000
    i = keep[0]
    row = ((c["num_tokens"] == src["num_tokens"][i]) & (c["moe_tp"] == src["moe_tp_size"][i])
           & (c["moe_ep"] == src["moe_ep_size"][i])
           & (c["dtype"] == {"bfloat16": "bf16"}.get(src["moe_dtype"][i], src["moe_dtype"][i])))
    assert c["latency_us"][row][0] == pytest.approx(src["latency"][i] * 1000, rel=1e-4)
    assert "balanced only" in t.provenance.selection and "Not timed" in t.provenance.collection_method


@needs_aic
def test_import_errors_are_input_errors(tmp_path):
    from solver.profiles.sources.aic import import_aic

    with pytest.raises(InputError, match="no system 'h999_sxm'"):
        import_aic("h999_sxm", "vllm", source=AIC, out_dir=tmp_path)
    with pytest.raises(InputError, match="no version 0.0.1"):
        import_aic("h100_sxm", "vllm", version="0.0.1", source=AIC, out_dir=tmp_path)


@needs_aic
def test_cli_import_aic(tmp_path, capsys):
    args = _parser().parse_args(["profiles", "import-aic", "--system", "h200_sxm", "--framework",
                                 "trtllm", "--source", str(AIC), "--out", str(tmp_path),
                                 "--models", "qwen3-32b", "--gzip"])
    assert cli.run(args) == 0
    out = capsys.readouterr().out
    assert "gemm.csv.gz" in out and "trtllm 1.3.0rc20" in out
    assert (tmp_path / "h200-sxm" / "trtllm" / "attention_generation.meta.json").is_file()


def test_import_without_the_source_is_a_clear_error(tmp_path):
    from solver.profiles.sources.aic import find_systems_dir

    with pytest.raises(InputError, match="not an aiconfigurator-core systems folder"):
        find_systems_dir(tmp_path)
    args = _parser().parse_args(["profiles", "import-aic", "--system", "h100_sxm", "--framework",
                                 "vllm", "--source", str(tmp_path)])
    with pytest.raises(InputError):
        cli.run(args)


def test_cli_list_and_check(capsys):
    assert cli.run(_parser().parse_args(["profiles", "list", "--format", "json"])) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"h100-sxm", "h200-sxm"} <= {r["hardware"] for r in rows}
    assert all(r["licence"] == "Apache-2.0" for r in rows)
    assert cli.run(_parser().parse_args(["profiles", "list"])) == 0
    assert "aiconfigurator-core" in capsys.readouterr().out
    assert cli.run(_parser().parse_args(["profiles", "check"])) == 0
    assert "hashes and columns ok" in capsys.readouterr().out


def test_cli_check_names_a_tampered_file(tmp_path):
    import shutil

    shutil.copytree(shipped_root() / "h100-sxm" / "vllm", tmp_path / "h100-sxm" / "vllm")
    meta = tmp_path / "h100-sxm" / "vllm" / "allreduce.meta.json"
    doc = json.loads(meta.read_text())
    doc["content_sha256"] = "0" * 64
    meta.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="allreduce.csv.gz: content hash mismatch"):
        cli.run(_parser().parse_args(["profiles", "check", "--root", str(tmp_path)]))
