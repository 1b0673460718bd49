"""Reading aiconfigurator-core's files: Parquet tables (pyarrow, else pandas) as rows, the
`collection_meta.yaml` beside them, and the small row helpers the converters share."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable

from solver.errors import InputError


def read_parquet(path: Path) -> dict[str, list]:
    """Columns of a Parquet file as lists (pyarrow, else pandas)."""
    try:
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pydict()
    except ImportError:
        pass
    try:
        import pandas as pd

        df = pd.read_parquet(path)
        return {c: df[c].tolist() for c in df.columns}
    except ImportError:
        pass
    except Exception as exc:  # noqa: BLE001 - pandas without a Parquet engine
        raise InputError(f"{path}: cannot read Parquet ({exc}); pip install 'fleetplan[aic]'") from None
    raise InputError(f"{path}: reading Parquet needs pyarrow: pip install 'fleetplan[aic]'")


def read_rows(path: Path) -> list[dict]:
    """The rows of a Parquet file, one dict each."""
    cols = read_parquet(path)
    names = list(cols)
    return [dict(zip(names, vals)) for vals in zip(*(cols[n] for n in names))]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def collection_meta(folder: Path) -> dict:
    path = folder / "collection_meta.yaml"
    if not path.is_file():
        return {}
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return {}


def software(meta: dict) -> dict[str, str]:
    """Scalar runtime facts of a collection_meta.yaml (image, torch, CUDA, driver...)."""
    out: dict[str, str] = {}
    runtime = meta.get("runtime") or {}
    for k in ("image", "source_commit"):
        if isinstance(runtime.get(k), (str, int, float)):
            out[k] = str(runtime[k])
    abi = runtime.get("abi") or {}
    for k in ("torch", "cuda", "driver", "nccl", "nvshmem", "gpu_name", "compute_capability"):
        if isinstance(abi.get(k), (str, int, float)):
            out[k] = str(abi[k])
    if meta.get("provenance"):
        out["aic_provenance"] = str(meta["provenance"])
    return out


def collected_on(meta: dict, table: str) -> str | None:
    t = ((meta.get("tables") or {}).get(table) or {})
    v = t.get("collected_at")
    return str(v) if v else None


def dominant(rows: Iterable[dict], column: str) -> str | None:
    """The most frequent value of `column` (ties: the smallest)."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[column]] = counts.get(r[column], 0) + 1
    if not counts:
        return None
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def one(rows: list[dict], column: str) -> str | None:
    """The single value of `column`, else its values joined, else None."""
    vals = sorted({str(r[column]) for r in rows if column in r})
    return vals[0] if len(vals) == 1 else (", ".join(vals) if vals else None)


def us(ms: float) -> float:
    return float(ms) * 1000.0
