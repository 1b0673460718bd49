"""The pools of a service at one site in the formats of the two disaggregated serving stacks:
a Dynamo DynamoGraphDeployment (a frontend and one vLLM worker service per pool, prefill and
decode workers joined by Dynamo's NIXL KV transfer) and the values of llm-d's modelservice Helm
chart (one decode and one prefill section, the routing sidecar's nixlv2 connector).

Both run vLLM (the engines of the pinned examples, solver/deploy/flags.py), on one node per
instance; a pool whose instances span nodes is refused with a pointer to `--target kubernetes`.
"""

from __future__ import annotations

from typing import Any

from solver.deploy.engines import Arg, vllm_args
from solver.deploy.facts import Plan, PoolFacts, dns_label
from solver.deploy.flags import DYNAMO, LLMD, VLLM
from solver.deploy.kube import image_of, node_selector, resources
from solver.deploy.text import C, arg_items
from solver.errors import InputError

# Dynamo's worker sets the KV transfer up from its own --connector, and its own port.
_DYNAMO_DROPS = {"--kv-transfer-config", "--port"}
_ROLE_NAME = {"prefill": "VllmPrefillWorker", "decode": "VllmDecodeWorker", "colocated": "VllmWorker"}


def groups(facts: list[PoolFacts]) -> list[tuple[str, str | None, list[PoolFacts]]]:
    """(service, site, pools) in document order: one deployment of a disaggregated stack each."""
    out: dict[tuple[int, str | None], list[PoolFacts]] = {}
    for f in facts:
        out.setdefault((f.si, f.pool.site), []).append(f)
    return [(fs[0].service.name, site, fs) for (_, site), fs in out.items()]


def group_name(fs: list[PoolFacts]) -> str:
    site = fs[0].pool.site
    return dns_label(f"{fs[0].service.name}-{site}" if site else fs[0].service.name)[:40].strip("-") or "x"


def _one_node(f: PoolFacts, target: str) -> None:
    if f.spans_nodes:
        raise InputError(f"{f.where}: an instance of {f.pool.devices_per_instance} devices spans "
                         f"{f.nodes_per_instance} {f.pool.hardware} nodes; --target {target} writes "
                         "single-node workers only: use --target kubernetes (a LeaderWorkerSet)")


def _worker_args(f: PoolFacts, drop: set[str]) -> list[Arg]:
    return [a for a in vllm_args(f) if a.flag not in drop]


def _dynamo_worker(f: PoolFacts, image: str | None) -> dict[str, Any]:
    args: list[Any] = ["--model", C(f.model_id, f.model_id_from)]
    if f.pool.role != "colocated":
        args += ["--disaggregation-mode", C(f.pool.role, f.at("role")),
                 "--connector", C("nixl", f"{f.at('role')} = {f.pool.role}: Dynamo's NIXL KV connector")]
    args += arg_items(_worker_args(f, _DYNAMO_DROPS))
    out: dict[str, Any] = {"envFromSecret": "hf-token-secret", "componentType": "worker"}
    if f.pool.role != "colocated":
        out["subComponentType"] = C(f.pool.role, f.at("role"))
    out["replicas"] = C(f.pool.instances, f.at("instances"))
    out["resources"] = {"limits": {"gpu": C(str(f.pool.devices_per_instance), f.at("devices_per_instance"))}}
    out["extraPodSpec"] = {
        "nodeSelector": node_selector(f),
        "mainContainer": {"image": image_of(f, DYNAMO, image),
                          "workingDir": "/workspace/examples/backends/vllm",
                          "command": ["python3", "-m", "dynamo.vllm"], "args": args}}
    return out


def dynamo_graph(plan: Plan, fs: list[PoolFacts], image: str | None) -> dict[str, Any]:
    """A DynamoGraphDeployment of one service at one site."""
    services: dict[str, Any] = {"Frontend": {
        "componentType": "frontend", "replicas": 1,
        "extraPodSpec": {"mainContainer": {"image": C(image or DYNAMO.image, f"dynamo pinned at {DYNAMO.source()}")}}}}
    seen: dict[str, int] = {}
    for f in fs:
        _one_node(f, "dynamo")
        base = _ROLE_NAME[f.pool.role]
        seen[base] = seen.get(base, 0) + 1
        services[base if seen[base] == 1 else f"{base}{seen[base]}"] = C(_dynamo_worker(f, image), f.where)
    return {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
            "metadata": {"name": group_name(fs),
                         "annotations": {"fleetplan.io/input-sha256": plan.input_sha256 or "not recorded",
                                         "fleetplan.io/result-sha256": plan.result_sha256}},
            "spec": {"services": services}}


def _llmd_section(f: PoolFacts, image: str | None) -> dict[str, Any]:
    res = resources(f)
    args = arg_items(_worker_args(f, {"--port"}))
    return {
        "parallelism": {"tensor": C(f.pool.tp, f.at("tp")), "data": C(f.pool.dp, f.at("dp"))},
        "create": True, "replicas": C(f.pool.instances, f.at("instances")),
        "nodeSelector": node_selector(f),
        "containers": [{
            "name": "vllm", "image": image_of(f, LLMD, image),
            "modelCommand": "vllmServe", "args": args,
            "env": [{"name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
                     "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "resources": res,
        }],
    }


def llmd_values(plan: Plan, fs: list[PoolFacts], image: str | None) -> dict[str, Any]:
    """The llm-d modelservice values of one service at one site (one decode and one prefill pool,
    or one colocated pool in the decode section)."""
    by_role: dict[str, list[PoolFacts]] = {}
    for f in fs:
        _one_node(f, "llm-d")
        by_role.setdefault(f.pool.role, []).append(f)
    shape = {r: len(v) for r, v in by_role.items()}
    if shape not in ({"colocated": 1}, {"prefill": 1, "decode": 1}):
        where = f" at site {fs[0].pool.site}" if fs[0].pool.site else ""
        raise InputError(f"service '{fs[0].service.name}'{where}: {', '.join(f'{n} {r}' for r, n in shape.items())} "
                         "pools; llm-d's modelservice chart holds one decode and one prefill pool (or one "
                         "colocated pool): use --target dynamo or kubernetes for this plan")
    f0 = fs[0]
    out: dict[str, Any] = {
        "multinode": False,
        "modelArtifacts": {"uri": C(f"hf://{f0.model_id}", f0.model_id_from), "name": f0.model_id,
                           "size": "100Gi", "authSecretName": "llm-d-hf-token"},
        "routing": {"servicePort": 8000, "proxy": {"connector": "nixlv2", "secure": False}},
    }
    if "colocated" in by_role:
        out["decode"] = C(_llmd_section(by_role["colocated"][0], image), by_role["colocated"][0].where)
        out["prefill"] = {"create": False}
    else:
        out["decode"] = C(_llmd_section(by_role["decode"][0], image), by_role["decode"][0].where)
        out["prefill"] = C(_llmd_section(by_role["prefill"][0], image), by_role["prefill"][0].where)
    return out


ENGINE = VLLM  # the engine both stacks run here
