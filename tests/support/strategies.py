"""The hypothesis strategies the property tests share (one module; the property tests import
what they draw from here).

- `SWEEP_FIELDS` and `sweeps()`: sweep blocks over fields of the small two-type problem
  (tests/support/questions_problem.py), 1 to 3 fields of 1 to 3 distinct values each.
- `frontier_points()`: (traffic, cost or None) pairs, small integers so that ties and duplicates
  are common, for the Pareto flags of a frontier.
"""

from __future__ import annotations

from hypothesis import strategies as st

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
