"""Fixtures the test folders share. Plain helpers (the repository root, the `fleetplan`
subprocess runner, hypothesis strategies, small problem files) are modules of tests/support/,
imported by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.batch_problems import make_tree


@pytest.fixture(scope="module")
def batch_tree(tmp_path_factory) -> Path:
    """A folder of problem files for the batch tests, made once per test module
    (tests/support/batch_problems.py says what is in it)."""
    return make_tree(tmp_path_factory.mktemp("batch"))
