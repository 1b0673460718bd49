"""Where the problems of a batch are planned: in this process, on a local process pool
(`--jobs N`), or on a Ray cluster (`--ray ADDRESS|auto|local`). Each runs `work.plan_one` on
every task and calls `done(index, Planned)` in the driver as each finishes (in any order)."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import re
import socket
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

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


def run_pool(tasks: Sequence[Task], jobs: int, flow: Flow, done: Done) -> None:
    """At most `jobs` problems at a time, each in a worker process with one CP-SAT worker."""
    if not tasks:
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=_pool_context()) as pool:
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
def ray_session(address: str) -> Iterator[None]:
    """Connected to the cluster (or a local one started for `local`) inside the block; a
    connection this opened is closed after it, one the caller (a test, a notebook) had opened
    is used and left open."""
    ray = import_ray()
    check_reachable(address)
    if ray.is_initialized():
        yield
        return
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
    try:
        if address == "local":
            ray.init(include_dashboard=False, **quiet)
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
