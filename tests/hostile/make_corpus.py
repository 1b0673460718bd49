"""Write the hostile-input corpus (tests/hostile/corpus/): `python tests/hostile/make_corpus.py`.

Every file is an input that fleetplan must refuse with exit 2 and one line naming the file, in
bounded time and memory: deep nesting, over-long number literals, non-finite and absurd numbers,
overflowing sums, wrong types, unknown and duplicate keys, alias bombs, binary garbage, invalid
UTF-8, byte-order marks, enormous sequences within the size limit, negative and zero values,
empty files, tabs, grids that explode together. The name says how it is read
(tests/hostile/test_hostile_corpus.py): `problem-*` and `grid-*` as problem files (`grid-` ones
through the candidate grid too), `model-*` and `hardware-*` as cards, `trace-*` as request
traces, `lengths-*` as length distributions, `measured-*` as `fleetplan validate` CSVs,
`result-*` as result documents. Generation is deterministic (a fixed seed), so the files are
committed and re-running this script reproduces them byte for byte.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "corpus"

PROBLEM = (ROOT / "problems" / "llama3-70b-online.yaml").read_text()
MODEL = (ROOT / "models" / "llama-3.1-8b.yaml").read_text()
MOE = (ROOT / "models" / "deepseek-v3.yaml").read_text()
HARDWARE = (ROOT / "hardware" / "h100-sxm.yaml").read_text()

INLINE_MODEL = """name: hostile-{i}
objective: min_cost
services:
  - name: chat
    model:
      name: inline-model
      source: hostile corpus
      num_layers: {layers}
      hidden_size: {hidden}
      intermediate_size: 14336
      vocab_size: 128256
      attention: {{num_heads: 32, num_kv_heads: 8, head_dim: 128}}
      max_context_tokens: 131072
    workload: {{qps: 10, input_tokens: 1024, output_tokens: 128}}
hardware:
  - type: h100-sxm
"""

INLINE_HW = """name: hostile-hw
services:
  - name: chat
    model: llama-3.1-8b
    workload: {{qps: 10, input_tokens: 1024, output_tokens: 128}}
hardware:
  - type:
      name: inline-hw
      vendor: nobody
      source: hostile corpus
      memory_gib: {memory}
      hbm_bandwidth_tb_s: 3.35
      peak_tflops: {{bf16: 989}}
      scale_up: {{domain_devices: 8, bandwidth_gb_s: 450, latency_us: 8}}
      scale_out: {{bandwidth_gb_s: 50, latency_us: 10}}
      devices_per_node: {per_node}
      power_w: {power}
      price_per_hour: {price}
      price_source: none
      price_date: "2024-01-01"
      efficiency:
        gemm: {{bf16: 0.8}}
        memory: 0.8
        scale_up: 0.8
        scale_out: 0.8
        kernel_overhead_us: 3
"""


def sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def problems() -> dict[str, str | bytes]:
    p: dict[str, str | bytes] = {}
    # deep nesting, flow and block, at and far beyond the depth limit
    for depth in (65, 100, 300, 1000, 5000):
        p[f"deep-flow-list-{depth}"] = PROBLEM + "search:\n  tp: " + "[" * depth + "1" + "]" * depth + "\n"
    for depth in (70, 400):
        p[f"deep-flow-map-{depth}"] = PROBLEM + "engine: " + "{a: " * depth + "1" + "}" * depth + "\n"
    p["deep-block-map-200"] = PROBLEM + "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n"
    p["deep-block-list-150"] = PROBLEM + "search:\n  tp:\n" + "".join("  " * (i + 1) + "-\n" for i in range(150)) + "  " * 151 + "- 1\n"
    p["deep-mixed-500"] = PROBLEM + "sweep: " + "[{a: " * 250 + "1" + "}]" * 250 + "\n"
    # integer and float literals beyond Python's int-string limit and float range
    for digits in (4301, 5000, 100_000):
        p[f"bigint-qps-{digits}"] = sub(PROBLEM, "qps: 200", "qps: " + "9" * digits)
    p["bigint-supply-5000"] = sub(PROBLEM, "price_per_hour: 2.50", "supply: " + "7" * 5000)
    p["bigint-negative-5000"] = sub(PROBLEM, "qps: 200", "qps: -" + "3" * 5000)
    p["bigint-in-list"] = PROBLEM + "search:\n  tp: [1, " + "8" * 4400 + "]\n"
    p["bigint-hex"] = sub(PROBLEM, "qps: 200", "qps: 0x" + "f" * 4000)
    p["bigint-underscored"] = sub(PROBLEM, "qps: 200", "qps: " + "1_000" * 1000)
    p["bigfloat-mantissa"] = sub(PROBLEM, "qps: 200", "qps: 1." + "5" * 300)
    p["float-over-range-qps"] = sub(PROBLEM, "qps: 200", "qps: 1.0e+400")
    p["float-over-range-budget"] = sub(PROBLEM, "objective: min_cost", "objective: min_cost\nbudget_per_hour: 9.9e+999")
    p["float-1e309-string"] = sub(PROBLEM, "input_tokens: 2048", "input_tokens: 1e309")
    p["inf-qps"] = sub(PROBLEM, "qps: 200", "qps: .inf")
    p["neg-inf-margin"] = sub(PROBLEM, "safety_margin: 0.05", "safety_margin: -.inf")
    p["nan-ttft"] = sub(PROBLEM, "ttft_ms: {p50: 500, p99: 1500}", "ttft_ms: {p50: .nan, p99: 1500}")
    p["nan-price"] = sub(PROBLEM, "price_per_hour: 2.50", "price_per_hour: .NaN")
    p["inf-power-kw"] = sub(PROBLEM, "safety_margin: 0.05", "safety_margin: 0.05\n  power_kw: .Inf")
    # finite but absurd
    p["huge-price-1e300"] = sub(PROBLEM, "price_per_hour: 2.50", "price_per_hour: 1.0e+300")
    p["huge-power-1e308"] = sub(PROBLEM, "price_per_hour: 2.50", "price_per_hour: 2.50\n    power_w: 1.0e+308")
    p["huge-supply-1e30"] = sub(PROBLEM, "price_per_hour: 2.50", "supply: " + "1" + "0" * 30)
    p["huge-budget-1e200"] = sub(PROBLEM, "objective: min_cost", "objective: min_cost\nbudget_per_hour: 1.0e+200")
    p["huge-qps-1e30"] = sub(PROBLEM, "qps: 200", "qps: 1.0e+30")
    p["huge-tokens"] = sub(PROBLEM, "input_tokens: 2048", "input_tokens: 123456789012345")
    p["huge-max-context"] = sub(PROBLEM, "max_context: 8192", "max_context: 99999999999999999999")
    p["huge-power-cap"] = sub(PROBLEM, "price_per_hour: 2.50", "price_per_hour: 2.50\n    power_caps_w: [700, 1.0e+250]")
    # histogram sums that overflow a float
    p["histogram-weights-overflow"] = sub(PROBLEM, "input_tokens: 2048",
                                          "input_tokens: {histogram: [[100, 1.0e+308], [200, 1.0e+308]]}")
    p["histogram-weight-max-float"] = sub(PROBLEM, "output_tokens: 150",
                                          "output_tokens: {histogram: [[10, 1.7e+308], [20, 1.7e+308], [30, 1]]}")
    p["histogram-tokens-1e300"] = sub(PROBLEM, "input_tokens: 2048", "input_tokens: {histogram: [[1.0e+300, 1]]}")
    p["histogram-zero-weight"] = sub(PROBLEM, "input_tokens: 2048", "input_tokens: {histogram: [[100, 0]]}")
    p["histogram-empty"] = sub(PROBLEM, "input_tokens: 2048", "input_tokens: {histogram: []}")
    p["histogram-not-pairs"] = sub(PROBLEM, "input_tokens: 2048", "input_tokens: {histogram: [100, 200]}")
    # inline cards with absurd sizes
    for name, layers, hidden in (("hidden-1e309", 32, "1e309"), ("hidden-1e20", 32, "100000000000000000000"),
                                 ("hidden-inf", 32, ".inf"), ("hidden-float", 32, "4096.5"),
                                 ("layers-1e9", 1_000_000_000, 4096), ("layers-zero", 0, 4096),
                                 ("hidden-negative", 32, -4096)):
        p[f"inline-model-{name}"] = INLINE_MODEL.format(i=name, layers=layers, hidden=hidden)
    for name, memory, per_node, power, price in (("power-1e308", 80, 8, "1.0e+308", 2.5),
                                                 ("price-1e300", 80, 8, 700, "1.0e+300"),
                                                 ("memory-inf", ".inf", 8, 700, 2.5),
                                                 ("memory-1e40", "1.0e+40", 8, 700, 2.5),
                                                 ("per-node-1e9", 80, 1_000_000_000, 700, 2.5),
                                                 ("power-zero", 80, 8, 0, 2.5)):
        p[f"inline-hw-{name}"] = INLINE_HW.format(memory=memory, per_node=per_node, power=power, price=price)
    moe_inline = INLINE_MODEL.format(i="moe", layers=32, hidden=4096).replace(
        "      max_context_tokens: 131072\n",
        "      max_context_tokens: 131072\n      moe: {num_experts: NUM, experts_per_token: 8, expert_intermediate_size: 2048}\n")
    for e in ("10000000", "1000000000", "1"):
        p[f"inline-moe-experts-{e}"] = moe_inline.replace("NUM", e)
    return p


def problems_types_and_keys() -> dict[str, str | bytes]:
    p: dict[str, str | bytes] = {}
    # wrong types
    p["type-qps-string"] = sub(PROBLEM, "qps: 200", "qps: fast")
    p["type-services-mapping"] = sub(PROBLEM, "services:\n  - name: chat", "services:\n  chat:\n    name: chat")
    p["type-hardware-number"] = PROBLEM.split("hardware:")[0] + "hardware: 3\n"
    p["type-tp-string"] = PROBLEM + "search:\n  tp: '1,2,4'\n"
    p["type-name-list"] = sub(PROBLEM, "name: llama3-70b-online", "name: [a, b]")
    p["type-slo-list"] = sub(PROBLEM, "ttft_ms: {p50: 500, p99: 1500}", "ttft_ms: [500, 1500]")
    p["type-objective-int"] = sub(PROBLEM, "objective: min_cost", "objective: 7")
    p["type-services-null"] = PROBLEM.split("services:")[0] + "services: null\n"
    p["type-top-level-list"] = "- " + PROBLEM.replace("\n", "\n  ")
    p["type-top-level-scalar"] = "42\n"
    p["type-top-level-string"] = "'just a string'\n"
    p["type-bool-supply"] = sub(PROBLEM, "price_per_hour: 2.50", "supply: yes")
    p["type-date-name"] = sub(PROBLEM, "name: llama3-70b-online", "name: 2024-02-30")
    p["type-binary-tag"] = sub(PROBLEM, "name: llama3-70b-online", "name: !!binary aGVsbG8=")
    p["type-python-tag"] = sub(PROBLEM, "name: llama3-70b-online", "name: !!python/object/apply:os.system ['true']")
    p["type-unknown-tag"] = sub(PROBLEM, "qps: 200", "qps: !money 200")
    p["type-set"] = sub(PROBLEM, "precision: fp8", "precision: !!set {fp8: null}")
    p["type-key-list"] = sub(PROBLEM, "objective: min_cost", "? [a, b]\n: 1\nobjective: min_cost")
    p["type-key-int"] = sub(PROBLEM, "objective: min_cost", "objective: min_cost\n12: twelve")
    # unknown keys (typos)
    for old, new in (("ttft_ms:", "ttft:"), ("tpot_ms:", "tpot:"), ("qps:", "qsp:"), ("services:", "servics:"),
                     ("objective:", "objectve:"), ("price_per_hour:", "price_per_huor:"),
                     ("safety_margin:", "saftey_margin:"), ("max_context:", "max_ctx:")):
        p[f"unknown-key-{new.rstrip(':')}"] = sub(PROBLEM, old, new)
    p["unknown-key-long"] = sub(PROBLEM, "objective: min_cost", "objective: min_cost\n" + "k" * 20_000 + ": 1")
    # duplicate keys
    p["duplicate-top"] = sub(PROBLEM, "objective: min_cost", "objective: min_cost\nobjective: max_throughput")
    p["duplicate-nested"] = sub(PROBLEM, "qps: 200", "qps: 200\n      qps: 300")
    p["duplicate-flow"] = sub(PROBLEM, "ttft_ms: {p50: 500, p99: 1500}", "ttft_ms: {p50: 500, p50: 600}")
    # unknown names (typos)
    p["unknown-model-name"] = sub(PROBLEM, "model: llama-3.1-70b", "model: llama-3.1-7b")
    p["unknown-hardware-name"] = sub(PROBLEM, "type: h100-sxm", "type: h100-sxn")
    p["unknown-trace-name"] = sub(PROBLEM, "qps: 200", "trace: azure-llm-2023-cod")
    # negative and zero values
    for name, old, new in (("qps-zero", "qps: 200", "qps: 0"), ("qps-negative", "qps: 200", "qps: -5"),
                           ("tokens-zero", "input_tokens: 2048", "input_tokens: 0"),
                           ("context-zero", "max_context: 8192", "max_context: 0"),
                           ("ttft-zero", "ttft_ms: {p50: 500, p99: 1500}", "ttft_ms: 0"),
                           ("price-negative", "price_per_hour: 2.50", "price_per_hour: -2.5"),
                           ("supply-negative", "price_per_hour: 2.50", "supply: -1"),
                           ("margin-negative", "safety_margin: 0.05", "safety_margin: -0.5")):
        p[f"value-{name}"] = sub(PROBLEM, old, new)
    p["value-tp-zero"] = PROBLEM + "search:\n  tp: [0, 1]\n"
    p["value-batch-negative"] = PROBLEM + "search:\n  batch: [-1, 8]\n"
    return p


def problems_structure() -> dict[str, str | bytes]:
    p: dict[str, str | bytes] = {}
    # alias bombs and alias misuse
    laughs = "lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for i in range(1, 10):
        laughs += f"lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * 10) + "]\n"
    p["alias-billion-laughs"] = PROBLEM + "engine:\n  " + laughs.replace("\n", "\n  ").rstrip() + "\n"
    p["alias-billion-laughs-top"] = laughs + PROBLEM
    p["alias-fan-out"] = "anchors: &x [1, 2, 3]\n" + PROBLEM + "sweep:\n  budget_per_hour: [" + ", ".join(["*x"] * 60_000) + "]\n"
    p["alias-wide-mapping"] = "a: &a {" + ", ".join(f"k{i}: {i}" for i in range(3000)) + "}\n" + \
        "b: [" + ", ".join(["*a"] * 200) + "]\n" + PROBLEM
    p["alias-recursive"] = PROBLEM + "search: &s {tp: *s}\n"
    p["alias-recursive-list"] = PROBLEM + "sweep: &s [*s, *s]\n"
    p["alias-undefined"] = sub(PROBLEM, "qps: 200", "qps: *nowhere")
    p["alias-duplicate-anchor"] = sub(PROBLEM, "qps: 200", "qps: &a 200\n      max_batch: &a 3")
    p["alias-merge-bomb"] = "base: &b {x: 1}\n" + "".join(f"m{i}: &m{i} {{<<: *{'b' if i == 0 else 'm' + str(i - 1)}, y{i}: 1}}\n" for i in range(60)) + PROBLEM
    # enormous sequences within the size limit
    p["seq-sweep-1e6-values"] = PROBLEM + "sweep:\n  budget_per_hour: [" + ",".join(str(i) for i in range(1, 200_001)) + "]\n"
    p["seq-batch-60000"] = PROBLEM + "search:\n  batch: [" + ",".join(str(i) for i in range(1, 60_001)) + "]\n"
    p["seq-histogram-60000"] = sub(PROBLEM, "input_tokens: 2048", "input_tokens: {histogram: [" + ",".join(
        f"[{i},1]" for i in range(1, 60_001)) + "]}")
    p["seq-services-2000"] = PROBLEM.split("services:")[0] + "services:\n" + "".join(
        f"  - {{name: s{i}, model: llama-3.1-8b, workload: {{qps: 1, input_tokens: 100, output_tokens: 10}}}}\n"
        for i in range(2000)) + "hardware:\n  - type: h100-sxm\n"
    p["seq-block-list-70000"] = PROBLEM + "sweep:\n  budget_per_hour:\n" + "".join(f"    - {i}\n" for i in range(70_000))
    p["seq-mapping-60000-keys"] = PROBLEM + "engine:\n" + "".join(f"  k{i}: {i}\n" for i in range(60_000))
    p["seq-long-string"] = sub(PROBLEM, "name: llama3-70b-online", "name: " + "x" * 200_000)
    p["seq-many-documents"] = PROBLEM + "---\n" + PROBLEM
    # empty and near-empty
    for name, text in (("empty", ""), ("whitespace", "   \n\n\t\n"), ("comments", "# nothing\n# at all\n"),
                       ("document-marker", "---\n"), ("null", "null\n"), ("tilde", "~\n"), ("empty-list", "[]\n"),
                       ("empty-mapping", "{}\n"), ("end-marker", "...\n")):
        p[f"empty-{name}"] = text
    # tabs and syntax
    p["tabs-indent"] = PROBLEM.replace("\n  ", "\n\t", 3)
    p["tabs-after-dash"] = sub(PROBLEM, "  - name: chat", "  -\tname: chat\n\t\tmodel: x")
    p["syntax-unclosed-flow"] = sub(PROBLEM, "ttft_ms: {p50: 500, p99: 1500}", "ttft_ms: {p50: 500, p99: 1500")
    p["syntax-unclosed-quote"] = sub(PROBLEM, "name: llama3-70b-online", "name: 'llama3-70b-online")
    p["syntax-bad-indent"] = sub(PROBLEM, "    model: llama-3.1-70b", "      model: llama-3.1-70b\n   oops: 1")
    p["syntax-directive"] = "%YAML 9.9\n---\n" + PROBLEM
    return p


def binary_and_encodings() -> dict[str, str | bytes]:
    rng = random.Random(18)
    p: dict[str, str | bytes] = {}
    p["binary-random"] = bytes(rng.randrange(256) for _ in range(4096))
    p["binary-nul-bytes"] = b"\x00" * 1024
    p["binary-nul-inside"] = PROBLEM.encode().replace(b"chat", b"ch\x00at", 1)
    p["binary-elf"] = b"\x7fELF\x02\x01\x01\x00" + bytes(rng.randrange(256) for _ in range(512))
    p["binary-gzip"] = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(rng.randrange(256) for _ in range(256))
    p["binary-png"] = b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(256))
    p["binary-control-chars"] = sub(PROBLEM, "name: llama3-70b-online", "name: llama\x07\x1b[31m").encode()
    p["utf8-lone-continuation"] = PROBLEM.encode().replace(b"chat", b"ch\x80at", 1)
    p["utf8-overlong"] = PROBLEM.encode().replace(b"chat", b"ch\xc0\xafat", 1)
    p["utf8-surrogate"] = PROBLEM.encode().replace(b"chat", b"ch\xed\xa0\x80at", 1)
    p["utf8-truncated-at-end"] = PROBLEM.encode() + b"# caf\xc3"
    p["utf8-latin1"] = PROBLEM.replace("online", "caf\u00e9").encode("latin-1")
    p["bom-utf8-invalid-problem"] = b"\xef\xbb\xbf" + sub(PROBLEM, "qps: 200", "qps: -1").encode()
    p["bom-utf16-le"] = b"\xff\xfe" + PROBLEM.encode("utf-16-le")
    p["bom-utf16-be"] = b"\xfe\xff" + PROBLEM.encode("utf-16-be")
    p["bom-utf32"] = b"\xff\xfe\x00\x00" + PROBLEM.encode("utf-32-le")
    p["bom-in-the-middle"] = sub(PROBLEM, "objective: min_cost", "objective: \ufeffmin_cost").encode()
    return p


def grids() -> dict[str, str]:
    g: dict[str, str] = {}
    g["explode-pp-batch-chunk"] = PROBLEM + "search:\n  pp: [" + ", ".join(str(i) for i in range(1, 65)) + "]\n" \
        "  batch: [" + ", ".join(str(i) for i in range(1, 65)) + "]\n" \
        "  chunk_tokens: [" + ", ".join(str(512 * i) for i in range(1, 65)) + "]\n"
    g["explode-with-power-caps"] = sub(sub(PROBLEM, "precision: fp8", "precision: fp8\n    kv_precision: [fp8, bf16]"),
                                       "price_per_hour: 2.50", "price_per_hour: 2.50\n    power_caps_w: ["
                                       + ", ".join(str(700 - 20 * i) for i in range(16)) + "]") \
        + "search:\n  tp: [1, 2, 4, 8, 16, 32, 64]\n  pp: [" + ", ".join(str(i) for i in range(1, 65)) + "]\n" \
        "  batch: [" + ", ".join(str(i) for i in range(1, 65)) + "]\n"
    return g


def cards() -> dict[str, str | bytes]:
    c: dict[str, str | bytes] = {}
    for name, old, new in (("hidden-1e309", "hidden_size: 4096", "hidden_size: 1e309"),
                           ("hidden-1e30", "hidden_size: 4096", "hidden_size: 1000000000000000000000000000000"),
                           ("hidden-5000-digits", "hidden_size: 4096", "hidden_size: " + "4" * 5000),
                           ("hidden-negative", "hidden_size: 4096", "hidden_size: -4096"),
                           ("hidden-string", "hidden_size: 4096", "hidden_size: big"),
                           ("layers-1e7", "num_layers: 32", "num_layers: 10000000"),
                           ("vocab-1e30", "vocab_size: 128256", "vocab_size: 1000000000000000000000000000000"),
                           ("heads-zero", "num_heads: 32", "num_heads: 0"),
                           ("heads-1e9", "num_heads: 32", "num_heads: 1000000000"),
                           ("context-inf", "max_context_tokens: 131072", "max_context_tokens: .inf"),
                           ("params-1e300", "published_total_params_b: 8.03", "published_total_params_b: 1.0e+300"),
                           ("unknown-key", "hidden_size: 4096", "hiden_size: 4096"),
                           ("duplicate-key", "hidden_size: 4096", "hidden_size: 4096\nhidden_size: 8192")):
        c[f"model-{name}"] = sub(MODEL, old, new)
    for e in ("10000000", "1000000000", "4097"):
        c[f"model-moe-experts-{e}"] = MOE.replace("num_experts: 256", f"num_experts: {e}", 1)
    c["model-moe-topk-1e6"] = MOE.replace("experts_per_token: 8", "experts_per_token: 1000000", 1)
    c["model-deep"] = MODEL + "attention2: " + "[" * 500 + "]" * 500 + "\n"
    c["model-empty"] = ""
    c["model-binary"] = bytes(range(256)) * 8
    for name, old, new in (("power-1e308", "power_w: 700", "power_w: 1.0e+308"),
                           ("price-1e300", "price_per_hour: 4.25", "price_per_hour: 1.0e+300"),
                           ("memory-inf", "memory_gib: 80", "memory_gib: .inf"),
                           ("bandwidth-nan", "hbm_bandwidth_tb_s: 3.35", "hbm_bandwidth_tb_s: .nan"),
                           ("tflops-1e40", "bf16: 989", "bf16: 1.0e+40"),
                           ("per-node-1e9", "devices_per_node: 8", "devices_per_node: 1000000000"),
                           ("latency-1e300", "latency_us: 8", "latency_us: 1.0e+300"),
                           ("unknown-key", "memory_gib: 80", "memroy_gib: 80"),
                           ("bigint-power", "power_w: 700", "power_w: " + "7" * 4400)):
        c[f"hardware-{name}"] = sub(HARDWARE, old, new)
    return c


def traces() -> dict[str, str | bytes]:
    head = "arrival_s,prompt_tokens,output_tokens\n"
    t: dict[str, str | bytes] = {
        "trace-empty.csv": "",
        "trace-header-only.csv": head,
        "trace-one-request.csv": head + "0,100,10\n",
        "trace-negative-tokens.csv": head + "0,100,10\n1,-5,10\n",
        "trace-tokens-1e400.csv": head + "0,100,10\n1,1e400,10\n",
        "trace-tokens-5000-digits.csv": head + "0,100,10\n1," + "9" * 5000 + ",10\n",
        "trace-time-nan.csv": head + "0,100,10\nnan,100,10\n",
        "trace-time-inf.csv": head + "0,100,10\ninf,100,10\n",
        "trace-time-1e300.csv": head + "0,100,10\n1e300,100,10\n",
        "trace-ragged.csv": head + "0,100,10\n1,100\n",
        "trace-missing-column.csv": "arrival_s,prompt_tokens\n0,100\n1,100\n",
        "trace-binary.csv": bytes(random.Random(7).randrange(256) for _ in range(2048)),
        "trace-latin1.csv": (head + "0,100,10\n1,100,10 caf\u00e9\n").encode("latin-1"),
        "trace-deep.jsonl": '{"arrival_s": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
        "trace-bigint.jsonl": '{"arrival_s": 0, "prompt_tokens": ' + "9" * 5000 + ', "output_tokens": 1}\n',
        "trace-not-objects.jsonl": "[1, 2, 3]\n[4, 5, 6]\n",
        "trace-nul.csv": head + "0,100,10\n1,1\x0000,10\n",
    }
    return t


def lengths() -> dict[str, str | bytes]:
    head = "field,tokens,share\n"
    return {
        "lengths-share-overflow.csv": head + "input_tokens,100,1e308\ninput_tokens,200,1e308\noutput_tokens,10,1\n",
        "lengths-share-inf.csv": head + "input_tokens,100,inf\noutput_tokens,10,1\n",
        "lengths-share-negative.csv": head + "input_tokens,100,-1\noutput_tokens,10,1\n",
        "lengths-tokens-huge.csv": head + "input_tokens,1e300,1\noutput_tokens,10,1\n",
        "lengths-unknown-field.csv": head + "input_tokenz,100,1\noutput_tokens,10,1\n",
        "lengths-header-only.csv": head,
        "lengths-all-zero.csv": head + "input_tokens,100,0\noutput_tokens,10,0\n",
        "lengths-bigint.csv": head + "input_tokens," + "1" * 5000 + ",1\noutput_tokens,10,1\n",
    }


def measured() -> dict[str, str | bytes]:
    head = ("model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms,"
            "engine\n")
    row = "llama-3.1-8b,h100-sxm,bf16,colocated,1024,128,4,1,1,1,1,{ttft},{tpot},vllm\n"
    return {
        "measured-empty.csv": "",
        "measured-header-only.csv": head,
        "measured-ttft-inf.csv": head + row.format(ttft="inf", tpot=10),
        "measured-ttft-nan.csv": head + row.format(ttft="nan", tpot=10),
        "measured-tpot-1e400.csv": head + row.format(ttft=100, tpot="1e400"),
        "measured-tokens-5000-digits.csv": head + row.format(ttft=100, tpot=10).replace("1024", "9" * 5000, 1),
        "measured-unknown-model.csv": head + row.format(ttft=100, tpot=10).replace("llama-3.1-8b", "llama-3.1-8", 1),
        "measured-binary.csv": bytes(random.Random(9).randrange(256) for _ in range(2048)),
    }


def results() -> dict[str, str | bytes]:
    return {
        "result-empty.json": "",
        "result-not-json.json": "{not json\n",
        "result-deep.json": "[" * 100_000 + "]" * 100_000,
        "result-bigint.json": '{"problem": "x", "status": "optimal", "services": ' + "9" * 5000 + "}\n",
        "result-wrong-shape.json": '{"problem": "x", "status": "optimal", "services": "none"}\n',
        "result-binary.json": bytes(random.Random(11).randrange(256) for _ in range(1024)),
    }


def corpus() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {}
    for group in (problems(), problems_types_and_keys(), problems_structure(), binary_and_encodings()):
        files.update({f"problem-{k}.yaml": v for k, v in group.items()})
    files.update({f"grid-{k}.yaml": v for k, v in grids().items()})
    files.update({f"{k}.yaml": v for k, v in cards().items()})
    for group in (traces(), lengths(), measured(), results()):
        files.update(group)
    return files


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    for name, content in sorted(corpus().items()):
        (OUT / name).write_bytes(content.encode() if isinstance(content, str) else content)
    print(f"wrote {len(corpus())} files to {OUT}")


if __name__ == "__main__":
    main()
