"""The decode batch limit of InferenceX's disaggregated TensorRT-LLM runs, read from their recipes.

    python benchmarks/inferencex_disagg_recipes.py --inferencex REPO --srt-slurm REPO [--apply]

aiconfigurator's database dumps record a disaggregated row's `decode_batch_size` as
concurrency / (decode workers x decode attention-DP ranks), not as the engine ran: InferenceX
launches each point from a srt-slurm recipe (`.github/configs/nvidia-master.yaml`, the entry
`dsr1-<precision>-<gpu>-dynamo-trt`, `CONFIG_FILE=recipes/trtllm/...` under the search-space
point of the row's lengths, concurrency and worker layout), and the recipe's
`backend.trtllm_config.decode.max_batch_size` is the engine's limit (per attention-DP rank,
TensorRT-LLM's semantics). It is often below the clients per worker on purpose: the H100
DeepSeek-R1 point of 6 clients runs three TEP16 decode workers of `max_batch_size: 1`
(recipes/trtllm/h100-fp8/1k1k/stp/ctx1_gen3_tep16_batch1_eplb0_mtp0.yaml), so three clients
always wait for a slot, which is why that row measures 12.3 s of TTFT. The recipe's file name
is not its limit (ctx1_gen5_tep8_batch8_eplb0_mtp0.yaml says 16).

REPO arguments are git directories of SemiAnalysisAI/InferenceX and NVIDIA/srt-slurm (read
with `git show`; the recipes' own home, ishandhanani/srt-slurm `sa-submission-q1-2026`, holds
the same paths). Each row takes the InferenceX configuration of the end of its measured day and
the recipe's last version before then (else its first). The table goes to
benchmarks/data/inferencex_disagg_recipes.csv (source_id, the commits, the recipe, the limit,
and the clients per decode rank the dumps record instead);
`--apply` writes the limits into benchmarks/data/silicon_sample_disagg_validate.csv's
`decode_batch` (run after benchmarks/silicon_disagg_to_validate.py). SGLang rows keep the
sample's value: their recipes set no per-worker batch in this form.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import subprocess
from pathlib import Path

import yaml

DATA = Path(__file__).parent / "data"
TABLE = DATA / "inferencex_disagg_recipes.csv"
SAMPLE = DATA / "silicon_sample_disagg_validate.csv"
GPUS = {"b200": "b200", "h100-sxm": "h100", "h200-sxm": "h200"}
FIELDS = ["source_id", "inferencex_commit", "config_file", "srt_slurm_commit", "decode_max_batch",
          "clients_per_rank"]


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], capture_output=True, text=True, check=False).stdout


def _day_after(date: str) -> str:
    return (datetime.date.fromisoformat(date) + datetime.timedelta(days=1)).isoformat()


def _layout(role: dict) -> tuple[int, int, int, int]:
    """(tp, ep, dp, workers) as the sample writes a role: attention DP as dp = tp, tp 1."""
    if role.get("dp-attn"):
        return 1, role["ep"], role["tp"], role["num-worker"]
    return role["tp"], role["ep"], 1, role["num-worker"]


def _config_file(point: dict) -> str | None:
    for role in ("prefill", "decode"):
        for s in point[role].get("additional-settings") or []:
            if s.startswith("CONFIG_FILE="):
                return s.split("=", 1)[1]
    return None


def _row_layout(r: dict, role: str) -> tuple[int, ...]:
    return tuple(int(r[f"{role}_{k}"]) for k in ("tp", "ep", "dp", "workers"))


FRAMEWORKS = {"trtllm": "trt", "sglang": "sglang"}


def decode_limit(recipe: dict, engine: str, dp: int) -> int | None:
    """The decode worker's sequence limit per attention-DP rank: TensorRT-LLM's
    `max_batch_size` (per rank already), SGLang's `max-running-requests` (the server's, split
    over its DP ranks)."""
    cfg = recipe.get("backend") or {}
    if engine == "trtllm":
        v = ((cfg.get("trtllm_config") or {}).get("decode") or {}).get("max_batch_size")
        return int(v) if v else None
    v = ((cfg.get("sglang_config") or {}).get("decode") or {}).get("max-running-requests")
    return max(1, int(v) // dp) if v else None


def find_recipe(r: dict, master: dict) -> str | None:
    """The recipe of a sample row's search-space point (plain decoding), or None."""
    entry = master.get(f"dsr1-{r['precision']}-{GPUS[r['hardware']]}-dynamo-{FRAMEWORKS[r['engine']]}") or {}
    for lengths in entry.get("seq-len-configs", []):
        if (lengths["isl"], lengths["osl"]) != (int(r["input_tokens"]), int(r["output_tokens"])):
            continue
        for p in lengths["search-space"]:
            if p.get("spec-decoding") not in (None, "none") or int(r["concurrency"]) not in p.get("conc-list", []):
                continue
            if (_layout(p["prefill"]), _layout(p["decode"])) == (_row_layout(r, "prefill"), _row_layout(r, "decode")):
                return _config_file(p)
    return None


def _recipe_before(srt_slurm: str, path: str, end: str) -> tuple[str, dict | None]:
    """The recipe's last version before `end` (else its first): (commit, parsed yaml)."""
    for c in _git(srt_slurm, "log", "--all", "--format=%H", f"--before={end}", "--", path).split():
        text = _git(srt_slurm, "show", f"{c}:{path}")
        if text:  # (a commit that deleted the file has none)
            return c, yaml.safe_load(text)
    for c in _git(srt_slurm, "log", "--all", "--reverse", "--format=%H", "--", path).split():
        text = _git(srt_slurm, "show", f"{c}:{path}")
        if text:
            return c, yaml.safe_load(text)
    return "", None


def recipes(inferencex: str, srt_slurm: str) -> list[dict]:
    masters: dict[str, dict] = {}
    out = []
    for r in csv.DictReader(SAMPLE.open()):
        if r["hardware"] not in GPUS or r["engine"] not in FRAMEWORKS:
            continue
        end = _day_after(r["measured"]) + "T00:00:00Z"
        ix = _git(inferencex, "rev-list", "-1", f"--before={end}", "HEAD").strip()
        if ix not in masters:
            masters[ix] = yaml.safe_load(_git(inferencex, "show", f"{ix}:.github/configs/nvidia-master.yaml"))
        path = find_recipe(r, masters[ix])
        if path is None:
            continue
        ss, recipe = _recipe_before(srt_slurm, path, end)
        limit = decode_limit(recipe, r["engine"], int(r["decode_dp"])) if recipe else None
        if limit is None:
            continue
        out.append({"source_id": r["source_id"], "inferencex_commit": ix, "config_file": path,
                    "srt_slurm_commit": ss, "decode_max_batch": limit,
                    "clients_per_rank": -(-int(r["concurrency"]) // (int(r["decode_workers"]) * int(r["decode_dp"])))})
    return out


def apply(table: list[dict]) -> int:
    """Write the recipes' limits into the sample's decode_batch; returns the rows changed."""
    limit = {t["source_id"]: str(t["decode_max_batch"]) for t in table}
    with SAMPLE.open() as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    changed = 0
    for r in rows:
        if r["source_id"] in limit and r["decode_batch"] != limit[r["source_id"]]:
            r["decode_batch"], changed = limit[r["source_id"]], changed + 1
    with SAMPLE.open("w", newline="") as f:  # csv's own line ends, as the converter writes
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inferencex", required=True, help="git directory of SemiAnalysisAI/InferenceX")
    ap.add_argument("--srt-slurm", required=True, help="git directory of NVIDIA/srt-slurm")
    ap.add_argument("--apply", action="store_true", help="write the limits into the validate CSV")
    a = ap.parse_args()
    for flag, repo in (("--inferencex", a.inferencex), ("--srt-slurm", a.srt_slurm)):
        if not _git(repo, "rev-parse", "--verify", "HEAD").strip():
            raise SystemExit(f"error: {flag} {repo}: not a git directory with a HEAD commit")
    table = recipes(a.inferencex, a.srt_slurm)
    with TABLE.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(table)
    print(f"{len(table)} rows' recipes -> {TABLE}")
    if a.apply:
        print(f"{apply(table)} rows' decode_batch changed in {SAMPLE}")


if __name__ == "__main__":
    main()
