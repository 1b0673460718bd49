"""The measured operator tables as the performance model loads them: with the model's own
extrapolation bounds (`bounds.py`), and once per process for a set of cards."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Sequence

from solver.catalog.calibration import DEFAULT_ENGINE
from solver.perf.operators.bounds import CardBounds
from solver.profiles.operators import DEFAULT_FRAMEWORK, OperatorProfiles, ProfileSet
from solver.schema.cards import HardwareCard


def load_tables(hardware: HardwareCard | str, framework: str = DEFAULT_FRAMEWORK,
                root: Path | str | None = None, verify: bool = True) -> OperatorProfiles:
    """One card's tables for one engine (see `OperatorProfiles.load`)."""
    return OperatorProfiles.load(hardware, framework, root, verify, bounds=CardBounds.from_card)


def load_table_set(cards: Sequence[HardwareCard], framework: str = DEFAULT_FRAMEWORK,
                   root: Path | str | None = None) -> ProfileSet:
    """The tables of several cards, per hardware index (not cached)."""
    return ProfileSet.load(cards, framework, root, bounds=CardBounds.from_card)


def measured_tables(cards, engine: str | None) -> ProfileSet:
    """The engine's measured operator tables for each card (hardware without tables, or an
    engine without them, falls back to the roofline operator by operator)."""
    return ProfileSet(tuple(_tables(c, engine or DEFAULT_ENGINE) for c in cards))


@lru_cache(maxsize=64)
def _tables(card: HardwareCard, engine: str) -> OperatorProfiles:
    """Loaded once per process: reading and hash-checking the tables costs ~0.1 s."""
    return load_tables(card, engine)
