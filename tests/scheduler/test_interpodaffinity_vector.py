"""Property tests for InterPodAffinity: on random clusters (hostname/zone/region labels, pods with random labels
and random required/preferred (anti-)affinity terms in several namespaces, namespaceSelectors), the vectorized
Filter and Score agree with the per-node forms, PreFilter/PreScore agree with a naive reading of upstream's
definitions, and PreFilter's add/remove-pod updates agree with recomputing from scratch."""

from __future__ import annotations

import copy
from random import Random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.scheduler.framework.handle import FrameworkHandle, StaticLister
from pyk8s.scheduler.framework.interface import Code, CycleState, NodeScore, Status
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import AffinityTerm, PodInfo
from pyk8s.scheduler.plugins.interpodaffinity import PRE_FILTER_STATE_KEY, PRE_SCORE_STATE_KEY, InterPodAffinity

from .test_interpodaffinity import affinity, expr, namespace, node, plugin_for, pod, term, weighted

HOSTNAME, ZONE, REGION = "kubernetes.io/hostname", "topology.kubernetes.io/zone", "region"
NAMESPACES = [namespace("ns-a", {"team": "a"}), namespace("ns-b", {"team": "b"})]
NS_LABELS = {"ns-a": {"team": "a"}, "ns-b": {"team": "b"}}  # "ns-c" is not a known namespace

# Every combination is listed up front and drawn with one choice each: hypothesis's per-draw overhead dominates
# the run time otherwise.
LABEL_SETS = [
    {**app, **tier} for app in ({}, {"app": "x"}, {"app": "y"}) for tier in ({}, {"tier": "web"}, {"tier": "db"})
]
SELECTORS = [
    [expr("app", "In", "x")],
    [expr("tier", "Exists")],
    [expr("app", "NotIn", "y")],
    [expr("app", "In", "x", "y"), expr("tier", "DoesNotExist")],
    [],  # empty selector: every pod
]
NS_SELECTORS = [
    None,
    {},
    {"matchExpressions": [expr("team", "In", "a")]},
    {"matchExpressions": [expr("team", "NotIn", "a")]},
]
NAMESPACE_LISTS = [None, [], ["ns-a"], ["ns-b"], ["ns-c"], ["ns-a", "ns-b"], ["ns-b", "ns-c"], [""]]
TOPOLOGY_KEYS = [HOSTNAME, ZONE, ZONE, REGION, "missing"]
# Every pairing of namespaces and namespaceSelector, and more often neither (the owner's own namespace, the
# commonest form, and "" for an owner without metadata.namespace).
NAMESPACE_SCOPES = [(nss, nssel) for nss in NAMESPACE_LISTS for nssel in NS_SELECTORS] + [(None, None)] * 20
TERMS = [
    term(*sel, topology=topo, namespaces=nss, ns_selector=nssel)
    for sel in SELECTORS
    for topo in TOPOLOGY_KEYS
    for nss, nssel in NAMESPACE_SCOPES
]
# Terms whose labelSelector or namespaceSelector does not parse (an invalid value, an unknown operator): about one
# term in sixteen, so that pods with several terms are often invalid but most are not.
BAD_VALUE, BAD_OPERATOR = "b@d", "Bogus"
BAD_TERMS = [
    term(*sel, topology=topo, namespaces=nss, ns_selector=nssel)
    for sel, nssel in (
        ([expr("app", "In", "x", BAD_VALUE)], None),
        ([expr("app", BAD_OPERATOR)], {}),
        ([], {"matchExpressions": [expr("team", "In", BAD_VALUE)]}),
        ([expr("tier", "Exists")], {"matchExpressions": [expr("team", BAD_OPERATOR, "a")]}),
    )
    for topo in (ZONE, REGION)
    for nss in (None, ["ns-a"], [""])
]

label_sets = st.sampled_from(LABEL_SETS)
terms = st.sampled_from(TERMS + BAD_TERMS * 4)
weighted_terms = st.builds(weighted, st.integers(1, 100), terms)
# Required terms are often absent so that not every node gets rejected.
required_terms = st.one_of(st.just([]), st.just([]), st.lists(terms, min_size=1, max_size=2))
affinities = st.builds(
    affinity,
    required_terms,
    required_terms,
    st.lists(weighted_terms, max_size=2),
    st.lists(weighted_terms, max_size=2),
)
# None: a pod object without metadata.namespace, which upstream reads as the empty namespace.
pod_namespaces = st.sampled_from(["ns-a", "ns-b", "ns-c", "", None])
node_label_draws = st.tuples(st.sampled_from(["z1", "z2", "z3", None]), st.sampled_from(["r1", "r2", None]))
existing_pods = st.tuples(label_sets, st.integers(0, 7), st.one_of(st.none(), affinities))


@st.composite
def clusters(
    draw: st.DrawFn, namespaces: st.SearchStrategy[str | None] = pod_namespaces
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    nodes = []
    for i, (zone, region) in enumerate(draw(st.lists(node_label_draws, min_size=1, max_size=8))):
        labels = {HOSTNAME: f"n{i}"}
        if zone:
            labels[ZONE] = zone
        if region:
            labels[REGION] = region
        nodes.append(node(f"n{i}", labels))
    pods = [
        in_namespace(pod(f"e{j}", labels=labels, node=f"n{k % len(nodes)}", aff=aff), draw(namespaces))
        for j, (labels, k, aff) in enumerate(draw(st.lists(existing_pods, max_size=12)))
    ]
    incoming = in_namespace(pod("incoming", labels=draw(label_sets), aff=draw(affinities)), draw(namespaces))
    return nodes, pods, incoming


def in_namespace(p: dict[str, Any], ns: str | None) -> dict[str, Any]:
    if ns is None:
        del p["metadata"]["namespace"]
    else:
        p["metadata"]["namespace"] = ns
    return p


# -- naive references of upstream's definitions ----------------------------------------------------------------


def incoming_term_matches(t: AffinityTerm, p: dict[str, Any]) -> bool:
    """The incoming pod's term against pod `p`, with the namespaceSelector resolved over known namespaces."""
    ns = p["metadata"].get("namespace", "")
    sel = t.namespace_selector
    ns_ok = ns in t.namespaces or (sel.empty and not sel.nothing) or (ns in NS_LABELS and sel.matches(NS_LABELS[ns]))
    return ns_ok and t.selector.matches(p["metadata"].get("labels"))


def selector_matches(sel: dict[str, Any] | None, labels: dict[str, str] | None) -> bool:
    """A metav1.LabelSelector read straight from the object: absent selects nothing, empty everything."""
    if sel is None:
        return False
    labels = labels or {}
    if any(labels.get(k) != v for k, v in (sel.get("matchLabels") or {}).items()):
        return False
    for e in sel.get("matchExpressions") or []:
        present, values = e["key"] in labels, e.get("values") or []
        ok = {
            "In": present and labels.get(e["key"]) in values,
            "NotIn": not present or labels.get(e["key"]) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }[e["operator"]]
        if not ok:
            return False
    return True


def term_parses(t: dict[str, Any]) -> bool:
    for sel in (t.get("labelSelector"), t.get("namespaceSelector")):
        for e in (sel or {}).get("matchExpressions") or []:
            if e["operator"] == BAD_OPERATOR or BAD_VALUE in (e.get("values") or []):
                return False
    return True


def pod_terms(p: dict[str, Any], kind: str, required: bool) -> list[tuple[int, dict[str, Any]]]:
    """(weight, term) of one kind of term of an existing pod; none when any of them fails to parse, as upstream
    keeps nothing of that kind."""
    when = (
        "requiredDuringSchedulingIgnoredDuringExecution"
        if required
        else "preferredDuringSchedulingIgnoredDuringExecution"
    )
    raw = ((p["spec"].get("affinity") or {}).get(kind) or {}).get(when) or []
    out = [(0, t) if required else (t["weight"], t["podAffinityTerm"]) for t in raw]
    return out if all(term_parses(t) for _, t in out) else []


def all_terms_parse(p: dict[str, Any]) -> bool:
    affinity_ = p["spec"].get("affinity") or {}
    return all(
        term_parses(t.get("podAffinityTerm", t))
        for kind in ("podAffinity", "podAntiAffinity")
        for when in (
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        )
        for t in (affinity_.get(kind) or {}).get(when) or []
    )


def existing_term_selects(t: dict[str, Any], owner: dict[str, Any], incoming: dict[str, Any]) -> bool:
    """An existing pod's term against the incoming pod (upstream's AffinityTerm.Matches with the incoming pod's
    namespace labels): no namespaces and no namespaceSelector mean the owner's namespace, "" when it has none."""
    ns = incoming["metadata"].get("namespace", "")
    listed = t.get("namespaces") or []
    ns_sel = t.get("namespaceSelector")
    if not listed and ns_sel is None:
        listed = [owner["metadata"].get("namespace", "")]
    in_namespace = ns in listed or selector_matches(ns_sel, NS_LABELS.get(ns))
    return in_namespace and selector_matches(t.get("labelSelector"), incoming["metadata"].get("labels"))


def placed(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, str]]]:
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    return [(p, labels[p["spec"]["nodeName"]]) for p in pods]


def bump(counts: dict, key: tuple, value: int) -> None:
    counts[key] = counts.get(key, 0) + value


def reference_counts(nodes, pods, incoming) -> tuple[dict, dict, dict]:
    pi = PodInfo(incoming)
    existing: dict = {}
    aff: dict = {}
    anti: dict = {}
    for p, labels in placed(nodes, pods):
        for _, t in pod_terms(p, "podAntiAffinity", required=True):
            if existing_term_selects(t, p, incoming) and t["topologyKey"] in labels:
                bump(existing, (t["topologyKey"], labels[t["topologyKey"]]), 1)
        terms_ = pi.required_affinity_terms
        if terms_ and all(incoming_term_matches(t, p) for t in terms_):
            for t in terms_:
                if t.topology_key in labels:
                    bump(aff, (t.topology_key, labels[t.topology_key]), 1)
        for t in pi.required_anti_affinity_terms:
            if incoming_term_matches(t, p) and t.topology_key in labels:
                bump(anti, (t.topology_key, labels[t.topology_key]), 1)
    return existing, aff, anti


def reference_scores(nodes, pods, incoming, hard: int) -> dict[str, dict[str, int]]:
    pi = PodInfo(incoming)
    scores: dict[str, dict[str, int]] = {}

    def add(key: str, labels: dict[str, str], w: int) -> None:
        if key in labels:
            per = scores.setdefault(key, {})
            per[labels[key]] = per.get(labels[key], 0) + w

    for p, labels in placed(nodes, pods):
        if not labels:
            continue
        for w in pi.preferred_affinity_terms:
            if incoming_term_matches(w.term, p):
                add(w.term.topology_key, labels, w.weight)
        for w in pi.preferred_anti_affinity_terms:
            if incoming_term_matches(w.term, p):
                add(w.term.topology_key, labels, -w.weight)
        symmetric = [(hard if hard > 0 else 0, t) for _, t in pod_terms(p, "podAffinity", required=True)]
        symmetric += pod_terms(p, "podAffinity", required=False)
        symmetric += [(-w, t) for w, t in pod_terms(p, "podAntiAffinity", required=False)]
        for w, t in symmetric:
            if w and existing_term_selects(t, p, incoming):
                add(t["topologyKey"], labels, w)
    return scores


def _counts(state: CycleState) -> tuple[dict, dict, dict]:
    s = state.read(PRE_FILTER_STATE_KEY)
    return s.existing_anti_affinity_counts, s.affinity_counts, s.anti_affinity_counts


# -- properties --------------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(clusters())
def test_filter_vector_matches_per_node(cluster):
    check_filter(cluster)


def check_filter(cluster: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]) -> None:
    nodes, pods, incoming = cluster
    pl, snap = plugin_for(nodes, pods, namespaces=NAMESPACES)
    state = CycleState()
    _, status = pl.pre_filter(state, incoming, snap.node_info_list)
    want_existing, want_aff, want_anti = reference_counts(nodes, pods, incoming)
    pi = PodInfo(incoming)
    if not all_terms_parse(incoming):
        assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message().startswith("parsing pod: ")
        return
    if status is not None:
        assert status.code == Code.SKIP
        assert not want_existing and not pi.required_affinity_terms and not pi.required_anti_affinity_terms
        return
    assert _counts(state) == (want_existing, want_aff, want_anti)
    per_node = [pl.filter(state, incoming, ni) is None for ni in snap.node_info_list]
    assert pl.filter_vector(state, incoming, snap).tolist() == per_node


@settings(max_examples=150, deadline=None)
@given(clusters(), st.integers(0, 3), st.booleans(), st.randoms(use_true_random=False))
def test_score_vector_matches_per_node(cluster, hard, ignore, rnd):
    check_score(cluster, hard, ignore, rnd)


def check_score(
    cluster: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]], hard: int, ignore: bool, rnd: Random
) -> None:
    nodes, pods, incoming = cluster
    args = {"hardPodAffinityWeight": hard, "ignorePreferredTermsOfExistingPods": ignore}
    pl, snap = plugin_for(nodes, pods, args, namespaces=NAMESPACES)
    state = CycleState()
    status = pl.pre_score(state, incoming, snap.node_info_list)
    pod_affinity = incoming["spec"].get("affinity") or {}
    has_constraints = any(
        (pod_affinity.get(kind) or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
        for kind in ("podAffinity", "podAntiAffinity")
    )
    if ignore and not has_constraints:
        assert status == Status(Code.SKIP)
        return
    if not all_terms_parse(incoming):
        assert status is not None and status.code == Code.ERROR
        assert status.message().startswith("failed to parse pod: ")
        return
    want = reference_scores(nodes, pods, incoming, hard)
    if status is not None:
        assert status.code == Code.SKIP and not want
        return
    assert state.read(PRE_SCORE_STATE_KEY).topology_score == want
    positions = list(range(len(snap.node_info_list)))
    rnd.shuffle(positions)
    idx = np.array(positions[: rnd.randint(1, len(positions))], dtype=np.int64)
    per_node = [pl.score(state, incoming, snap.node_info_list[i])[0] for i in idx]
    assert pl.score_vector(state, incoming, snap, idx).tolist() == per_node


@settings(max_examples=100, deadline=None)
@given(
    clusters(st.sampled_from(["", None, "ns-a"])), st.integers(0, 3), st.booleans(), st.randoms(use_true_random=False)
)
def test_the_empty_namespace(cluster, hard, ignore, rnd):
    """Pods in the empty namespace, most without metadata.namespace: their terms that name no namespace select
    pods in "" (upstream reads a missing namespace as ""), both ways round."""
    check_filter(cluster)
    check_score(cluster, hard, ignore, rnd)


@settings(max_examples=150, deadline=None)
@given(clusters(), st.data())
def test_add_remove_pod_match_recomputation(cluster, data):
    nodes, pods, incoming = cluster
    if not pods:
        return
    k = data.draw(st.integers(0, len(pods) - 1))
    moved = pods[k]
    without = pods[:k] + pods[k + 1 :]

    def prefiltered(ps: list[dict[str, Any]]) -> tuple[Any, CycleState | None, Any]:
        pl, snap = plugin_for(nodes, ps, namespaces=NAMESPACES)
        state = CycleState()
        _, status = pl.pre_filter(state, incoming, snap.node_info_list)
        return pl, (state if status is None else None), snap

    pl, state_without, snap = prefiltered(without)
    pl_with, state_with, snap_with = prefiltered(pods)
    ni = snap.get(moved["spec"]["nodeName"])
    if state_without is not None and state_with is not None:
        before = copy.deepcopy(_counts(state_without))
        added = state_without.clone()
        assert pl.add_pod(added, incoming, PodInfo(moved), ni) is None
        assert _counts(added) == _counts(state_with)
        assert _counts(state_without) == before  # the clone took the update, not the original
        # After an update the vectorized filter rebuilds its tables from the counts; it still agrees with
        # the per-node filter, and with PreFilter's own tables on the cluster that has the pod.
        per_node = [pl.filter(added, incoming, n) is None for n in snap.node_info_list]
        assert pl.filter_vector(added, incoming, snap).tolist() == per_node
        assert pl_with.filter_vector(state_with, incoming, snap_with).tolist() == per_node
        removed = state_with.clone()
        assert pl.remove_pod(removed, incoming, PodInfo(moved), ni) is None
        assert _counts(removed) == _counts(state_without)


ops = st.lists(st.tuples(st.sampled_from(["add", "remove", "relabel"]), st.integers(0, 50)), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(clusters(), ops)
def test_caches_follow_cluster_changes(cluster, changes):
    """One plugin kept across cycles (its per-node caches warm) answers as a fresh plugin after pods come and
    go and nodes are relabelled."""
    nodes, pods, incoming = cluster
    half = len(pods) // 2
    snap = Snapshot.from_objects(nodes, pods[:half])
    pending = pods[half:]
    kept = InterPodAffinity.new(None, FrameworkHandle(snap, StaticLister({"namespaces": NAMESPACES})))

    def compare() -> None:
        fresh = InterPodAffinity.new(None, FrameworkHandle(snap, StaticLister({"namespaces": NAMESPACES})))
        got, want = CycleState(), CycleState()
        assert kept.pre_filter(got, incoming, snap.node_info_list) == fresh.pre_filter(
            want, incoming, snap.node_info_list
        )
        if want.get(PRE_FILTER_STATE_KEY) is not None:
            assert _counts(got) == _counts(want)
            assert (
                kept.filter_vector(got, incoming, snap).tolist() == fresh.filter_vector(want, incoming, snap).tolist()
            )
        assert kept.pre_score(got, incoming, snap.node_info_list) == fresh.pre_score(
            want, incoming, snap.node_info_list
        )
        if want.get(PRE_SCORE_STATE_KEY) is not None:
            assert got.read(PRE_SCORE_STATE_KEY).topology_score == want.read(PRE_SCORE_STATE_KEY).topology_score
            idx = np.arange(len(snap.node_info_list), dtype=np.int64)
            assert (
                kept.score_vector(got, incoming, snap, idx).tolist()
                == fresh.score_vector(want, incoming, snap, idx).tolist()
            )

    compare()
    for op, k in changes:
        if op == "add" and pending:
            p = pending.pop(k % len(pending))
            ni = snap.get(p["spec"]["nodeName"]).clone()
            ni.add_pod(p)
            snap.replace(ni, node_changed=False)
        elif op == "remove":
            placed_pods = [pi.pod for ni in snap.node_info_list for pi in ni.pods]
            if not placed_pods:
                continue
            p = placed_pods[k % len(placed_pods)]
            ni = snap.get(p["spec"]["nodeName"]).clone()
            ni.remove_pod(p)
            snap.replace(ni, node_changed=False)
        elif op == "relabel":
            ni = snap.node_info_list[k % len(snap.node_info_list)].clone()
            labels = dict(ni.node["metadata"]["labels"])
            labels[ZONE] = ("z1", "z2", "z3")[k % 3]
            ni.set_node({**ni.node, "metadata": {**ni.node["metadata"], "labels": labels}})
            snap.replace(ni, node_changed=True)
        compare()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=30))
def test_normalize_vector_matches_normalize_score(raw):
    incoming = pod("incoming", ns="ns-a", labels={"app": "x"}, aff=affinity(preferred=[weighted(3, TERMS[0])]))
    nodes = [node("n0", {HOSTNAME: "n0", ZONE: "z1"})]
    pl, snap = plugin_for(nodes, [pod("e", ns="ns-a", labels={"app": "x"}, node="n0")], namespaces=NAMESPACES)
    state = CycleState()
    assert pl.pre_score(state, incoming, snap.node_info_list) is None
    scores = [NodeScore(f"n{i}", s) for i, s in enumerate(raw)]
    assert pl.normalize_score(state, incoming, scores) is None
    got = pl.normalize_vector(state, incoming, np.array(raw, dtype=np.int64))
    assert got.tolist() == [s.score for s in scores]
