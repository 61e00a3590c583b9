"""Property tests: the vectorized forms of NodeName, NodeUnschedulable, TaintToleration and NodeAffinity agree
exactly with their per-node Filter and Score on random clusters and pods (labels from a small alphabet, random
taints and tolerations, affinity terms with every operator, matchFields and malformed requirements)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import CycleState
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.plugins.nodeaffinity import NodeAffinity, node_labels_fields, parse_term, term_mask
from pyk8s.scheduler.plugins.nodename import NodeName
from pyk8s.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from pyk8s.scheduler.plugins.tainttoleration import TaintToleration

from .wrappers import make_node, make_pod

NODE_NAMES = ["n0", "n1", "n2", "n3", "n4", ""]  # a nameless node has no fields for matchFields to check
LABEL_KEYS = ["a", "b", "c"]
LABEL_VALUES = ["1", "2", "05", "x", "1_0", "+4"]  # "05" is 5 to Gt/Lt; "1_0" and "+4" test Go's ParseInt
BOUNDS = ["1", "2", "5"]
MALFORMED_VALUES = ["-1", "abc", "+5", "99999999999999999999", "bad value!"]
TAINT_KEYS = ["k1", "k2", "node.kubernetes.io/unschedulable"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]

# Strategies are built once here: building them inside the composites would re-validate them on every draw.
bools = st.booleans()
taints = st.lists(
    st.builds(
        lambda k, v, e: {"key": k, "value": v, "effect": e},
        st.sampled_from(TAINT_KEYS),
        st.sampled_from(["", "v1", "v2"]),
        st.sampled_from(EFFECTS),
    ),
    max_size=3,
)
node_names = st.lists(st.sampled_from(NODE_NAMES), min_size=1, max_size=6, unique=True)
node_labels = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=3)
node_selectors = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=2)


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    nodes = []
    for name in draw(node_names):
        n = make_node(name, taints=draw(taints), unschedulable=draw(bools))
        n["metadata"]["labels"] = draw(node_labels)
        nodes.append(n)
    return nodes


def _toleration(key: str | None, op: str | None, value: str | None, effect: str | None) -> dict[str, Any]:
    t = {"key": key, "operator": op, "value": value, "effect": effect}
    return {k: v for k, v in t.items() if v is not None}


tolerations = st.lists(
    st.builds(
        _toleration,
        st.sampled_from([None, "", *TAINT_KEYS]),
        st.sampled_from([None, "Equal", "Exists", "Bogus"]),
        st.sampled_from([None, "", "v1", "v2"]),
        st.sampled_from([None, "", *EFFECTS]),
    ),
    max_size=3,
)


def _requirement(key: str, op: str, values: list[str] | None) -> dict[str, Any]:
    r: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        r["values"] = values
    return r


_keys = st.sampled_from(LABEL_KEYS)
_one = st.lists(st.sampled_from(BOUNDS), min_size=1, max_size=1)
valid_label_requirements = st.one_of(
    st.builds(
        _requirement,
        _keys,
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(LABEL_VALUES), min_size=1, max_size=3),
    ),
    st.builds(_requirement, _keys, st.sampled_from(["Exists", "DoesNotExist"]), st.none()),
    st.builds(_requirement, _keys, st.sampled_from(["Gt", "Lt"]), _one),
)
# Malformed requirements must make their whole term fail (required) or PreScore error (preferred), in both forms.
any_label_requirements = st.one_of(
    valid_label_requirements,
    valid_label_requirements,
    st.builds(
        _requirement,
        st.sampled_from([*LABEL_KEYS, "bad key!"]),
        st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]),
        st.one_of(st.none(), st.lists(st.sampled_from(LABEL_VALUES + MALFORMED_VALUES), max_size=3)),
    ),
)
valid_field_requirements = st.one_of(
    st.builds(
        _requirement,
        st.just("metadata.name"),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from([*NODE_NAMES, "ghost"]), min_size=1, max_size=1),
    ),
    st.builds(
        _requirement,
        st.just("spec.other"),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(["", "x"]), min_size=1, max_size=1),
    ),
)
any_field_requirements = st.one_of(
    valid_field_requirements,
    valid_field_requirements,
    st.builds(
        _requirement,
        st.sampled_from(["metadata.name", "spec.other"]),
        st.sampled_from(["In", "NotIn", "Exists"]),
        st.one_of(st.none(), st.lists(st.sampled_from([*NODE_NAMES, "ghost"]), max_size=2)),
    ),
)


def _term(exprs: list[dict[str, Any]] | None, fields: list[dict[str, Any]] | None) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if exprs is not None:
        t["matchExpressions"] = exprs
    if fields is not None:
        t["matchFields"] = fields
    return t


def _terms_of(labels: st.SearchStrategy, fields: st.SearchStrategy) -> st.SearchStrategy:
    return st.builds(
        _term,
        st.one_of(st.none(), st.lists(labels, max_size=2)),
        st.one_of(st.none(), st.none(), st.lists(fields, max_size=2)),
    )


valid_terms = _terms_of(valid_label_requirements, valid_field_requirements)
terms = st.one_of(valid_terms, _terms_of(any_label_requirements, any_field_requirements))
term_lists = st.lists(terms, max_size=3)
_weights = st.one_of(st.integers(1, 100), st.just(0))
preferred_terms = st.one_of(
    st.lists(st.builds(lambda w, t: {"weight": w, "preference": t}, _weights, valid_terms), max_size=3),
    st.lists(st.builds(lambda w, t: {"weight": w, "preference": t}, _weights, terms), max_size=3),
)
pod_node_names = st.sampled_from([None, None, "ghost", *NODE_NAMES])


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    p = make_pod("p", tolerations=draw(tolerations))
    spec = p["spec"]
    if draw(bools):
        spec["nodeSelector"] = draw(node_selectors)
    node_affinity: dict[str, Any] = {}
    if draw(bools):
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": draw(term_lists)}
    if draw(bools):
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = draw(preferred_terms)
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    name = draw(pod_node_names)
    if name:
        spec["nodeName"] = name
    return p


pod_batches = st.lists(pods(), min_size=1, max_size=2)


@st.composite
def added_affinity(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(bools):
        return None
    added: dict[str, Any] = {}
    if draw(bools):
        added["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": draw(term_lists)}
    if draw(bools):
        added["preferredDuringSchedulingIgnoredDuringExecution"] = draw(preferred_terms)
    return {"addedAffinity": added}


def node_affinity_plugin(args: dict[str, Any] | None) -> NodeAffinity:
    try:
        return NodeAffinity.new(args, FrameworkHandle())
    except ValueError:
        return NodeAffinity.new(None, FrameworkHandle())  # invalid args never reach a running profile


def per_node_filter(plugin: Any, p: dict[str, Any], snapshot: Snapshot) -> np.ndarray:
    state = CycleState()
    if hasattr(plugin, "pre_filter"):
        plugin.pre_filter(state, p, snapshot.node_info_list)
    return np.array([plugin.filter(state, p, ni) is None for ni in snapshot.node_info_list], dtype=bool)


def check_filter(plugin: Any, p: dict[str, Any], snapshot: Snapshot) -> None:
    want = per_node_filter(plugin, p, snapshot)
    got = plugin.filter_vector(CycleState(), p, snapshot)
    assert got.dtype == bool
    assert got.tolist() == want.tolist()
    # A second, identical pod is answered from the memo and still agrees.
    assert plugin.filter_vector(CycleState(), p, snapshot).tolist() == want.tolist()


def check_score(plugin: Any, p: dict[str, Any], snapshot: Snapshot) -> None:
    state = CycleState()
    if plugin.pre_score(state, p, snapshot.node_info_list) is not None:
        return  # Skip or Error: the framework never calls Score
    want = []
    for ni in snapshot.node_info_list:
        s, status = plugin.score(state, p, ni)
        assert status is None
        want.append(s)
    n = len(snapshot.node_info_list)
    idx = np.arange(n)
    got = plugin.score_vector(state, p, snapshot, idx)
    assert got.dtype == np.int64
    assert got.tolist() == want
    part = idx[::-1][: max(1, n // 2)]
    assert plugin.score_vector(state, p, snapshot, part).tolist() == [want[i] for i in part]


@settings(max_examples=150, deadline=None)
@given(clusters(), pod_batches, added_affinity())
def test_vector_forms_agree(nodes, batch, args):
    """Every vectorized form agrees with its per-node form for each pod of a batch over one snapshot; the batch
    and two NodeAffinity profiles (with and without addedAffinity) share the snapshot's memo, so a memoised
    verdict leaking between pod specs or profiles would show up as a disagreement."""
    snapshot = Snapshot.from_objects(nodes)
    filters = [NodeName(), NodeUnschedulable(), TaintToleration(), NodeAffinity(), node_affinity_plugin(args)]
    for p in batch:
        for pl in filters:
            check_filter(pl, p, snapshot)
            if hasattr(pl, "score_vector"):
                check_score(pl, p, snapshot)


dense_terms = st.builds(
    _term,
    st.lists(any_label_requirements, min_size=1, max_size=2),
    st.one_of(st.none(), st.lists(any_field_requirements, min_size=1, max_size=2)),
)


@settings(max_examples=150, deadline=None)
@given(clusters(), dense_terms)
def test_term_masks_agree(nodes, raw_term):
    """One term at a time, so no other term or requirement can hide a disagreement."""
    snapshot = Snapshot.from_objects(nodes)
    parsed = parse_term(raw_term, "t")
    want = [parsed.matches(*node_labels_fields(ni.node)) for ni in snapshot.node_info_list]
    assert term_mask(snapshot, parsed).tolist() == want


def test_requirement_masks_exhaustive():
    """Every operator with every one- and two-value list over a cluster holding each label value once (and a
    node without the label): the vectorized requirement agrees with the per-node one, errors included."""
    values = [*LABEL_VALUES, *BOUNDS, *MALFORMED_VALUES, "0", "6"]
    nodes = [make_node(f"v{i}", labels={"a": v}) for i, v in enumerate(values)] + [make_node("none")]
    snapshot = Snapshot.from_objects(nodes)
    value_lists = [None, [], *([v] for v in values), *itertools.combinations(values, 2)]
    for op in ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]:
        for vals in value_lists:
            parsed = parse_term(
                {"matchExpressions": [_requirement("a", op, None if vals is None else list(vals))]}, "t"
            )
            want = [parsed.matches(*node_labels_fields(ni.node)) for ni in snapshot.node_info_list]
            assert term_mask(snapshot, parsed).tolist() == want, (op, vals)


def test_memo_is_dropped_when_a_node_changes():
    nodes = [make_node("n0", labels={"a": "1"}), make_node("n1", labels={"a": "2"})]
    snapshot = Snapshot.from_objects(nodes)
    p = make_pod("p", node_selector={"a": "1"}, tolerations=[])
    pl = NodeAffinity()
    assert pl.filter_vector(CycleState(), p, snapshot).tolist() == [True, False]
    nodes[1]["metadata"]["labels"]["a"] = "1"
    snapshot.nodes_changed()  # what the cache does when a Node object changes
    assert pl.filter_vector(CycleState(), p, snapshot).tolist() == [True, True]
