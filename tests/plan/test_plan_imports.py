"""The plan builder reads the verifier's recount (solver/verify/recount.py) and calls `verify`
on its finished document, but imports none of the verifier's checks: the numbers a plan
reports are never produced by the code that then checks them."""

from __future__ import annotations

import ast
from pathlib import Path

PLAN = Path(__file__).resolve().parents[2] / "solver" / "plan"
ALLOWED = {"solver.verify.recount": None, "solver.verify.checks": {"verify"}}  # None: any name


def verify_imports(source: str) -> list[tuple[str, str | None]]:
    """(module, name) of every import of solver.verify, anywhere in the source (name None for
    `import solver.verify...`)."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.startswith("solver.verify")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("solver.verify"):
            out += [(node.module, a.name) for a in node.names]
    return out


def forbidden(imports: list[tuple[str, str | None]]) -> list[str]:
    bad = []
    for module, name in imports:
        allowed = ALLOWED.get(module, set())
        if name is None or (allowed is not None and name not in allowed):
            bad.append(f"{module}:{name}")
    return bad


def test_the_plan_builder_imports_no_check():
    found = {p.name: forbidden(verify_imports(p.read_text())) for p in sorted(PLAN.glob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}
    # and it does use the shared recount
    assert any(m == "solver.verify.recount" for p in PLAN.glob("*.py") for m, _ in verify_imports(p.read_text()))


def test_the_walk_catches_checks_at_any_depth():
    source = ("from solver.verify.recount import servable\n"
              "from solver.verify.checks import verify, violations\n"
              "def f():\n    from solver.verify.rules.capacity import check_ratio\n"
              "    import solver.verify.tally\n")
    assert forbidden(verify_imports(source)) == [
        "solver.verify.checks:violations", "solver.verify.rules.capacity:check_ratio", "solver.verify.tally:None"]
