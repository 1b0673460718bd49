"""FP8 checkpoint formats: which GEMM rows an fp8 plan reads (solver/profiles/sources/aic/gemm.py).

Expected numbers are rows of the shipped CSVs (h200-sxm TensorRT-LLM 1.3.0rc20, converted from
aiconfigurator-core 0.12.0) or of small synthetic tables whose answers are worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from solver.catalog import shipped
from solver.perf.arch import FP8_GEMM_DTYPE, ModelArch
from solver.perf.operators.bounds import CardBounds
from solver.perf.operators.measured import MeasuredTimes
from solver.perf.operators.roofline import RooflineTimes
from solver.perf.operators.tables import load_tables, measured_tables
from solver.perf.tables import HardwareTable, Plans
from solver.profiles import EXTRAPOLATED, MEASURED, SourceTally
from solver.profiles.format import FAMILIES, Provenance, csv_text, sha256_text, write_profile
from solver.profiles.operators import OperatorProfiles
from solver.schema.engine import EngineParams


def test_shipped_static_fp8_is_the_dynamic_row_less_the_compute_scale_kernel():
    prof = load_tables("h200-sxm", "trtllm")
    # gemm rows fp8,4,8192,1024 = 13.519 us and fp8_block,4,8192,1024 = 6.3541 us;
    # compute_scale row fp8,4,1024 = 7.2043 us
    est = prof.gemm([4.0, 4.0, 4.0], 8192, 1024, np.array(["fp8", "fp8_static", "fp8_block"]))
    np.testing.assert_allclose(est.seconds, [13.519e-6, (13.519 - 7.2043) * 1e-6, 6.3541e-6], rtol=1e-9)
    assert (est.source == MEASURED).all()


def _write(folder, family, rows):
    text = csv_text(family, rows)
    prov = Provenance(family=family, hardware="h200-sxm", framework="trtllm", framework_version="x",
                      collection_method="synthetic test data",
                      columns={c: c for c in FAMILIES[family].columns}, rows=len(rows),
                      licence="Apache-2.0", content_sha256=sha256_text(text))
    write_profile(folder, family, text, prov)


def test_static_fp8_is_floored_at_the_roofline_and_flagged_without_a_scale_table(tmp_path):
    folder = tmp_path / "h200-sxm" / "trtllm"
    # m = 1..2 of an 8192 x 8192 GEMM: the fp8 weights alone are 64 MiB, 67.1 MB / 4.8 TB/s =
    # 14.0 us on an H200 (plus the fp8 input and the bf16 output), so a 30 us row less a 20 us
    # kernel (10 us) is floored there
    _write(folder, "gemm", [("fp8", 1, 8192, 8192, 30.0), ("fp8", 2, 8192, 8192, 30.0)])
    _write(folder, "compute_scale", [("fp8", 1, 8192, 20.0), ("fp8", 2, 8192, 20.0)])
    prof = OperatorProfiles.load("h200-sxm", "trtllm", root=tmp_path, bounds=CardBounds.from_card)
    card = shipped.hardware_card("h200-sxm")
    sol = (8192 * 8192 + 8192 + 2 * 8192) / (card.hbm_bandwidth_tb_s * 1e12)  # W, X fp8; Y bf16
    est = prof.gemm([1.0], 8192, 8192, "fp8_static")
    assert est.seconds[0] == pytest.approx(max(10e-6, sol), rel=1e-9)
    assert sol > 10e-6
    # without the compute-scale table the dynamic row stands, flagged extrapolated
    (folder / "compute_scale.csv").unlink()
    (folder / "compute_scale.meta.json").unlink()
    prof = OperatorProfiles.load("h200-sxm", "trtllm", root=tmp_path, bounds=CardBounds.from_card)
    est = prof.gemm([1.0], 8192, 8192, "fp8_static")
    assert est.seconds[0] == pytest.approx(30e-6) and est.source[0] == EXTRAPOLATED
    # a table without block-scaled rows answers them from the per-tensor ones, flagged
    est = prof.gemm([1.0], 8192, 8192, "fp8_block")
    assert est.seconds[0] == pytest.approx(30e-6) and est.source[0] == EXTRAPOLATED


@pytest.mark.parametrize("model,dtype", [("llama-3.1-70b", "fp8_static"), ("qwen3-32b", "fp8_block"),
                                         ("deepseek-v3", "fp8_block")])
def test_cards_name_their_fp8_checkpoint_format(model, dtype):
    assert ModelArch.from_card(shipped.model_card(model)).fp8_gemm == dtype


def test_an_fp8_plan_reads_the_cards_format_and_bf16_is_untouched():
    card = shipped.hardware_card("h200-sxm")
    hw = HardwareTable.from_cards([card], engine=EngineParams(), profiles=measured_tables([card], "trtllm"))
    base = shipped.model_card("llama-3.1-70b")
    plans = Plans.of(hw=0, tp=np.array([8, 8]), pp=1, ep=1, dp=1, batch=4,
                     wprec=np.array([1, 0]), kvprec=np.array([1, 0]))
    out = {}
    for scaling in FP8_GEMM_DTYPE:
        arch = ModelArch.from_card(base.model_copy(update={"fp8_scaling": scaling}))
        times = MeasuredTimes(RooflineTimes(arch, hw, plans), hw.profiles, SourceTally(len(plans)))
        out[scaling] = times.dense_mlp(np.array([4.0, 4.0])) + times.projections(np.array([4.0, 4.0]))
    # the bf16 plan does not depend on the FP8 format
    assert len({round(float(v[1]), 15) for v in out.values()}) == 1
    # at 4 tokens a static input scale saves one compute-scale kernel (~7 us) per GEMM: 4 GEMMs
    saved = out["per_tensor_dynamic"][0] - out["per_tensor_static"][0]
    assert 4 * 6e-6 < saved < 4 * 8e-6
    assert out["block"][0] < out["per_tensor_dynamic"][0]
