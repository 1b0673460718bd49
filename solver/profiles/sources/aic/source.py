"""Finding aiconfigurator-core's data: its `systems/` folder, the package version, the framework
version to convert and the newest table at or before it."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from solver.errors import InputError

# AIC system name -> fleetplan hardware card name, where they differ beyond '_' -> '-'
SYSTEM_TO_HARDWARE = {
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200-nvl72",
}


def hardware_name(system: str) -> str:
    return SYSTEM_TO_HARDWARE.get(system, system.replace("_", "-"))


def find_systems_dir(source: str | Path | None = None) -> Path:
    """The `systems/` folder of aiconfigurator-core: `source` (that folder, the package folder
    above it, or a site-packages folder holding the package), else AIC_SYSTEMS_DIR, else the
    installed package."""
    candidates: list[Path] = []
    if source is not None:
        s = Path(source)
        candidates += [s, s / "systems", s / "aiconfigurator_core" / "systems"]
    else:
        env = os.environ.get("AIC_SYSTEMS_DIR")
        if env:
            candidates.append(Path(env))
        spec = importlib.util.find_spec("aiconfigurator_core")
        if spec is not None and spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                candidates.append(Path(loc) / "systems")
    for c in candidates:
        if (c / "data").is_dir():
            return c
    if source is not None:
        raise InputError(f"{source}: not an aiconfigurator-core systems folder (no data/ inside)")
    raise InputError(
        "aiconfigurator-core is not installed: pip install 'fleetplan[aic]' "
        "(or give --source PATH to its systems/ folder)"
    )


def package_version(systems: Path) -> str | None:
    """The aiconfigurator-core version the `systems/` folder belongs to, if recorded."""
    site = systems.parent.parent
    for meta in sorted(site.glob("aiconfigurator_core-*.dist-info/METADATA")):
        for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    try:
        from importlib.metadata import version

        return version("aiconfigurator-core")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return None


def version_key(v: str):
    try:
        from packaging.version import Version

        return (0, Version(v))
    except Exception:  # noqa: BLE001 - odd version strings sort after, by their digits
        return (1, tuple(int(x) for x in re.findall(r"\d+", v)))


def versions(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted((p.name for p in folder.iterdir() if p.is_dir()), key=version_key)


def newest_table(base: Path, filename: str, at_most: str | None = None) -> str | None:
    """The newest version folder under `base` that holds `filename` (at or before `at_most`
    when given), or None."""
    usable = [v for v in versions(base) if (base / v / filename).is_file()
              and (at_most is None or version_key(v) <= version_key(at_most))]
    return usable[-1] if usable else None


def _current_version(systems: Path, system: str, framework: str) -> str | None:
    """aiconfigurator's own 'current' version for (system, framework), if it says."""
    path = systems / "query_versions.yaml"
    if not path.is_file():
        return None
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return None
    slot = ((doc.get("overrides") or {}).get(system) or {}).get(framework)
    if slot is None:
        slot = (doc.get("defaults") or {}).get(framework)
    return (slot or {}).get("current") if isinstance(slot, dict) else None


def resolve_version(systems: Path, system: str, framework: str, version: str | None) -> str:
    data = systems / "data" / system
    if not data.is_dir():
        known = ", ".join(sorted(p.name for p in (systems / "data").iterdir() if p.is_dir()))
        raise InputError(f"aiconfigurator-core has no system '{system}' (known: {known})")
    have = versions(data / "gemm" / framework)
    if not have:
        raise InputError(f"aiconfigurator-core has no {framework} GEMM data for {system}")
    if version is not None:
        if version not in have:
            raise InputError(f"{system}/{framework}: no version {version} (have: {', '.join(have)})")
        return version
    current = _current_version(systems, system, framework)
    if current in have and (data / "attention" / framework / current).is_dir():
        return current
    return have[-1]
