"""The CP-SAT fleet model: variables, one method per constraint family, objectives.

Column formulation (reference/cpsat.md 0.1): `n[c]` instances of column c (a candidate placed
at a site); per service and site a colocated share and a disaggregated share of the demand
(milli-QPS). A site's disaggregated share flows from its prefill columns to its decode columns:
when every prefill column there may send its KV cache to every decode type there, prefill
capacity >= share and decode capacity >= share (the one-place model); otherwise the share is
at most the capacity of every minimal cut of that network (max flow = min cut). Every
constraint family is a named group; `enabled` selects which groups are posted, which is how the
deletion filter finds the groups that cannot hold together. Failure domains: fleet/survive.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet import integerize as ints
from solver.fleet import survive
from solver.fleet.instance import FleetInstance
from solver.schema.roles import COLOCATED, DECODE, PREFILL

LinearExpr = cp_model.LinearExpr
MAX_CUTS = 64  # minimal cuts per service and site posted as rows; more: route variables


@dataclass(frozen=True)
class Group:
    """A constraint group, named for the user."""

    key: str
    text: str


class FleetModel:
    def __init__(
        self, inst: FleetInstance, enabled: set[str] | None = None, assumptions: bool = False
    ):
        self.inst = inst
        self.m = cp_model.CpModel()
        self.enabled = enabled
        self.groups: dict[str, Group] = {}
        # assumptions=True: every group is enforced by a literal (self.literals) that the caller
        # passes to add_assumptions, so CP-SAT can return an infeasible core of groups
        self.assumptions = assumptions
        self.literals: dict[str, cp_model.IntVar] = {}
        self.extra_vars: list[cp_model.IntVar] = []  # auxiliary variables, for warm starts
        self._row_used: dict[int, cp_model.IntVar] = {}
        self._variables()
        self._demand()
        self._positive_throughput()
        self._supply()
        self._budget()
        self._power()
        self._ratio()
        self._distinct_configs()
        self._sites()
        survive.post_lose_site(self)
        survive.post_lose_instances(self)

    # ---- helpers --------------------------------------------------------------------------

    def _group(self, key: str, text: str) -> bool:
        """Register a group; True when it should be posted."""
        self.groups[key] = Group(key, text)
        if self.assumptions and key not in self.literals:
            self.literals[key] = self.m.new_bool_var(f"group[{key}]")
        return self.enabled is None or key in self.enabled

    def _add(self, key: str, constraint) -> None:
        """Post a constraint of group `key` (under its literal in assumption mode)."""
        ct = self.m.add(constraint).with_name(key)
        lit = self.literals.get(key)
        if lit is not None:
            ct.only_enforce_if(lit)

    def _sum(self, rows: np.ndarray, coeffs: np.ndarray, what: str):
        ints.check_row(coeffs[rows], self.inst.ub[rows], what)
        return LinearExpr.weighted_sum([self.n[i] for i in rows], coeffs[rows].tolist())

    def covers(self, key: str, served, s: int) -> None:
        """Post: `served` (milli-QPS) covers service s's demand (or its share of the scaled mix)."""
        spec = self.inst.services[s]
        if self.scale is None:
            self._add(key, served >= spec.demand)
        else:
            self._add(key, ints.SCALE_UNIT * served >= spec.demand * self.scale)

    def share(self, s: int, k: int):
        """The traffic of service s served at site k (colocated + disaggregated)."""
        return self.col[s][k] + self.dis[s][k]

    def hint_vars(self) -> list:
        """Every variable, in a fixed order, for warm starts between stages."""
        col = [v for vs in self.col for v in vs]
        dis = [v for vs in self.dis for v in vs]
        return (self.n + self.used + col + dis + ([self.scale] if self.scale is not None else [])
                + self.extra_vars)

    # ---- variables ------------------------------------------------------------------------

    def _variables(self) -> None:
        inst, m = self.inst, self.m
        self.n = [m.new_int_var(0, int(inst.ub[i]), f"n[{i}]") for i in range(len(inst))]
        self.used = [m.new_bool_var(f"used[{i}]") for i in range(len(inst))]
        for i in range(len(inst)):
            m.add(self.n[i] <= int(inst.ub[i]) * self.used[i])
            m.add(self.n[i] >= self.used[i])
        self.scale = None
        self.col: list = []
        self.dis: list = []
        top = self.top = self._max_demand_bound()
        for s, spec in enumerate(inst.services):
            cols, diss = [], []
            for k in range(inst.n_sites):
                ok = inst.allowed(s, k)
                tag = f"[{s}]" if inst.n_sites == 1 else f"[{s},{k}]"
                cols.append(m.new_int_var(0, top if spec.colocated and ok else 0, f"col{tag}"))
                diss.append(m.new_int_var(0, top if spec.disaggregated and ok else 0, f"dis{tag}"))
            self.col.append(cols)
            self.dis.append(diss)
        if inst.objective == "max_throughput":
            self.scale = m.new_int_var(0, self._scale_bound(), "scale")

    def _max_demand_bound(self) -> int:
        """An upper bound on any share: the largest capacity the fleet could ever have."""
        inst = self.inst
        total = int(np.sum(inst.cap.astype(object) * inst.ub.astype(object))) if len(inst) else 0
        top = max([total] + [s.demand for s in inst.services])
        return int(min(top, ints.INT_LIMIT // 1024))

    def _scale_bound(self) -> int:
        inst = self.inst
        bounds = []
        for s, spec in enumerate(inst.services):
            rows = np.flatnonzero(inst.service == s)
            total = int(np.sum(inst.cap[rows].astype(object) * inst.ub[rows].astype(object)))
            bounds.append(total * ints.SCALE_UNIT // max(spec.demand, 1))
        return int(min(max(bounds + [0]), ints.INT_LIMIT // 1024))

    # ---- constraint families --------------------------------------------------------------

    def _demand(self) -> None:
        """Each service's demand (or its share of the scaled mix) is split between colocated
        and disaggregated capacity; each role's capacity covers its share."""
        inst = self.inst
        for s, spec in enumerate(inst.services):
            key = f"demand:{spec.name}"
            label = (
                f"demand of service '{spec.name}' ({spec.demand / ints.QPS_SCALE:g} QPS)"
                if self.scale is None
                else f"a positive share of the traffic mix for service '{spec.name}'"
            )
            if not self._group(key, label):
                continue
            served = self.share(s, 0) if inst.n_sites == 1 else sum(
                self.share(s, k) for k in range(inst.n_sites))
            self.covers(key, served, s)
            for k in range(inst.n_sites):
                self._site_capacity(s, k, key)

    def _site_capacity(self, s: int, k: int, key: str) -> None:
        """Each role's capacity at site k covers the share routed to it. When some prefill
        column may not send its KV cache to some decode type there, the disaggregated share is
        bounded by every minimal cut of the prefill -> decode network instead (max flow = min
        cut, so this is exact; fleet/survive.py derives the cuts)."""
        inst, m = self.inst, self.m
        pre, dec = inst.cols(s, PREFILL, k), inst.cols(s, DECODE, k)
        complete = self._complete(pre, dec)
        roles = ((COLOCATED, self.col[s][k]), (PREFILL, self.dis[s][k]), (DECODE, self.dis[s][k]))
        for role, share in roles if complete else roles[:1]:
            rows = inst.cols(s, role, k)
            if rows.size:
                m.add(self._sum(rows, inst.cap, key) >= share)
            else:
                m.add(share == 0)
        if complete:
            return
        cuts = survive.disaggregated_cuts(inst, s, k, limit=MAX_CUTS)
        if cuts is None:  # too many cuts (e.g. homogeneous routing over many types)
            self._routes(s, k, pre, dec, key)
            return
        for cut in cuts:
            if cut.size:
                m.add(self._sum(cut, inst.cap, key) >= self.dis[s][k])
            else:
                m.add(self.dis[s][k] == 0)

    def _routes(self, s: int, k: int, pre: np.ndarray, dec: np.ndarray, key: str) -> None:
        """Routing by explicit variables: per (prefill type, reach) group and decode type it
        reaches, a route; a group's capacity covers its routes, a decode type's capacity the
        routes into it. Used when the cut form would need too many rows (the cut form solves
        faster when it is small)."""
        inst, m = self.inst, self.m
        types = [int(d) for d in np.unique(inst.hw[dec])]
        groups: dict[tuple[int, tuple[int, ...]], list[int]] = {}
        for c in pre:
            reach = tuple(d for d in types if inst.reach[c, d])
            if reach:
                groups.setdefault((int(inst.hw[c]), reach), []).append(int(c))
        into: dict[int, list] = {d: [] for d in types}
        routes = []
        for (p, reach), cols in sorted(groups.items()):
            fs = [m.new_int_var(0, self.top, f"route[{s},{k},{p}->{d}]") for d in reach]
            self.extra_vars += fs
            m.add(self._sum(np.array(cols), inst.cap, key) >= sum(fs))
            for d, f in zip(reach, fs):
                into[d].append(f)
            routes += fs
        for d in types:
            if into[d]:
                m.add(self._sum(dec[inst.hw[dec] == d], inst.cap, key) >= sum(into[d]))
        m.add(self.dis[s][k] == (sum(routes) if routes else 0))

    def _complete(self, pre: np.ndarray, dec: np.ndarray) -> bool:
        """Every prefill column may send its KV cache to every decode type of the site."""
        if pre.size == 0 or dec.size == 0:
            return True
        types = np.unique(self.inst.hw[dec])
        return bool(self.inst.reach[np.ix_(pre, types)].all())

    def _positive_throughput(self) -> None:
        """max_throughput: serve at least 1/1000 of the mix (otherwise the empty fleet wins)."""
        if self.scale is not None and self._group(
            "throughput", "serving at least 0.1% of the traffic mix"
        ):
            self._add("throughput", self.scale >= 1)

    def _supply(self) -> None:
        inst = self.inst
        for h, name in enumerate(inst.hw_names):
            supply = inst.supply[h]
            rows = np.flatnonzero(inst.hw == h)
            if supply is None or rows.size == 0:
                continue
            key = f"supply:{name}"
            if self._group(key, f"supply of {name} ({supply} devices)"):
                self._add(key, self._sum(rows, inst.devices, key) <= supply)

    def _budget(self) -> None:
        inst = self.inst
        if inst.budget is None or not len(inst):
            return
        if self._group("budget", f"budget of ${inst.budget / ints.COST_SCALE:,.2f}/hour"):
            rows = np.arange(len(inst))
            self._add("budget", self._sum(rows, inst.cost, "budget") <= inst.budget)

    def _power(self) -> None:
        inst = self.inst
        if inst.power_cap is None or not len(inst):
            return
        if self._group("power", f"power cap of {inst.power_cap / 1000:g} kW"):
            rows = np.arange(len(inst))
            self._add("power", self._sum(rows, inst.power, "power") <= inst.power_cap)

    def _ratio(self) -> None:
        """Prefill devices / decode devices within [lo, hi], per disaggregated service."""
        inst = self.inst
        den = ints.RATIO_DEN
        for s, spec in enumerate(inst.services):
            pre, dec = inst.rows(s, PREFILL), inst.rows(s, DECODE)
            if pre.size == 0 or dec.size == 0:
                continue
            p_dev = self._sum(pre, inst.devices, "ratio")
            d_dev = self._sum(dec, inst.devices, "ratio")
            if spec.ratio_lo is not None:
                key = f"ratio_min:{spec.name}"
                if self._group(key, f"prefill:decode device ratio >= {spec.ratio_lo / den:g} for '{spec.name}'"):
                    self._add(key, p_dev * den >= spec.ratio_lo * d_dev)
            if spec.ratio_hi is not None:
                key = f"ratio_max:{spec.name}"
                if self._group(key, f"prefill:decode device ratio <= {spec.ratio_hi / den:g} for '{spec.name}'"):
                    self._add(key, p_dev * den <= spec.ratio_hi * d_dev)

    def _config_used(self, cols: np.ndarray) -> list:
        """One literal per distinct candidate row among `cols`, true when any of its columns
        (the same configuration at several sites) is used. One site: the columns' own."""
        inst = self.inst
        if inst.n_sites == 1:
            return [self.used[i] for i in cols]
        out = []
        for r in sorted({int(inst.row[c]) for c in cols}):
            if r not in self._row_used:
                mine = np.flatnonzero(inst.row == r)
                if mine.size == 1:
                    self._row_used[r] = self.used[int(mine[0])]
                else:
                    v = self.m.new_bool_var(f"row_used[{r}]")
                    for c in mine:
                        self.m.add_implication(self.used[int(c)], v)
                    self.extra_vars.append(v)
                    self._row_used[r] = v
            out.append(self._row_used[r])
        return out

    def _distinct_configs(self) -> None:
        inst = self.inst
        for s, spec in enumerate(inst.services):
            if spec.max_configs is None:
                continue
            for role in (COLOCATED, PREFILL, DECODE):
                rows = inst.rows(s, role)
                lits = self._config_used(rows)
                if len(lits) <= spec.max_configs:
                    continue
                key = f"max_configs:{spec.name}"
                if self._group(key, f"at most {spec.max_configs} distinct configurations per role for '{spec.name}'"):
                    self._add(key, sum(lits) <= spec.max_configs)

    def _sites(self) -> None:
        """Per site: the supply of each hardware type there and the site's power cap."""
        inst = self.inst
        for k, site in enumerate(inst.site_names):
            at = inst.site == k
            for h, name in enumerate(inst.hw_names):
                supply = inst.site_supply[k][h]
                rows = np.flatnonzero(at & (inst.hw == h))
                if supply is None or rows.size == 0:
                    continue
                key = f"supply:{name}@{site}"
                if self._group(key, f"supply of {name} at site '{site}' ({supply} devices)"):
                    self._add(key, self._sum(rows, inst.devices, key) <= supply)
            cap = inst.site_power_cap[k]
            rows = np.flatnonzero(at)
            if cap is not None and rows.size:
                key = f"power@{site}"
                if self._group(key, f"power cap of {cap / 1000:g} kW at site '{site}'"):
                    self._add(key, self._sum(rows, inst.power, key) <= cap)

    # ---- redundant cuts --------------------------------------------------------------------

    def service_cost_floor(self, s: int, floor: int) -> None:
        """Service s costs at least `floor` (its optimum when planned alone: a valid cut, since
        sharing the fleet only adds constraints). It lifts the LP bound to the sum of the
        services' own optima, which is what makes proving optimality fast."""
        rows = np.flatnonzero(self.inst.service == s)
        if rows.size:
            self.m.add(self._sum(rows, self.inst.cost, "cost floor") >= floor)

    def scale_ceiling(self, ceiling: int) -> None:
        """max_throughput: the common scale cannot exceed any service's scale planned alone."""
        if self.scale is not None:
            self.m.add(self.scale <= ceiling)

    # ---- objective terms ------------------------------------------------------------------

    def cost_expr(self):
        return LinearExpr.weighted_sum(self.n, self.inst.cost.tolist())

    def devices_expr(self):
        return LinearExpr.weighted_sum(self.n, self.inst.devices.tolist())

    def configs_expr(self):
        if self.inst.n_sites == 1:
            return sum(self.used)
        return sum(self._config_used(np.arange(len(self.inst))))
