"""Writing one run's tables: every table of a run carries the same hardware, device, software,
date, licence and notes, plus its own method, selection and columns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from solver import __version__
from solver.profiles.format import Provenance, csv_text, sha256_text, write_profile
from solver.profiles.sources.pytorch.device import CollectError
from solver.profiles.sources.pytorch.timing import Outcome

# the collector's name and version in every sidecar; it stays as written when the code moves
COLLECTOR = f"fleetplan solver.profiles.collect/1 (fleetplan {__version__})"


@dataclass(frozen=True)
class Writer:
    """Writes the tables of one run under `folder` (`<root>/<hardware>/<framework>`)."""

    folder: Path
    compress: bool
    cpu: bool  # measured on the CPU (the columns say so)
    hardware: str
    framework: str
    framework_version: str
    device_name: str
    software: dict[str, str]
    collected_on: str
    licence: str
    notes: tuple[str, ...]  # the run's notes, first in every table's

    def table(self, family: str, outcome: Outcome, what: str, notes: list[str], method: str,
              columns: dict[str, str], extra_software: dict[str, str] | None = None) -> Path:
        """Write `family`'s measured rows (an error when there are none); returns the CSV path."""
        if not outcome.rows:
            raise CollectError(f"{family}: no point could be measured "
                               f"({outcome.first_error or 'empty grid'})")
        selection = what
        if outcome.skipped:
            selection += f"; {outcome.skipped} points skipped (first: {outcome.first_error})"
        rows = sorted(outcome.rows)
        text = csv_text(family, rows)
        prov = Provenance(
            family=family, rows=len(rows), content_sha256=sha256_text(text),
            hardware=self.hardware, device_name=self.device_name, framework=self.framework,
            framework_version=self.framework_version,
            software=self.software | (extra_software or {}), collected_on=self.collected_on,
            collection_method=f"fleetplan profiles collect on {self.device_name}: {method}",
            source=None, selection=selection, columns=columns, licence=self.licence,
            converter=COLLECTOR, notes=list(self.notes) + outcome.notes + notes,
        )
        return write_profile(self.folder, family, text, prov, compress=self.compress)
