"""Find and load the shipped cards and problems, by name or by path.

Installed from a wheel, cards live in `solver/_data/{models,hardware,problems}`; in a checkout
(or an editable install) they are read from the repository's `models/`, `hardware/` and
`problems/` folders. Workload traces and length distributions (`traces/`, CSV files named by
their stem) ship the same way, in `solver/_data/traces`.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from solver.errors import InputError
from solver.schema.cards import HardwareCard, ModelCard
from solver.schema.suggest import unknown_name
from solver.schema.yamlio import load_yaml, validate_doc

Kind = Literal["models", "hardware", "problems", "traces"]
_PKG = Path(__file__).resolve().parent.parent  # the solver package


def data_dir(kind: Kind) -> Path:
    installed = _PKG / "_data" / kind
    if installed.is_dir():
        return installed
    checkout = _PKG.parent / kind
    if checkout.is_dir():
        return checkout
    raise InputError(f"cannot find the shipped {kind} folder (looked in {installed} and {checkout})")


def names(kind: Kind) -> list[str]:
    return sorted(p.stem for p in data_dir(kind).glob("*.yaml"))


def _looks_like_path(ref: str) -> bool:
    return ref.endswith((".yaml", ".yml")) or "/" in ref or ref.startswith(".")


def resolve(kind: Kind, ref: str, base: Path | None = None) -> Path:
    """The file for a card name or a path to a card file (relative paths: to `base` first,
    the folder of the file that names the card, then to the working directory)."""
    if _looks_like_path(ref):
        p = Path(ref)
        if base is not None and not p.is_absolute() and os.path.lexists(base / p):
            p = base / p
        if not os.path.lexists(p):  # a FIFO or a device is refused by the reader, by what it is
            raise InputError(f"{ref}: no such {kind[:-1] if kind != 'hardware' else 'hardware'} card file")
        return p
    p = data_dir(kind) / f"{ref}.yaml"
    if not p.is_file():
        what = {"models": "model", "hardware": "hardware", "problems": "problem"}[kind]
        listing = f"`fleetplan catalog {kind}`" if kind != "problems" else f"{data_dir(kind)}"
        text = unknown_name(what, ref, names(kind), listing)
        raise InputError(f"{text}; or give a path to a YAML {'card' if kind != 'problems' else 'file'}")
    return p


@lru_cache(maxsize=256)
def _model_card(path: str) -> ModelCard:
    return validate_doc(ModelCard, load_yaml(path))


@lru_cache(maxsize=256)
def _hardware_card(path: str) -> HardwareCard:
    return validate_doc(HardwareCard, load_yaml(path))


def model_card(ref: str, base: Path | None = None) -> ModelCard:
    return _model_card(str(resolve("models", ref, base)))


def hardware_card(ref: str, base: Path | None = None) -> HardwareCard:
    return _hardware_card(str(resolve("hardware", ref, base)))
