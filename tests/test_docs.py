"""The documentation cites only what exists: every repository path written in README.md, in
docs/*.md and in the docstrings and comments of solver/ names a file or folder of this
repository, every relative markdown link resolves, and nothing cites the notes that live
outside the repository (reference/*.md, ../shared, PAPER.md, DESIGN.md, SPEC.md); what they
hold is written into docs/ (docs/sources.md, docs/cpsat.md).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = sorted(p for p in (ROOT / "solver").rglob("*.py") if "_data" not in p.parts)

# a path starts at one of the repository's top-level folders (not inside a longer word or URL)
TOP = ("solver", "docs", "benchmarks", "problems", "hardware", "models", "tests", "schemas", "examples", "traces")
PATH = re.compile(r"(?<![\w./~-])(?:" + "|".join(TOP) + r")/[\w./<>*{}\[\]|#@=-]*")
# placeholders and globs name a family of files, not one: `hardware/profiles/<hw>/<engine>/`,
# `problems/**/*.yaml`, `solver/...`, `tests/<step>/test_*.py`, `{a,b}`, `a|b`
PLACEHOLDER = re.compile(r"[<>*{}\[\]|]|\.\.\.|/[A-Z]+(?:/|$|\.)")
ABSENT = re.compile(r"reference/[\w.-]+\.md|\.\./shared|/work/shared|\b(?:PAPER|DESIGN|SPEC)\.md\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# exists only in an installed wheel (pyproject.toml maps models/, hardware/, problems/ there)
INSTALLED_ONLY = "solver/_data/"


def _clean(path: str) -> str:
    path = path.split("#", 1)[0]
    return path.rstrip(".,:;)'\"`")


def paths_in(text: str) -> list[str]:
    """The repository paths a text names, less placeholders and globs."""
    out = []
    for m in PATH.finditer(text):
        raw = m.group(0).split("#", 1)[0]
        if PLACEHOLDER.search(raw) or raw.startswith(INSTALLED_ONLY):
            continue
        out.append(_clean(raw))
    return out


def commentary(path: Path) -> str:
    """The docstrings and comments of a Python module, one string."""
    source = path.read_text()
    parts = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            parts.append(tok.string)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                parts.append(doc)
    return "\n".join(parts)


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def test_placeholders_and_globs_are_skipped():
    assert paths_in("`hardware/profiles/<hw>/<engine>/` and `problems/**/*.yaml`, tests/<step>/") == []
    assert paths_in("solver/... and tests/DIR/ and https://x.org/docs/a.md") == []
    assert paths_in("`solver/_data/hardware/profiles` installed") == []
    assert paths_in("see `solver/plan/planner.py`, docs/sources.md#the-paper.") == [
        "solver/plan/planner.py", "docs/sources.md"]


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_paths_in_docs_exist(doc: Path):
    missing = sorted({p for p in paths_in(doc.read_text()) if not (ROOT / p).exists()})
    assert not missing, f"{_rel(doc)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_markdown_links_resolve(doc: Path):
    bad = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (doc.parent / target.split("#", 1)[0]).exists():
            bad.append(target)
    assert not bad, f"{_rel(doc)} links to files that do not exist: {bad}"


@pytest.mark.parametrize("module", SOURCES, ids=_rel)
def test_paths_in_docstrings_and_comments_exist(module: Path):
    missing = sorted({p for p in paths_in(commentary(module)) if not (ROOT / p).exists()})
    assert not missing, f"{_rel(module)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("path", DOCS + SOURCES, ids=_rel)
def test_no_citation_of_notes_outside_the_repository(path: Path):
    hits = [f"line {i}: {m.group(0)}" for i, line in enumerate(path.read_text().splitlines(), 1)
            for m in ABSENT.finditer(line)]
    assert not hits, f"{_rel(path)} cites notes that are not in the repository: {hits}"
