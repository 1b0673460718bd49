"""Error bands: which measured validation group a pool's band comes from."""

from __future__ import annotations

import pytest

from solver.catalog.calibration import load_calibration
from solver.decision.bands import error_band


def group(engine, hardware, kind):
    (g,) = [v for v in load_calibration(engine).validation
            if v.hardware == hardware and v.models == kind and v.model is None]
    return g


def test_band_of_a_fitted_group_is_its_median_error():
    g = group("vllm", "h100-sxm", "dense")
    b = error_band("vllm", "h100-sxm", moe=False)
    assert (b.ttft_pct, b.tpot_pct) == (g.ttft_median_abs_pct, g.tpot_median_abs_pct)
    assert "138 measured dense rows on h100-sxm (fitted; bias TTFT -8%, TPOT -2%)" in b.source


def test_band_of_a_held_out_group():
    g = group("trtllm", "h200-sxm", "moe")
    b = error_band("trtllm", "h200-sxm", moe=True)
    assert (b.ttft_pct, b.tpot_pct) == (g.ttft_median_abs_pct, g.tpot_median_abs_pct)
    # the error blocks recomputed after InferenceX's launch settings, the attention-DP balance
    # and DeepSeek's block-scaled FP8 GEMM rows (benchmarks/replay_accuracy.md, first sections):
    # bias TTFT -47%, TPOT +14% (from -51% / +39% at the trtllm refit)
    assert "(held out; bias TTFT -47%, TPOT +14%)" in b.source


def test_missing_kind_borrows_the_same_cards_other_kind():
    # vLLM has no MoE rows on h100-sxm: its dense rows stand in
    assert not [v for v in load_calibration("vllm").validation
                if v.hardware == "h100-sxm" and v.models == "moe"]
    b = error_band("vllm", "h100-sxm", moe=True)
    assert b.ttft_pct == group("vllm", "h100-sxm", "dense").ttft_median_abs_pct
    assert "no moe rows on h100-sxm" in b.source


def test_unmeasured_card_gets_the_worst_group():
    cal = load_calibration("vllm")
    kinds = [v for v in cal.validation if v.model is None and v.rows >= 8]  # (card, kind) groups
    worst = max(kinds, key=lambda v: max(v.ttft_median_abs_pct, v.tpot_median_abs_pct))
    b = error_band("vllm", "mi300x", moe=False)
    assert (b.ttft_pct, b.tpot_pct) == (worst.ttft_median_abs_pct, worst.tpot_median_abs_pct)
    assert "no measured rows on mi300x" in b.source
    h100 = error_band("vllm", "h100-sxm", moe=False)  # the worst group: by its larger error of the two
    assert max(b.ttft_pct, b.tpot_pct) >= max(h100.ttft_pct, h100.tpot_pct)


@pytest.mark.parametrize("engine", [None, "vllm"])
def test_default_engine_is_vllm(engine):
    assert error_band(engine, "h100-sxm", False) == error_band("vllm", "h100-sxm", False)


# ---- the narrowest group with enough rows ------------------------------------------------------


def vg(hardware, kind, rows, ttft, tpot, model=None, bias=0.0):
    from solver.schema.calibration import ValidationGroup

    return ValidationGroup(hardware=hardware, models=kind, model=model, fitted=False, rows=rows,
                           ttft_median_abs_pct=ttft, ttft_p90_abs_pct=ttft * 2, ttft_bias_pct=bias,
                           tpot_median_abs_pct=tpot, tpot_p90_abs_pct=tpot * 2, tpot_bias_pct=0.0)


GROUPS = [
    vg("h100-sxm", "dense", 138, 18.0, 6.0),
    vg("h100-sxm", "dense", 45, 66.0, 7.0, model="llama-3.1-70b", bias=49.0),
    vg("h100-sxm", "dense", 93, 10.0, 5.0, model="qwen3-32b"),
    vg("h100-sxm", "dense", 5, 90.0, 9.0, model="tiny"),  # fewer than MIN_GROUP_ROWS
    vg("h200-sxm", "moe", 4, 99.0, 99.0),  # too small to be a band
    vg("h200-sxm", "dense", 81, 56.0, 12.0),
]


def test_the_model_cards_own_group_is_used_when_it_has_enough_rows():
    from solver.decision.bands import MIN_GROUP_ROWS, _pick

    assert MIN_GROUP_ROWS == 8
    g, note = _pick(GROUPS, "h100-sxm", "dense", "llama-3.1-70b")
    assert (g.rows, g.ttft_median_abs_pct, note) == (45, 66.0, "")  # not the pooled 18%
    g, note = _pick(GROUPS, "h100-sxm", "dense", "tiny")
    assert (g.rows, g.model) == (138, None)
    assert note == "5 tiny rows on h100-sxm, under 8: every dense model's used"
    g, note = _pick(GROUPS, "h100-sxm", "dense", "llama-3.1-8b")  # no rows of its own
    assert (g.rows, g.model, note) == (138, None, "")
    g, note = _pick(GROUPS, "h200-sxm", "moe", None)  # 4 rows: the card's dense rows
    assert (g.rows, g.models) == (81, "dense") and "at least 8" in note
    g, note = _pick(GROUPS, "b200", "dense", None)
    assert g.ttft_median_abs_pct == 56.0 and "worst" in note  # the worst group with enough rows


def test_shipped_vllm_70b_on_h100_gets_its_own_rows():
    g = [v for v in load_calibration("vllm").validation
         if (v.hardware, v.models, v.model) == ("h100-sxm", "dense", "llama-3.1-70b")]
    assert len(g) == 1 and g[0].rows == 45
    b = error_band("vllm", "h100-sxm", moe=False, model="llama-3.1-70b")
    assert (b.ttft_pct, b.tpot_pct) == (g[0].ttft_median_abs_pct, g[0].tpot_median_abs_pct)
    assert b.source.startswith("vllm calibration: 45 measured llama-3.1-70b rows on h100-sxm (fitted; bias TTFT ")


def test_margin_below_the_band_is_said_loudly():
    from solver.decision.bands import margin_warning
    from solver.schema.decision import PoolBand, SloCheck

    check = SloCheck(metric="ttft_p50_ms", predicted_ms=435.0, upper_edge_ms=722.0, bound_ms=500.0,
                     margin_pct=13.0, holds_at_upper_edge=False)
    tpot = check.model_copy(update={"metric": "tpot_p99_ms"})
    pools = [PoolBand(service="chat", role="prefill", hardware="h100-sxm", band_ttft_pct=66.0, band_tpot_pct=7.0,
                      band_source="x", checks=[check]),
             PoolBand(service="chat", role="decode", hardware="h200-sxm", band_ttft_pct=99.0, band_tpot_pct=12.0,
                      band_source="x", checks=[tpot])]  # a decode pool's TTFT band bounds nothing
    assert margin_warning(0.05, pools) == (
        "the safety margin (5%) is below the widest error band of the plan's pools (TTFT +-66% of service "
        "'chat' prefill on h100-sxm): pools are sized to the bounds at the central estimate, not at the "
        "band's edge; constraints.safety_margin: 0.66 would plan for the edge (the fallback below is planned so)")
    held = [p.model_copy(update={"checks": [c.model_copy(update={"holds_at_upper_edge": True})
                                            for c in p.checks], "band_ttft_pct": 9.03}) for p in pools]
    assert margin_warning(0.05, held) == (
        "the safety margin (5%) is below the widest error band of the plan's pools (TPOT +-12% of service "
        "'chat' decode on h200-sxm): pools are sized to the bounds at the central estimate, not at the "
        "band's edge (this plan still meets every bound at the edge); constraints.safety_margin: 0.12 would "
        "plan for the edge (the fallback below is planned so)")
    assert margin_warning(0.66, pools) is None
    assert margin_warning(0.05, []) is None


def test_the_margin_that_covers_the_band_is_rounded_up():
    # llama3-70b-online's widest band is its h200-sxm decode pool's TPOT, 9.03%: 0.09 would not cover it
    from solver.decision.bands import margin_warning
    from solver.schema.decision import PoolBand, SloCheck

    check = SloCheck(metric="tpot_p50_ms", predicted_ms=27.0761, upper_edge_ms=29.5211, bound_ms=30.0,
                     margin_pct=9.746, holds_at_upper_edge=True)
    pool = PoolBand(service="chat", role="decode", hardware="h200-sxm", band_ttft_pct=11.25, band_tpot_pct=9.03,
                    band_source="x", checks=[check])
    text = margin_warning(0.05, [pool])
    assert "(TPOT +-9.03% of service 'chat' decode on h200-sxm)" in text
    assert "(this plan still meets every bound at the edge); constraints.safety_margin: 0.10 would" in text
    assert margin_warning(0.0903, [pool]) is None
