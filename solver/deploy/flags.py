"""The one place that names the flags `fleetplan deploy` and `fleetplan canary` may emit.

Each serving engine and benchmark tool is pinned to one version: the repository, the commit (and
tag where one exists) and the file in which every argument below is defined, read at that commit.
A test (tests/deploy/test_flags.py) fails on any flag or configuration key the generators emit
that is not listed here, so a flag renamed by a newer release is changed here, with its new
source, and nowhere else.

To map a new pool field (say a context-parallel degree) to an engine: add the flag to the tool's
`flags` here with its source, and a row to the engine's table in solver/deploy/engines.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Tool:
    """One pinned engine or benchmark tool.

    `flags`: flag -> the file that defines it, "" for the tool's `file`. `keys`: configuration
    keys (dotted) of a file the tool reads, -> the file that defines them."""

    name: str
    program: str  # how it is launched
    repository: str
    version: str  # the tag, or "commit" when the pin is a commit between releases
    commit: str
    file: str
    image: str  # the manifests' default image: a release tag of the pinned line, not checked against the commit (--image)
    flags: dict[str, str]
    keys: dict[str, str] = field(default_factory=dict)

    def source(self) -> str:
        return f"{self.repository}@{self.commit[:12]} ({self.version})"

    def where(self, flag: str) -> str:
        defined = self.flags.get(flag, self.keys.get(flag, ""))
        return defined or self.file


_VLLM_ARGS = ""  # vllm/engine/arg_utils.py, EngineArgs.add_cli_args
_VLLM_API = "vllm/entrypoints/openai/cli_args.py"  # make_arg_parser: the HTTP server's own flags

# vLLM: vllm-project/vllm commit 99d7eb5d6a51 (the v0.11 line: its deprecations say "will be
# removed in v0.12.0"), vllm/engine/arg_utils.py, EngineArgs.add_cli_args.
VLLM = Tool(
    name="vllm", program="vllm serve", repository="vllm-project/vllm", version="v0.11 line, commit",
    commit="99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b", file="vllm/engine/arg_utils.py",
    image="vllm/vllm-openai:v0.11.1",
    flags={
        "--tensor-parallel-size": _VLLM_ARGS, "--pipeline-parallel-size": _VLLM_ARGS,
        "--data-parallel-size": _VLLM_ARGS, "--enable-expert-parallel": _VLLM_ARGS,
        "--max-num-seqs": _VLLM_ARGS, "--max-num-batched-tokens": _VLLM_ARGS,
        "--enable-chunked-prefill": _VLLM_ARGS, "--kv-cache-dtype": _VLLM_ARGS,
        "--quantization": _VLLM_ARGS, "--dtype": _VLLM_ARGS, "--kv-transfer-config": _VLLM_ARGS,
        "--distributed-executor-backend": _VLLM_ARGS, "--served-model-name": _VLLM_ARGS,
        "--host": _VLLM_API, "--port": _VLLM_API,
    },
)

# SGLang: sgl-project/sglang commit b36e8e198b71, sglang/docs/advanced_features/server_arguments.md (the
# table generated from python/sglang/srt/server_args.py, ServerArgs.add_cli_args, at that commit).
SGLANG = Tool(
    name="sglang", program="python3 -m sglang.launch_server", repository="sgl-project/sglang",
    version="v0.5 line, commit", commit="b36e8e198b71553316b55bce53de6ecf9b3a9a47",
    file="docs/advanced_features/server_arguments.md", image="lmsysorg/sglang:v0.5.4",
    flags={f: "" for f in (
        "--model-path", "--host", "--port", "--tp-size", "--pp-size", "--dp-size", "--ep-size",
        "--enable-dp-attention", "--max-running-requests", "--chunked-prefill-size",
        "--max-prefill-tokens", "--kv-cache-dtype", "--quantization", "--dtype", "--nnodes", "--node-rank",
        "--dist-init-addr", "--disaggregation-mode", "--disaggregation-transfer-backend",
        "--served-model-name",
    )},
)

# TensorRT-LLM: NVIDIA/TensorRT-LLM commit 4c05a74891e4, tensorrt_llm/commands/serve.py (the
# click options of `trtllm-serve`); the keys of --extra_llm_api_options are LLM API arguments,
# tensorrt_llm/llmapi/llm_args.py (KvCacheConfig.dtype, CacheTransceiverConfig.backend,
# TorchLlmArgs.enable_attention_dp) at the same commit.
TRTLLM = Tool(
    name="trtllm", program="trtllm-serve", repository="NVIDIA/TensorRT-LLM", version="1.x line, commit",
    commit="4c05a74891e4df8066f08ed4ce14b0972abe4e25", file="tensorrt_llm/commands/serve.py",
    image="nvcr.io/nvidia/tensorrt-llm/release:1.1.0",
    flags={f: "" for f in (
        "--host", "--port", "--backend", "--tp_size", "--pp_size", "--ep_size", "--max_batch_size",
        "--max_num_tokens", "--enable_chunked_prefill", "--extra_llm_api_options", "--server_role",
    )},
    keys={k: "tensorrt_llm/llmapi/llm_args.py" for k in (
        "kv_cache_config.dtype", "enable_attention_dp", "cache_transceiver_config.backend",
    )},
)

# Dynamo: ai-dynamo/dynamo commit 7893f2684e43, dynamo/examples/backends/vllm/deploy/disagg.yaml (the
# DynamoGraphDeployment of a vLLM prefill/decode pair; `python3 -m dynamo.vllm` takes vLLM's
# engine arguments besides its own --disaggregation-mode; its KV connector is its own --connector
# flag, checked against nixl, lmcache, kvbm and none in components/src/dynamo/vllm/args.py at
# commit b6d5e48722e4, where vLLM's engine arguments are parsed as the worker's rest).
DYNAMO = Tool(
    name="dynamo", program="python3 -m dynamo.vllm", repository="ai-dynamo/dynamo", version="commit",
    commit="7893f2684e43bd9b8b9fac31e9582238b72f0581", file="examples/backends/vllm/deploy/disagg.yaml",
    image="nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.0",
    flags={"--model": "", "--disaggregation-mode": "",
           "--connector": "components/src/dynamo/vllm/args.py (commit b6d5e48722e4)"},
    keys={k: "" for k in (
        "apiVersion", "kind", "metadata.name", "spec.services", "componentType", "subComponentType",
        "replicas", "envFromSecret", "resources.limits.gpu", "extraPodSpec.mainContainer.image",
        "extraPodSpec.mainContainer.workingDir", "extraPodSpec.mainContainer.command",
        "extraPodSpec.mainContainer.args", "extraPodSpec.nodeSelector",
    )},
)

# llm-d: llm-d/llm-d commit 28719cebf04c, guides/pd-disaggregation/ms-pd/values.yaml (the values
# of the llm-d-modelservice Helm chart for a prefill/decode pair: routing.proxy.connector
# nixlv2, vLLM's NixlConnector in --kv-transfer-config).
LLMD = Tool(
    name="llm-d", program="helm install (llm-d-modelservice)", repository="llm-d/llm-d", version="commit",
    commit="28719cebf04c521f1422b58b4b8f5431abbc6f68", file="guides/pd-disaggregation/ms-pd/values.yaml",
    image="ghcr.io/llm-d/llm-d-cuda:v0.3.1",
    flags={},
    keys={k: "" for k in (
        "multinode", "modelArtifacts.uri", "modelArtifacts.name", "modelArtifacts.size",
        "modelArtifacts.authSecretName", "routing.servicePort", "routing.proxy.image",
        "routing.proxy.connector", "routing.proxy.secure", "decode", "prefill", "create", "replicas",
        "parallelism.tensor", "parallelism.data", "containers", "name", "image", "modelCommand",
        "args", "env", "resources.limits", "resources.requests", "nodeSelector",
    )},
)

# aiperf: the 0.13.0 release on PyPI. The names were read in ai-dynamo/aiperf at commit
# db4f6397d11e, aiperf/common/config/*.py (the CLIParameter names of each config class), and the
# release's own parser accepts the commands (tests/deploy/test_real_tools.py, where it is
# installed); the older 0.1.1 release lacks --benchmark-duration.
AIPERF = Tool(
    name="aiperf", program="aiperf profile", repository="ai-dynamo/aiperf", version="release 0.13.0 on PyPI",
    commit="db4f6397d11ee2d4cfbb41f70b2327315163dcf0", file="aiperf/common/config/",
    image="",
    flags={
        "--model": "aiperf/common/config/endpoint_config.py", "--url": "aiperf/common/config/endpoint_config.py",
        "--endpoint-type": "aiperf/common/config/endpoint_config.py",
        "--streaming": "aiperf/common/config/endpoint_config.py",
        "--tokenizer": "aiperf/common/config/tokenizer_config.py",
        "--synthetic-input-tokens-mean": "aiperf/common/config/prompt_config.py",
        "--synthetic-input-tokens-stddev": "aiperf/common/config/prompt_config.py",
        "--output-tokens-mean": "aiperf/common/config/prompt_config.py",
        "--output-tokens-stddev": "aiperf/common/config/prompt_config.py",
        "--request-rate": "aiperf/common/config/loadgen_config.py",
        "--concurrency": "aiperf/common/config/loadgen_config.py",
        "--benchmark-duration": "aiperf/common/config/loadgen_config.py",
        "--input-file": "aiperf/common/config/input_config.py",
        "--custom-dataset-type": "aiperf/common/config/input_config.py",
        "--fixed-schedule": "aiperf/common/config/input_config.py",
        "--random-seed": "aiperf/common/config/input_config.py",
        "--artifact-dir": "aiperf/common/config/output_config.py",
    },
)

# vllm bench serve: vllm-project/vllm commit def9ce85ba10, vllm/benchmarks/serve.py (add_cli_args);
# the dataset flags are defined in vllm/benchmarks/datasets.py (add_dataset_parser).
_DATASETS = "vllm/benchmarks/datasets.py"
VLLM_BENCH = Tool(
    name="vllm-bench", program="vllm bench serve", repository="vllm-project/vllm", version="commit",
    commit="def9ce85ba1079af970a58ed3d42dd861ae35d58", file="vllm/benchmarks/serve.py", image="",
    flags={
        "--backend": "", "--base-url": "", "--endpoint": "", "--model": "", "--request-rate": "",
        "--max-concurrency": "", "--num-prompts": "", "--seed": "", "--ignore-eos": "",
        "--percentile-metrics": "", "--metric-percentiles": "", "--goodput": "", "--save-result": "",
        "--result-filename": "", "--dataset-name": _DATASETS, "--dataset-path": _DATASETS,
        "--random-input-len": _DATASETS, "--random-output-len": _DATASETS,
        "--random-range-ratio": _DATASETS,
    },
)

# guidellm: vllm-project/guidellm tag v0.3.0 (commit ad9513fd5f89), src/guidellm/__main__.py
# (`guidellm benchmark run`; later releases reshaped the command line); the 0.3.0 release on
# PyPI parses the commands (tests/deploy/test_real_tools.py, where it is installed).
GUIDELLM = Tool(
    name="guidellm", program="guidellm benchmark run", repository="vllm-project/guidellm", version="v0.3.0",
    commit="ad9513fd5f8993123e9d1648cd20f532f199c72c", file="src/guidellm/__main__.py", image="",
    flags={f: "" for f in (
        "--target", "--model", "--processor", "--data", "--rate-type", "--rate", "--max-seconds",
        "--random-seed", "--output-path",
    )},
)

# Ray (the vLLM image's): ray-project/ray, python/ray/scripts/scripts.py, the `ray start` command;
# vLLM runs an instance that spans nodes on one Ray cluster (--distributed-executor-backend ray).
RAY = Tool(
    name="ray", program="ray start", repository="ray-project/ray", version="the vLLM image's",
    commit="releases/2.x", file="python/ray/scripts/scripts.py", image="",
    flags={"--head": "", "--port": "", "--address": "", "--block": ""},
)

ENGINES = {t.name: t for t in (VLLM, SGLANG, TRTLLM)}
BENCHMARKS = {"aiperf": AIPERF, "vllm": VLLM_BENCH, "guidellm": GUIDELLM}
ALL = {t.name: t for t in (VLLM, SGLANG, TRTLLM, DYNAMO, LLMD, AIPERF, VLLM_BENCH, GUIDELLM, RAY)}

# Kubernetes: the device plugins' extended resource names, by the hardware card's `vendor`.
# NVIDIA: NVIDIA/k8s-device-plugin README ("nvidia.com/gpu"); AMD: ROCm/k8s-device-plugin README
# ("amd.com/gpu"); Intel Gaudi: HabanaAI/habanalabs-k8s-device-plugin README ("habana.ai/gaudi").
GPU_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel": "habana.ai/gaudi"}
# LeaderWorkerSet: kubernetes-sigs/lws, api/leaderworkerset/v1/leaderworkerset_types.go
# (group leaderworkerset.x-k8s.io, version v1); its pods see the leader's address in
# LWS_LEADER_ADDRESS, the group size in LWS_GROUP_SIZE and their index in LWS_WORKER_INDEX.
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
