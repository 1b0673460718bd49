"""Kubernetes manifests of one pool: a Deployment of `instances` replicas when an instance fits
on one node, a LeaderWorkerSet (one leader and size - 1 workers per instance) when it spans
nodes; device requests by the card's vendor, node selectors by hardware type and site.

Nodes are selected by two labels the operator puts on them: `fleetplan.io/hardware` (the
hardware card's name) and, for plans with sites, `fleetplan.io/site`.
"""

from __future__ import annotations

from typing import Any

from solver.deploy.engines import sglang_args, trtllm_args, trtllm_options, vllm_args
from solver.deploy.facts import Plan, PoolFacts, dns_label
from solver.deploy.flags import GPU_RESOURCE, LWS_API_VERSION, Tool
from solver.deploy.text import C, arg_items
from solver.errors import InputError

HARDWARE_LABEL = "fleetplan.io/hardware"
SITE_LABEL = "fleetplan.io/site"
OPTIONS_DIR = "/etc/fleetplan"
RAY_PORT = 6379  # Ray's default GCS port (ray start --head)


def labels(f: PoolFacts) -> dict[str, Any]:
    return {"app.kubernetes.io/name": f.name, "app.kubernetes.io/part-of": "fleetplan",
            "fleetplan.io/service": dns_label(f.service.name)[:63].strip("-") or "x",
            "fleetplan.io/role": C(f.pool.role, f.at("role"))}


def metadata(plan: Plan, f: PoolFacts, name: str | None = None) -> dict[str, Any]:
    return {"name": name or f.name, "labels": labels(f),
            "annotations": {"fleetplan.io/input-sha256": plan.input_sha256 or "not recorded",
                            "fleetplan.io/result-sha256": plan.result_sha256,
                            "fleetplan.io/pool": f.where}}


def node_selector(f: PoolFacts) -> dict[str, Any]:
    out: dict[str, Any] = {HARDWARE_LABEL: C(f.pool.hardware, f.at("hardware"))}
    if f.pool.site is not None:
        out[SITE_LABEL] = C(f.pool.site, f.at("site"))
    return out


def devices_per_pod(f: PoolFacts) -> int:
    n, nodes = f.pool.devices_per_instance, f.nodes_per_instance
    if n % nodes:
        raise InputError(f"{f.where}: {n} devices per instance do not split evenly over {nodes} nodes "
                         f"of {f.devices_per_node} {f.pool.hardware} devices")
    return n // nodes


def resources(f: PoolFacts) -> dict[str, Any]:
    name = GPU_RESOURCE.get(f.vendor)
    if name is None:
        raise InputError(f"{f.where}: no Kubernetes device resource is known for vendor '{f.vendor}' "
                         f"({f.pool.hardware}); known: {', '.join(sorted(GPU_RESOURCE))}")
    per_pod = devices_per_pod(f)
    why = (f"{f.at('devices_per_instance')}" if not f.spans_nodes else
           f"{f.at('devices_per_instance')} / {f.nodes_per_instance} nodes")
    return {"limits": {name: C(str(per_pod), why)}, "requests": {name: C(str(per_pod), why)}}


def engine_call(f: PoolFacts, engine: str, leader: str = "$(LWS_LEADER_ADDRESS)",
                rank: str = "$(LWS_WORKER_INDEX)") -> tuple[list[str], list[Any]]:
    """(command, args) of the engine's server for pool f, in a container."""
    model = C(f.model_id, f.model_id_from)
    if engine == "vllm":
        return ["vllm", "serve"], [model, *arg_items(vllm_args(f))]
    if engine == "sglang":
        return (["python3", "-m", "sglang.launch_server"],
                ["--model-path", model, *arg_items(sglang_args(f, rank, leader))])
    if f.spans_nodes:
        raise InputError(f"{f.where}: an instance of {f.pool.devices_per_instance} devices spans "
                         f"{f.nodes_per_instance} nodes; fleetplan writes multi-node TensorRT-LLM "
                         "launches for no launcher (MPI): deploy this plan with --engine vllm or sglang")
    return ["trtllm-serve"], [model, *arg_items(trtllm_args(f, f"{OPTIONS_DIR}/extra-llm-api-options.yaml"))]


def image_of(f: PoolFacts, tool: Tool, image: str | None) -> C:
    """The container image: --image, else the pinned version's (a CUDA build: said so on other vendors' pools)."""
    if image is not None:
        return C(image, "--image")
    note = f"{tool.name} pinned at {tool.source()}"
    if f.vendor != "nvidia":
        note += f"; a CUDA build: for this {f.vendor} pool pass --image with the engine's build for it"
    return C(tool.image, note)


def container(f: PoolFacts, tool: Tool, image: str | None, command: list[str], args: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": "engine", "image": image_of(f, tool, image),
        "command": command, "args": args,
        "ports": [{"name": "http", "containerPort": 8000}],
        "resources": resources(f),
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
    }
    if tool.name == "trtllm":
        out["volumeMounts"].append({"name": "llm-api-options", "mountPath": OPTIONS_DIR})
    return out


def pod_spec(f: PoolFacts, containers: list[dict[str, Any]], options: str | None) -> dict[str, Any]:
    volumes: list[Any] = [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
    if options is not None:
        volumes.append({"name": "llm-api-options", "configMap": {"name": options}})
    return {"nodeSelector": node_selector(f), "containers": containers, "volumes": volumes}


def options_map(plan: Plan, f: PoolFacts, text: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(plan, f, f"{f.name[:54]}-options"),
            "data": {"extra-llm-api-options.yaml": text}}


def deployment(plan: Plan, f: PoolFacts, tool: Tool, image: str | None, options: str | None) -> dict[str, Any]:
    command, args = engine_call(f, tool.name)
    template = {"metadata": {"labels": labels(f)},
                "spec": pod_spec(f, [container(f, tool, image, command, args)], options)}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata(plan, f),
            "spec": {"replicas": C(f.pool.instances, f.at("instances")),
                     "selector": {"matchLabels": {"app.kubernetes.io/name": f.name}},
                     "template": template}}


def _vllm_multinode(f: PoolFacts, tool: Tool, image: str | None) -> tuple[dict, dict]:
    _, args = engine_call(f, "vllm")
    head = ["/bin/bash", "-c", f'ray start --head --port={RAY_PORT} && exec vllm serve "$@"', "--"]
    leader = container(f, tool, image, head, args)
    worker = container(f, tool, image, ["ray", "start", f"--address=$(LWS_LEADER_ADDRESS):{RAY_PORT}", "--block"], [])
    del worker["args"], worker["ports"]
    return leader, worker


def leader_worker_set(plan: Plan, f: PoolFacts, tool: Tool, image: str | None) -> dict[str, Any]:
    if tool.name == "vllm":
        leader, worker = _vllm_multinode(f, tool, image)
    else:
        command, args = engine_call(f, tool.name)
        leader = container(f, tool, image, command, args)
        worker = {k: v for k, v in leader.items() if k != "ports"}
    size = C(f.nodes_per_instance, f"{f.at('devices_per_instance')} = {f.pool.devices_per_instance} "
             f"over {f.devices_per_node} devices per {f.pool.hardware} node")
    return {"apiVersion": LWS_API_VERSION, "kind": "LeaderWorkerSet", "metadata": metadata(plan, f),
            "spec": {"replicas": C(f.pool.instances, f.at("instances")),
                     "leaderWorkerTemplate": {
                         "size": size,
                         "leaderTemplate": {"metadata": {"labels": labels(f)}, "spec": pod_spec(f, [leader], None)},
                         "workerTemplate": {"metadata": {"labels": labels(f)}, "spec": pod_spec(f, [worker], None)},
                     }}}


def pool_manifests(plan: Plan, f: PoolFacts, tool: Tool, image: str | None,
                   options_text: str | None) -> list[dict[str, Any]]:
    """The manifests of one pool: [ConfigMap (TensorRT-LLM's options),] Deployment or LeaderWorkerSet."""
    if f.spans_nodes:
        return [leader_worker_set(plan, f, tool, image)]
    docs = []
    options = None
    if tool.name == "trtllm" and options_text is not None:
        docs.append(options_map(plan, f, options_text))
        options = docs[0]["metadata"]["name"]
    return docs + [deployment(plan, f, tool, image, options)]


def options_yaml(f: PoolFacts) -> dict[str, Any]:
    """TensorRT-LLM's --extra_llm_api_options as a nested mapping with comments."""
    out: dict[str, Any] = {}
    for key, value, where in trtllm_options(f):
        node = out
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = C(value, where)
    return out
