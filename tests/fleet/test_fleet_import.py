"""Loading the fleet package: OR-Tools' cp_model without pandas (solver/fleet/__init__.py), and
the model still solves; a later `import pandas` gets the real one."""

from __future__ import annotations

import subprocess
import sys

from tests.support.cli import ROOT

SCRIPT = """
import sys
import solver.fleet.solve
from ortools.sat.python import cp_model
assert "pandas" not in sys.modules, "cp_model pulled pandas in"
m = cp_model.CpModel()
x = m.new_int_var(0, 10, "x")
m.add(3 * x >= 7)
m.minimize(x)
s = cp_model.CpSolver()
assert s.solve(m) == cp_model.OPTIMAL and s.value(x) == 3
import pandas
assert hasattr(pandas, "DataFrame"), "the stand-in leaked"
print("ok")
"""


def test_cp_model_loads_without_pandas_and_solves():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
