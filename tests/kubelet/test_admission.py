"""The kubelet's admission of a pod bound to its node (upstream predicate.go Admit, the scheduler's
AdmissionCheck): the first failure, in upstream's order, with upstream's reason and message."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.kubelet.admission import AdmittedPods, admit
from pyk8s.kubelet.node_status import NodeSpec, initial_node

T0 = "2026-01-01T00:00:00Z"


def node(pods: int = 2, **kw) -> dict:
    n = initial_node(NodeSpec("n1", cpu="2", memory="4Gi", pods=pods, **kw), T0)
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


_steps = st.lists(
    st.tuples(st.sampled_from(["add", "remove"]), st.sampled_from("abcdef"), st.sampled_from(["100m", "400m", "900m"]),
              st.sampled_from([None, 8080, 8081])),
    max_size=25,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(steps=_steps, cpu=st.sampled_from(["100m", "600m", "1"]), port=st.sampled_from([None, 8080]))
def test_admitted_pods_kept_as_they_come_and_go_admit_as_a_fresh_count(steps, cpu, port):
    """A node's running tally of its admitted pods (added and removed in any order, a pod re-added with other
    requests) admits or rejects a new pod exactly as counting the pods it holds from scratch does."""
    tally, held = AdmittedPods(), {}
    for op, name, req, host_port in steps:
        if op == "add":
            p = pod(name, cpu=req, ports=[{"containerPort": 1, "hostPort": host_port}] if host_port else [])
            tally.add(name, p)
            held[name] = p
        else:
            tally.remove(name)
            held.pop(name, None)
    assert len(tally) == len(held)
    candidate = pod("new", cpu=cpu, ports=[{"containerPort": 80, "hostPort": port}] if port else [])
    assert admit(candidate, node(pods=5), tally) == admit(candidate, node(pods=5), list(held.values()))
