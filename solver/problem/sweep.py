"""Expand a problem's `sweep:` into named problems: the cartesian product of its axes.

A step of the flow between `problem.py` (load, resolve) and `plan.py`: each variant is the
problem file as written with the swept fields replaced, validated and resolved exactly as a
problem file would be (so every check of the schema applies to every planned value), named
after its values, e.g. `llama3-70b-online[h100-sxm.price=2.5,chat.qps=200]`.

The fields a sweep may set (each key of `sweep:`; TYPE is a hardware entry's card name, NAME a
service's name; the short label names the axis in variant names and summary columns):

    budget_per_hour                        budget
    constraints.power_kw                   power_kw
    constraints.safety_margin              safety_margin
    hardware[TYPE].price_per_hour          TYPE.price
    hardware[TYPE].supply                  TYPE.supply        (whole numbers)
    hardware[TYPE].power_w                 TYPE.power_w
    hardware[TYPE].committed.price_per_hour    TYPE.committed_price   (demand over time: the
    hardware[TYPE].on_demand.price_per_hour    TYPE.on_demand_price    entry's terms, docs/periods.md)
    services[NAME].workload.qps            NAME.qps
    services[NAME].slo.ttft_ms[.p50]       NAME.ttft_ms       (a number bound is a p50 bound)
    services[NAME].slo.ttft_ms.p99         NAME.ttft_ms.p99
    services[NAME].slo.tpot_ms[.p50]       NAME.tpot_ms
    services[NAME].slo.tpot_ms.p99         NAME.tpot_ms.p99

The last axis varies fastest. Every message names the file, the line of the sweep key and the
key; a value that makes the problem invalid also names the field and line it breaks.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from solver.errors import InputError
from solver.problem.load import ResolvedProblem, resolve
from solver.schema.problem import Problem
from solver.schema.sweep import MAX_SWEEP_VARIANTS, axis_values, format_value
from solver.schema.yamlio import YamlDoc, describe_validation_error

Bound = Literal["p50", "p99"]

# path as written -> (location in the problem data, label, whole numbers only)
_TOP_FIELDS: dict[str, tuple[tuple[str, ...], str, bool]] = {
    "budget_per_hour": (("budget_per_hour",), "budget", False),
    "constraints.power_kw": (("constraints", "power_kw"), "power_kw", False),
    "constraints.safety_margin": (("constraints", "safety_margin"), "safety_margin", False),
}
_HARDWARE_FIELDS: dict[str, tuple[str, bool]] = {
    "price_per_hour": ("price", False),
    "supply": ("supply", True),
    "power_w": ("power_w", False),
    "committed.price_per_hour": ("committed_price", False),  # the entry's terms (docs/periods.md)
    "on_demand.price_per_hour": ("on_demand_price", False),
}
# field after services[NAME]. -> (workload/slo key, latency bound or None, label suffix)
_SERVICE_FIELDS: dict[str, tuple[tuple[str, str], Bound | None, str]] = {
    "workload.qps": (("workload", "qps"), None, "qps"),
    **{f"slo.{k}{s}": (("slo", k), b, f"{k}{'.p99' if b == 'p99' else ''}")
       for k in ("ttft_ms", "tpot_ms") for s, b in (("", "p50"), (".p50", "p50"), (".p99", "p99"))},
}
SWEEPABLE = (
    list(_TOP_FIELDS)
    + [f"hardware[TYPE].{f}" for f in _HARDWARE_FIELDS]
    + [f"services[NAME].{f}" for f in _SERVICE_FIELDS]
)
_INDEXED = re.compile(r"^(hardware|services)\[(.+)\]\.([A-Za-z0-9_.]+)$")


@dataclass(frozen=True)
class Axis:
    """One key of `sweep:`: where it writes in the problem data and the values it takes."""

    key: str  # as written
    label: str  # short name, e.g. h100-sxm.price
    loc: tuple[str | int, ...]  # the field in the problem data
    bound: Bound | None  # latency SLOs: which bound of the field
    integer: bool
    values: tuple[float, ...]
    line: int | None

    def apply(self, data: dict, value: float) -> None:
        """Write `value` into the problem data (a plain dict as parsed from YAML)."""
        node = data
        for part in self.loc[:-1]:
            if isinstance(node, dict):
                node = node.setdefault(part, {})
            else:
                node = node[part]
        last = self.loc[-1]
        v: float | int = int(value) if self.integer else value
        if self.bound is None:
            node[last] = v
            return
        current = node.get(last)
        if isinstance(current, dict):
            node[last] = {**current, self.bound: v}
        elif self.bound == "p50" or current is None:
            node[last] = v if self.bound == "p50" else {"p99": v}
        else:  # a number is a p50 bound: keep it, add the p99
            node[last] = {"p50": current, "p99": v}


@dataclass(frozen=True)
class Variant:
    """One planned problem of a sweep."""

    name: str
    values: tuple[tuple[str, float], ...]  # (axis label, value), in axis order
    problem: ResolvedProblem


def variant_name(base: str, values: tuple[tuple[str, float], ...]) -> str:
    return f"{base}[{','.join(f'{k}={format_value(v)}' for k, v in values)}]"


def _where(doc: YamlDoc, key: str) -> str:
    line = doc.line_of(("sweep", key))
    return f"{doc.path}:{line if line is not None else '?'}: sweep.{key}"


def _locate(rp: ResolvedProblem, key: str) -> tuple[tuple[str | int, ...], str, Bound | None, bool]:
    if key in _TOP_FIELDS:
        loc, label, integer = _TOP_FIELDS[key]
        return loc, label, None, integer
    m = _INDEXED.match(key)
    if m is None:
        raise InputError(f"{_where(rp.doc, key)}: not a field a sweep can set; one of: "
                         f"{', '.join(SWEEPABLE)}")
    group, name, field = m.groups()
    if group == "hardware":
        names = list(rp.hardware_names)
        written = [h.type if isinstance(h.type, str) else h.type.name for h in rp.problem.hardware]
        j = names.index(name) if name in names else written.index(name) if name in written else None
        if j is None:
            raise InputError(f"{_where(rp.doc, key)}: no hardware entry '{name}' in the problem "
                             f"(hardware: {', '.join(names)})")
        if field not in _HARDWARE_FIELDS:
            raise InputError(f"{_where(rp.doc, key)}: hardware[{name}].{field} cannot be swept; "
                             f"one of: {', '.join(_HARDWARE_FIELDS)}")
        term = field.partition(".")[0] if "." in field else None
        if term is not None and getattr(rp.problem.hardware[j], term) is None:
            raise InputError(f"{_where(rp.doc, key)}: hardware[{name}] has no {term}: terms to price "
                             f"(docs/periods.md)")
        short, integer = _HARDWARE_FIELDS[field]
        return ("hardware", j, *field.split(".")), f"{names[j]}.{short}", None, integer
    names = [s.name for s in rp.problem.services]
    if name not in names:
        raise InputError(f"{_where(rp.doc, key)}: no service named '{name}' in the problem "
                         f"(services: {', '.join(names)})")
    if field not in _SERVICE_FIELDS:
        raise InputError(f"{_where(rp.doc, key)}: services[{name}].{field} cannot be swept; "
                         f"one of: {', '.join(_SERVICE_FIELDS)}")
    (part, leaf), bound, suffix = _SERVICE_FIELDS[field]
    return ("services", names.index(name), part, leaf), f"{name}.{suffix}", bound, False


def axes(rp: ResolvedProblem) -> list[Axis]:
    """The sweep's axes, in the order written; empty when the problem has no sweep."""
    if not rp.problem.sweep:
        return []
    out: list[Axis] = []
    for key, given in rp.problem.sweep.items():
        loc, label, bound, integer = _locate(rp, key)
        values = axis_values(given)
        for other in out:
            if (other.loc, other.bound) == (loc, bound):
                raise InputError(f"{_where(rp.doc, key)}: sets the same field as sweep.{other.key} "
                                 f"(line {other.line})")
        if integer:
            frac = [v for v in values if not float(v).is_integer()]
            if frac:
                raise InputError(f"{_where(rp.doc, key)}: takes whole numbers of devices; the sweep "
                                 f"gives {format_value(frac[0])}")
        if len(set(values)) != len(values):
            raise InputError(f"{_where(rp.doc, key)}: the range gives repeated values at "
                             "6 decimals; use fewer values or a wider range")
        out.append(Axis(key, label, loc, bound, integer, values, rp.doc.line_of(("sweep", key))))
    total = 1
    for a in out:
        total *= len(a.values)
    if total > MAX_SWEEP_VARIANTS:
        raise InputError(f"{rp.doc.path}:{rp.doc.line_of(('sweep',))}: sweep: {total:,} variants "
                         f"(the product of the axes' values); at most {MAX_SWEEP_VARIANTS:,}")
    return out


def _variant(rp: ResolvedProblem, chosen: list[tuple[Axis, float]]) -> Variant:
    """The problem with the chosen values, validated and resolved like a problem file."""
    data = copy.deepcopy(rp.doc.data)
    data.pop("sweep", None)
    for axis, v in chosen:
        axis.apply(data, v)
    doc = YamlDoc(rp.doc.path, data, rp.doc.lines)
    values = tuple((a.label, v) for a, v in chosen)
    name = variant_name(rp.name, values)
    try:
        problem = Problem.model_validate(data)
        resolved = resolve(problem.model_copy(update={"name": name}), doc)
    except (ValidationError, InputError) as exc:
        if isinstance(exc, ValidationError):
            text = describe_validation_error(exc, doc, data=data)
        else:
            text = str(exc)
        first = chosen[0][0]
        at = ", ".join(f"{a.label}={format_value(v)}" for a, v in chosen)
        prefix = f"{rp.doc.path}:"
        broken = "; ".join(f"line {ln.removeprefix(prefix)}" if ln.startswith(prefix) else ln
                           for ln in text.splitlines())
        raise InputError(f"{_where(rp.doc, first.key)}: at {at} the problem is invalid: "
                         f"{broken}") from None
    return Variant(name, values, resolved)


def expand(rp: ResolvedProblem) -> list[Variant]:
    """Every variant of the sweep (the last axis varies fastest), each validated; a problem
    without a sweep is its own single variant, under its own name."""
    ax = axes(rp)
    if not ax:
        return [Variant(rp.name, (), rp)]
    if len(ax) > 1:  # blame the axis whose value alone breaks the problem, where one does
        for a in ax:
            for v in a.values:
                _variant(rp, [(a, v)])
    return [_variant(rp, list(zip(ax, combo)))
            for combo in itertools.product(*(a.values for a in ax))]


def describe(rp: ResolvedProblem, variants: list[Variant] | None = None) -> str:
    """`sweep: 12 variants over h100-sxm.price (3), chat.qps (4)`; empty without a sweep."""
    ax = axes(rp)
    if not ax:
        return ""
    n = len(variants) if variants is not None else _product(ax)
    return f"sweep: {n} variants over " + ", ".join(f"{a.label} ({len(a.values)})" for a in ax)


def _product(ax: list[Axis]) -> int:
    n = 1
    for a in ax:
        n *= len(a.values)
    return n


def base_problem_note(rp: ResolvedProblem) -> str | None:
    """What `plan` (and the questions) say on stderr for a file with a sweep: the sweep is
    validated (a bad one is an error, exit 2), then the base problem is planned as written."""
    if not rp.problem.sweep:
        return None
    variants = expand(rp)
    return (f"note: {rp.doc.path} declares a {describe(rp, variants)}; planning the base "
            f"problem as written (fleetplan batch {rp.doc.path} --out DIR plans every variant)")

