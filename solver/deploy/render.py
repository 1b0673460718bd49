"""`fleetplan deploy`: the files of one target for every pool of a plan, and writing them.

Targets: `vllm`, `sglang`, `trtllm` (one launch script per pool; TensorRT-LLM's LLM API options
next to it), `kubernetes` (one manifest per pool, for the engine `--engine` names), `dynamo` and
`llm-d` (one file per service and site). Every file starts with the plan's identity (problem,
input hash, result hash) and the pinned engine version, and comments each value with the field
of the result document it comes from.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Sequence

from solver import files as outfiles
from solver.deploy import disagg, kube
from solver.deploy.engines import Arg, sglang_args, trtllm_args, trtllm_checkpoint_note, vllm_args
from solver.deploy.facts import Plan, PoolFacts
from solver.deploy.flags import DYNAMO, ENGINES, LLMD, TRTLLM, Tool
from solver.deploy.text import one_line, script, yaml_text
from solver.errors import InputError

TARGETS = ("vllm", "sglang", "trtllm", "dynamo", "llm-d", "kubernetes")
MAX_FILES = 10_000


def _pool_line(f: PoolFacts) -> str:
    p = f.pool
    site = f", site {p.site}" if p.site else ""
    n = f"{p.instances} instance{'s' if p.instances != 1 else ''}"
    return (f"pool {f.where}: service '{f.service.name}', {p.role} on {p.hardware}{site}, tp{p.tp} pp{p.pp} "
            f"ep{p.ep} dp{p.dp}, batch {p.batch}, {n} of {p.devices_per_instance} devices")


def _head(plan: Plan, tool: Tool, lines: list[str]) -> list[str]:
    return [*plan.header(), *lines, f"{tool.name} pinned at {tool.source()}: flags as defined in {tool.file}",
            "each value's comment names the field of the result document it comes from"]


def _multinode_setup(f: PoolFacts, engine: str) -> list[str]:
    if not f.spans_nodes:
        return []
    n = f.nodes_per_instance
    need = [f"# one instance spans {n} nodes: run this on each of them with NODE_RANK (0..{n - 1}) and",
            "# LEADER_ADDRESS (the address of node 0) set",
            ': "${NODE_RANK:?set NODE_RANK}" "${LEADER_ADDRESS:?set LEADER_ADDRESS}"']
    if engine == "vllm":
        need += ['if [ "$NODE_RANK" != 0 ]; then exec ray start --address="${LEADER_ADDRESS}:6379" --block; fi',
                 "ray start --head --port=6379"]
    return need


def _engine_script(plan: Plan, f: PoolFacts, engine: str) -> dict[str, str]:
    tool = ENGINES[engine]
    # an assignment: no word splitting; the default is single-quoted, so nothing in it expands
    model = [f"MODEL=${{MODEL:-{shlex.quote(f.model_id)}}}  # {one_line(f.model_id_from)}"]
    head = _head(plan, tool, [_pool_line(f), f"run one per instance: {f.pool.instances} ({f.at('instances')})"])
    if engine == "vllm":
        text = script(head, model + _multinode_setup(f, engine), tool.program, vllm_args(f), '"$MODEL"')
        return {f"{f.name}.sh": text}
    if engine == "sglang":
        args = [Arg("--model-path", "${MODEL}", f.model_id_from), *sglang_args(f)]
        return {f"{f.name}.sh": script(head, model + _multinode_setup(f, engine), tool.program, args)}
    if f.spans_nodes:
        kube.engine_call(f, "trtllm")  # raises: no multi-node TensorRT-LLM launcher
    options = f"{f.name}.extra-llm-api-options.yaml"
    note = trtllm_checkpoint_note(f)
    setup = model + ([f"# {note}"] if note else []) + ['HERE="$(cd "$(dirname "$0")" && pwd)"']
    args = trtllm_args(f, "${HERE}/" + options)
    return {f"{f.name}.sh": script(head, setup, tool.program, args, '"$MODEL"'),
            options: yaml_text(_head(plan, TRTLLM, [_pool_line(f)]), kube.options_yaml(f))}


def _manifest(plan: Plan, f: PoolFacts, engine: str, image: str | None) -> dict[str, str]:
    tool = ENGINES[engine]
    options = None
    if engine == "trtllm" and not f.spans_nodes:
        options = yaml_text(_head(plan, TRTLLM, [_pool_line(f)]), kube.options_yaml(f))
    docs = kube.pool_manifests(plan, f, tool, image, options)
    kind = docs[-1]["kind"]
    return {f"{f.name}.yaml": yaml_text(_head(plan, tool, [_pool_line(f), f"a {kind} of the pool's instances"]),
                                        *docs)}


def files(plan: Plan, facts: list[PoolFacts], target: str, engine: str, image: str | None = None) -> dict[str, str]:
    """File name -> text, for every pool of the plan (in document order)."""
    if target not in TARGETS:
        raise InputError(f"--target: unknown target '{target}' (one of {', '.join(TARGETS)})")
    if plan.doc.status == "infeasible" or not facts:
        raise InputError(f"{plan.path}: the plan is {plan.doc.status} and has no pools to deploy")
    out: dict[str, str] = {}
    if target in ENGINES:
        for f in facts:
            out.update(_engine_script(plan, f, target))
    elif target == "kubernetes":
        for f in facts:
            out.update(_manifest(plan, f, engine, image))
    else:
        tool = DYNAMO if target == "dynamo" else LLMD
        for service, site, fs in disagg.groups(facts):
            doc = (disagg.dynamo_graph(plan, fs, image) if target == "dynamo"
                   else disagg.llmd_values(plan, fs, image))
            where = f", site {site}" if site else ""
            head = _head(plan, tool, [f"service '{service}'{where}: pools " + ", ".join(f.where for f in fs),
                                      f"vLLM workers: {ENGINES['vllm'].source()}"])
            suffix = "dynamo.yaml" if target == "dynamo" else "llm-d-values.yaml"
            name = f"{disagg.group_name(fs)}.{suffix}"
            out[name if name not in out else f"{disagg.group_name(fs)}-{fs[0].si}.{suffix}"] = yaml_text(head, doc)
    return out


def write(out_dir: str, texts: dict[str, str], inputs: Sequence[str] = ()) -> list[Path]:
    """Write the files into `out_dir` (created) through `solver.files` (atomic, regular files
    only, never one of `inputs`); an unwritable place is an InputError."""
    if len(texts) > MAX_FILES:
        raise InputError(f"--out {out_dir}: {len(texts):,} files; at most {MAX_FILES:,}")
    root = outfiles.folder(out_dir)
    written = []
    for name, text in texts.items():
        path = root / name
        outfiles.write_text(path, text, "--out", inputs, 0o777 if name.endswith(".sh") else 0o666)
        written.append(path)
    return written
