"""Convert one aiconfigurator-core system and framework into fleetplan tables, write them, and
summarise what was written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from solver.errors import InputError
from solver.profiles.format import write_profile
from solver.profiles.sources.aic.attention import convert_attention
from solver.profiles.sources.aic.comm import convert_allreduce, convert_collectives
from solver.profiles.sources.aic.gemm import convert_compute_scale, convert_gemm
from solver.profiles.sources.aic.mla import convert_mla
from solver.profiles.sources.aic.moe import convert_moe
from solver.profiles.sources.aic.provenance import Converted
from solver.profiles.sources.aic.source import (
    find_systems_dir,
    hardware_name,
    package_version,
    resolve_version,
)

FRAMEWORKS = ("vllm", "sglang", "trtllm")


def _cards(models: Sequence[str] | None):
    from solver.catalog import shipped

    names = list(models) if models else shipped.names("models")
    return [shipped.model_card(n) for n in names]


def convert_aic(
    system: str,
    framework: str,
    version: str | None = None,
    source: str | Path | None = None,
    models: Sequence[str] | None = None,
    all_shapes: bool = False,
) -> list[Converted]:
    """The converted tables (in memory) of one AIC system and framework."""
    if framework not in FRAMEWORKS:
        raise InputError(f"unknown framework '{framework}' (one of {', '.join(FRAMEWORKS)})")
    systems = find_systems_dir(source)
    v = resolve_version(systems, system, framework, version)
    pkg = package_version(systems)
    cards = _cards(models)
    out = [convert_gemm(systems, system, framework, v, cards, all_shapes, pkg)]
    for phase in ("context", "generation"):
        if (systems / "data" / system / "attention" / framework / v / f"{phase}_attention_perf.parquet").is_file():
            out.append(convert_attention(systems, system, framework, v, phase, cards, all_shapes, pkg))
    optional = (
        convert_allreduce(systems, system, framework, v, pkg),
        convert_collectives(systems, system, pkg),
        convert_moe(systems, system, framework, v, cards, all_shapes, pkg),
        convert_compute_scale(systems, system, framework, v, pkg),
    )
    if any(c.attention.kind == "mla" for c in cards):
        optional += tuple(convert_mla(systems, system, framework, v, phase, pkg)
                          for phase in ("generation", "context"))
    return out + [t for t in optional if t is not None]


def import_aic(
    system: str,
    framework: str,
    version: str | None = None,
    source: str | Path | None = None,
    out_dir: str | Path | None = None,
    hardware: str | None = None,
    models: Sequence[str] | None = None,
    all_shapes: bool = False,
    compress: bool = False,
) -> list[Path]:
    """Convert and write `<out_dir>/<hardware>/<framework>/<family>.csv` + `.meta.json`.

    out_dir defaults to FLEETPLAN_PROFILES when set, else the shipped `hardware/profiles/`.
    Returns the CSV paths written."""
    from solver.profiles.format import default_root

    tables = convert_aic(system, framework, version, source, models, all_shapes)
    hw = hardware or hardware_name(system)
    folder = Path(out_dir if out_dir is not None else default_root()) / hw / framework
    written = []
    for t in tables:
        prov = t.provenance if hw == t.provenance.hardware else t.provenance.model_copy(update={"hardware": hw})
        written.append(write_profile(folder, t.family, t.text, prov, compress=compress))
    return written


def summary(paths: Sequence[Path]) -> str:
    lines = []
    for p in paths:
        meta = json.loads(p.with_name(p.name.split(".csv")[0] + ".meta.json").read_text())
        lines.append(f"{p}  {meta['rows']} rows  {p.stat().st_size / 1024:.0f} KiB  "
                     f"{meta['framework']} {meta['framework_version']}")
    return "\n".join(lines)
