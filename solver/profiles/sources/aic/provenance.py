"""What every converted table says about itself: the licence, the source file and its hash, the
selection, the converter."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from solver.profiles.format import Provenance, Source, sha256_text
from solver.profiles.sources.aic.reading import collected_on, collection_meta, file_sha256, software
from solver.profiles.sources.aic.source import hardware_name

# the converter's name and version in every sidecar; the shipped tables carry it, so it stays
# as written when the code moves
CONVERTER = "fleetplan solver.profiles.aic/1"
AIC_URL = "https://github.com/ai-dynamo/aiconfigurator"
AIC_COPYRIGHT = "Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved."

# release dates of aiconfigurator-core versions (the upload of the version's files to PyPI,
# https://pypi.org/project/aiconfigurator-core/): its tables carry no collection date, and were
# collected no later than the release they ship in (docs/profiles.md)
RELEASED_ON = {"0.12.0": "2026-09-18"}

_MODIFIED = (
    "Derived from aiconfigurator-core (Apache-2.0) by fleetplan's converter: rows selected, "
    "columns renamed, latency converted from ms to us (5 significant digits). See NOTICE."
)


@dataclass(frozen=True)
class Converted:
    family: str
    text: str
    provenance: Provenance


def _source(systems: Path, path: Path, version: str | None) -> Source:
    return Source(
        name="NVIDIA AIConfigurator (aiconfigurator-core) measured performance database",
        package="aiconfigurator-core",
        package_version=version,
        released_on=RELEASED_ON.get(version or ""),
        url=AIC_URL,
        path=str(path.relative_to(systems.parent)).replace(os.sep, "/"),
        file_sha256=file_sha256(path),
        licence="Apache-2.0",
        copyright=AIC_COPYRIGHT,
    )


def provenance(family: str, text: str, rows_kept: int, *, columns: dict[str, str], systems,
               path: Path, pkg_version, system: str, device: str | None, framework: str,
               version: str, method: str, selection: str,
               extra_software: dict[str, str] | None = None) -> Provenance:
    """The sidecar every converted AIC table carries (licence, source, hash, converter); the
    software and date come from the `collection_meta.yaml` beside the source table `path`."""
    meta = collection_meta(path.parent)
    return Provenance(
        family=family,  # type: ignore[arg-type]
        hardware=hardware_name(system),
        device_name=device,
        framework=framework,
        framework_version=version,
        software=software(meta) | (extra_software or {}),
        collected_on=collected_on(meta, path.name.removesuffix(".parquet")),
        collection_method=method,
        source=_source(systems, path, pkg_version),
        selection=selection,
        columns=columns,
        rows=rows_kept,
        licence="Apache-2.0",
        content_sha256=sha256_text(text),
        converter=CONVERTER,
        notes=[_MODIFIED],
    )
