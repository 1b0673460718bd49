"""Fixtures the test folders share. Plain helpers (the repository root, the `fleetplan`
subprocess runner, hypothesis strategies, small problem files) are modules of tests/support/,
imported by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.batch_problems import make_tree

# `make test` runs the suite on every core with pytest-xdist's `--dist loadfile`: each test module
# runs on one worker, so that its module-scoped fixtures are made once. The modules in
# SHARED_GROUPS also share a worker, since they check the same `fleetplan plan` runs
# (tests/support/cli.py's `cli_shared`, one run per process). (xdist's own `--dist loadgroup`
# marks do not take with pytest >= 9.2, which no longer reads the node id xdist rewrites.)
SHARED_GROUPS = {
    "tests/plan/test_plan_cli.py": "shipped-plans",
    "tests/schema/test_schema_publish.py": "shipped-plans",
    "tests/decision/test_decision.py": "shipped-plans",
}


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook; without xdist it is never called
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "loadfile":
        return None  # xdist's own scheduler for the other --dist modes
    from xdist.scheduler import LoadFileScheduling

    class ModuleGroups(LoadFileScheduling):
        """--dist loadfile, with the modules of SHARED_GROUPS as one unit."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return SHARED_GROUPS.get(module, module)

    return ModuleGroups(config, log)


@pytest.fixture(scope="module")
def batch_tree(tmp_path_factory) -> Path:
    """A folder of problem files for the batch tests, made once per test module
    (tests/support/batch_problems.py says what is in it)."""
    return make_tree(tmp_path_factory.mktemp("batch"))
