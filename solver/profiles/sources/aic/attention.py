"""Attention (GQA/MHA): attention/<fw>/<v>/{context,generation}_attention_perf.parquet -> the
`attention_context` and `attention_generation` tables (full attention, window 0; bf16 math, fp8
math where the engine quantises queries with an fp8 cache; the dominant kernel; the per-device
head groups of the model cards, an unmeasured group kept as its nearest measured one)."""

from __future__ import annotations

import math

from solver.profiles.format import csv_text
from solver.profiles.sources.aic.provenance import Converted, provenance
from solver.profiles.sources.aic.reading import dominant, one, read_rows, us
from solver.profiles.sources.shapes import AttentionGroup, attention_groups

_KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}

_HEADS = {
    "kv_dtype": "KV cache element type: bf16 | fp8",
    "num_heads": "query heads on the device",
    "num_kv_heads": "key/value heads on the device",
    "head_dim": "elements per head",
}
_LATENCY = "GPU time of one call, microseconds"
COLUMNS = {
    "attention_context": _HEADS | {
        "batch": "prompts in the call",
        "isl_tokens": "tokens per prompt (all new, causal)",
        "latency_us": _LATENCY,
    },
    "attention_generation": _HEADS | {
        "batch": "sequences decoding one token each",
        "kv_tokens": "cached tokens attended per sequence (source isl + step)",
        "latency_us": _LATENCY,
    },
}


def _attention_rows(rows: list[dict]) -> tuple[list[dict], str, dict[str, str]]:
    """Window-0 rows of the dominant kernel, one math dtype per KV dtype."""
    full = [r for r in rows if int(r.get("window_size", 0) or 0) == 0 and int(r.get("beam_width", 1)) == 1]
    kernel = dominant(full, "kernel_source")
    full = [r for r in full if r["kernel_source"] == kernel]
    have = {(r["attn_dtype"], r["kv_cache_dtype"]) for r in full}
    choice: dict[str, str] = {}
    for kv in _KV_DTYPES:
        if ("bfloat16", kv) in have:
            choice[kv] = "bfloat16"
        elif (kv, kv) in have:
            choice[kv] = kv  # the engine runs the math in the cache's type (fp8 with fp8 KV)
    kept = [r for r in full if r["kv_cache_dtype"] in choice and r["attn_dtype"] == choice[r["kv_cache_dtype"]]]
    return kept, kernel or "", {_KV_DTYPES[k]: v for k, v in choice.items()}


def _nearest_group(g: AttentionGroup, measured: set[tuple[int, int, int]]) -> tuple[int, int, int] | None:
    best, best_d = None, math.inf
    for h, kv, d in sorted(measured):
        if d != g.head_dim:
            continue
        dist = abs(math.log(h / g.num_heads)) + abs(math.log(kv / g.num_kv_heads))
        if dist < best_d:
            best, best_d = (h, kv, d), dist
    return best


def _keep_groups(measured: set[tuple[int, int, int]], cards, all_shapes: bool) -> tuple[set, str]:
    """The (heads, kv heads, head_dim) kept and the selection's words."""
    if all_shapes:
        return measured, "every measured head geometry"
    need = sorted({g for c in cards for g in attention_groups(c)})
    keep = set()
    stand_ins = []
    for g in need:
        t = (g.num_heads, g.num_kv_heads, g.head_dim)
        if t in measured:
            keep.add(t)
        else:
            near = _nearest_group(g, measured)
            if near is not None:
                keep.add(near)
                stand_ins.append(f"{t} -> {near}")
    selection = (
        f"per-device (heads, kv heads, head_dim) of the GQA model cards "
        f"{', '.join(c.name for c in cards if attention_groups(c))} at TP 1/2/4/8"
        + (f"; unmeasured groups kept as their nearest measured group: {'; '.join(stand_ins)}"
           if stand_ins else "")
    )
    return keep, selection


def convert_attention(systems, system, framework, version, phase, cards, all_shapes, pkg_version) -> Converted:
    family = f"attention_{phase}"
    path = systems / "data" / system / "attention" / framework / version / f"{phase}_attention_perf.parquet"
    rows, kernel, math_dtypes = _attention_rows(read_rows(path))
    measured = {(int(r["num_heads"]), int(r["num_key_value_heads"]), int(r["head_dim"])) for r in rows}
    keep, selection = _keep_groups(measured, cards, all_shapes)
    out = []
    for r in rows:
        t = (int(r["num_heads"]), int(r["num_key_value_heads"]), int(r["head_dim"]))
        if t not in keep:
            continue
        tokens = int(r["isl"]) if phase == "context" else int(r["isl"]) + int(r["step"])
        out.append((_KV_DTYPES[r["kv_cache_dtype"]], t[0], t[1], t[2], int(r["batch_size"]), tokens,
                    us(r["latency"])))
    out.sort()
    text = csv_text(family, out)
    math_txt = ", ".join(f"kv {kv}: math {m}" for kv, m in sorted(math_dtypes.items()))
    prov = provenance(
        family, text, len(out), columns=COLUMNS[family], systems=systems, path=path,
        pkg_version=pkg_version, system=system, device=one(rows, "device"), framework=framework,
        version=version, method=(
            f"aiconfigurator collector ({framework} attention backend, one GPU): the attention "
            f"kernel alone on a paged KV cache, timed with CUDA events; the source logs "
            f"milliseconds per call"
        ),
        selection=f"kernel {kernel}; window_size 0 (full attention); {math_txt}; {selection}",
    )
    return Converted(family, text, prov)
