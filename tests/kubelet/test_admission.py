"""The kubelet's admission of a pod bound to its node (upstream predicate.go Admit, the scheduler's
AdmissionCheck): the first failure, in upstream's order, with upstream's reason and message."""

from __future__ import annotations

import pytest

from pyk8s.kubelet.admission import admit
from pyk8s.kubelet.node_status import NodeSpec, initial_node

T0 = "2026-01-01T00:00:00Z"


def node(**kw) -> dict:
    n = initial_node(NodeSpec("n1", cpu="2", memory="4Gi", pods=2, **kw), T0)
    n["metadata"]["labels"]["disk"] = "ssd"
    return n


def pod(name: str = "p", cpu: str = "500m", **spec) -> dict:
    c = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}
    if "ports" in spec:
        c["ports"] = spec.pop("ports")
    return {"metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"nodeName": "n1", "containers": [c], **spec}}  # fmt: skip


NO_EXECUTE = [{"key": "gone", "effect": "NoExecute"}]


@pytest.mark.parametrize(
    ("candidate", "admitted", "node_kw", "want"),
    [
        (pod(), [], {}, None),
        (pod(cpu="1500m"), [pod("a", cpu="1")], {},
         ("OutOfcpu", "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000")),
        (pod(), [pod("a"), pod("b")], {},
         ("OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2")),
        (pod(nodeSelector={"disk": "hdd"}), [], {},
         ("NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")),
        (pod(nodeName="n2"), [], {},
         ("NodeName", "Predicate NodeName failed: node(s) didn't match the requested node name")),
        (pod(ports=[{"containerPort": 80, "hostPort": 8080}]), [pod("a", ports=[{"containerPort": 1, "hostPort": 8080}])],
         {}, ("NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports")),
        (pod(), [], {"taints": NO_EXECUTE},
         ("TaintToleration", "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate")),
        (pod(tolerations=[{"key": "gone", "operator": "Exists"}]), [], {"taints": NO_EXECUTE}, None),
        (pod(), [], {"taints": [{"key": "x", "effect": "NoSchedule"}]}, None),  # only NoExecute taints count
        # Resources come first, as upstream checks them first.
        (pod(cpu="3", nodeSelector={"disk": "hdd"}), [], {},
         ("OutOfcpu", "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000")),
    ],
    ids=["fits", "cpu", "pods", "affinity", "node-name", "ports", "noexecute", "tolerated", "noschedule", "order"],
)  # fmt: skip
def test_admission(candidate, admitted, node_kw, want):
    assert admit(candidate, node(**node_kw), admitted) == want
