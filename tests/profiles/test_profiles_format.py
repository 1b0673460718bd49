"""Profile files: provenance round trip, hash verification, tamper detection."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from solver.errors import InputError
from solver.profiles.format import (
    FAMILIES,
    Provenance,
    available,
    csv_text,
    load_table,
    read_provenance,
    sha256_text,
    shipped_root,
    write_profile,
)
from tests.support.cli import cli

ROWS = [("bf16", 1, 1024, 1024, 10.5), ("bf16", 2, 1024, 1024, 10.75), ("fp8", 1, 1024, 1024, 8.0)]


def _prov(text: str, rows: int, **kw) -> Provenance:
    base = dict(
        family="gemm", hardware="h100-sxm", framework="vllm", framework_version="0.24.0",
        collection_method="synthetic test data", columns={c: c for c in FAMILIES["gemm"].columns},
        rows=rows, licence="Apache-2.0", content_sha256=sha256_text(text),
    )
    base.update(kw)
    return Provenance(**base)


@pytest.mark.parametrize("compress", [False, True])
def test_round_trip(tmp_path, compress):
    text = csv_text("gemm", ROWS)
    prov = _prov(text, len(ROWS), software={"cuda": "12.8"}, notes=["a note"])
    path = write_profile(tmp_path / "h100-sxm" / "vllm", "gemm", text, prov, compress=compress)
    assert path.name == ("gemm.csv.gz" if compress else "gemm.csv")
    t = load_table(path)
    assert t.provenance == prov
    assert list(t.columns["dtype"]) == ["bf16", "bf16", "fp8"]
    assert list(t.columns["latency_us"]) == [10.5, 10.75, 8.0]
    assert available(tmp_path) == [("h100-sxm", "vllm", "gemm")]
    # one spelling per table: writing the other removes the first
    write_profile(tmp_path / "h100-sxm" / "vllm", "gemm", text, prov, compress=not compress)
    assert len(list((tmp_path / "h100-sxm" / "vllm").glob("gemm.csv*"))) == 1


def test_hash_is_of_the_text_for_both_spellings(tmp_path):
    text = csv_text("gemm", ROWS)
    prov = _prov(text, len(ROWS))
    p1 = write_profile(tmp_path / "a", "gemm", text, prov, compress=False)
    p2 = write_profile(tmp_path / "b", "gemm", text, prov, compress=True)
    assert gzip.decompress(p2.read_bytes()).decode() == p1.read_text()
    assert load_table(p1).provenance.content_sha256 == load_table(p2).provenance.content_sha256


def test_tampered_csv_is_refused_naming_the_file(tmp_path):
    text = csv_text("gemm", ROWS)
    path = write_profile(tmp_path, "gemm", text, _prov(text, len(ROWS)))
    path.write_text(text.replace("10.75", "9.75"))
    with pytest.raises(InputError, match=r"gemm\.csv: content hash mismatch"):
        load_table(path)
    load_table(path, verify=False)  # explicitly unchecked reads still work


def test_tampered_shipped_table_is_refused(tmp_path):
    src = shipped_root() / "h100-sxm" / "vllm"
    dst = tmp_path / "h100-sxm" / "vllm"
    shutil.copytree(src, dst)
    gz = dst / "attention_generation.csv.gz"
    text = gzip.decompress(gz.read_bytes()).decode()
    truncated = "".join(text.splitlines(keepends=True)[:-1])  # the last row lost
    gz.write_bytes(gzip.compress(truncated.encode()))
    with pytest.raises(InputError, match="attention_generation.csv.gz"):
        load_table(gz)


def test_sidecar_is_strict(tmp_path):
    text = csv_text("gemm", ROWS)
    write_profile(tmp_path, "gemm", text, _prov(text, len(ROWS)))
    meta = tmp_path / "gemm.meta.json"
    doc = json.loads(meta.read_text())
    doc["surprise"] = 1
    meta.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"gemm\.meta\.json: surprise"):
        read_provenance(meta)
    del doc["surprise"]
    doc["rows"] = 99
    meta.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="3 rows, provenance says 99"):
        load_table(tmp_path / "gemm.csv")


def test_missing_sidecar_and_wrong_columns(tmp_path):
    (tmp_path / "gemm.csv").write_text("dtype,m,n,k,latency_us\nbf16,1,2,3,4\n")
    with pytest.raises(InputError, match="missing provenance sidecar"):
        load_table(tmp_path / "gemm.csv")
    bad = "dtype,m,n,latency_us\nbf16,1,2,4\n"
    (tmp_path / "gemm.csv").write_text(bad)
    (tmp_path / "gemm.meta.json").write_text(_prov(bad, 1).model_dump_json())
    with pytest.raises(InputError, match="columns dtype,m,n,latency_us"):
        load_table(tmp_path / "gemm.csv")


def test_write_refuses_a_wrong_hash(tmp_path):
    text = csv_text("gemm", ROWS)
    with pytest.raises(ValueError):
        write_profile(tmp_path, "gemm", text, _prov(text + "x", len(ROWS)))


def test_every_shipped_table_verifies_and_credits_its_source():
    root = shipped_root()
    tables = available(root)
    have = {(hw, fw) for hw, fw, _ in tables}
    assert {("h100-sxm", "vllm"), ("h200-sxm", "vllm")} <= have
    for hw, fw, family in tables:
        t = load_table(next((root / hw / fw).glob(f"{family}.csv*")))
        p = t.provenance
        assert p.hardware == hw and p.family == family
        assert p.source is not None and p.source.licence == "Apache-2.0"
        assert p.source.package == "aiconfigurator-core" and "NVIDIA" in (p.source.copyright or "")
        assert p.licence == "Apache-2.0" and p.rows == len(t.columns["latency_us"]) > 0
        assert set(p.columns) == set(FAMILIES[family].columns)
        assert p.device_name and {"h100-sxm": "H100", "h200-sxm": "H200", "b200": "B200"}[hw] in p.device_name
    notice = (root.parent.parent / "NOTICE")
    if notice.is_file():  # a checkout (the wheel does not carry NOTICE under hardware/)
        text = notice.read_text()
        assert "aiconfigurator-core" in text and "Apache License, Version 2.0" in text


def test_shipped_tables_are_dated_by_the_release_of_their_source():
    """aiconfigurator-core records no collection date for the shipped tables; they were collected
    no later than the release of the package version they came from (0.12.0: 2026-09-18, its
    upload to PyPI), which the sidecars carry and `profiles list` shows (issue 18)."""
    from solver.profiles.sources.aic.provenance import RELEASED_ON

    root = shipped_root()
    for hw, fw, family in available(root):
        p = read_provenance(root / hw / fw / f"{family}.meta.json")
        assert p.source.package_version == "0.12.0" and p.source.released_on == "2026-09-18"
        assert p.collected_on is None and p.dated_on == "2026-09-18"
    assert RELEASED_ON["0.12.0"] == "2026-09-18"  # what the importer writes into a new sidecar
    r = cli("profiles", "list", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert {x["collected"] for x in json.loads(r.stdout)} == {"by 2026-09-18"}
    r = cli("profiles", "list")
    head, *rows = r.stdout.splitlines()
    assert "collected" in head.split() and rows and all("by 2026-09-18" in x for x in rows)


def test_shipped_size_is_modest():
    total = sum(p.stat().st_size for p in shipped_root().rglob("*") if p.is_file())
    assert total < 3 * 1024 * 1024, total


@pytest.mark.parametrize("text", [
    "a,b\n1,2\n\n3,4", "a,b\n1,2\n", "", "\n\na,b\n", " a , b \n1,\n", "a,b\r\n1,2\r\n", 'a,"b,c"\n1,2\n',
])
def test_rows_are_the_csv_modules(text):
    """The fast split of unquoted CSV text gives exactly csv.reader's rows (quoted or CR text
    goes to csv.reader itself)."""
    import csv
    import io

    from solver.profiles.format import _rows
    assert list(_rows(text)) == list(csv.reader(io.StringIO(text)))


def test_columns_pad_short_rows_and_ignore_extra_fields():
    from solver.profiles.format import _columns
    assert _columns([["1", "2"], ["3"], ["4", "5", "6"]], 2) == [("1", "3", "4"), ("2", "", "5")]
    assert _columns([], 3) == [(), (), ()]
