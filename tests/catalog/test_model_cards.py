"""Model cards in models/*.yaml: schema validity and parameter counts against published sizes.

The hand-computed numbers below come from the published HF config.json values (see the comment
block at the top of each card and docs/sources.md, "Model configurations"); they are written out as
arithmetic so that a wrong card value or a wrong formula in solver/perf/arch.py fails a test.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from solver.perf.arch import ModelArch
from solver.schema.cards import ModelCard

MODELS_DIR = Path(__file__).resolve().parents[2] / "models"

EXPECTED_CARDS = (
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "llama-4-scout",
    "llama-4-maverick",
    "mixtral-8x7b",
    "mixtral-8x22b",
    "deepseek-v3",
    "qwen3-32b",
    "qwen3-235b-a22b",
)

# Published sizes (billions). The cards carry the same figures; repeating them here keeps a
# card from silently "passing" by having its published figure edited to match a wrong count.
PUBLISHED_B = {
    "llama-3.1-8b": (8.03, 8.03),
    "llama-3.1-70b": (70.6, 70.6),
    "llama-3.1-405b": (405.9, 405.9),
    "llama-4-scout": (109.0, 17.0),
    "llama-4-maverick": (400.0, 17.0),
    "mixtral-8x7b": (46.7, 12.9),
    "mixtral-8x22b": (141.0, 39.0),
    "deepseek-v3": (671.0, 37.0),
    "qwen3-32b": (32.8, 32.8),
    "qwen3-235b-a22b": (235.0, 22.0),
}

REL_TOL = 0.02


def _card_paths() -> list[Path]:
    return sorted(MODELS_DIR.glob("*.yaml"))


def _raw(name: str) -> dict:
    with open(MODELS_DIR / f"{name}.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def _card(name: str) -> ModelCard:
    return ModelCard.model_validate(_raw(name))


def _arch(name: str) -> ModelArch:
    return ModelArch.from_card(_card(name))


# ---- presence and schema ------------------------------------------------------------------


def test_every_named_card_exists():
    present = {p.stem for p in _card_paths()}
    missing = set(EXPECTED_CARDS) - present
    assert not missing, f"missing model cards: {sorted(missing)}"


@pytest.mark.parametrize("path", _card_paths(), ids=lambda p: p.stem)
def test_card_validates_and_is_named_after_its_file(path: Path):
    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f)
    card = ModelCard.model_validate(raw)
    assert card.name == path.stem
    assert card.source.strip(), "source must name the published config"
    assert card.published_total_params_b is not None
    assert card.published_active_params_b is not None
    if not card.is_moe:
        assert card.published_active_params_b == card.published_total_params_b


# ---- parameter counts vs published sizes --------------------------------------------------


@pytest.mark.parametrize("path", _card_paths(), ids=lambda p: p.stem)
def test_params_within_2pct_of_card_published_figures(path: Path):
    with open(path, encoding="utf-8") as f:
        card = ModelCard.model_validate(yaml.safe_load(f))
    arch = ModelArch.from_card(card)
    total_b = arch.total_params / 1e9
    active_b = arch.active_params / 1e9
    assert total_b == pytest.approx(card.published_total_params_b, rel=REL_TOL)
    assert active_b == pytest.approx(card.published_active_params_b, rel=REL_TOL)
    assert arch.active_params <= arch.total_params
    if not card.is_moe:
        assert arch.active_params == arch.total_params


@pytest.mark.parametrize("name", EXPECTED_CARDS)
def test_published_figures_in_card_match_published_sizes(name: str):
    card = _card(name)
    total, active = PUBLISHED_B[name]
    assert card.published_total_params_b == pytest.approx(total)
    assert card.published_active_params_b == pytest.approx(active)
    arch = ModelArch.from_card(card)
    assert arch.total_params / 1e9 == pytest.approx(total, rel=REL_TOL)
    assert arch.active_params / 1e9 == pytest.approx(active, rel=REL_TOL)


# ---- hand-computed checks -----------------------------------------------------------------


def test_llama_70b_total_params_hand_computed():
    a = _arch("llama-3.1-70b")
    h, L, f, V = 8192, 80, 28672, 128256
    attn = h * 64 * 128 + 2 * h * 8 * 128 + 64 * 128 * h  # q, k+v, o
    mlp = 3 * h * f
    expected = L * (attn + mlp + 2 * h) + 2 * V * h + h  # untied embed + lm_head, final norm
    assert expected == 70_553_706_496
    assert a.total_params == expected
    assert a.total_params == pytest.approx(70.55e9, rel=0.005)


def test_llama_70b_kv_cache_bytes():
    a = _arch("llama-3.1-70b")
    assert a.kv_cache_elems_per_token_per_layer == 2 * 8 * 128 == 2048
    assert a.kv_cache_bytes_per_token(2) == 80 * 2 * 8 * 128 * 2 == 327680


def test_llama_8b_and_405b_hand_computed():
    a8 = _arch("llama-3.1-8b")
    h, f, V = 4096, 14336, 128256
    per_layer = h * 32 * 128 + 2 * h * 8 * 128 + 32 * 128 * h + 3 * h * f + 2 * h
    assert a8.total_params == 32 * per_layer + 2 * V * h + h == 8_030_261_248
    assert a8.kv_cache_bytes_per_token(2) == 32 * 2 * 8 * 128 * 2 == 131072
    a405 = _arch("llama-3.1-405b")
    assert a405.kv_cache_bytes_per_token(2) == 126 * 2 * 8 * 128 * 2 == 516096


def test_deepseek_v3_mla():
    a = _arch("deepseek-v3")
    assert a.is_mla and a.mla_latent
    assert a.kv_cache_elems_per_token_per_layer == 512 + 64
    assert a.kv_cache_bytes_per_token(2) == 61 * 576 * 2 == 70272
    h = 7168
    assert a.attn_q_params == h * 1536 + 1536 + 1536 * 128 * 192
    assert a.attn_kv_params == h * (512 + 64) + 512 + 512 * 128 * (128 + 128)
    assert a.attn_o_params == 128 * 128 * h
    assert (a.qk_dim, a.v_dim) == (192, 128)
    assert (a.dense_layers, a.moe_layers) == (3, 58)
    assert a.dense_mlp_params == 3 * h * 18432
    assert a.expert_params == 3 * h * 2048
    assert a.shared_expert_params == 3 * h * 2048
    assert (a.num_experts, a.top_k) == (256, 8)
    assert a.vocab == 129280
    assert a.total_params == pytest.approx(671.0e9, rel=0.002)


def test_llama4_maverick_layer_split():
    card = _card("llama-4-maverick")
    a = ModelArch.from_card(card)
    assert a.moe_layers == 24
    assert a.dense_layers == 24
    # Schema rule for MoE layer i must give exactly the odd layers, as in transformers'
    # moe_layers = range(interleave_moe_layer_step - 1, num_hidden_layers, step).
    moe = card.moe
    assert moe is not None
    moe_idx = [
        i
        for i in range(card.num_layers)
        if i >= moe.first_dense_layers and (i - moe.first_dense_layers + 1) % moe.every == 0
    ]
    assert moe_idx == list(range(1, 48, 2))
    assert a.dense_mlp_params == 3 * 5120 * 16384
    assert a.expert_params == 3 * 5120 * 8192
    assert a.shared_expert_params == 3 * 5120 * 8192
    assert (a.num_experts, a.top_k) == (128, 1)
    # Chunked attention: layers 3, 7, ..., 47 global; 36 of 48 restricted to 8192 tokens.
    assert a.local_window_tokens == 8192
    assert a.local_layers == 36


def test_llama4_scout_all_moe():
    a = _arch("llama-4-scout")
    assert (a.moe_layers, a.dense_layers) == (48, 0)
    assert a.dense_mlp_params == 0
    assert (a.num_experts, a.top_k) == (16, 1)
    assert a.shared_expert_params == 3 * 5120 * 8192
    assert a.local_layers == 36
    assert a.kv_cache_bytes_per_token(2) == 48 * 2 * 8 * 128 * 2 == 196608


def test_mixtral_no_local_attention_and_untied():
    for name, layers, h in (("mixtral-8x7b", 32, 4096), ("mixtral-8x22b", 56, 6144)):
        card = _card(name)
        assert card.attention.local is None
        assert card.tie_word_embeddings is False
        a = ModelArch.from_card(card)
        assert a.local_layers == 0 and a.local_window_tokens is None
        assert a.moe_layers == layers and a.dense_layers == 0
        assert (a.num_experts, a.top_k) == (8, 2)
        assert a.shared_expert_params == 0
        assert a.lm_head_params == 32000 * h


def test_mixtral_8x7b_hand_computed():
    a = _arch("mixtral-8x7b")
    h, f, V, E = 4096, 14336, 32000, 8
    attn = h * 32 * 128 + 2 * h * 8 * 128 + 32 * 128 * h
    common = 32 * (attn + 2 * h + h * E) + 2 * V * h + h
    assert a.total_params == common + 32 * E * 3 * h * f == 46_702_792_704
    assert a.active_params == common + 32 * 2 * 3 * h * f == 12_879_925_248


def test_qwen3_32b_explicit_head_dim():
    a = _arch("qwen3-32b")
    assert a.head_dim == 128
    assert a.attn_q_params == 5120 * 64 * 128
    assert a.attn_kv_params == 2 * 5120 * 8 * 128
    assert a.attn_o_params == 64 * 128 * 5120
    assert a.kv_cache_bytes_per_token(2) == 64 * 2 * 8 * 128 * 2 == 262144
    assert a.lm_head_params == 151936 * 5120  # untied


def test_qwen3_235b_moe():
    a = _arch("qwen3-235b-a22b")
    assert (a.moe_layers, a.dense_layers) == (94, 0)
    assert (a.num_experts, a.top_k) == (128, 8)
    assert a.expert_params == 3 * 4096 * 1536
    assert a.shared_expert_params == 0
    assert a.kv_heads == 4
    assert a.kv_cache_bytes_per_token(2) == 94 * 2 * 4 * 128 * 2 == 192512


def test_max_context_is_max_position_embeddings():
    expected = {
        "llama-3.1-8b": 131072,
        "llama-3.1-70b": 131072,
        "llama-3.1-405b": 131072,
        "llama-4-scout": 10485760,
        "llama-4-maverick": 1048576,
        "mixtral-8x7b": 32768,
        "mixtral-8x22b": 65536,
        "deepseek-v3": 163840,
        "qwen3-32b": 40960,
        "qwen3-235b-a22b": 40960,
    }
    for name, ctx in expected.items():
        assert _card(name).max_context_tokens == ctx, name


# ---- strictness -----------------------------------------------------------------------------


def test_unknown_top_level_key_rejected():
    raw = _raw("llama-3.1-70b")
    raw["num_layer"] = 80  # misspelt key
    with pytest.raises(ValidationError):
        ModelCard.model_validate(raw)


def test_unknown_nested_key_rejected():
    raw = copy.deepcopy(_raw("deepseek-v3"))
    raw["moe"]["num_shared_experts"] = 1  # HF-style name, not the card's
    with pytest.raises(ValidationError):
        ModelCard.model_validate(raw)
    raw = copy.deepcopy(_raw("llama-4-maverick"))
    raw["attention"]["local"]["chunk_size"] = 8192
    with pytest.raises(ValidationError):
        ModelCard.model_validate(raw)
