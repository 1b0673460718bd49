"""Loading problems: inline cards, card paths, token distributions, line-numbered errors."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from solver.errors import InputError
from solver.plan.planner import plan
from solver.problem.load import load_problem, parse_problem
from solver.schema.problem import TokenDist
from tests.support.cli import ROOT


def _card(kind: str, name: str) -> dict:
    return yaml.safe_load((ROOT / kind / f"{name}.yaml").read_text())


def test_inline_model_and_hardware_cards_plan(tmp_path):
    model = _card("models", "llama-3.1-8b") | {"name": "my-8b"}
    pod = _card("hardware", "h100-sxm") | {"name": "h100-pod16", "devices_per_node": 8}
    pod["scale_up"] = pod["scale_up"] | {"domain_devices": 16}
    problem = {
        "name": "inline",
        "services": [{"name": "s", "model": model, "precision": "fp8",
                      "workload": {"qps": 20, "input_tokens": 1024, "output_tokens": 100},
                      "slo": {"ttft_ms": 500, "tpot_ms": 40}}],
        "hardware": [{"type": pod, "price_per_hour": 3.0}],
    }
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(problem, sort_keys=False))
    rp = load_problem(path)
    assert rp.models[0].name == "my-8b" and rp.hardware_names == ("h100-pod16",)
    doc = plan(rp)
    assert doc.status == "optimal"
    assert set(doc.devices_by_type) == {"h100-pod16"}
    # $3/device-hour from the entry, not the card's default
    pool = doc.services[0].pools[0]
    assert pool.cost_per_hour == pytest.approx(pool.devices * 3.0)


def test_card_path_is_relative_to_the_problem_file(tmp_path):
    (tmp_path / "cards").mkdir()
    card = _card("models", "llama-3.1-8b") | {"name": "path-8b"}
    (tmp_path / "cards" / "m.yaml").write_text(yaml.safe_dump(card))
    (tmp_path / "p.yaml").write_text(textwrap.dedent("""\
        name: rel
        services:
          - name: s
            model: cards/m.yaml
            workload: {qps: 1, input_tokens: 100, output_tokens: 10}
        hardware:
          - type: h100-sxm
        """))
    rp = load_problem(tmp_path / "p.yaml")
    assert rp.models[0].name == "path-8b"


def test_token_distributions():
    assert TokenDist.model_validate(2048).mean_tokens == 2048
    d = TokenDist.model_validate({"mean": 1000, "p99": 4000})
    assert (d.mean_tokens, d.p99_tokens) == (1000, 4000)
    # histogram: mean = (100*1 + 1000*98 + 8000*1) / 100 = 1061; p99 reached at 1000 (99 %)
    h = TokenDist.model_validate({"histogram": [[100, 1], [1000, 98], [8000, 1]]})
    assert h.mean_tokens == pytest.approx(1061.0)
    assert h.p99_tokens == 1000
    h2 = TokenDist.model_validate({"histogram": [[100, 1], [1000, 97], [8000, 2]]})
    assert h2.p99_tokens == 8000


def test_errors_name_file_line_and_field():
    text = textwrap.dedent("""\
        name: x
        services:
          - name: s
            model: llama-3.1-8b
            workload:
              qps: -3
              input_tokens: 100
              output_tokens: 10
        hardware:
          - type: h100-sxm
            suppply: 4
        """)
    with pytest.raises(InputError) as e:
        parse_problem(text, "mem.yaml")
    msg = str(e.value)
    assert "mem.yaml:6: services[0].workload.qps: Input should be greater than 0" in msg
    assert "mem.yaml:11: hardware[0].suppply: unknown key 'suppply'" in msg


def test_unknown_card_error_names_line():
    text = "name: x\nservices:\n  - name: s\n    model: llama-9\n    workload: {qps: 1, input_tokens: 1, output_tokens: 1}\nhardware: [{type: h100-sxm}]\n"
    with pytest.raises(InputError, match=r"mem.yaml:4: services\[0\].model: unknown model 'llama-9'"):
        parse_problem(text, "mem.yaml")


def test_software_selects_calibration_and_engine_overrides_win(tmp_path):
    from solver.catalog.calibration import engine_params

    base = """\
name: sw
services:
  - name: s
    model: llama-3.1-8b
    workload: {qps: 1, input_tokens: 100, output_tokens: 10}
hardware:
  - type: h100-sxm
"""
    plain = parse_problem(base, "a.yaml")
    assert plain.engine == engine_params(None)  # no engine declared: uncalibrated defaults
    cal = parse_problem(base + "software: {engine: vllm, version: '0.11'}\n", "b.yaml")
    assert cal.engine == engine_params("vllm")
    over = parse_problem(base + "software: {engine: vllm}\nengine: {step_overhead_ms: 7.5}\n", "c.yaml")
    assert over.engine.step_overhead_ms == 7.5
    # every other field still comes from the calibration
    assert over.engine.gemm_efficiency_factor == engine_params("vllm").gemm_efficiency_factor
    with pytest.raises(InputError, match=r"d.yaml:9: software.engine"):
        parse_problem(base + "software:\n  engine: tensorrt\n", "d.yaml")
