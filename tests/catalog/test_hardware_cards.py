"""Hardware cards in hardware/*.yaml: schema, spot values, invariants, and source comments."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import yaml

from solver.schema.cards import PRECISIONS, HardwareCard

HARDWARE_DIR = Path(__file__).resolve().parents[2] / "hardware"
CARD_FILES = sorted(HARDWARE_DIR.glob("*.yaml"))
REQUIRED = {
    "a100-sxm",
    "h100-sxm",
    "h200-sxm",
    "b200",
    "gb200-nvl72",
    "mi300x",
    "mi325x",
    "mi355x",
    "gaudi3",
}

# `key: <number>` (optionally a list item), with an optional trailing comment.
_NUMERIC_LINE = re.compile(
    r"^\s*(?:-\s+)?[A-Za-z_][\w-]*\s*:\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*(?:#.*)?$"
)
_NULL_LINE = re.compile(r"^\s*[A-Za-z_][\w-]*\s*:\s*(?:null|~)\s*(?:#.*)?$")
_SOURCE_KEY = re.compile(r"\[([STMP]\d+)\b")  # also "[P3, undated]"


def _load(path: Path) -> HardwareCard:
    return HardwareCard.model_validate(yaml.safe_load(path.read_text()))


@pytest.fixture(scope="module")
def cards() -> dict[str, HardwareCard]:
    return {p.stem: _load(p) for p in CARD_FILES}


def test_cards_found() -> None:
    assert CARD_FILES, f"no hardware cards in {HARDWARE_DIR}"


@pytest.mark.parametrize("path", CARD_FILES, ids=lambda p: p.stem)
def test_card_validates_and_name_matches_file(path: Path) -> None:
    card = _load(path)
    assert card.name == path.stem


def test_required_cards_exist(cards: dict[str, HardwareCard]) -> None:
    missing = REQUIRED - set(cards)
    assert not missing, f"missing hardware cards: {sorted(missing)}"


def test_spot_values(cards: dict[str, HardwareCard]) -> None:
    h100 = cards["h100-sxm"]
    assert h100.peak_tflops.bf16 == 989
    assert h100.peak_tflops.fp8 == 1979
    assert h100.peak_tflops.fp4 is None
    assert h100.hbm_bandwidth_tb_s == 3.35
    assert h100.memory_gib == 80
    assert h100.scale_up.domain_devices == 8
    assert h100.scale_up.bandwidth_gb_s == 450

    h200 = cards["h200-sxm"]
    assert h200.memory_gib == 141
    assert h200.hbm_bandwidth_tb_s == 4.8

    gb200 = cards["gb200-nvl72"]
    assert gb200.scale_up.domain_devices == 72
    assert gb200.devices_per_node == 4

    a100 = cards["a100-sxm"]
    assert a100.peak_tflops.fp8 is None
    assert a100.peak_tflops.bf16 == 312
    assert not a100.supports("fp8")

    mi300x = cards["mi300x"]
    assert mi300x.memory_gib == 192
    assert mi300x.hbm_bandwidth_tb_s == 5.3
    assert mi300x.peak_tflops.fp4 is None

    gaudi3 = cards["gaudi3"]
    assert gaudi3.peak_tflops.bf16 == 1677  # shipping-clock figure, not the 1835 white-paper value


@pytest.mark.parametrize("path", CARD_FILES, ids=lambda p: p.stem)
def test_invariants(path: Path) -> None:
    card = _load(path)
    peak = card.peak_tflops
    if peak.fp8 is not None:
        assert peak.fp8 >= peak.bf16
    if peak.fp4 is not None:
        assert peak.fp8 is not None, "fp4 without fp8"
        assert peak.fp4 >= peak.fp8
    for p in PRECISIONS:
        # efficiency is given exactly for the supported precisions
        assert (getattr(peak, p) is None) == (getattr(card.efficiency.gemm, p) is None), p
    assert card.scale_up.bandwidth_gb_s > card.scale_out.bandwidth_gb_s
    assert card.scale_up.domain_devices % card.devices_per_node == 0
    dt.date.fromisoformat(card.price_date)
    assert 0.5 < card.efficiency.memory <= 1
    assert card.vendor in {"NVIDIA", "AMD", "Intel"}
    # every price either cites a price source or says it is an assumption
    assert re.search(r"\[P\d+", card.price_source) or "assumption" in card.price_source


@pytest.mark.parametrize("path", CARD_FILES, ids=lambda p: p.stem)
def test_every_number_carries_a_source_comment(path: Path) -> None:
    bad = [
        f"{path.name}:{i}: {line}"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if (_NUMERIC_LINE.match(line) or _NULL_LINE.match(line)) and "#" not in line
    ]
    assert not bad, "numeric/null lines without a '#' source comment:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", CARD_FILES, ids=lambda p: p.stem)
def test_cited_source_keys_are_expanded_in_header(path: Path) -> None:
    lines = path.read_text().splitlines()
    first_key = next(i for i, line in enumerate(lines) if line and not line.startswith("#"))
    header = "\n".join(lines[:first_key])
    body = "\n".join(lines[first_key:])
    defined = set(re.findall(r"^#\s+\[([STMP]\d+)\]", header, flags=re.M))
    cited = set(_SOURCE_KEY.findall(body))
    assert cited, "card cites no sources"
    assert not cited - defined, f"source keys cited but not expanded in the header: {sorted(cited - defined)}"
    assert not defined - cited, f"header lists sources the card never cites: {sorted(defined - cited)}"
