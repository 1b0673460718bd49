"""'Did you mean' for unknown keys and names: the closest known ones (difflib), never the whole list."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

SHOW_ALL = 8  # a list this short is shown whole


def close_matches(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Up to `n` known names closest to `word` (case-insensitive, best first)."""
    names = sorted(set(choices))
    lower = {c.lower(): c for c in names}
    hits = difflib.get_close_matches(word.lower(), list(lower), n=n, cutoff=0.6)
    if not hits:  # a prefix or a fragment: 'llama-70b' for 'llama-3.1-70b'
        hits = [c for c in lower if word and word.lower() in c][:n]
    return [lower[h] for h in hits]


def _quoted(names: list[str]) -> str:
    q = [f"'{n}'" for n in names]
    return q[0] if len(q) == 1 else ", ".join(q[:-1]) + " or " + q[-1]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' or ''."""
    hits = close_matches(word, choices)
    return f" (did you mean {_quoted(hits)}?)" if hits else ""


def unknown_name(what: str, word: str, choices: Iterable[str], listing: str) -> str:
    """`unknown <what> '<word>'`, then the closest known names, or all of a short list; `listing`
    says where the whole list is (a command)."""
    names = sorted(set(choices))
    hits = close_matches(word, names)
    text = f"unknown {what} '{word}'"
    if hits:
        text += f"; did you mean {_quoted(hits)}?"
    if len(names) <= SHOW_ALL:
        return text + f"; shipped: {', '.join(names)}"
    return text + f" ({listing} lists all {len(names)})"
