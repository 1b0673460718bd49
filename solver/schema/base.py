"""Shared base for every input and output document: strict, immutable pydantic models."""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator


class FieldError(ValueError):
    """A ValueError from a model validator that names the field (a loc below the model)."""

    def __init__(self, message: str, loc: tuple[str | int, ...]):
        super().__init__(message)
        self.loc = loc


def _takes_bool(annotation: Any) -> bool:
    if annotation is bool or annotation is Any:
        return True
    return any(_takes_bool(a) for a in typing.get_args(annotation))


def _takes_number(annotation: Any) -> bool:
    if annotation in (int, float):
        return True
    return any(_takes_number(a) for a in typing.get_args(annotation))


class Strict(BaseModel):
    """Unknown keys are errors; floats must be finite; documents are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, v: Any, info: ValidationInfo) -> Any:
        # pydantic's lax mode reads true/false as 1/0 for int and float fields; a YAML
        # `qps: true` or `supply: yes` is a mistake, not a number.
        if isinstance(v, bool) and info.field_name is not None:
            ann = cls.model_fields[info.field_name].annotation
            if _takes_number(ann) and not _takes_bool(ann):
                raise ValueError("expected a number, got a boolean (true/false)")
        return v
