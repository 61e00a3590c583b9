"""InterPodAffinity PreScore/Score/NormalizeScore (cases re-expressed from upstream's interpodaffinity
scoring_test.go: TestPreferredAffinity and TestPreferredAffinityWithHardPodAffinitySymmetricWeight)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyk8s.scheduler.config import API_VERSION, KIND, config_from_dict
from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import Code, CycleState, FitError, NodeScore, Status
from pyk8s.scheduler.framework.runtime import Framework
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.plugins.interpodaffinity import NAME
from pyk8s.scheduler.plugins.registry import build_framework
from pyk8s.scheduler.schedule_one import ScheduleAlgorithm, ScheduleError

from .test_interpodaffinity import affinity, expr, node, plugin_for, pod, term, weighted
from .wrappers import make_node

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


BAD_VALUE = expr("security", "In", "{{.bad-value.}}")
BAD_VALUE_ERROR = (
    'values[0][security]: Invalid value: "{{.bad-value.}}": a valid label must be an empty string or consist of'
    " alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g."
    " 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
BAD_OPERATOR = expr("security", "Bogus", "x")
CHINA2 = [node("node1", CHINA), node("node2", CHINA)]


def parse_error(message: str) -> Status:
    return Status(Code.ERROR, "failed to parse pod: " + message)


INVALID_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], bool, Any]] = [
    # (name, incoming pod, existing pods, nodes, ignorePreferredTermsOfExistingPods, want: scores or status).
    # Upstream parses every term of the incoming pod in PreScore (framework.NewPodInfo) and fails with an Error
    # naming the first invalid selector of each kind of term.
    (
        "invalid Affinity fails PreScore",
        pod(aff=affinity(preferred=[weighted(8, term(BAD_VALUE, topology="region"))])),
        [],
        CHINA2,
        False,
        parse_error("preferredAffinityTerms: " + BAD_VALUE_ERROR),
    ),
    (
        "invalid AntiAffinity fails PreScore",
        pod(aff=affinity(preferred_anti=[weighted(5, term(BAD_VALUE, topology="az"))])),
        [],
        CHINA2,
        False,
        parse_error("preferredAntiAffinityTerms: " + BAD_VALUE_ERROR),
    ),
    (
        "an unknown operator fails PreScore, even after a valid term",
        pod(aff=affinity(preferred=[weighted(1, term(expr("security", "In", "S1"))), weighted(8, term(BAD_OPERATOR))])),
        [],
        CHINA2,
        False,
        parse_error('preferredAffinityTerms: "Bogus" is not a valid label selector operator'),
    ),
    (
        "an invalid namespaceSelector fails PreScore",
        pod(aff=affinity(preferred=[weighted(1, term(topology="region", ns_selector={"matchLabels": {"t": "b@d"}}))])),
        [],
        CHINA2,
        False,
        parse_error(
            'preferredAffinityTerms: values[0][t]: Invalid value: "b@d": a valid label must be an empty string or'
            " consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric"
            " character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is"
            " '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        ),
    ),
    (
        "every kind of term that fails is named, in upstream's order",
        pod(
            aff=affinity(
                required=[term(BAD_OPERATOR, topology="region")],
                preferred=[weighted(8, term(BAD_VALUE, topology="region"))],
                preferred_anti=[weighted(5, term(BAD_VALUE, topology="az"))],
            )
        ),
        [],
        CHINA2,
        False,
        parse_error(
            '[requiredAffinityTerms: "Bogus" is not a valid label selector operator, preferredAffinityTerms: '
            + BAD_VALUE_ERROR
            + ", preferredAntiAffinityTerms: "
            + BAD_VALUE_ERROR
            + "]"
        ),
    ),
    (
        "an invalid required term fails PreScore too",
        pod(aff=affinity(anti=[term(BAD_OPERATOR, topology="region")])),
        [],
        CHINA2,
        False,
        parse_error('requiredAntiAffinityTerms: "Bogus" is not a valid label selector operator'),
    ),
    (
        # The flag's Skip comes before parsing, and only preferred terms count as constraints.
        "ignorePreferredTermsOfExistingPods skips a pod whose only invalid terms are required",
        pod(aff=affinity(anti=[term(BAD_OPERATOR, topology="region")])),
        [],
        CHINA2,
        True,
        SKIP,
    ),
    (
        "ignorePreferredTermsOfExistingPods does not skip invalid preferred terms",
        pod(aff=affinity(preferred=[weighted(8, term(BAD_VALUE, topology="region"))])),
        [],
        CHINA2,
        True,
        parse_error("preferredAffinityTerms: " + BAD_VALUE_ERROR),
    ),
    (
        "no nodes: skipped before parsing",
        pod(aff=affinity(preferred=[weighted(8, term(BAD_VALUE))])),
        [],
        [],
        False,
        SKIP,
    ),
    (
        # Upstream's snapshot keeps what parses of an existing pod (NodeInfo.AddPod ignores the parse error): its
        # invalid preferred terms count for nothing, its valid required term still scores.
        "an existing pod's invalid terms are dropped, its valid ones still count",
        pod(labels=S1),
        [
            on(
                "node1",
                aff=affinity(
                    [term(expr("security", "In", "S1"), topology="region")],
                    preferred_anti=[weighted(50, term(BAD_VALUE, topology="region"))],
                ),
            ),
            on("node2", aff=affinity(preferred=[weighted(5, term(BAD_OPERATOR, topology="region"))])),
        ],
        [node("node1", CHINA), node("node2", INDIA)],
        False,
        [100, 0],
    ),
]


@pytest.mark.parametrize(
    ("name", "incoming", "pods", "nodes", "ignore", "want"), INVALID_CASES, ids=[c[0] for c in INVALID_CASES]
)
def test_invalid_selectors(name, incoming, pods, nodes, ignore, want):
    got = run_score(incoming, pods, nodes, {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": ignore})
    assert got == want


def _algorithm(plugins: dict[str, Any]) -> tuple[Framework, ScheduleAlgorithm]:
    config = config_from_dict({"apiVersion": API_VERSION, "kind": KIND, "profiles": [{"plugins": plugins}]})
    snapshot = Snapshot.from_objects([make_node("node1", labels=CHINA), make_node("node2", labels=CHINA)], [])
    return build_framework(config, "default-scheduler", FrameworkHandle(snapshot)), ScheduleAlgorithm(None, snapshot)


INVALID_PREFERRED = pod(aff=affinity(preferred=[weighted(8, term(BAD_VALUE, topology="region"))]))


def test_invalid_preferred_terms_stop_the_default_profile_at_prefilter():
    fw, algorithm = _algorithm({})
    with pytest.raises(FitError) as fit:
        algorithm.schedule_pod(fw, CycleState(), INVALID_PREFERRED)
    want = f"0/2 nodes are available: parsing pod: preferredAffinityTerms: {BAD_VALUE_ERROR}."
    assert fit.value.message() == want


def test_an_error_from_prescore_fails_the_scheduling_attempt():
    # Without InterPodAffinity's PreFilter the invalid term reaches PreScore: upstream's prioritizeNodes returns
    # the Error, and the attempt fails with it (the pod is then recorded as a SchedulerError and backs off).
    no_filters = {"preFilter": {"disabled": [{"name": NAME}]}, "filter": {"disabled": [{"name": NAME}]}}
    fw, algorithm = _algorithm(no_filters)
    with pytest.raises(ScheduleError) as err:
        algorithm.schedule_pod(fw, CycleState(), INVALID_PREFERRED)
    assert err.value.status == Status(
        Code.ERROR,
        f'running PreScore plugin "{NAME}": failed to parse pod: preferredAffinityTerms: {BAD_VALUE_ERROR}',
    )


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


def without_namespace(p: dict[str, Any]) -> dict[str, Any]:
    del p["metadata"]["namespace"]
    return p


def app_x_in_region(namespaces: list[str] | None = None, ns_selector: dict[str, Any] | None = None) -> dict[str, Any]:
    return affinity([term(expr("app", "In", "x"), topology="region", namespaces=namespaces, ns_selector=ns_selector)])


APP_X = {"app": "x"}
CHINA_INDIA = [node("node1", CHINA), node("node2", INDIA)]
SCORED = [100, 0]

SYMMETRIC_CASES: list[tuple[str, dict[str, Any], dict[str, Any], Any]] = [
    # (name, existing pod on node1 with a required affinity term, incoming pod, want). Upstream scores the
    # incoming pod by the existing pods' required terms that select it (processExistingPod), matching the
    # namespaces by AffinityTerm.Matches: listed namespaces, or the namespaceSelector over the incoming pod's
    # namespace labels; neither given means the existing pod's own namespace ("" when it has none).
    (
        "namespaces listed: incoming inside",
        on("node1", aff=app_x_in_region(["ns1"])),
        pod(ns="ns1", labels=APP_X),
        SCORED,
    ),
    (
        "namespaces listed: incoming outside",
        on("node1", aff=app_x_in_region(["ns1"])),
        pod(ns="ns2", labels=APP_X),
        SKIP,
    ),
    ("namespaces listed: '' is not listed", on("node1", aff=app_x_in_region(["ns1"])), pod(labels=APP_X), SKIP),
    ("namespaces list ['']", on("node1", aff=app_x_in_region([""])), without_namespace(pod(labels=APP_X)), SCORED),
    (
        "own namespace, the existing pod has none: incoming without one",
        without_namespace(on("node1", aff=app_x_in_region())),
        without_namespace(pod(labels=APP_X)),
        SCORED,
    ),
    (
        "own namespace, the existing pod has none: incoming in ''",
        without_namespace(on("node1", aff=app_x_in_region())),
        pod(ns="", labels=APP_X),
        SCORED,
    ),
    (
        "own namespace, the existing pod has none: incoming elsewhere",
        without_namespace(on("node1", aff=app_x_in_region())),
        pod(ns="default", labels=APP_X),
        SKIP,
    ),
    (
        "own namespace: an empty list counts as none",
        on("node1", ns="default", aff=app_x_in_region([])),
        pod(ns="default", labels=APP_X),
        SCORED,
    ),
    (
        "own namespace 'default': incoming without one",
        on("node1", ns="default", aff=app_x_in_region()),
        without_namespace(pod(labels=APP_X)),
        SKIP,
    ),
    (
        "namespaceSelector {}: every namespace, even an unknown one",
        on("node1", ns="default", aff=app_x_in_region(ns_selector={})),
        pod(ns="no-such-namespace", labels=APP_X),
        SCORED,
    ),
    (
        "namespaceSelector {}: and no namespace at all",
        on("node1", ns="default", aff=app_x_in_region(ns_selector={})),
        without_namespace(pod(labels=APP_X)),
        SCORED,
    ),
    (
        "namespaceSelector {} with listed namespaces: still every namespace",
        on("node1", aff=app_x_in_region(["ns1"], {})),
        pod(ns="subteam1.team2", labels=APP_X),
        SCORED,
    ),
    (
        "namespaceSelector: incoming namespace's labels match",
        on("node1", aff=app_x_in_region(ns_selector=TEAM1_SELECTOR)),
        pod(ns="subteam2.team1", labels=APP_X),
        SCORED,
    ),
    (
        "namespaceSelector: incoming namespace's labels do not match",
        on("node1", aff=app_x_in_region(ns_selector=TEAM1_SELECTOR)),
        pod(ns="subteam1.team2", labels=APP_X),
        SKIP,
    ),
    (
        "namespaceSelector: an unknown namespace has no labels",
        on("node1", aff=app_x_in_region(ns_selector=TEAM1_SELECTOR)),
        pod(ns="no-such-namespace", labels=APP_X),
        SKIP,
    ),
    (
        "namespaceSelector: the existing pod's own namespace is not added",
        on("node1", ns="subteam1.team2", aff=app_x_in_region(ns_selector=TEAM1_SELECTOR)),
        pod(ns="subteam1.team2", labels=APP_X),
        SKIP,
    ),
    (
        "the namespace matches but the labels do not",
        on("node1", aff=app_x_in_region([""])),
        pod(labels={"app": "y"}),
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "existing", "incoming", "want"), SYMMETRIC_CASES, ids=[c[0] for c in SYMMETRIC_CASES])
def test_symmetric_required_affinity_namespaces(name, existing, incoming, want):
    assert run_score(incoming, [existing], CHINA_INDIA, {"hardPodAffinityWeight": 1}) == want


def test_hard_weight_against_preferred_weights():
    # Raw scores: China 5 (the required term at hardPodAffinityWeight 5), India 10 (a preferred term), Japan 0.
    existing = [
        without_namespace(on("node1", aff=app_x_in_region())),
        on("node2", aff=affinity(preferred=[weighted(10, term(expr("app", "In", "x"), topology="region"))])),
    ]
    nodes = [*CHINA_INDIA, node("node3", {"region": "Japan"})]
    got = run_score(without_namespace(pod(labels=APP_X)), existing, nodes, {"hardPodAffinityWeight": 5})
    assert got == [50, 100, 0]


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
