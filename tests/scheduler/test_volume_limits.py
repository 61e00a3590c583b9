"""NodeVolumeLimits (CSI volume limits): counting, limit sources, in-tree migration, ephemeral volumes, hints
(cases re-expressed from upstream's nodevolumelimits/csi_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.scheduler.framework.handle import FrameworkHandle, StaticLister
from pyk8s.scheduler.framework.interface import CSI_NODE, POD, PVC, ActionType, Code, QueueingHint, Status
from pyk8s.scheduler.framework.types import NodeInfo
from pyk8s.scheduler.plugins.nodevolumelimits import (
    CSI_NAME,
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NodeVolumeLimits,
    csi_attach_limit_key,
    is_schedulable_after_pod_deleted,
    is_schedulable_after_pvc_added,
    translated_handle,
)

from .wrappers import make_pod

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
AWS_INTREE = "kubernetes.io/aws-ebs"
HOSTPATH_INTREE = "kubernetes.io/hostpath"
SC_NAME = "csi-sc"
NODE_NAME = "node-for-max-pd-test-1"

EXCEEDED = Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
SKIP = Status(Code.SKIP)


def pvc_vol(claim: str) -> dict[str, Any]:
    return {"name": claim, "persistentVolumeClaim": {"claimName": claim}}


def pod(*claims: str, extra: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    vols = [pvc_vol(c) for c in claims] + list(extra or [])
    return make_pod(kw.pop("name", "p"), volumes=vols or None, **kw)


def fake_objects(drivers: list[str], extra_claims: list[dict[str, Any]] | None = None) -> StaticLister:
    """Upstream's fixtures: per driver four PVs/PVCs "csi-<driver>-<j>" bound to each other, "csi-4" unbound with
    the class, "csi-5" unbound without a class, "csi-6" naming a PV that does not exist."""
    pvs, pvcs = [], []
    for driver in drivers:
        for j in range(4):
            name = f"csi-{driver}-{j}"
            if driver == AWS_INTREE:
                source: dict[str, Any] = {"awsElasticBlockStore": {"volumeID": name}}
            elif driver == HOSTPATH_INTREE:
                source = {"hostPath": {"path": "/tmp"}}
            else:
                source = {"csi": {"driver": driver, "volumeHandle": name}}
            pvs.append({"metadata": {"name": name}, "spec": source})
            pvcs.append({"metadata": {"name": name, "namespace": "default"}, "spec": {"volumeName": name}})
    pvcs += [
        {"metadata": {"name": "csi-4", "namespace": "default"}, "spec": {"storageClassName": SC_NAME}},
        {"metadata": {"name": "csi-5", "namespace": "default"}, "spec": {}},
        {
            "metadata": {"name": "csi-6", "namespace": "default"},
            "spec": {"storageClassName": SC_NAME, "volumeName": "missing-in-action"},
        },
        *(extra_claims or []),
    ]
    sc = {"metadata": {"name": SC_NAME}, "provisioner": drivers[0]}
    return StaticLister({"persistentvolumes": pvs, "persistentvolumeclaims": pvcs, "storageclasses": [sc]})


def node_and_csinode(
    limit_source: str, pods: list[dict[str, Any]], limit: int, drivers: list[str]
) -> tuple[NodeInfo, dict[str, Any] | None]:
    allocatable: dict[str, str] = {}
    csi_node: dict[str, Any] | None = None
    if limit_source in ("node", "both"):
        for d in drivers:
            allocatable[csi_attach_limit_key(d)] = str(limit if limit_source == "node" else limit * 10)
    if limit_source in ("csinode", "csinode-with-no-limit", "both", "no-csi-driver"):
        entries = []
        if limit_source != "no-csi-driver":
            for d in drivers:
                entry: dict[str, Any] = {"name": d, "nodeID": NODE_NAME}
                if limit_source != "csinode-with-no-limit":
                    entry["allocatable"] = {"count": limit}
                entries.append(entry)
        csi_node = {
            "metadata": {
                "name": NODE_NAME,
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": AWS_INTREE},
            },
            "spec": {"drivers": entries},
        }
    node = {"metadata": {"name": NODE_NAME}, "status": {"allocatable": allocatable}}
    return NodeInfo(node, pods), csi_node


RUNNING = pod("csi-ebs.csi.aws.com-3", name="running")
PENDING = pod("csi-4", name="pending")
UNBOUND_2 = pod("csi-4", name="unbound-2")
MISSING_PV = pod("csi-6", name="missing-pv")
NO_SC = pod("csi-5", name="no-sc")
GCE_TWO = pod("csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2", name="gce-two")
INTREE_ONE = pod("csi-kubernetes.io/aws-ebs-0", name="intree-one")
INTREE_TWO = pod("csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2", name="intree-two")
EBS_ONE = pod("csi-ebs.csi.aws.com-0", name="ebs-one")
EBS_TWO = pod("csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2", name="ebs-two")
NON_MIGRATABLE = pod("csi-kubernetes.io/hostpath-0", name="hostpath")
INLINE = pod(extra=[{"name": "aws", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}], name="inline")
INLINE_SAME_ID = pod(extra=[{"name": "aws", "awsElasticBlockStore": {"volumeID": "csi-ebs.csi.aws.com-1"}}])
CONFIG_AND_SECRET = [{"name": "cm", "configMap": {"name": "x"}}, {"name": "s", "secret": {"secretName": "y"}}]
ONLY_CONFIG = pod(extra=CONFIG_AND_SECRET)
PVC_WITH_CONFIG = pod("csi-ebs.csi.aws.com-0", extra=CONFIG_AND_SECRET)
INLINE_WITH_CONFIG = pod(
    extra=[*CONFIG_AND_SECRET, {"name": "aws", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}]
)


def _ephemeral_pod(uid: str, *names: str) -> dict[str, Any]:
    p = make_pod("abc", namespace="test", volumes=[{"name": n, "ephemeral": {}} for n in names])
    p["metadata"]["uid"] = uid
    return p


def _claim_for(p: dict[str, Any], volume: str, owned: bool = True) -> dict[str, Any]:
    md: dict[str, Any] = {"name": f"{p['metadata']['name']}-{volume}", "namespace": p["metadata"]["namespace"]}
    if owned:
        md["ownerReferences"] = [{"kind": "Pod", "name": "abc", "uid": p["metadata"]["uid"], "controller": True}]
    return {"metadata": md, "spec": {"storageClassName": SC_NAME}}


EPHEMERAL = _ephemeral_pod("12345", "xyz")
EPHEMERAL_CLAIM = _claim_for(EPHEMERAL, "xyz")
CONFLICTING_CLAIM = _claim_for(EPHEMERAL, "xyz", owned=False)
EPHEMERAL_TWO = _ephemeral_pod("12345II", "x", "y")
EPHEMERAL_CLAIMS_XY = [_claim_for(EPHEMERAL_TWO, "x"), _claim_for(EPHEMERAL_TWO, "y")]
EPHEMERAL_WITH_CONFIG = make_pod(
    "abc", namespace="test", volumes=[*CONFIG_AND_SECRET, {"name": "xyz", "ephemeral": {}}]
)
MISSING_EPHEMERAL = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'
)

CASES: list[tuple[Any, ...]] = [
    # (name, new pod, existing pods, max volumes, drivers, limit source, extra claims, PreFilter, Filter)
    ("fits when limit >= volumes", EBS_ONE, [RUNNING, EBS_TWO], 4, [EBS], "csinode", [], None, None),
    ("exceeds when limit < volumes", EBS_ONE, [RUNNING, EBS_TWO], 2, [EBS], "csinode", [], None, EXCEEDED),
    ("driver without limits", EBS_ONE, [RUNNING, EBS_TWO], 2, [EBS], "csinode-with-no-limit", [], None, None),
    ("limit from node allocatable fits", EBS_ONE, [RUNNING, EBS_TWO], 4, [EBS], "node", [], None, None),
    ("limit from node allocatable exceeded", EBS_ONE, [RUNNING, EBS_TWO], 2, [EBS], "node", [], None, EXCEEDED),
    ("csinode limit overrides node", EBS_ONE, [RUNNING, EBS_TWO], 2, [EBS], "both", [], None, EXCEEDED),
    ("no limits anywhere", EBS_ONE, [RUNNING, EBS_TWO], 2, [EBS], "none", [], None, None),
    ("csinode without drivers", EBS_ONE, [RUNNING, EBS_TWO], 2, [EBS], "no-csi-driver", [], None, None),
    ("pending pvcs count", EBS_ONE, [PENDING, EBS_TWO], 2, [EBS], "csinode", [], None, EXCEEDED),
    ("same pending pvc counts once", EBS_ONE, [PENDING, UNBOUND_2, EBS_TWO], 4, [EBS], "csinode", [], None, None),
    ("missing pv counted by class", EBS_ONE, [MISSING_PV, EBS_TWO], 2, [EBS], "csinode", [], None, EXCEEDED),
    ("missing class not counted", EBS_ONE, [RUNNING, NO_SC], 2, [EBS], "csinode", [], None, None),
    ("same driver counted together", EBS_ONE, [GCE_TWO, EBS_TWO], 2, [EBS, GCE], "csinode", [], None, EXCEEDED),
    ("other driver not counted", GCE_TWO, [EBS_TWO, RUNNING], 2, [EBS, GCE], "csinode", [], None, None),
    ("in-tree counted when migrated", INTREE_ONE, [INTREE_TWO], 2, [AWS_INTREE, EBS], "csinode", [], None, EXCEEDED),
    ("nil csi node", INLINE, [INTREE_TWO], 0, [AWS_INTREE, EBS], "none", [], None, None),
    ("unbound in-tree counted", PENDING, [INTREE_TWO], 2, [AWS_INTREE, EBS], "csinode", [], None, EXCEEDED),
    ("in-tree without limits", INTREE_ONE, [INTREE_TWO], 2, [AWS_INTREE, EBS], "csinode-with-no-limit", [], None, None),
    ("non-migratable not counted", NON_MIGRATABLE, [EBS_TWO], 2, [HOSTPATH_INTREE, EBS], "csinode", [], None, None),
    ("inline counted", INLINE, [INTREE_TWO], 2, [AWS_INTREE, EBS], "csinode", [], None, EXCEEDED),
    ("in-tree and csi mixed", INTREE_ONE, [EBS_TWO], 2, [AWS_INTREE, EBS], "csinode", [], None, EXCEEDED),
    ("inline, in-tree and csi", INLINE, [EBS_TWO, INTREE_ONE], 3, [AWS_INTREE, EBS], "csinode", [], None, EXCEEDED),
    (
        "inline same handle as csi",
        INLINE_SAME_ID,
        [EBS_TWO, INTREE_ONE],
        3,
        [AWS_INTREE, EBS],
        "csinode",
        [],
        None,
        None,
    ),
    ("csi with in-tree existing", EBS_ONE, [INTREE_TWO], 2, [AWS_INTREE, EBS], "csinode", [], None, EXCEEDED),
    ("ephemeral missing", EPHEMERAL, [], 0, [EBS], "csinode-with-no-limit", [], None, MISSING_EPHEMERAL),
    (
        "ephemeral not owned",
        EPHEMERAL,
        [],
        0,
        [EBS],
        "csinode-with-no-limit",
        [CONFLICTING_CLAIM],
        None,
        Status(Code.ERROR, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
    ),
    ("ephemeral unbound", EPHEMERAL, [], 0, [EBS], "csinode-with-no-limit", [EPHEMERAL_CLAIM], None, None),
    ("ephemeral exceeds", EPHEMERAL, [RUNNING, EBS_TWO], 2, [EBS], "csinode", [EPHEMERAL_CLAIM], None, EXCEEDED),
    (
        "existing ephemeral counted",
        EBS_ONE,
        [RUNNING, EPHEMERAL_TWO],
        2,
        [EBS],
        "csinode",
        EPHEMERAL_CLAIMS_XY,
        None,
        EXCEEDED,
    ),
    (
        "ephemeral + pvc exceeds",
        EBS_ONE,
        [RUNNING, EPHEMERAL, EBS_TWO],
        3,
        [EBS],
        "csinode",
        [EPHEMERAL_CLAIM],
        None,
        EXCEEDED,
    ),
    (
        "ephemeral + pvc fits",
        EBS_ONE,
        [RUNNING, EPHEMERAL, EBS_TWO],
        5,
        [EBS],
        "csinode",
        [EPHEMERAL_CLAIM],
        None,
        None,
    ),
    ("only configmaps and secrets", ONLY_CONFIG, [], 2, [EBS], "csinode", [], SKIP, None),
    ("pvc with configmaps", PVC_WITH_CONFIG, [], 2, [EBS], "csinode", [], None, None),
    (
        "ephemeral with configmaps",
        EPHEMERAL_WITH_CONFIG,
        [],
        0,
        [EBS],
        "csinode-with-no-limit",
        [],
        None,
        MISSING_EPHEMERAL,
    ),
    ("inline with configmaps", INLINE_WITH_CONFIG, [INTREE_TWO], 2, [AWS_INTREE, EBS], "csinode", [], None, EXCEEDED),
    ("pod without volumes", make_pod("p"), [EBS_TWO], 1, [EBS], "csinode", [], SKIP, None),
    (
        "missing pvc",
        pod("nope"),
        [],
        1,
        [EBS],
        "csinode",
        [],
        None,
        Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'looking up PVC default/nope: persistentvolumeclaim "nope" not found'
        ),
    ),
    (
        "claim without name",
        pod(""),
        [],
        1,
        [EBS],
        "csinode",
        [],
        None,
        Status(Code.ERROR, "PersistentVolumeClaim had no name"),
    ),
]


@pytest.mark.parametrize(
    ("name", "new_pod", "existing", "max_vols", "drivers", "source", "extra", "want_pre", "want_filter"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_csi_limits(
    name: str,
    new_pod: dict[str, Any],
    existing: list[dict[str, Any]],
    max_vols: int,
    drivers: list[str],
    source: str,
    extra: list[dict[str, Any]],
    want_pre: Any,
    want_filter: Any,
) -> None:
    ni, csi_node = node_and_csinode(source, existing, max_vols, drivers)
    objects = fake_objects(drivers, extra)
    if csi_node is not None:
        objects.add("csinodes", csi_node)
    p = NodeVolumeLimits.new(None, FrameworkHandle(objects=objects))
    assert p.name == CSI_NAME == "NodeVolumeLimits"
    _, pre = p.pre_filter(None, new_pod, [ni])  # type: ignore[arg-type]
    assert pre == want_pre
    if pre is None:
        assert p.filter(None, new_pod, ni) == want_filter  # type: ignore[arg-type]


PORTWORX = "pxd.portworx.com"
PORTWORX_INTREE = "kubernetes.io/portworx-volume"


def _portworx_pod(name: str, *volume_ids: str, claims: tuple[str, ...] = ()) -> dict[str, Any]:
    extra = [{"name": f"px{i}", "portworxVolume": {"volumeID": v}} for i, v in enumerate(volume_ids)]
    return pod(*claims, extra=extra, name=name)


# (name, new pod, migrated plugins the CSINode names, CSIMigrationPortworx, want) — a node taking 1 Portworx volume
# that already has one (px-1) attached in-tree
PORTWORX_CASES = [
    ("migrated on the node: counted under pxd.portworx.com", _portworx_pod("new", "px-2"),
     f"{AWS_INTREE},{PORTWORX_INTREE}", True, EXCEEDED),
    ("the same volume is attached once", _portworx_pod("new", "px-1"), PORTWORX_INTREE, True, None),
    ("not migrated on the node: not counted", _portworx_pod("new", "px-2"), AWS_INTREE, True, None),
    ("gate off: not counted", _portworx_pod("new", "px-2"), PORTWORX_INTREE, False, None),
    ("a claim bound to an in-tree Portworx PV", _portworx_pod("new", claims=("px-claim",)), PORTWORX_INTREE, True,
     EXCEEDED),
]  # fmt: skip


@pytest.mark.parametrize(("name", "new_pod", "migrated", "gate", "want"), PORTWORX_CASES,
                         ids=[c[0] for c in PORTWORX_CASES])  # fmt: skip
def test_portworx_migration(name: str, new_pod: dict[str, Any], migrated: str, gate: bool, want: Any) -> None:
    ni, csi_node = node_and_csinode("csinode", [_portworx_pod("running", "px-1")], 1, [PORTWORX])
    assert csi_node is not None
    csi_node["metadata"]["annotations"]["storage.alpha.kubernetes.io/migrated-plugins"] = migrated
    objects = fake_objects([PORTWORX])
    objects.add("csinodes", csi_node)
    objects.add("persistentvolumes", {"metadata": {"name": "px-pv"}, "spec": {"portworxVolume": {"volumeID": "px-3"}}})
    objects.add("persistentvolumeclaims", {"metadata": {"name": "px-claim", "namespace": "default"},
                                           "spec": {"volumeName": "px-pv"}})  # fmt: skip
    p = NodeVolumeLimits.new(None, FrameworkHandle(objects=objects, feature_gates={"CSIMigrationPortworx": gate}))
    assert p.filter(None, new_pod, ni) == want  # type: ignore[arg-type]


def test_attach_limit_key() -> None:
    assert csi_attach_limit_key("ebs.csi.aws.com") == "attachable-volumes-csi-ebs.csi.aws.com"
    long_name = "a-very-long-csi-driver-name.example.storage.company.com"
    key = csi_attach_limit_key(long_name)
    assert key.startswith("attachable-volumes-csi-a-very-long-csi-driver") and len(key) == 23 + 23 + 16


@pytest.mark.parametrize(
    ("key", "source", "pv_labels", "want"),
    [
        ("awsElasticBlockStore", {"volumeID": "vol-1"}, None, "vol-1"),
        ("awsElasticBlockStore", {"volumeID": "aws://us-east-1a/vol-2"}, None, "vol-2"),
        ("gcePersistentDisk", {"pdName": "d"}, None, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d"),
        (
            "gcePersistentDisk",
            {"pdName": "d"},
            {"topology.kubernetes.io/zone": "us-c1-a"},
            "projects/UNSPECIFIED/zones/us-c1-a/disks/d",
        ),
        (
            "gcePersistentDisk",
            {"pdName": "d"},
            {"topology.kubernetes.io/zone": "us-c1-a__us-c1-b"},
            "projects/UNSPECIFIED/regions/us-c1/disks/d",
        ),
        ("azureDisk", {"diskName": "x", "diskURI": "uri"}, None, "uri"),
        ("cinder", {"volumeID": "c"}, None, "c"),
        ("portworxVolume", {"volumeID": "px"}, None, "px"),
    ],
)
def test_translated_handles(key: str, source: dict[str, Any], pv_labels: Any, want: str) -> None:
    pv = None if pv_labels is None else {"metadata": {"name": "pv", "labels": pv_labels}}
    assert translated_handle(key, source, pv) == want


def test_bad_inline_ebs_id_is_an_error() -> None:
    bad = pod(extra=[{"name": "aws", "awsElasticBlockStore": {"volumeID": "aws://zone/not-a-volume"}}])
    ni, csi_node = node_and_csinode("csinode", [], 2, [EBS])
    objects = fake_objects([EBS])
    objects.add("csinodes", csi_node)  # type: ignore[arg-type]
    st = NodeVolumeLimits.new(None, FrameworkHandle(objects=objects)).filter(None, bad, ni)  # type: ignore[arg-type]
    assert st is not None and st.code == Code.ERROR and st.message().startswith("converting volume(aws) from inline")


@pytest.mark.parametrize(
    ("name", "deleted", "scheduled", "want"),
    [
        ("deleted pod with a pvc", pod("placeholder"), True, QueueingHint.QUEUE),
        (
            "deleted pod with inline migratable volume",
            pod(extra=[{"name": "a", "awsElasticBlockStore": {}}]),
            True,
            QueueingHint.QUEUE,
        ),
        ("deleted pod without volumes", make_pod("x"), True, QueueingHint.SKIP),
        ("deleted pod not scheduled", pod("csi-ebs.csi.aws.com-0"), False, QueueingHint.SKIP),
    ],
)
def test_hint_pod_deleted(name: str, deleted: dict[str, Any], scheduled: bool, want: QueueingHint) -> None:
    if scheduled:
        deleted["spec"]["nodeName"] = NODE_NAME
    assert is_schedulable_after_pod_deleted(pod("csi-ebs.csi.aws.com-2"), deleted, None) == want


def _claim(name: str, namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {}}


@pytest.mark.parametrize(
    ("name", "new_pod", "added", "want"),
    [
        ("other namespace", make_pod("p", namespace="ns1"), _claim("pvc1", "ns2"), QueueingHint.SKIP),
        ("pod's claim", pod("pvc1", namespace="ns1"), _claim("pvc1", "ns1"), QueueingHint.QUEUE),
        (
            "pod's ephemeral claim",
            make_pod("pod1", namespace="ns1", volumes=[{"name": "ephemeral", "ephemeral": {}}]),
            _claim("pod1-ephemeral", "ns1"),
            QueueingHint.QUEUE,
        ),
        ("another claim", pod("pvc1", namespace="ns1"), _claim("pvc2", "ns1"), QueueingHint.SKIP),
        ("pod without claims", make_pod("p", namespace="ns1"), _claim("pvc2", "ns1"), QueueingHint.SKIP),
    ],
)
def test_hint_pvc_added(name: str, new_pod: dict[str, Any], added: dict[str, Any], want: QueueingHint) -> None:
    assert is_schedulable_after_pvc_added(new_pod, None, added) == want


def test_events_to_register() -> None:
    events = {e.event.resource: e for e in NodeVolumeLimits.new(None, FrameworkHandle()).events_to_register()}
    assert set(events) == {CSI_NODE, POD, PVC}
    assert events[CSI_NODE].event.action == ActionType.ADD and events[CSI_NODE].hint is None
    assert events[POD].event.action == ActionType.DELETE
    assert events[PVC].event.action == ActionType.ADD
