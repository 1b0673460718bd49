"""`fleetplan catalog`: the rows of `solver/problem/listing.py` as a table or JSON."""

from __future__ import annotations

import json

from solver.report.text import table


def catalog_json(lists: dict[str, list[dict]]) -> str:
    return json.dumps(lists, indent=2)


def catalog_text(lists: dict[str, list[dict]]) -> str:
    parts = []
    for k, rows in lists.items():
        headers = list(rows[0].keys()) if rows else ["name"]
        parts.append(f"{k}:\n" + table(headers, [[r[h] for h in headers] for r in rows]))
    return "\n\n".join(parts)
