"""`fleetplan profiles ...`: import aiconfigurator-core data, collect your own, list and check.

    fleetplan profiles import-aic --system h200_sxm --framework vllm [--version V]
                                  [--source DIR] [--out DIR] [--hardware NAME]
                                  [--models M1,M2] [--all-shapes] [--gzip]
    fleetplan profiles collect --hardware NAME [--framework LABEL] [--out DIR]
                               [--families gemm,attention_context,...] [--quick]
                               [--device cpu|cuda] [--repeats N] [--warmup N]
                               [--dtypes bf16,fp8] [--processes N] [--models M1,M2]
                               [--licence SPDX] [--threads N] [--gzip]
                               (measure with PyTorch: pip install 'fleetplan[collect]')
    fleetplan profiles list [--root DIR] [--format table|json]
    fleetplan profiles check [--root DIR]          (verify every table's hash and columns)

`add_parser(sub)` adds the `profiles` command to the CLI's subparsers; `run(args)` executes it
(returns the exit code). `cli_import(args)` is the import-aic action alone, `cli_collect(args)`
the collect action.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from solver.cli import argtypes as at
from solver.errors import InputError


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("profiles", help="measured operator profiles: import, collect, list, check")
    ps = p.add_subparsers(dest="profiles_command", required=True)

    imp = ps.add_parser("import-aic", help="convert aiconfigurator-core's measured data "
                        "(pip install 'fleetplan[aic]')")
    imp.add_argument("--system", required=True, help="aiconfigurator system, e.g. h200_sxm")
    imp.add_argument("--framework", required=True, choices=["vllm", "sglang", "trtllm"])
    imp.add_argument("--version", help="framework version (default: aiconfigurator's current)")
    imp.add_argument("--source", help="aiconfigurator-core systems/ folder (default: the "
                     "installed package)")
    imp.add_argument("--out", help="profiles root to write into (default: FLEETPLAN_PROFILES, "
                     "else the shipped hardware/profiles)")
    imp.add_argument("--hardware", help="fleetplan hardware name (default: from --system)")
    imp.add_argument("--models", help="comma-separated model cards whose shapes to keep "
                     "(default: every shipped card)")
    imp.add_argument("--all-shapes", action="store_true",
                     help="keep every measured shape (large)")
    imp.add_argument("--gzip", action="store_true", help="write <family>.csv.gz")

    col = ps.add_parser("collect", help="measure GEMM, attention and collectives with PyTorch "
                        "on this machine (pip install 'fleetplan[collect]')")
    col.add_argument("--hardware", required=True,
                     help="hardware name to file the tables under (a card name such as "
                     "h100-sxm, or your own)")
    col.add_argument("--framework", default="torch-eager",
                     help="label of what was timed (default: torch-eager)")
    col.add_argument("--out", help="profiles root to write into (default: FLEETPLAN_PROFILES, "
                     "else ./fleetplan-profiles)")
    col.add_argument("--families", default="gemm,attention_context,attention_generation,"
                     "allreduce,collectives",
                     help="comma-separated operator families (default: all five)")
    col.add_argument("--quick", action="store_true",
                     help="a tiny grid (seconds on a CPU) instead of the model cards' shapes")
    col.add_argument("--device", help="cpu or cuda[:i] (default: cuda when available)")
    col.add_argument("--repeats", type=at.whole(1, 10_000), help="timed repeats per point (median; "
                     "default 20 on a GPU, 10 on a CPU)")
    col.add_argument("--warmup", type=at.whole(0, 10_000), help="untimed calls first (default 5 GPU, 2 CPU)")
    col.add_argument("--dtypes", default="bf16",
                     help="GEMM element types: bf16 and/or fp8 (fp8 where supported)")
    col.add_argument("--processes", type=at.whole(0, 1024),
                     help="ranks of the CPU gloo mode for allreduce/collectives (default 2; "
                     "0 skips them)")
    col.add_argument("--models", help="comma-separated model cards whose shapes to measure "
                     "(default: every shipped card; ignored with --quick)")
    col.add_argument("--licence", default="LicenseRef-own-measurement",
                     help="SPDX identifier of the data's licence (yours to choose)")
    col.add_argument("--threads", type=at.whole(1, 1024), help="CPU threads for --device cpu "
                     "(default: PyTorch's; 1 is steadier on a shared machine)")
    col.add_argument("--gzip", action="store_true", help="write <family>.csv.gz")

    ls = ps.add_parser("list", help="list the profiles and their provenance")
    ls.add_argument("--root", help="profiles root (default: FLEETPLAN_PROFILES or shipped)")
    ls.add_argument("--format", choices=["table", "json"], default="table")

    ck = ps.add_parser("check", help="verify every profile's content hash and columns")
    ck.add_argument("--root", help="profiles root (default: FLEETPLAN_PROFILES or shipped)")
    return p


def cli_import(args: argparse.Namespace) -> int:
    from solver.profiles.sources.aic import import_aic, summary

    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    paths = import_aic(
        args.system, args.framework, version=args.version, source=args.source,
        out_dir=args.out, hardware=args.hardware, models=models,
        all_shapes=args.all_shapes, compress=args.gzip,
    )
    print(summary(paths))
    return 0


def cli_collect(args: argparse.Namespace) -> int:
    from solver.profiles.sources.pytorch import collect, import_torch, summary

    import_torch()  # one clear line when PyTorch is missing
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    paths = collect(
        args.hardware, args.framework, out_root=args.out, families=args.families,
        device=args.device, dtypes=args.dtypes, repeats=args.repeats, warmup=args.warmup,
        quick=args.quick, models=models, processes=args.processes, licence=args.licence,
        compress=args.gzip, threads=args.threads,
    )
    print(summary(paths))
    if paths:
        root = paths[0].parent.parent.parent
        print(f"{len(paths)} tables under {root}; use them with FLEETPLAN_PROFILES={root}")
    return 0


def _collected(prov) -> str:
    """The collection date, else 'by <date>': the release of the source package (no later)."""
    if prov.collected_on:
        return prov.collected_on
    released = prov.source.released_on if prov.source else None
    return f"by {released}" if released else "unknown"


def cli_list(args: argparse.Namespace) -> int:
    from solver.profiles.format import (
        available,
        csv_path_of,
        default_root,
        read_provenance,
    )

    root = Path(args.root) if args.root else default_root()
    if args.root and not root.is_dir():
        raise InputError(f"{root}: no such profiles folder")
    rows = []
    for hw, fw, family in available(root):
        folder = root / hw / fw
        prov = read_provenance(folder / f"{family}.meta.json")
        src = prov.source
        rows.append({
            "hardware": hw, "framework": fw, "family": family, "rows": prov.rows,
            "software": f"{prov.framework} {prov.framework_version}",
            "collected": _collected(prov),
            "source": f"{src.package or src.name} {src.package_version or ''}".strip() if src else "first-party",
            "licence": prov.licence, "file": str(csv_path_of(folder, family)),
        })
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no profiles under {root}")
        return 0
    cols = ["hardware", "framework", "family", "rows", "software", "collected", "source", "licence"]
    width = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    print("  ".join(c.ljust(width[c]) for c in cols))
    for r in rows:
        print("  ".join(str(r[c]).ljust(width[c]) for c in cols))
    return 0


def cli_check(args: argparse.Namespace) -> int:
    from solver.profiles.format import available, csv_path_of, default_root, load_table

    root = Path(args.root) if args.root else default_root()
    if args.root and not root.is_dir():
        raise InputError(f"{root}: no such profiles folder")
    n = 0
    for hw, fw, family in available(root):
        load_table(csv_path_of(root / hw / fw, family))  # raises InputError naming the file
        n += 1
    print(f"{n} profile tables under {root}: hashes and columns ok")
    return 0


def run(args: argparse.Namespace) -> int:
    return {"import-aic": cli_import, "collect": cli_collect, "list": cli_list,
            "check": cli_check}[args.profiles_command](args)
