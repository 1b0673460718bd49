"""The hypothesis strategies the property tests share (one module; the property tests import
what they draw from here).

- `SWEEP_FIELDS` and `sweeps()`: sweep blocks over fields of the small two-type problem
  (tests/support/questions_problem.py), 1 to 3 fields of 1 to 3 distinct values each.
- `frontier_points()`: (traffic, cost or None) pairs, small integers so that ties and duplicates
  are common, for the Pareto flags of a frontier.
- `service_rows(draw, ...)`: the (service, role) rows of a small generated fleet instance, each
  service with a usable runtime first (tests/fleet/test_fleet_bruteforce.py and
  test_fleet_monotonic.py build their instances around them).
"""

from __future__ import annotations

from hypothesis import strategies as st

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
