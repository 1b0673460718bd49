"""A progress bar for `fleetplan batch`, on stderr only (stdout stays the summary).

Shown by default when stderr is a terminal (a bar redrawn in place); `--progress` forces it
(on a pipe or a log file: one line per finished problem); `--no-progress` turns it off."""

from __future__ import annotations

import time
from collections import Counter
from typing import TextIO

BAR_WIDTH = 28
REDRAW_S = 0.1
CLEAR_TO_END = "\x1b[K"  # a shorter line leaves nothing of the longer one before it


class Progress:
    def __init__(self, total: int, stream: TextIO | None, mode: str):
        self.total = total
        self.stream = stream
        self.mode = mode if stream is not None and total > 0 else "off"  # off | bar | lines
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.t0 = time.monotonic()
        self._last = 0.0

    @classmethod
    def for_stream(cls, total: int, stream: TextIO, wanted: bool | None) -> Progress:
        """`wanted`: None = a bar when `stream` is a terminal; True = always; False = never."""
        tty = bool(getattr(stream, "isatty", lambda: False)())
        if wanted is False or (wanted is None and not tty):
            return cls(total, None, "off")
        return cls(total, stream, "bar" if tty else "lines")

    def start(self) -> None:
        """Draw the empty bar (a batch's first plan can take a while)."""
        if self.mode == "bar":
            self._write("\r" + self.line() + CLEAR_TO_END)

    def advance(self, name: str, status: str) -> None:
        self.done += 1
        self.counts[status] += 1
        if self.mode == "lines":
            width = len(str(self.total))
            self._write(f"[{self.done:>{width}}/{self.total}] {status:<10} {name}\n")
        elif self.mode == "bar":
            now = time.monotonic()
            if now - self._last >= REDRAW_S or self.done == self.total:
                self._last = now
                self._write("\r" + self.line(now) + CLEAR_TO_END)

    def line(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        filled = BAR_WIDTH * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        planned = self.counts["optimal"] + self.counts["feasible"]
        parts = [f"{planned} planned"] + [f"{self.counts[k]} {k}" for k in ("infeasible", "invalid", "error")
                                          if self.counts[k]]
        elapsed = now - self.t0
        eta = ""
        if 0 < self.done < self.total:
            eta = f"  eta {_clock(elapsed / self.done * (self.total - self.done))}"
        return f"[{bar}] {self.done}/{self.total}  {', '.join(parts)}  {_clock(elapsed)}{eta}"

    def close(self) -> None:
        if self.mode == "bar" and self.done:
            self._write("\n")

    def _write(self, text: str) -> None:
        assert self.stream is not None
        self.stream.write(text)
        self.stream.flush()


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}:{s % 60:02d}"
