"""`fleetplan profiles ...`: import aiconfigurator-core data, list and check profiles.

    fleetplan profiles import-aic --system h200_sxm --framework vllm [--version V]
                                  [--source DIR] [--out DIR] [--hardware NAME]
                                  [--models M1,M2] [--all-shapes] [--gzip]
    fleetplan profiles list [--root DIR] [--format table|json]
    fleetplan profiles check [--root DIR]          (verify every table's hash and columns)

`add_parser(sub)` adds the `profiles` command to the CLI's subparsers; `run(args)` executes it
(returns the exit code). `cli_import(args)` is the import-aic action alone.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from solver.errors import InputError


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("profiles", help="measured operator profiles: import, list, check")
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

    ls = ps.add_parser("list", help="list the profiles and their provenance")
    ls.add_argument("--root", help="profiles root (default: FLEETPLAN_PROFILES or shipped)")
    ls.add_argument("--format", choices=["table", "json"], default="table")

    ck = ps.add_parser("check", help="verify every profile's content hash and columns")
    ck.add_argument("--root", help="profiles root (default: FLEETPLAN_PROFILES or shipped)")
    return p


def cli_import(args: argparse.Namespace) -> int:
    from solver.profiles.aic import import_aic, summary

    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    paths = import_aic(
        args.system, args.framework, version=args.version, source=args.source,
        out_dir=args.out, hardware=args.hardware, models=models,
        all_shapes=args.all_shapes, compress=args.gzip,
    )
    print(summary(paths))
    return 0


def cli_list(args: argparse.Namespace) -> int:
    from solver.profiles.format import available, csv_path_of, default_root, read_provenance

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
            "source": f"{src.package or src.name} {src.package_version or ''}".strip() if src else "first-party",
            "licence": prov.licence, "file": str(csv_path_of(folder, family)),
        })
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no profiles under {root}")
        return 0
    cols = ["hardware", "framework", "family", "rows", "software", "source", "licence"]
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
    return {"import-aic": cli_import, "list": cli_list, "check": cli_check}[args.profiles_command](args)
