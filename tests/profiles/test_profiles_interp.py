"""Interpolation of measured tables: exact at measured points, monotone and log-log linear
between them, efficiency held outside the measured range, holes flagged."""

from __future__ import annotations

import numpy as np
import pytest

from solver.catalog.shipped import hardware_card
from solver.perf.operators import bounds as rl
from solver.perf.operators.tables import load_table_set, load_tables
from solver.profiles.format import FAMILIES, load_table, shipped_root
from solver.profiles.interp import (
    EXTRAPOLATED,
    INTERPOLATED,
    MEASURED,
    ROOFLINE,
    Estimate,
    Grid,
    GroupedTable,
    SourceTally,
)


def compute_bound(xs):
    (x,) = xs
    return np.asarray(x, dtype=float)


def test_power_law_is_exact_in_log_space():
    x = np.array([1.0, 4.0, 16.0, 64.0])
    g = Grid.build([x], 3.0 * x**1.5, compute_bound)
    q = np.array([2.0, 8.0, 30.0])
    est = g.query([q])
    np.testing.assert_allclose(est.seconds, 3.0 * q**1.5, rtol=1e-12)
    assert (est.source == INTERPOLATED).all()


def test_exact_and_monotone_between_points():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    t = np.array([1.0, 1.1, 1.5, 3.0, 6.5])
    g = Grid.build([x], t, compute_bound)
    at = g.query([x])
    np.testing.assert_allclose(at.seconds, t, rtol=1e-12)
    assert (at.source == MEASURED).all()
    q = np.geomspace(1.0, 16.0, 401)
    est = g.query([q])
    assert np.all(np.diff(est.seconds) >= -1e-15)
    for lo, hi, tlo, thi in zip(x[:-1], x[1:], t[:-1], t[1:]):
        inside = (q > lo) & (q < hi)
        s = est.seconds[inside]
        assert np.all((s >= tlo * (1 - 1e-12)) & (s <= thi * (1 + 1e-12)))


def test_extrapolation_holds_the_boundary_efficiency():
    # roofline: memory floor 1 below x=4, compute x/4 above
    def roof(xs):
        return np.maximum(1.0, np.asarray(xs[0], dtype=float) / 4.0)

    x = np.array([2.0, 4.0, 8.0])
    t = np.array([2.0, 2.5, 4.0])  # boundary efficiencies: 1/2 at x=2, 2/4=0.5 at x=8
    g = Grid.build([x], t, roof)
    est = g.query([np.array([64.0, 1.0, 0.5])])
    eff_hi = roof([8.0]) / 4.0
    eff_lo = roof([2.0]) / 2.0
    np.testing.assert_allclose(est.seconds, [roof([64.0]) / eff_hi, roof([1.0]) / eff_lo,
                                             roof([0.5]) / eff_lo])
    assert (est.source == EXTRAPOLATED).all()


def test_multilinear_corners_and_outside_on_one_axis():
    a = np.array([1.0, 10.0])
    b = np.array([1.0, 100.0])
    A, B = np.meshgrid(a, b, indexing="ij")
    t = (A * B) ** 0.5  # log-linear in both
    g = Grid.build([A.ravel(), B.ravel()], t.ravel(), lambda xs: np.asarray(xs[0]) * np.asarray(xs[1]))
    est = g.query([np.array([3.0, 3.0]), np.array([7.0, 1000.0])])
    np.testing.assert_allclose(est.seconds[0], (3.0 * 7.0) ** 0.5)
    assert est.source[0] == INTERPOLATED
    # outside on b: value at b=100 scaled by roofline ratio 10
    np.testing.assert_allclose(est.seconds[1], (3.0 * 100.0) ** 0.5 * 10.0)
    assert est.source[1] == EXTRAPOLATED


def test_holes_are_filled_by_held_efficiency_and_flagged():
    # 2 x 3 grid with the (1, 2) corner not measured
    a, b = np.array([1.0, 2.0]), np.array([1.0, 2.0, 4.0])
    pts = [(i, j) for i in range(2) for j in range(3) if (i, j) != (1, 2)]
    roof = lambda xs: np.asarray(xs[0], dtype=float) * np.asarray(xs[1], dtype=float)  # noqa: E731
    A = np.array([a[i] for i, _ in pts])
    B = np.array([b[j] for _, j in pts])
    g = Grid.build([A, B], 2.0 * A * B, roof)  # efficiency 0.5 everywhere
    assert not g.measured[1, 2]
    est = g.query([np.array([2.0, 1.5, 1.5]), np.array([4.0, 3.0, 1.5])])
    np.testing.assert_allclose(est.seconds, [16.0, 9.0, 4.5])
    assert list(est.source) == [EXTRAPOLATED, EXTRAPOLATED, INTERPOLATED]


def test_zero_sized_work_costs_nothing():
    g = Grid.build([np.array([1.0, 2.0])], np.array([1.0, 2.0]), compute_bound)
    est = g.query([np.array([0.0, 1.0])])
    assert est.seconds[0] == 0.0 and est.source[0] == MEASURED


def _grouped():
    cols = {"kv_dtype": np.array(["bf16"] * 4, dtype=object), "num_heads": np.array([8, 8, 16, 16]),
            "num_kv_heads": np.array([1, 1, 2, 2]), "head_dim": np.array([128] * 4),
            "batch": np.array([1, 1, 1, 1]), "kv_tokens": np.array([1024, 2048, 1024, 2048])}
    sec = np.array([10.0, 20.0, 20.0, 40.0]) * 1e-6
    peaks = rl.Peaks.from_card(hardware_card("h100-sxm"))
    from functools import partial

    from solver.profiles.operators import _attention_neighbour

    spec = FAMILIES["attention_generation"]
    return GroupedTable.from_columns(spec.keys, spec.axes, cols, sec,
                                     partial(rl.attention_generation, peaks), _attention_neighbour)


def test_grouped_queries_mix_keys_and_stand_ins():
    t = _grouped()
    est = t.query({"kv_dtype": "bf16", "num_heads": np.array([8, 16, 32]), "num_kv_heads": np.array([1, 2, 4]),
                   "head_dim": 128}, [np.ones(3), np.array([1024.0, 2048.0, 2048.0])])
    assert list(est.source) == [MEASURED, MEASURED, EXTRAPOLATED]
    np.testing.assert_allclose(est.seconds[:2], [10e-6, 40e-6])
    assert est.seconds[2] > est.seconds[1]  # twice the KV heads of the stand-in: slower
    none = t.query({"kv_dtype": "bf16", "num_heads": 8, "num_kv_heads": 1, "head_dim": 64},
                   [np.ones(2), np.array([1024.0, 4096.0])])
    assert list(none.source) == [ROOFLINE, ROOFLINE]
    assert np.isnan(none.seconds).all()  # no table, no stand-in: no number


def test_source_tally_shares():
    tally = SourceTally(2)
    tally.add(Estimate(np.array([1.0, 1.0]), np.array([MEASURED, INTERPOLATED], dtype=np.int8)))
    tally.add(Estimate(np.array([3.0, 1.0]), np.array([ROOFLINE, EXTRAPOLATED], dtype=np.int8)))
    s = tally.shares()
    np.testing.assert_allclose(s["measured"], [0.25, 0.0])
    np.testing.assert_allclose(s["roofline"], [0.75, 0.0])
    np.testing.assert_allclose(s["interpolated"] + s["extrapolated"], [0.0, 1.0])
    np.testing.assert_allclose(tally.total, [4.0, 2.0])


# ---- the shipped tables ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def h100():
    return load_tables("h100-sxm", "vllm")


@pytest.mark.parametrize("family", ["gemm", "attention_context", "attention_generation",
                                    "allreduce"])
def test_shipped_tables_are_exact_at_measured_points(h100, family):
    t = load_table(next((shipped_root() / "h100-sxm" / "vllm").glob(f"{family}.csv*")))
    spec = FAMILIES[family]
    rng = np.random.default_rng(0)
    pick = rng.choice(len(t.columns["latency_us"]), size=min(500, len(t.columns["latency_us"])), replace=False)
    keys = {k: t.columns[k][pick] for k in spec.keys}
    xs = [t.columns[a][pick] for a in spec.axes]
    est = h100.tables[family].query(keys, xs)
    np.testing.assert_allclose(est.seconds, t.columns["latency_us"][pick] * 1e-6, rtol=1e-9)
    assert (est.source == MEASURED).all()


def test_shipped_gemm_between_and_beyond(h100):
    # Llama-3.1-70B down projection at TP 4: n 8192, k 7168 (both on the grid); m between points
    m = np.geomspace(300.0, 500.0, 50)
    est = h100.gemm(m, 8192, 7168, "bf16")
    assert (est.source == INTERPOLATED).all()
    lo, hi = h100.gemm(np.array([257.0, 512.0]), 8192, 7168, "bf16").seconds
    assert np.all((est.seconds >= min(lo, hi)) & (est.seconds <= max(lo, hi)))
    assert np.all(np.diff(est.seconds) >= 0)
    # beyond the largest measured m (32768): compute bound, time doubles with m
    far = h100.gemm(np.array([32768.0, 65536.0]), 8192, 7168, "bf16")
    assert list(far.source) == [MEASURED, EXTRAPOLATED]
    np.testing.assert_allclose(far.seconds[1] / far.seconds[0], 2.0, rtol=0.01)
    # off-grid n (Llama-3.1-70B QKV at TP 8: (8 + 2) * 128 = 1280) interpolates between measured n
    qkv = h100.gemm(np.array([1.0, 4096.0]), 1280, 8192, "fp8")
    assert (qkv.source == INTERPOLATED).all()
    # no FP4 on Hopper: no table answers (the operator model's roofline stands there)
    fp4 = h100.gemm(np.array([16.0]), 8192, 8192, "fp4")
    assert fp4.source[0] == ROOFLINE and np.isnan(fp4.seconds[0])


def test_shipped_decode_attention_long_context_is_extrapolated(h100):
    # Llama-3.1-70B at TP 8: 8 query heads, 1 KV head per device
    est = h100.attention_generation(np.array([64.0, 256.0]), np.array([4096.0, 65536.0]), 8, 1, 128, "bf16")
    assert est.source[0] in (MEASURED, INTERPOLATED)
    assert est.source[1] == EXTRAPOLATED  # the collector skipped 256 x 64K: efficiency held
    kv_bytes = 256 * 65536 * 2 * 1 * 128 * 2
    assert est.seconds[1] > kv_bytes / 4.8e12  # cannot beat H100's HBM


def test_profile_set_mixes_hardware_and_falls_back():
    cards = [hardware_card("h100-sxm"), hardware_card("mi300x"), hardware_card("h200-sxm")]
    ps = load_table_set(cards, "vllm")
    hw = np.array([0, 1, 2, 0])
    est = ps.gemm(hw, np.array([16.0, 16.0, 16.0, 1e9]), 8192, 8192, np.array([0, 0, 1, 0]))
    assert list(est.source) == [MEASURED, ROOFLINE, MEASURED, EXTRAPOLATED]
    assert np.isnan(est.seconds[1])
    assert est.seconds[0] < 1e-3 and est.seconds[2] < 1e-3
    ar = ps.allreduce(np.array([0, 2]), np.array([1 << 20, 1 << 20]), np.array([8, 8]))
    assert (ar.source <= INTERPOLATED).all()
    h200_faster = ps.attention_generation(np.array([0, 2]), 128.0, 8192.0, 8, 1, 128, "bf16")
    assert h200_faster.seconds[1] < h200_faster.seconds[0]  # 4.8 vs 3.35 TB/s


def test_user_profiles_root(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETPLAN_PROFILES", str(tmp_path))
    empty = load_tables("h100-sxm", "vllm")
    assert not empty.measured
    est = empty.gemm(np.array([16.0]), 4096, 4096, "bf16")
    assert est.source[0] == ROOFLINE and np.isnan(est.seconds[0])


def test_only_the_families_the_operator_model_asks_are_loaded(h100):
    # the collectives tables ship, but no operator draws time from them
    assert set(h100.tables) == {"gemm", "attention_context", "attention_generation", "allreduce",
                                "moe_experts", "mla_generation", "mla_context", "compute_scale"}
    assert "collectives" not in h100.provenance
