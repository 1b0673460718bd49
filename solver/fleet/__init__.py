"""The CP-SAT fleet model.

Importing the package loads OR-Tools' CP-SAT Python layer once, without pandas: cp_model
imports pandas at module level only to name `pd.Index` and `pd.Series` in type hints and in
its pandas helpers (ortools/sat/python/cp_model.py, v9.14-9.15), which fleetplan never calls,
and pandas with pyarrow is 0.8 s of CPU, a quarter of a whole `fleetplan plan`. While cp_model
loads, `pandas` names a stand-in module with those two classes; cp_model keeps it, and a later
`import pandas` (anywhere else) gets the real one. If the stand-in does not suffice (another
OR-Tools version), cp_model is loaded again the ordinary way.
"""

from __future__ import annotations

import importlib
import sys
import types

_CP_MODEL = "ortools.sat.python.cp_model"


def _stand_in() -> types.ModuleType:
    pd = types.ModuleType("pandas", "stand-in for pandas while OR-Tools' cp_model loads (solver/fleet)")

    class Index:  # nothing is ever an instance: fleetplan passes cp_model no pandas objects
        pass

    class Series:
        pass

    pd.Index, pd.Series = Index, Series
    return pd


def _load_cp_model_without_pandas() -> None:
    if _CP_MODEL in sys.modules or "pandas" in sys.modules:
        return
    sys.modules["pandas"] = _stand_in()
    try:
        importlib.import_module(_CP_MODEL)
    except Exception:  # noqa: BLE001 - the stand-in fell short: the ordinary import below
        sys.modules.pop(_CP_MODEL, None)
    finally:
        sys.modules.pop("pandas", None)
    importlib.import_module(_CP_MODEL)


_load_cp_model_without_pandas()
