"""The measured operator tables of a set of hardware cards for one engine, loaded once per
process."""

from __future__ import annotations

from functools import lru_cache

from solver.catalog.calibration import DEFAULT_ENGINE
from solver.profiles.operators import OperatorProfiles, ProfileSet
from solver.schema.cards import HardwareCard


def measured_tables(cards, engine: str | None) -> ProfileSet:
    """The engine's measured operator tables for each card (hardware without tables, or an
    engine without them, falls back to the roofline operator by operator)."""
    return ProfileSet(tuple(_tables(c, engine or DEFAULT_ENGINE) for c in cards))


@lru_cache(maxsize=64)
def _tables(card: HardwareCard, engine: str) -> OperatorProfiles:
    """Loaded once per process: reading and hash-checking the tables costs ~0.1 s."""
    return OperatorProfiles.load(card, engine)
