"""VolumeZone: single- and multi-zone PVs, unbound claims, queueing hints (cases re-expressed from upstream's
volumezone/volume_zone_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.scheduler.framework.handle import FrameworkHandle, StaticLister
from pyk8s.scheduler.framework.interface import (
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
from pyk8s.scheduler.framework.types import NodeInfo
from pyk8s.scheduler.plugins.volumezone import (
    ERR_REASON_CONFLICT,
    LABEL_BETA_REGION,
    LABEL_BETA_ZONE,
    LABEL_REGION,
    LABEL_ZONE,
    VolumeZone,
    is_schedulable_after_pv_change,
    is_schedulable_after_pvc_change,
    is_schedulable_after_storage_class_added,
)

from .wrappers import make_pod

CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
SKIP = Status(Code.SKIP)


def pv(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {}}


def pvc(name: str, volume: str = "", storage_class: str | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {}
    if volume:
        s["volumeName"] = volume
    if storage_class is not None:
        s["storageClassName"] = storage_class
    return {"metadata": {"name": name, "namespace": "default"}, "spec": s}


def node(labels: dict[str, str] | None = None) -> NodeInfo:
    # Nodes carry only the labels each case gives (upstream's test nodes have no hostname label).
    return NodeInfo({"metadata": {"name": "host1", "labels": dict(labels or {})}, "status": {}})


def pod_with(claim: str | None) -> dict[str, Any]:
    vols = [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}] if claim is not None else None
    return make_pod("pod_1", volumes=vols)


def plugin(pvs: list[Any], pvcs: list[Any], classes: list[Any] | None = None) -> VolumeZone:
    objects = StaticLister({"persistentvolumes": pvs, "persistentvolumeclaims": pvcs, "storageclasses": classes or []})
    return VolumeZone.new(None, FrameworkHandle(objects=objects))


def run(p: VolumeZone, pod: dict[str, Any], ni: NodeInfo) -> tuple[Status | None, Status | None]:
    state = CycleState()
    _, pre = p.pre_filter(state, pod, [ni])
    # Like upstream's tests, Filter runs whatever PreFilter said (it falls back to computing the volumes).
    return pre, p.filter(state, pod, ni)


SINGLE_PVS = [
    pv("Vol_1", {LABEL_BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {LABEL_BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", {LABEL_BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", {LABEL_ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {LABEL_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", {LABEL_ZONE: "us-west1-a", LABEL_REGION: "us-west1-a"}),
]
SINGLE_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
    pvc("PVC_Stable_3", "Vol_Stable_3"),
]

SINGLE_ZONE = [
    # (name, claim, node labels, PreFilter, Filter)
    ("pod without volume", None, {LABEL_BETA_ZONE: "us-west1-a"}, SKIP, None),
    ("node without labels", "PVC_1", {}, None, None),
    ("beta zone label matched", "PVC_1", {LABEL_BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("beta region label matched", "PVC_2", {LABEL_BETA_REGION: "us-west1", "uselessLabel": "none"}, None, None),
    ("beta region label mismatch", "PVC_2", {LABEL_BETA_REGION: "no_us-west1", "uselessLabel": "none"}, None, CONFLICT),
    ("beta zone label mismatch", "PVC_1", {LABEL_BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"}, None, CONFLICT),
    ("zone label matched", "PVC_Stable_1", {LABEL_ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("region label matched", "PVC_Stable_2", {LABEL_REGION: "us-west1", "uselessLabel": "none"}, None, None),
    ("region label mismatch", "PVC_Stable_2", {LABEL_REGION: "no_us-west1", "uselessLabel": "none"}, None, CONFLICT),
    ("zone label mismatch", "PVC_Stable_1", {LABEL_ZONE: "no_us-west1-a", "uselessLabel": "none"}, None, CONFLICT),
    ("pv zone and region, node only zone", "PVC_Stable_3", {LABEL_ZONE: "us-west1-a"}, None, CONFLICT),
    ("pv GA zone, node beta zone", "PVC_Stable_1", {LABEL_BETA_ZONE: "us-west1-a"}, None, CONFLICT),
    ("pv beta label, node GA label, matched", "PVC_1", {LABEL_ZONE: "us-west1-a"}, None, None),
    ("pv beta label, node GA label, mismatch", "PVC_1", {LABEL_ZONE: "us-west1-b"}, None, CONFLICT),
]


@pytest.mark.parametrize(
    ("name", "claim", "labels", "want_pre", "want_filter"), SINGLE_ZONE, ids=[c[0] for c in SINGLE_ZONE]
)
def test_single_zone(name: str, claim: str | None, labels: dict[str, str], want_pre: Any, want_filter: Any) -> None:
    pre, got = run(plugin(SINGLE_PVS, SINGLE_PVCS), pod_with(claim), node(labels))
    assert pre == want_pre
    assert got == want_filter


MULTI_PVS = [
    pv("Vol_1", {LABEL_BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {LABEL_BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", {LABEL_BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", {LABEL_ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {LABEL_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Bad", {LABEL_ZONE: "us-west1-a__"}),  # unparsable: ignored
]
MULTI_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
    pvc("PVC_Bad", "Vol_Bad"),
]

MULTI_ZONE = [
    ("node without labels", "PVC_3", {}, None, None),
    ("beta zone label matched", "PVC_3", {LABEL_BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("beta zone label mismatch", "PVC_1", {LABEL_BETA_ZONE: "us-west1-b", "uselessLabel": "none"}, None, CONFLICT),
    ("zone label matched", "PVC_Stable_2", {LABEL_ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("zone label mismatch", "PVC_Stable_1", {LABEL_ZONE: "us-west1-b", "uselessLabel": "none"}, None, CONFLICT),
    ("unparsable pv label is ignored", "PVC_Bad", {LABEL_ZONE: "us-west1-b"}, SKIP, None),
]


@pytest.mark.parametrize(
    ("name", "claim", "labels", "want_pre", "want_filter"), MULTI_ZONE, ids=[c[0] for c in MULTI_ZONE]
)
def test_multi_zone(name: str, claim: str, labels: dict[str, str], want_pre: Any, want_filter: Any) -> None:
    pre, got = run(plugin(MULTI_PVS, MULTI_PVCS), pod_with(claim), node(labels))
    assert pre == want_pre
    assert got == want_filter


def unresolvable(msg: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)


BINDING_CLASSES = [
    {"metadata": {"name": "Class_Immediate"}},  # no binding mode (the API server would default it)
    {"metadata": {"name": "Class_Wait"}, "volumeBindingMode": "WaitForFirstConsumer"},
    {"metadata": {"name": "Class_Immediate2"}, "volumeBindingMode": "Immediate"},
]
BINDING_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_NoSC", storage_class="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", storage_class="Class_Wait"),
    pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
    pvc("PVC_Immediate2", storage_class="Class_Immediate2"),
    pvc("PVC_NoPV", "Vol_missing"),
]
# Errors show up in PreFilter and again in Filter, which recomputes the volumes when PreFilter left no state.
BINDING = [
    ("label zone failure domain matched", "PVC_1", None, None),
    (
        "unbound volume empty storage class",
        "PVC_EmptySC",
        *[unresolvable("PersistentVolumeClaim had no pv name and storageClass name")] * 2,
    ),
    (
        "unbound volume missing storage class",
        "PVC_NoSC",
        *[unresolvable('storageclass.storage.k8s.io "Class_0" not found')] * 2,
    ),
    (
        "unbound volume class without mode",
        "PVC_ImmediateSC",
        *[unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"')] * 2,
    ),
    ("unbound volume immediate binding", "PVC_Immediate2", *[unresolvable("PersistentVolume had no name")] * 2),
    ("unbound volume wait binding mode", "PVC_WaitSC", SKIP, None),
    ("missing claim", "PVC_missing", *[unresolvable('persistentvolumeclaim "PVC_missing" not found')] * 2),
    ("missing pv", "PVC_NoPV", *[unresolvable('persistentvolume "Vol_missing" not found')] * 2),
    ("claim without name", "", *[unresolvable("PersistentVolumeClaim had no name")] * 2),
]


@pytest.mark.parametrize(("name", "claim", "want_pre", "want_filter"), BINDING, ids=[c[0] for c in BINDING])
def test_with_binding(name: str, claim: str, want_pre: Any, want_filter: Any) -> None:
    p = plugin([pv("Vol_1", {LABEL_BETA_ZONE: "us-west1-a"})], BINDING_PVCS, BINDING_CLASSES)
    pre, got = run(p, pod_with(claim), node({LABEL_BETA_ZONE: "us-west1-a", "uselessLabel": "none"}))
    assert pre == want_pre
    assert got == want_filter


def test_zone_mismatch_on_second_pv() -> None:
    pvs = [pv("a", {LABEL_ZONE: "z1"}), pv("b", {LABEL_ZONE: "z2"})]
    pod = make_pod(
        "p",
        volumes=[
            {"name": "a", "persistentVolumeClaim": {"claimName": "ca"}},
            {"name": "b", "persistentVolumeClaim": {"claimName": "cb"}},
        ],
    )
    pre, got = run(plugin(pvs, [pvc("ca", "a"), pvc("cb", "b")]), pod, node({LABEL_ZONE: "z1"}))
    assert pre is None and got == CONFLICT


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    [
        ("pod refers no pvc", make_pod("pod_1"), None, pvc("PVC_1", "Vol_1"), QueueingHint.SKIP),
        ("different pvc", pod_with("PVC_2"), None, pvc("PVC_1", "Vol_1"), QueueingHint.SKIP),
        (
            "different namespace",
            pod_with("PVC_1"),
            None,
            {**pvc("PVC_1"), "metadata": {"name": "PVC_1", "namespace": "ns1"}},
            QueueingHint.SKIP,
        ),
        ("pvc added", pod_with("PVC_1"), None, pvc("PVC_1", "Vol_1"), QueueingHint.QUEUE),
        ("pvc updated", pod_with("PVC_1"), pvc("PVC_1"), pvc("PVC_1", "Vol_1"), QueueingHint.QUEUE),
    ],
)
def test_hint_pvc_change(name: str, pod: Any, old: Any, new: Any, want: QueueingHint) -> None:
    assert is_schedulable_after_pvc_change(pod, old, new) == want


@pytest.mark.parametrize(
    ("sc", "want"),
    [
        ({"metadata": {"name": "SC_1"}}, QueueingHint.SKIP),
        ({"metadata": {"name": "SC_1"}, "volumeBindingMode": "WaitForFirstConsumer"}, QueueingHint.QUEUE),
    ],
)
def test_hint_storage_class_added(sc: dict[str, Any], want: QueueingHint) -> None:
    assert is_schedulable_after_storage_class_added(pod_with("PVC_1"), None, sc) == want


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("new pv", None, pv("Vol_1", {LABEL_BETA_ZONE: "us-west1-b"}), QueueingHint.QUEUE),
        (
            "topology changed",
            pv("Vol_1", {LABEL_BETA_ZONE: "us-west1-a"}),
            pv("Vol_1", {LABEL_BETA_ZONE: "us-west1-b"}),
            QueueingHint.QUEUE,
        ),
        (
            "topology label added",
            pv("Vol_1", {LABEL_BETA_ZONE: "us-west1-a"}),
            pv("Vol_1", {LABEL_BETA_ZONE: "us-west1-a", LABEL_ZONE: "zone"}),
            QueueingHint.QUEUE,
        ),
        (
            "topology unchanged",
            pv("Vol_1", {LABEL_BETA_ZONE: "us-west1-a", LABEL_ZONE: "zone"}),
            pv("Vol_1", {LABEL_BETA_ZONE: "us-west1-a", LABEL_ZONE: "zone", "other": "x"}),
            QueueingHint.SKIP,
        ),
    ],
)
def test_hint_pv_change(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    assert is_schedulable_after_pv_change(pod_with("PVC_1"), old, new) == want


@pytest.mark.parametrize(
    ("hints", "node_actions"),
    [
        (True, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        (False, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT),
    ],
)
def test_events_to_register(hints: bool, node_actions: ActionType) -> None:
    handle = FrameworkHandle(feature_gates={"SchedulerQueueingHints": hints})
    events = {e.event.resource: e for e in VolumeZone.new(None, handle).events_to_register()}
    assert set(events) == {STORAGE_CLASS, NODE, PVC, PV}
    assert events[NODE].event.action == node_actions
    assert events[STORAGE_CLASS].event.action == ActionType.ADD
    assert events[PVC].event.action == events[PV].event.action == ActionType.ADD | ActionType.UPDATE
