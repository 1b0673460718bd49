"""KV links of prefill candidates: the distinct links from a prefill type to the decode types
in use, each prefill plan once per link class, and the rows a slower link's row matches (see
`build.py`'s docstring)."""

from __future__ import annotations

import numpy as np

from solver.perf.tables import Plans


def link_classes(links: np.ndarray, p: int, decode_types: list[int], heterogeneous: bool) -> list[tuple[float, float]]:
    """The distinct KV links from prefill type p to the decode types in use, own link first,
    then slower ones (lower bandwidth first, then higher latency)."""
    own = (float(links[p, p, 0]), float(links[p, p, 1]))
    if not heterogeneous:
        return [own]
    others = {(float(links[p, d, 0]), float(links[p, d, 1])) for d in decode_types} - {own}
    return [own] + sorted(others, key=lambda x: (-x[0], x[1]))


def expand_links(plans: Plans, chunks: np.ndarray, classes: list[list[tuple[float, float]]]):
    """Each prefill plan once per KV link class of its hardware type: the own-link rows first
    (in grid order), then the second class's, and so on. Returns the expanded plans and
    chunks, the original plan index and class number of each row, and the link arrays."""
    n_cls = np.array([len(c) for c in classes])[plans.hw]
    orig = np.concatenate([np.flatnonzero(n_cls > c) for c in range(int(n_cls.max(initial=1)))])
    cls = np.concatenate([np.full(int((n_cls > c).sum()), c) for c in range(int(n_cls.max(initial=1)))])
    p = plans.take(orig)
    bw = np.array([classes[h][c][0] for h, c in zip(p.hw, cls)], dtype=float)
    lat = np.array([classes[h][c][1] for h, c in zip(p.hw, cls)], dtype=float)
    return p, chunks[orig], orig, cls, bw, lat


def slower_link_matches(idx: np.ndarray, orig: np.ndarray, bw: np.ndarray, lat: np.ndarray,
                         cap: np.ndarray) -> np.ndarray:
    """Rows (of idx) to drop: another kept row of the same plan on a link no faster in either
    respect (it reaches every decode type this one reaches) has at least its capacity."""
    drop = np.zeros(len(idx), dtype=bool)
    by_plan: dict[int, list[int]] = {}
    for j, r in enumerate(idx):
        by_plan.setdefault(int(orig[r]), []).append(j)
    for js in by_plan.values():
        if len(js) < 2:
            continue
        for a in js:
            ra = idx[a]
            for b in js:
                rb = idx[b]
                if a != b and bw[rb] <= bw[ra] and lat[rb] >= lat[ra] and cap[rb] >= cap[ra]:
                    drop[a] = True
                    break
    return drop
