"""Total cost of ownership inputs (extension): `cost:` on a hardware entry and on a site.

    hardware:
      - type: h100-sxm
        cost:
          capital_usd_per_device: 25000     # or capital_usd_per_node (divided over its devices)
          network_usd_per_node: 30000       # NICs, switch ports, cables: amortised like capital
          lifetime_years: 4
          interest_rate: 0.08               # per year; the annuity formula (0: straight line)
          energy_usd_per_kwh: 0.10          # defaults for every site that does not set them
          pue: 1.3
          hosting_usd_per_kw_month: 150     # colocation per kW of device power
    sites:
      - name: eu
        cost: {energy_usd_per_kwh: 0.30, pue: 1.2, hosting_usd_per_kw_month: 180}

An entry with `cost:` is owned: its hourly cost per device is the rental price given on it
(`price_per_hour`, default none) plus the amortised capital and network plus energy and hosting
on the device's power at its cap. An entry without `cost:` is rented all-inclusive at its
`price_per_hour` (or the card's); a site's energy and hosting apply to owned entries only. The
arithmetic is `solver/problem/tco.py`.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from solver.schema.base import Strict

MAX_CAPITAL_USD = 1e9
MAX_ENERGY_USD_PER_KWH = 10.0
MAX_HOSTING_USD_PER_KW_MONTH = 10_000.0


class SiteCost(Strict):
    """Running costs of a place: energy (times PUE) and hosting, on device power."""

    energy_usd_per_kwh: float | None = Field(None, ge=0, le=MAX_ENERGY_USD_PER_KWH)
    pue: float | None = Field(None, ge=1, le=5, description="facility power / IT power")
    hosting_usd_per_kw_month: float | None = Field(None, ge=0, le=MAX_HOSTING_USD_PER_KW_MONTH)


class DeviceCost(SiteCost):
    """Owning a hardware type: capital amortised over a lifetime at an interest rate, plus the
    running costs (the site's, where a site sets them; these otherwise)."""

    capital_usd_per_device: float | None = Field(None, ge=0, le=MAX_CAPITAL_USD)
    capital_usd_per_node: float | None = Field(None, ge=0, le=MAX_CAPITAL_USD)
    network_usd_per_node: float | None = Field(None, ge=0, le=MAX_CAPITAL_USD)
    lifetime_years: float | None = Field(None, gt=0, le=30)
    interest_rate: float = Field(0.0, ge=0, le=1, description="per year")

    @model_validator(mode="after")
    def _check(self) -> DeviceCost:
        if self.capital_usd_per_device is not None and self.capital_usd_per_node is not None:
            raise ValueError("give capital_usd_per_device or capital_usd_per_node, not both")
        capital = (self.capital_usd_per_device, self.capital_usd_per_node, self.network_usd_per_node)
        if any(c is not None for c in capital) and self.lifetime_years is None:
            raise ValueError("capital and network costs need lifetime_years to amortise over")
        return self
