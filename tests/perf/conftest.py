"""Fixtures the performance-model tests share: Llama-3.1-70B's architecture and the H100 SXM
hardware table, both from the shipped cards."""

from __future__ import annotations

import pytest

from solver.catalog import shipped
from solver.perf.arch import ModelArch
from solver.perf.tables import HardwareTable


@pytest.fixture(scope="module")
def a70() -> ModelArch:
    return ModelArch.from_card(shipped.model_card("llama-3.1-70b"))


@pytest.fixture(scope="module")
def h100() -> HardwareTable:
    return HardwareTable.from_cards([shipped.hardware_card("h100-sxm")])
