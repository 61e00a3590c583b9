"""VolumeRestrictions: disk conflicts, ReadWriteOncePod claims, preemption updates and queueing hints (cases
re-expressed from upstream's volumerestrictions/volume_restrictions_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.scheduler.framework.handle import FrameworkHandle, StaticLister
from pyk8s.scheduler.framework.interface import NODE, POD, PVC, ActionType, Code, CycleState, QueueingHint, Status
from pyk8s.scheduler.framework.types import NodeInfo, PodInfo
from pyk8s.scheduler.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
    is_schedulable_after_pod_deleted,
    is_schedulable_after_pvc_added,
)

from .wrappers import make_node, make_pod

GCE = {"name": "v", "gcePersistentDisk": {"pdName": "foo"}}
GCE2 = {"name": "v", "gcePersistentDisk": {"pdName": "bar"}}
GCE_RO = {"name": "v", "gcePersistentDisk": {"pdName": "foo", "readOnly": True}}
EBS = {"name": "v", "awsElasticBlockStore": {"volumeID": "foo"}}
EBS2 = {"name": "v", "awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"name": "v", "rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD2 = {"name": "v", "rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD_OVERLAP = {"name": "v", "rbd": {"monitors": ["b", "z"], "pool": "foo", "image": "bar"}}
ISCSI = {"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01"}}
ISCSI2 = {"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01"}}
ISCSI_RO = {"name": "v", "iscsi": {"iqn": "iqn.2016-12.server:storage.target01", "readOnly": True}}
NO_RESTRICTION = {"name": "volume with no restriction", "emptyDir": {}}

SKIP = Status(Code.SKIP)
DISK_CONFLICT = Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
RWOP_CONFLICT = Status(Code.UNSCHEDULABLE, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)


def pvc_vol(claim: str) -> dict[str, Any]:
    return {"name": claim, "persistentVolumeClaim": {"claimName": claim}}


def make_pvc(name: str, *modes: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"accessModes": list(modes)},
    }


def plugin(pvcs: list[dict[str, Any]] | None = None, gates: dict[str, bool] | None = None) -> VolumeRestrictions:
    handle = FrameworkHandle(objects=StaticLister({"persistentvolumeclaims": pvcs or []}), feature_gates=gates)
    return VolumeRestrictions.new(None, handle)


def run(p: VolumeRestrictions, pod: dict[str, Any], node_info: NodeInfo, nodes: list[NodeInfo] | None = None):
    state = CycleState()
    _, pre = p.pre_filter(state, pod, nodes if nodes is not None else [node_info])
    if pre is not None:
        return state, pre, None
    return state, pre, p.filter(state, pod, node_info)


def with_vols(*vols: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return make_pod(kw.pop("name", "p"), volumes=list(vols), **kw)


DISK_CASES = [
    # (name, pod volumes, existing pod volumes or None for an empty node, PreFilter, Filter)
    ("gce nothing", [], None, SKIP, None),
    ("gce one state", [], [GCE], SKIP, None),
    ("gce same state", [GCE], [GCE], None, DISK_CONFLICT),
    ("gce different state", [GCE2], [GCE], None, None),
    ("gce both read-only", [GCE_RO], [GCE_RO], None, None),
    ("gce one read-only", [GCE_RO], [GCE], None, DISK_CONFLICT),
    ("no restrictions volume", [NO_RESTRICTION], None, SKIP, None),
    ("aws nothing", [], None, SKIP, None),
    ("aws one state", [], [EBS], SKIP, None),
    ("aws same state", [EBS], [EBS], None, DISK_CONFLICT),
    ("aws different state", [EBS2], [EBS], None, None),
    ("rbd one state", [], [RBD], SKIP, None),
    ("rbd same state", [RBD], [RBD], None, DISK_CONFLICT),
    ("rbd different monitors", [RBD2], [RBD], None, None),
    ("rbd one shared monitor", [RBD_OVERLAP], [RBD], None, DISK_CONFLICT),
    ("iscsi one state", [], [ISCSI], SKIP, None),
    ("iscsi same state", [ISCSI], [ISCSI], None, DISK_CONFLICT),
    ("iscsi different state", [ISCSI2], [ISCSI], None, None),
    ("iscsi both read-only", [ISCSI_RO], [ISCSI_RO], None, None),
    ("mixed kinds never conflict", [GCE], [EBS], None, None),
]


@pytest.mark.parametrize(
    ("name", "vols", "existing", "want_pre", "want_filter"), DISK_CASES, ids=[c[0] for c in DISK_CASES]
)
def test_disk_conflicts(
    name: str, vols: list[dict[str, Any]], existing: list[dict[str, Any]] | None, want_pre: Any, want_filter: Any
) -> None:
    ni = NodeInfo(make_node("n1"))
    if existing is not None:
        ni.add_pod(with_vols(*existing, name="existing", node_name="n1"))
    _, pre, got = run(plugin(), with_vols(*vols), ni)
    assert pre == want_pre
    assert got == want_filter


RWOP1 = make_pvc("claim-with-rwop-1", "ReadWriteOncePod")
RWOP2 = make_pvc("claim-with-rwop-2", "ReadWriteOncePod")
RWX = make_pvc("claim-with-rwx", "ReadWriteMany")


def test_rwop_nothing_to_check() -> None:
    _, pre, _ = run(plugin(), make_pod("p"), NodeInfo(make_node("n1")))
    assert pre == SKIP


def test_rwop_missing_claim_is_unresolvable() -> None:
    pod = with_vols(pvc_vol("claim-with-rwop-1"))
    _, pre, _ = run(plugin(), pod, NodeInfo(make_node("n1")))
    assert pre == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'persistentvolumeclaim "claim-with-rwop-1" not found')


RWOP_CASES = [
    # (name, incoming claims, existing pods' claims, PreFilter, Filter)
    ("no access mode conflict", ["claim-with-rwop-1"], [["claim-with-rwx"]], SKIP, None),
    ("access mode conflict", ["claim-with-rwop-1"], [["claim-with-rwop-1"], ["claim-with-rwx"]], None, RWOP_CONFLICT),
    (
        "two conflicts",
        ["claim-with-rwop-1", "claim-with-rwop-2"],
        [["claim-with-rwop-1", "claim-with-rwop-2"], ["claim-with-rwx"]],
        None,
        RWOP_CONFLICT,
    ),
    ("rwx claim shared freely", ["claim-with-rwx"], [["claim-with-rwx"]], SKIP, None),
]


@pytest.mark.parametrize(
    ("name", "claims", "existing", "want_pre", "want_filter"), RWOP_CASES, ids=[c[0] for c in RWOP_CASES]
)
def test_read_write_once_pod(
    name: str, claims: list[str], existing: list[list[str]], want_pre: Any, want_filter: Any
) -> None:
    ni = NodeInfo(make_node("node-1"))
    for i, ex in enumerate(existing):
        ni.add_pod(with_vols(*(pvc_vol(c) for c in ex), name=f"existing-{i}", node_name="node-1"))
    pod = with_vols(*(pvc_vol(c) for c in claims))
    _, pre, got = run(plugin([RWOP1, RWOP2, RWX]), pod, ni)
    assert pre == want_pre
    assert got == want_filter


def test_rwop_conflict_is_cluster_wide() -> None:
    """A claim in use on another node still rejects every node (the count is global)."""
    other = NodeInfo(make_node("node-2"), [with_vols(pvc_vol("claim-with-rwop-1"), name="holder", node_name="node-2")])
    empty = NodeInfo(make_node("node-1"))
    _, pre, got = run(plugin([RWOP1]), with_vols(pvc_vol("claim-with-rwop-1")), empty, nodes=[empty, other])
    assert pre is None
    assert got == RWOP_CONFLICT


def test_rwop_claim_in_other_namespace_does_not_count() -> None:
    other = NodeInfo(
        make_node("node-2"),
        [with_vols(pvc_vol("claim-with-rwop-1"), name="holder", node_name="node-2", namespace="other")],
    )
    _, pre, _ = run(plugin([RWOP1]), with_vols(pvc_vol("claim-with-rwop-1")), other)
    assert pre == SKIP


def test_preemption_add_remove_pod() -> None:
    holder = with_vols(pvc_vol("claim-with-rwop-1"), name="holder", node_name="node-1")
    ni = NodeInfo(make_node("node-1"), [holder])
    p = plugin([RWOP1])
    pod = with_vols(pvc_vol("claim-with-rwop-1"))
    state, pre, got = run(p, pod, ni)
    assert pre is None and got == RWOP_CONFLICT
    what_if = state.clone()
    assert p.remove_pod(what_if, pod, PodInfo(holder), ni) is None
    assert p.filter(what_if, pod, NodeInfo(make_node("node-1"))) is None
    assert p.filter(state, pod, ni) == RWOP_CONFLICT  # the original state is untouched
    assert p.add_pod(what_if, pod, PodInfo(holder), ni) is None
    assert p.filter(what_if, pod, ni) == RWOP_CONFLICT


def test_filter_without_prefilter_state_is_an_error() -> None:
    st = plugin().filter(CycleState(), with_vols(GCE), NodeInfo(make_node("n1")))
    assert st is not None and st.code == Code.ERROR


HINT_POD_CASES = [
    ("gce conflict", [GCE], [GCE], QueueingHint.QUEUE),
    ("gce no conflict", [GCE], [GCE2], QueueingHint.SKIP),
    ("aws conflict", [EBS], [EBS], QueueingHint.QUEUE),
    ("aws no conflict", [EBS], [EBS2], QueueingHint.SKIP),
    ("rbd conflict", [RBD], [RBD], QueueingHint.QUEUE),
    ("rbd no conflict", [RBD], [RBD2], QueueingHint.SKIP),
    ("iscsi conflict", [ISCSI], [ISCSI], QueueingHint.QUEUE),
    ("iscsi no conflict", [ISCSI], [ISCSI2], QueueingHint.SKIP),
    ("same claim", [pvc_vol("claim-rwop")], [pvc_vol("claim-rwop")], QueueingHint.QUEUE),
    ("different claim", [pvc_vol("claim-1-rwop")], [pvc_vol("claim-2-rwop")], QueueingHint.SKIP),
]


@pytest.mark.parametrize(("name", "vols", "deleted", "want"), HINT_POD_CASES, ids=[c[0] for c in HINT_POD_CASES])
def test_hint_pod_deleted(name: str, vols: list[Any], deleted: list[Any], want: QueueingHint) -> None:
    assert is_schedulable_after_pod_deleted(with_vols(*vols), with_vols(*deleted, name="gone"), None) == want


def test_hint_pod_deleted_other_namespace() -> None:
    gone = with_vols(GCE, name="gone", namespace="elsewhere")
    assert is_schedulable_after_pod_deleted(with_vols(GCE), gone, None) == QueueingHint.SKIP


@pytest.mark.parametrize(
    ("name", "claims", "namespace", "added", "want"),
    [
        (
            "claim of the pod",
            ["claim-with-rwx-1", "claim-with-rwx-2"],
            "default",
            "claim-with-rwx-1",
            QueueingHint.QUEUE,
        ),
        ("unused claim", ["claim-with-rwx-1"], "default", "claim-with-rwx-2", QueueingHint.SKIP),
        ("other namespace", ["claim-with-rwx-1"], "kube-system", "claim-with-rwx-1", QueueingHint.SKIP),
    ],
)
def test_hint_pvc_added(name: str, claims: list[str], namespace: str, added: str, want: QueueingHint) -> None:
    pod = with_vols(*(pvc_vol(c) for c in claims), namespace=namespace)
    assert is_schedulable_after_pvc_added(pod, None, make_pvc(added, "ReadWriteMany")) == want


@pytest.mark.parametrize(
    ("hints", "node_actions"),
    [(True, ActionType.ADD), (False, ActionType.ADD | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL)],
)
def test_events_to_register(hints: bool, node_actions: ActionType) -> None:
    events = plugin(gates={"SchedulerQueueingHints": hints}).events_to_register()
    by_resource = {e.event.resource: e for e in events}
    assert set(by_resource) == {POD, NODE, PVC}
    assert by_resource[POD].event.action == ActionType.DELETE and by_resource[POD].hint is not None
    assert by_resource[NODE].event.action == node_actions and by_resource[NODE].hint is None
    assert by_resource[PVC].event.action == ActionType.ADD and by_resource[PVC].hint is not None
