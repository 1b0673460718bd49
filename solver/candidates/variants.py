"""Device variants: each (hardware entry, power cap) is one row of the performance model's
hardware table. Candidates are evaluated per variant; the candidate table names the entry
(`hw`: supply, sites, links and the result are per hardware type) and the cap (`power_cap_w`).
Without `power_caps_w` every entry is one variant at its own power and the table is the
cards' table as before."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.perf.operators.tables import measured_tables
from solver.perf.power import capped_card, capped_profiles
from solver.perf.tables import HardwareTable
from solver.problem.load import ResolvedProblem
from solver.profiles import ProfileSet


@dataclass(frozen=True)
class Variants:
    table: HardwareTable  # one row per variant (the capped card)
    entry: np.ndarray  # per variant: index of its hardware entry
    cap_w: np.ndarray  # per variant: board power limit, W (the power it counts)
    cost: np.ndarray  # per variant: USD per device-hour without sites (all components)
    owned: np.ndarray  # per variant: the non-rental part of `cost` (reprice keeps it)

    def __len__(self) -> int:
        return len(self.entry)

    def supplies(self, per_entry: tuple[int | None, ...]) -> tuple[int | None, ...]:
        return tuple(per_entry[int(e)] for e in self.entry)


def build_variants(rp: ResolvedProblem) -> Variants:
    entry, caps = [], []
    for j in range(len(rp.hardware)):
        for cap in rp.caps_of(j):
            entry.append(j)
            caps.append(cap)
    full = measured_tables(rp.hardware, rp.problem.software.engine).members
    # an entry without power_caps_w runs at full clock (its power_w only changes what it counts)
    capped = [rp.problem.hardware[j].power_caps_w is not None for j in entry]
    cards = [capped_card(rp.hardware[j], cap) if c else rp.hardware[j]
             for j, cap, c in zip(entry, caps, capped)]
    profiles = ProfileSet(tuple(capped_profiles(full[j], rp.hardware[j], cap) if c else full[j]
                                for j, cap, c in zip(entry, caps, capped)))
    parts = [rp.cost_parts(0, j, cap) for j, cap in zip(entry, caps)]
    cost = np.array([p.total for p in parts], dtype=float)
    table = HardwareTable.from_cards(cards, [rp.prices[j] for j in entry], rp.engine, profiles)
    return Variants(table=table, entry=np.array(entry, dtype=int), cap_w=np.array(caps, dtype=float),
                    cost=cost, owned=cost - np.array([p.rental for p in parts], dtype=float))


def capped_table(rp: ResolvedProblem, j: int, cap_w: float) -> HardwareTable:
    """A one-row hardware table of entry j under a power limit of `cap_w` (a pool's, for the
    replay): the capped card and its measured tables as `build_variants` makes them."""
    card = rp.hardware[j]
    full = measured_tables([card], rp.problem.software.engine).members[0]
    return HardwareTable.from_cards([capped_card(card, cap_w)], [rp.prices[j]], rp.engine,
                                    ProfileSet((capped_profiles(full, card, cap_w),)))
