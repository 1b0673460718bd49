"""Markup helpers of the HTML report (solver/report/html.py): escaping, tables, paragraphs,
lists, sections and embedded PNG images. Text that can come from a problem file goes through
`esc`; a `Raw` string is markup made here and is written as is."""

from __future__ import annotations

import base64
import html
from typing import Iterable, Sequence


class Raw(str):
    """Markup made here (never user text): written as is."""


def esc(v: object) -> str:
    if isinstance(v, Raw):
        return str(v)
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return html.escape(str(v), quote=True)


def num_text(v: float | int | None, fmt: str = ",.2f") -> str:
    return "-" if v is None else format(v, fmt)


def money(v: float | None) -> str:
    return "-" if v is None else f"${v:,.2f}/h"


def badge(text: str, kind: str) -> Raw:
    return Raw(f'<span class="badge {kind}">{esc(text)}</span>')


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], cls: str = "",
           num: str = "") -> str:
    """`num`: one character per column, 'r' for a right-aligned (numeric) column."""
    def align(i: int) -> str:
        return ' class="num"' if i < len(num) and num[i] == "r" else ""
    head = "".join(f"<th{align(i)}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = "\n".join("<tr>" + "".join(f"<td{align(i)}>{esc(v)}</td>" for i, v in enumerate(r))
                     + "</tr>" for r in rows)
    # in a container that scrolls sideways: a wide table never widens the page (narrow windows)
    return (f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n'
            '</tbody></table></div>')


def img(png: bytes, alt: str, cls: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="{cls}" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def section(sid: str, title: str, body: str) -> str:
    return f'<section id="{sid}">\n<h2>{esc(title)}</h2>\n{body}\n</section>'


def para(text: str, cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f"<p{c}>{esc(text)}</p>"


def bullets(items: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"
