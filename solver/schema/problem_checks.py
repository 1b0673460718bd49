"""Cross-field checks of a problem (solver/schema/problem.py `Problem` runs them after the fields
validate): names used by sites, services[].sites, survive, transition and current must exist."""

from __future__ import annotations

from typing import Any

from solver.schema.base import FieldError
from solver.schema.suggest import did_you_mean

# solver/schema/problem.py's Problem; not imported, not even for type checking (the import
# would close a cycle: tests/test_layers.py)
Problem = Any


def check_fleet_fields(p: Problem) -> None:
    """Names used by sites, services[].sites, survive and current must exist."""
    hw_names = [h.name for h in p.hardware]
    site_names = [s.name for s in p.sites or []]
    _check_sites(p, hw_names, site_names)
    _check_service_sites(p, site_names)
    _check_survive(p, site_names)
    _check_transition(p)
    _check_current(p, hw_names, site_names)


def _check_sites(p: Problem, hw_names: list[str], site_names: list[str]) -> None:
    """Site names are unique and their hardware types exist."""
    for i, s in enumerate(p.sites or []):
        if s.name in site_names[:i]:
            raise FieldError(f"site name '{s.name}' repeats sites[{site_names.index(s.name)}].name; "
                             "site names must be unique", ("sites", i, "name"))
        for j, h in enumerate(s.hardware):
            if h.type not in hw_names:
                raise FieldError(f"hardware type '{h.type}' is not in hardware: ({', '.join(hw_names)})"
                                 + did_you_mean(h.type, hw_names),
                                 ("sites", i, "hardware", j, "type"))


def _check_service_sites(p: Problem, site_names: list[str]) -> None:
    """A service's pinned sites exist, once each."""
    for i, svc in enumerate(p.services):
        if svc.sites is None:
            continue
        if not p.sites:
            raise FieldError("services[].sites needs a top-level sites: list", ("services", i, "sites"))
        for j, name in enumerate(svc.sites):
            if name not in site_names:
                raise FieldError(f"site '{name}' is not in sites: ({', '.join(site_names)})"
                                 + did_you_mean(name, site_names),
                                 ("services", i, "sites", j))
            if name in svc.sites[:j]:
                raise FieldError(f"site '{name}' repeats", ("services", i, "sites", j))


def _check_survive(p: Problem, site_names: list[str]) -> None:
    """Losing a site needs a second one."""
    survive = p.constraints.survive
    if survive is not None and survive.lose_site and len(site_names) < 2:
        raise FieldError("lose_site needs at least two sites in sites:",
                         ("constraints", "survive", "lose_site"))


def _check_transition(p: Problem) -> None:
    """current: and transition: come together, and only with objective: min_cost."""
    if (p.current is None) != (p.transition is None):
        given, missing = ("current", "transition") if p.current is not None else ("transition", "current")
        raise FieldError(f"{given}: needs {missing}: too (the deployment today and the cost of "
                         "switching go together)", (given,))
    if p.transition is not None and p.objective != "min_cost":
        raise FieldError("transition planning compares hourly costs; it needs objective: min_cost",
                         ("transition",))


def _check_current(p: Problem, hw_names: list[str], site_names: list[str]) -> None:
    """Each current pool names a service, a hardware type and (with sites) a site that exist."""
    svc_names = [s.name for s in p.services]
    for i, cp in enumerate(p.current or []):
        if cp.service not in svc_names:
            raise FieldError(f"service '{cp.service}' is not in services: ({', '.join(svc_names)})"
                             + did_you_mean(cp.service, svc_names),
                             ("current", i, "service"))
        if cp.hardware not in hw_names:
            raise FieldError(f"hardware type '{cp.hardware}' is not in hardware: ({', '.join(hw_names)})"
                             + did_you_mean(cp.hardware, hw_names),
                             ("current", i, "hardware"))
        if site_names and cp.site is None:
            raise FieldError("the problem has sites: a current pool needs its site", ("current", i))
        if cp.site is not None and cp.site not in site_names:
            where = f"sites: ({', '.join(site_names)})" if site_names else "sites: (none given)"
            raise FieldError(f"site '{cp.site}' is not in {where}", ("current", i, "site"))
