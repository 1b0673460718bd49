"""Total cost of ownership by hand: the annuity, each component of a device-hour, the site's
running costs over the entry's, and what `cost:` does to the rental price (solver/problem/tco.py)."""

from __future__ import annotations

import pytest

from solver.problem.load import parse_problem
from solver.problem.tco import HOURS_PER_MONTH, HOURS_PER_YEAR, annuity_per_year, device_parts
from solver.schema.tco import DeviceCost, SiteCost


def test_annuity_by_hand():
    # 25,000 over 4 years at 8%: 25000 x 0.08 / (1 - 1.08^-4) = 25000 x 0.301921 = 7548.02 a year
    assert annuity_per_year(25_000, 0.08, 4) == pytest.approx(7548.0201, abs=1e-3)
    assert annuity_per_year(25_000, 0.0, 4) == 6250.0  # straight line without interest
    assert annuity_per_year(0, 0.08, 4) == 0.0
    # n payments at r repay the capital: the present value of the annuity is the capital
    a = annuity_per_year(10_000, 0.05, 3)
    assert sum(a / 1.05**k for k in (1, 2, 3)) == pytest.approx(10_000)
    assert HOURS_PER_YEAR == 8760 and HOURS_PER_MONTH == 730


def test_device_hour_by_component_by_hand():
    cost = DeviceCost(capital_usd_per_device=25_000, network_usd_per_node=20_000, lifetime_years=4,
                      interest_rate=0.08, energy_usd_per_kwh=0.10, pue=1.5, hosting_usd_per_kw_month=100)
    site = SiteCost(energy_usd_per_kwh=0.40, pue=1.3)  # the site's price and PUE win; hosting is the entry's
    p = device_parts(1.0, cost, site, devices_per_node=8, power_w=700)
    assert p.rental == 1.0
    assert p.capital == pytest.approx(7548.0201 / 8760, abs=1e-6)  # 0.861646
    assert p.network == pytest.approx(7548.0201 / 8 / 8760 * 0.8, abs=1e-6)  # 20000/8 = 2500 per device
    assert p.energy == pytest.approx(0.7 * 1.3 * 0.40)  # 0.364
    assert p.hosting == pytest.approx(0.7 * 100 / 730)  # 0.095890
    assert p.total == pytest.approx(1.0 + 0.861646 + 0.086165 + 0.364 + 0.095890, abs=1e-5)
    # at a 400 W cap the running costs fall in proportion; capital does not
    q = device_parts(1.0, cost, site, 8, 400)
    assert q.capital == p.capital and q.energy == pytest.approx(0.4 * 1.3 * 0.40)


def test_capital_per_node_is_shared_by_its_devices():
    cost = DeviceCost(capital_usd_per_node=80_000, lifetime_years=5)
    assert device_parts(0.0, cost, None, 4, 700).capital == pytest.approx(80_000 / 4 / 5 / 8760)


def test_rented_type_ignores_running_costs():
    p = device_parts(2.5, None, SiteCost(energy_usd_per_kwh=1.0), 8, 700)
    assert (p.rental, p.capital, p.energy, p.total) == (2.5, 0.0, 0.0, 2.5)


PROBLEM = """
name: owned
services:
  - name: s
    model: llama-3.1-8b
    workload: {qps: 10, input_tokens: 1000, output_tokens: 100}
hardware:
  - type: h100-sxm
    cost: {capital_usd_per_device: 25000, lifetime_years: 4, interest_rate: 0.08,
           energy_usd_per_kwh: 0.1, pue: 1.2}
    power_caps_w: [700, 400]
  - type: h200-sxm
"""


def test_resolved_costs_owned_pays_no_card_rent_and_energy_follows_the_cap():
    rp = parse_problem(PROBLEM)
    assert rp.prices[0] == 0.0  # the owned type rents nothing
    assert rp.prices[1] == rp.hardware[1].price_per_hour  # the rented one keeps the card's price
    at700 = rp.device_cost(0, 0, 700)
    at400 = rp.device_cost(0, 0, 400)
    assert at700 == pytest.approx(7548.0201 / 8760 + 0.7 * 1.2 * 0.1, abs=1e-6)  # 0.861646 + 0.084
    assert at700 - at400 == pytest.approx(0.3 * 1.2 * 0.1)  # 0.036 USD/h saved per device
    assert rp.caps_of(0) == (700.0, 400.0) and rp.caps_of(1) == (rp.hardware[1].power_w,)
