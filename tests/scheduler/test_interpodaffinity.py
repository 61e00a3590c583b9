"""InterPodAffinity PreFilter/Filter, add/remove-pod, queueing hints and args (cases re-expressed from upstream's
interpodaffinity filtering_test.go and plugin_test.go)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pyk8s.scheduler.framework.handle import FrameworkHandle, StaticLister
from pyk8s.scheduler.framework.interface import NODE, POD, ActionType, Code, CycleState, QueueingHint, Status
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import PodInfo
from pyk8s.scheduler.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    InterPodAffinity,
    PreFilterState,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_change,
)
from pyk8s.scheduler.plugins.interpodaffinity.common import node_generations

from .wrappers import make_pod

# -- builders shared by the InterPodAffinity test files ----------------------------------------------------------


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def term(
    *exprs: dict[str, Any],
    topology: str = "",
    namespaces: list[str] | None = None,
    ns_selector: dict[str, Any] | None = None,
    match_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    selector: dict[str, Any] = {"matchExpressions": list(exprs)}
    if match_labels:
        selector["matchLabels"] = match_labels
    t: dict[str, Any] = {"labelSelector": selector, "topologyKey": topology}
    if namespaces is not None:
        t["namespaces"] = namespaces
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    return t


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def affinity(
    required: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
    preferred: Sequence[dict[str, Any]] = (),
    preferred_anti: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pa: dict[str, Any] = {}
    if required:
        pa["requiredDuringSchedulingIgnoredDuringExecution"] = list(required)
    if preferred:
        pa["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred)
    if pa:
        out["podAffinity"] = pa
    paa: dict[str, Any] = {}
    if anti:
        paa["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti)
    if preferred_anti:
        paa["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred_anti)
    if paa:
        out["podAntiAffinity"] = paa
    return out


def pod(
    name: str = "p",
    ns: str = "",
    labels: dict[str, str] | None = None,
    node: str | None = None,
    aff: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return make_pod(name, namespace=ns, labels=labels, node_name=node, affinity=aff)


def node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A node with exactly these labels (upstream's test nodes carry no hostname label of their own)."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)}, "status": {}}


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


TEAM1, TEAM2 = {"team": "team1"}, {"team": "team2"}
NAMESPACES = [
    namespace("subteam1.team1", TEAM1),
    namespace("subteam2.team1", TEAM1),
    namespace("subteam1.team2", TEAM2),
    namespace("subteam2.team2", TEAM2),
    namespace("NS1", {}),
]


def plugin_for(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    args: dict[str, Any] | None = None,
    namespaces: list[dict[str, Any]] = NAMESPACES,
) -> tuple[InterPodAffinity, Snapshot]:
    snap = Snapshot.from_objects(nodes, pods)
    handle = FrameworkHandle(snap, StaticLister({"namespaces": namespaces}))
    return InterPodAffinity.new(args, handle), snap


def run_filter(
    incoming: dict[str, Any], pods: list[dict[str, Any]], nodes: list[dict[str, Any]]
) -> tuple[Status | None, list[Status | None]]:
    """PreFilter, then Filter on every node; also checks the vectorized filter agrees."""
    pl, snap = plugin_for(nodes, pods)
    state = CycleState()
    _, status = pl.pre_filter(state, incoming, snap.node_info_list)
    if status is not None:
        return status, []
    got = [pl.filter(state, incoming, ni) for ni in snap.node_info_list]
    assert list(pl.filter_vector(state, incoming, snap)) == [s is None for s in got]
    return None, got


SKIP = Status(Code.SKIP)
AFF = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = Status(Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING = Status(Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)

SECURITYSCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
IN_SCAN = expr("service", "In", "securityscan", "value2")
IN_ANTIVIRUS = expr("service", "In", "antivirusscan", "value2")
NODE1 = node("node1", {"region": "r1", "zone": "z11"})
ON_NODE1 = pod("existing", labels=SECURITYSCAN, node="node1")


def ex(key: str) -> dict[str, Any]:
    return expr(key, "Exists")


SINGLE_NODE_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], Status | None, Status | None]] = [
    # (name, incoming pod, existing pods, PreFilter status, Filter status on node1)
    ("no required terms, empty node: nothing to check", pod(), [], SKIP, None),
    (
        "affinity In matches the existing pod",
        pod(labels=S1, aff=affinity([term(IN_SCAN, topology="region")])),
        [ON_NODE1],
        None,
        None,
    ),
    (
        "affinity NotIn matches the existing pod",
        pod(labels=S1, aff=affinity([term(expr("service", "NotIn", "securityscan3", "value3"), topology="region")])),
        [ON_NODE1],
        None,
        None,
    ),
    (
        "affinity fails: existing pod in another namespace",
        pod(labels=S1, aff=affinity([term(IN_SCAN, namespaces=["DiffNameSpace"])])),
        [pod("e", ns="ns", labels=SECURITYSCAN, node="node1")],
        None,
        AFF,
    ),
    (
        "affinity fails: selector does not match",
        pod(labels=SECURITYSCAN, aff=affinity([term(IN_ANTIVIRUS)])),
        [ON_NODE1],
        None,
        AFF,
    ),
    (
        "affinity: several terms with different operators all match",
        pod(
            labels=S1,
            aff=affinity(
                [
                    term(ex("service"), expr("wrongkey", "DoesNotExist"), topology="region"),
                    term(
                        expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue"), topology="region"
                    ),
                ]
            ),
        ),
        [ON_NODE1],
        None,
        None,
    ),
    (
        "affinity: expressions are ANDed, one does not match",
        pod(
            labels=S1,
            aff=affinity(
                [
                    term(ex("service"), expr("wrongkey", "DoesNotExist"), topology="region"),
                    term(
                        expr("service", "In", "securityscan2"),
                        expr("service", "NotIn", "WrongValue"),
                        topology="region",
                    ),
                ]
            ),
        ),
        [ON_NODE1],
        None,
        AFF,
    ),
    (
        "affinity and anti-affinity both satisfied",
        pod(labels=S1, aff=affinity([term(IN_SCAN, topology="region")], [term(IN_ANTIVIRUS, topology="node")])),
        [ON_NODE1],
        None,
        None,
    ),
    (
        "affinity, anti-affinity and the existing pod's anti-affinity satisfied",
        pod(labels=S1, aff=affinity([term(IN_SCAN, topology="region")], [term(IN_ANTIVIRUS, topology="node")])),
        [pod("e", labels=SECURITYSCAN, node="node1", aff=affinity(anti=[term(IN_ANTIVIRUS, topology="node")]))],
        None,
        None,
    ),
    (
        "affinity satisfied, anti-affinity violated",
        pod(labels=S1, aff=affinity([term(IN_SCAN, topology="region")], [term(IN_SCAN, topology="zone")])),
        [ON_NODE1],
        None,
        ANTI,
    ),
    (
        "own terms satisfied, the existing pod's anti-affinity violated",
        pod(
            labels=SECURITYSCAN, aff=affinity([term(IN_SCAN, topology="region")], [term(IN_ANTIVIRUS, topology="node")])
        ),
        [pod("e", labels=SECURITYSCAN, node="node1", aff=affinity(anti=[term(IN_SCAN, topology="zone")]))],
        None,
        EXISTING,
    ),
    (
        "pod matching its own NotIn term while a matching pod lives elsewhere",
        pod(
            labels=SECURITYSCAN,
            aff=affinity([term(expr("service", "NotIn", "securityscan", "value2"), topology="region")]),
        ),
        [pod("e", labels=SECURITYSCAN, node="node2")],  # node2 is not in the cluster
        None,
        AFF,
    ),
    (
        "no terms of its own, the existing pod's anti-affinity violated",
        pod(labels=SECURITYSCAN),
        [pod("e", labels=SECURITYSCAN, node="node1", aff=affinity(anti=[term(IN_SCAN, topology="zone")]))],
        None,
        EXISTING,
    ),
    (
        "no terms of its own, the existing pod's anti-affinity does not select it: skipped",
        pod(labels=SECURITYSCAN),
        [
            pod(
                "e",
                labels=SECURITYSCAN,
                node="node1",
                aff=affinity(anti=[term(expr("service", "NotIn", "securityscan", "value2"), topology="zone")]),
            )
        ],
        SKIP,
        None,
    ),
    (
        "own anti-affinity violated though the existing pod's is not",
        pod(
            labels=SECURITYSCAN,
            aff=affinity(anti=[term(ex("service"), topology="region"), term(ex("security"), topology="region")]),
        ),
        [pod("e", labels=S1, node="node1", aff=affinity(anti=[term(ex("security"), topology="zone")]))],
        None,
        ANTI,
    ),
    (
        "symmetry a1: partial matches each way, own anti-affinity first",
        pod(
            labels=SECURITYSCAN,
            aff=affinity(anti=[term(ex("service"), topology="zone"), term(ex("security"), topology="zone")]),
        ),
        [pod("e", labels=S1, node="node1", aff=affinity(anti=[term(ex("security"), topology="zone")]))],
        None,
        ANTI,
    ),
    (
        "symmetry a2: the existing pod's anti-affinity selects the incoming pod",
        pod(labels=S1, aff=affinity(anti=[term(ex("security"), topology="zone")])),
        [
            pod(
                "e",
                labels=SECURITYSCAN,
                node="node1",
                aff=affinity(anti=[term(ex("service"), topology="zone"), term(ex("security"), topology="zone")]),
            )
        ],
        None,
        EXISTING,
    ),
    (
        "symmetry b1",
        pod(
            labels={"abc": "", "xyz": ""},
            aff=affinity(anti=[term(ex("abc"), topology="zone"), term(ex("def"), topology="zone")]),
        ),
        [
            pod(
                "e",
                labels={"def": "", "xyz": ""},
                node="node1",
                aff=affinity(anti=[term(ex("abc"), topology="zone"), term(ex("def"), topology="zone")]),
            )
        ],
        None,
        ANTI,
    ),
    (
        "symmetry b2",
        pod(
            labels={"def": "", "xyz": ""},
            aff=affinity(anti=[term(ex("abc"), topology="zone"), term(ex("def"), topology="zone")]),
        ),
        [
            pod(
                "e",
                labels={"abc": "", "xyz": ""},
                node="node1",
                aff=affinity(anti=[term(ex("abc"), topology="zone"), term(ex("def"), topology="zone")]),
            )
        ],
        None,
        ANTI,
    ),
    (
        "affinity with a matching namespaceSelector",
        pod(
            labels=S1,
            aff=affinity(
                [term(IN_SCAN, topology="region", ns_selector={"matchExpressions": [expr("team", "In", "team1")]})]
            ),
        ),
        [pod("e", ns="subteam1.team1", labels=SECURITYSCAN, node="node1")],
        None,
        None,
    ),
    (
        "affinity with a namespaceSelector not matching the pod's namespace",
        pod(
            labels=S1,
            aff=affinity(
                [term(IN_SCAN, topology="region", ns_selector={"matchExpressions": [expr("team", "In", "team1")]})]
            ),
        ),
        [pod("e", ns="subteam1.team2", labels=SECURITYSCAN, node="node1")],
        None,
        AFF,
    ),
    (
        "anti-affinity with a matching namespaceSelector",
        pod(
            ns="subteam1.team1",
            labels=S1,
            aff=affinity(
                anti=[term(IN_SCAN, topology="zone", ns_selector={"matchExpressions": [expr("team", "In", "team1")]})]
            ),
        ),
        [pod("e", ns="subteam2.team1", labels=SECURITYSCAN, node="node1")],
        None,
        ANTI,
    ),
    (
        "anti-affinity with an empty namespaceSelector (all namespaces)",
        pod(ns="subteam1.team1", labels=S1, aff=affinity(anti=[term(IN_SCAN, topology="zone", ns_selector={})])),
        [pod("e", ns="subteam2.team1", labels=SECURITYSCAN, node="node1")],
        None,
        ANTI,
    ),
    (
        "anti-affinity with a namespaceSelector not matching",
        pod(
            ns="subteam1.team1",
            labels=S1,
            aff=affinity(
                anti=[term(IN_SCAN, topology="zone", ns_selector={"matchExpressions": [expr("team", "In", "team1")]})]
            ),
        ),
        [pod("e", ns="subteam1.team2", labels=SECURITYSCAN, node="node1")],
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "incoming", "pods", "want_pre", "want"), SINGLE_NODE_CASES, ids=[c[0] for c in SINGLE_NODE_CASES]
)
def test_required_affinity_single_node(name, incoming, pods, want_pre, want):
    pre, got = run_filter(incoming, pods, [NODE1])
    assert pre == want_pre
    if pre is None:
        assert got == [want]


CHINA, CHINA_AZ1, INDIA = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}


def rz(name: str, region: str, zone: str) -> dict[str, Any]:
    return node(name, {"region": region, "zone": zone, "hostname": name})


TWO_ZONES = [rz("nodeA", "r1", "z1"), rz("nodeB", "r1", "z2")]
ONE_ZONE = [rz("nodeA", "r1", "z1"), rz("nodeB", "r1", "z1")]
THREE = [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)]
FOO_BAR_SEC = {"foo": "bar", "service": "securityscan"}

MULTI_NODE_CASES: list[
    tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], Status | None, list[Status | None]]
] = [
    (
        "nodes sharing the domain of a matching pod fit",
        pod(aff=affinity([term(expr("foo", "In", "bar"), topology="region")])),
        [pod("p1", labels={"foo": "bar"}, node="nodeA")],
        THREE,
        None,
        [None, None, AFF],
    ),
    (
        "first pod of a self-affine group may go anywhere with the topology key",
        pod(
            labels=FOO_BAR_SEC,
            aff=affinity(
                [
                    term(expr("foo", "In", "bar"), topology="zone"),
                    term(expr("service", "In", "securityscan"), topology="zone"),
                ]
            ),
        ),
        [pod("p1", labels={"foo": "bar"}, node="nodeA")],
        [node("nodeA", {"zone": "az1", "hostname": "h1"}), node("nodeB", {"zone": "az2", "hostname": "h2"})],
        None,
        [None, None],
    ),
    (
        "first pod of a self-affine group still needs the topology keys",
        pod(
            labels=FOO_BAR_SEC,
            aff=affinity(
                [
                    term(expr("foo", "In", "bar"), topology="zone"),
                    term(expr("service", "In", "securityscan"), topology="zone"),
                ]
            ),
        ),
        [pod("p1", labels={"foo": "bar"}, node="nodeA")],
        [node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}), node("nodeB", {"zoneLabel": "az2", "hostname": "h2"})],
        None,
        [AFF, AFF],
    ),
    (
        "anti-affinity rules out the whole domain",
        pod(aff=affinity(anti=[term(expr("foo", "In", "abc"), topology="region")])),
        [pod("p", labels={"foo": "abc"}, node="nodeA")],
        [node("nodeA", {"region": "r1", "hostname": "nodeA"}), node("nodeB", {"region": "r1", "hostname": "nodeB"})],
        None,
        [ANTI, ANTI],
    ),
    (
        "anti-affinity: any matching term rules the node out",
        pod(
            aff=affinity(
                anti=[
                    term(expr("foo", "In", "abc"), topology="region"),
                    term(expr("service", "In", "securityscan"), topology="zone"),
                ]
            )
        ),
        [pod("p", labels={"foo": "abc", "service": "securityscan"}, node="nodeA")],
        TWO_ZONES,
        None,
        [ANTI, ANTI],
    ),
    (
        "anti-affinity: other region fits",
        pod(aff=affinity(anti=[term(expr("foo", "In", "abc"), topology="region")])),
        [pod("p", labels={"foo": "abc"}, node="nodeA")],
        THREE,
        None,
        [ANTI, ANTI, None],
    ),
    (
        "anti-affinity: the existing pod's term in another namespace does not apply",
        pod(ns="NS1", labels={"foo": "123"}, aff=affinity(anti=[term(expr("foo", "In", "bar"), topology="region")])),
        [
            pod("p", ns="NS1", labels={"foo": "bar"}, node="nodeA"),
            pod("q", ns="NS2", node="nodeC", aff=affinity(anti=[term(expr("foo", "In", "123"), topology="region")])),
        ],
        THREE,
        None,
        [ANTI, ANTI, None],
    ),
    (
        "existing pod's term on a key no node has: skipped",
        pod(labels={"foo": ""}),
        [pod("p", node="nodeA", aff=affinity(anti=[term(ex("foo"), topology="invalid-node-label")]))],
        ONE_ZONE,
        SKIP,
        [],
    ),
    (
        "own anti-affinity on a key no node has",
        pod(aff=affinity(anti=[term(ex("foo"), topology="invalid-node-label")])),
        [pod("p", labels={"foo": ""}, node="nodeA")],
        ONE_ZONE,
        None,
        [None, None],
    ),
    (
        "existing pods' anti-affinity in zone and region rules out both nodes",
        pod(labels={"foo": "", "bar": ""}),
        [
            pod("p", node="nodeA", aff=affinity(anti=[term(ex("foo"), topology="zone")])),
            pod("q", node="nodeA", aff=affinity(anti=[term(ex("bar"), topology="region")])),
        ],
        TWO_ZONES,
        None,
        [EXISTING, EXISTING],
    ),
    (
        "own anti-affinity violated by pods on each node",
        pod(aff=affinity(anti=[term(ex("foo"), topology="zone"), term(ex("bar"), topology="region")])),
        [pod("p", labels={"foo": ""}, node="nodeA"), pod("q", labels={"bar": ""}, node="nodeB")],
        TWO_ZONES,
        None,
        [ANTI, ANTI],
    ),
    (
        "existing pod's terms count only with selector and topology key matching",
        pod(labels={"foo": "", "bar": ""}),
        [
            pod(
                "p",
                node="nodeA",
                aff=affinity(anti=[term(ex("foo"), topology="invalid-node-label"), term(ex("bar"), topology="zone")]),
            )
        ],
        TWO_ZONES,
        None,
        [EXISTING, None],
    ),
    (
        "own terms count only with selector and topology key matching",
        pod(aff=affinity(anti=[term(ex("foo"), topology="invalid-node-label"), term(ex("bar"), topology="zone")])),
        [pod("podA", labels={"foo": "", "bar": ""}, node="nodeA")],
        TWO_ZONES,
        None,
        [ANTI, None],
    ),
    (
        "existing pod's terms with valid keys rule out both",
        pod(labels={"foo": "", "bar": ""}),
        [
            pod(
                "p",
                node="nodeA",
                aff=affinity(anti=[term(ex("foo"), topology="region"), term(ex("bar"), topology="zone")]),
            )
        ],
        TWO_ZONES,
        None,
        [EXISTING, EXISTING],
    ),
    (
        "own terms with valid keys rule out both",
        pod(aff=affinity(anti=[term(ex("foo"), topology="region"), term(ex("bar"), topology="zone")])),
        [pod("p", labels={"foo": "", "bar": ""}, node="nodeA")],
        TWO_ZONES,
        None,
        [ANTI, ANTI],
    ),
    (
        "only the third zone is free of existing pods' anti-affinity",
        pod(labels={"foo": "", "bar": ""}),
        [
            pod(
                "p",
                node="nodeA",
                aff=affinity(anti=[term(ex("foo"), topology="zone"), term(ex("labelA"), topology="zone")]),
            ),
            pod(
                "q",
                node="nodeB",
                aff=affinity(anti=[term(ex("bar"), topology="zone"), term(ex("labelB"), topology="zone")]),
            ),
        ],
        [*TWO_ZONES, rz("nodeC", "r1", "z3")],
        None,
        [EXISTING, EXISTING, None],
    ),
    (
        "affinity: one pod matching all terms, then all keys present",
        pod(aff=affinity([term(ex("foo"), topology="region"), term(ex("bar"), topology="zone")])),
        [pod("pod1", labels={"foo": "", "bar": ""}, node="nodeA")],
        ONE_ZONE,
        None,
        [None, None],
    ),
    (
        "affinity: the terms must be matched by the same pod",
        pod(aff=affinity([term(ex("foo"), topology="region"), term(ex("bar"), topology="zone")])),
        [pod("pod1", labels={"foo": ""}, node="nodeA"), pod("pod2", labels={"bar": ""}, node="nodeB")],
        TWO_ZONES,
        None,
        [AFF, AFF],
    ),
]


@pytest.mark.parametrize(
    ("name", "incoming", "pods", "nodes", "want_pre", "want"), MULTI_NODE_CASES, ids=[c[0] for c in MULTI_NODE_CASES]
)
def test_required_affinity_multiple_nodes(name, incoming, pods, nodes, want_pre, want):
    pre, got = run_filter(incoming, pods, nodes)
    assert pre == want_pre
    if pre is None:
        assert got == want


def with_keys(t: dict[str, Any], match: Sequence[str] = (), mismatch: Sequence[str] = ()) -> dict[str, Any]:
    return {**t, "matchLabelKeys": list(match), "mismatchLabelKeys": list(mismatch)}


LABEL_KEYS_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[Status | None]]] = [
    # Were the keys applied here, no pod would match the affinity term and the anti-affinity term would not
    # match the existing pod: both results would flip.
    (
        "matchLabelKeys do not narrow an affinity term",
        pod(labels={"service": "a"}, aff=affinity([with_keys(term(ex("foo"), topology="zone"), match=["service"])])),
        [pod("p", labels={"foo": "", "service": "b"}, node="nodeA")],
        [None, AFF],
    ),
    (
        "mismatchLabelKeys do not narrow an anti-affinity term",
        pod(
            labels={"service": "a"},
            aff=affinity(anti=[with_keys(term(ex("foo"), topology="zone"), mismatch=["service"])]),
        ),
        [pod("p", labels={"foo": "", "service": "a"}, node="nodeA")],
        [ANTI, None],
    ),
]


@pytest.mark.parametrize(("name", "incoming", "pods", "want"), LABEL_KEYS_CASES, ids=[c[0] for c in LABEL_KEYS_CASES])
def test_label_keys_are_the_api_servers(name, incoming, pods, want):
    """v1.32's API server folds matchLabelKeys and mismatchLabelKeys into the term's selector when the pod is
    created; the scheduler reads the selector alone, so keys left in a stored term must not count twice."""
    pre, got = run_filter(incoming, pods, TWO_ZONES)
    assert pre is None and got == want


def test_filter_without_prefilter_is_an_error():
    pl, snap = plugin_for([NODE1], [])
    status = pl.filter(CycleState(), pod(), snap.node_info_list[0])
    assert status is not None and status.code == Code.ERROR
    assert status.message() == f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'


BAD_VALUE_ERROR = (
    'values[0][service]: Invalid value: "{{.bad-value.}}": a valid label must be an empty string or consist of'
    " alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g."
    " 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
BAD_VALUE = expr("service", "In", "{{.bad-value.}}")
BAD_OPERATOR = expr("service", "Bogus", "x")


def unparsable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "parsing pod: " + message)


INVALID_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], Status | None, Status | None]] = [
    # (name, incoming pod, existing pods, PreFilter status, Filter status on node1)
    (
        "PodAffinity fails PreFilter with an invalid affinity label syntax",
        pod(
            labels=S1,
            aff=affinity([term(BAD_VALUE, topology="region"), term(IN_ANTIVIRUS, topology="node")]),
        ),
        [],
        unparsable("requiredAffinityTerms: " + BAD_VALUE_ERROR),
        None,
    ),
    (
        # Upstream's case of this name builds two affinity terms, the second one invalid.
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        pod(
            labels=S1,
            aff=affinity([term(expr("service", "In", "foo"), topology="region"), term(BAD_VALUE, topology="node")]),
        ),
        [],
        unparsable("requiredAffinityTerms: " + BAD_VALUE_ERROR),
        None,
    ),
    (
        "an invalid anti-affinity term fails PreFilter",
        pod(labels=S1, aff=affinity(anti=[term(BAD_OPERATOR, topology="region")])),
        [],
        unparsable('requiredAntiAffinityTerms: "Bogus" is not a valid label selector operator'),
        None,
    ),
    (
        # NewPodInfo parses the preferred terms too, so PreFilter rejects them before PreScore would.
        "an invalid preferred term fails PreFilter",
        pod(labels=S1, aff=affinity(preferred_anti=[weighted(3, term(BAD_VALUE, topology="region"))])),
        [],
        unparsable("preferredAntiAffinityTerms: " + BAD_VALUE_ERROR),
        None,
    ),
    (
        # What parses of an existing pod is kept (upstream's NodeInfo.AddPod ignores the parse error): an
        # invalid kind of term counts for nothing, the others still do.
        "an existing pod's invalid required anti-affinity is dropped",
        pod(labels=SECURITYSCAN),
        [
            pod(
                "existing",
                node="node1",
                aff=affinity(anti=[term(ex("service"), topology="zone"), term(BAD_VALUE, topology="zone")]),
            )
        ],
        SKIP,
        None,
    ),
    (
        "an existing pod's valid anti-affinity counts beside its invalid preferred terms",
        pod(labels=SECURITYSCAN),
        [
            pod(
                "existing",
                node="node1",
                aff=affinity(
                    anti=[term(ex("service"), topology="zone")],
                    preferred=[weighted(1, term(BAD_OPERATOR, topology="zone"))],
                ),
            )
        ],
        None,
        EXISTING,
    ),
]


@pytest.mark.parametrize(
    ("name", "incoming", "pods", "want_pre", "want"), INVALID_CASES, ids=[c[0] for c in INVALID_CASES]
)
def test_invalid_selectors(name, incoming, pods, want_pre, want):
    pre, got = run_filter(incoming, pods, [NODE1])
    assert pre == want_pre
    if pre is None:
        assert got == [want]


# -- add/remove pod (preemption's what-ifs) ----------------------------------------------------------------------

FOO_BAR = {"foo": "bar"}
ANTI_FOO_BAR = affinity(anti=[term(expr("foo", "In", "bar"), topology="region")])
ANTI_COMPLEX = affinity(
    anti=[
        term(expr("foo", "In", "bar", "buzz"), topology="region"),
        term(expr("service", "NotIn", "bar", "security", "test"), topology="zone"),
    ]
)
AFF_COMPLEX_TERMS = [
    term(expr("foo", "In", "bar", "buzz"), topology="region"),
    term(expr("service", "NotIn", "bar", "security", "test"), topology="zone"),
]
ABC = [
    node("nodeA", {"region": "r1", "zone": "z11"}),
    node("nodeB", {"region": "r1", "zone": "z12"}),
    node("nodeC", {"region": "r2", "zone": "z21"}),
]

ADD_REMOVE_CASES = [
    (
        "anti-affinity counts follow an added pod",
        pod("pending", labels=FOO_BAR, aff=ANTI_FOO_BAR),
        [pod("p1", labels=FOO_BAR, node="nodeA"), pod("p2", node="nodeC", aff=ANTI_FOO_BAR)],
        pod("added", labels=FOO_BAR, node="nodeB", aff=ANTI_FOO_BAR),
        {("region", "r1"): 2},
        {},
    ),
    (
        "anti-affinity counts with several terms",
        pod("pending", labels=FOO_BAR, aff=ANTI_COMPLEX),
        [pod("p1", labels=FOO_BAR, node="nodeA"), pod("p2", node="nodeC", aff=ANTI_FOO_BAR)],
        pod("added", labels=FOO_BAR, node="nodeA", aff=ANTI_COMPLEX),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
    ),
    (
        "affinity counts follow an added pod",
        pod("pending", labels=FOO_BAR, aff=affinity(AFF_COMPLEX_TERMS)),
        [
            pod("p1", labels=FOO_BAR, node="nodeA"),
            pod("p2", node="nodeC", aff={**ANTI_FOO_BAR, **affinity(AFF_COMPLEX_TERMS)}),
        ],
        pod("added", labels=FOO_BAR, node="nodeA", aff=ANTI_COMPLEX),
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
    ),
]


def _prefiltered(pending: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[InterPodAffinity, CycleState, Snapshot]:
    pl, snap = plugin_for(ABC, pods)
    state = CycleState()
    _, status = pl.pre_filter(state, pending, snap.node_info_list)
    assert status is None
    return pl, state, snap


def _counts(s: PreFilterState) -> tuple[dict, dict, dict]:
    return s.existing_anti_affinity_counts, s.affinity_counts, s.anti_affinity_counts


@pytest.mark.parametrize(
    ("name", "pending", "existing", "added", "want_anti", "want_aff"),
    ADD_REMOVE_CASES,
    ids=[c[0] for c in ADD_REMOVE_CASES],
)
def test_prefilter_state_add_remove_pod(name, pending, existing, added, want_anti, want_aff):
    _, all_state, _ = _prefiltered(pending, [*existing, added])
    pl, state, snap = _prefiltered(pending, existing)
    before = state.read(PRE_FILTER_STATE_KEY).clone()
    ni = snap.get(added["spec"]["nodeName"])
    assert pl.pre_filter_extensions().add_pod(state, pending, PodInfo(added), ni) is None
    s = state.read(PRE_FILTER_STATE_KEY)
    assert s.anti_affinity_counts == want_anti
    assert s.affinity_counts == want_aff
    assert _counts(s) == _counts(all_state.read(PRE_FILTER_STATE_KEY))
    assert pl.pre_filter_extensions().remove_pod(state, pending, PodInfo(added), ni) is None
    assert _counts(state.read(PRE_FILTER_STATE_KEY)) == _counts(before)


def test_prefilter_state_clone_is_independent():
    _, state, _ = _prefiltered(
        pod("pending", labels=FOO_BAR, aff=ANTI_FOO_BAR), [pod("p1", labels=FOO_BAR, node="nodeA")]
    )
    cloned = state.clone()
    original = state.read(PRE_FILTER_STATE_KEY)
    copy = cloned.read(PRE_FILTER_STATE_KEY)
    assert copy is not original and _counts(copy) == _counts(original)
    copy.anti_affinity_counts[("region", "r9")] = 1
    assert ("region", "r9") not in original.anti_affinity_counts


def _with(*labels: str) -> dict[str, Any]:
    return pod("normal", labels=dict.fromkeys(labels, ""), node="nodeA")


INCOMING_COUNT_CASES = [
    ("no pods", [], pod("aaa-normal"), {}, {}),
    ("incoming pod without terms", [_with("aaa")], pod("aaa-normal"), {}, {}),
    (
        "no pod matches",
        [_with("bbb")],
        pod(aff=affinity([term(ex("aaa"), topology="hostname")], [term(ex("aaa"), topology="hostname")])),
        {},
        {},
    ),
    (
        "one pod matches affinity and anti-affinity",
        [_with("aaa")],
        pod(aff=affinity([term(ex("aaa"), topology="hostname")], [term(ex("aaa"), topology="hostname")])),
        {("hostname", "nodeA"): 1},
        {("hostname", "nodeA"): 1},
    ),
    (
        "a pod matching all affinity terms counts once per term",
        [_with("aaa", "bbb")],
        pod(
            aff=affinity(
                [term(ex("aaa"), topology="hostname"), term(ex("bbb"), topology="hostname")],
                [term(ex("aaa"), topology="hostname")],
            )
        ),
        {("hostname", "nodeA"): 2},
        {("hostname", "nodeA"): 1},
    ),
    (
        "matches anti-affinity, not all affinity terms",
        [_with("aaa")],
        pod(
            aff=affinity(
                [term(ex("aaa"), topology="hostname"), term(ex("bbb"), topology="hostname")],
                [term(ex("aaa"), topology="hostname"), term(ex("bbb"), topology="hostname")],
            )
        ),
        {},
        {("hostname", "nodeA"): 1},
    ),
    (
        "partial anti-affinity match, case 1",
        [_with("aaa", "bbb")],
        pod(
            aff=affinity(
                [term(ex("aaa"), topology="hostname"), term(ex("ccc"), topology="hostname")],
                [term(ex("aaa"), topology="hostname"), term(ex("ccc"), topology="hostname")],
            )
        ),
        {},
        {("hostname", "nodeA"): 1},
    ),
    (
        "partial anti-affinity match, case 2",
        [_with("bbb")],
        pod(
            aff=affinity(
                [term(ex("aaa"), topology="hostname"), term(ex("bbb"), topology="hostname")],
                [term(ex("aaa"), topology="hostname"), term(ex("bbb"), topology="hostname")],
            )
        ),
        {},
        {("hostname", "nodeA"): 1},
    ),
]


@pytest.mark.parametrize(
    ("name", "pods", "incoming", "want_aff", "want_anti"),
    INCOMING_COUNT_CASES,
    ids=[c[0] for c in INCOMING_COUNT_CASES],
)
def test_incoming_affinity_counts(name, pods, incoming, want_aff, want_anti):
    pl, snap = plugin_for([node("nodeA", {"hostname": "nodeA"})], pods)
    pi = PodInfo(incoming)
    gens = node_generations(snap)
    aff, anti = pl.incoming_affinity_counts(snap, gens, pi.required_affinity_terms, pi.required_anti_affinity_terms)
    assert (aff.pairs(), anti.pairs()) == (want_aff, want_anti)


# -- queueing hints, events, args ----------------------------------------------------------------------------------

REQ_SCAN = pod(aff=affinity([term(IN_SCAN, topology="region")]))
ANTI_SCAN = pod(aff=affinity(anti=[term(IN_SCAN, topology="region")]))
TWO_EXISTS = pod(aff=affinity([term(ex("aaa"), topology="hostname"), term(ex("bbb"), topology="hostname")]))
Q, S = QueueingHint.QUEUE, QueueingHint.SKIP
BAD_AFFINITY = pod(aff=affinity([term(IN_SCAN, topology="region"), term(BAD_OPERATOR, topology="region")]))
BAD_ANTI = pod(aff=affinity(anti=[term(BAD_VALUE, topology="region")]))
REQ_SCAN_BAD_PREFERRED = pod(
    aff=affinity([term(IN_SCAN, topology="region")], preferred=[weighted(1, term(BAD_VALUE, topology="region"))])
)


def on_node(labels: dict[str, str], scheduled: bool = True) -> dict[str, Any]:
    return pod("other", labels=labels, node="fake-node" if scheduled else None)


POD_HINT_CASES = [
    ("add a pod matching the affinity", REQ_SCAN, None, on_node(SECURITYSCAN), Q),
    ("add an unscheduled pod", REQ_SCAN, None, on_node(SECURITYSCAN, scheduled=False), S),
    ("add a pod not matching the affinity", REQ_SCAN, None, on_node({"aaa": "a"}), S),
    ("update a pod to match the affinity", REQ_SCAN, on_node({"aaa": "a"}), on_node(SECURITYSCAN), Q),
    ("update a pod matching before and after", REQ_SCAN, on_node({"service": "value2"}), on_node(SECURITYSCAN), S),
    ("update an unscheduled pod", REQ_SCAN, on_node(SECURITYSCAN, False), on_node(SECURITYSCAN, False), S),
    ("update a pod to stop matching the affinity", REQ_SCAN, on_node(SECURITYSCAN), on_node({"aaa": "a"}), S),
    ("multiple terms: match to non-match", TWO_EXISTS, on_node({"aaa": "a"}), on_node(SECURITYSCAN), S),
    ("multiple terms: non-match to match", TWO_EXISTS, on_node({"aaa": "a"}), on_node({"aaa": "", "bbb": ""}), Q),
    (
        "update a pod to stop matching the anti-affinity",
        ANTI_SCAN,
        on_node(SECURITYSCAN),
        on_node({"service": "aaaa"}),
        Q,
    ),
    (
        "update a pod to start matching the anti-affinity",
        ANTI_SCAN,
        on_node({"service": "bbb"}),
        on_node(SECURITYSCAN),
        S,
    ),
    ("delete a pod not matching the anti-affinity", ANTI_SCAN, on_node({"aaa": "a"}), None, S),
    ("delete a pod matching the anti-affinity", ANTI_SCAN, on_node(SECURITYSCAN), None, Q),
    # Upstream parses only the required terms here, and queues the pod when they do not parse.
    ("invalid required affinity", BAD_AFFINITY, None, on_node({"aaa": "a"}), Q),
    ("invalid required anti-affinity", BAD_ANTI, on_node({"aaa": "a"}), None, Q),
    ("invalid preferred terms do not matter", REQ_SCAN_BAD_PREFERRED, None, on_node({"aaa": "a"}), S),
]


@pytest.mark.parametrize(("name", "target", "old", "new", "want"), POD_HINT_CASES, ids=[c[0] for c in POD_HINT_CASES])
def test_is_schedulable_after_pod_change(name, target, old, new, want):
    assert is_schedulable_after_pod_change(target, old, new) == want


ZONE_AFF = pod(aff=affinity([term(IN_SCAN, topology="zone")]))
REGION_AFF = pod(aff=affinity([term(IN_SCAN, topology="region")]))
ZONE_ANTI = pod(aff=affinity(anti=[term(match_labels={"another": "label"}, topology="zone")]))

NODE_HINT_CASES = [
    ("add a node with the affinity key", ZONE_AFF, None, node("a", {"zone": "zone1"}), Q),
    ("add a node without the affinity key", REGION_AFF, None, node("a", {"zone": "zone1"}), S),
    ("update an unrelated label", ZONE_AFF, node("a", {"aaa": "a"}), node("a", {"aaa": "b"}), S),
    ("add an unrelated label", ZONE_AFF, node("a", {"zone": "zone1"}), node("a", {"zone": "zone1", "x": "y"}), S),
    ("change the affinity key's value", ZONE_AFF, node("a", {"zone": "zone1"}), node("a", {"zone": "zone2"}), Q),
    ("gain the affinity key", ZONE_AFF, node("a", {"aaa": "a"}), node("a", {"zone": "zone1"}), Q),
    ("add a node with the anti-affinity key", ZONE_ANTI, None, node("a", {"zone": "zone1"}), Q),
    ("add a node without the anti-affinity key", ZONE_ANTI, None, node("a", {}), Q),
    ("anti: unrelated label added", ZONE_ANTI, node("a", {"zone": "zone1"}), node("a", {"zone": "zone1", "x": "y"}), S),
    ("anti: key's value changes", ZONE_ANTI, node("a", {"zone": "zone1"}), node("a", {"zone": "zone2"}), Q),
    ("anti: key gained", ZONE_ANTI, node("a", {"aaa": "a"}), node("a", {"zone": "zone1"}), S),
    ("anti: key lost", ZONE_ANTI, node("a", {"zone": "zone1"}), node("a", {"aaa": "a"}), Q),
    ("invalid required affinity", BAD_AFFINITY, node("a", {"aaa": "a"}), node("a", {"aaa": "b"}), Q),
    ("invalid required anti-affinity", BAD_ANTI, node("a", {"aaa": "a"}), node("a", {"aaa": "b"}), Q),
    ("invalid preferred terms do not matter", REQ_SCAN_BAD_PREFERRED, None, node("a", {"zone": "zone1"}), S),
]


@pytest.mark.parametrize(("name", "target", "old", "new", "want"), NODE_HINT_CASES, ids=[c[0] for c in NODE_HINT_CASES])
def test_is_schedulable_after_node_change(name, target, old, new, want):
    assert is_schedulable_after_node_change(target, old, new) == want


@pytest.mark.parametrize(
    ("hints", "node_actions"),
    [
        (True, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        (False, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT),
    ],
)
def test_events_to_register(hints, node_actions):
    handle = FrameworkHandle(Snapshot(), feature_gates={"SchedulerQueueingHints": hints})
    events = InterPodAffinity.new(None, handle).events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (NODE, node_actions),
    ]
    assert events[0].hint is is_schedulable_after_pod_change
    assert events[1].hint is is_schedulable_after_node_change


@pytest.mark.parametrize(
    ("args", "weight", "ignore"),
    [
        (None, 1, False),
        ({}, 1, False),
        ({"hardPodAffinityWeight": 0}, 0, False),
        ({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True}, 100, True),
    ],
)
def test_args_defaults(args, weight, ignore):
    pl = InterPodAffinity.new(args, FrameworkHandle(Snapshot()))
    assert (pl.hard_pod_affinity_weight, pl.ignore_preferred_terms_of_existing_pods) == (weight, ignore)


@pytest.mark.parametrize("weight", [-1, 101])
def test_args_validation(weight):
    with pytest.raises(ValueError) as err:
        InterPodAffinity.new({"hardPodAffinityWeight": weight}, FrameworkHandle(Snapshot()))
    assert str(err.value) == f"hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0, 100]"
