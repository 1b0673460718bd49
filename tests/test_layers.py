"""The package's layers: every import (module-level, function-level and TYPE_CHECKING ones alike)
goes down or sideways in the declared order, the reports import only documents, and no module
imports itself through a cycle.

The order follows the flow of a plan (docs/architecture.md): the documents (schema) and the
shipped data (catalog, profiles) at the bottom, the performance model the steps evaluate with,
then problem -> candidates -> fleet -> verify -> plan -> decision / questions, then accuracy,
the deploy renderers (which, like the reports, read documents and never solve), the reports, the
batch runner and the command line on top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "solver"

# bottom to top; a module may import its own layer and the layers below it
ORDER = (
    "base",  # solver/__init__.py (the version), solver/errors.py, solver/files.py (writing outputs)
    "schema",  # pydantic documents, YAML loading with line numbers
    "catalog",  # shipped cards, problems and engine calibrations, by name or path
    "profiles",  # measured operator tables: format, interpolation, importers
    "perf",  # the vectorised performance model
    "replay",  # the engine replay (issue 14), above the model it replays with
    "problem",  # load a problem file, resolve its cards, expand its sweep
    "candidates",  # grid -> performance model -> pruned candidate table
    "fleet",  # the CP-SAT fleet model
    "verify",  # the independent check of a plan document
    "plan",  # the plan document (and the transition from today's deployment)
    "decision",  # the decision record: runners-up, fallback, validity, bands
    "questions",  # frontier, price sweep: many plans of one problem
    "accuracy",  # predictions against measured benchmarks, the calibration fit
    "deploy",  # launch configurations, manifests and canary benchmarks of a plan document
    "report",  # renders documents (table, markdown, HTML, plots)
    "batch",  # many problems, sweeps, executors
    "cli",  # argument parsing and dispatch only
)
RANK = {name: i for i, name in enumerate(ORDER)}
# the reports render documents: besides their own layer they read only these (the deploy layer
# renders documents too: a report's canary runbook is solver/deploy/canary.py's)
REPORT_MAY_IMPORT = {"base", "schema", "deploy", "report"}
# deploy renders a result document into files: it reads documents and cards, never solves
DEPLOY_MAY_IMPORT = {"base", "schema", "catalog", "deploy"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts == ["solver"] or parts[1] in ("errors", "files"):
        return "base"
    if parts[1] == "__main__":
        return "cli"
    if parts[1] not in RANK:
        raise AssertionError(f"{module}: not in a declared layer; add its folder to ORDER")
    return parts[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py")) if "_data" not in p.parts}


def _resolve(name: str) -> str:
    """The module an import names: the longest prefix that is one of ours."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(module: str) -> list[tuple[int, str]]:
    path = MODULES[module]
    return imports_in(path.read_text(), module, path.name == "__init__.py")


def imports_in(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, imported module) for every import of a module of ours, anywhere in the source."""
    tree = ast.parse(source)
    package = module if is_package else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, _resolve(a.name)) for a in node.names if a.name.startswith("solver")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            if not base.startswith("solver"):
                continue
            for a in node.names:  # `from solver.x import y` may name the module solver.x.y
                out.append((node.lineno, _resolve(f"{base}.{a.name}")))
    return out


EDGES = {m: imports_of(m) for m in MODULES}


def test_every_module_has_a_layer():
    for m in MODULES:
        layer_of(m)


def violations(module: str, edges: list[tuple[int, str]]) -> list[str]:
    mine = layer_of(module)
    bad = []
    for line, target in edges:
        theirs = layer_of(target)
        if RANK[theirs] > RANK[mine]:
            bad.append(f"{module}:{line}: {mine} imports {target} ({theirs})")
        if mine == "report" and theirs not in REPORT_MAY_IMPORT:
            bad.append(f"{module}:{line}: a report imports {target} ({theirs}); reports render "
                       "documents and never solve")
        if mine == "deploy" and theirs not in DEPLOY_MAY_IMPORT:
            bad.append(f"{module}:{line}: deploy imports {target} ({theirs}); deploy renders "
                       "documents and never solves")
    return bad


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_declared_order(module):
    bad = violations(module, EDGES[module])
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    graph = {m: sorted({t for _, t in EDGES[m] if t != m and t in MODULES}) for m in MODULES}
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in graph[m]:
            # a package's __init__ importing its own submodules is not a cycle of ours
            if state.get(t) == 1 and not (t == m.rsplit(".", 1)[0] or m.startswith(t + ".")):
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_sees_function_level_and_relative_imports():
    """So that the tests above can fail: an upward import inside a function, a relative one,
    and a report reaching for the performance model are all reported, with their lines."""
    src = ("from solver.schema.result import PlanResult\n"
           "def f():\n"
           "    from solver.fleet.solve import SolveOptions\n"
           "    from ..perf import arch\n")
    edges = imports_in(src, "solver.report.fake")
    assert edges == [(1, "solver.schema.result"), (3, "solver.fleet.solve"), (4, "solver.perf.arch")]
    bad = violations("solver.report.fake", edges)
    assert [b.split(":")[1] for b in bad] == ["3", "4"], bad
    assert [b.split(":")[1] for b in violations("solver.schema.fake", edges)] == ["3", "4"]
    assert violations("solver.batch.fake", edges) == []
    assert [b.split(":")[1] for b in violations("solver.deploy.fake", edges)] == ["3", "4"]
