"""Convert the disaggregated rows of aiconfigurator-core's measured sample into a CSV of
prefill/decode worker pools.

    python benchmarks/silicon_disagg_to_validate.py [--source PATH/silicon_sample.csv] [--out FILE]

The source is the same `systems/silicon_sample.csv` as benchmarks/silicon_to_validate.py
(Apache-2.0, NVIDIA; see NOTICE). A `disagg` row there is one closed-loop benchmark of
`prefill_num_workers` prefill workers and `decode_num_workers` decode workers, each with its own
parallelism (`prefill_tp_size`, `_pp_size`, `_attention_dp_size`, `_moe_ep_size`, likewise for
decode) and batch (`prefill_batch_size`, `decode_batch_size`); the client concurrency is
`silicon_concurrency` in `silicon_data_source`. The output has one row per benchmark:

    model, hardware, precision, mode (disaggregated), input_tokens, output_tokens, concurrency,
    prefill_tp, prefill_pp, prefill_ep, prefill_dp, prefill_workers, prefill_batch,
    decode_tp, decode_pp, decode_ep, decode_dp, decode_workers, decode_batch,
    ttft_ms, tpot_ms, engine, source_id, source_system, source_model, engine_version, measured

The sample's decode batch is the clients' share, not the engine's limit; run
benchmarks/inferencex_disagg_recipes.py afterwards to write the limits the InferenceX runs
launched with (their srt-slurm recipes' decode `max_batch_size` / `max-running-requests`).

A row is replayable only if the sample records its worker layout. The InferenceX database-dump
rows (ids ending `_cfgN`, `db-dump/...` sources) do: `prefill_num_workers`,
`decode_num_workers`, the per-role parallelism, and batches with concurrency = decode_batch x
decode_num_workers x decode_attention_dp_size. The dated InferenceX result exports (ids starting
with a date, `source_file=YYYY-MM-DD.csv`; 1,328 of the 1,602 disaggregated rows of
aiconfigurator-core 0.12.0) leave both worker counts and both batch sizes empty and give each
role only a tp/ep pair, which is not the deployed layout: the same measurement appears in both
exports (`dsr1_h100_trtllm_fp8_disagg_1024x1024_c30_cfg494`, TTFT 5052.4 ms, TPOT 19.93 ms, is
`2026_04_06_deepseek_r1_h100_sxm_trtllm_fp8_disagg_1024x1024_c30_tp16_ep16_1723`), where the dump
has one attention-DP-16 prefill worker and three TP16 decode workers and the export a "tp16 ep16"
per role. Reading an empty count as one worker (as this converter once did) replays a fleet
other than the measured one (b200 SGLang, 8192/1024 at 64 clients: TPOT 6.4 ms measured, which
no single TP8 decode worker reaches; the same hardware's colocated TP8 row measures 38.6 ms), so
such rows are skipped ("worker layout not recorded"). Rows of models or systems without
fleetplan cards, or with a worker plan fleetplan cannot represent, are counted and skipped too. Measured data is precious: only the h100_sxm rows may ever
be used for calibration.
"""

from __future__ import annotations

import argparse
import csv
from collections import Counter
from pathlib import Path

from silicon_to_validate import MODELS, PRECISION, SYSTEMS, _plan_ok, default_source, measured_fields, write_rows

ROLES = ("prefill", "decode")
COLUMNS = (["model", "hardware", "precision", "mode", "input_tokens", "output_tokens", "concurrency"]
           + [f"{role}_{k}" for role in ROLES for k in ("tp", "pp", "ep", "dp", "workers", "batch")]
           + ["ttft_ms", "tpot_ms", "engine", "source_id", "source_system", "source_model", "engine_version",
              "measured"])


def _field(source: str, name: str) -> str:
    for part in source.split(";"):
        if part.strip().startswith(f"{name}="):
            return part.split("=", 1)[1].strip()
    return ""


def _one(v: str) -> int:
    """Empty or 0 means "not used" in the sample: one-way."""
    return max(1, int(float(v or 1)))


def _recorded(r: dict) -> bool:
    """Both roles' worker counts and batch sizes are recorded (module docstring)."""
    return all((r[f"{role}_{k}"] or "").strip() for role in ROLES for k in ("num_workers", "batch_size"))


def _role(r: dict, model: str, role: str) -> tuple[dict | None, str | None]:
    p = {k: _one(r[f"{role}_{src}"]) for k, src in
         (("tp", "tp_size"), ("pp", "pp_size"), ("ep", "moe_ep_size"), ("dp", "attention_dp_size"),
          ("workers", "num_workers"), ("batch", "batch_size"))}
    why = _plan_ok(model, p["tp"], p["pp"], p["ep"], p["dp"])
    return (None, f"{role}: {why}") if why else ({f"{role}_{k}": v for k, v in p.items()}, None)


def convert(src: Path) -> tuple[list[dict], Counter]:
    skipped: Counter = Counter()
    out = []
    for r in csv.DictReader(src.open(newline="")):
        if r["mode"] != "disagg":
            continue
        model, hw = MODELS.get(r["model_path"]), SYSTEMS.get(r["system"])
        quant = r["precision"] or r["gemm_quant_mode"]
        conc = _field(r["silicon_data_source"], "silicon_concurrency")
        why = (f"no card for model {r['model_path']}" if model is None else
               f"no card for system {r['system']}" if hw is None else
               f"precision {quant}" if quant not in PRECISION else
               "no concurrency" if not conc.isdigit() or int(conc) < 1 else
               "worker layout not recorded" if not _recorded(r) else None)
        roles = {}
        for role in ROLES if why is None else ():
            part, why = _role(r, model, role)
            if why:
                break
            roles.update(part)
        if why:
            skipped[why] += 1
            continue
        out.append({
            "model": model, "hardware": hw, "precision": PRECISION[quant], "mode": "disaggregated",
            "input_tokens": r["isl"], "output_tokens": r["osl"], "concurrency": int(conc), **roles,
            **measured_fields(r),
        })
    return out, skipped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "data" / "silicon_sample_disagg_validate.csv")
    a = ap.parse_args()
    rows, skipped = convert(a.source or default_source())
    write_rows(a.out, list(COLUMNS), rows, skipped)


if __name__ == "__main__":
    main()
