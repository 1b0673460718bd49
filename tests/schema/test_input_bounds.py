"""Bounded input: the safe opener (solver/schema/userfile.py), the bounded YAML composer
(solver/schema/yamlbound.py), card field bounds, and 'did you mean' for unknown keys and names."""

from __future__ import annotations

import os
import time

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.catalog import shipped
from solver.errors import InputError
from solver.schema.cards import HardwareCard, ModelCard
from solver.schema.suggest import did_you_mean, unknown_name
from solver.schema.userfile import read_user_bytes, read_user_text
from solver.schema.yamlbound import YAML_LIMITS
from solver.schema.yamlio import load_yaml, parse_yaml, validate_doc

MODEL = (shipped.data_dir("models") / "llama-3.1-8b.yaml").read_text()
HARDWARE = (shipped.data_dir("hardware") / "h100-sxm.yaml").read_text()


# ---- files ---------------------------------------------------------------------------------

def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "p.yaml"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(InputError, match=r"p.yaml: a FIFO \(named pipe\), not a regular file"):
        load_yaml(fifo)
    assert time.monotonic() - t0 < 2


@pytest.mark.parametrize("dev", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused(dev):
    if not os.path.exists(dev):
        pytest.skip(f"no {dev}")
    with pytest.raises(InputError, match="a character device, not a regular file"):
        read_user_bytes(dev)


def test_size_limit_before_reading_and_directories(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:
        fh.truncate((16 << 20) + 1)  # sparse
    with pytest.raises(InputError, match="16,777,217 bytes, over the 16,777,216-byte limit for a YAML file"):
        load_yaml(big)
    with pytest.raises(InputError, match="a directory, not a regular file"):
        load_yaml(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        load_yaml(tmp_path / "missing.yaml")
    assert read_user_bytes(big, head=4) == b"\0" * 4  # a look at the start reads only that


def test_text_is_utf8_and_a_bom_is_dropped(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert load_yaml(f).data == {"a": 1}
    f.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(InputError, match=r"t.yaml:2: not UTF-8 text"):
        read_user_text(f)


# ---- YAML ----------------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [65, 300, 3000])
def test_deep_nesting_is_an_input_error_not_a_recursion_error(depth):
    # libyaml refuses past 1,000 levels itself: either way one line naming the file
    with pytest.raises(InputError, match="d.yaml:1: (a.*: nested more than 64 levels deep|YAML syntax error: exceeded maximum nesting)"):
        parse_yaml("a: " + "[" * depth + "]" * depth + "\n", "d.yaml")
    text = "".join("  " * i + f"k{i}:\n" for i in range(depth)) + "  " * depth + "v: 1\n"
    with pytest.raises(InputError, match=r"d.yaml:\d+: k0.k1.*: nested more than 64 levels deep"):
        parse_yaml(text, "d.yaml")


@pytest.mark.parametrize("literal", ["9" * 4301, "-" + "1" * 5000, "0x" + "f" * 4000, "1." + "5" * 200])
def test_long_number_literals_are_refused_before_conversion(literal):
    with pytest.raises(InputError, match=r"n.yaml:2: a.b: a number of [\d,]+ characters; at most 100"):
        parse_yaml(f"a:\n  b: {literal}\n", "n.yaml")


def test_long_lists_alias_bombs_and_node_counts_stop_early():
    t0 = time.monotonic()
    with pytest.raises(InputError, match=r"l.yaml:1: a: more than 50,000 entries"):
        parse_yaml("a: [" + ",".join("1" for _ in range(1_000_000)) + "]\n", "l.yaml")
    laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]\n" for i in range(1, 10))
    with pytest.raises(InputError, match="expands to more than 250,000 YAML nodes"):
        parse_yaml(laughs, "bomb.yaml")
    assert time.monotonic() - t0 < 30


def test_constructor_errors_and_exotic_types_name_the_line():
    with pytest.raises(InputError, match=r"x.yaml:2: cannot read the value '2024-02-30'"):
        parse_yaml("a: 1\nb: 2024-02-30\n", "x.yaml")
    with pytest.raises(InputError, match=r"x.yaml:1: a YAML !!binary value is not accepted"):
        parse_yaml("a: !!binary aGVsbG8=\n", "x.yaml")
    with pytest.raises(InputError, match=r"x.yaml: YAML syntax error: control characters"):
        parse_yaml("a: \x00\n", "x.yaml")


plain = st.recursive(st.integers(-10**6, 10**6) | st.text("abc xyz", min_size=1, max_size=5).map(str.strip).filter(bool),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("pqrs"), inner, max_size=3),
                     max_leaves=30)


@settings(max_examples=80, deadline=None)
@given(doc=plain, depth=st.integers(0, 90))
def test_bounded_loader_reads_what_pyyaml_reads_within_the_depth(doc, depth):
    text = yaml.safe_dump({"root": doc}) + "deep: " + "[" * depth + "]" * depth + "\n"
    if depth + 1 > YAML_LIMITS.max_depth:
        with pytest.raises(InputError, match="levels deep"):
            parse_yaml(text, "h.yaml")
    else:
        assert parse_yaml(text, "h.yaml").data == yaml.safe_load(text)


# ---- card fields ---------------------------------------------------------------------------

@pytest.mark.parametrize("old,new,field", [
    ("hidden_size: 4096", "hidden_size: 100000000000000000000", "hidden_size"),
    ("num_layers: 32", "num_layers: 10000000", "num_layers"),
    ("vocab_size: 128256", "vocab_size: 1000000000000", "vocab_size"),
    ("num_heads: 32", "num_heads: 1000000000", "attention.num_heads"),
    ("max_context_tokens: 131072", "max_context_tokens: 100000000000", "max_context_tokens"),
])
def test_model_card_fields_have_upper_bounds(old, new, field):
    with pytest.raises(InputError, match=rf"m.yaml:\d+: {field}: Input should be less than or equal to"):
        validate_doc(ModelCard, parse_yaml(MODEL.replace(old, new), "m.yaml"))


@pytest.mark.parametrize("old,new,field", [
    ("power_w: 700", "power_w: 1.0e+308", "power_w"),
    ("price_per_hour: 4.25", "price_per_hour: 1.0e+300", "price_per_hour"),
    ("memory_gib: 80", "memory_gib: 1.0e+40", "memory_gib"),
    ("devices_per_node: 8", "devices_per_node: 1000000000", "devices_per_node"),
])
def test_hardware_card_fields_have_upper_bounds(old, new, field):
    with pytest.raises(InputError, match=rf"h.yaml:\d+: {field}: Input should be less than or equal to"):
        validate_doc(HardwareCard, parse_yaml(HARDWARE.replace(old, new), "h.yaml"))


def test_num_experts_is_bounded():
    moe = (shipped.data_dir("models") / "deepseek-v3.yaml").read_text()
    with pytest.raises(InputError, match=r"moe.num_experts: Input should be less than or equal to 4096"):
        validate_doc(ModelCard, parse_yaml(moe.replace("num_experts: 256", "num_experts: 10000000", 1), "d.yaml"))


# ---- did you mean --------------------------------------------------------------------------

def test_unknown_keys_suggest_the_closest_key():
    text = MODEL.replace("hidden_size: 4096", "hiden_size: 4096")
    with pytest.raises(InputError) as info:
        validate_doc(ModelCard, parse_yaml(text, "m.yaml"))
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("m.yaml:10: hiden_size: unknown key 'hiden_size' (did you mean 'hidden_size'?)")
    assert did_you_mean("ttft", ["ttft_ms", "tpot_ms"]) == " (did you mean 'ttft_ms'?)"
    assert did_you_mean("zzzz", ["ttft_ms", "tpot_ms"]) == ""


def test_unknown_names_get_the_closest_names_not_the_whole_list():
    with pytest.raises(InputError) as info:
        shipped.model_card("llama-3.1-7b")
    msg = str(info.value)
    assert "did you mean 'llama-3.1-70b'" in msg and "deepseek" not in msg
    with pytest.raises(InputError, match="unknown hardware 'h100-sxn'; did you mean 'h100-sxm'"):
        shipped.hardware_card("h100-sxn")
    assert unknown_name("x", "b", ["a", "b2"], "list") == "unknown x 'b'; did you mean 'b2'?; shipped: a, b2"
