"""Speculative decoding (solver/perf/speculative.py) against hand-computed numbers.

The crossover batch. Let a decode iteration of m tokens cost T(m) = max(2 P m / F, P b / BW)
(P parameters at b bytes each, F FLOP/s, BW bytes/s): weight-bound up to the ridge
m* = F b / (2 BW), compute-bound beyond. Verifying k + 1 positions of B sequences costs
T((k + 1) B); the plain step T(B); speculation yields E = (1 - a^(k+1)) / (1 - a) tokens per
verification. For B <= m* < (k + 1) B it pays while 2 P B (k + 1) / F < E P b / BW, i.e. below

    B_x = m* E / (k + 1)                          (n-gram drafting: no model cost)
    B_x = m* (E - k p / P) / (k + 1)              (a draft model of p parameters, its k passes
                                                   weight-bound: k p b / BW per verification)
"""

from __future__ import annotations

import numpy as np
import pytest

from solver.catalog import shipped
from solver.perf import runtime as rt
from solver.perf import speculative as spm
from solver.perf.arch import ModelArch
from solver.perf.memory import memory, weight_bytes
from solver.perf.stages import Load
from solver.perf.tables import HardwareTable, Plans
from solver.schema.engine import EngineParams
from solver.schema.speculative import expected_tokens

ENGINE = EngineParams(step_overhead_ms=0.0, kernels_per_layer=0.0)
F, BW = 1e15, 2e12  # the stub's FLOP/s and bytes/s; b = 1 byte per parameter
RIDGE = F * 1.0 / (2.0 * BW)  # m* = 250 tokens
TARGET_P, DRAFT_P = 1e9, 1e8  # p / P = 0.1


@pytest.fixture(scope="module")
def a8() -> ModelArch:
    return ModelArch.from_card(shipped.model_card("llama-3.1-8b"))


def stub_cycle(model, hw, plans, load, engine):
    """T(m) of the module docstring: m = every token the iteration carries, P by model."""
    params = DRAFT_P if model.name == "llama-3.1-8b" else TARGET_P
    tokens = np.asarray(load.dec_seqs + load.pre_tokens, dtype=float) + np.zeros(len(plans))
    return np.maximum(2.0 * params * tokens / F, params * 1.0 / BW), None


def plans_at(batch, **kw) -> Plans:
    cols = dict(hw=0, tp=1, pp=1, ep=1, dp=1, batch=batch, wprec=1, kvprec=1, spec=1)
    cols.update(kw)
    return Plans.of(**cols)


def test_expected_tokens_hand_numbers():
    assert expected_tokens(3, 0.75) == pytest.approx((1 - 0.75**4) / 0.25)  # 2.734375
    assert expected_tokens(3, 0.75) == pytest.approx(2.734375)
    assert expected_tokens(4, 0.7) == pytest.approx(2.77310)
    assert expected_tokens(3, 0.0) == 1.0
    assert expected_tokens(5, 1.0) == 6.0


def _ratio(arch, sp, batch):
    p = plans_at(np.asarray(batch, dtype=float))
    plain, _ = stub_cycle(arch, None, p, Load.decode(p.batch, 64.0), ENGINE)
    spec = spm.per_token_s(arch, None, p, p.batch, 64.0, ENGINE, sp, plain, stub_cycle)
    return spec / plain


def test_ngram_crossover_batch_by_hand(a70):
    sp = spm.Speculation("ngram", 3, 0.6)
    e = (1 - 0.6**4) / 0.4  # 2.176
    b_x = RIDGE * e / 4  # 136.0
    assert b_x == pytest.approx(136.0)
    r = _ratio(a70, sp, [10, 62, 135, 136, 137, 250, 1000])
    # weight-bound verification (4 x 62 <= 250): TPOT / E
    assert r[0] == pytest.approx(1 / e) and r[1] == pytest.approx(1 / e)
    assert r[2] < 1.0 and r[3] == pytest.approx(1.0) and r[4] > 1.0
    # both compute-bound: 4 positions for 2.176 tokens
    assert r[6] == pytest.approx(4 / e)


def test_draft_model_crossover_batch_by_hand(a70, a8):
    sp = spm.Speculation("draft", 4, 0.7, a8)
    e = (1 - 0.7**5) / 0.3  # 2.7731
    b_x = RIDGE * (e - 4 * DRAFT_P / TARGET_P) / 5  # 118.66
    assert b_x == pytest.approx(118.655, abs=1e-3)
    r = _ratio(a70, sp, [1, 118, 119])
    assert r[0] == pytest.approx((1 + 4 * 0.1) / e)  # one verification + 4 draft passes, / E
    assert r[1] < 1.0 < r[2]


def test_crossover_of_the_real_model_near_the_hand_formula(a8):
    """llama-3.1-8b on h100-sxm (no profiles, fp8): F = 1979 x 0.71 TFLOP/s, BW = 3.35 x 0.8
    TB/s, m* = F / (2 BW) = 262.1; n-gram k 3, a 0.6: B_x = 262.1 x 2.176 / 4 = 142.6. The
    model's GEMMs also move activations and its LM head is bf16 (a later ridge), so its
    crossover lies near it: between 0.99 and 1.12 times the hand number (142 today)."""
    hw = HardwareTable.from_cards([shipped.hardware_card("h100-sxm")], engine=ENGINE)
    m_star = 1979e12 * 0.71 / (2 * 3.35e12 * 0.8)
    hand = m_star * expected_tokens(3, 0.6) / 4
    assert hand == pytest.approx(142.61, abs=0.01)
    batch = np.arange(1.0, 400.0)
    p = plans_at(batch)
    plain, _ = rt.cycle(a8, hw, p, Load.decode(batch, 16.0), ENGINE)
    sp = spm.Speculation("ngram", 3, 0.6)
    ratio = spm.per_token_s(a8, hw, p, batch, 16.0, ENGINE, sp, plain, rt.cycle) / plain
    pays = ratio < 1.0
    assert pays[0] and not pays[-1]
    crossover = batch[np.argmin(pays)]  # first batch where it stops paying
    assert np.all(pays[batch < crossover]) and not np.any(pays[batch >= crossover])
    # within a batch step of the hand value (the model's grid: 142 against 142.6), at most 12% above
    assert 0.99 * hand <= crossover <= 1.12 * hand


def test_plans_that_do_not_speculate_are_unchanged(a70):
    sp = spm.Speculation("ngram", 3, 0.6)
    p = plans_at(np.array([8.0, 8.0]), spec=np.array([0, 1]))
    plain, _ = stub_cycle(a70, None, p, Load.decode(p.batch, 64.0), ENGINE)
    out = spm.per_token_s(a70, None, p, p.batch, 64.0, ENGINE, sp, plain, stub_cycle)
    assert out[0] == plain[0] and out[1] == pytest.approx(plain[1] / 2.176)
    assert spm.per_token_s(a70, None, p, p.batch, 64.0, ENGINE, None, plain, stub_cycle) is plain


def test_proposer_memory(a70, a8):
    hw = HardwareTable.from_cards([shipped.hardware_card("h100-sxm")])
    p = Plans.of(hw=0, tp=8, pp=1, ep=1, dp=1, batch=32.0, wprec=1, kvprec=1, spec=np.array([0, 1, 1, 1]))
    base = memory(a70, hw, p, 2048.0, 32.0, ENGINE)
    mems = [spm.with_proposer_memory(base, a70, p, 32.0, 2048.0, spm.Speculation(m, 3, 0.7, a8 if m == "draft" else None))
            for m in ("draft", "eagle", "ngram")]
    draft, eagle, ngram = mems
    assert draft.weights[0] == base.weights[0]  # spec off: nothing added
    # draft: the 8B model's fp8 weights at tp8; its KV: 32 x 2048 x 32 layers x 2 x 1 head x 128 x 1 byte
    assert draft.weights[1] - base.weights[1] == pytest.approx(float(weight_bytes(a8, p.take(np.array([0])))[0]))
    assert draft.kv_cache[1] - base.kv_cache[1] == pytest.approx(32 * 2048 * 32 * 2 * 128)
    # eagle: one decoder layer of the 70B's shape (no embedding, no LM head): the body / 80
    ends = (a70.embed_params + a70.lm_head_params) / 8 * 2.0
    layer = (float(weight_bytes(a70, p.take(np.array([0])))[0]) - ends) / 80
    assert eagle.weights[2] - base.weights[2] == pytest.approx(layer)
    assert eagle.kv_cache[2] - base.kv_cache[2] == pytest.approx(32 * 2048 * 1 * 2 * 128)
    # ngram: no weights, no KV; the verification's 4 tokens per sequence in the activations
    assert ngram.weights[3] == base.weights[3] and ngram.kv_cache[3] == base.kv_cache[3]
    assert ngram.activations[3] == pytest.approx(4 * base.activations[3])


def test_speculation_axis_is_decode_and_colocated():
    from solver.schema.roles import COLOCATED, DECODE, PREFILL

    sp = spm.Speculation("eagle", 3, 0.7)
    assert spm.speculation_axis(sp, DECODE) == [0, 1] and spm.speculation_axis(sp, COLOCATED) == [0, 1]
    assert spm.speculation_axis(sp, PREFILL) == [0]
    assert spm.speculation_axis(None, DECODE) == [0] and spm.speculation_axis(None, COLOCATED) == [0]
