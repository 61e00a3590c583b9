"""Property tests: PodTopologySpread's columnar paths (PreFilter/PreScore states, filter_vector, score_vector)
agree exactly with the per-node forms on random clusters: random zone/rack/hostname labels (some missing),
taints, existing pods with random labels and namespaces (some terminating), random constraints and policies."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.scheduler.framework.interface import CycleState, NodeScore
from pyk8s.scheduler.framework.types import FeasibleNodes, NodeInfo, PodInfo
from pyk8s.scheduler.plugins.podtopologyspread import PodTopologySpread
from pyk8s.scheduler.plugins.podtopologyspread.filtering import PRE_FILTER_STATE_KEY
from pyk8s.scheduler.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY
from tests.scheduler.test_podtopologyspread_support import HOSTNAME, ZONE, make_plugin, node, pod, sc

KEYS = [ZONE, HOSTNAME, "rack"]
SELECTORS = [
    None,
    {},
    {"matchLabels": {"app": "a"}},
    {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
    {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]},
]
TAINTS = [
    None,
    [{"key": "k1", "effect": "NoSchedule"}],
    [{"key": "k2", "effect": "NoExecute"}],
    [{"key": "k1", "effect": "PreferNoSchedule"}],
]

# Clusters come from a seeded random.Random: drawing each detail through hypothesis costs far more than the
# plugin under test, and the seed still lets hypothesis explore and replay failures.
SEEDS = st.integers(0, 2**32 - 1)


def pod_labels(rng: random.Random) -> dict[str, str]:
    labels = {}
    if rng.random() < 0.6:
        labels["app"] = rng.choice(["a", "b"])
    if rng.random() < 0.4:
        labels["tier"] = rng.choice(["x", "y"])
    return labels


def cluster(rng: random.Random) -> tuple[list[dict], list[dict]]:
    n = rng.randint(1, 10)
    nodes = []
    for i in range(n):
        name = f"n{i}"
        labels: dict[str, str] = {}
        if rng.random() < 0.8:
            labels[ZONE] = rng.choice(["z1", "z2", "z3", ""])
        if rng.random() < 0.9:
            labels[HOSTNAME] = name
        if rng.random() < 0.5:
            labels["rack"] = rng.choice(["r1", "r2"])
        if rng.random() < 0.5:
            labels["disk"] = "ssd"
        nodes.append(node(name, labels, taints=rng.choice(TAINTS)))
    pods = [
        pod(
            f"e{j}",
            f"n{rng.randrange(n)}",
            pod_labels(rng),
            ns=rng.choice(["default", "default", "other"]),
            terminating=rng.random() < 0.1,
        )
        for j in range(rng.randint(0, 25))
    ]
    return nodes, pods


def spread_constraints(rng: random.Random) -> list[dict]:
    out = []
    for _ in range(rng.randint(0, 3)):
        when = rng.choice(["DoNotSchedule", "ScheduleAnyway"])
        out.append(
            sc(
                rng.randint(1, 3),
                rng.choice(KEYS),
                when,
                rng.choice(SELECTORS),
                min_domains=rng.choice([None, 1, 2, 3, 4]) if when == "DoNotSchedule" else None,
                affinity_policy=rng.choice([None, "Honor", "Ignore"]),
                taints_policy=rng.choice([None, "Honor", "Ignore"]),
                match_label_keys=rng.choice([None, ["app"], ["tier", "app"]]),
            )
        )
    return out


def incoming_pod(rng: random.Random) -> dict:
    kw: dict[str, Any] = {}
    if rng.random() < 0.5:
        kw["node_selector"] = {"disk": "ssd"}
    if rng.random() < 0.5:
        kw["tolerations"] = [{"key": "k1", "operator": "Exists"}]
    if rng.random() < 0.25:
        term = {"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": ["z2"]}]}
        kw["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    return pod("p", labels=pod_labels(rng), spread=spread_constraints(rng), **kw)


def setup(seed: int) -> tuple[PodTopologySpread, dict, random.Random]:
    rng = random.Random(seed)
    nodes, pods = cluster(rng)
    fg = {
        "NodeInclusionPolicyInPodTopologySpread": rng.random() < 0.5,
        "MatchLabelKeysInPodTopologySpread": rng.random() < 0.5,
    }
    system = rng.random() < 0.5
    args: dict[str, Any] = {"defaultingType": "System"} if system else {"defaultingType": "List"}
    if not system and rng.random() < 0.5:
        args["defaultConstraints"] = [
            {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
        ]
    svc = {"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "a"}}}
    pl = make_plugin(nodes, pods, args=args, feature_gates=fg, objects={"services": [svc]})
    return pl, incoming_pod(rng), rng


def _filter_states_equal(a: Any, b: Any) -> None:
    assert a.constraints == b.constraints
    assert a.tp_value_to_match_num == b.tp_value_to_match_num
    assert [cp.as_tuples() for cp in a.critical_paths] == [cp.as_tuples() for cp in b.critical_paths]


def _check_filter(pl: PodTopologySpread, state: CycleState, p: dict) -> None:
    snap = pl.handle.snapshot
    vec = pl.filter_vector(state, p, snap)
    per_node = [pl.filter(state, p, ni) is None for ni in snap.node_info_list]
    assert vec.tolist() == per_node


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_filter_vector_agrees(seed: int) -> None:
    pl, p, _ = setup(seed)
    nodes = pl.handle.snapshot.node_info_list
    fast, slow = CycleState(), CycleState()
    pl.vectorize = True
    r1 = pl.pre_filter(fast, p, nodes)
    pl.vectorize = False
    r2 = pl.pre_filter(slow, p, nodes)
    assert r1 == r2
    if r1[1] is not None:
        return
    _filter_states_equal(fast.read(PRE_FILTER_STATE_KEY), slow.read(PRE_FILTER_STATE_KEY))
    _check_filter(pl, fast, p)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_filter_vector_agrees_after_preemption_updates(seed: int) -> None:
    pl, p, rng = setup(seed)
    snap = pl.handle.snapshot
    state = CycleState()
    _, status = pl.pre_filter(state, p, snap.node_info_list)
    if status is not None:
        return
    what_if = state.clone()
    for _ in range(rng.randint(1, 4)):
        ni = rng.choice(snap.node_info_list)
        if ni.pods and rng.random() < 0.5:
            pl.remove_pod(what_if, p, rng.choice(ni.pods), ni)
        else:
            pl.add_pod(what_if, p, PodInfo(pod("v", ni.name, pod_labels(rng), ns=rng.choice(["default", "other"]))), ni)
    _check_filter(pl, what_if, p)
    _check_filter(pl, state, p)  # the original is untouched by the clone's updates


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_score_vector_agrees(seed: int) -> None:
    pl, p, rng = setup(seed)
    snap = pl.handle.snapshot
    n = len(snap.node_info_list)
    positions = sorted(rng.sample(range(n), rng.randint(1, n)))
    filtered = [snap.node_info_list[i] for i in positions]
    fast, slow = CycleState(), CycleState()
    pl.vectorize = True
    # As the scheduler hands them (positions known) or as a plain list (looked up by name).
    given_nodes = FeasibleNodes(snap.node_info_list, positions) if rng.random() < 0.5 else filtered
    st1 = pl.pre_score(fast, p, given_nodes)
    pl.vectorize = False
    st2 = pl.pre_score(slow, p, filtered)
    assert st1 == st2
    if st1 is not None:
        return
    a, b = fast.read(PRE_SCORE_STATE_KEY), slow.read(PRE_SCORE_STATE_KEY)
    assert a.constraints == b.constraints
    assert a.ignored_nodes == b.ignored_nodes
    assert a.topology_value_to_pod_counts == b.topology_value_to_pod_counts
    assert a.topology_normalizing_weight == b.topology_normalizing_weight
    raw = [pl.score(fast, p, ni)[0] for ni in filtered]
    vec = pl.score_vector(fast, p, snap, np.array(positions))
    assert vec.tolist() == raw
    scores = [NodeScore(ni.name, r) for ni, r in zip(filtered, raw, strict=True)]
    assert pl.normalize_score(fast, p, scores) is None
    assert pl.normalize_vector(fast, p, vec).tolist() == [s.score for s in scores]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_counts_follow_snapshot_updates(seed: int) -> None:
    """Across cycles, pods come and go on nodes; the cached per-node counts must follow."""
    pl, p, rng = setup(seed)
    snap = pl.handle.snapshot
    for cycle in range(3):
        fast, slow = CycleState(), CycleState()
        pl.vectorize = True
        r = pl.pre_filter(fast, p, snap.node_info_list)
        pl.vectorize = False
        pl.pre_filter(slow, p, snap.node_info_list)
        if r[1] is None:
            _filter_states_equal(fast.read(PRE_FILTER_STATE_KEY), slow.read(PRE_FILTER_STATE_KEY))
            _check_filter(pl, fast, p)
        old = rng.choice(snap.node_info_list)
        fresh = NodeInfo(old.node, [pi.pod for pi in old.pods])
        if fresh.pods and rng.random() < 0.5:
            fresh.remove_pod(rng.choice(fresh.pods).pod)
        else:
            fresh.add_pod(pod(f"new{cycle}", old.name, pod_labels(rng)))
        snap.replace(fresh, node_changed=False)
