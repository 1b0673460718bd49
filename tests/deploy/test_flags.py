"""Every flag and configuration key the generators emit is one that solver/deploy/flags.py lists
for the pinned version of its tool (with the file that defines it): the test reads the generated
files as a user would (bash scripts, YAML documents, canary commands), finds the program each
argument list belongs to, and checks its flags."""

from __future__ import annotations

import shlex

import pytest
import yaml

from solver.deploy import flags
from solver.deploy.canary import protocol
from solver.deploy.facts import load_plan, pool_facts
from solver.deploy.render import TARGETS, files
from tests.deploy.plans import result, variant, write

PROGRAMS = [  # (argv prefix, tools whose flags it takes)
    (["vllm", "serve"], [flags.VLLM]), (["python3", "-m", "sglang.launch_server"], [flags.SGLANG]),
    (["trtllm-serve"], [flags.TRTLLM]), (["python3", "-m", "dynamo.vllm"], [flags.DYNAMO, flags.VLLM]),
    (["ray", "start"], [flags.RAY]), (["aiperf", "profile"], [flags.AIPERF]),
    (["vllm", "bench", "serve"], [flags.VLLM_BENCH]), (["guidellm", "benchmark", "run"], [flags.GUIDELLM]),
]


def tools_of(argv: list[str]) -> list[flags.Tool]:
    best = max((p for p in PROGRAMS if argv[:len(p[0])] == p[0]), key=lambda p: len(p[0]), default=None)
    assert best is not None, f"an argument list of no known program: {argv[:4]}"
    return best[1]


def unknown_flags(argv: list[str]) -> list[str]:
    allowed = set().union(*(t.flags for t in tools_of(argv)))
    return [a for a in argv if a.startswith("--") and a.split("=")[0] not in allowed]


def script_argv(text: str) -> list[list[str]]:
    """The argument lists a generated bash script runs: `ray start` lines and the exec'ed server."""
    lines = text.splitlines()
    body = lines[lines.index("args=(") + 1:lines.index(")")]
    args = shlex.split(" ".join(x.split("  #")[0] for x in body))
    program = shlex.split(lines[-1])[1:]
    program = program[:program.index("${args[@]}")]
    runs = [[x for x in program if not x.startswith("$")] + args]
    for x in lines:
        for part in x.split(";"):
            words = shlex.split(part.replace("then", "").strip()) if "ray start" in part else []
            if words:
                runs.append(words[words.index("ray"):])
    return runs


def yaml_argv(node) -> list[list[str]]:
    """The argument lists of the containers in a YAML document (command + args, bash -c unwrapped)."""
    out = []
    if isinstance(node, dict):
        if "command" in node or "modelCommand" in node:
            cmd = node.get("command") or (["vllm", "serve"] if node.get("modelCommand") == "vllmServe" else [])
            if cmd[:2] == ["/bin/bash", "-c"]:
                for part in cmd[2].split("&&"):
                    words = [w for w in shlex.split(part) if w != "exec" and w != "$@"]
                    out.append(words + (list(node.get("args", [])) if words[:2] == ["vllm", "serve"] else []))
            else:
                out.append(list(cmd) + list(node.get("args", [])))
        for v in node.values():
            out += yaml_argv(v)
    elif isinstance(node, list):
        for v in node:
            out += yaml_argv(v)
    return out


def dotted(node, prefix="") -> list[str]:
    if not isinstance(node, dict):
        return [prefix]
    return [k for key, v in node.items() for k in dotted(v, f"{prefix}.{key}" if prefix else key)]


def all_outputs(tmp_path):
    docs = {"full": result(record=True), "single-node": variant(lambda d: d["services"].pop(2)),
            "moe": variant(lambda d: (d["services"].pop(2), d["services"][0]["pools"][0].update(
                tp=2, dp=4, ep=8, devices_per_instance=8, devices=24)))}
    for name, doc in docs.items():
        plan = load_plan(str(write(tmp_path, doc, f"{name}.json")))
        facts = pool_facts(plan)
        for target in TARGETS:
            for engine in ("vllm", "sglang", "trtllm"):
                if target != "kubernetes" and engine != "vllm":
                    continue
                if name == "full" and (engine == "trtllm" or target in ("trtllm", "dynamo", "llm-d")):
                    continue  # multi-node instances: refused there (tests/deploy/test_manifests.py)
                yield from files(plan, facts, target, engine).items()


def test_every_emitted_flag_is_pinned(tmp_path):
    seen_programs = set()
    checked = 0
    for name, text in all_outputs(tmp_path):
        runs = script_argv(text) if name.endswith(".sh") else [
            r for d in yaml.safe_load_all(text) for r in yaml_argv(d)]
        for argv in runs:
            assert unknown_flags(argv) == [], f"{name}: {argv[:3]}"
            seen_programs.add(tools_of(argv)[0].name)
            checked += sum(a.startswith("--") for a in argv)
    assert seen_programs == {"vllm", "sglang", "trtllm", "dynamo", "ray"}
    assert checked > 300


def test_configuration_keys_are_pinned(tmp_path):
    for name, text in all_outputs(tmp_path):
        if name.endswith("extra-llm-api-options.yaml"):
            keys = set(dotted(next(d for d in yaml.safe_load_all(text) if d)))
            assert keys and keys <= set(flags.TRTLLM.keys), name
        elif name.endswith(".dynamo.yaml"):
            (g,) = [d for d in yaml.safe_load_all(text) if d]
            allowed = set(flags.DYNAMO.keys)
            for svc in g["spec"]["services"].values():
                for k in dotted(svc):
                    assert any(k == a or k.startswith(a + ".") for a in allowed), (name, k)
        elif name.endswith(".llm-d-values.yaml"):
            (v,) = [d for d in yaml.safe_load_all(text) if d]
            allowed = set(flags.LLMD.keys)
            for k in dotted(v):
                parts = k.split(".")
                rest = ".".join(parts[1:]) if parts[0] in ("decode", "prefill") else k
                assert any(rest == a or rest.startswith(a + ".") for a in allowed) or parts[0] in allowed, (name, k)


@pytest.mark.parametrize("tool", ["aiperf", "vllm", "guidellm"])
def test_canary_flags_are_pinned(tmp_path, tool):
    c = protocol(load_plan(str(write(tmp_path, result(record=True)))), tool)
    assert len(c.pools) == 4
    for p in c.pools:
        assert unknown_flags(p.command) == []


def test_the_checker_finds_an_unknown_flag():
    assert unknown_flags(["vllm", "serve", "m", "--tensor-parallel-size", "2", "--tp-size", "2"]) == ["--tp-size"]
    assert unknown_flags(["ray", "start", "--address=x:1", "--blok"]) == ["--blok"]


def test_every_tool_names_its_source():
    for t in flags.ALL.values():
        assert t.repository.count("/") == 1 and t.file and t.commit, t.name
        assert all(f.startswith("--") for f in t.flags), t.name
        assert t.where(next(iter(t.flags or t.keys))).endswith((".py", ".md", ".yaml", "/")), t.name
