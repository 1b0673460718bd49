"""How a mixture-of-experts model's router spreads tokens over its experts (a service input).

Routing balance changes what an MoE layer costs (docs/sources.md, "The paper", finding 3): prefill waits for the most
loaded device, decode reads the weights of every expert its batch touches. A service states its
routing as one of:

- `balanced`: every expert gets the same share of routed tokens (the default);
- `zipf`: the expert of rank r gets a share proportional to r^-s (`zipf_s` > 0);
- `hottest`: the hottest expert gets `hottest_share` of the routed tokens and the others follow a
  Zipf law whose exponent is solved to give exactly that share (so "7% of 128" is one number);
- `histogram`: measured routed-token counts per expert, in expert-id order (one entry per
  expert of the model; checked against the model card when the problem is resolved).

`placement` says how the engine puts experts on expert-parallel ranks: `load_balanced` (hot and
cold experts mixed so device loads are as even as a greedy longest-first assignment makes them)
or `in_order` (experts in id order, E/ep per rank, regardless of load; for `zipf` and `hottest`,
whose ranks carry no ids, ranks are spread over ids by a fixed pseudo-random permutation).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from solver.schema.base import Strict

MAX_EXPERTS = 4096


class Routing(Strict):
    kind: Literal["balanced", "zipf", "hottest", "histogram"] = "balanced"
    zipf_s: float | None = Field(None, gt=0, le=10, description="Zipf exponent of expert shares")
    hottest_share: float | None = Field(
        None, gt=0, lt=1, description="fraction of routed tokens the hottest expert receives"
    )
    histogram: list[Annotated[float, Field(ge=0, le=1e20)]] | None = Field(  # le: every sum stays finite
        None, min_length=2, max_length=MAX_EXPERTS, description="routed tokens per expert (id order)"
    )
    placement: Literal["load_balanced", "in_order"] = "load_balanced"

    @model_validator(mode="after")
    def _check(self) -> Routing:
        needs = {"zipf": "zipf_s", "hottest": "hottest_share", "histogram": "histogram"}
        for kind, name in needs.items():
            given = getattr(self, name) is not None
            if self.kind == kind and not given:
                raise ValueError(f"routing kind '{kind}' needs {name}")
            if self.kind != kind and given:
                raise ValueError(f"{name} belongs to routing kind '{kind}', not '{self.kind}'")
        if self.histogram is not None and sum(self.histogram) <= 0:
            raise ValueError("histogram counts are all zero")
        return self

    @classmethod
    def from_spec(cls, spec: str, placement: str = "load_balanced") -> Routing:
        """The command-line form: balanced | zipf:S | hottest:X (fraction or percent) |
        histogram:C1,C2,... (routed tokens per expert, id order)."""
        kind, _, arg = spec.partition(":")
        kind = kind.strip()
        try:
            if kind == "balanced" and not arg:
                return cls(placement=placement)  # type: ignore[arg-type]
            if kind == "zipf":
                return cls(kind="zipf", zipf_s=float(arg), placement=placement)  # type: ignore[arg-type]
            if kind == "hottest":
                arg = arg.strip()
                x = float(arg[:-1]) / 100.0 if arg.endswith("%") else float(arg)
                return cls(kind="hottest", hottest_share=x, placement=placement)  # type: ignore[arg-type]
            if kind == "histogram":
                counts = [float(c) for c in arg.split(",") if c.strip()]
                return cls(kind="histogram", histogram=counts, placement=placement)  # type: ignore[arg-type]
        except ValueError as exc:  # float() failures and pydantic's ValidationError
            first = str(exc).strip().splitlines()
            raise ValueError(f"routing '{spec}': {first[-1] if first else exc}") from None
        raise ValueError(
            f"routing '{spec}': expected balanced, zipf:S, hottest:X (e.g. hottest:7%) or "
            "histogram:C1,C2,..."
        )

    def describe(self) -> str:
        if self.kind == "zipf":
            text = f"Zipf s={self.zipf_s:g}"
        elif self.kind == "hottest":
            text = f"hottest expert {self.hottest_share:.1%} of routed tokens"
        elif self.kind == "histogram":
            text = f"measured histogram of {len(self.histogram or [])} experts"
        else:
            text = "balanced"
        return text if self.kind == "balanced" else f"{text}, {self.placement} placement"
