"""The profile file format: one CSV per (hardware, software stack, operator family), with a
JSON sidecar that records where the numbers came from.

Layout (the shipped ones live in `hardware/profiles/`; a user may keep their own tree anywhere
and point fleetplan at it):

    <root>/<hardware>/<framework>/<family>.csv          the measurements
    <root>/<hardware>/<framework>/<family>.meta.json    provenance (`Provenance` below)

`<hardware>` is a hardware card name (`h100-sxm`), `<framework>` the serving engine whose
kernels were timed (`vllm`, `sglang`, `trtllm`). A family's CSV has exactly the columns of
`FAMILIES[family]`, in that order, one header line, '\\n' line ends, UTF-8. Units are in the
column names; latencies are microseconds of one kernel call (GPU time, CUDA events). A CSV may
also be stored gzip-compressed as `<family>.csv.gz`; the hash is then the hash of the
decompressed text, so the two spellings of one table carry the same `content_sha256`.

The loader checks the CSV against the sidecar's `content_sha256` (SHA-256 of the CSV text as
UTF-8 bytes) and refuses a table whose hash differs: an edited or truncated table is an error
naming the file, never silently used.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solver import files
from solver.errors import InputError
from solver.schema.userfile import MAX_DATA_BYTES, MAX_DOC_BYTES, read_user_bytes, read_user_text

FORMAT = "fleetplan-profile/1"

Family = Literal[
    "gemm", "attention_context", "attention_generation", "allreduce", "collectives",
    "moe_experts", "mla_generation", "mla_context", "compute_scale",
]


@dataclass(frozen=True, slots=True)
class FamilySpec:
    """Columns of one operator family: categorical keys, numeric axes, the measured value."""

    name: str
    keys: tuple[str, ...]  # categorical (strings) or exact-match integers
    axes: tuple[str, ...]  # positive numbers interpolated in log space
    value: str = "latency_us"
    doc: str = ""

    @property
    def columns(self) -> tuple[str, ...]:
        return self.keys + self.axes + (self.value,)


FAMILIES: dict[str, FamilySpec] = {
    "gemm": FamilySpec("gemm", keys=("dtype",), axes=("m", "n", "k"), doc=(
        "Y[m,n] = X[m,k] W[k,n]. dtype: bf16 (bf16 in, bf16 out), fp8 (per-tensor scaled FP8 "
        "in, bf16 out, the input's scale computed per call), fp8_block (128x128 block-scaled "
        "FP8). m: tokens; n: output features; k: input features.")),
    "compute_scale": FamilySpec("compute_scale", keys=("dtype",), axes=("m", "k"), doc=(
        "The kernel computing a per-tensor FP8 activation's scale before a dynamically scaled "
        "GEMM of m tokens and k input features (a static input scale skips it). dtype: fp8.")),
    "attention_context": FamilySpec(
        "attention_context",
        keys=("kv_dtype", "num_heads", "num_kv_heads", "head_dim"),
        axes=("batch", "isl_tokens"),
        doc="Causal prefill attention core (no projections) of `batch` prompts of "
        "`isl_tokens` tokens each, no cached prefix, full attention (no window). Heads are per "
        "device. kv_dtype: KV cache element type (bf16 or fp8).",
    ),
    "attention_generation": FamilySpec(
        "attention_generation",
        keys=("kv_dtype", "num_heads", "num_kv_heads", "head_dim"),
        axes=("batch", "kv_tokens"),
        doc="One decode step of attention core: `batch` sequences, one new query token each, "
        "attending to `kv_tokens` cached tokens (including the new one), full attention.",
    ),
    "mla_generation": FamilySpec(
        "mla_generation",
        keys=("gemm_dtype", "kv_dtype", "num_heads"),
        axes=("batch", "kv_tokens"),
        doc="One decode step of DeepSeek-V3's whole MLA attention block (projections, norms, "
        "RoPE, latent attention, output projection) on one device with `num_heads` heads.",
    ),
    "mla_context": FamilySpec(
        "mla_context",
        keys=("gemm_dtype", "kv_dtype", "num_heads"),
        axes=("batch", "isl_tokens"),
        doc="One prefill pass of DeepSeek-V3's whole MLA attention block over `batch` prompts "
        "of `isl_tokens` on one device with `num_heads` heads.",
    ),
    "allreduce": FamilySpec(
        "allreduce",
        keys=("dtype", "num_gpus"),
        axes=("message_bytes",),
        doc="The serving engine's tensor-parallel all-reduce (custom all-reduce, CUDA-graph "
        "mode where the engine has one) of `message_bytes` per GPU among `num_gpus` GPUs of "
        "one NVLink domain.",
    ),
    "collectives": FamilySpec(
        "collectives",
        keys=("op", "dtype", "num_gpus"),
        axes=("message_bytes",),
        doc="NCCL collectives (nccl-tests, out-of-place) inside one NVLink domain: op is "
        "all_reduce, all_gather, reduce_scatter or alltoall; message_bytes is the per-GPU "
        "buffer size that nccl-tests reports as size.",
    ),
    "moe_experts": FamilySpec(
        "moe_experts",
        keys=("dtype", "distribution", "hidden_size", "inter_size", "topk", "num_experts"),
        axes=("num_tokens", "moe_tp", "moe_ep"),
        doc="The routed-expert computation of one MoE layer on one device (no router GEMM, no "
        "shared expert, no all-to-all or all-reduce): `num_tokens` tokens enter the layer "
        "across the whole MoE group (every device sees them all, as with TP or after an "
        "all-gather); the device holds num_experts / moe_ep experts (EP rank 0) of "
        "inter_size / moe_tp columns each and computes the token-expert pairs routed to them. "
        "distribution: the synthetic routing the kernel was timed under (balanced: round-robin "
        "top-k, every device the same share). dtype: bf16, fp8_block (128x128 "
        "block-scaled FP8 weights, per-token-group FP8 activations), or fp4 (NVFP4 weights "
        "and activations, Blackwell).",
    ),
}

INT_KEYS = {"num_heads", "num_kv_heads", "head_dim", "num_gpus", "hidden_size", "inter_size",
            "topk", "num_experts"}


class Source(BaseModel):
    """Where the data were taken from (for converted tables)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="upstream project or data set")
    package: str | None = Field(None, description="distribution the files came from")
    package_version: str | None = None
    released_on: str | None = Field(None, description="that version's release date: collected no later than this")
    url: str | None = None
    path: str = Field(description="file(s) inside the source, relative to its data root")
    file_sha256: str | None = Field(None, description="SHA-256 of the source file as read")
    licence: str = Field(description="SPDX identifier of the source's licence")
    copyright: str | None = None


class Provenance(BaseModel):
    """The sidecar of one profile CSV. Unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["fleetplan-profile/1"] = FORMAT
    family: Family
    hardware: str = Field(description="fleetplan hardware card name")
    device_name: str | None = Field(None, description="device as the collector reported it")
    framework: str = Field(description="serving engine or library whose kernels were timed")
    framework_version: str
    software: dict[str, str] = Field(
        default_factory=dict, description="other stack versions (CUDA, torch, NCCL, image)"
    )
    collected_on: str | None = Field(None, description="date of collection (YYYY-MM-DD) if known")
    collection_method: str = Field(description="how the numbers were measured")
    source: Source | None = Field(None, description="None for first-party measurements")
    selection: str = Field("", description="which rows of the source were kept and why")
    columns: dict[str, str] = Field(description="column -> meaning and unit")
    rows: int = Field(ge=0)
    licence: str = Field(description="SPDX identifier of the data's licence")
    content_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    converter: str | None = Field(None, description="program and version that wrote the file")
    notes: list[str] = Field(default_factory=list)

    @property
    def dated_on(self) -> str | None:  # aged from: collected_on, else the source's release
        return self.collected_on or (self.source.released_on if self.source else None)


@dataclass(frozen=True)
class ProfileTable:
    """One loaded CSV: columns as numpy arrays (strings for categorical keys)."""

    path: Path
    provenance: Provenance
    columns: dict[str, np.ndarray]

    @property
    def spec(self) -> FamilySpec:
        return FAMILIES[self.provenance.family]

    def __len__(self) -> int:
        return self.provenance.rows


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------


def _fmt(v: object) -> str:
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f.is_integer() and abs(f) < 1e15:
            return str(int(f))
        return f"{f:.5g}"
    return str(v)


def csv_text(family: str, rows: Sequence[Sequence[object]]) -> str:
    """The canonical CSV text of `rows` (already in column order and sorted)."""
    spec = FAMILIES[family]
    lines = [",".join(spec.columns)]
    for r in rows:
        if len(r) != len(spec.columns):
            raise ValueError(f"{family}: row {r!r} has {len(r)} fields, want {len(spec.columns)}")
        lines.append(",".join(_fmt(v) for v in r))
    return "\n".join(lines) + "\n"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_profile(
    folder: Path, family: str, text: str, provenance: Provenance, compress: bool = False
) -> Path:
    """Write `<folder>/<family>.csv[.gz]` and its sidecar; returns the CSV path.

    `provenance.content_sha256` must be the hash of `text` (checked)."""
    if provenance.content_sha256 != sha256_text(text):
        raise ValueError(f"{family}: provenance hash does not match the CSV text")
    files.folder(folder, "--out")
    csv_path = folder / (f"{family}.csv.gz" if compress else f"{family}.csv")
    other = folder / (f"{family}.csv" if compress else f"{family}.csv.gz")
    if other.exists():
        other.unlink()  # one spelling per table
    data = text.encode("utf-8")
    if compress:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
            gz.write(data)
        data = buf.getvalue()
    files.write_bytes(csv_path, data, "--out")
    meta = provenance.model_dump(mode="json")
    files.write_bytes(folder / f"{family}.meta.json",
                      (json.dumps(meta, indent=2, sort_keys=False) + "\n").encode("utf-8"), "--out")
    return csv_path


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------


def csv_path_of(folder: Path, family: str) -> Path | None:
    for name in (f"{family}.csv", f"{family}.csv.gz"):
        p = folder / name
        if p.is_file():
            return p
    return None


def read_text(path: Path) -> str:
    raw = read_user_bytes(path, MAX_DATA_BYTES, "profile table")
    if path.name.endswith(".gz"):
        try:  # bounded: a small file may inflate to gigabytes
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
                raw = gz.read(MAX_DATA_BYTES + 1)
        except (OSError, EOFError) as exc:
            raise InputError(f"{path}: not a readable gzip file ({exc})") from None
        if len(raw) > MAX_DATA_BYTES:
            raise InputError(f"{path}: inflates to over {MAX_DATA_BYTES:,} bytes, the limit for a profile table")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc})") from None


def read_provenance(meta_path: Path) -> Provenance:
    if not os.path.lexists(meta_path):
        raise InputError(f"{meta_path}: missing provenance sidecar")
    try:
        doc = json.loads(read_user_text(meta_path, MAX_DOC_BYTES, "provenance sidecar"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{meta_path}: not valid JSON ({exc})") from None
    try:
        return Provenance.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"]) or "(document)"
        raise InputError(f"{meta_path}: {loc}: {first['msg']}") from None


def _rows(text: str):
    """The CSV's rows. Without quotes or carriage returns (the tables fleetplan writes) the csv
    module's rows are the lines split at commas, which is three times faster; otherwise csv."""
    if '"' in text or "\r" in text:
        return csv.reader(io.StringIO(text))
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last row starts no row
        lines.pop()
    return iter([line.split(",") if line else [] for line in lines])


def _columns(body: list[list[str]], width: int) -> list[tuple[str, ...]]:
    """The rows' first `width` fields as columns (a short row's missing fields read as "");
    one transpose instead of a pass over the rows per column."""
    if set(map(len, body)) - {width}:
        body = [(r + [""] * (width - len(r)))[:width] for r in body]
    if not body:
        return [() for _ in range(width)]
    return list(zip(*body))


def load_table(csv_path: Path, verify: bool = True) -> ProfileTable:
    """Read one profile CSV and its sidecar; the hash is checked unless `verify` is False."""
    csv_path = Path(csv_path)
    name = csv_path.name
    family = name[: -len(".csv.gz")] if name.endswith(".csv.gz") else name[: -len(".csv")]
    prov = read_provenance(csv_path.with_name(f"{family}.meta.json"))
    if prov.family != family:
        raise InputError(f"{csv_path}: sidecar says family '{prov.family}', file is '{family}'")
    text = read_text(csv_path)
    if verify:
        got = sha256_text(text)
        if got != prov.content_sha256:
            raise InputError(
                f"{csv_path}: content hash mismatch (sha256 {got[:16]}..., provenance says "
                f"{prov.content_sha256[:16]}...): the table was changed after it was written"
            )
    spec = FAMILIES[family]
    reader = _rows(text)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"{csv_path}: empty file (no header)") from None
    if tuple(header) != spec.columns:
        raise InputError(
            f"{csv_path}: columns {','.join(header)}; a {family} table has {','.join(spec.columns)}"
        )
    body = list(filter(None, reader))  # the rows, less blank lines
    if len(body) != prov.rows:
        raise InputError(f"{csv_path}: {len(body)} rows, provenance says {prov.rows}")
    cols: dict[str, np.ndarray] = {}
    for c, vals in zip(spec.columns, _columns(body, len(spec.columns))):
        if c in spec.keys and c not in INT_KEYS:
            cols[c] = np.array(vals, dtype=object)
            continue
        try:
            arr = np.fromiter(map(float, vals), dtype=float, count=len(vals))
        except ValueError as exc:
            raise InputError(f"{csv_path}: column {c}: {exc}") from None
        if not np.all(np.isfinite(arr)) or (len(arr) and arr.min() <= 0 and c != "latency_us"):
            raise InputError(f"{csv_path}: column {c} must hold positive finite numbers")
        if c == "latency_us" and len(arr) and arr.min() <= 0:
            raise InputError(f"{csv_path}: column latency_us must be positive")
        cols[c] = arr
    return ProfileTable(csv_path, prov, cols)


# ---------------------------------------------------------------------------------------------
# where profiles live
# ---------------------------------------------------------------------------------------------


def shipped_root() -> Path:
    """`hardware/profiles/` of the checkout, or `solver/_data/hardware/profiles` installed."""
    from solver.catalog.shipped import data_dir

    return data_dir("hardware") / "profiles"


def default_root() -> Path:
    """FLEETPLAN_PROFILES when set (a user's own tree), else the shipped profiles."""
    env = os.environ.get("FLEETPLAN_PROFILES")
    return Path(env) if env else shipped_root()


def profile_folder(hardware: str, framework: str, root: Path | str | None = None) -> Path:
    return Path(root if root is not None else default_root()) / hardware / framework


def available(root: Path | str | None = None) -> list[tuple[str, str, str]]:
    """(hardware, framework, family) of every table under `root`."""
    base = Path(root if root is not None else default_root())
    out = []
    if not base.is_dir():
        return out
    for meta in sorted(base.glob("*/*/*.meta.json")):
        family = meta.name[: -len(".meta.json")]
        if family in FAMILIES and csv_path_of(meta.parent, family) is not None:
            out.append((meta.parent.parent.name, meta.parent.name, family))
    return out
