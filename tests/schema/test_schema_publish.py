"""Published JSON Schemas: equal to the models, and every shipped document validates.

Every shipped problem (and every card) must validate against the input schemas, and every
shipped problem's plan (JSON, as `fleetplan plan --format json` writes it) against the result
schema; `fleetplan schema` prints the same text as the files in schemas/.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache

import jsonschema
import pytest
import yaml

from solver.schema.publish import DOCUMENTS, json_schema, render
from tests.support.cli import ROOT, plan_json

PROBLEMS = sorted((ROOT / "problems").glob("*.yaml"))


@cache
def validator(name: str):
    schema = json_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_published_schema_is_current(name):
    path = ROOT / "schemas" / f"{name}.schema.json"
    assert path.read_text() == render(name), f"run `fleetplan schema --out schemas` ({name})"


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_shipped_problem_and_its_result_validate(path):
    validator("problem").validate(yaml.safe_load(path.read_text()))
    r = plan_json(path)  # the document with its decision record; one run, shared with test_plan_cli
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # the record's part of the schema is checked too (demand over time has no record)
    assert (doc["decision"] is not None) != ("periods" in doc)
    validator("result").validate(doc)


@pytest.mark.parametrize("kind", ["models", "hardware"])
def test_shipped_cards_validate(kind):
    v = validator("model-card" if kind == "models" else "hardware-card")
    for path in sorted((ROOT / kind).glob("*.yaml")):
        v.validate(yaml.safe_load(path.read_text()))


def test_schema_rejects_what_the_models_reject():
    v = validator("problem")
    bad = yaml.safe_load(PROBLEMS[0].read_text())
    bad["surprise"] = 1  # unknown keys are errors in the schema too
    assert list(v.iter_errors(bad))


def test_cli_prints_one_schema():
    r = subprocess.run([sys.executable, "-m", "solver", "schema", "result"], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == render("result")
