"""The minimal cuts of a site's serving network, which depend only on the columns.

Notation. Columns c (a candidate at a site) have n_c instances of integer capacity cap_c
(milli-QPS). At site k, service s's traffic flows through a network: colocated columns serve
it directly; disaggregated traffic goes from prefill columns to the decode columns of the types
each prefill column reaches (its KV link). The most s can serve at site k is the maximum flow
of that network, and by max-flow/min-cut it equals the smallest capacity of a cut:

    servable_k(n) = min over cuts Q of  sum_{c in Q} cap_c n_c

where a cut Q is a set of columns that every source-to-sink path crosses. The minimal cuts are
few and depend only on the columns, not on n (`site_cuts`): every colocated column, plus, for a
set U of decode types that is a union of the prefill columns' reach sets (U may be empty), the
prefill columns whose reach is not inside U and the decode columns whose type is in U. (Any cut
contains one of these: shrinking its decode side to the largest union of reach sets inside it
keeps it a cut and removes capacity.) With every prefill column reaching every decode type this
is the familiar colocated + min(prefill, decode).
"""

from __future__ import annotations

import numpy as np

from solver.fleet.instance import FleetInstance
from solver.schema.roles import COLOCATED, DECODE, PREFILL


def disaggregated_cuts(inst: FleetInstance, s: int, k: int, limit: int | None = None) -> list[np.ndarray] | None:
    """The minimal cuts (column index arrays) of service s's prefill -> decode network at
    site k; [empty] when it carries nothing (no prefill or no reachable decode column); None
    when there would be more than `limit` candidate cuts."""
    pre = inst.cols(s, PREFILL, k)
    dec = inst.cols(s, DECODE, k)
    types = sorted({int(d) for d in inst.hw[dec]})
    reach = {int(c): frozenset(d for d in types if inst.reach[c, d]) for c in pre}
    unions: set[frozenset[int]] = {frozenset()}
    for mask in set(reach.values()):
        unions |= {u | mask for u in unions}
        if limit is not None and len(unions) > limit:
            return None
    cuts: set[frozenset[int]] = set()
    for u in unions:
        cut = {c for c, mask in reach.items() if mask and not mask <= u}
        cut |= {int(c) for c in dec if int(inst.hw[c]) in u}
        cuts.add(frozenset(cut))
    minimal = [q for q in cuts if not any(o < q for o in cuts)]
    return [np.array(sorted(q), dtype=np.int64) for q in sorted(minimal, key=lambda q: sorted(q))]


def site_cuts(inst: FleetInstance, s: int, k: int) -> list[np.ndarray]:
    """The minimal cuts of service s's whole network at site k: the colocated columns (every
    path through one of them is a cut by itself) plus each minimal disaggregated cut."""
    col = inst.cols(s, COLOCATED, k)
    return [np.union1d(col, q).astype(np.int64) for q in disaggregated_cuts(inst, s, k) or []]
