"""InterPodAffinity PreScore/Score/NormalizeScore (cases re-expressed from upstream's interpodaffinity
scoring_test.go: TestPreferredAffinity and TestPreferredAffinityWithHardPodAffinitySymmetricWeight)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyk8s.scheduler.framework.interface import Code, CycleState, NodeScore, Status

from .test_interpodaffinity import affinity, expr, node, plugin_for, pod, term, weighted

CHINA, INDIA = {"region": "China"}, {"region": "India"}
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
S1, S2 = {"security": "S1"}, {"security": "S2"}
TEAM1_SELECTOR = {"matchExpressions": [expr("team", "In", "team1")]}

STAY_WITH_S1_IN_REGION = affinity(preferred=[weighted(5, term(expr("security", "In", "S1"), topology="region"))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[weighted(6, term(expr("security", "In", "S2"), topology="region"))])
MIXED_OPERATORS = affinity(
    preferred=[
        weighted(8, term(expr("security", "NotIn", "S1"), expr("security", "In", "S2"), topology="region")),
        weighted(2, term(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"), topology="region")),
    ]
)
HARD_AFFINITY = affinity(
    [
        term(expr("security", "In", "S1", "value2"), topology="region"),
        term(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"), topology="region"),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(preferred_anti=[weighted(5, term(expr("security", "In", "S1"), topology="az"))])
AWAY_FROM_S2_IN_AZ = affinity(preferred_anti=[weighted(5, term(expr("security", "In", "S2"), topology="az"))])
WITH_S1_AWAY_FROM_S2 = affinity(
    preferred=[weighted(8, term(expr("security", "In", "S1"), topology="region"))],
    preferred_anti=[weighted(5, term(expr("security", "In", "S2"), topology="az"))],
)
NS_SELECTOR_TERM = term(
    expr("security", "In", "S1"), topology="region", namespaces=["subteam2.team2"], ns_selector=TEAM1_SELECTOR
)
AFFINITY_NS_SELECTOR = affinity(preferred=[weighted(5, NS_SELECTOR_TERM)])
ANTI_AFFINITY_NS_SELECTOR = affinity(preferred_anti=[weighted(5, NS_SELECTOR_TERM)])

SKIP = Status(Code.SKIP)


def run_score(
    incoming: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    args: dict[str, Any] | None = None,
) -> Status | list[int]:
    """PreScore, Score on every node, NormalizeScore (the vectorized forms checked against them)."""
    pl, snap = plugin_for(nodes, pods, args)
    state = CycleState()
    status = pl.pre_score(state, incoming, snap.node_info_list)
    if status is not None:
        return status
    raw = []
    for ni in snap.node_info_list:
        score, st = pl.score(state, incoming, ni)
        assert st is None
        raw.append(score)
    vec = pl.score_vector(state, incoming, snap, np.arange(len(raw), dtype=np.int64))
    assert vec.tolist() == raw
    scores = [NodeScore(ni.name, s) for ni, s in zip(snap.node_info_list, raw, strict=True)]
    assert pl.score_extensions().normalize_score(state, incoming, scores) is None
    normalized = [s.score for s in scores]
    assert pl.normalize_vector(state, incoming, vec).tolist() == normalized
    return normalized


def on(
    node_name: str, labels: dict[str, str] | None = None, aff: dict[str, Any] | None = None, ns: str = ""
) -> dict[str, Any]:
    return pod(f"on-{node_name}", ns=ns, labels=labels, node=node_name, aff=aff)


N3 = [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)]
C5 = [node("node1", CHINA), node("node2", INDIA), node("node3", CHINA), node("node4", CHINA), node("node5", INDIA)]

PREFERRED_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], bool, Any]] = [
    # (name, incoming pod, existing pods, nodes, ignorePreferredTermsOfExistingPods, want: scores or status)
    ("no affinity anywhere: skipped", pod(labels=S1), [], N3, False, SKIP),
    (
        "affinity: matching pod in the node's region scores high",
        pod(labels=S1, aff=STAY_WITH_S1_IN_REGION),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        N3,
        False,
        [100, 0, 0],
    ),
    (
        "affinity: every node of the matching region scores the same",
        pod(aff=STAY_WITH_S1_IN_REGION),
        [on("node1", S1)],
        [node("node1", CHINA), node("node2", CHINA_AZ1), node("node3", INDIA)],
        False,
        [100, 100, 0],
    ),
    (
        "affinity: the region with more matching pods wins",
        pod(labels=S1, aff=STAY_WITH_S2_IN_REGION),
        [on("node1", S2), on("node1", S2), on("node2", S2), on("node3", S2), on("node4", S2), on("node5", S2)],
        C5,
        False,
        [100, 0, 100, 100, 0],
    ),
    (
        "affinity: mixed operators, some terms failing",
        pod(labels=S1, aff=MIXED_OPERATORS),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        N3,
        False,
        [20, 100, 0],
    ),
    (
        "symmetry: existing pods' preferred affinity",
        pod(labels=S2),
        [on("node1", S1, STAY_WITH_S1_IN_REGION), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        N3,
        False,
        [0, 100, 0],
    ),
    (
        "symmetry: existing pod's preferred affinity with a namespaceSelector",
        pod(ns="subteam1.team1", labels=S1),
        [on("node1", S1, AFFINITY_NS_SELECTOR), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        N3,
        False,
        [100, 0, 0],
    ),
    (
        "symmetry: existing pod's preferred anti-affinity with a namespaceSelector",
        pod(ns="subteam1.team1", labels=S1),
        [on("node1", S1, ANTI_AFFINITY_NS_SELECTOR), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        N3,
        False,
        [0, 100, 100],
    ),
    (
        "symmetry: existing pods' required affinity counts hardPodAffinityWeight",
        pod(labels=S1),
        [on("node1", S1, HARD_AFFINITY), on("node2", S2, HARD_AFFINITY)],
        N3,
        False,
        [100, 100, 0],
    ),
    (
        "anti-affinity: node without matching pods scores high",
        pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [on("node1", S1), on("node2", S2)],
        [node("node1", AZ1), node("node2", CHINA)],
        False,
        [0, 100],
    ),
    (
        "anti-affinity: node without the topology key scores high",
        pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [on("node1", S1), on("node2", S1)],
        [node("node1", AZ1), node("node2", CHINA)],
        False,
        [0, 100],
    ),
    (
        "anti-affinity: more matching pods, lower score",
        pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [on("node1", S1), on("node1", S1), on("node2", S2)],
        [node("node1", AZ1), node("node2", INDIA)],
        False,
        [0, 100],
    ),
    (
        "symmetry: existing pods' preferred anti-affinity",
        pod(labels=S2),
        [on("node1", S1, AWAY_FROM_S2_IN_AZ), on("node2", S2, AWAY_FROM_S1_IN_AZ)],
        [node("node1", AZ1), node("node2", AZ2)],
        False,
        [0, 100],
    ),
    (
        "affinity and anti-affinity together",
        pod(labels=S1, aff=WITH_S1_AWAY_FROM_S2),
        [on("node1", S1), on("node2", S1)],
        [node("node1", CHINA), node("node2", AZ1)],
        False,
        [100, 0],
    ),
    (
        "same-service pods: together in a region, apart on nodes",
        pod(labels=S1, aff=WITH_S1_AWAY_FROM_S2),
        [
            on("node1", S1),
            on("node1", S1),
            on("node2", S1),
            on("node3", S1),
            on("node3", S1),
            on("node4", S1),
            on("node5", S1),
        ],
        [
            node("node1", CHINA_AZ1),
            node("node2", INDIA),
            node("node3", CHINA),
            node("node4", CHINA),
            node("node5", INDIA),
        ],
        False,
        [100, 0, 100, 100, 0],
    ),
    (
        "affinity, anti-affinity and both symmetries",
        pod(labels=S1, aff=WITH_S1_AWAY_FROM_S2),
        [
            on("node1", S1),
            on("node2", S2),
            on("node3", None, WITH_S1_AWAY_FROM_S2),
            on("node4", None, AWAY_FROM_S1_IN_AZ),
        ],
        [node("node1", CHINA), node("node2", AZ1), node("node3", INDIA), node("node4", AZ2)],
        False,
        [100, 0, 100, 0],
    ),
    (
        "only some nodes of a region host pods with affinity",
        pod(labels=S1),
        [on("node1", S1), on("node2", None, WITH_S1_AWAY_FROM_S2)],
        [node("node1", CHINA), node("node2", CHINA)],
        False,
        [0, 0],
    ),
    (
        "affinity with pods matching the namespaceSelector",
        pod(ns="subteam1.team1", labels=S1, aff=AFFINITY_NS_SELECTOR),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        [node("node1", CHINA), node("node2", INDIA)],
        False,
        [100, 0],
    ),
    (
        "affinity with pods matching the namespaceSelector and the namespaces",
        pod(ns="subteam1.team1", labels=S1, aff=AFFINITY_NS_SELECTOR),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam2.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        [node("node1", CHINA), node("node2", INDIA)],
        False,
        [100, 0],
    ),
    (
        "anti-affinity with pods matching the namespaceSelector",
        pod(ns="subteam1.team1", labels=S1, aff=ANTI_AFFINITY_NS_SELECTOR),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        [node("node1", CHINA), node("node2", INDIA)],
        False,
        [0, 100],
    ),
    (
        "anti-affinity with pods matching the namespaceSelector and the namespaces",
        pod(ns="subteam1.team1", labels=S1, aff=ANTI_AFFINITY_NS_SELECTOR),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam2.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        [node("node1", CHINA), node("node2", INDIA)],
        False,
        [0, 100],
    ),
    (
        "preferred terms of existing pods ignored: skipped",
        pod(labels=S2),
        [on("node1", S1, WITH_S1_AWAY_FROM_S2), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        [node("node1", CHINA), node("node2", INDIA)],
        True,
        SKIP,
    ),
    (
        "preferred terms of existing pods not ignored",
        pod(labels=S2),
        [on("node1", S1, WITH_S1_AWAY_FROM_S2), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        [node("node1", CHINA), node("node2", INDIA)],
        False,
        [0, 100],
    ),
    (
        # As upstream: the flag only skips pods without preferred terms; otherwise existing pods' preferred
        # terms still count (here -5 in az1 cancels the pod's own +5 in China).
        "ignorePreferredTermsOfExistingPods does not apply to a pod with preferred terms",
        pod(labels=S1, aff=STAY_WITH_S1_IN_REGION),
        [on("node1", S1, AWAY_FROM_S1_IN_AZ), on("node2", S2)],
        [node("node1", {**CHINA, **AZ1}), node("node2", INDIA)],
        True,
        [0, 0],
    ),
    ("no nodes to score", pod(labels=S2), [], [], False, SKIP),
]


@pytest.mark.parametrize(
    ("name", "incoming", "pods", "nodes", "ignore", "want"), PREFERRED_CASES, ids=[c[0] for c in PREFERRED_CASES]
)
def test_preferred_affinity(name, incoming, pods, nodes, ignore, want):
    got = run_score(incoming, pods, nodes, {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": ignore})
    assert got == want


def test_invalid_selector_fails_prescore():
    bad = pod(aff=affinity(preferred=[weighted(8, term(expr("security", "Bogus", "x"), topology="region"))]))
    got = run_score(bad, [], [node("node1", CHINA), node("node2", CHINA)])
    assert isinstance(got, Status) and got.code == Code.ERROR
    assert got.message().startswith("failed to parse pod: ")


HARD_POD_AFFINITY = affinity(
    [
        term(
            expr("service", "In", "S1"),
            topology="region",
            namespaces=["", "subteam2.team2"],
            ns_selector=TEAM1_SELECTOR,
        )
    ]
)
SERVICE_S1 = {"service": "S1"}
HARD_PODS = [on("node1", None, HARD_POD_AFFINITY), on("node2", None, HARD_POD_AFFINITY)]

HARD_WEIGHT_CASES = [
    ("default weight", "", 1, [100, 100, 0]),
    ("zero weight: nothing to score", "", 0, SKIP),
    ("namespace neither listed nor selected", "subteam1.team2", 1, SKIP),
    ("namespace picked by the namespaceSelector", "subteam1.team1", 1, [100, 100, 0]),
    ("namespace listed in namespaces", "subteam2.team2", 1, [100, 100, 0]),
]


@pytest.mark.parametrize(("name", "ns", "weight", "want"), HARD_WEIGHT_CASES, ids=[c[0] for c in HARD_WEIGHT_CASES])
def test_hard_pod_affinity_symmetric_weight(name, ns, weight, want):
    got = run_score(pod(ns=ns, labels=SERVICE_S1), HARD_PODS, N3, {"hardPodAffinityWeight": weight})
    assert got == want


def test_node_without_labels_contributes_nothing():
    bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}, "status": {}}
    # The existing pod's affinity selects the incoming pod, but its node has no labels to credit.
    got = run_score(pod(labels=S1), [on("bare", S1, STAY_WITH_S1_IN_REGION)], [bare, node("node1", CHINA)])
    assert got == SKIP


def test_zero_sum_pair_still_scored():
    # +5 and -5 on the same pair: the pair exists, so PreScore does not skip; all scores normalise to 0.
    both = affinity(
        preferred=[weighted(5, term(expr("security", "In", "S1"), topology="region"))],
        preferred_anti=[weighted(5, term(expr("security", "In", "S1"), topology="region"))],
    )
    assert run_score(pod(aff=both), [on("node1", S1)], [node("node1", CHINA), node("node2", INDIA)]) == [0, 0]


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ([1, 2, 4], [0, 33, 100]),
        ([-5, 0, 8], [0, 38, 100]),
        ([7, 7, 7], [0, 0, 0]),
        ([3], [0]),
        ([-10, -3, -1], [0, 77, 100]),
    ],
)
def test_normalize_score(raw, want):
    incoming = pod(labels=S1, aff=STAY_WITH_S1_IN_REGION)
    pl, snap = plugin_for([node("node1", CHINA)], [on("node1", S1)])
    state = CycleState()
    assert pl.pre_score(state, incoming, snap.node_info_list) is None
    scores = [NodeScore(f"n{i}", s) for i, s in enumerate(raw)]
    assert pl.normalize_score(state, pod(), scores) is None
    assert [s.score for s in scores] == want


def test_score_without_prescore_is_an_error():
    pl, snap = plugin_for([node("node1", CHINA)], [])
    _, status = pl.score(CycleState(), pod(), snap.node_info_list[0])
    assert status is not None and status.code == Code.ERROR
