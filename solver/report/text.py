"""Plain-text renderings for the terminal (no logic: formatting of typed documents only)."""

from __future__ import annotations

from typing import Sequence

from solver.schema.estimate import EstimateResult


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """A fixed-width table; `align` is one 'l'/'r' per column (default: text left, numbers right)."""
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    if align is None:
        align = "".join(
            "r" if rows and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) else "l"
            for i in range(len(headers))
        )
    def fmt(vals):
        return "  ".join(v.rjust(w) if a == "r" else v.ljust(w) for v, w, a in zip(vals, widths, align)).rstrip()
    out = [fmt(list(headers)), fmt(["-" * w for w in widths])]
    out += [fmt(r) for r in cells]
    return "\n".join(out)


def _cell(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.2f}"
    return str(v)


def estimate_text(r: EstimateResult) -> str:
    par = f"tp{r.tp} pp{r.pp} ep{r.ep} dp{r.dp}" + (f" cp{r.cp}" if r.cp > 1 else "")
    load = f"concurrency {r.concurrency}" if r.concurrency is not None else f"batch {r.batch}"
    lines = [
        f"{r.model} on {r.hardware}  {par} ({r.devices_per_instance} devices)  "
        f"{r.precision} weights, {r.kv_precision} KV, {r.math_precision} math",
        f"stage: {r.stage}  {load}  input {r.input_tokens} tokens, output {r.output_tokens}"
        + (f"  routing: {r.routing}" if r.routing else "")
        + (f"  speculative: {r.speculative}" if r.speculative else "")
        + (f"  prefix hit rate: {r.prefix_hit_rate:g}" if r.prefix_hit_rate else ""),
        "",
        f"fits in memory        {'yes' if r.fits else 'NO'}  "
        f"({r.memory_gib_per_device:.1f} of {r.memory.usable_gib:.1f} GiB usable per device: "
        f"weights {r.memory.weights_gib:.1f}, KV {r.memory.kv_cache_gib:.1f}, "
        f"activations {r.memory.activations_gib:.1f}, reserve {r.memory.reserve_gib:.1f})",
    ]
    def ms(v):
        return "-" if v is None else f"{v:.2f} ms"
    lines += [
        f"prefill               {ms(r.prefill_ms)}",
        f"decode step           {ms(r.decode_step_ms)}",
        f"TTFT                  {ms(r.ttft_ms)}",
        f"TPOT                  {ms(r.tpot_ms)}",
        f"throughput            {r.throughput_qps:.3f} requests/s per instance",
        f"tokens                {r.tokens_per_s:,.0f} tokens/s per instance",
    ]
    if r.breakdown is not None:
        b = r.breakdown
        lines.append(
            f"iteration breakdown   GEMM {b.gemm_ms:.2f} ms, attention {b.attention_ms:.2f} ms, "
            f"communication {b.communication_ms:.2f} ms, kernel overhead {b.kernel_overhead_ms:.2f} ms, "
            f"pipeline hop {b.pipeline_hop_ms:.3f} ms (slowest stage)"
        )
    src = ", ".join(f"{k} {v:.0%}" for k, v in r.operator_sources.items() if v > 0)
    lines.append(f"operator time from    {src}")
    for n in r.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)
