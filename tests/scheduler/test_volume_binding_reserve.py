"""VolumeBinding: Reserve/Unreserve through the assume caches, args defaults and validation, queueing hints and
events (re-expressed from upstream's volumebinding binder_test.go, volume_binding_test.go and the scheduler's
validation_pluginargs_test.go; builders shared with test_volume_binding)."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    PV,
    PVC,
    STORAGE_CLASS,
    ActionType,
    Code,
    CycleState,
    QueueingHint,
    Status,
)
from pyk8s.scheduler.plugins.volumebinding import VolumeBinding, default_and_validate_args
from pyk8s.scheduler.plugins.volumebinding.plugin import (
    STATE_KEY,
    is_schedulable_after_capacity_change,
    is_schedulable_after_csi_driver_change,
    is_schedulable_after_csi_node_change,
    is_schedulable_after_pvc_change,
    is_schedulable_after_storage_class_change,
)

from .test_volume_binding import (
    NO_PV,
    SELECTED_NODE,
    WAIT_SC,
    ZONE,
    make_pv,
    make_pvc,
    node,
    objects,
    plugin,
    pod_with,
    run_cycle,
)
from .wrappers import make_pod

# -- Reserve / Unreserve --------------------------------------------------------------------------------------


def test_reserve_assumes_static_binding_and_unreserve_reverts() -> None:
    lister = objects([make_pvc("c1", "wait-sc"), make_pvc("c2", "wait-sc")], [make_pv("pv-1", "wait-sc")])
    p = plugin(lister)
    ni = node("node-a")
    first, second = pod_with("c1", name="first"), pod_with("c2", name="second")
    state, pre, filters, _ = run_cycle(p, first, [ni])
    assert pre is None and filters == [None]
    assert p.reserve(state, first, "node-a") is None
    assert state.read(STATE_KEY).all_bound is False
    assumed = p.binder.pv_cache.get("pv-1")
    assert assumed is not None
    assert assumed["spec"]["claimRef"]["name"] == "c1"
    assert assumed["spec"]["claimRef"]["uid"] == "uid-c1"
    assert assumed["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert "claimRef" not in lister.get("persistentvolumes", "", "pv-1")["spec"]  # the lister's object is untouched
    # The next pod's cycle sees the PV as taken.
    _, _, filters2, _ = run_cycle(p, second, [ni])
    assert filters2 == [NO_PV]
    p.unreserve(state, first, "node-a")
    assert "claimRef" not in p.binder.pv_cache.get("pv-1")["spec"]
    _, _, filters3, _ = run_cycle(p, second, [ni])
    assert filters3 == [None]


def test_reserve_assumes_provisioning_with_selected_node() -> None:
    p = plugin(objects([make_pvc("c", "provision-sc")], []))
    nodes = [node("node-a"), node("node-b")]
    pod = pod_with("c")
    state, _, filters, _ = run_cycle(p, pod, nodes)
    assert filters == [None, None]
    assert p.reserve(state, pod, "node-b") is None
    assumed = p.binder.pvc_cache.get("default/c")
    assert assumed["metadata"]["annotations"][SELECTED_NODE] == "node-b"
    # Another pod sharing the claim can now only go to node-b.
    _, _, filters2, _ = run_cycle(p, pod_with("c", name="other"), nodes)
    assert filters2 == [NO_PV, None]
    p.unreserve(state, pod, "node-b")
    assert SELECTED_NODE not in (p.binder.pvc_cache.get("default/c")["metadata"].get("annotations") or {})


def test_newer_api_object_replaces_assumed_one() -> None:
    lister = objects([make_pvc("c", "wait-sc")], [make_pv("pv-1", "wait-sc")])
    p = plugin(lister)
    pod = pod_with("c")
    state, _, _, _ = run_cycle(p, pod, [node("node-a")])
    p.reserve(state, pod, "node-a")
    updated = make_pv("pv-1", "wait-sc")
    updated["metadata"]["resourceVersion"] = "2"
    lister.add("persistentvolumes", updated)
    assert p.binder.pv_cache.get("pv-1") is updated
    assert not p.binder.pv_cache.is_assumed("pv-1")


async def test_all_bound_needs_no_api() -> None:
    p = plugin(objects([make_pvc("c", "wait-sc", bound_pv="pv")], [make_pv("pv", "wait-sc")]))
    pod = pod_with("c")
    state, _, filters, _ = run_cycle(p, pod, [node("node-a")])
    assert filters == [None]
    assert p.reserve(state, pod, "node-a") is None
    assert state.read(STATE_KEY).all_bound is True
    assert await p.pre_bind(state, pod, "node-a") is None


async def test_skipped_pod_reserves_and_prebinds_nothing() -> None:
    p = plugin(objects([], []))
    state = CycleState()
    pod = make_pod("plain")
    assert p.pre_filter(state, pod, []) == (None, Status(Code.SKIP))
    assert p.reserve(state, pod, "node-a") is None
    assert await p.pre_bind(state, pod, "node-a") is None


# -- args ---------------------------------------------------------------------------------------------------


def test_default_args() -> None:
    assert default_and_validate_args(None, False) == {"bindTimeoutSeconds": 600}
    assert default_and_validate_args({}, True) == {
        "bindTimeoutSeconds": 600,
        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
    }


@pytest.mark.parametrize(
    ("args", "gate", "message"),
    [
        (
            {"bindTimeoutSeconds": -10},
            False,
            "bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a negative value",
        ),
        (
            {"shape": [{"utilization": 0, "score": 0}]},
            False,
            "shape: Invalid value: []config.UtilizationShapePoint{config.UtilizationShapePoint{Utilization:0, "
            "Score:0}}: unexpected field `shape`, remove it or turn on the feature gate VolumeCapacityPriority",
        ),
        (
            {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]},
            True,
            "shape[1].utilization: Invalid value: 10: utilization values must be sorted in increasing order",
        ),
        (
            {"shape": [{"utilization": -1, "score": 1}, {"utilization": 101, "score": 11}]},
            True,
            "[shape[0].utilization: Invalid value: -1: not in valid range [0, 100], shape[1].utilization: Invalid "
            "value: 101: not in valid range [0, 100], shape[1].score: Invalid value: 11: not in valid range [0, 10]]",
        ),
    ],
)
def test_invalid_args(args: dict[str, Any], gate: bool, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        default_and_validate_args(args, gate)
    assert str(exc.value) == message


# -- hints and events ---------------------------------------------------------------------------------------


def test_hints() -> None:
    pod = pod_with("pvc-a", extra=[{"name": "eph", "ephemeral": {}}, {"name": "csi", "csi": {"driver": "d"}}])
    other_ns = make_pvc("pvc-a", "x")
    other_ns["metadata"]["namespace"] = "elsewhere"
    assert is_schedulable_after_pvc_change(pod, None, make_pvc("pvc-a", "x")) == QueueingHint.QUEUE
    assert is_schedulable_after_pvc_change(pod, None, make_pvc("pod-a-eph", "x")) == QueueingHint.QUEUE
    assert is_schedulable_after_pvc_change(pod, None, make_pvc("pvc-b", "x")) == QueueingHint.SKIP
    assert is_schedulable_after_pvc_change(pod, None, other_ns) == QueueingHint.SKIP

    topo = [{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}]
    assert is_schedulable_after_storage_class_change(pod, None, WAIT_SC) == QueueingHint.QUEUE
    assert (
        is_schedulable_after_storage_class_change(pod, WAIT_SC, {**WAIT_SC, "allowedTopologies": topo})
        == QueueingHint.QUEUE
    )
    assert (
        is_schedulable_after_storage_class_change(pod, WAIT_SC, {**WAIT_SC, "parameters": {"a": "b"}})
        == QueueingHint.SKIP
    )

    ann = "storage.alpha.kubernetes.io/migrated-plugins"
    old_node = {"metadata": {"name": "n", "annotations": {ann: "kubernetes.io/aws-ebs"}}}
    new_node = {"metadata": {"name": "n", "annotations": {ann: "kubernetes.io/aws-ebs,kubernetes.io/gce-pd"}}}
    assert is_schedulable_after_csi_node_change(pod, None, new_node) == QueueingHint.QUEUE
    assert is_schedulable_after_csi_node_change(pod, old_node, new_node) == QueueingHint.QUEUE
    assert is_schedulable_after_csi_node_change(pod, old_node, old_node) == QueueingHint.SKIP

    small, big = {"capacity": "1Gi"}, {"capacity": "2Gi"}
    assert is_schedulable_after_capacity_change(pod, None, small) == QueueingHint.QUEUE
    assert is_schedulable_after_capacity_change(pod, small, big) == QueueingHint.QUEUE
    assert is_schedulable_after_capacity_change(pod, big, small) == QueueingHint.SKIP
    assert (
        is_schedulable_after_capacity_change(pod, {}, {"capacity": "1Gi", "maximumVolumeSize": "1"})
        == QueueingHint.QUEUE
    )

    on = {"metadata": {"name": "d"}, "spec": {"storageCapacity": True}}
    off = {"metadata": {"name": "d"}, "spec": {"storageCapacity": False}}
    assert is_schedulable_after_csi_driver_change(pod, on, off) == QueueingHint.QUEUE
    assert is_schedulable_after_csi_driver_change(pod, off, on) == QueueingHint.SKIP
    assert is_schedulable_after_csi_driver_change(pod_with("pvc-a"), on, off) == QueueingHint.SKIP


@pytest.mark.parametrize("hints", [True, False])
def test_events_to_register(hints: bool) -> None:
    handle = FrameworkHandle(feature_gates={"SchedulerQueueingHints": hints})
    events = {e.event.resource: e for e in VolumeBinding.new(None, handle).events_to_register()}
    assert set(events) == {STORAGE_CLASS, PVC, PV, NODE, CSI_NODE, CSI_DRIVER, CSI_STORAGE_CAPACITY}
    node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
    assert events[NODE].event.action == (node_actions if hints else node_actions | ActionType.UPDATE_NODE_TAINT)
    assert events[PV].hint is None and events[CSI_DRIVER].event.action == ActionType.UPDATE
