"""The code's shape: no function in `solver/` over 60 lines and no module over 400 lines, unless a
one-line reason is given.

The reason is a comment `# long: <reason>` on the line directly above the `def` (above its first
decorator, if it has one) or, for a module, as the file's first line. A function's length counts
from its `def` line to its last line, docstring and nested functions included; a nested function
is also measured on its own.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "solver"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400
REASON = "# long:"


@dataclass(frozen=True)
class Overlong:
    """One function or module over its limit without a reason."""

    where: str  # file:line
    what: str  # "function NAME" or "module"
    lines: int
    limit: int

    def __str__(self) -> str:
        return f"{self.where}: {self.what} is {self.lines} lines (limit {self.limit}; " \
               f"give a reason with '{REASON} ...' above it)"


def _has_reason(lines: list[str], lineno: int) -> bool:
    """Whether the 1-based line `lineno - 1` is a `# long:` comment."""
    return lineno >= 2 and lines[lineno - 2].strip().startswith(REASON)


def overlong(source: str, name: str) -> list[Overlong]:
    """The functions and the module in `source` (shown as `name`) over their limits, no reason."""
    lines = source.splitlines()
    found = []
    if len(lines) > MAX_MODULE_LINES and not (lines and lines[0].strip().startswith(REASON)):
        found.append(Overlong(f"{name}:1", "module", len(lines), MAX_MODULE_LINES))
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        length = node.end_lineno - node.lineno + 1
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if length > MAX_FUNCTION_LINES and not _has_reason(lines, first):
            found.append(Overlong(f"{name}:{node.lineno}", f"function {node.name}", length,
                                  MAX_FUNCTION_LINES))
    return found


def _package_overlong() -> list[Overlong]:
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).as_posix()
        found.extend(overlong(path.read_text(encoding="utf-8"), rel))
    return found


def test_no_overlong_code_without_a_reason():
    found = _package_overlong()
    assert not found, "\n".join(map(str, found))


def _function(body_lines: int, above: str = "") -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(body_lines))
    return f"{above}def f():\n{body}"


def test_a_long_function_is_caught_with_its_place_and_length():
    source = "import os\n\n" + _function(MAX_FUNCTION_LINES)  # def line + 60 = 61 lines
    (hit,) = overlong(source, "m.py")
    assert (hit.where, hit.what, hit.lines) == ("m.py:3", "function f", MAX_FUNCTION_LINES + 1)
    assert "m.py:3: function f is 61 lines" in str(hit)


def test_a_function_at_the_limit_passes():
    assert overlong(_function(MAX_FUNCTION_LINES - 1), "m.py") == []


def test_a_reason_above_the_def_or_its_decorator_is_accepted():
    assert overlong(_function(100, "# long: one table of cases\n"), "m.py") == []
    decorated = _function(100, "# long: one table of cases\n@staticmethod\n")
    assert overlong(decorated, "m.py") == []
    not_directly_above = _function(100, "# long: one table of cases\n\n")
    assert [h.what for h in overlong(not_directly_above, "m.py")] == ["function f"]


def test_a_nested_long_function_is_caught_on_its_own():
    inner = _function(MAX_FUNCTION_LINES).replace("\n", "\n    ")
    source = f"# long: the outer one has a reason\ndef outer():\n    {inner}\n"
    assert [h.what for h in overlong(source, "m.py")] == ["function f"]


@pytest.mark.parametrize("first_line, hits", [("", ["module"]), ("# long: generated table\n", [])])
def test_a_long_module_needs_a_reason_on_its_first_line(first_line, hits):
    source = first_line + "x = 1\n" * (MAX_MODULE_LINES + 1)
    assert [h.what for h in overlong(source, "m.py")] == hits
