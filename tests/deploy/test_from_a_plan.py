"""From a real plan to its deployment: a service whose KV cache is stored in another precision
than its weights gets `kv_precision` on its pools (absent otherwise), and `fleetplan deploy`
sets the engine's KV cache dtype from it; the plan's own commands match its pools."""

from __future__ import annotations

import json

import yaml

from tests.support.cli import cli
from tests.support.questions_problem import small_problem


def _plan(tmp_path, text: str, name: str):
    prob = tmp_path / f"{name}.yaml"
    prob.write_text(text)
    out = tmp_path / f"{name}.json"
    r = cli("plan", str(prob), "--format", "json", "--no-record", "--no-timings", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out, json.loads(out.read_text())


def test_kv_precision_reaches_the_engine(tmp_path):
    text = small_problem(20).replace("    precision: fp8\n", "    precision: fp8\n    kv_precision: bf16\n")
    path, doc = _plan(tmp_path, text, "kv")
    pools = [p for s in doc["services"] for p in s["pools"]]
    assert pools and all(p["precision"] == "fp8" and p["kv_precision"] == "bf16" for p in pools)
    out = tmp_path / "k8s"
    r = cli("deploy", str(path), "--target", "kubernetes", "--out", str(out))
    assert r.returncode == 0, r.stderr
    for f in sorted(out.iterdir()):
        (dep,) = [d for d in yaml.safe_load_all(f.read_text()) if d]
        args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--kv-cache-dtype") + 1] == "auto"  # bf16 KV: the model's dtype
        assert args[args.index("--quantization") + 1] == "fp8"
        lines = f.read_text().splitlines()
        value = lines[lines.index('            - "--kv-cache-dtype"') + 1]
        assert value.startswith('            - "auto"  # services[0].pools[') and value.endswith("].kv_precision")
    (s,) = doc["services"]
    assert sum(dep_replicas(out)) == sum(p["instances"] for p in s["pools"])


def dep_replicas(out):
    return [d["spec"]["replicas"] for f in sorted(out.iterdir()) for d in yaml.safe_load_all(f.read_text()) if d]


def test_no_kv_precision_when_it_is_the_weights(tmp_path):
    _, doc = _plan(tmp_path, small_problem(20), "plain")
    assert all("kv_precision" not in p for s in doc["services"] for p in s["pools"])
