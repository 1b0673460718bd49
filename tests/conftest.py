"""Fixtures the test folders share. Plain helpers (the repository root, the `fleetplan`
subprocess runner, hypothesis strategies, small problem files) are modules of tests/support/,
imported by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.batch_problems import make_tree

# `make test` runs the suite on every core with pytest-xdist's `--dist loadgroup`: each test goes
# to the worker of its xdist_group. Every test module is its own group, so that its module-scoped
# fixtures are made once; the modules in SHARED_GROUPS share a group, since they check the same
# `fleetplan plan` runs (tests/support/cli.py's `cli_shared`, one run per process).
SHARED_GROUPS = {
    "tests/plan/test_plan_cli.py": "shipped-plans",
    "tests/schema/test_schema_publish.py": "shipped-plans",
    "tests/decision/test_decision.py": "shipped-plans",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            module = item.nodeid.split("::", 1)[0]
            item.add_marker(pytest.mark.xdist_group(SHARED_GROUPS.get(module, module)))


@pytest.fixture(scope="module")
def batch_tree(tmp_path_factory) -> Path:
    """A folder of problem files for the batch tests, made once per test module
    (tests/support/batch_problems.py says what is in it)."""
    return make_tree(tmp_path_factory.mktemp("batch"))
