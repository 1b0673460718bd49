"""Shared base for every input and output document: strict, immutable pydantic models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Unknown keys are errors; floats must be finite; documents are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
