"""Where the problems of a batch are planned: in this process, on a local process pool
(`--jobs N`), or on a Ray cluster (`--ray ADDRESS|auto|local`). Each runs `work.plan_one` on
every task and calls `done(index, Planned)` in the driver as each finishes (in any order)."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing as mp
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TextIO

from solver.batch.work import Flow, Planned, plan_one
from solver.errors import InputError
from solver.problem.load import ResolvedProblem

Task = tuple[int, ResolvedProblem]
Done = Callable[[int, Planned], None]

RAY_HINT = "pip install 'fleetplan[ray]'"


def run_serial(tasks: Sequence[Task], flow: Flow, done: Done) -> None:
    for index, rp in tasks:
        done(index, plan_one(rp, flow))


def _pool_context():
    """forkserver where the platform has it: workers fork from a server that has imported the
    planning flow once (fast starts, and no fork of the driver's threads); spawn elsewhere."""
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["solver.batch.work"])
        return ctx
    return mp.get_context("spawn")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def capped_jobs(jobs: int, force: bool = False, notes: TextIO | None = None, what: str | None = None) -> int:
    """`jobs`, at most the usable CPUs unless `force` (--force-jobs); a cap is said on `notes`
    (`what`: the flag it names, `--jobs N` by default)."""
    cpus = usable_cpus()
    if force or jobs <= cpus:
        return jobs
    if notes is not None:
        print(f"{what or f'--jobs {jobs}'}: capped at the {cpus} CPUs this process may use "
              f"(--force-jobs runs {jobs})", file=notes)
    return cpus


def ray_default_cpus() -> int:
    """The CPUs `ray.init()` would give a local instance: the machine's (or its cgroup quota),
    not the process's affinity mask."""
    try:
        from ray._private.utils import get_num_cpus

        return int(get_num_cpus())
    except Exception:  # noqa: BLE001 - a private helper of Ray's: any failure falls back
        return os.cpu_count() or 1


def local_ray_cpus(force: bool = False, notes: TextIO | None = None) -> int:
    """The CPUs (so the tasks at a time) of a `--ray local` instance: Ray's own count, capped at
    the usable CPUs as `--jobs` is unless `force`."""
    n = ray_default_cpus()
    return capped_jobs(n, force, notes, f"--ray local ({n} CPUs)")


WATCH_S = 0.5  # how often a worker checks that the driver still runs
PR_SET_PDEATHSIG = 1


def _die_with(driver: int, parent: int) -> None:
    """In a pool worker: exit as soon as the driver (or the worker's own parent, the forkserver)
    is gone, so that a SIGKILLed driver leaves no worker behind. Linux: the kernel kills the
    worker when its parent dies (PR_SET_PDEATHSIG; the forkserver exits when the driver does);
    everywhere: a daemon thread polls both."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ulong = ctypes.c_ulong
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, ulong(signal.SIGKILL), ulong(0), ulong(0),
                                                    ulong(0))
    if os.getppid() != parent or not _alive(driver):  # gone before the above took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent and _alive(driver):
            time.sleep(WATCH_S)
        os._exit(1)

    threading.Thread(target=watch, name="fleetplan-driver-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True


def _watch_driver(driver: int) -> None:
    _die_with(driver, os.getppid())


def run_pool(tasks: Sequence[Task], jobs: int, flow: Flow, done: Done, force: bool = False,
             notes: TextIO | None = None) -> None:
    """At most `jobs` problems at a time (capped at the usable CPUs unless `force`), each in a
    worker process with one CP-SAT worker; the workers exit when the driver dies."""
    if not tasks:
        return
    workers = min(capped_jobs(jobs, force, notes), len(tasks))
    with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context(),
                             initializer=_watch_driver, initargs=(os.getpid(),)) as pool:
        futures = {pool.submit(plan_one, rp, flow): index for index, rp in tasks}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                try:
                    out = f.result()
                except BrokenProcessPool as exc:
                    out = Planned.failed(f"internal error: a worker process died ({exc}); "
                                         "out of memory?")
                except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
                    out = Planned.failed(f"internal error: {type(exc).__name__}: {exc}")
                done(futures[f], out)


def import_ray():
    try:
        import ray
    except ImportError:
        raise InputError(f"--ray needs Ray, which is not installed ({RAY_HINT})") from None
    return ray


_HOST_PORT = re.compile(r"(?:ray://)?\[?([^\]/]+?)\]?:(\d+)")


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A HOST:PORT address must answer before Ray is asked to connect (Ray itself retries an
    unreachable address for a minute or more)."""
    m = _HOST_PORT.fullmatch(address)
    if m is None:
        return
    host, port = m.group(1), int(m.group(2))
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        raise InputError(f"--ray {address}: cannot connect to a Ray cluster: nothing answers at "
                         f"{host}:{port} ({exc.strerror or exc})") from None


@contextlib.contextmanager
def ray_session(address: str, force: bool = False, notes: TextIO | None = None) -> Iterator[None]:
    """Connected to the cluster (or a local one started for `local`, with `local_ray_cpus`)
    inside the block; a connection this opened is closed after it, one the caller (a test, a
    notebook) had opened is used and left open. Ray's runtime owns its workers' lifetime: a
    local instance's processes share the driver's fate, a cluster ends a dead driver's job."""
    ray = import_ray()
    check_reachable(address)
    if ray.is_initialized():
        yield
        return
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
    try:
        if address == "local":
            ray.init(include_dashboard=False, num_cpus=local_ray_cpus(force, notes), **quiet)
        else:
            ray.init(address=address, **quiet)
    except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, ValueError, RuntimeError
        raise InputError(f"--ray {address}: cannot connect to a Ray cluster: "
                         f"{type(exc).__name__}: {exc}") from None
    try:
        yield
    finally:
        ray.shutdown()


def run_ray(tasks: Sequence[Task], flow: Flow, done: Done) -> None:
    """One Ray task (one CPU) per problem, inside `ray_session`. Every node needs the same
    fleetplan version installed (the driver checks each result's version); problems travel
    resolved, so the problem files and the cards they name need not exist on the nodes."""
    ray = import_ray()
    remote = ray.remote(num_cpus=1, max_retries=0)(plan_one)
    flow_ref = ray.put(flow)
    refs = {remote.remote(rp, flow_ref): index for index, rp in tasks}
    pending = list(refs)
    while pending:
        finished, pending = ray.wait(pending, num_returns=1)
        for r in finished:
            try:
                out = ray.get(r)
            except Exception as exc:  # noqa: BLE001 - a task or a node that failed
                out = Planned.failed(f"internal error: the Ray task failed: "
                                     f"{type(exc).__name__}: {exc}")
            done(refs[r], out)
