"""Table-driven tests of the node plugins (PrioritySort, SchedulingGates, NodeName, NodeUnschedulable, NodePorts,
TaintToleration, NodeAffinity, ImageLocality, DefaultBinder) and default_normalize_score, re-expressing the cases
of upstream's v1.32 plugin tests: codes, reason strings, normalized scores, events and queueing hints."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import (
    NODE,
    POD,
    ActionType,
    Code,
    CycleState,
    NodeScore,
    QueueingHint,
    Status,
)
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import NodeInfo, PodInfo, QueuedPodInfo
from pyk8s.scheduler.plugins.defaultbinder import DefaultBinder
from pyk8s.scheduler.plugins.imagelocality import ImageLocality, normalized_image_name
from pyk8s.scheduler.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
)
from pyk8s.scheduler.plugins.nodename import ERR_REASON as NODE_NAME_REASON
from pyk8s.scheduler.plugins.nodename import NodeName
from pyk8s.scheduler.plugins.nodeports import ERR_REASON as PORTS_REASON
from pyk8s.scheduler.plugins.nodeports import NodePorts
from pyk8s.scheduler.plugins.nodeunschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable
from pyk8s.scheduler.plugins.normalize import default_normalize_score
from pyk8s.scheduler.plugins.queuesort import PrioritySort
from pyk8s.scheduler.plugins.schedulinggates import SchedulingGates
from pyk8s.scheduler.plugins.tainttoleration import TaintToleration

from .wrappers import make_node, make_pod

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
Q, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


def node(name: str = "node1", labels: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
    """A node whose labels are exactly `labels` (make_node adds a hostname label; upstream's tests have none)."""
    n = make_node(name, **kw)
    n["metadata"]["labels"] = dict(labels or {})
    return n


def pod(uid: str = "", **spec: Any) -> dict[str, Any]:
    p = make_pod("p")
    p["spec"].update(spec)
    if uid:
        p["metadata"]["uid"] = uid
    return p


def filter_status(plugin: Any, p: dict[str, Any], ni: NodeInfo, state: CycleState | None = None) -> Status | None:
    return plugin.filter(state or CycleState(), p, ni)


def scores_of(plugin: Any, p: dict[str, Any], nodes: list[dict[str, Any]], pre_score: bool = True) -> list[int]:
    snapshot = Snapshot.from_objects(nodes)
    state = CycleState()
    if pre_score:
        st = plugin.pre_score(state, p, snapshot.node_info_list)
        assert st is None or st.code == Code.SKIP, st
    scores = []
    for ni in snapshot.node_info_list:
        s, st = plugin.score(state, p, ni)
        assert st is None, st
        scores.append(NodeScore(ni.name, s))
    assert plugin.score_extensions().normalize_score(state, p, scores) is None
    return [s.score for s in scores]


def events(plugin: Any) -> list[tuple[str, ActionType, bool]]:
    return [(e.event.resource, e.event.action, e.hint is not None) for e in plugin.events_to_register()]


# -- default_normalize_score ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reverse", "raw", "want"),
    [
        (False, [1, 2, 3, 4], [25, 50, 75, 100]),
        (True, [1, 2, 3, 4], [75, 50, 25, 0]),
        (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (False, [1, 1, 1, 1], [100, 100, 100, 100]),
        (False, [1000, 1, 1, 1], [100, 0, 0, 0]),
        (True, [0, 1, 1, 1], [100, 0, 0, 0]),
        (False, [0, 0, 0, 0], [0, 0, 0, 0]),
        (True, [0, 0, 0, 0], [100, 100, 100, 100]),
    ],
)
def test_default_normalize_score(reverse, raw, want):
    scores = [NodeScore(f"n{i}", s) for i, s in enumerate(raw)]
    assert default_normalize_score(100, reverse, scores) is None
    assert [s.score for s in scores] == want


# -- PrioritySort ----------------------------------------------------------------------------------------------


def qpi(priority: int | None, ts: float) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo(make_pod("p", priority=priority)), timestamp=ts)


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        (qpi(100, 2.0), qpi(50, 1.0), True),  # higher priority first, whatever the time
        (qpi(50, 1.0), qpi(100, 2.0), False),
        (qpi(100, 1.0), qpi(100, 2.0), True),  # equal priority: earlier first
        (qpi(100, 2.0), qpi(100, 1.0), False),
        (qpi(None, 1.0), qpi(0, 1.0), False),  # unset priority counts as 0; identical is not less
        (qpi(-5, 1.0), qpi(None, 2.0), False),
    ],
)
def test_priority_sort(a, b, want):
    pl = PrioritySort.new(None, FrameworkHandle())
    assert pl.less(a, b) is want
    assert (pl.sort_key(a) < pl.sort_key(b)) is want


# -- SchedulingGates -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gates", "want"),
    [
        (None, None),
        ([], None),
        (["foo", "bar"], Status(UNRESOLVABLE, "waiting for scheduling gates: [foo bar]")),
    ],
)
def test_scheduling_gates_pre_enqueue(gates, want):
    p = pod() if gates is None else pod(schedulingGates=[{"name": g} for g in gates])
    assert SchedulingGates().pre_enqueue(p) == want


def test_scheduling_gates_events_and_hint():
    assert SchedulingGates(enable_queueing_hints=False).events_to_register() == []
    pl = SchedulingGates.new(None, FrameworkHandle())
    assert events(pl) == [(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED, True)]
    hint = pl.events_to_register()[0].hint
    target = pod(uid="uid0", schedulingGates=[{"name": "foo"}])
    assert hint(target, pod(uid="uid1", schedulingGates=[{"name": "foo"}]), pod(uid="uid1")) == SKIP
    assert hint(target, target, pod(uid="uid0")) == Q
    assert hint(target, None, "not-a-pod") == Q


# -- NodeName --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_name", "want"),
    [
        (None, None),  # no host specified
        ("node1", None),  # host matches
        ("node2", Status(UNRESOLVABLE, NODE_NAME_REASON)),  # host doesn't match
    ],
)
def test_node_name_filter(node_name, want):
    p = pod(**({"nodeName": node_name} if node_name else {}))
    assert filter_status(NodeName(), p, NodeInfo(node("node1"))) == want


def test_node_name_events():
    assert events(NodeName()) == [(NODE, ActionType.ADD, False)]
    legacy = ActionType.ADD | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
    assert events(NodeName(enable_queueing_hints=False)) == [(NODE, legacy, False)]


# -- NodeUnschedulable -----------------------------------------------------------------------------------------------

UNSCHED_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "want"),
    [
        (True, None, Status(UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE)),
        (False, None, None),
        (True, [UNSCHED_TOLERATION], None),
        (True, [{"operator": "Exists"}], None),  # tolerates everything
        (
            True,
            [{"key": "node.kubernetes.io/unschedulable", "effect": "NoExecute"}],
            Status(UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE),
        ),
    ],
)
def test_node_unschedulable_filter(unschedulable, tolerations, want):
    p = pod(**({"tolerations": tolerations} if tolerations else {}))
    assert filter_status(NodeUnschedulable(), p, NodeInfo(node(unschedulable=unschedulable))) == want


def test_node_unschedulable_without_node():
    st = filter_status(NodeUnschedulable(), pod(), NodeInfo())
    assert st == Status(UNRESOLVABLE, "node(s) had unknown conditions")


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, "not-a-node", Q),
        ("not-a-node", node(), Q),
        (None, node(unschedulable=True), SKIP),  # an unschedulable node was added
        (None, node(), Q),  # a schedulable node was added
        (node(unschedulable=True), node(unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}]), SKIP),
        (node(unschedulable=True), node(), Q),  # uncordoned
        (node(), node(labels={"a": "b"}), SKIP),
    ],
)
def test_node_unschedulable_node_hint(old, new, want):
    assert NodeUnschedulable.is_schedulable_after_node_change(pod(), old, new) == want


def test_node_unschedulable_pod_hint_and_events():
    hint = NodeUnschedulable.is_schedulable_after_pod_toleration_change
    target = pod(uid="u0")
    assert hint(target, target, pod(uid="u1", tolerations=[UNSCHED_TOLERATION])) == SKIP  # another pod
    assert hint(target, target, pod(uid="u0", tolerations=[UNSCHED_TOLERATION])) == Q
    assert hint(target, target, pod(uid="u0", tolerations=[{"key": "other", "operator": "Exists"}])) == SKIP
    assert events(NodeUnschedulable()) == [
        (NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT, True),
        (POD, ActionType.UPDATE_POD_TOLERATIONS, True),
    ]
    legacy = ActionType.ADD | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
    assert events(NodeUnschedulable(enable_queueing_hints=False)) == [(NODE, legacy, True)]


# -- NodePorts ---------------------------------------------------------------------------------------------------------


def port_pod(*specs: str, node_name: str = "m1", init: bool = False, sidecar: bool = False) -> dict[str, Any]:
    """A pod with ports given as "PROTO/hostIP/hostPort", as upstream's newPod helper."""
    ports = []
    for s in specs:
        proto, ip, hp = s.split("/")
        ports.append({"containerPort": int(hp), "hostPort": int(hp), "hostIP": ip, "protocol": proto})
    p = make_pod("p", node_name=node_name)
    if init:
        c: dict[str, Any] = {"name": "init", "image": "pause", "ports": ports}
        if sidecar:
            c["restartPolicy"] = "Always"
        p["spec"]["initContainers"] = [c]
    else:
        p["spec"]["containers"][0]["ports"] = ports
    return p


NODE_PORTS_CASES = [
    ("skip filter", make_pod("p"), [], Status(Code.SKIP), None),
    ("other port", port_pod("UDP/127.0.0.1/8080"), ["UDP/127.0.0.1/9090"], None, None),
    (
        "same udp port",
        port_pod("UDP/127.0.0.1/8080"),
        ["UDP/127.0.0.1/8080"],
        None,
        Status(Code.UNSCHEDULABLE, PORTS_REASON),
    ),
    (
        "same tcp port",
        port_pod("TCP/127.0.0.1/8080"),
        ["TCP/127.0.0.1/8080"],
        None,
        Status(Code.UNSCHEDULABLE, PORTS_REASON),
    ),
    ("different host ip", port_pod("TCP/127.0.0.1/8080"), ["TCP/127.0.0.2/8080"], None, None),
    ("different protocol", port_pod("UDP/127.0.0.1/8080"), ["TCP/127.0.0.1/8080"], None, None),
    (
        "second udp port conflict",
        port_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        ["UDP/127.0.0.1/8080"],
        None,
        Status(Code.UNSCHEDULABLE, PORTS_REASON),
    ),
    (
        "first tcp port conflict",
        port_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
        None,
        Status(Code.UNSCHEDULABLE, PORTS_REASON),
    ),
    (
        "first tcp port conflict due to 0.0.0.0 hostIP",
        port_pod("TCP/0.0.0.0/8001"),
        ["TCP/127.0.0.1/8001"],
        None,
        Status(Code.UNSCHEDULABLE, PORTS_REASON),
    ),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        port_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        ["TCP/127.0.0.1/8001"],
        None,
        Status(Code.UNSCHEDULABLE, PORTS_REASON),
    ),
    (
        "second tcp port conflict to 0.0.0.0 hostIP",
        port_pod("TCP/127.0.0.1/8001"),
        ["TCP/0.0.0.0/8001"],
        None,
        Status(Code.UNSCHEDULABLE, PORTS_REASON),
    ),
    ("second different protocol", port_pod("UDP/127.0.0.1/8001"), ["TCP/0.0.0.0/8001"], None, None),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        port_pod("UDP/127.0.0.1/8001"),
        ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
        None,
        Status(Code.UNSCHEDULABLE, PORTS_REASON),
    ),
    (
        "empty hostIP and protocol default to 0.0.0.0/TCP",
        port_pod("//8001"),
        ["TCP/10.0.0.1/8001"],
        None,
        Status(Code.UNSCHEDULABLE, PORTS_REASON),
    ),
    # v1.32 looks at spec.containers only: init containers' and sidecars' host ports do not count (SIDECAR_PORT_CASES).
    ("init container hostPort", port_pod("TCP/0.0.0.0/8001", init=True), ["TCP/0.0.0.0/8001"], Status(Code.SKIP), None),
    (
        "sidecar hostPort",
        port_pod("TCP/0.0.0.0/8001", init=True, sidecar=True),
        ["TCP/0.0.0.0/8001"],
        Status(Code.SKIP),
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "p", "existing", "want_pre", "want"), NODE_PORTS_CASES, ids=[c[0] for c in NODE_PORTS_CASES]
)
def test_node_ports(name, p, existing, want_pre, want):
    pl = NodePorts()
    ni = NodeInfo(node("m1"), [port_pod(*existing)] if existing else [])
    state = CycleState()
    result, st = pl.pre_filter(state, p, [ni])
    assert result is None
    assert st == want_pre
    if st is None:
        assert pl.filter(state, p, ni) == want


# The ports an existing pod holds on its node (upstream: NodeInfo.updateUsedPorts) follow the same v1.32 rule as the
# ports a pod asks for: spec.containers only. Sidecars' host ports count from kubernetes#132040 (v1.34, backported
# to v1.33 patch releases), in both places and in the Pod/Delete hint.
SIDECAR_PORT_CASES = [
    ("regular container", port_pod("TCP/0.0.0.0/8001"), {("0.0.0.0", "TCP", 8001): 1}),
    ("init container", port_pod("TCP/0.0.0.0/8001", init=True), {}),
    ("sidecar", port_pod("TCP/0.0.0.0/8001", init=True, sidecar=True), {}),
]


@pytest.mark.parametrize(("name", "existing", "want"), SIDECAR_PORT_CASES, ids=[c[0] for c in SIDECAR_PORT_CASES])
def test_node_info_used_ports(name, existing, want):
    ni = NodeInfo(node("m1"), [existing])
    assert ni.used_ports == want
    assert ni.remove_pod(existing)
    assert ni.used_ports == {}
    # What the node holds decides Filter: a port held only by an init container or a sidecar is free in v1.32.
    pl, state, incoming = NodePorts(), CycleState(), port_pod("TCP/0.0.0.0/8001")
    ni.add_pod(existing)
    assert pl.pre_filter(state, incoming, [ni]) == (None, None)
    assert pl.filter(state, incoming, ni) == (Status(Code.UNSCHEDULABLE, PORTS_REASON) if want else None)
    # And the same for the Pod/Delete hint: deleting a pod frees only what it held.
    assert NodePorts.is_schedulable_after_pod_deleted(incoming, existing, None) == (Q if want else SKIP)


def test_node_ports_pre_filter_disabled():
    st = NodePorts().filter(CycleState(), make_pod("p"), NodeInfo(node()))
    assert st.code == Code.ERROR
    assert st.message() == 'reading "PreFilterNodePorts" from cycleState: not found'


@pytest.mark.parametrize(
    ("old", "want"),
    [
        ("not-a-pod", Q),
        (make_pod("d"), SKIP),  # the deleted pod was never scheduled
        (make_pod("d", node_name="fake-node"), SKIP),  # it held no host port
        (make_pod("d", node_name="fake-node", host_ports=[8081]), SKIP),  # an unrelated port
        (make_pod("d", node_name="fake-node", host_ports=[8080]), Q),  # the port this pod wants
    ],
)
def test_node_ports_pod_deleted_hint(old, want):
    assert NodePorts.is_schedulable_after_pod_deleted(make_pod("p", host_ports=[8080]), old, None) == want


def test_node_ports_nominated_deleted_pod_counts():
    deleted = make_pod("d", host_ports=[8080])
    deleted["status"]["nominatedNodeName"] = "n1"
    assert NodePorts.is_schedulable_after_pod_deleted(make_pod("p", host_ports=[8080]), deleted, None) == Q


def test_node_ports_events():
    assert events(NodePorts()) == [(POD, ActionType.DELETE, True), (NODE, ActionType.ADD, False)]
    legacy = ActionType.ADD | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
    assert events(NodePorts(enable_queueing_hints=False)) == [(POD, ActionType.DELETE, True), (NODE, legacy, False)]


# -- TaintToleration ----------------------------------------------------------------------------------------------------


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def untolerated(key: str, value: str) -> Status:
    return Status(UNRESOLVABLE, f"node(s) had untolerated taint {{{key}: {value}}}")


TAINT_FILTER_CASES = [
    (
        "no tolerations, NoSchedule taint",
        [],
        [taint("dedicated", "user1", "NoSchedule")],
        untolerated("dedicated", "user1"),
    ),
    (
        "tolerated dedicated node",
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        [taint("dedicated", "user1", "NoSchedule")],
        None,
    ),
    (
        "toleration for another user",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        [taint("dedicated", "user1", "NoSchedule")],
        untolerated("dedicated", "user1"),
    ),
    (
        "Exists tolerates",
        [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}],
        [taint("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "all of several taints tolerated",
        [
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
        ],
        [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "effect mismatch",
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
        [taint("foo", "bar", "NoSchedule")],
        untolerated("foo", "bar"),
    ),
    (
        "empty effect tolerates all effects",
        [{"key": "foo", "operator": "Equal", "value": "bar"}],
        [taint("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "PreferNoSchedule taints are not filtered",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        [taint("dedicated", "user1", "PreferNoSchedule")],
        None,
    ),
    ("no tolerations, PreferNoSchedule taint", [], [taint("dedicated", "user1", "PreferNoSchedule")], None),
    (
        "NoExecute counts",
        [],
        [taint("a", "", "PreferNoSchedule"), taint("evict", "now", "NoExecute")],
        untolerated("evict", "now"),
    ),
    (
        "first untolerated taint is reported",
        [],
        [taint("k1", "v1", "NoSchedule"), taint("k2", "v2", "NoSchedule")],
        untolerated("k1", "v1"),
    ),
]


@pytest.mark.parametrize(
    ("name", "tolerations", "taints", "want"), TAINT_FILTER_CASES, ids=[c[0] for c in TAINT_FILTER_CASES]
)
def test_taint_toleration_filter(name, tolerations, taints, want):
    p = pod(tolerations=tolerations)
    assert filter_status(TaintToleration(), p, NodeInfo(node("nodeA", taints=taints))) == want


TAINT_SCORE_CASES = [
    (
        "tolerated taint beats untolerated",
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
        [[taint("foo", "bar", "PreferNoSchedule")], [taint("foo", "blah", "PreferNoSchedule")]],
        [100, 0],
    ),
    (
        "tolerated taints do not count",
        [
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "PreferNoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "PreferNoSchedule"},
        ],
        [
            [],
            [taint("cpu-type", "arm64", "PreferNoSchedule")],
            [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")],
        ],
        [100, 100, 100],
    ),
    (
        "more intolerable taints, lower score",
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
        [
            [],
            [taint("cpu-type", "arm64", "PreferNoSchedule")],
            [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")],
        ],
        [100, 50, 0],
    ),
    (
        "only PreferNoSchedule is scored",
        [
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "NoSchedule"},
        ],
        [
            [],
            [taint("cpu-type", "arm64", "NoSchedule")],
            [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")],
        ],
        [100, 100, 0],
    ),
    ("no tolerations", [], [[], [taint("cpu-type", "arm64", "PreferNoSchedule")]], [100, 0]),
]


@pytest.mark.parametrize(
    ("name", "tolerations", "taints", "want"), TAINT_SCORE_CASES, ids=[c[0] for c in TAINT_SCORE_CASES]
)
def test_taint_toleration_score(name, tolerations, taints, want):
    nodes = [node(f"node{chr(65 + i)}", taints=t) for i, t in enumerate(taints)]
    assert scores_of(TaintToleration(), pod(tolerations=tolerations), nodes) == want


def test_taint_toleration_score_without_pre_score():
    st = TaintToleration().score(CycleState(), pod(), NodeInfo(node()))[1]
    assert st.code == Code.ERROR
    assert st.message() == 'failed to read "PreScoreTaintToleration" from cycleState: not found'


TOL_USER2 = [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, "not-a-node", Q),
        ("not-a-node", node(taints=[taint("dedicated", "user1", "NoSchedule")]), Q),
        (None, node(taints=[taint("dedicated", "user1", "NoSchedule")]), SKIP),  # untolerated node added
        (None, node(taints=[taint("dedicated", "user2", "NoSchedule")]), Q),  # tolerated node added
        (
            node(taints=[taint("dedicated", "user1", "NoSchedule")]),
            node(taints=[taint("dedicated", "user1", "NoSchedule"), taint("dedicated", "user3", "NoSchedule")]),
            SKIP,
        ),
        (
            node(taints=[taint("dedicated", "user1", "NoSchedule")]),
            node(taints=[taint("dedicated", "user2", "NoSchedule")]),
            Q,
        ),
        (node(), node(labels={"x": "y"}), SKIP),  # was never untolerated
    ],
)
def test_taint_toleration_node_hint(old, new, want):
    assert TaintToleration.is_schedulable_after_node_change(pod(tolerations=TOL_USER2), old, new) == want


def test_taint_toleration_pod_hint_and_events():
    hint = TaintToleration.is_schedulable_after_pod_toleration_change
    target = pod(uid="u0")
    assert hint(target, target, pod(uid="u0", tolerations=[{"key": "foo", "effect": "NoSchedule"}])) == Q
    assert hint(target, None, pod(uid="u1", tolerations=[{"key": "foo", "effect": "NoSchedule"}])) == SKIP
    assert events(TaintToleration()) == [
        (NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT, True),
        (POD, ActionType.UPDATE_POD_TOLERATIONS, True),
    ]
    legacy = ActionType.ADD | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
    assert events(TaintToleration(enable_queueing_hints=False)) == [(NODE, legacy, True)]


# -- NodeAffinity ----------------------------------------------------------------------------------------------------


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def by_name(op: str, *values: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": op, "values": list(values)}


def term(exprs: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if exprs is not None:
        t["matchExpressions"] = exprs
    if fields is not None:
        t["matchFields"] = fields
    return t


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": w, "preference": t} for w, t in weighted]
        }
    }


def added(required_terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": required_terms}}}


POD_FAIL = Status(UNRESOLVABLE, ERR_REASON_POD)
# (name, pod spec, node labels, node name, want PreFilter status, want PreFilter node names, want Filter, args,
#  run PreFilter)
AFFINITY_FILTER_CASES: list[tuple[Any, ...]] = [
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, {}, "node1", None, None, POD_FAIL, None, True),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "node1", None, None, None, None, True),
    (
        "node labels are superset",
        {"nodeSelector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "node1",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "node labels are subset",
        {"nodeSelector": {"foo": "bar", "baz": "blah"}},
        {"foo": "bar"},
        "node1",
        None,
        None,
        POD_FAIL,
        None,
        True,
    ),
    (
        "In matches",
        {"affinity": required(term([expr("foo", "In", "bar", "value2")]))},
        {"foo": "bar"},
        "node1",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Gt matches",
        {"affinity": required(term([expr("kernel-version", "Gt", "0204")]))},
        {"kernel-version": "0206"},
        "node1",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "NotIn matches",
        {"affinity": required(term([expr("mem-type", "NotIn", "DDR", "DDR2")]))},
        {"mem-type": "DDR3"},
        "node1",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Exists matches",
        {"affinity": required(term([expr("GPU", "Exists")]))},
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "In does not match",
        {"affinity": required(term([expr("foo", "In", "value1", "value2")]))},
        {"foo": "bar"},
        "node1",
        None,
        None,
        POD_FAIL,
        None,
        True,
    ),
    (
        "empty matchExpressions match nothing",
        {"affinity": required(term([]))},
        {"foo": "bar"},
        "node1",
        None,
        None,
        POD_FAIL,
        None,
        True,
    ),
    ("no affinity", {}, {"foo": "bar"}, "node1", Status(Code.SKIP), None, None, None, True),
    (
        "affinity without required",
        {"affinity": {"nodeAffinity": {}}},
        {"foo": "bar"},
        "node1",
        Status(Code.SKIP),
        None,
        None,
        None,
        True,
    ),
    (
        "ANDed requirements match",
        {"affinity": required(term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]))},
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "ANDed requirements do not match",
        {"affinity": required(term([expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]))},
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        None,
        None,
        POD_FAIL,
        None,
        True,
    ),
    (
        "ORed terms, one matches",
        {
            "affinity": required(
                term([expr("foo", "In", "bar", "value2")]), term([expr("diffkey", "In", "wrong", "value2")])
            )
        },
        {"foo": "bar"},
        "node1",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "affinity and nodeSelector both hold",
        {"nodeSelector": {"foo": "bar"}, "affinity": required(term([expr("foo", "Exists")]))},
        {"foo": "bar"},
        "node1",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "affinity holds but nodeSelector does not",
        {"nodeSelector": {"foo": "bar"}, "affinity": required(term([expr("foo", "Exists")]))},
        {"foo": "barrrrrr"},
        "node1",
        None,
        None,
        POD_FAIL,
        None,
        True,
    ),
    (
        "invalid value in a term",
        {"affinity": required(term([expr("foo", "NotIn", "invalid value: ___@#$%^")]))},
        {"foo": "bar"},
        "node1",
        None,
        None,
        POD_FAIL,
        None,
        True,
    ),
    (
        "matchFields In matches",
        {"affinity": required(term(fields=[by_name("In", "node1")]))},
        {},
        "node1",
        None,
        {"node1"},
        None,
        None,
        True,
    ),
    (
        "matchFields In does not match",
        {"affinity": required(term(fields=[by_name("In", "node1")]))},
        {},
        "node2",
        None,
        {"node1"},
        POD_FAIL,
        None,
        True,
    ),
    (
        "two terms: fields fail, expressions match",
        {
            "affinity": required(
                term(fields=[by_name("In", "node1"), by_name("In", "node2")]), term([expr("foo", "In", "bar")])
            )
        },
        {"foo": "bar"},
        "node2",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "one term: fields fail, expressions match",
        {"affinity": required(term([expr("foo", "In", "bar")], [by_name("In", "node1")]))},
        {"foo": "bar"},
        "node2",
        None,
        {"node1"},
        POD_FAIL,
        None,
        True,
    ),
    (
        "one term: fields and expressions match",
        {"affinity": required(term([expr("foo", "In", "bar")], [by_name("In", "node1")]))},
        {"foo": "bar"},
        "node1",
        None,
        {"node1"},
        None,
        None,
        True,
    ),
    (
        "two terms: neither matches",
        {"affinity": required(term(fields=[by_name("In", "node1")]), term([expr("foo", "In", "not-match-to-bar")]))},
        {"foo": "bar"},
        "node2",
        None,
        None,
        POD_FAIL,
        None,
        True,
    ),
    (
        "two terms of node names",
        {"affinity": required(term(fields=[by_name("In", "node1")]), term(fields=[by_name("In", "node2")]))},
        {},
        "node2",
        None,
        {"node1", "node2"},
        None,
        None,
        True,
    ),
    (
        "conflicting node names",
        {"affinity": required(term(fields=[by_name("In", "node1"), by_name("In", "node2")]))},
        {"foo": "bar"},
        "node2",
        Status(UNRESOLVABLE, ERR_REASON_CONFLICT),
        None,
        POD_FAIL,
        None,
        True,
    ),
    (
        "matches added affinity and the pod's",
        {"affinity": required(term([expr("zone", "In", "foo")]))},
        {"zone": "foo"},
        "node2",
        None,
        None,
        None,
        added([term(fields=[by_name("In", "node2")])]),
        True,
    ),
    (
        "matches added affinity but not the pod's",
        {"affinity": required(term([expr("zone", "In", "bar")]))},
        {"zone": "foo"},
        "node2",
        None,
        None,
        POD_FAIL,
        added([term(fields=[by_name("In", "node2")])]),
        True,
    ),
    (
        "does not match added affinity",
        {},
        {"zone": "foo"},
        "node2",
        None,
        None,
        Status(UNRESOLVABLE, ERR_REASON_ENFORCED),
        added([term([expr("zone", "In", "bar")])]),
        True,
    ),
    (
        "nodeSelector without PreFilter",
        {"nodeSelector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "node1",
        None,
        None,
        None,
        None,
        False,
    ),
    (
        "affinity without PreFilter",
        {"affinity": required(term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]))},
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        None,
        None,
        None,
        None,
        False,
    ),
    # Beyond upstream's table: parse-error semantics of the selector helpers.
    (
        "Gt with a non-integer bound never matches",
        {"affinity": required(term([expr("v", "Gt", "abc")]))},
        {"v": "5"},
        "node1",
        None,
        None,
        POD_FAIL,
        None,
        True,
    ),
    (
        "Gt with Go int syntax only",
        {"affinity": required(term([expr("v", "Lt", "10")]))},
        {"v": "1_0"},
        "node1",
        None,
        None,
        POD_FAIL,
        None,
        True,
    ),
    (
        "erroring term does not hide a good one",
        {"affinity": required(term([expr("v", "Exists", "x")]), term([expr("v", "Exists")]))},
        {"v": "1"},
        "node1",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "matchFields with another key reads empty",
        {"affinity": required(term(fields=[{"key": "spec.x", "operator": "NotIn", "values": ["a"]}]))},
        {},
        "node1",
        None,
        None,
        None,
        None,
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "spec", "labels", "node_name", "want_pre", "want_names", "want", "args", "run_pre"),
    AFFINITY_FILTER_CASES,
    ids=[c[0] for c in AFFINITY_FILTER_CASES],
)
def test_node_affinity_filter(name, spec, labels, node_name, want_pre, want_names, want, args, run_pre):
    pl = NodeAffinity.new(args, FrameworkHandle())
    p = pod(**spec)
    ni = NodeInfo(node(node_name, labels))
    state = CycleState()
    if run_pre:
        result, st = pl.pre_filter(state, p, [ni])
        assert st == want_pre
        assert (result.node_names if result else None) == want_names
    assert pl.filter(state, p, ni) == want


AFF1 = preferred((2, term([expr("foo", "In", "bar")])))
AFF2 = preferred(
    (2, term([expr("foo", "In", "bar")])),
    (4, term([expr("key", "In", "value")])),
    (5, term([expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")])),
)
L1, L2, L3 = {"foo": "bar"}, {"key": "value"}, {"az": "az1"}
L4, L5 = {"abc": "az11", "def": "az22"}, {"foo": "bar", "key": "value", "az": "az1"}

AFFINITY_SCORE_CASES: list[tuple[Any, ...]] = [
    ("no node affinity: all equal", {}, [L1, L2, L3], [0, 0, 0], None, True),
    ("no node matches", {"affinity": AFF1}, [L4, L2, L3], [0, 0, 0], None, True),
    ("only node1 matches", {"affinity": AFF1}, [L1, L2, L3], [100, 0, 0], None, True),
    ("all match with different weights", {"affinity": AFF2}, [L1, L5, L2], [18, 100, 36], None, True),
    ("added affinity", {}, [L1, L2], [100, 0], {"addedAffinity": AFF1["nodeAffinity"]}, True),
    (
        "added affinity and the pod's",
        {"affinity": AFF1},
        [L1, L2, L5],
        [40, 60, 100],
        {"addedAffinity": preferred((3, term([expr("key", "In", "value")])))["nodeAffinity"]},
        True,
    ),
    ("without PreScore", {"affinity": AFF2}, [L1, L5, L2], [18, 100, 36], None, False),
    (
        "weight 0 and empty terms are ignored",
        {"affinity": preferred((0, term([expr("foo", "Exists")])), (7, term()))},
        [L1, L2],
        [0, 0],
        None,
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "spec", "labels", "want", "args", "run_pre"),
    AFFINITY_SCORE_CASES,
    ids=[c[0] for c in AFFINITY_SCORE_CASES],
)
def test_node_affinity_score(name, spec, labels, want, args, run_pre):
    nodes = [node(f"node{i + 1}", lb) for i, lb in enumerate(labels)]
    assert scores_of(NodeAffinity.new(args, FrameworkHandle()), pod(**spec), nodes, pre_score=run_pre) == want


def test_node_affinity_pre_score_skip_and_error():
    pl = NodeAffinity()
    assert pl.pre_score(CycleState(), pod(), []) == Status(Code.SKIP)
    bad = pod(affinity=preferred((1, term([expr("v", "Gt", "abc")]))))
    st = pl.pre_score(CycleState(), bad, [])
    assert st.code == Code.ERROR
    assert (
        st.message()
        == "[0].matchExpressions[0].values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' operators, the value must be an integer"
    )


def test_node_affinity_args_validation():
    NodeAffinity.new({}, FrameworkHandle())
    NodeAffinity.new({"addedAffinity": None}, FrameworkHandle())
    valid = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term([expr("label-1", "In", "label-1-val")])]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": term(fields=[by_name("In", "node-1")])}
            ],
        }
    }
    NodeAffinity.new(valid, FrameworkHandle())
    invalid_args = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term([expr("invalid/label/key", "In", "label-1-val")])]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": term(fields=[by_name("In", "node-1", "node-2")])}
            ],
        }
    }
    with pytest.raises(ValueError) as exc:
        NodeAffinity.new(invalid_args, FrameworkHandle())
    msg = str(exc.value)
    assert msg.startswith(
        '[addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: Invalid value: "invalid/label/key": '
    )
    assert msg.endswith(
        ', addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: Invalid value: []string{"node-1", "node-2"}: must have one element]'
    )
    with pytest.raises(
        ValueError, match=r'operator: Unsupported value: "Foo": supported values: "In", "NotIn", "Exists"'
    ):
        NodeAffinity.new(added([term([expr("a", "Foo")])]), FrameworkHandle())


IN_FOO_BAR = {"affinity": required(term([expr("foo", "In", "bar")]))}
ENFORCED = added([term([expr("foo", "In", "bar")])])


@pytest.mark.parametrize(
    ("args", "old", "new", "want"),
    [
        (None, None, "not-a-node", Q),
        (None, "not-a-node", node(), Q),
        (None, None, node(), SKIP),
        (None, None, node(labels={"foo": "bar"}), Q),
        (None, node(), node(labels={"x": "y"}), SKIP),  # unrelated changes
        (None, node(labels={"foo": "bar"}), node(labels={"foo": "bar", "k": "v"}), SKIP),  # already suitable
        (None, node(labels={"foo": "bar"}), node(labels={"k": "v"}), SKIP),  # suitable to unsuitable
        (None, node(), node(labels={"foo": "bar"}), Q),  # label change makes it fit
        (ENFORCED, None, node(), SKIP),
        (ENFORCED, None, node(labels={"foo": "bar"}), Q),
    ],
)
def test_node_affinity_node_hint(args, old, new, want):
    pl = NodeAffinity.new(args, FrameworkHandle())
    assert pl.is_schedulable_after_node_change(pod(**IN_FOO_BAR), old, new) == want


def test_node_affinity_events():
    assert events(NodeAffinity()) == [(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL, True)]
    legacy = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
    assert events(NodeAffinity(enable_queueing_hints=False)) == [(NODE, legacy, True)]


# -- ImageLocality --------------------------------------------------------------------------------------------------

MB = 1024 * 1024


def images(*entries: tuple[list[str], int]) -> list[dict[str, Any]]:
    return [{"names": names, "sizeBytes": size * MB} for names, size in entries]


N_40_300_2000 = images(
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (["gcr.io/2000:latest"], 2000),
)
N_250_10 = images((["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10))
N_600_40_900 = images((["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900))
N_300_600_900 = images((["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900))
N_4000_30 = images((["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30))
N_20_30_40 = images((["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40))


def image_pod(*names: str, init: tuple[str, ...] = ()) -> dict[str, Any]:
    p = make_pod("p")
    p["spec"]["containers"] = [{"name": f"c{i}", "image": n} for i, n in enumerate(names)]
    if init:
        p["spec"]["initContainers"] = [{"name": f"i{i}", "image": n} for i, n in enumerate(init)]
    return p


IMAGE_CASES = [
    ("two images on two nodes, larger wins", image_pod("gcr.io/40", "gcr.io/250"), [N_40_300_2000, N_250_10], [0, 5]),
    ("two images on one node", image_pod("gcr.io/40", "gcr.io/300"), [N_40_300_2000, N_250_10], [7, 0]),
    ("over the limit: capped", image_pod("gcr.io/10", "gcr.io/4000"), [N_4000_30, N_250_10], [100, 0]),
    (
        "over the limit, with an imageless node",
        image_pod("gcr.io/10", "gcr.io/4000"),
        [N_4000_30, N_250_10, []],
        [66, 0, 0],
    ),
    (
        "several large images",
        image_pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
        [N_600_40_900, N_300_600_900, []],
        [32, 36, 0],
    ),
    ("several small images", image_pod("gcr.io/30", "gcr.io/40"), [N_20_30_40, N_4000_30], [1, 0]),
    ("init containers count", image_pod("gcr.io/30", init=("gcr.io/300",)), [N_40_300_2000, N_20_30_40], [6, 0]),
    ("no containers", image_pod(), [N_40_300_2000], [0]),
]


@pytest.mark.parametrize(("name", "p", "node_images", "want"), IMAGE_CASES, ids=[c[0] for c in IMAGE_CASES])
def test_image_locality(name, p, node_images, want):
    nodes = [node(f"node{i + 1}", images=imgs) for i, imgs in enumerate(node_images)]
    snapshot = Snapshot.from_objects(nodes)  # with the image summaries the scheduler cache would give
    pl = ImageLocality.new(None, FrameworkHandle(snapshot))
    got = [pl.score(CycleState(), p, ni) for ni in snapshot.node_info_list]
    assert got == [(s, None) for s in want]


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@sha256:" + "a" * 64, "root@sha256:" + "a" * 64),
    ],
)
def test_normalized_image_name(name, want):
    assert normalized_image_name(name) == want


# -- DefaultBinder -------------------------------------------------------------------------------------------------


class _FakeClient:
    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.error = error

    async def create(self, resource: str, obj: dict[str, Any], namespace: str, **kw: Any) -> dict[str, Any]:
        self.calls.append((resource, obj, namespace, kw))
        if self.error:
            raise self.error
        return obj


async def test_default_binder():
    client = _FakeClient()
    p = make_pod("web", namespace="ns")
    assert await DefaultBinder.new(None, FrameworkHandle(client=client)).bind(CycleState(), p, "n1") is None
    resource, obj, namespace, kw = client.calls[0]
    assert (resource, namespace, kw) == ("pods", "ns", {"name": "web", "subresource": "binding"})
    assert obj["metadata"] == {"name": "web", "namespace": "ns", "uid": p["metadata"]["uid"]}
    assert obj["target"] == {"kind": "Node", "name": "n1"}
    failing = DefaultBinder.new(None, FrameworkHandle(client=_FakeClient(RuntimeError("boom"))))
    st = await failing.bind(CycleState(), p, "n1")
    assert (st.code, st.message()) == (Code.ERROR, "boom")
