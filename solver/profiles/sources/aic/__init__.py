"""Convert the measured database of NVIDIA's aiconfigurator-core into fleetplan profiles.

    fleetplan profiles import-aic --system h200_sxm --framework vllm [--version V]
                                  [--source DIR] [--out DIR]

aiconfigurator-core (Apache-2.0, https://github.com/ai-dynamo/aiconfigurator) ships per-kernel
latency tables collected on real GPUs under `systems/data/<system>/<family>/<framework>/
<version>/*.parquet`. It is an optional extra (`pip install fleetplan[aic]`, which also brings
pyarrow to read Parquet); nothing of it is imported unless the converter runs.

What is converted (latencies: milliseconds per call in the source, microseconds here):

| fleetplan family       | source table                                   | kept                  |
|------------------------|------------------------------------------------|-----------------------|
| gemm                   | gemm/<fw>/<v>/gemm_perf.parquet                | bf16 and fp8 (per-tensor) rows of the framework's main kernel for each dtype; every m; the (n, k) pairs that bracket the shipped model cards' matrices at TP 1/2/4/8 |
| attention_context      | attention/<fw>/<v>/context_attention_perf      | full attention (window 0), bf16 math (fp8 math where the engine quantises queries with an fp8 cache), the dominant kernel; the per-device (heads, kv heads, head_dim) of the model cards (+ the nearest measured group when one is missing) |
| attention_generation   | attention/<fw>/<v>/generation_attention_perf   | as above; kv_tokens = isl + step |
| allreduce              | comm/<fw>/<v'>/custom_allreduce_perf           | bf16, CUDA-graph variant when present; v' = newest version <= v that has the table |
| collectives            | comm/nccl/<newest>/nccl_perf                   | all ops, fp16 and int8 |
| moe_experts            | moe/<fw>/<v'>/moe_perf (vllm, trtllm)          | balanced routing; bf16 and fp8_block; gated (SwiGLU) kernels; the (hidden, expert width, top-k, experts) of the MoE model cards; every measured token count, moe_tp and moe_ep; v' = newest version <= v that has the table |

`--all-shapes` keeps every GEMM shape, attention group and MoE shape (for users importing for their own
models); the shipped files use the model-card filter.

Modules: `source` (finding the data and its versions), `reading` (Parquet rows, the collection
metadata), `provenance` (the sidecar every table carries), one converter per operator family
(`gemm`, `attention`, `comm`: all-reduce and NCCL collectives, `moe`), and `driver` (convert one
system and framework, write the tables).
"""

from solver.profiles.sources.aic.driver import FRAMEWORKS, convert_aic, import_aic, summary
from solver.profiles.sources.aic.provenance import CONVERTER, Converted
from solver.profiles.sources.aic.reading import read_parquet
from solver.profiles.sources.aic.source import (
    SYSTEM_TO_HARDWARE,
    find_systems_dir,
    hardware_name,
    package_version,
    resolve_version,
)

__all__ = [
    "CONVERTER", "Converted", "FRAMEWORKS", "SYSTEM_TO_HARDWARE", "convert_aic",
    "find_systems_dir", "hardware_name", "import_aic", "package_version", "read_parquet",
    "resolve_version", "summary",
]
