"""The shipped engine calibrations: well-formed, fitted only on h100_sxm, and current.

`validation` holds each engine's error per hardware card and model kind with the fitted
parameters; plans draw their uncertainty bands from it, so it must match what the code predicts
today (re-run `python benchmarks/calibrate.py --errors-only` after changing the model). The
files are fitted through the replay (`predictor: replay`); `validation` stays the closed form's.
"""

from __future__ import annotations

import numpy as np
import pytest

from solver.accuracy.replay_fit import subsample
from solver.accuracy.replay_rows import replay_rows
from solver.accuracy.validate import parse_measured, predict_rows
from solver.catalog import shipped
from solver.catalog.calibration import load_calibration
from solver.perf.arch import ModelArch
from tests.support.cli import ROOT

DATA = ROOT / "benchmarks" / "data" / "silicon_sample_validate.csv"
ENGINES = ("vllm", "trtllm", "sglang")


@pytest.fixture(scope="module")
def rows():
    return parse_measured(str(DATA), DATA.read_text())[1]


@pytest.mark.parametrize("engine", ENGINES)
def test_only_h100_dense_rows_are_marked_fitted(engine):
    cal = load_calibration(engine)
    assert cal is not None and cal.engine == engine
    fitted = [g for g in cal.validation if g.fitted and g.model is None]
    assert [(g.hardware, g.models) for g in fitted] == [("h100-sxm", "dense")]
    # a model card's group is fitted exactly when its (card, kind) group is
    assert all(g.hardware == "h100-sxm" and g.models == "dense" for g in cal.validation if g.fitted)
    (g,) = fitted
    assert g.rows == cal.fit_error.rows
    if cal.predictor == "closed-form":  # otherwise fit_error is the replay's, validation the closed form's
        assert g.ttft_median_abs_pct == pytest.approx(cal.fit_error.ttft_median_abs_pct, abs=0.01)
        assert g.tpot_median_abs_pct == pytest.approx(cal.fit_error.tpot_median_abs_pct, abs=0.01)
    else:
        assert cal.method.startswith("replay")
        # the replay fit has no harness terms: no arrival waves, no mixed-batch slowdown
        assert (cal.params.wave_size_coefficient, cal.params.wave_size_exponent) == (1.0, 0.0)
        assert cal.params.mixed_batch_slowdown == 1.0
    for v in cal.validation:
        assert v.ttft_p90_abs_pct >= v.ttft_median_abs_pct
        assert v.tpot_p90_abs_pct >= v.tpot_median_abs_pct


@pytest.mark.parametrize("engine", ENGINES)
def test_fitted_group_matches_todays_predictions(engine, rows):
    cal = load_calibration(engine)
    mine = [r for r in rows if r.engine == engine and r.hardware == "h100-sxm"
            and ModelArch.from_card(shipped.model_card(r.model)).moe_layers == 0]
    if cal.predictor == "replay":  # the groups are the replay's errors (benchmarks/calibrate.py)
        from solver.accuracy.replay_rows import replay_rows

        ttft, tpot = replay_rows(str(DATA), mine, lambda _e: cal.params, slowdown=1.0)
    else:
        ttft, tpot = predict_rows(str(DATA), mine, lambda _e: cal.params)
    mt = np.array([r.ttft_ms for r in mine])
    mp = np.array([r.tpot_ms for r in mine])
    (g,) = [v for v in cal.validation if v.fitted and v.model is None]
    assert len(mine) == g.rows
    assert float(np.median(np.abs(ttft - mt) / mt * 100)) == pytest.approx(g.ttft_median_abs_pct, abs=0.01)
    assert float(np.median(np.abs(tpot - mp) / mp * 100)) == pytest.approx(g.tpot_median_abs_pct, abs=0.01)


@pytest.mark.slow
def test_h100_dense_replay_accuracy(rows):
    # The shipped calibrations are fitted through the replay, which `fleetplan validate` runs by
    # default. On every 10th h100_sxm dense row (58 of 579, all engines; subsample order of
    # solver/accuracy/replay_fit.py) the replay measured 19.1% TTFT and 6.0% TPOT median
    # |error| at this calibration; issue 14's target is 12% / 7% (not met on TTFT: TensorRT-LLM's
    # rows, 32% over all 357, benchmarks/replay_accuracy.md). Guards against a regression.
    mine = [r for r in rows if r.hardware == "h100-sxm" and r.raw.get("source_system") == "h100_sxm"
            and ModelArch.from_card(shipped.model_card(r.model)).moe_layers == 0]
    assert len(mine) == 579
    sub = subsample(mine, 10)
    ttft, tpot = replay_rows(str(DATA), sub)
    mt = np.array([r.ttft_ms for r in sub])
    mp = np.array([r.tpot_ms for r in sub])
    assert len(sub) == 58
    assert float(np.median(np.abs(ttft - mt) / mt)) <= 0.20
    assert float(np.median(np.abs(tpot - mp) / mp)) <= 0.07


@pytest.mark.parametrize("engine", ENGINES)
def test_model_groups_partition_their_card_and_kind_group(engine, rows):
    """Each (card, kind) group that holds several model cards is split into one group per card
    (from the same predictions), whose rows add up to it; a group of one card is not repeated."""
    cal = load_calibration(engine)
    kinds = {(g.hardware, g.models): g for g in cal.validation if g.model is None}
    mine = [r for r in rows if r.engine == engine]
    for (hw, kind), g in kinds.items():
        cards = {r.model for r in mine if r.hardware == hw
                 and (ModelArch.from_card(shipped.model_card(r.model)).moe_layers > 0) == (kind == "moe")}
        split = [v for v in cal.validation if v.model is not None and (v.hardware, v.models) == (hw, kind)]
        if len(cards) == 1:
            assert split == []
        else:
            assert sorted(v.model for v in split) == sorted(cards)
            assert sum(v.rows for v in split) == g.rows
