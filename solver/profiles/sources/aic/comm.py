"""Communication: comm/<fw>/<v'>/custom_allreduce_perf.parquet -> the `allreduce` table (bf16,
the CUDA-graph variant when present) and comm/nccl/<newest>/nccl_perf.parquet -> the
`collectives` table (all ops, fp16 and int8)."""

from __future__ import annotations

from solver.profiles.format import csv_text
from solver.profiles.sources.aic.provenance import Converted, provenance
from solver.profiles.sources.aic.reading import one, read_rows, us
from solver.profiles.sources.aic.source import newest_table

COLUMNS = {
    "allreduce": {
        "dtype": "payload element type (bf16)",
        "num_gpus": "GPUs in the all-reduce (one NVLink domain)",
        "message_bytes": "bytes reduced per GPU (source message_size elements x 2)",
        "latency_us": "time of one all-reduce, microseconds",
    },
    "collectives": {
        "op": "all_reduce | all_gather | reduce_scatter | alltoall",
        "dtype": "payload element type: fp16 | int8",
        "num_gpus": "GPUs in the collective (one NVLink domain)",
        "message_bytes": "nccl-tests size in bytes (source message_size elements x element bytes)",
        "latency_us": "time of one collective, microseconds",
    },
}


def convert_allreduce(systems, system, framework, version, pkg_version) -> Converted | None:
    base = systems / "data" / system / "comm" / framework
    v = newest_table(base, "custom_allreduce_perf.parquet", at_most=version)
    if v is None:
        return None
    path = base / v / "custom_allreduce_perf.parquet"
    rows = [r for r in read_rows(path) if str(r.get("allreduce_dtype")) == "bfloat16"]
    graph = [r for r in rows if "graph" in str(r.get("kernel_source", "")).lower()]
    if graph:
        rows = graph
    kernel = one(rows, "kernel_source")
    out = sorted(("bf16", int(r["num_gpus"]), int(r["message_size"]) * 2, us(r["latency"])) for r in rows)
    text = csv_text("allreduce", out)
    prov = provenance(
        "allreduce", text, len(out), columns=COLUMNS["allreduce"], systems=systems, path=path,
        pkg_version=pkg_version, system=system, device=one(rows, "device"), framework=framework,
        version=v, extra_software={"source_framework_label": one(rows, "framework") or ""},
        method=(
            "aiconfigurator collect_all_reduce.py: the engine's all-reduce on a bf16 tensor of "
            "message_size elements, replayed many times inside one CUDA graph interleaved with a "
            "small matmul whose own time is subtracted; best of 3; milliseconds per call"
        ),
        selection=f"kernel {kernel}; bf16; all sizes and GPU counts"
        + ("" if v == version else f"; newest table at or before {framework} {version}"),
    )
    return Converted("allreduce", text, prov)


def convert_collectives(systems, system, pkg_version) -> Converted | None:
    base = systems / "data" / system / "comm" / "nccl"
    v = newest_table(base, "nccl_perf.parquet")
    if v is None:
        return None
    path = base / v / "nccl_perf.parquet"
    rows = read_rows(path)
    elem = {"half": ("fp16", 2), "int8": ("int8", 1)}
    out = sorted(
        (str(r["op_name"]), elem[r["nccl_dtype"]][0], int(r["num_gpus"]),
         int(r["message_size"]) * elem[r["nccl_dtype"]][1], us(r["latency"]))
        for r in rows if r["nccl_dtype"] in elem
    )
    text = csv_text("collectives", out)
    labels = one(rows, "version")
    prov = provenance(
        "collectives", text, len(out), columns=COLUMNS["collectives"], systems=systems, path=path,
        pkg_version=pkg_version, system=system, device=one(rows, "device"), framework="nccl",
        version=v, extra_software={"nccl_version_in_rows": labels} if labels else {},
        method=(
            "aiconfigurator collect_nccl.py: nccl-tests (<op>_perf -b size -e size -t num_gpus), "
            "out-of-place time; the source logs milliseconds and the size in elements"
        ),
        selection="all ops, fp16 and int8, all sizes and GPU counts of the newest NCCL table",
    )
    return Converted("collectives", text, prov)
