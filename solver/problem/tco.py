"""Hourly cost of one device: rental, amortised capital and network, energy and hosting.

Capital C (USD) bought up front and paid off over n years at an annual interest rate r costs
the annuity A = C r / (1 - (1 + r)^-n) per year (C / n when r = 0), spread over the 8760 hours
of a year. Energy: power (kW) x PUE x price per kWh; hosting: power (kW) x the price per
kW-month over the 730 hours of a month. Power is the device's power at its cap (the most it
draws: the conservative choice for a bill that is sized, not metered).
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.schema.tco import DeviceCost, SiteCost

HOURS_PER_YEAR = 8760.0  # 365 x 24
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0  # 730
COMPONENTS = ("rental", "capital", "network", "energy", "hosting")


def annuity_per_year(capital_usd: float, rate: float, years: float) -> float:
    """The constant yearly payment that repays `capital_usd` over `years` at `rate` a year."""
    if capital_usd == 0:
        return 0.0
    if rate == 0:
        return capital_usd / years
    return capital_usd * rate / (1.0 - (1.0 + rate) ** -years)


@dataclass(frozen=True)
class CostParts:
    """USD per device-hour, by component."""

    rental: float = 0.0
    capital: float = 0.0
    network: float = 0.0
    energy: float = 0.0
    hosting: float = 0.0

    @property
    def total(self) -> float:
        return self.rental + self.capital + self.network + self.energy + self.hosting

    def scaled(self, k: float) -> CostParts:
        return CostParts(*(k * getattr(self, c) for c in COMPONENTS))

    def __add__(self, other: CostParts) -> CostParts:
        return CostParts(*(getattr(self, c) + getattr(other, c) for c in COMPONENTS))


def _running(cost: DeviceCost, site: SiteCost | None, name: str, default: float) -> float:
    """A running-cost input: the site's where it sets one, else the entry's, else `default`."""
    v = getattr(site, name) if site is not None else None
    if v is None:
        v = getattr(cost, name)
    return default if v is None else float(v)


def owned_parts(cost: DeviceCost, site: SiteCost | None, devices_per_node: int,
                power_w: float) -> CostParts:
    """The ownership components (no rental) of one device-hour at `power_w`."""
    years = cost.lifetime_years or 1.0
    per_node = 1.0 / devices_per_node
    capital = (cost.capital_usd_per_device or 0.0) + (cost.capital_usd_per_node or 0.0) * per_node
    network = (cost.network_usd_per_node or 0.0) * per_node
    kw = power_w / 1000.0
    energy = kw * _running(cost, site, "pue", 1.0) * _running(cost, site, "energy_usd_per_kwh", 0.0)
    hosting = kw * _running(cost, site, "hosting_usd_per_kw_month", 0.0) / HOURS_PER_MONTH
    return CostParts(
        capital=annuity_per_year(capital, cost.interest_rate, years) / HOURS_PER_YEAR,
        network=annuity_per_year(network, cost.interest_rate, years) / HOURS_PER_YEAR,
        energy=energy, hosting=hosting,
    )


def device_parts(rental: float, cost: DeviceCost | None, site: SiteCost | None,
                 devices_per_node: int, power_w: float) -> CostParts:
    """USD per device-hour by component: rental alone for a rented type (no `cost:`)."""
    own = CostParts() if cost is None else owned_parts(cost, site, devices_per_node, power_w)
    return CostParts(rental=rental) + own
