"""The TTFT-versus-output-length diagnostic (benchmarks/ttft_osl_slope.py), hand-computed."""

from __future__ import annotations

import pytest

from benchmarks.ttft_osl_slope import e2e_ms, group_slopes, slope


def test_e2e_is_first_token_then_osl_minus_one_gaps():
    assert e2e_ms(10.0, 1.0, 128) == pytest.approx(137.0)  # 10 + 127 x 1
    assert e2e_ms(394.0, 1.0, 512) == pytest.approx(905.0)  # 394 + 511 x 1


def test_slope_one_when_ttft_grows_by_e2e_over_c():
    # C = 2: E2E 137 -> 905 ms, (905 - 137) / 2 = 384 ms, TTFT 10 -> 394 ms: +384 ms
    assert slope(2, (10.0, 1.0), (394.0, 1.0)) == pytest.approx(1.0)
    # TTFT flat in the output length: 0
    assert slope(2, (10.0, 1.0), (10.0, 1.0)) == pytest.approx(0.0)
    # C = 4, TPOT 10: E2E 1370 -> 5510 ms, gap 1035 ms, TTFT +300 ms: 300 / 1035
    assert slope(4, (100.0, 10.0), (400.0, 10.0)) == pytest.approx(300 / 1035)


def _row(model, osl, c, ttft, hw="h100-sxm", version="1.0.0rc3"):
    return dict(model=model, hardware=hw, engine_version=version, input_tokens="1024", output_tokens=str(osl),
                concurrency=str(c), tp="1", ttft_ms=str(ttft), tpot_ms="1.0")


def test_group_slopes_pairs_the_two_lengths_and_filters():
    rows = [
        _row("a", 128, 2, 10.0), _row("a", 512, 2, 394.0),  # slope 1
        _row("a", 128, 64, 10.0), _row("a", 512, 64, 900.0),  # above --max-concurrency 32
        _row("b", 128, 2, 10.0),  # no 512-token partner: skipped
        _row("c", 128, 2, 10.0, hw="b200"), _row("c", 512, 2, 10.0, hw="b200"),  # other hardware
        _row("d", 128, 2, 10.0, version="0.5.1"), _row("d", 512, 2, 10.0, version="0.5.1"),
    ]
    out = group_slopes(rows, "h100-sxm", "1.0.0rc3", 32)
    assert list(out) == ["a"]
    assert out["a"] == [pytest.approx(1.0)]
