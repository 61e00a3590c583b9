"""`pyk8s nodes --node-template`: what a Node manifest gives every simulated node, and what it may not."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.kubelet.node_status import NodeSpec, initial_node
from pyk8s.kubelet.node_template import TemplateError, spec_from_template

TEMPLATE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "ignored",
        "labels": {"topology.kubernetes.io/zone": "z1", "node.kubernetes.io/instance-type": "gpu.large", "pool": "a"},
        "annotations": {"team": "ml"},
    },
    "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}], "providerID": "sim://x"},
    "status": {
        "capacity": {"cpu": "16", "memory": "64Gi", "pods": "250", "nvidia.com/gpu": 4},
        "allocatable": {"cpu": "15500m"},
        "conditions": [{"type": "Ready", "status": "False"}],
    },
}


def test_a_template_shapes_the_registered_node() -> None:
    spec = NodeSpec("n-0", **spec_from_template(TEMPLATE))
    node = initial_node(spec, "2026-01-01T00:00:00Z")
    labels = node["metadata"]["labels"]
    assert labels["pool"] == "a" and labels["kubernetes.io/hostname"] == "n-0"
    # the kubelet's own topology labels, beta twins included
    assert labels["topology.kubernetes.io/zone"] == labels["failure-domain.beta.kubernetes.io/zone"] == "z1"
    assert labels["beta.kubernetes.io/instance-type"] == "gpu.large"
    assert node["metadata"]["annotations"]["team"] == "ml"
    assert node["spec"] == {
        "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
        "providerID": "sim://x",
    }
    status = node["status"]
    assert status["capacity"] == {
        "cpu": "16", "ephemeral-storage": "100Gi", "memory": "64Gi", "pods": "250", "nvidia.com/gpu": "4",
    }  # fmt: skip
    # allocatable: the template's where it gives one, else capacity less the hard-eviction reserve
    assert status["allocatable"]["cpu"] == "15500m" and status["allocatable"]["nvidia.com/gpu"] == "4"
    assert status["allocatable"]["memory"] == "65436Mi"
    # conditions are the kubelet's own, whatever the template says
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "want a Node object"),
        ({"kind": "Pod"}, "want apiVersion v1, kind Node"),
        ({"metadata": {"labels": ["a"]}}, "metadata.labels: want an object"),
        ({"metadata": {"labels": {"a": 1}}}, "metadata.labels.a: want a string"),
        ({"spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}}, "spec.taints[0].effect: want one of"),
        ({"spec": {"taints": [{"effect": "NoSchedule"}]}}, "spec.taints[0]: want an object with a key"),
        ({"status": {"capacity": {"cpu": "lots"}}}, "status.capacity.cpu: "),
        ({"status": {"capacity": {"pods": "1.5"}}}, "status.capacity.pods: want a whole number"),
        ({"status": {"allocatable": {"memory": True}}}, "status.allocatable.memory: want a quantity"),
    ],
)
def test_a_bad_template_says_where(doc: Any, message: str) -> None:
    with pytest.raises(TemplateError, match=message.replace("[", r"\[").replace("]", r"\]")):
        spec_from_template(doc)
