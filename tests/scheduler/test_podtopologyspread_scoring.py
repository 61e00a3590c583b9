"""PodTopologySpread PreScore / Score / NormalizeScore, re-expressing upstream's scoring_test.go
(TestPreScoreSkip, TestPreScoreStateEmptyNodes, TestPodTopologySpreadScore)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyk8s.scheduler.framework.interface import Code, CycleState, NodeScore, Status, code_of
from pyk8s.scheduler.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY, go_round_scalar
from tests.scheduler.test_podtopologyspread_support import (
    BAR,
    FOO,
    HOSTNAME,
    UNSCHEDULABLE_TAINT,
    ZONE,
    gates,
    hard,
    labelled,
    make_plugin,
    node,
    pod,
    required_affinity,
    soft,
)

FOO_POD = {"foo": ""}
RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs1", "uid": "rs1", "controller": True}


def hn(name: str, labels: dict[str, str] | None = None, **kw: object) -> dict:
    """A node with its kubernetes.io/hostname label (plus `labels`)."""
    return node(name, {HOSTNAME: name, **(labels or {})}, **kw)  # type: ignore[arg-type]


def zh(name: str, zone: str) -> dict:
    return hn(name, {"zone": zone})


def incoming(*spread: dict, labels: dict[str, str] | None = None, **kw: object) -> dict:
    return pod("p", labels=FOO_POD if labels is None else labels, spread=list(spread), **kw)  # type: ignore[arg-type]


def rs(selector: dict) -> dict:
    return {"metadata": {"name": "rs1", "namespace": "default"}, "spec": {"selector": selector}}


@pytest.mark.parametrize(
    ("name", "p", "nodes", "args", "objects"),
    [
        ("the pod doesn't have soft constraints", pod("p"), [hn("node-a"), hn("node-b")], {"defaultingType": "List"}, {}),
        ("default constraints and a replicaset that doesn't match",
         pod("p", labels={"foo": "bar", "baz": "sup"}, owner={**RS_OWNER, "name": "rs2"}), [node("node-a", {"planet": "mars"})],
         {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": "ScheduleAnyway"}]},
         {"replicasets": [rs({"matchExpressions": [{"key": "tar", "operator": "Exists"}]})]}),
        ("no nodes at all", incoming(soft(1, "zone", FOO)), [], {"defaultingType": "List"}, {}),
        ("only hard constraints", incoming(hard(1, "zone", FOO)), [hn("node-a")], {"defaultingType": "System"}, {}),
    ],
)  # fmt: skip
def test_pre_score_skip(name: str, p: dict, nodes: list, args: dict, objects: dict) -> None:
    pl = make_plugin(nodes, args=args, objects=objects)
    assert code_of(pl.pre_score(CycleState(), p, pl.handle.snapshot.node_info_list)) == Code.SKIP


W = math.log  # topologyNormalizingWeight(n) == log(n + 2)

# (name, pod, nodes, args, objects, gates, want constraints (key, maxSkew), ignored, counts, weights sizes)
PRE_SCORE_CASES = [
    ("normal case", incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, FOO)),
     [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")], {"defaultingType": "List"}, {}, gates(),
     [("zone", 1), (HOSTNAME, 1)], set(), [{"zone1": 0, "zone2": 0}, {}], [2, 3]),
    ("null selector", incoming(soft(1, "zone", None)),
     [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")], {"defaultingType": "List"}, {}, gates(),
     [("zone", 1)], set(), [{"zone1": 0, "zone2": 0}], [2]),
    ("node-x doesn't have label zone", incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, BAR)),
     [zh("node-a", "zone1"), zh("node-b", "zone1"), hn("node-x")], {"defaultingType": "List"}, {}, gates(),
     [("zone", 1), (HOSTNAME, 1)], {"node-x"}, [{"zone1": 0}, {}], [1, 2]),
    ("system default constraints and a replicaset",
     pod("p", labels={"foo": "tar", "baz": "sup"}, owner=RS_OWNER),
     [hn("node-a", {ZONE: "mars"}), hn("node-b", {ZONE: "mars"}), hn("node-c"), hn("node-d")],
     {"defaultingType": "System"}, {"replicasets": [rs(FOO)]}, gates(),
     [(HOSTNAME, 3), (ZONE, 5)], set(), [{}, {"mars": 0, "": 0}], [4, 2]),
    ("default constraints and a replicaset", pod("p", labels={"foo": "tar", "baz": "sup"}, owner=RS_OWNER),
     [hn("node-a", {"rack": "rack1", "planet": "mars"})],
     {"defaultingType": "List", "defaultConstraints": [
         {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway"},
         {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"},
         {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": "ScheduleAnyway"}]},
     {"replicasets": [rs(FOO)]}, gates(), [(HOSTNAME, 1), ("planet", 2)], set(), [{}, {"mars": 0}], [1, 1]),
    ("default constraints and a replicaset, but pod has constraints",
     pod("p", labels={"foo": "bar", "baz": "sup"}, owner=RS_OWNER,
         spread=[hard(1, "zone", BAR), soft(2, "planet", {"matchLabels": {"baz": "sup"}})]),
     [node("node-a", {"planet": "mars", "galaxy": "andromeda"})],
     {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 2, "topologyKey": "galaxy", "whenUnsatisfiable": "ScheduleAnyway"}]},
     {"replicasets": [rs(FOO)]}, gates(), [("planet", 2)], set(), [{"mars": 0}], [1]),
    ("NodeAffinityPolicy honored with labelSelectors", incoming(soft(1, "zone", BAR), node_selector={"foo": ""}),
     [hn("node-a", {"zone": "zone1", "foo": ""}), hn("node-b", {"zone": "zone1", "foo": ""}), zh("node-x", "zone2")],
     {"defaultingType": "List"}, {}, gates(inclusion=True), [("zone", 1)], set(), [{"zone1": 0, "zone2": 0}], [2]),
    ("NodeTaintsPolicy honored", incoming(soft(1, "zone", BAR, taints_policy="Honor")),
     [hn("node-a", {"zone": "zone1", "foo": ""}), hn("node-b", {"zone": "zone1", "foo": ""}),
      hn("node-x", {"zone": "zone2"}, taints=UNSCHEDULABLE_TAINT)],
     {"defaultingType": "List"}, {}, gates(inclusion=True), [("zone", 1)], set(), [{"zone1": 0, "zone2": 0}], [2]),
]  # fmt: skip


@pytest.mark.parametrize("vectorize", [True, False], ids=["vector", "per-node"])
@pytest.mark.parametrize("case", PRE_SCORE_CASES, ids=[c[0] for c in PRE_SCORE_CASES])
def test_pre_score_state(case: tuple, vectorize: bool) -> None:
    _, p, nodes, args, objects, fg, want_constraints, ignored, counts, sizes = case
    pl = make_plugin(nodes, args=args, objects=objects, feature_gates=fg)
    pl.vectorize = vectorize
    state = CycleState()
    assert pl.pre_score(state, p, pl.handle.snapshot.node_info_list) is None
    s = state.read(PRE_SCORE_STATE_KEY)
    assert [(c.topology_key, c.max_skew) for c in s.constraints] == want_constraints
    assert s.ignored_nodes == ignored
    assert s.topology_value_to_pod_counts == counts
    assert s.topology_normalizing_weight == [W(n + 2) for n in sizes]


A_B_C_D = ["node-a", "node-b", "node-c", "node-d"]

# (name, pod, candidate nodes, failed nodes, existing pods, objects, gates, want scores)
SCORE_CASES = [
    ("one constraint on node, no existing pods", incoming(soft(1, HOSTNAME, FOO)), [hn("node-a"), hn("node-b")], [],
     [], {}, gates(), [100, 100]),
    ("one constraint on node, only one node is candidate", incoming(soft(1, HOSTNAME, FOO)), [hn("node-a")],
     [hn("node-b")], labelled({"node-a": 2, "node-b": 1}), {}, gates(), [100]),
    ("one constraint on node, all nodes have the same number of matching pods", incoming(soft(1, HOSTNAME, FOO)),
     [hn("node-a"), hn("node-b")], [], labelled({"node-a": 1, "node-b": 1}), {}, gates(), [100, 100]),
    ("one constraint on node, all 4 nodes are candidates", incoming(soft(1, HOSTNAME, FOO)),
     [hn(n) for n in A_B_C_D], [], labelled({"node-a": 2, "node-b": 1, "node-d": 3}), {}, gates(), [20, 60, 100, 0]),
    ("one constraint on node, null selector", incoming(soft(1, HOSTNAME, None)), [hn(n) for n in A_B_C_D], [],
     labelled({"node-a": 2, "node-b": 1, "node-d": 3}), {}, gates(), [100, 100, 100, 100]),
    ("one constraint on node, 4 candidates, maxSkew=2", incoming(soft(2, HOSTNAME, FOO)), [hn(n) for n in A_B_C_D], [],
     labelled({"node-a": 2, "node-b": 1, "node-d": 3}), {}, gates(), [33, 66, 100, 16]),
    ("one constraint on node, 4 candidates, maxSkew=3", incoming(soft(3, HOSTNAME, FOO)), [hn(n) for n in A_B_C_D], [],
     labelled({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}), {}, gates(), [44, 66, 77, 100]),
    ("system defaulting, nodes without zone, pods match a service", pod("p", labels=FOO_POD),
     [hn(n) for n in A_B_C_D], [], labelled({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}),
     {"services": [{"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"foo": ""}}}]}, gates(),
     [44, 66, 77, 100]),
    ("one constraint on node, 3 out of 4 nodes are candidates", incoming(soft(1, HOSTNAME, FOO)),
     [hn("node-a"), hn("node-b"), hn("node-x")], [hn("node-y")],
     labelled({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}), {}, gates(), [33, 83, 100]),
    ("one constraint on node, one candidate lacks the topology key", incoming(soft(1, HOSTNAME, FOO)),
     [hn("node-a"), node("node-b", {"n": "node-b"}), hn("node-x")], [hn("node-y")],
     labelled({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}), {}, gates(), [16, 0, 100]),
    ("one constraint on zone, 3 out of 4 nodes are candidates", incoming(soft(1, "zone", FOO)),
     [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")], [zh("node-y", "zone2")],
     labelled({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}), {}, gates(), [75, 75, 100]),
    ("two constraints on zone and node, 2 out of 4 nodes are candidates",
     incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, FOO)), [zh("node-a", "zone1"), zh("node-x", "zone2")],
     [zh("node-b", "zone1"), zh("node-y", "zone2")], labelled({"node-a": 2, "node-b": 1, "node-x": 2, "node-y": 4}),
     {}, gates(), [100, 63]),
    ("two constraints on zone, 2 out of 4 nodes are candidates",
     incoming(soft(1, "zone", FOO), soft(1, "zone", BAR), labels={"foo": "", "bar": ""}),
     [node("node-a", {"zone": "zone1"}), node("node-x", {"zone": "zone2"})],
     [node("node-b", {"zone": "zone1"}), node("node-y", {"zone": "zone2"})],
     [pod("p-a1", "node-a", {"foo": "", "bar": ""}), pod("p-a2", "node-a", {"foo": ""}),
      pod("p-b1", "node-b", {"foo": "", "bar": ""}), pod("p-y1", "node-y", {"foo": ""}),
      pod("p-y2", "node-y", {"foo": "", "bar": ""}), pod("p-y3", "node-y", {"foo": ""})], {}, gates(), [85, 100]),
    ("zone and node with different labelSelectors",
     incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, BAR), labels={"foo": "", "bar": ""}),
     [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2"), zh("node-y", "zone2")], [],
     [pod("p-a1", "node-a", {"foo": ""}), pod("p-b1", "node-b", {"foo": "", "bar": ""}),
      pod("p-y1", "node-y", {"foo": ""}), pod("p-y2", "node-y", {"bar": ""})], {}, gates(), [60, 20, 100, 60]),
    ("zone and node with different labelSelectors, some nodes have 0 pods",
     incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, BAR), labels={"foo": "", "bar": ""}),
     [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2"), zh("node-y", "zone2")], [],
     [pod("p-b1", "node-b", {"bar": ""}), pod("p-x1", "node-x", {"foo": ""}),
      pod("p-y1", "node-y", {"foo": "", "bar": ""})], {}, gates(), [100, 60, 40, 0]),
    ("zone and node with different labelSelectors, 3 out of 4 candidates",
     incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, BAR), labels={"foo": "", "bar": ""}),
     [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")], [zh("node-y", "zone2")],
     [pod("p-a1", "node-a", {"foo": ""}), pod("p-b1", "node-b", {"foo": "", "bar": ""}),
      pod("p-y1", "node-y", {"foo": ""}), pod("p-y2", "node-y", {"bar": ""})], {}, gates(), [50, 25, 100]),
    ("existing pods in a different namespace do not count", incoming(soft(1, HOSTNAME, FOO)),
     [hn("node-a"), hn("node-b")], [],
     [pod("p-a1", "node-a", FOO_POD, ns="ns1"), *labelled({"node-a": 1, "node-b": 2})], {}, gates(), [100, 33]),
    ("terminating pods are excluded", incoming(soft(1, HOSTNAME, FOO)), [hn("node-a"), hn("node-b")], [],
     [pod("p-a", "node-a", FOO_POD, terminating=True), pod("p-b", "node-b", FOO_POD)], {}, gates(), [100, 0]),
    ("minDomains has no effect when ScheduleAnyway", incoming(soft(2, "node", FOO, min_domains=10)),
     [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")], [],
     labelled({"node-a": 2, "node-b": 2, "node-c": 1}), {}, gates(), [75, 75, 100]),
    ("NodeAffinityPolicy honored with labelSelectors", incoming(soft(1, "node", FOO), node_selector={"foo": ""}),
     [node("node-a", {"node": "node-a", "foo": ""}), node("node-b", {"node": "node-b", "foo": ""}),
      node("node-c", {"node": "node-c"})], [], labelled({"node-a": 2, "node-b": 1, "node-c": 1}), {},
     gates(inclusion=True), [0, 33, 100]),
    ("NodeAffinityPolicy ignored with labelSelectors",
     incoming(soft(1, "node", FOO, affinity_policy="Ignore"), node_selector={"foo": ""}),
     [node("node-a", {"node": "node-a", "foo": ""}), node("node-b", {"node": "node-b", "foo": ""}),
      node("node-c", {"node": "node-c"})], [], labelled({"node-a": 2, "node-b": 1, "node-c": 1}), {},
     gates(inclusion=True), [66, 100, 100]),
    ("NodeAffinityPolicy honored with nodeAffinity",
     incoming(soft(1, "node", FOO), affinity=required_affinity("foo", "In", [""])),
     [node("node-a", {"node": "node-a", "foo": ""}), node("node-b", {"node": "node-b", "foo": ""}),
      node("node-c", {"node": "node-c"})], [], labelled({"node-a": 2, "node-b": 1, "node-c": 1}), {},
     gates(inclusion=True), [0, 33, 100]),
    ("NodeTaintsPolicy honored", incoming(soft(1, "node", FOO, taints_policy="Honor")),
     [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"}),
      node("node-c", {"node": "node-c"}, taints=UNSCHEDULABLE_TAINT)], [],
     labelled({"node-a": 2, "node-b": 1, "node-c": 1}), {}, gates(inclusion=True), [0, 33, 100]),
    ("NodeTaintsPolicy ignored", incoming(soft(1, "node", FOO)),
     [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"}),
      node("node-c", {"node": "node-c"}, taints=UNSCHEDULABLE_TAINT)], [],
     labelled({"node-a": 2, "node-b": 1, "node-c": 1}), {}, gates(inclusion=True), [66, 100, 100]),
    ("matchLabelKeys ignored when feature gate disabled",
     incoming(soft(1, "zone", FOO, match_label_keys=["baz"]), soft(1, HOSTNAME, BAR, match_label_keys=["baz"]),
              labels={"foo": "", "bar": "", "baz": ""}),
     [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-c", "zone2"), zh("node-d", "zone2")], [],
     [pod("p-a1", "node-a", {"foo": ""}), pod("p-b1", "node-b", {"foo": "", "bar": ""}),
      pod("p-y1", "node-c", {"foo": ""}), pod("p-y2", "node-c", {"bar": ""})], {}, gates(), [60, 20, 60, 100]),
    ("matchLabelKeys ANDed with an empty labelSelector",
     incoming(soft(1, "zone", {}, match_label_keys=["foo"]), soft(1, HOSTNAME, {}, match_label_keys=["bar"]),
              labels={"foo": "", "bar": ""}),
     [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-c", "zone2"), zh("node-d", "zone2")], [],
     [pod("p-a1", "node-a", {"foo": ""}), pod("p-b1", "node-b", {"foo": "", "bar": ""}),
      pod("p-y1", "node-c", {"foo": ""}), pod("p-y2", "node-c", {"bar": ""})], {}, gates(match_label_keys=True),
     [60, 20, 60, 100]),
    ("matchLabelKeys ANDed with a non-empty labelSelector",
     incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, BAR, match_label_keys=["baz"]),
              labels={"foo": "", "bar": "", "baz": ""}),
     [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-c", "zone2"), zh("node-d", "zone2")], [],
     [pod("p-a1", "node-a", {"foo": ""}), pod("p-b1", "node-b", {"foo": "", "bar": "", "baz": ""}),
      pod("p-c1", "node-c", {"foo": ""}), pod("p-c2", "node-c", {"bar": ""}),
      pod("p-d3", "node-c", {"bar": "", "baz": ""})], {}, gates(match_label_keys=True), [60, 20, 60, 100]),
]  # fmt: skip


@pytest.mark.parametrize("vectorize", [True, False], ids=["vector", "per-node"])
@pytest.mark.parametrize("case", SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_score(case: tuple, vectorize: bool) -> None:
    _, p, candidates, failed, existing, objects, fg, want = case
    # upstream's scoring tests run the plugin with system defaulting
    pl = make_plugin(
        candidates + failed, existing, args={"defaultingType": "System"}, objects=objects, feature_gates=fg
    )
    pl.vectorize = vectorize
    snap = pl.handle.snapshot
    filtered = [snap.get(n["metadata"]["name"]) for n in candidates]
    state = CycleState()
    assert pl.pre_score(state, p, filtered) is None
    scores = []
    for ni in filtered:
        raw, st = pl.score(state, p, ni)
        assert st is None
        scores.append(NodeScore(ni.name, raw))
    idx = np.array([snap.positions[ni.name] for ni in filtered], dtype=np.int64)
    raw = pl.score_vector(state, p, snap, idx)
    assert raw.tolist() == [s.score for s in scores]
    assert pl.score_extensions().normalize_score(state, p, scores) is None
    assert [s.score for s in scores] == want
    assert pl.normalize_vector(state, p, raw).tolist() == want


def test_score_without_pre_score_is_an_error() -> None:
    pl = make_plugin([hn("node-a")])
    ni = pl.handle.snapshot.node_info_list[0]
    want = Status(Code.ERROR, 'error reading "PreScorePodTopologySpread" from cycleState: not found')
    assert pl.score(CycleState(), incoming(), ni) == (0, want)
    assert pl.normalize_score(CycleState(), incoming(), [NodeScore("node-a", 1)]) == want


def test_normalize_all_ignored_and_zero() -> None:
    pl = make_plugin([hn("node-a"), node("node-b", {"other": "x"})])
    state = CycleState()
    p = incoming(soft(1, HOSTNAME, FOO))
    assert pl.pre_score(state, p, pl.handle.snapshot.node_info_list) is None
    scores = [NodeScore("node-a", 0), NodeScore("node-b", 0)]
    pl.normalize_score(state, p, scores)
    assert [s.score for s in scores] == [100, 0]  # max 0: every scored node gets 100, the ignored 0


@pytest.mark.parametrize(("x", "want"), [(0.0, 0), (0.49999999999999994, 0), (0.5, 1), (1.5, 2), (2.5, 3), (7.49, 7)])
def test_go_round(x: float, want: int) -> None:
    assert go_round_scalar(x) == want
