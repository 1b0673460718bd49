"""How InferenceX's scripts launched TensorRT-LLM and SGLang for the measured rows it produced,
where the rows do not say (`replay_rows` applies it to the rows its `benchmark_tool` gives to
`inferencex`).

Each setting is read from the script version that was current when the row was measured
(the sample's `measured` date, or the engine version a script introduced), in
SemiAnalysisAI/InferenceX:

- Llama-3.1-70B (SemiAnalysisAI/InferenceX/benchmarks/70b_fp8_h200_trt_slurm.sh,
  70b_fp8_b200_trt_slurm.sh, 70b_fp4_b200_trt_slurm.sh and their _docker twins, from
  1b563c85 on 2025-09-18 to 9596d23d on 2025-10-29, the rows' date): `trtllm-serve
  --max_num_tokens 16384`, and for 1k/1k at TP below 8 `batch_wait_max_tokens_ratio: 0.9, batch_wait_timeout_iters: 20` ("will
  improve the performance", the script says).
- DeepSeek-R1 (every TensorRT-LLM script, h200 fp8 and b200 fp8/fp4, from ec90f3fe on
  2025-09-18; the rows are from 2025-11-02 on): `--max_num_tokens` = (C + ISL + 64) rounded
  up to a multiple of 64 (C the benchmark's concurrency), at least 8192 from 64af5a77 on
  2026-01-21 (the rows measured since). Under attention DP each rank schedules against it,
  so the replay's instance, which holds every rank, gets dp times that.
- DeepSeek-R1 FP8 on B200 from the TensorRT-LLM 1.2.0rc6 containers on
  (SemiAnalysisAI/InferenceX/benchmarks/dsr1_fp8_b200_trt.sh at ec7bafaa, PR 594, 2026-01-29:
  perf-changelog.yaml "Add delay batching ... for 1k1k high-concurrency"): for 1k/1k at 64
  clients or more
  `batch_wait_timeout_iters: 40, batch_wait_max_tokens_ratio: 0.8` (the engine skips it
  under attention DP).
- Every DeepSeek-R1 script with attention DP (dsr1_fp8_h200_trt.sh since c93f6ac8, 2025-09-17,
  and the B200 fp8/fp4 ones): `attention_dp_config: {enable_balance: true,
  batching_wait_iters: 0, timeout_iters: 60}`.
- DeepSeek-R1 on B200 in the TensorRT-LLM 1.2.0rc6.post3 container: the MTP scripts'
  rows. InferenceX ran its MTP configurations (dsr1-fp8-b200-trt-mtp, dsr1-fp4-b200-trt-mtp) in
  release:1.2.0rc6.post3 and the others in release:1.2.0rc6.post2 (perf-changelog.yaml: PR 642
  "Upgrade ... from release:1.1.0rc2.post2 to release:1.2.0rc6.post3" for dsr1-fp4-b200-trt-mtp;
  PRs 1488 and 1489 "off: v1.2.0rc6.post2 / mtp: v1.2.0rc6.post3"). Their scripts
  (SemiAnalysisAI/InferenceX/benchmarks/dsr1_fp8_b200_trt_mtp.sh at 5d517074, PR 632, 2026-02-05, and
  dsr1_fp4_b200_trt_mtp.sh at 0aae52d4, PR 642, 2026-02-06: the rows' dates) run
  `speculative_config: {decoding_type: MTP, num_nextn_predict_layers: 3}` (1 with attention DP),
  `--max_batch_size` = C (with attention DP, per rank: C / 8 for fp8, C / 4 for fp4, C itself
  below 8 or 4) and `--max_num_tokens` = ((MTP + 1) x max_batch_size + ISL + 64) rounded up to
  a multiple of 64, no delay batching and no 8192 floor. The acceptance rate of those runs is
  not recorded anywhere (the benchmark sends random tokens through the chat template, which
  InferenceX later found "tank spec-decode acceptance": .claude/commands/add-model-hardware.md at
  843c6254), so `validate` reports them as not predicted unless a `speculative` column gives it.
- DeepSeek-R1 TensorRT-LLM rows measured on 2026-01-14: the sweep that PR 392 ("Add MTP
  Benchmark Support for DeepSeek-R1 TRT", merged 2026-01-14 22:26 UTC as bf345672; the dated
  export's full timestamp of these runs is 2026-01-14T22:26:21Z) ran on merging, of the
  configurations its perf-changelog entry names: dsr1-fp4-b200-trt-mtp, dsr1-fp8-b200-trt-mtp,
  dsr1-fp8-h200-trt-mtp, in release:1.1.0rc2.post2 (no other NVIDIA DeepSeek-R1 configuration
  changed that day). Their scripts (benchmarks/dsr1_{fp4,fp8}_b200_trt_mtp_slurm.sh and
  dsr1_fp8_h200_trt_mtp_slurm.sh at bf345672) run MTP 3 (1 with attention DP), `--max_batch_size`
  = C (C / (TP x DP ranks) per rank with attention DP) and the same token budget formula.
- None of them sets `enable_chunked_prefill` (in the extra options or on the command line), so
  every row ran without context chunking (TensorRT-LLM's default, `enable_chunked_prefill:
  bool = False` in tensorrt_llm/llmapi/llm_args.py): a context waits until it fits whole (the
  DeepSeek budget above always leaves room for one whole prompt beside every generation).

SGLang, DeepSeek-R1 (`python3 -m sglang.launch_server` in the same repository; every version
from 2025-09-28 to the rows' last date, 2026-03-25, alike):

- B200 fp4 (SemiAnalysisAI/InferenceX/benchmarks/dsr1_fp4_b200_docker.sh, later
  single_node/dsr1_fp4_b200.sh):
  `--scheduler-recv-interval` 30 from 16 clients (10 below), `--max-running-requests 256`,
  `--chunked-prefill-size 16384`;
- B200 fp8 (dsr1_fp8_b200_docker.sh, later single_node/dsr1_fp8_b200.sh): at TP 8 the same
  receive interval, `--max-running-requests 128`, `--chunked-prefill-size 32768`; at TP 4
  (from 1d29967c, 2026-01-13) interval 10, 32 running, chunks of 8192;
- H200 fp8 (dsr1_fp8_h200_slurm.sh, later single_node/dsr1_fp8_h200.sh): no receive interval,
  `--max-running-requests` 512 at 1k/1k (256 otherwise), `--chunked-prefill-size 32768`;
- each passes `--max-prefill-tokens` equal to its chunk size (the B200 fp4 one none: SGLang's
  default, 16384, is its chunk size), which is how the replay takes a launch's token budget
  (solver/replay/schedulers/sglang.py `plan_budget`).

The settings are the engine policies' attributes (solver/replay/schedulers/trtllm.py and
sglang.py document what each does).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ADP_BALANCE = {"adp_balance": True, "adp_batching_wait_iters": 0, "adp_timeout_iters": 60}
LLAMA_70B_TOKENS = 16384
LLAMA_70B_WAIT = {"batch_wait_max_tokens_ratio": 0.9, "batch_wait_timeout_iters": 20}
DSR1_B200_FP8_WAIT = {"batch_wait_timeout_iters": 40, "batch_wait_max_tokens_ratio": 0.8}
DSR1_B200_FP8_VERSION = "1.2.0rc6"  # the container PR 594 moved dsr1_fp8_b200_trt.sh to
DSR1_FLOOR_FROM = "2026-01-21"  # 64af5a77: max_num_tokens at least DSR1_FLOOR_TOKENS
DSR1_FLOOR_TOKENS = 8192
DSR1_B200_MTP_VERSION = "1.2.0rc6.post3"  # the container of InferenceX's B200 MTP configurations
DSR1_MTP = 3  # num_nextn_predict_layers of the MTP scripts (1 with attention DP)
DSR1_B200_MTP_ADP_SHARE = {"fp8": 8, "fp4": 4}  # per-rank max_batch_size = C / this under ADP
DSR1_MTP_SWEEP = ("1.1.0rc2.post2", "2026-01-14")  # PR 392's merge sweep: the MTP configurations
DSR1_MTP_SWEEP_SYSTEMS = ("b200", "h200-sxm")


@dataclass(frozen=True)
class Launch:
    """A row's engine launch: the token budget per iteration and the running-request limit
    (None: the replay's defaults) and the policy attributes the script set."""

    max_num_tokens: int | None = None
    policy: dict[str, object] = field(default_factory=dict)
    max_seqs: int | None = None
    speculation: tuple[str, int] | None = None  # (method, tokens drafted per step) the script ran


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def trtllm_launch(model: str, hardware: str, precision: str, engine_version: str, measured: str, isl: int,
                  osl: int, concurrency: int, tp: int, dp: int) -> Launch:
    """The launch of one InferenceX TensorRT-LLM row (module docstring); `measured` the row's
    ISO date."""
    policy: dict[str, object] = {"chunked": False}
    if dp > 1:
        policy.update(ADP_BALANCE, adp_ranks=dp)
    one_k = isl == 1024 and osl == 1024
    if model == "llama-3.1-70b":
        if one_k and tp < 8:
            policy.update(LLAMA_70B_WAIT)
        return Launch(LLAMA_70B_TOKENS, policy)
    if model != "deepseek-v3":
        return Launch(None, policy)
    if hardware == "b200" and engine_version == DSR1_B200_MTP_VERSION and precision in DSR1_B200_MTP_ADP_SHARE:
        share = DSR1_B200_MTP_ADP_SHARE[precision]
        return _mtp_launch(isl, concurrency, concurrency if concurrency < share else concurrency // share, dp, policy)
    if (engine_version, measured[:10]) == DSR1_MTP_SWEEP and hardware in DSR1_MTP_SWEEP_SYSTEMS:
        return _mtp_launch(isl, concurrency, max(concurrency // (tp * dp), 1), dp, policy)
    tokens = _round_up(concurrency + isl + 64, 64)
    if measured >= DSR1_FLOOR_FROM:
        tokens = max(tokens, DSR1_FLOOR_TOKENS)
    if (hardware, precision) == ("b200", "fp8") and engine_version.startswith(DSR1_B200_FP8_VERSION):
        if one_k and concurrency >= 64 and dp == 1:
            policy.update(DSR1_B200_FP8_WAIT)
    return Launch(tokens * dp, policy)


def _mtp_launch(isl: int, concurrency: int, adp_batch: int, dp: int, policy: dict[str, object]) -> Launch:
    """InferenceX's DeepSeek-R1 MTP scripts (module docstring): MTP 3 and a batch of C, or MTP 1
    and `adp_batch` per rank with attention DP; the token budget per rank; the instance (every
    rank) holding dp times each."""
    mtp, batch = (1, adp_batch) if dp > 1 else (DSR1_MTP, concurrency)
    tokens = _round_up((mtp + 1) * batch + isl + 64, 64)
    return Launch(tokens * dp, policy, batch * dp, ("mtp", mtp))


def sglang_launch(model: str, hardware: str, precision: str, measured: str, isl: int, osl: int,
                  concurrency: int, tp: int) -> Launch:
    """The launch of one InferenceX SGLang row (module docstring)."""
    if model != "deepseek-v3":
        return Launch()
    recv = {"recv_interval": 30 if concurrency >= 16 else 10}
    if (hardware, precision) == ("b200", "fp4"):
        return Launch(16384, recv, 256)
    if (hardware, precision) == ("b200", "fp8"):
        if tp == 4:
            return Launch(8192, {"recv_interval": 10}, 32)
        return Launch(32768, recv, 128)
    if (hardware, precision) == ("h200-sxm", "fp8"):
        return Launch(32768, {}, 512 if isl == 1024 and osl == 1024 else 256)
    return Launch()
