"""The hypothesis strategies the property tests share (one module; the property tests import
what they draw from here).

- `SWEEP_FIELDS` and `sweeps()`: sweep blocks over fields of the small two-type problem
  (tests/support/questions_problem.py), 1 to 3 fields of 1 to 3 distinct values each.
- `frontier_points()`: (traffic, cost or None) pairs, small integers so that ties and duplicates
  are common, for the Pareto flags of a frontier.
- `plan_dicts()`: one valid parallelism plan of a shipped model on one of `HARDWARE` (the
  performance model's property tests, tests/perf/test_perf_properties.py).
- `service_rows(draw, ...)`: the (service, role) rows of a small generated fleet instance, each
  service with a usable runtime first (tests/fleet/test_fleet_bruteforce.py and
  test_fleet_monotonic.py build their instances around them).
"""

from __future__ import annotations

from functools import lru_cache

from hypothesis import strategies as st

from solver.catalog import shipped
from solver.perf.arch import ModelArch
from solver.perf.tables import HardwareTable
from solver.schema.roles import COLOCATED, DECODE, PREFILL

# sweep path -> (its label in a variant's values, the values drawn for it)
SWEEP_FIELDS = {
    "hardware[h100-sxm].price_per_hour": ("h100-sxm.price", st.floats(0.5, 20)),
    "hardware[h200-sxm].supply": ("h200-sxm.supply", st.integers(1, 500)),
    "services[chat].workload.qps": ("chat.qps", st.floats(1, 1000)),
    "services[chat].slo.ttft_ms": ("chat.ttft_ms", st.floats(10, 5000)),
    "budget_per_hour": ("budget", st.floats(1, 1e5)),
}


@st.composite
def sweeps(draw) -> dict[str, list[float]]:
    keys = draw(st.lists(st.sampled_from(sorted(SWEEP_FIELDS)), min_size=1, max_size=3, unique=True))
    out = {}
    for k in keys:
        vals = draw(st.lists(SWEEP_FIELDS[k][1].map(lambda x: round(x, 3)), min_size=1, max_size=3,
                             unique=True))
        out[k] = vals
    return out


def frontier_points() -> st.SearchStrategy[list[tuple[int, int | None]]]:
    return st.lists(st.tuples(st.integers(1, 8), st.one_of(st.none(), st.integers(1, 8))),
                    min_size=1, max_size=12)


def service_rows(draw, n_services: int, min_rows: int, max_rows: int) -> tuple[list[int], list[int], int]:
    """(service per row, role per row, core rows): each service first gets a usable runtime (a
    colocated row, or a prefill and a decode row) so that most instances are feasible; then
    random rows up to a total drawn from [max(min_rows, core), max_rows]."""
    service: list[int] = []
    role: list[int] = []
    for s in range(n_services):
        if draw(st.booleans()):
            service, role = service + [s], role + [COLOCATED]
        else:
            service, role = service + [s, s], role + [PREFILL, DECODE]
    n_core = len(service)
    n_rows = draw(st.integers(max(min_rows, n_core), max_rows))
    for _ in range(n_rows - n_core):
        service.append(draw(st.integers(0, n_services - 1)))
        role.append(draw(st.sampled_from([COLOCATED, PREFILL, DECODE])))
    return service, role, n_core


MODELS = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "mixtral-8x7b", "llama-4-maverick")
HARDWARE = ("h100-sxm", "h200-sxm", "mi300x", "b200", "gb200-nvl72")


@lru_cache(maxsize=None)
def arch(name: str) -> ModelArch:
    return ModelArch.from_card(shipped.model_card(name))


@lru_cache(maxsize=None)
def hw_table() -> HardwareTable:
    return HardwareTable.from_cards([shipped.hardware_card(n) for n in HARDWARE])


def divisors(n: int, cap: int) -> list[int]:
    return [d for d in range(1, min(n, cap) + 1) if n % d == 0]


@st.composite
def plan_dicts(draw, min_batch: int = 1, max_batch: int = 512) -> dict:
    """One valid plan: a dict of Plans columns plus the model name."""
    name = draw(st.sampled_from(MODELS))
    a = arch(name)
    tp = draw(st.sampled_from(divisors(a.heads, 64)))
    pp = draw(st.integers(1, 8))
    if a.moe_layers:
        dp = draw(st.sampled_from([1, 2, 4]))
        eps = [e for e in divisors(a.num_experts, 64) if (tp * dp) % e == 0]
        ep = draw(st.sampled_from(eps))
    else:
        dp, ep = 1, 1
    batch = draw(st.integers(max(min_batch, dp), max_batch))
    wprec = draw(st.integers(0, 2))
    kvprec = draw(st.sampled_from([wprec, 0, 1]))
    return dict(model=name, hw=draw(st.integers(0, len(HARDWARE) - 1)), tp=tp, pp=pp, ep=ep,
                dp=dp, batch=batch, wprec=wprec, kvprec=kvprec)
