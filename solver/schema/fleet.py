"""Fleet-level problem fields (extensions to SPEC): sites, failure domains, the current
deployment and the cost of switching away from it.

    sites:                         # optional; without it the fleet is one place, as in SPEC
      - name: us-east
        power_kw: 400              # optional cap on the site's devices' power
        hardware:                  # the types available at this site (others: none there)
          - {type: h100-sxm, supply: 256, price_per_hour: 2.40}   # supply omitted: unlimited
    services:
      - name: chat
        sites: [us-east]           # optional pin; default: any site (demand split freely)
    constraints:
      heterogeneous_prefill_decode: true     # false: prefill and decode pools on one type
      survive: {lose_instances: 1, lose_site: true}
    current:                       # today's deployment (needs `transition`)
      - {service: chat, role: decode, hardware: h100-sxm, site: us-east,
         config: "tp4 pp1 batch 128", instances: 6}
    transition: {per_device_moved_usd: 20, per_instance_resharded_usd: 50,
                 drained_hours_per_change: 0.5, horizon_hours: 720}

Cross-field checks (names that must exist) are made by `check_fleet_fields` in `problem_checks.py`, called from the
Problem's model validator, so that every error names the offending field and line.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, model_validator

from solver.schema.base import FieldError, Strict
from solver.schema.tco import SiteCost

MAX_SITES = 64
MAX_LOSE_INSTANCES = 16
MAX_SUPPLY = 10_000_000
MAX_PRICE = 10_000.0
MAX_DEGREE = 1024
MAX_BATCH = 65_536


class SiteHardware(Strict):
    """One hardware type available at a site (the type is a `hardware:` entry's name)."""

    type: str = Field(min_length=1, max_length=200)
    supply: int | None = Field(None, ge=0, le=MAX_SUPPLY, description="devices at this site")
    price_per_hour: float | None = Field(
        None, gt=0, le=MAX_PRICE, description="USD/device-hour at this site; default the entry's"
    )


class Site(Strict):
    name: str = Field(min_length=1, max_length=200)
    power_kw: float | None = Field(None, gt=0, le=1e7, description="cap on the site's power")
    hardware: list[SiteHardware] = Field(min_length=1, max_length=100)
    cost: SiteCost | None = None  # energy and hosting of owned devices here (schema/tco.py)

    @model_validator(mode="after")
    def _check(self) -> Site:
        types = [h.type for h in self.hardware]
        for j, t in enumerate(types):
            if t in types[:j]:
                raise FieldError(f"hardware type '{t}' repeats at site '{self.name}'",
                                 ("hardware", j, "type"))
        return self


class Survive(Strict):
    """Failure domains the fleet must survive, each on its own (not together): losing the k
    largest instances of any one hardware type, or losing any one whole site."""

    lose_instances: int | None = Field(None, ge=1, le=MAX_LOSE_INSTANCES)
    lose_site: bool = False

    @model_validator(mode="after")
    def _check(self) -> Survive:
        if self.lose_instances is None and not self.lose_site:
            raise ValueError("give lose_instances: k and/or lose_site: true")
        return self


_CONFIG_RE = re.compile(r"^\s*(?:(tp|pp|ep|dp|batch|chunk)\s*(\d+)[\s,]*)+$")


def parse_config(text: str) -> dict[str, int]:
    """'tp4 pp2 ep1 dp1 batch 64 chunk 2048' (the form plans print) -> {'tp': 4, ...}."""
    if not _CONFIG_RE.match(text):
        raise ValueError(f"config '{text}' is not of the form 'tp4 pp2 ep1 dp1 batch 64 [chunk 2048]'")
    out: dict[str, int] = {}
    for word, num in re.findall(r"(tp|pp|ep|dp|batch|chunk)\s*(\d+)", text):
        if word in out:
            raise ValueError(f"config '{text}' gives {word} twice")
        out[word] = int(num)
    if "batch" not in out:
        raise ValueError(f"config '{text}' needs a batch")
    return out


class CurrentPool(Strict):
    """A pool of today's deployment: the fields tp/pp/ep/dp/batch/chunk_tokens, or a named
    `config: "tp4 pp2 batch 64"` (the form plans print), which fills the same fields."""

    service: str = Field(min_length=1, max_length=200)
    role: Literal["prefill", "decode", "colocated"]
    hardware: str = Field(min_length=1, max_length=200)
    site: str | None = Field(None, min_length=1, max_length=200)
    tp: int = Field(1, ge=1, le=MAX_DEGREE)
    pp: int = Field(1, ge=1, le=MAX_DEGREE)
    ep: int = Field(1, ge=1, le=MAX_DEGREE)
    dp: int = Field(1, ge=1, le=MAX_DEGREE)
    batch: int | None = Field(None, ge=1, le=MAX_BATCH)
    chunk_tokens: int | None = Field(None, ge=1, le=1_048_576)
    instances: int = Field(ge=1, le=MAX_SUPPLY)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler):
        """In validation mode the `config` string form may stand for tp/pp/ep/dp/batch/chunk."""
        schema = handler(core_schema)
        if handler.mode == "validation":
            target = handler.resolve_ref_schema(schema)
            target.setdefault("properties", {})["config"] = {
                "type": "string", "description": "e.g. 'tp4 pp2 batch 64' (instead of the fields)"}
        return schema

    @model_validator(mode="before")
    @classmethod
    def _named_config(cls, v: Any) -> Any:
        if not isinstance(v, dict) or "config" not in v:
            return v
        v = dict(v)
        text = v.pop("config")
        explicit = [k for k in ("tp", "pp", "ep", "dp", "batch", "chunk_tokens") if k in v]
        if explicit:
            raise FieldError(f"give either config or {', '.join(explicit)}, not both", ("config",))
        if not isinstance(text, str):
            raise FieldError(f"config must be a string such as 'tp4 pp2 batch 64', got {text!r}",
                             ("config",))
        try:
            cfg = parse_config(text)
        except ValueError as exc:
            raise FieldError(str(exc), ("config",)) from None
        v.update({("chunk_tokens" if k == "chunk" else k): n for k, n in cfg.items()})
        return v

    @model_validator(mode="after")
    def _check(self) -> CurrentPool:
        if self.batch is None:
            raise FieldError("a batch is required (batch: N, or 'batch N' in config)", ("batch",))
        if self.role == "colocated" and self.chunk_tokens is None:
            raise FieldError("a colocated pool needs chunk_tokens (or 'chunk N' in config)",
                             ("chunk_tokens",))
        if self.role != "colocated" and self.chunk_tokens is not None:
            raise FieldError(f"chunk_tokens applies to colocated pools only, not {self.role}",
                             ("chunk_tokens",))
        return self

    @property
    def devices_per_instance(self) -> int:
        return self.tp * self.pp * self.dp


class Transition(Strict):
    """The cost of moving from `current` to a new plan, and the horizon it must pay back in."""

    per_device_moved_usd: float = Field(0.0, ge=0, le=1e7)
    per_instance_resharded_usd: float = Field(0.0, ge=0, le=1e7)
    drained_hours_per_change: float = Field(0.0, ge=0, le=1e4)
    horizon_hours: float = Field(gt=0, le=1e6)
