"""Independent parts of the decision record, run side by side.

The validity intervals (one per demand, price and rate) are independent searches: each probe is
answered by CP-SAT on one worker under deterministic time (solver/decision/probe.py), so its
answer does not depend on which thread runs it or what runs beside it, and CP-SAT releases the
GIL while it solves (nearly all of a probe's time: benchmarks/plan_speed.md). `run_all` runs
such tasks on WORKERS threads and returns their results in the order given, so the record is
the same as when they run one after the other (tests/decision/test_record_parallel.py).
`Pool` does the same for parts that start at different times (the homogeneous comparison,
started before the plan's replay: solver/decision/record.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

# threads for the record's independent searches: the development and CI machines have 2 cores
# (benchmarks/plan_speed.md); more threads than cores only share them
WORKERS = max(1, min(2, os.cpu_count() or 1))


def run_all(tasks: Sequence[Callable[[], T]], workers: int | None = None) -> list[T]:
    """Each task's result, in the order of `tasks`; one after the other when workers <= 1."""
    n = WORKERS if workers is None else workers
    if n <= 1 or len(tasks) <= 1:
        return [t() for t in tasks]
    with ThreadPoolExecutor(max_workers=min(n, len(tasks)), thread_name_prefix="record") as ex:
        return list(ex.map(lambda t: t(), tasks))


class Pool:
    """WORKERS threads (or `workers`) for tasks started in the order submitted; `submit` gives
    a getter of the task's result. On one worker a task runs when its result is first asked
    for (never, when it is not), one after the other."""

    def __init__(self, workers: int | None = None):
        n = WORKERS if workers is None else workers
        self._ex = ThreadPoolExecutor(max_workers=n, thread_name_prefix="record") if n > 1 else None

    def submit(self, task: Callable[[], T]) -> Callable[[], T]:
        if self._ex is not None:
            return self._ex.submit(task).result
        got: list[T] = []

        def result() -> T:
            if not got:
                got.append(task())
            return got[0]

        return result

    def start(self, tasks: Sequence[Callable[[], T]], order: Sequence[int] | None = None) -> list[Callable[[], T]]:
        """Submit `tasks` in `order` (indices; None: as given): their getters, in the order of `tasks`."""
        getters: list = [None] * len(tasks)
        for k in (range(len(tasks)) if order is None else order):
            getters[k] = self.submit(tasks[k])
        return getters

    def run(self, tasks: Sequence[Callable[[], T]], order: Sequence[int] | None = None) -> list[T]:
        """Each task's result, in the order of `tasks` (started in `order`)."""
        return [g() for g in self.start(tasks, order)]

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        if self._ex is not None:
            self._ex.shutdown(wait=True)
