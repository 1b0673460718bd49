"""Deterministic text of generated files: YAML with a comment on any value, and bash scripts
whose arguments each carry a comment. Same input, same bytes: no dates, no dict order but the
one written, no environment.

YAML: mappings are Python dicts (in their order), sequences lists, and any value may be wrapped
in `C(value, comment)`. Strings are written as JSON strings (valid YAML double-quoted
scalars), so that nothing a plan names can change the document's structure.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from solver.deploy.engines import Arg

_PLAIN_KEY = re.compile(r"[A-Za-z][A-Za-z0-9._/-]*")


@dataclass(frozen=True)
class C:
    """A value with the comment written after it."""

    value: Any
    comment: str


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    return json.dumps(str(v), ensure_ascii=False)


def _comment(text: str | None) -> str:
    return f"  # {' '.join(text.split())}" if text else ""


def _unwrap(v: Any) -> tuple[Any, str | None]:
    return (v.value, v.comment) if isinstance(v, C) else (v, None)


def _lines(node: Any, indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    if isinstance(node, dict):
        for k, raw in node.items():
            v, note = _unwrap(raw)
            key = str(k) if _PLAIN_KEY.fullmatch(str(k)) else _scalar(k)
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{key}:{_comment(note)}")
                out += _lines(v, indent + 2)
            else:
                out.append(f"{pad}{key}: {_empty_or_scalar(v)}{_comment(note)}")
    else:
        for raw in node:
            v, note = _unwrap(raw)
            if isinstance(v, (dict, list)) and v:
                inner = _lines(v, indent + 2)
                out.append(f"{pad}- {inner[0].lstrip()}{_comment(note) if not isinstance(v, dict) else ''}")
                out += inner[1:]
            else:
                out.append(f"{pad}- {_empty_or_scalar(v)}{_comment(note)}")
    return out


def _empty_or_scalar(v: Any) -> str:
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return _scalar(v)


def one_line(text: str) -> str:
    return " ".join(text.split())


def header(lines: list[str]) -> str:
    return "".join(f"# {one_line(line)}\n" for line in lines)


def yaml_text(head: list[str], *docs: Any) -> str:
    """The header as comments, then the documents separated by '---'."""
    parts = ["\n".join(_lines(d, 0)) + "\n" for d in docs]
    return header(head) + "---\n" + "---\n".join(parts)


def arg_items(args: list[Arg]) -> list[Any]:
    """Container args: each flag, then its value carrying the comment."""
    out: list[Any] = []
    for a in args:
        if a.value is None:
            out.append(C(a.flag, a.where))
        else:
            out += [a.flag, C(a.value, a.where)]
    return out


def _shell_value(v: str) -> str:
    """A value for bash: quoted, except "${VAR}" references, which stay expandable."""
    if v.startswith("${") and "}" in v:
        name, rest = v[2:].split("}", 1)
        return f'"${{{name}}}{rest}"' if name.isidentifier() and "'" not in rest and '"' not in rest else shlex.quote(v)
    return shlex.quote(v)


def script(head: list[str], setup: list[str], program: str, args: list[Arg], positional: str = "") -> str:
    """A bash script: `program [positional] "${args[@]}"`, each argument commented."""
    lines = ["#!/usr/bin/env bash", *[f"# {one_line(x)}" for x in head], "set -euo pipefail", *setup, "args=("]
    for a in args:
        item = a.flag if a.value is None else f"{a.flag} {_shell_value(a.value)}"
        lines.append(f"  {item}{_comment(a.where)}")
    lines.append(")")
    lines.append(f'exec {program}{" " + positional if positional else ""} "${{args[@]}}" "$@"')
    return "\n".join(lines) + "\n"
