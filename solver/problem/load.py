"""Load a problem file and resolve its card references: the first step of the flow."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from solver.catalog import shipped
from solver.catalog.calibration import CalibrationFile, engine_params, load_calibration_file
from solver.errors import InputError
from solver.perf.arch import ModelArch
from solver.perf.speculative import Speculation
from solver.problem.hardware import entry_caps, entry_card
from solver.problem.periods import Horizon, horizon, with_peak_demand
from solver.problem.tco import CostParts, device_parts
from solver.problem.workload_data import fill_workload
from solver.schema.cards import HardwareCard, ModelCard
from solver.schema.engine import EngineParams
from solver.schema.problem import Problem, Service
from solver.schema.tco import DeviceCost, SiteCost
from solver.schema.yamlio import YamlDoc, load_yaml, parse_yaml, validate_doc


@dataclass(frozen=True)
class ResolvedProblem:
    """A validated problem with every card resolved (inline or by name)."""

    problem: Problem
    doc: YamlDoc
    models: tuple[ModelCard, ...]  # per service
    archs: tuple[ModelArch, ...]  # per service: the model as that service routes it
    hardware: tuple[HardwareCard, ...]  # per hardware entry
    prices: tuple[float, ...]  # USD per device-hour (entry override or card default)
    supplies: tuple[int | None, ...]
    power_w: tuple[float, ...]
    engine: EngineParams  # the engine's calibration, then the problem's explicit overrides
    # sites (schema/fleet.py); empty without `sites:`, and the fleet is then one place
    site_names: tuple[str, ...] = ()
    site_supplies: tuple[tuple[int | None, ...], ...] = ()  # [site][hw]: None unlimited, 0 none
    site_prices: tuple[tuple[float, ...], ...] = ()  # [site][hw] USD per device-hour
    site_power_kw: tuple[float | None, ...] = ()
    speculations: tuple[Speculation | None, ...] = ()  # per service (services[].speculative)
    # power caps offered per type (W, highest first) and ownership costs (problem/tco.py)
    caps: tuple[tuple[float, ...], ...] = ()
    entry_costs: tuple[DeviceCost | None, ...] = ()
    site_costs: tuple[SiteCost | None, ...] = ()
    horizon: Horizon | None = None  # demand over time (problem/periods.py); None: one period
    calibration_file: CalibrationFile | None = None  # software.calibration, when the problem names one
    # measured drift of running pools (service, role, hardware card, factor): every iteration of
    # those pools takes `factor` x the model's time (solver/candidates/dilation.py)
    latency_scale: tuple[tuple[str, str, str, float], ...] = ()

    def caps_of(self, hw: int) -> tuple[float, ...]:
        return self.caps[hw] if self.caps else (self.power_w[hw],)

    def cost_parts(self, site: int, hw: int, power_w: float | None = None) -> CostParts:
        """USD per device-hour of type hw at a site, by component, at `power_w` (default the
        type's power)."""
        return device_parts(
            self.price_at(site, hw), self.entry_costs[hw] if self.entry_costs else None,
            self.site_costs[site] if self.site_costs else None,
            self.hardware[hw].devices_per_node,
            power_w if power_w is not None and math.isfinite(power_w) else self.power_w[hw])

    def device_cost(self, site: int, hw: int, power_w: float | None = None) -> float:
        """USD per device-hour of type hw at a site, all components."""
        return self.cost_parts(site, hw, power_w).total

    @property
    def name(self) -> str:
        return self.problem.name

    def speculation_of(self, service: str) -> Speculation | None:
        """The named service's speculative decoding (with its draft model resolved), or None."""
        names = [s.name for s in self.problem.services]
        return self.speculations[names.index(service)] if self.speculations else None

    @property
    def hardware_names(self) -> tuple[str, ...]:
        return tuple(h.name for h in self.hardware)

    @property
    def n_sites(self) -> int:
        """Places the fleet is split over (1 without `sites:`)."""
        return max(1, len(self.site_names))

    def price_at(self, site: int, hw: int) -> float:
        return self.site_prices[site][hw] if self.site_names else self.prices[hw]

    def hw_index(self, name: str) -> int:
        """A hardware type by its card name or its entry's name as written in the problem."""
        if name in self.hardware_names:
            return self.hardware_names.index(name)
        return [h.name for h in self.problem.hardware].index(name)

    def site_of(self, name: str | None) -> int:
        return self.site_names.index(name) if name is not None else 0

    @property
    def instance_supplies(self) -> tuple[int | None, ...]:
        """Devices one instance of each type can use at most: the global supply and, with sites,
        the largest site's (an instance runs within one site)."""
        if not self.site_names:
            return self.supplies
        out: list[int | None] = []
        for h, g in enumerate(self.supplies):
            per_site = [s[h] for s in self.site_supplies]
            local = None if any(x is None for x in per_site) else max(per_site)
            out.append(g if local is None else local if g is None else min(g, local))
        return tuple(out)


def _where(doc: YamlDoc, loc: tuple) -> str:
    line = doc.line_of(loc)
    return f"{doc.path}:{line if line is not None else '?'}"


def _card(doc: YamlDoc, loc: tuple, field: str, ref, load, base):
    """A card given inline, or loaded by name or path; a failure names the problem's line."""
    if not isinstance(ref, str):
        return ref
    try:
        return load(ref, base)
    except InputError as exc:
        raise InputError(f"{_where(doc, loc)}: {field}: {exc}") from None


def _arch(doc: YamlDoc, i: int, s: Service, card: ModelCard) -> ModelArch:
    """The service's model with its routing; a routing that does not fit the model is an error."""
    arch = ModelArch.from_card(card)
    if s.routing is None:
        return arch
    loc = ("services", i, "routing")
    try:
        return arch.with_routing(s.routing)
    except ValueError as exc:
        raise InputError(f"{_where(doc, loc)}: services[{i}].routing: {exc}") from None


def _workloads(problem: Problem, doc: YamlDoc, base: Path | None) -> Problem:
    """Workloads from data (`trace:` / `lengths:`) filled in (solver/problem/workload_data.py); a bad
    file names the problem's line, then the file's."""
    if not any(s.workload.from_data for s in problem.services):
        return problem
    services = []
    for i, s in enumerate(problem.services):
        key = "trace" if s.workload.trace is not None else "lengths"
        try:
            wl = fill_workload(s.workload, base)
        except InputError as exc:
            loc = ("services", i, "workload", key)
            raise InputError(f"{_where(doc, loc)}: services[{i}].workload.{key}: {exc}") from None
        services.append(s if wl is s.workload else s.model_copy(update={"workload": wl}))
    return problem.model_copy(update={"services": services})


def _service_card(doc: YamlDoc, i: int, s: Service, base: Path | None) -> ModelCard:
    """Service i's model card, with its context checked against the service's lengths."""
    card = _card(doc, ("services", i, "model"), f"services[{i}].model", s.model,
                 shipped.model_card, base)
    mc = s.workload.max_context
    if mc is not None and mc > card.max_context_tokens:
        wl = ("services", i, "workload", "max_context")
        raise InputError(
            f"{_where(doc, wl)}: services[{i}].workload.max_context: {mc} exceeds "
            f"{card.name}'s maximum context of {card.max_context_tokens} tokens"
        )
    need = s.workload.input_tokens.mean_tokens + s.workload.output_tokens.mean_tokens
    if need > card.max_context_tokens:
        wl = ("services", i, "workload", "input_tokens")
        raise InputError(
            f"{_where(doc, wl)}: services[{i}].workload: input + output tokens ({need:g}) "
            f"exceed {card.name}'s maximum context of {card.max_context_tokens} tokens"
        )
    return card


def resolve(problem: Problem, doc: YamlDoc) -> ResolvedProblem:
    base = Path(doc.path).parent if not doc.path.startswith("<") else None
    problem = _workloads(problem, doc, base)
    problem, cal_file = _calibration_file(problem, doc, base)
    models = [_service_card(doc, i, s, base) for i, s in enumerate(problem.services)]
    archs = [_arch(doc, i, s, card) for i, (s, card) in enumerate(zip(problem.services, models))]
    speculations = tuple(_speculation(doc, i, s, card, base) for i, (s, card)
                         in enumerate(zip(problem.services, models)))
    cards: list[HardwareCard] = []
    for j, h in enumerate(problem.hardware):
        card = _card(doc, ("hardware", j, "type"), f"hardware[{j}].type", h.type,
                     shipped.hardware_card, base)
        cards.append(entry_card(doc, j, h, card))
    names = [c.name for c in cards]
    if len(set(names)) != len(names):
        raise InputError(f"{_where(doc, ('hardware',))}: hardware: two entries resolve to the same card name")
    # an owned type (`cost:`) pays rent only when the entry gives a price
    prices = tuple(h.price_per_hour or (0.0 if h.cost is not None else c.price_per_hour)
                   for h, c in zip(problem.hardware, cards))
    site_supplies, site_prices = _sites(problem, prices)
    problem, hz = _periods(problem, prices, base, doc)
    return ResolvedProblem(
        problem=problem,
        doc=doc,
        models=tuple(models),
        archs=tuple(archs),
        hardware=tuple(cards),
        prices=prices,
        supplies=tuple(h.supply for h in problem.hardware),
        power_w=tuple(h.power_w or c.power_w for h, c in zip(problem.hardware, cards)),
        engine=effective_engine(problem, cal_file),
        calibration_file=cal_file,
        site_names=tuple(s.name for s in problem.sites or []),
        site_supplies=site_supplies,
        site_prices=site_prices,
        site_power_kw=tuple(s.power_kw for s in problem.sites or []),
        speculations=speculations,
        caps=tuple(entry_caps(doc, j, h, c) for j, (h, c) in enumerate(zip(problem.hardware, cards))),
        entry_costs=tuple(h.cost for h in problem.hardware),
        site_costs=tuple(s.cost for s in problem.sites or []),
        horizon=hz,
    )


def _periods(problem: Problem, prices: tuple[float, ...], base: Path | None, doc: YamlDoc):
    """Demand over time (problem/periods.py): the problem with each profiled service at its
    peak, and the horizon; without periods the problem as given and None."""
    if problem.periods is None:
        return problem, None
    hz = horizon(problem, prices, base, lambda loc: _where(doc, loc))
    return with_peak_demand(problem, hz), hz


def _speculation(doc: YamlDoc, i: int, s: Service, card: ModelCard, base) -> Speculation | None:
    """The service's speculative decoding with its draft model's card resolved; a draft of
    another vocabulary (tokenizer) than the target's is an error."""
    spec = s.speculative
    if spec is None:
        return None
    if spec.method != "draft" or spec.draft_model is None:
        return Speculation.of(spec)
    loc = ("services", i, "speculative", "draft_model")
    field = f"services[{i}].speculative.draft_model"
    draft = _card(doc, loc, field, spec.draft_model, shipped.model_card, base)
    if draft.vocab_size != card.vocab_size:
        raise InputError(f"{_where(doc, loc)}: {field}: {draft.name} has a vocabulary of "
                         f"{draft.vocab_size} tokens, {card.name} of {card.vocab_size}; a draft "
                         "model must share the target's tokenizer")
    return Speculation.of(spec, ModelArch.from_card(draft))


def _sites(problem: Problem, prices: tuple[float, ...]):
    """Per site and hardware type: the supply (0 where the site lacks the type, None unlimited)
    and the price (the site's override, else the hardware entry's)."""
    names = [h.name for h in problem.hardware]
    supplies, site_prices = [], []
    for site in problem.sites or []:
        sup: list[int | None] = [0] * len(names)
        pr = list(prices)
        for sh in site.hardware:
            h = names.index(sh.type)
            sup[h] = sh.supply
            if sh.price_per_hour is not None:
                pr[h] = sh.price_per_hour
        supplies.append(tuple(sup))
        site_prices.append(tuple(pr))
    return tuple(supplies), tuple(site_prices)


def _calibration_file(problem: Problem, doc: YamlDoc, base) -> tuple[Problem, CalibrationFile | None]:
    """The calibration file `software.calibration` names (relative to the problem file), and
    the problem with `software.engine` set to the file's engine; a file of another engine than
    the one declared is an error naming the line."""
    ref = problem.software.calibration
    if ref is None:
        return problem, None
    where = _where(doc, ("software", "calibration"))
    path = Path(ref) if Path(ref).is_absolute() or base is None else base / ref
    cf = load_calibration_file(path, where)
    declared = problem.software.engine
    if declared is not None and declared != cf.calibration.engine:
        raise InputError(f"{where}: software.calibration: {ref} calibrates {cf.calibration.engine}, "
                         f"the problem declares software.engine {declared}")
    software = problem.software.model_copy(update={"engine": cf.calibration.engine})
    return problem.model_copy(update={"software": software}), cf


def effective_engine(problem: Problem, cal_file: CalibrationFile | None = None) -> EngineParams:
    """Calibrated parameters of the declared engine (or of the problem's calibration file), with
    the fields the problem sets on top."""
    base = engine_params(problem.software.engine, cal_file)
    given = {k: getattr(problem.engine, k) for k in problem.engine.model_fields_set}
    return base.model_copy(update=given)


def load_problem(path: str | Path) -> ResolvedProblem:
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise InputError(f"{doc.path}:1: expected a mapping of problem fields at the top level")
    problem = validate_doc(Problem, doc)
    return resolve(problem, doc)


def parse_problem(text: str, where: str = "<problem>") -> ResolvedProblem:
    doc = parse_yaml(text, where)
    if not isinstance(doc.data, dict):
        raise InputError(f"{where}:1: expected a mapping of problem fields at the top level")
    return resolve(validate_doc(Problem, doc), doc)


def derive(
    rp: ResolvedProblem,
    *,
    demand_scale: float = 1.0,
    prices: Mapping[str, float] | None = None,
    objective: Literal["min_cost", "max_throughput"] | None = None,
) -> ResolvedProblem:
    """A variant of a resolved problem for what-if questions: every service's `qps` multiplied
    by `demand_scale`, the `price_per_hour` of the named hardware entries replaced, and/or
    another objective; everything else as given. The edited problem is resolved again
    (cards come from the catalog's cache, under a millisecond), so every field derived from
    prices or demand is recomputed as for a problem file. The caller passes positive finite
    values; a max_throughput variant must be bounded by a budget, a power cap or finite
    supplies (the caller checks, as the problem file's validator would)."""
    if not (math.isfinite(demand_scale) and demand_scale > 0):
        raise ValueError(f"demand_scale must be positive and finite, got {demand_scale}")
    problem = rp.problem
    update: dict = {}
    if demand_scale != 1.0:
        update["services"] = [
            s.model_copy(update={"workload": s.workload.model_copy(
                update={"qps": s.workload.qps * demand_scale})})
            for s in problem.services
        ]
    if prices:
        unknown = sorted(set(prices) - set(rp.hardware_names))
        if unknown:
            raise ValueError(f"unknown hardware {unknown}; the problem has {list(rp.hardware_names)}")
        if not all(math.isfinite(v) and v > 0 for v in prices.values()):
            raise ValueError(f"prices must be positive and finite, got {dict(prices)}")
        update["hardware"] = [
            h.model_copy(update={"price_per_hour": prices.get(c.name, h.price_per_hour)})
            for h, c in zip(problem.hardware, rp.hardware)
        ]
    if objective is not None and objective != problem.objective:
        update["objective"] = objective
    if not update:
        return rp
    return replace(resolve(problem.model_copy(update=update), rp.doc), latency_scale=rp.latency_scale)
