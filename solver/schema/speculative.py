"""Speculative decoding of a service (a service input, `services[].speculative`).

A proposer drafts `tokens` (k) tokens per sequence; the target model verifies the k + 1
positions in one forward pass and keeps the accepted prefix plus one token of its own. With a
per-token acceptance rate a (i.i.d.), a verification step yields (1 - a^(k+1)) / (1 - a)
tokens on average (Leviathan, Kalman, Matias, "Fast Inference from Transformers via
Speculative Decoding", ICML 2023, arXiv 2211.17192, eq. 1). Methods:

- `draft`: a smaller model of the same tokenizer (`draft_model`, a card name or path) runs k
  decode steps per verification (Leviathan et al.; vLLM `speculative_config.model`);
- `eagle`: a one-decoder-layer head on the target's hidden states (Li et al., "EAGLE:
  Speculative Sampling Requires Rethinking Feature Uncertainty", ICML 2024, arXiv 2401.15077,
  section 4: the draft model is the target's embedding and LM head around an autoregression
  head of one fully connected layer and one decoder layer);
- `mtp`: multi-token-prediction modules trained with the model (DeepSeek-V3 technical report,
  arXiv 2412.19437, section 2.2: one Transformer block per depth, embedding and output head
  shared with the main model);
- `ngram`: prompt-lookup drafting (vLLM `method: ngram`), no model cost.

The acceptance rate is the user's measurement for their traffic (it depends on the data and
the proposer); the performance model (solver/perf/speculative.py) turns it into a step time.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from solver.schema.base import Strict

# An input bound: vLLM's default num_speculative_tokens is 1-5 for the shipped methods; EAGLE's
# paper drafts 5-6 (tree depth 6); beyond 16 the acceptance of the last positions is negligible.
MAX_SPEC_TOKENS = 16


class Speculative(Strict):
    method: Literal["draft", "eagle", "mtp", "ngram"]
    draft_model: str | None = Field(None, min_length=1, max_length=500,
                                    description="method draft: the draft model's card name or path")
    tokens: int = Field(ge=1, le=MAX_SPEC_TOKENS, description="tokens drafted per verification step (k)")
    acceptance_rate: float = Field(ge=0, le=1, description="probability a drafted token is accepted (a)")

    @model_validator(mode="after")
    def _check(self) -> Speculative:
        if self.method == "draft" and self.draft_model is None:
            raise ValueError("method draft needs a draft_model (a model card name or path)")
        if self.method != "draft" and self.draft_model is not None:
            raise ValueError(f"draft_model is only for method draft (method is {self.method})")
        return self

    @property
    def expected_tokens(self) -> float:
        """Tokens per verification step: (1 - a^(k+1)) / (1 - a), k + 1 at a = 1."""
        return expected_tokens(self.tokens, self.acceptance_rate)

    @property
    def label(self) -> str:
        """METHOD:K:A[:DRAFT], the form `from_spec` reads."""
        tail = f":{self.draft_model}" if self.draft_model else ""
        return f"{self.method}:{self.tokens}:{self.acceptance_rate:g}{tail}"

    @classmethod
    def from_spec(cls, text: str) -> Speculative:
        """`estimate --speculative METHOD:K:A[:DRAFT]`, e.g. eagle:3:0.75 or
        draft:4:0.7:llama-3.1-8b (ValueError naming what is wrong)."""
        parts = text.split(":", 3)
        if len(parts) < 3:
            raise ValueError(f"expected METHOD:K:A[:DRAFT] (e.g. eagle:3:0.75), got '{text}'")
        try:
            k, a = int(parts[1]), float(parts[2])
        except ValueError:
            raise ValueError(f"K must be a whole number and A a number in [0, 1], got '{text}'") from None
        fields = dict(method=parts[0], tokens=k, acceptance_rate=a)
        if len(parts) == 4:
            fields["draft_model"] = parts[3]
        try:
            return cls(**fields)
        except ValueError as exc:
            errs = getattr(exc, "errors", None)
            msg = "; ".join(e["msg"] for e in errs()) if callable(errs) else str(exc)
            raise ValueError(msg) from None


def expected_tokens(k: int, a: float) -> float:
    """(1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, eq. 1); its limit k + 1 at a = 1."""
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)
