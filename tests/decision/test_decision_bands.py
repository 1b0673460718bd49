"""Error bands: which measured validation group a pool's band comes from."""

from __future__ import annotations

import pytest

from solver.catalog.calibration import load_calibration
from solver.decision.bands import error_band


def group(engine, hardware, kind):
    (g,) = [v for v in load_calibration(engine).validation if v.hardware == hardware and v.models == kind]
    return g


def test_band_of_a_fitted_group_is_its_median_error():
    g = group("vllm", "h100-sxm", "dense")
    b = error_band("vllm", "h100-sxm", moe=False)
    assert (b.ttft_pct, b.tpot_pct) == (g.ttft_median_abs_pct, g.tpot_median_abs_pct)
    assert "138 measured dense rows on h100-sxm (fitted)" in b.source


def test_band_of_a_held_out_group():
    g = group("trtllm", "h200-sxm", "moe")
    b = error_band("trtllm", "h200-sxm", moe=True)
    assert (b.ttft_pct, b.tpot_pct) == (g.ttft_median_abs_pct, g.tpot_median_abs_pct)
    assert "(held out)" in b.source


def test_missing_kind_borrows_the_same_cards_other_kind():
    # vLLM has no MoE rows on h100-sxm: its dense rows stand in
    assert not [v for v in load_calibration("vllm").validation
                if v.hardware == "h100-sxm" and v.models == "moe"]
    b = error_band("vllm", "h100-sxm", moe=True)
    assert b.ttft_pct == group("vllm", "h100-sxm", "dense").ttft_median_abs_pct
    assert "no moe rows on h100-sxm" in b.source


def test_unmeasured_card_gets_the_worst_group():
    cal = load_calibration("vllm")
    worst = max(cal.validation, key=lambda v: max(v.ttft_median_abs_pct, v.tpot_median_abs_pct))
    b = error_band("vllm", "mi300x", moe=False)
    assert (b.ttft_pct, b.tpot_pct) == (worst.ttft_median_abs_pct, worst.tpot_median_abs_pct)
    assert "no measured rows on mi300x" in b.source
    h100 = error_band("vllm", "h100-sxm", moe=False)  # the worst group: by its larger error of the two
    assert max(b.ttft_pct, b.tpot_pct) >= max(h100.ttft_pct, h100.tpot_pct)


@pytest.mark.parametrize("engine", [None, "vllm"])
def test_default_engine_is_vllm(engine):
    assert error_band(engine, "h100-sxm", False) == error_band("vllm", "h100-sxm", False)
