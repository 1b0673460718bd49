"""Independent CP-SAT solves side by side in worker processes (issue 17 point 5).

Four period solves took 15.6 s wall on two threads and 16.9 s one after another
(benchmarks/multiperiod.md): in threads they did not overlap, where two copies of a decision
record's fleet solve did (13.5 s against 23.5 s, benchmarks/plan_speed.md), so the interpreter
lock's share depends on the solve and the period solves run in processes. `Pool.map` returns the results in the order of its tasks, and
each task is one sequential CP-SAT worker under a deterministic limit, so the answers do not
depend on which process ran what, nor when. One worker (or few tasks) runs them in this process.

Processes are started by spawning (a fresh interpreter that imports the task's module, not a
fork of a process that may hold threads): a script that plans with periods must guard its
entry point with `if __name__ == "__main__":` (fleetplan's CLI and the benchmarks do).
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

PROCESSES = 2  # the development machine's cores (benchmarks/multiperiod.md: 2 cores)
MIN_TASKS = 2  # a single task runs in this process (nothing to run beside it)


class Pool:
    """`map(fn, args)`: fn(*a) for each a, in order; fn must be a module-level function."""

    def __init__(self, workers: int = 1):
        self.workers = workers
        self._ex: ProcessPoolExecutor | None = None

    def map(self, fn, args: list[tuple]) -> list:
        if self.workers <= 1 or len(args) < MIN_TASKS:
            return [fn(*a) for a in args]
        try:
            if self._ex is None:
                self._ex = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
            futures = [self._ex.submit(fn, *a) for a in args]
            return [f.result() for f in futures]
        except (OSError, BrokenProcessPool):
            # no processes to be had (a sandbox, a killed worker): the same solves here, the
            # same answers (each solve is deterministic)
            self.close()
            self.workers = 1
            return [fn(*a) for a in args]

    def close(self) -> None:
        if self._ex is not None:
            ex, self._ex = self._ex, None
            ex.shutdown()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
