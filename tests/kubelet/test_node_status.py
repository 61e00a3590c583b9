"""The Node a simulated kubelet registers, as a v1.32 kubelet builds it: labels, allocatable, conditions and what
re-registration reconciles (../shared/reference/kubelet-and-nodes.md §1)."""

from __future__ import annotations

import pytest

from pyk8s.kubelet.node_status import (
    CONTROLLER_MANAGED_ATTACH_DETACH,
    NodeSpec,
    allocatable,
    conditions_changed,
    healthy_conditions,
    initial_node,
    reconcile_existing,
)

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z"


def test_initial_node_labels_annotation_and_taints():
    spec = NodeSpec(
        "n1", labels={"team": "a", "kubernetes.io/os": "linux"}, taints=[{"key": "k", "effect": "NoSchedule"}],
        zone="z1", region="r1", instance_type="m5.large",
    )  # fmt: skip
    node = initial_node(spec, T0)
    assert node["metadata"]["labels"] == {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": "n1",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "m5.large",
        "beta.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": "z1",
        "failure-domain.beta.kubernetes.io/zone": "z1",
        "topology.kubernetes.io/region": "r1",
        "failure-domain.beta.kubernetes.io/region": "r1",
        "team": "a",
    }
    assert node["metadata"]["annotations"] == {CONTROLLER_MANAGED_ATTACH_DETACH: "true"}
    assert node["spec"] == {"taints": [{"key": "k", "effect": "NoSchedule"}]}
    status = node["status"]
    assert [c["type"] for c in status["conditions"]] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert status["addresses"] == [
        {"type": "InternalIP", "address": "127.0.0.1"},
        {"type": "Hostname", "address": "n1"},
    ]
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert status["nodeInfo"]["kubeletVersion"].startswith("v1.32.")
    # The machine's IDs are stable per name; the boot ID is the process's.
    again = initial_node(spec, T0)
    assert again["status"]["nodeInfo"]["machineID"] == status["nodeInfo"]["machineID"]
    assert again["status"]["nodeInfo"]["bootID"] != status["nodeInfo"]["bootID"]


@pytest.mark.parametrize(
    ("memory", "storage", "want_memory", "want_storage"),
    [
        ("32Gi", "100Gi", "32668Mi", "96636764160"),  # 100Mi and 10% reserved for hard eviction
        ("1Gi", "10G", "924Mi", "9G"),
        ("50Mi", "0", "0", "0"),  # floored at zero
    ],
)
def test_allocatable_reserves_the_hard_eviction_thresholds(memory, storage, want_memory, want_storage):
    got = allocatable(NodeSpec("n", cpu="2", memory=memory, ephemeral_storage=storage, pods=30))
    assert got == {"cpu": "2", "memory": want_memory, "ephemeral-storage": want_storage, "pods": "30"}


def test_conditions_keep_their_transition_time_and_compare_without_heartbeats():
    first = healthy_conditions(T0)
    later = healthy_conditions(T1, first)
    assert all(c["lastHeartbeatTime"] == T1 and c["lastTransitionTime"] == T0 for c in later)
    assert not conditions_changed(first, later)
    flipped = [dict(c) for c in later]
    flipped[3] = {**flipped[3], "status": "Unknown", "reason": "NodeStatusUnknown"}
    assert conditions_changed(later, flipped)
    # A condition whose status changed gets a new transition time.
    recovered = healthy_conditions(T1, flipped)
    assert recovered[3]["lastTransitionTime"] == T1 and recovered[0]["lastTransitionTime"] == T0


def test_reregistration_reconciles_only_the_kubelets_own_fields():
    spec = NodeSpec("n1", zone="z2")
    fresh = initial_node(spec, T0)
    existing = initial_node(NodeSpec("n1", zone="z1", labels={"team": "a"}), T0)
    existing["metadata"]["annotations"] = {"user": "x"}
    existing["metadata"]["labels"]["beta.kubernetes.io/instance-type"] = "stale"  # the cloud no longer says so
    existing["spec"] = {"unschedulable": True, "taints": [{"key": "user", "effect": "NoSchedule"}]}
    updated = reconcile_existing(existing, fresh)
    assert updated is not None
    labels = updated["metadata"]["labels"]
    assert labels["topology.kubernetes.io/zone"] == "z2"
    assert "beta.kubernetes.io/instance-type" not in labels
    assert labels["team"] == "a"  # not the kubelet's: kept
    assert updated["metadata"]["annotations"] == {"user": "x", CONTROLLER_MANAGED_ATTACH_DETACH: "true"}
    assert updated["spec"] == existing["spec"]
    # Nothing to do the second time.
    assert reconcile_existing(updated, fresh) is None
