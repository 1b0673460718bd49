"""Table lookups in the stage model's terms (solver/profiles/hooks.py): answers where a table
covers the operator, no number (NaN, source ROOFLINE) where none does."""

from __future__ import annotations

import numpy as np
import pytest

from solver.catalog.shipped import hardware_card
from solver.perf.operators.tables import load_table_set
from solver.profiles import hooks
from solver.profiles.interp import EXTRAPOLATED, INTERPOLATED, MEASURED, ROOFLINE, Estimate, SourceTally


@pytest.fixture(scope="module")
def ps():
    return load_table_set([hardware_card("h100-sxm"), hardware_card("mi300x")], "vllm")


def test_projections_and_mlp_use_tables_where_they_exist(ps):
    hw = np.array([0, 0, 1])
    tokens = np.array([64.0, 4096.0, 64.0])
    proj = hooks.attention_projections(ps, hw, tokens, 8192, 64, 8, 128, np.array([8, 8, 8]), 1)
    assert list(proj.source[:2]) == [INTERPOLATED, INTERPOLATED] and proj.source[2] == ROOFLINE
    assert np.isnan(proj.seconds[2]) and proj.seconds[1] > proj.seconds[0] > 0
    # the weights alone bound decode GEMMs from below: QKV (8 + 2) x 128 and O 8 x 128 columns of
    # 8192 fp8 weights per device at TP 8, read at 3.35 TB/s
    assert proj.seconds[0] > (1280 + 1024) * 8192 / 3.35e12
    mlp = hooks.dense_mlp(ps, hw, tokens, 8192, 28672, np.array([8, 8, 8]), 0)
    assert (mlp.source[:2] <= INTERPOLATED).all() and np.isnan(mlp.seconds[2])
    head = hooks.lm_head(ps, np.array([0]), np.array([64.0]), 8192, 128256, np.array([8]))
    assert head.source[0] == INTERPOLATED


def test_allreduce_inside_the_domain_only(ps):
    hw = np.zeros(3, dtype=int)
    tp = np.array([1, 8, 16])
    est = hooks.tp_allreduce(ps, hw, np.array([64.0, 64.0, 64.0]), 8192, tp, np.array([8, 8, 8]))
    assert est.seconds[0] == 0.0 and est.source[0] == MEASURED
    assert est.source[1] <= INTERPOLATED and 1e-6 < est.seconds[1] < 1e-3
    assert est.source[2] == ROOFLINE and np.isnan(est.seconds[2])  # across nodes: no table


def test_prefill_attention_chunks_and_windows(ps):
    hw = np.zeros(3, dtype=int)
    whole = hooks.prefill_attention(ps, hw, np.array([2048.0, 512.0, 4096.0]),
                                    np.array([2048.0, 2048.0, 2048.0]), 64, 8, 128, np.array([8, 8, 8]), 0)
    # a 512-token chunk of a 2048-token prompt: a quarter of the whole prompt's attention
    np.testing.assert_allclose(whole.seconds[1], whole.seconds[0] / 4)
    assert whole.seconds[2] > whole.seconds[0]  # two prompts
    assert (whole.source <= INTERPOLATED).all()
    windowed = hooks.prefill_attention(ps, hw[:1], np.array([16384.0]), np.array([16384.0]), 40, 8, 128,
                                       np.array([8]), 0, window=8192)
    full = hooks.prefill_attention(ps, hw[:1], np.array([16384.0]), np.array([16384.0]), 40, 8, 128,
                                   np.array([8]), 0)
    assert windowed.seconds[0] < full.seconds[0] and windowed.source[0] == EXTRAPOLATED


def test_decode_attention_and_source_shares(ps):
    hw = np.array([0, 0, 1])
    seqs = np.array([32.0, 0.0, 32.0])
    ctx = np.array([2048.0, 2048.0, 2048.0])
    est = hooks.decode_attention(ps, hw, seqs, ctx, 64, 8, 128, np.array([8, 8, 8]), 1)
    assert est.source[0] <= INTERPOLATED and est.seconds[1] == 0.0 and est.source[2] == ROOFLINE
    assert np.isnan(est.seconds[2])
    capped = hooks.decode_attention(ps, hw[:1], seqs[:1], np.array([65536.0]), 64, 8, 128,
                                    np.array([8]), 1, window=2048)
    np.testing.assert_allclose(capped.seconds, est.seconds[:1])
    tally = SourceTally(3)
    answered = Estimate(np.where(est.source == ROOFLINE, 1.0, est.seconds), est.source)
    tally.add(answered)
    ar = hooks.tp_allreduce(ps, hw, seqs, 8192, np.array([8, 8, 8]), np.array([8, 8, 8]))
    tally.add(Estimate(np.where(ar.source == ROOFLINE, 1.0, ar.seconds), ar.source))
    shares = tally.shares()
    np.testing.assert_allclose(sum(shares.values()), [1.0, 1.0, 1.0])
    assert shares["roofline"][2] == 1.0 and shares["roofline"][0] == 0.0
