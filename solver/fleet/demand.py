"""The demand family: each service's demand (or its share of the scaled mix) is split between
colocated and disaggregated capacity, and each role's capacity at a site covers its share there.

A site's disaggregated share flows from its prefill columns to its decode columns: when every
prefill column there may send its KV cache to every decode type there, prefill capacity >= share
and decode capacity >= share (the one-place model); otherwise the share is at most the
capacity of every minimal cut of that network (max flow = min cut, solver/fleet/cuts.py), or,
when there are too many cuts, explicit route variables carry it.
"""

from __future__ import annotations

import numpy as np

from solver.fleet.cuts import disaggregated_cuts
from solver.fleet.instance import FleetInstance
from solver.fleet.model import FleetModel
from solver.schema.roles import COLOCATED, DECODE, PREFILL

MAX_CUTS = 64  # minimal cuts per service and site posted as rows; more: route variables


def post_demand(fm: FleetModel) -> None:
    inst = fm.inst
    for s, spec in enumerate(inst.services):
        key = f"demand:{spec.name}"
        label = (
            f"demand of service '{spec.name}' ({spec.demand / spec.qps_scale:g} QPS)"
            if fm.v.scale is None
            else f"a positive share of the traffic mix for service '{spec.name}'"
        )
        if not fm.group(key, label):
            continue
        served = fm.share(s, 0) if inst.n_sites == 1 else sum(
            fm.share(s, k) for k in range(inst.n_sites))
        fm.covers(key, served, s)
        for k in range(inst.n_sites):
            _site_capacity(fm, s, k, key)


def _site_capacity(fm: FleetModel, s: int, k: int, key: str) -> None:
    """Each role's capacity at site k covers the share routed to it. When some prefill column
    may not send its KV cache to some decode type there, the disaggregated share is bounded by
    every minimal cut of the prefill -> decode network instead (exact, since max flow = min cut)."""
    inst, m, v = fm.inst, fm.m, fm.v
    pre, dec = inst.cols(s, PREFILL, k), inst.cols(s, DECODE, k)
    complete = _complete(inst, pre, dec)
    roles = ((COLOCATED, v.col[s][k]), (PREFILL, v.dis[s][k]), (DECODE, v.dis[s][k]))
    for role, share in roles if complete else roles[:1]:
        rows = inst.cols(s, role, k)
        if rows.size:
            m.add(fm.row_sum(rows, inst.cap, key) >= share)
        else:
            m.add(share == 0)
    if complete:
        return
    cuts = disaggregated_cuts(inst, s, k, limit=MAX_CUTS)
    if cuts is None:  # too many cuts (e.g. homogeneous routing over many types)
        _routes(fm, s, k, pre, dec, key)
        return
    for cut in cuts:
        if cut.size:
            m.add(fm.row_sum(cut, inst.cap, key) >= v.dis[s][k])
        else:
            m.add(v.dis[s][k] == 0)


RouteGroups = dict[tuple[int, tuple[int, ...]], list[int]]  # (prefill type, decode types reached) -> columns


def _route_groups(inst: FleetInstance, pre: np.ndarray, types: list[int]) -> RouteGroups:
    """Prefill columns by (hardware type, decode types reached); columns that reach none left out."""
    groups: RouteGroups = {}
    for c in pre:
        reach = tuple(d for d in types if inst.reach[c, d])
        if reach:
            groups.setdefault((int(inst.hw[c]), reach), []).append(int(c))
    return groups


def _routes(fm: FleetModel, s: int, k: int, pre: np.ndarray, dec: np.ndarray, key: str) -> None:
    """Routing by explicit variables: per (prefill type, reach) group and decode type it reaches,
    a route; a group's capacity covers its routes, a decode type's capacity the routes into it.
    Used when the cut form would need too many rows (the cut form solves faster when small)."""
    inst, m = fm.inst, fm.m
    types = [int(d) for d in np.unique(inst.hw[dec])]
    into: dict[int, list] = {d: [] for d in types}
    routes = []
    for (p, reach), cols in sorted(_route_groups(inst, pre, types).items()):
        fs = [m.new_int_var(0, fm.v.top, f"route[{s},{k},{p}->{d}]") for d in reach]
        fm.v.extra.extend(fs)
        m.add(fm.row_sum(np.array(cols), inst.cap, key) >= sum(fs))
        for d, f in zip(reach, fs):
            into[d].append(f)
        routes += fs
    for d in types:
        if into[d]:
            m.add(fm.row_sum(dec[inst.hw[dec] == d], inst.cap, key) >= sum(into[d]))
    m.add(fm.v.dis[s][k] == (sum(routes) if routes else 0))


def _complete(inst: FleetInstance, pre: np.ndarray, dec: np.ndarray) -> bool:
    """Every prefill column may send its KV cache to every decode type of the site."""
    if pre.size == 0 or dec.size == 0:
        return True
    types = np.unique(inst.hw[dec])
    return bool(inst.reach[np.ix_(pre, types)].all())
