"""The Kubernetes manifests, loaded into the official `kubernetes` Python client's models (every key
must be a field of the model: the round trip through the model gives the document back), the
LeaderWorkerSet checked against its API type by hand, and the Dynamo and llm-d formats by
structure against their pinned examples (solver/deploy/flags.py)."""

from __future__ import annotations

import pytest
import yaml

from solver.deploy.facts import load_plan, pool_facts
from solver.deploy.render import files
from solver.errors import InputError
from tests.deploy.plans import INPUT_SHA, result, variant, write

kubernetes = pytest.importorskip("kubernetes")  # the dev extra installs it
API = kubernetes.client.ApiClient()

# kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go at commit 47a6181f092b:
# the json names of LeaderWorkerSetSpec and LeaderWorkerTemplate
LWS_SPEC = {"replicas", "leaderWorkerTemplate", "rolloutStrategy", "startupPolicy", "networkConfig"}
LWS_TEMPLATE = {"leaderTemplate", "workerTemplate", "size", "restartPolicy", "subGroupPolicy",
                "volumeClaimTemplates", "persistentVolumeClaimRetentionPolicy"}


def k8s(doc: dict, kind: str):
    """The document as the client's model `kind`; fails on a missing required field, on a wrong
    type and, through the round trip, on any key the model does not have."""
    obj = API._ApiClient__deserialize(doc, kind)
    assert API.sanitize_for_serialization(obj) == doc
    return obj


def generated(tmp_path, target: str, engine: str = "vllm", doc: dict | None = None) -> dict[str, list]:
    plan = load_plan(str(write(tmp_path, doc or result(record=True))))
    texts = files(plan, pool_facts(plan), target, engine)
    return {name: [d for d in yaml.safe_load_all(text) if d is not None] for name, text in texts.items()}


def without_big(doc: dict) -> None:
    del doc["services"][2]


def test_one_deployment_per_single_node_pool(tmp_path):
    out = generated(tmp_path, "kubernetes")
    chat = out["chat-colocated-h100-sxm-tp2pp1ep1dp1.yaml"]
    assert [d["kind"] for d in chat] == ["Deployment"]
    dep = k8s(chat[0], "V1Deployment")
    assert dep.spec.replicas == 3  # services[0].pools[0].instances
    assert dep.spec.selector.match_labels == {"app.kubernetes.io/name": "chat-colocated-h100-sxm-tp2pp1ep1dp1"}
    assert dep.spec.selector.match_labels.items() <= dep.spec.template.metadata.labels.items()
    pod = dep.spec.template.spec
    assert pod.node_selector == {"fleetplan.io/hardware": "h100-sxm"}
    (c,) = pod.containers
    assert c.resources.limits == {"nvidia.com/gpu": "2"} == c.resources.requests
    assert c.command == ["vllm", "serve"] and c.args[0] == "meta-llama/Llama-3.1-8B"
    assert c.args[c.args.index("--max-num-seqs") + 1] == "64"
    assert dep.metadata.annotations["fleetplan.io/input-sha256"] == INPUT_SHA


def test_amd_pool_requests_amd_devices(tmp_path):
    (dec,) = generated(tmp_path, "kubernetes")["rag-decode-mi300x-tp4pp1ep1dp1.yaml"]
    c = k8s(dec, "V1Deployment").spec.template.spec.containers[0]
    assert c.resources.limits == {"amd.com/gpu": "4"}
    assert dec["spec"]["replicas"] == 1


def test_sites_select_nodes(tmp_path):
    def sites(doc):
        for s in doc["services"]:
            for p in s["pools"]:
                p["site"] = "eu-west"
    out = generated(tmp_path, "kubernetes", doc=variant(sites))
    dep = k8s(out["chat-eu-west-colocated-h100-sxm-tp2pp1ep1dp1.yaml"][0], "V1Deployment")
    assert dep.spec.template.spec.node_selector == {"fleetplan.io/hardware": "h100-sxm",
                                                   "fleetplan.io/site": "eu-west"}


def test_instances_across_nodes_are_a_leader_worker_set(tmp_path):
    (lws,) = generated(tmp_path, "kubernetes")["big-colocated-h100-sxm-tp8pp2ep1dp1.yaml"]
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1" and lws["kind"] == "LeaderWorkerSet"
    k8s(lws["metadata"], "V1ObjectMeta")
    assert set(lws["spec"]) <= LWS_SPEC and set(lws["spec"]["leaderWorkerTemplate"]) <= LWS_TEMPLATE
    assert lws["spec"]["replicas"] == 2
    t = lws["spec"]["leaderWorkerTemplate"]
    assert t["size"] == 2  # 16 devices (tp8 x pp2) over 8-device h100 nodes
    leader = k8s(t["leaderTemplate"], "V1PodTemplateSpec").spec.containers[0]
    worker = k8s(t["workerTemplate"], "V1PodTemplateSpec").spec.containers[0]
    assert leader.resources.limits == {"nvidia.com/gpu": "8"} == worker.resources.limits
    assert leader.command[:2] == ["/bin/bash", "-c"] and "ray start --head --port=6379" in leader.command[2]
    assert leader.args[leader.args.index("--distributed-executor-backend") + 1] == "ray"
    assert worker.command == ["ray", "start", "--address=$(LWS_LEADER_ADDRESS):6379", "--block"]


def test_sglang_leader_worker_set_ranks_from_lws(tmp_path):
    (lws,) = generated(tmp_path, "kubernetes", "sglang")["big-colocated-h100-sxm-tp8pp2ep1dp1.yaml"]
    for part in ("leaderTemplate", "workerTemplate"):
        c = k8s(lws["spec"]["leaderWorkerTemplate"][part], "V1PodTemplateSpec").spec.containers[0]
        assert c.args[c.args.index("--node-rank") + 1] == "$(LWS_WORKER_INDEX)"
        assert c.args[c.args.index("--dist-init-addr") + 1] == "$(LWS_LEADER_ADDRESS):20000"


def test_trtllm_pods_mount_their_options(tmp_path):
    out = generated(tmp_path, "kubernetes", "trtllm", doc=variant(without_big))
    cm, dep = out["chat-colocated-h100-sxm-tp2pp1ep1dp1.yaml"]
    config = k8s(cm, "V1ConfigMap")
    options = yaml.safe_load(config.data["extra-llm-api-options.yaml"])
    assert options == {"kv_cache_config": {"dtype": "fp8"}}
    pod = k8s(dep, "V1Deployment").spec.template.spec
    assert pod.volumes[1].config_map.name == cm["metadata"]["name"]
    c = pod.containers[0]
    assert c.args[c.args.index("--extra_llm_api_options") + 1] == "/etc/fleetplan/extra-llm-api-options.yaml"
    with pytest.raises(InputError, match="multi-node TensorRT-LLM"):
        generated(tmp_path, "kubernetes", "trtllm")


def test_dynamo_graph_of_a_disaggregated_service(tmp_path):
    out = generated(tmp_path, "dynamo", doc=variant(without_big))
    (g,) = out["rag.dynamo.yaml"]
    assert (g["apiVersion"], g["kind"], g["metadata"]["name"]) == ("nvidia.com/v1alpha1", "DynamoGraphDeployment", "rag")
    s = g["spec"]["services"]
    assert list(s) == ["Frontend", "VllmPrefillWorker", "VllmDecodeWorker"]
    pre, dec = s["VllmPrefillWorker"], s["VllmDecodeWorker"]
    assert (pre["subComponentType"], pre["replicas"], pre["resources"]["limits"]["gpu"]) == ("prefill", 2, "2")
    assert (dec["subComponentType"], dec["replicas"], dec["resources"]["limits"]["gpu"]) == ("decode", 1, "4")
    args = dec["extraPodSpec"]["mainContainer"]["args"]
    assert args[:6] == ["--model", "meta-llama/Llama-3.1-70B", "--disaggregation-mode", "decode", "--connector", "nixl"]
    assert "--kv-transfer-config" not in args and "--port" not in args  # Dynamo refuses both --connector and it
    assert dec["extraPodSpec"]["nodeSelector"] == {"fleetplan.io/hardware": "mi300x"}
    k8s({"nodeSelector": dec["extraPodSpec"]["nodeSelector"], "containers": [{"name": "x"}]}, "V1PodSpec")
    with pytest.raises(InputError, match="spans 2 h100-sxm nodes; --target dynamo"):
        generated(tmp_path, "dynamo")


def test_llmd_values_of_a_prefill_decode_pair(tmp_path):
    out = generated(tmp_path, "llm-d", doc=variant(without_big))
    (v,) = out["rag.llm-d-values.yaml"]
    assert v["routing"]["proxy"]["connector"] == "nixlv2" and v["modelArtifacts"]["uri"] == "hf://meta-llama/Llama-3.1-70B"
    assert (v["prefill"]["replicas"], v["prefill"]["parallelism"]) == (2, {"tensor": 1, "data": 1})
    assert (v["decode"]["replicas"], v["decode"]["parallelism"]) == (1, {"tensor": 4, "data": 1})
    c = v["decode"]["containers"][0]
    k8s({"name": c["name"], "image": c["image"], "args": c["args"], "env": c["env"], "resources": c["resources"]},
        "V1Container")
    assert c["args"][c["args"].index("--kv-transfer-config") + 1] == '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
    (chat,) = out["chat.llm-d-values.yaml"]
    assert chat["prefill"] == {"create": False} and chat["decode"]["replicas"] == 3


def test_llmd_refuses_two_pools_of_a_role(tmp_path):
    def two_decodes(doc):
        del doc["services"][2]
        doc["services"][1]["pools"].append(dict(doc["services"][1]["pools"][1], hardware="h100-sxm"))
    with pytest.raises(InputError, match="1 prefill, 2 decode pools; llm-d's modelservice chart holds one"):
        generated(tmp_path, "llm-d", doc=variant(two_decodes))


def test_images_name_their_pin_and_warn_on_other_vendors(tmp_path):
    plan = load_plan(str(write(tmp_path, result(record=True))))
    texts = files(plan, pool_facts(plan), "kubernetes", "vllm")
    amd = [x for x in texts["rag-decode-mi300x-tp4pp1ep1dp1.yaml"].splitlines() if "image:" in x]
    assert amd == ['          image: "vllm/vllm-openai:v0.11.1"  # vllm pinned at vllm-project/vllm@99d7eb5d6a51 '
                   "(v0.11 line, commit); a CUDA build: for this amd pool pass --image with the engine's build for it"]
    nv = [x for x in texts["chat-colocated-h100-sxm-tp2pp1ep1dp1.yaml"].splitlines() if "image:" in x]
    assert nv == ['          image: "vllm/vllm-openai:v0.11.1"  # vllm pinned at vllm-project/vllm@99d7eb5d6a51 '
                  "(v0.11 line, commit)"]
    mine = files(plan, pool_facts(plan), "kubernetes", "vllm", "registry.local/vllm:rocm")
    assert '          image: "registry.local/vllm:rocm"  # --image' in mine["rag-decode-mi300x-tp4pp1ep1dp1.yaml"]
