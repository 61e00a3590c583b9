"""VolumeBinding: PreFilter/Filter/Score tables, PV matching, provisioning, storage capacity and ephemeral claims
(cases re-expressed from upstream's volumebinding/volume_binding_test.go and binder_test.go). Reserve, args and
hints are in test_volume_binding_reserve; PreBind needs an API server and is left to the integration tests."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.scheduler.framework.handle import FrameworkHandle, StaticLister
from pyk8s.scheduler.framework.interface import Code, CycleState, Status
from pyk8s.scheduler.framework.types import NodeInfo
from pyk8s.scheduler.plugins.volumebinding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    VolumeBinding,
)

from .wrappers import make_pod

HOSTNAME = "kubernetes.io/hostname"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def sc(name: str, mode: str | None, provisioner: str = "", topologies: list[Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name}}
    if mode is not None:
        obj["volumeBindingMode"] = mode
    if provisioner:
        obj["provisioner"] = provisioner
    if topologies is not None:
        obj["allowedTopologies"] = topologies
    return obj


IMMEDIATE_SC = sc("immediate-sc", "Immediate")
WAIT_SC = sc("wait-sc", "WaitForFirstConsumer")
WAIT_HDD_SC = sc("wait-hdd-sc", "WaitForFirstConsumer")
PROVISION_SC = sc("provision-sc", "WaitForFirstConsumer", "test-provisioner")
TOPOLOGY_SC = sc(
    "topology-sc",
    "WaitForFirstConsumer",
    "test-provisioner",
    [{"matchLabelExpressions": [{"key": ZONE, "values": ["zone-a"]}]}],
)
NO_PROVISIONER_SC = sc("local-sc", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")
CAPACITY_SC = sc("capacity-sc", "WaitForFirstConsumer", "capacity.csi.example.com")
CLASSES = [IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC, PROVISION_SC, TOPOLOGY_SC, NO_PROVISIONER_SC, CAPACITY_SC]


def make_pvc(
    name: str,
    cls: str,
    bound_pv: str = "",
    storage: str | None = None,
    phase: str | None = None,
    annotations: dict[str, str] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "1"}
    spec: dict[str, Any] = {"storageClassName": cls, **spec_extra}
    anns = dict(annotations or {})
    if bound_pv:
        spec["volumeName"] = bound_pv
        anns["pv.kubernetes.io/bind-completed"] = "yes"
    if anns:
        md["annotations"] = anns
    if storage is not None:
        spec["resources"] = {"requests": {"storage": storage}}
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md, "spec": spec}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def make_pv(
    name: str,
    cls: str,
    phase: str = "Available",
    capacity: str | None = None,
    affinity: dict[str, list[str]] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": cls, **spec_extra}
    if capacity is not None:
        spec["capacity"] = {"storage": capacity}
    if affinity is not None:
        exprs = [{"key": k, "operator": "In", "values": v} for k, v in affinity.items()]
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": phase},
    }


def node(name: str, **labels: str) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name, "labels": {HOSTNAME: name, **labels}}, "status": {}})


def zonal(name: str, region: str, zone: str) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name, "labels": {REGION: region, ZONE: zone}}, "status": {}})


def pod_with(*claims: str, extra: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    vols = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims] + list(extra or [])
    return make_pod(kw.pop("name", "pod-a"), volumes=vols or None, **kw)


def objects(pvcs: list[Any], pvs: list[Any], extra: dict[str, list[Any]] | None = None) -> StaticLister:
    return StaticLister(
        {"persistentvolumeclaims": pvcs, "persistentvolumes": pvs, "storageclasses": CLASSES, **(extra or {})}
    )


def plugin(lister: StaticLister, capacity_priority: bool = False, args: dict[str, Any] | None = None) -> VolumeBinding:
    handle = FrameworkHandle(objects=lister, feature_gates={"VolumeCapacityPriority": capacity_priority})
    return VolumeBinding.new(args, handle)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)


def run_cycle(
    p: VolumeBinding, pod: dict[str, Any], nodes: list[NodeInfo]
) -> tuple[CycleState, Status | None, list[Status | None], list[int]]:
    """PreFilter, then (if it passed) Filter and Score on every node, as upstream's table test drives it."""
    state = CycleState()
    _, pre = p.pre_filter(state, pod, nodes)
    if pre is not None:
        return state, pre, [], []
    filters = [p.filter(state, pod, ni) for ni in nodes]
    scores = []
    for ni in nodes:
        s, st = p.score(state, pod, ni)
        assert st is None
        scores.append(s)
    return state, pre, filters, scores


A_NODES = [node("node-a"), node("node-b"), node("node-c")]
LOCAL_PVS = [
    make_pv("pv-a-0", "wait-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
    make_pv("pv-a-1", "wait-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
    make_pv("pv-b-0", "wait-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
    make_pv("pv-b-1", "wait-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
]
HDD_PVS = [
    make_pv("pv-a-2", "wait-hdd-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
    make_pv("pv-a-3", "wait-hdd-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
    make_pv("pv-b-2", "wait-hdd-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
    make_pv("pv-b-3", "wait-hdd-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
]
ZONAL_NODES = [
    zonal("zone-a-node-a", "region-a", "zone-a"),
    zonal("zone-a-node-b", "region-a", "zone-a"),
    zonal("zone-b-node-a", "region-b", "zone-b"),
    zonal("zone-b-node-b", "region-b", "zone-b"),
    zonal("zone-c-node-a", "region-c", "zone-c"),
    zonal("zone-c-node-b", "region-c", "zone-c"),
]
ZONAL_PVS = [
    make_pv(f"pv-{z}-{i}", "wait-sc", capacity=cap, affinity={REGION: [f"region-{z}"], ZONE: [f"zone-{z}"]})
    for z, cap in (("a", "200Gi"), ("b", "100Gi"))
    for i in (0, 1)
]
CUSTOM_SHAPE = {
    "bindTimeoutSeconds": 300,
    "shape": [{"utilization": 0, "score": 0}, {"utilization": 50, "score": 3}, {"utilization": 100, "score": 5}],
}
NO_PV = unresolvable(ERR_REASON_BIND_CONFLICT)

TABLE: list[tuple[Any, ...]] = [
    # (name, pod, nodes, pvcs, pvs, capacity priority gate, args, PreFilter, Filter per node, Score per node)
    ("pod has no pvcs", make_pod("pod-a"), [node("node-a")], [], [], False, None, Status(Code.SKIP), None, None),
    (
        "all bound",
        pod_with("pvc-a"),
        [node("node-a")],
        [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        [make_pv("pv-a", "wait-sc")],
        False,
        None,
        None,
        [None],
        [0],
    ),
    (
        "pvc does not exist",
        pod_with("pvc-a"),
        [node("node-a")],
        [],
        [],
        False,
        None,
        unresolvable('persistentvolumeclaim "pvc-a" not found'),
        None,
        None,
    ),
    (
        "part of pvcs do not exist",
        pod_with("pvc-a", "pvc-b"),
        [node("node-a")],
        [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        [],
        False,
        None,
        unresolvable('persistentvolumeclaim "pvc-b" not found'),
        None,
        None,
    ),
    (
        "immediate claims not bound",
        pod_with("pvc-a"),
        [node("node-a")],
        [make_pvc("pvc-a", "immediate-sc")],
        [],
        False,
        None,
        unresolvable("pod has unbound immediate PersistentVolumeClaims"),
        None,
        None,
    ),
    (
        "claim pre-bound to a pv is the pv controller's",
        pod_with("pvc-a"),
        [node("node-a")],
        [make_pvc("pvc-a", "wait-sc", volumeName="pv-a")],
        [make_pv("pv-a", "wait-sc")],
        False,
        None,
        unresolvable("pod has unbound immediate PersistentVolumeClaims"),
        None,
        None,
    ),
    (
        "unbound claims no matches",
        pod_with("pvc-a"),
        [node("node-a")],
        [make_pvc("pvc-a", "wait-sc")],
        [],
        False,
        None,
        None,
        [NO_PV],
        [0],
    ),
    (
        "bound and unbound unsatisfied",
        pod_with("pvc-a", "pvc-b"),
        [node("node-a", foo="barbar")],
        [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a"), make_pvc("pvc-b", "wait-sc")],
        [make_pv("pv-a", "wait-sc", affinity={"foo": ["bar"]})],
        False,
        None,
        None,
        [unresolvable(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
        [0],
    ),
    (
        "pv not found",
        pod_with("pvc-a"),
        [node("node-a")],
        [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        [],
        False,
        None,
        None,
        [unresolvable(ERR_REASON_PV_NOT_EXIST)],
        [0],
    ),
    (
        "pv not found claim lost",
        pod_with("pvc-a"),
        [node("node-a")],
        [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a", phase="Lost")],
        [],
        False,
        None,
        unresolvable('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'),
        None,
        None,
    ),
    (
        "local volumes with close capacity are preferred",
        pod_with("pvc-a"),
        A_NODES,
        [make_pvc("pvc-a", "wait-sc", storage="50Gi")],
        LOCAL_PVS,
        True,
        None,
        None,
        [None, None, NO_PV],
        [25, 50, 0],
    ),
    (
        "local volumes with close capacity are preferred (multiple pvcs)",
        pod_with("pvc-0", "pvc-1"),
        A_NODES,
        [make_pvc("pvc-0", "wait-sc", storage="50Gi"), make_pvc("pvc-1", "wait-hdd-sc", storage="100Gi")],
        LOCAL_PVS + HDD_PVS,
        True,
        None,
        None,
        [None, None, NO_PV],
        [38, 75, 0],
    ),
    (
        "zonal volumes with close capacity are preferred",
        pod_with("pvc-a"),
        ZONAL_NODES,
        [make_pvc("pvc-a", "wait-sc", storage="50Gi")],
        ZONAL_PVS,
        True,
        None,
        None,
        [None, None, None, None, NO_PV, NO_PV],
        [25, 25, 50, 50, 0, 0],
    ),
    (
        "zonal volumes with close capacity are preferred (custom shape)",
        pod_with("pvc-a"),
        ZONAL_NODES,
        [make_pvc("pvc-a", "wait-sc", storage="50Gi")],
        ZONAL_PVS,
        True,
        CUSTOM_SHAPE,
        None,
        [None, None, None, None, NO_PV, NO_PV],
        [15, 15, 30, 30, 0, 0],
    ),
    (
        "scores stay 0 without the gate",
        pod_with("pvc-a"),
        A_NODES,
        [make_pvc("pvc-a", "wait-sc", storage="50Gi")],
        LOCAL_PVS,
        False,
        None,
        None,
        [None, None, NO_PV],
        [0, 0, 0],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "pvcs", "pvs", "gate", "args", "want_pre", "want_filters", "want_scores"),
    TABLE,
    ids=[c[0] for c in TABLE],
)
def test_volume_binding(
    name: str,
    pod: dict[str, Any],
    nodes: list[NodeInfo],
    pvcs: list[Any],
    pvs: list[Any],
    gate: bool,
    args: dict[str, Any] | None,
    want_pre: Status | None,
    want_filters: list[Any] | None,
    want_scores: list[int] | None,
) -> None:
    p = plugin(objects(pvcs, pvs), gate, args)
    state, pre, filters, scores = run_cycle(p, pod, nodes)
    assert pre == want_pre
    if pre is None:
        assert filters == want_filters
        assert scores == want_scores
        assert (p.pre_score(state, pod, nodes) is None) == (gate and any(s > 0 for s in want_scores))


# -- binder_test-style cases: matching and provisioning ------------------------------------------------------------


def find(pod: dict[str, Any], pvcs: list[Any], pvs: list[Any], ni: NodeInfo, **extra: list[Any]) -> Status | None:
    p = plugin(objects(pvcs, pvs, extra))
    state = CycleState()
    _, pre = p.pre_filter(state, pod, [ni])
    assert pre is None
    return p.filter(state, pod, ni)


FIND_CASES: list[tuple[Any, ...]] = [
    # (name, claims, pvs, node labels, Filter)
    (
        "smallest fitting pv",
        [make_pvc("c", "wait-sc", storage="5Gi")],
        [make_pv("big", "wait-sc", capacity="10Gi")],
        {},
        None,
    ),
    (
        "pv too small",
        [make_pvc("c", "wait-sc", storage="5Gi")],
        [make_pv("small", "wait-sc", capacity="1Gi")],
        {},
        NO_PV,
    ),
    (
        "pv of another class",
        [make_pvc("c", "wait-sc", storage="1Gi")],
        [make_pv("x", "wait-hdd-sc", capacity="1Gi")],
        {},
        NO_PV,
    ),
    ("pv not available", [make_pvc("c", "wait-sc")], [make_pv("x", "wait-sc", phase="Released")], {}, NO_PV),
    (
        "pv claimed by another claim",
        [make_pvc("c", "wait-sc")],
        [make_pv("x", "wait-sc", claimRef={"name": "other", "namespace": "default"})],
        {},
        NO_PV,
    ),
    (
        "pv pre-bound to this claim",
        [make_pvc("c", "wait-sc")],
        [make_pv("x", "wait-sc", phase="Pending", claimRef={"name": "c", "namespace": "default"})],
        {},
        None,
    ),
    (
        "pv pre-bound to this claim, wrong node",
        [make_pvc("c", "wait-sc")],
        [
            make_pv("x", "wait-sc", claimRef={"name": "c", "namespace": "default"}, affinity={HOSTNAME: ["other"]}),
            make_pv("y", "wait-sc"),
        ],
        {},
        NO_PV,
    ),
    (
        "access modes not satisfied",
        [make_pvc("c", "wait-sc", accessModes=["ReadWriteOnce", "ReadOnlyMany"])],
        [make_pv("x", "wait-sc", accessModes=["ReadWriteOnce"])],
        {},
        NO_PV,
    ),
    (
        "access modes satisfied",
        [make_pvc("c", "wait-sc", accessModes=["ReadWriteOnce"])],
        [make_pv("x", "wait-sc", accessModes=["ReadWriteOnce", "ReadOnlyMany"])],
        {},
        None,
    ),
    ("volume mode mismatch", [make_pvc("c", "wait-sc", volumeMode="Block")], [make_pv("x", "wait-sc")], {}, NO_PV),
    (
        "selector matches",
        [make_pvc("c", "wait-sc", selector={"matchLabels": {"tier": "gold"}})],
        [{**make_pv("x", "wait-sc"), "metadata": {"name": "x", "labels": {"tier": "gold"}}}],
        {},
        None,
    ),
    (
        "selector does not match",
        [make_pvc("c", "wait-sc", selector={"matchLabels": {"tier": "gold"}})],
        [make_pv("x", "wait-sc")],
        {},
        NO_PV,
    ),
    (
        "two claims cannot share one pv",
        [make_pvc("c1", "wait-sc", storage="1Gi"), make_pvc("c2", "wait-sc", storage="1Gi")],
        [make_pv("x", "wait-sc", capacity="1Gi")],
        {},
        NO_PV,
    ),
    ("provisioning", [make_pvc("c", "provision-sc")], [], {}, None),
    ("no provisioner", [make_pvc("c", "wait-sc")], [], {}, NO_PV),
    ("provisioning not supported", [make_pvc("c", "local-sc")], [], {}, NO_PV),
    ("allowed topology matches", [make_pvc("c", "topology-sc")], [], {ZONE: "zone-a"}, None),
    ("allowed topology does not match", [make_pvc("c", "topology-sc")], [], {ZONE: "zone-b"}, NO_PV),
    (
        "provisioning started on this node",
        [make_pvc("c", "provision-sc", annotations={SELECTED_NODE: "node-a"})],
        [],
        {},
        None,
    ),
    (
        "provisioning started on another node",
        [make_pvc("c", "provision-sc", annotations={SELECTED_NODE: "node-b"})],
        [],
        {},
        NO_PV,
    ),
    (
        "bound pv node affinity conflict",
        [make_pvc("c", "wait-sc", bound_pv="x")],
        [make_pv("x", "wait-sc", affinity={HOSTNAME: ["node-b"]})],
        {},
        unresolvable(ERR_REASON_NODE_CONFLICT),
    ),
]


@pytest.mark.parametrize(("name", "claims", "pvs", "labels", "want"), FIND_CASES, ids=[c[0] for c in FIND_CASES])
def test_find_pod_volumes(name: str, claims: list[Any], pvs: list[Any], labels: dict[str, str], want: Any) -> None:
    pod = pod_with(*(c["metadata"]["name"] for c in claims))
    assert find(pod, claims, pvs, node("node-a", **labels)) == want


CAPACITY_DRIVER = {"metadata": {"name": "capacity.csi.example.com"}, "spec": {"storageCapacity": True}}


def capacity(size: str, zone: str, max_size: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": f"cap-{zone}-{size}", "namespace": "kube-system"},
        "storageClassName": "capacity-sc",
        "capacity": size,
        "nodeTopology": {"matchLabels": {ZONE: zone}},
    }
    if max_size is not None:
        obj["maximumVolumeSize"] = max_size
    return obj


@pytest.mark.parametrize(
    ("name", "driver", "capacities", "want"),
    [
        ("driver without capacity tracking", {"metadata": {"name": "capacity.csi.example.com"}, "spec": {}}, [], None),
        ("no capacity objects", CAPACITY_DRIVER, [], unresolvable(ERR_REASON_NOT_ENOUGH_SPACE)),
        ("enough capacity", CAPACITY_DRIVER, [capacity("10Gi", "zone-a")], None),
        (
            "too little capacity",
            CAPACITY_DRIVER,
            [capacity("1Gi", "zone-a")],
            unresolvable(ERR_REASON_NOT_ENOUGH_SPACE),
        ),
        (
            "capacity elsewhere",
            CAPACITY_DRIVER,
            [capacity("10Gi", "zone-b")],
            unresolvable(ERR_REASON_NOT_ENOUGH_SPACE),
        ),
        (
            "maximum volume size wins",
            CAPACITY_DRIVER,
            [capacity("10Gi", "zone-a", max_size="1Gi")],
            unresolvable(ERR_REASON_NOT_ENOUGH_SPACE),
        ),
    ],
)
def test_storage_capacity(name: str, driver: dict[str, Any], capacities: list[Any], want: Any) -> None:
    claim = make_pvc("c", "capacity-sc", storage="5Gi")
    got = find(
        pod_with("c"),
        [claim],
        [],
        node("node-a", **{ZONE: "zone-a"}),
        csidrivers=[driver],
        csistoragecapacities=capacities,
    )
    assert got == want


def _ephemeral_pod() -> dict[str, Any]:
    p = make_pod("abc", volumes=[{"name": "xyz", "ephemeral": {}}])
    p["metadata"]["uid"] = "pod-uid"
    return p


@pytest.mark.parametrize(
    ("name", "claim", "want"),
    [
        (
            "ephemeral claim not created yet",
            None,
            unresolvable('waiting for ephemeral volume controller to create the persistentvolumeclaim "abc-xyz"'),
        ),
        (
            "ephemeral claim of someone else",
            make_pvc("abc-xyz", "provision-sc"),
            unresolvable("PVC default/abc-xyz was not created for pod default/abc (pod is not owner)"),
        ),
        (
            "ephemeral claim being deleted",
            {
                **make_pvc("abc-xyz", "provision-sc"),
                "metadata": {"name": "abc-xyz", "namespace": "default", "deletionTimestamp": "2024-01-01T00:00:00Z"},
            },
            unresolvable('persistentvolumeclaim "abc-xyz" is being deleted'),
        ),
        ("own ephemeral claim", None, None),
    ],
)
def test_ephemeral_claims(name: str, claim: Any, want: Any) -> None:
    pod = _ephemeral_pod()
    pvcs = [claim] if claim is not None else []
    if name == "own ephemeral claim":
        own = make_pvc("abc-xyz", "provision-sc")
        own["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "abc", "uid": "pod-uid", "controller": True}]
        pvcs = [own]
    _, pre = plugin(objects(pvcs, [])).pre_filter(CycleState(), pod, [node("node-a")])
    assert pre == want
