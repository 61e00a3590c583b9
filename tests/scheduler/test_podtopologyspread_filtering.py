"""PodTopologySpread PreFilter / Filter / AddPod / RemovePod, re-expressing upstream's filtering_test.go
(TestPreFilterState, TestPreFilterStateAddPod/RemovePod, TestSingleConstraint, TestMultipleConstraints)."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.scheduler.framework.interface import Code, CycleState, Status, code_of
from pyk8s.scheduler.framework.types import PodInfo
from pyk8s.scheduler.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from pyk8s.scheduler.plugins.podtopologyspread.filtering import MAX_INT32, PRE_FILTER_STATE_KEY
from tests.scheduler.test_podtopologyspread_support import (
    BAR,
    FOO,
    TOLERATE_UNSCHEDULABLE,
    UNSCHEDULABLE_TAINT,
    four_nodes,
    gates,
    hard,
    labelled,
    make_plugin,
    node,
    pod,
    required_affinity,
    run_pre_filter,
    soft,
    sorted_paths,
    zoned,
)

S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
FOO_POD = {"foo": ""}


def incoming(*spread: dict, labels: dict[str, str] | None = None, **kw: Any) -> dict:
    return pod("p", labels=FOO_POD if labels is None else labels, spread=list(spread), **kw)


def six_nodes() -> list[dict]:
    return [*four_nodes(), zoned("node-o", "zone3"), zoned("node-p", "zone3")]


def only_node_label(*names: str, **extra: dict) -> list[dict]:
    return [node(n, {"node": n, **extra.get(n, {})}) for n in names]


# -- PreFilter state ------------------------------------------------------------------------------------------

# (name, pod, nodes, existing pods, per-constraint domain counts, per-constraint critical paths, gates)
PRE_FILTER_CASES = [
    (
        "clean cluster with one spreadConstraint",
        incoming(hard(5, "zone", {"matchLabels": {"foo": "bar"}})),
        four_nodes(),
        [],
        [{"zone1": 0, "zone2": 0}],
        [[("zone1", 0), ("zone2", 0)]],
        gates(),
    ),
    (
        "normal case with one spreadConstraint",
        incoming(hard(1, "zone", FOO)),
        four_nodes(),
        labelled({"node-a": 2, "node-b": 1, "node-y": 2}),
        [{"zone1": 3, "zone2": 2}],
        [[("zone2", 2), ("zone1", 3)]],
        gates(),
    ),
    (
        "normal case with null label selector",
        incoming(hard(1, "zone", None)),
        four_nodes(),
        labelled({"node-a": 2, "node-b": 1, "node-y": 2}),
        [{"zone1": 0, "zone2": 0}],
        [[("zone1", 0), ("zone2", 0)]],
        gates(),
    ),
    (
        "normal case with one spreadConstraint, on a 3-zone cluster",
        incoming(hard(1, "zone", FOO)),
        six_nodes(),
        labelled({"node-a": 2, "node-b": 1, "node-y": 2}),
        [{"zone1": 3, "zone2": 2, "zone3": 0}],
        [[("zone3", 0), ("zone2", 2)]],
        gates(),
    ),
    (
        "namespace mismatch doesn't count",
        incoming(hard(1, "zone", FOO)),
        four_nodes(),
        [
            pod("p-a1", "node-a", FOO_POD),
            pod("p-a2", "node-a", FOO_POD, ns="ns1"),
            pod("p-b1", "node-b", FOO_POD),
            pod("p-y1", "node-y", FOO_POD, ns="ns2"),
            pod("p-y2", "node-y", FOO_POD),
        ],
        [{"zone1": 2, "zone2": 1}],
        [[("zone2", 1), ("zone1", 2)]],
        gates(),
    ),
    (
        "normal case with two spreadConstraints",
        incoming(hard(1, "zone", FOO), hard(1, "node", FOO)),
        four_nodes(),
        labelled({"node-a": 2, "node-b": 1, "node-y": 4}),
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
        [[("zone1", 3), ("zone2", 4)], [("node-x", 0), ("node-b", 1)]],
        gates(),
    ),
    (
        "soft spreadConstraints are bypassed",
        incoming(soft(1, "zone", FOO), hard(1, "zone", FOO), soft(1, "node", FOO), hard(1, "node", FOO)),
        [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-y", "zone2")],
        labelled({"node-a": 2, "node-b": 1, "node-y": 4}),
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        [[("zone1", 3), ("zone2", 4)], [("node-b", 1), ("node-a", 2)]],
        gates(),
    ),
    (
        "different labelSelectors, complex pods",
        incoming(hard(1, "zone", FOO), hard(1, "node", BAR), labels={"foo": "", "bar": ""}),
        [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-y", "zone2")],
        [
            pod("p-a1", "node-a", {"foo": ""}),
            pod("p-a2", "node-a", {"foo": "", "bar": ""}),
            pod("p-b1", "node-b", {"foo": ""}),
            pod("p-y1", "node-y", {"foo": ""}),
            pod("p-y2", "node-y", {"foo": "", "bar": ""}),
            pod("p-y3", "node-y", {"foo": ""}),
            pod("p-y4", "node-y", {"foo": "", "bar": ""}),
        ],
        [{"zone1": 3, "zone2": 4}, {"node-a": 1, "node-b": 0, "node-y": 2}],
        [[("zone1", 3), ("zone2", 4)], [("node-b", 0), ("node-a", 1)]],
        gates(),
    ),
    (
        "two spreadConstraints, with node affinity excluding node-x",
        incoming(hard(1, "zone", FOO), hard(1, "node", FOO), affinity=required_affinity("node", "NotIn", ["node-x"])),
        four_nodes(),
        labelled({"node-a": 2, "node-b": 1, "node-y": 4}),
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        [[("zone1", 3), ("zone2", 4)], [("node-b", 1), ("node-a", 2)]],
        gates(),
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        incoming(hard(1, "node", BAR, affinity_policy="Ignore"), node_selector={"foo": ""}),
        only_node_label("node-a", "node-b", "node-c", **{"node-a": {"foo": ""}, "node-b": {"foo": ""}}),
        [*labelled({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-d", "node-c")],
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [[("node-c", 0), ("node-a", 1)]],
        gates(inclusion=True),
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        incoming(hard(1, "node", BAR), node_selector={"foo": ""}),
        only_node_label("node-a", "node-b", "node-c", **{"node-a": {"foo": ""}, "node-b": {"foo": ""}}),
        [*labelled({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-d", "node-c")],
        [{"node-a": 1, "node-b": 2}],
        [[("node-a", 1), ("node-b", 2)]],
        gates(inclusion=True),
    ),
    (
        "NodeTaintsPolicy honored",
        incoming(hard(1, "node", BAR, taints_policy="Honor")),
        [
            node("node-a", {"node": "node-a"}),
            node("node-b", {"node": "node-b"}),
            node("node-c", {"node": "node-c", "bar": ""}, taints=UNSCHEDULABLE_TAINT),
        ],
        [*labelled({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-d", "node-c")],
        [{"node-a": 1, "node-b": 2}],
        [[("node-a", 1), ("node-b", 2)]],
        gates(inclusion=True),
    ),
    (
        "NodeTaintsPolicy honored with tolerated taints",
        incoming(hard(1, "node", BAR, taints_policy="Honor"), tolerations=TOLERATE_UNSCHEDULABLE),
        [
            node("node-a", {"node": "node-a"}),
            node("node-b", {"node": "node-b"}),
            node("node-c", {"node": "node-c", "bar": ""}, taints=UNSCHEDULABLE_TAINT),
        ],
        [*labelled({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-d", "node-c")],
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [[("node-c", 0), ("node-a", 1)]],
        gates(inclusion=True),
    ),
    (
        "two node inclusion constraints, zone: ignore/ignore, node: honor/honor",
        incoming(
            hard(1, "zone", FOO, affinity_policy="Ignore"),
            hard(1, "node", FOO, taints_policy="Honor"),
            node_selector={"foo": ""},
        ),
        [
            zoned("node-a", "zone1"),
            zoned("node-b", "zone1", labels={"foo": ""}, taints=UNSCHEDULABLE_TAINT),
            zoned("node-x", "zone2", labels={"foo": ""}),
            zoned("node-y", "zone2", labels={"foo": ""}),
        ],
        labelled({"node-a": 2, "node-x": 2, "node-y": 1}),
        [{"zone1": 2, "zone2": 3}, {"node-x": 2, "node-y": 1}],
        [[("zone1", 2), ("zone2", 3)], [("node-y", 1), ("node-x", 2)]],
        gates(inclusion=True),
    ),
    (
        "matchLabelKeys ignored when feature gate disabled",
        incoming(hard(1, "zone", FOO, match_label_keys=["bar"]), labels={"foo": "", "bar": ""}),
        four_nodes(),
        labelled({"node-a": 2, "node-b": 1, "node-y": 2}),
        [{"zone1": 3, "zone2": 2}],
        [[("zone2", 2), ("zone1", 3)]],
        gates(),
    ),
    (
        "matchLabelKeys ANDed with a non-empty labelSelector",
        incoming(hard(1, "zone", FOO, match_label_keys=["bar"]), labels={"foo": "", "bar": "a"}),
        four_nodes(),
        [
            pod("p-a1", "node-a", {"foo": ""}),
            pod("p-a2", "node-a", {"foo": "", "bar": "a"}),
            pod("p-b1", "node-b", {"foo": ""}),
            pod("p-y1", "node-y", {"foo": "", "bar": "a"}),
            pod("p-y2", "node-y", {"bar": ""}),
        ],
        [{"zone1": 1, "zone2": 1}],
        [[("zone1", 1), ("zone2", 1)]],
        gates(match_label_keys=True),
    ),
    (
        "matchLabelKeys ANDed with an empty labelSelector",
        incoming(hard(1, "zone", {}, match_label_keys=["foo"]), labels={"foo": "a"}),
        four_nodes(),
        labelled({"node-a": 2, "node-b": 1, "node-y": 2}, {"foo": "a"}),
        [{"zone1": 3, "zone2": 2}],
        [[("zone2", 2), ("zone1", 3)]],
        gates(match_label_keys=True),
    ),
    (
        "a matchLabelKey the pod lacks is ignored",
        incoming(hard(1, "zone", FOO, match_label_keys=["bar"])),
        four_nodes(),
        labelled({"node-a": 2, "node-b": 1, "node-y": 2}, {"foo": "a"}),
        [{"zone1": 3, "zone2": 2}],
        [[("zone2", 2), ("zone1", 3)]],
        gates(match_label_keys=True),
    ),
    (
        "two spreadConstraints with the same topologyKey",
        incoming(hard(1, "zone", FOO), hard(1, "zone", BAR), labels={"foo": "", "bar": ""}),
        four_nodes(),
        [
            pod("p-a1", "node-a", {"foo": "", "bar": ""}),
            pod("p-b1", "node-b", {"foo": ""}),
            pod("p-x1", "node-x", {"bar": ""}),
            pod("p-y1", "node-y", {"foo": "", "bar": ""}),
            pod("p-y2", "node-y", {"bar": ""}),
        ],
        [{"zone1": 2, "zone2": 1}, {"zone1": 1, "zone2": 3}],
        [[("zone2", 1), ("zone1", 2)], [("zone1", 1), ("zone2", 3)]],
        gates(),
    ),
]


@pytest.mark.parametrize("vectorize", [True, False], ids=["vector", "per-node"])
@pytest.mark.parametrize("case", PRE_FILTER_CASES, ids=[c[0] for c in PRE_FILTER_CASES])
def test_pre_filter_state(case: tuple, vectorize: bool) -> None:
    _, p, nodes, existing, want_counts, want_paths, fg = case
    pl = make_plugin(nodes, existing, feature_gates=fg)
    pl.vectorize = vectorize
    state, status = run_pre_filter(pl, p)
    assert status is None
    s = state.read(PRE_FILTER_STATE_KEY)
    assert s.tp_value_to_match_num == want_counts
    assert [sorted_paths(cp.as_tuples()) for cp in s.critical_paths] == want_paths
    assert all(c.min_domains == 1 for c in s.constraints)


def test_pre_filter_constraint_defaults() -> None:
    pl = make_plugin(four_nodes(), feature_gates=gates(inclusion=True))
    state, _ = run_pre_filter(pl, incoming(hard(2, "zone", FOO, min_domains=3)))
    (c,) = state.read(PRE_FILTER_STATE_KEY).constraints
    assert (c.max_skew, c.topology_key, c.min_domains, c.node_affinity_policy, c.node_taints_policy) == (
        2, "zone", 3, "Honor", "Ignore",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "p", "defaults", "services", "want_keys"),
    [
        ("default constraints and a service", pod("p", labels={"foo": "bar", "baz": "kar"}),
         [{"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"},
          {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"},
          {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"}],
         [{"foo": "bar"}], ["node", "rack"]),
        ("default constraints and a service that doesn't match", pod("p", labels={"foo": "bar"}),
         [{"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}], [{"baz": "kep"}], None),
        ("default constraints and a service, but pod has constraints",
         pod("p", labels={"foo": "bar", "baz": "tar"},
             spread=[hard(1, "zone", {"matchLabels": {"baz": "tar"}}), soft(2, "planet", {"matchLabels": {"fot": "rok"}})]),
         [{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}], [{"foo": "bar"}], ["zone"]),
        ("default soft constraints and a service", pod("p", labels={"foo": "bar"}),
         [{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"}], [{"foo": "bar"}], None),
        ("skip if not specified", pod("p", labels={"foo": ""}), [], [], None),
    ],
)  # fmt: skip
def test_pre_filter_default_constraints(name: str, p: dict, defaults: list, services: list, want_keys: Any) -> None:
    svcs = [
        {"metadata": {"name": f"s{i}", "namespace": "default"}, "spec": {"selector": s}} for i, s in enumerate(services)
    ]
    args = {"defaultingType": "List", "defaultConstraints": defaults}
    pl = make_plugin([node("node-a", {"other": "x"})], args=args, objects={"services": svcs})
    state, status = run_pre_filter(pl, p)
    if want_keys is None:
        assert code_of(status) == Code.SKIP
        return
    assert status is None
    s = state.read(PRE_FILTER_STATE_KEY)
    assert [c.topology_key for c in s.constraints] == want_keys
    assert s.tp_value_to_match_num == [{} for _ in want_keys]
    assert [cp.as_tuples() for cp in s.critical_paths] == [[("", MAX_INT32), ("", MAX_INT32)]] * len(want_keys)


def test_pre_filter_bad_selector_is_an_error() -> None:
    pl = make_plugin(four_nodes())
    bad = {"matchExpressions": [{"key": "foo", "operator": "In"}]}
    _, status = run_pre_filter(pl, incoming(hard(1, "zone", bad)))
    assert code_of(status) == Code.ERROR
    assert status.message().startswith("get constraints from pod: obtaining pod's hard topology spread constraints: ")


def test_filter_without_pre_filter_is_an_error() -> None:
    pl = make_plugin(four_nodes())
    ni = pl.handle.snapshot.node_info_list[0]
    status = pl.filter(CycleState(), incoming(hard(1, "zone", FOO)), ni)
    assert status == Status(Code.ERROR, 'reading "PreFilterPodTopologySpread" from cycleState: not found')
    assert not pl.filter_vector(CycleState(), incoming(), pl.handle.snapshot).any()


# -- AddPod / RemovePod -----------------------------------------------------------------------------------------

ZONE_NODE = (hard(1, "zone", FOO), hard(1, "node", FOO))
ZONE_A_B = [zoned("node-a", "zone1", labels={"foo": "bar"}), zoned("node-b", "zone2", labels={"foo": ""})]

# (name, preemptor, nodes, existing, pod added/removed, node index, add?, want counts, want paths, gates)
UPDATE_CASES = [
    ("add: node a and b both impact current min match", incoming(ZONE_NODE[1]),
     [zoned("node-a", "zone1"), zoned("node-b", "zone1")], [], pod("p-a1", "node-a", FOO_POD), 0, True,
     [{"node-a": 1, "node-b": 0}], [[("node-b", 0), ("node-a", 1)]], gates()),
    ("add: only node a impacts current min match", incoming(ZONE_NODE[1]),
     [zoned("node-a", "zone1"), zoned("node-b", "zone1")], labelled({"node-b": 1}), pod("p-a1", "node-a", FOO_POD), 0,
     True, [{"node-a": 1, "node-b": 1}], [[("node-a", 1), ("node-b", 1)]], gates()),
    ("add: a pod in a different namespace changes nothing", incoming(ZONE_NODE[1]),
     [zoned("node-a", "zone1"), zoned("node-b", "zone1")], labelled({"node-b": 1}),
     pod("p-a1", "node-a", FOO_POD, ns="ns1"), 0, True, [{"node-a": 0, "node-b": 1}], [[("node-a", 0), ("node-b", 1)]],
     gates()),
    ("add: pod on a non-critical node", incoming(ZONE_NODE[1]), [zoned("node-a", "zone1"), zoned("node-b", "zone1")],
     labelled({"node-b": 1}), pod("p-b2", "node-b", FOO_POD), 1, True, [{"node-a": 0, "node-b": 2}],
     [[("node-a", 0), ("node-b", 2)]], gates()),
    ("add: node a impacts node, node x impacts zone", incoming(*ZONE_NODE),
     [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-x", "zone2")],
     labelled({"node-b": 2, "node-x": 1}), pod("p-a1", "node-a", FOO_POD), 0, True,
     [{"zone1": 3, "zone2": 1}, {"node-a": 1, "node-b": 2, "node-x": 1}],
     [[("zone2", 1), ("zone1", 3)], [("node-a", 1), ("node-x", 1)]], gates()),
    ("add: node affinity unmatched node changes nothing",
     incoming(ZONE_NODE[0], affinity=required_affinity("foo", "NotIn", ["bar"])), ZONE_A_B,
     labelled({"node-a": 1, "node-b": 1}), pod("p-a1", "node-a", FOO_POD), 0, True, [{"zone2": 1}],
     [[("zone2", 1), ("", MAX_INT32)]], gates(inclusion=True)),
    ("add: a pod the selector doesn't match changes nothing", incoming(ZONE_NODE[0]), ZONE_A_B,
     labelled({"node-a": 1, "node-b": 1}), pod("p-b1", "node-b", {"zone": "zone2"}), 1, True,
     [{"zone1": 1, "zone2": 1}], [[("zone1", 1), ("zone2", 1)]], gates(inclusion=True)),
    ("add: untolerated taint counts under Ignore", incoming(ZONE_NODE[0]),
     [zoned("node-a", "zone1", taints=UNSCHEDULABLE_TAINT), zoned("node-b", "zone2")],
     labelled({"node-a": 1, "node-b": 1}), pod("p-b1", "node-b", FOO_POD), 1, True, [{"zone1": 1, "zone2": 2}],
     [[("zone1", 1), ("zone2", 2)]], gates(inclusion=True)),
    ("remove: zone counts become equal", incoming(ZONE_NODE[0]),
     [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-x", "zone2")],
     labelled({"node-a": 1, "node-b": 1, "node-x": 1}), "p-node-a-0", 0, False, [{"zone1": 1, "zone2": 1}],
     [[("zone1", 1), ("zone2", 1)]], gates()),
    ("remove: an irrelevant pod changes nothing", incoming(ZONE_NODE[0]), four_nodes(),
     [pod("p-a0", "node-a", {"bar": ""}), *labelled({"node-a": 1, "node-b": 1, "node-x": 1, "node-y": 1})], "p-a0", 0,
     False, [{"zone1": 2, "zone2": 2}], [[("zone1", 2), ("zone2", 2)]], gates()),
    ("remove: two spreadConstraints", incoming(*ZONE_NODE),
     [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-x", "zone2")],
     labelled({"node-a": 2, "node-b": 1, "node-x": 2}), "p-node-x-0", 2, False,
     [{"zone1": 3, "zone2": 1}, {"node-a": 2, "node-b": 1, "node-x": 1}],
     [[("zone2", 1), ("zone1", 3)], [("node-b", 1), ("node-x", 1)]], gates()),
    ("remove: node affinity matched node", incoming(ZONE_NODE[0]), ZONE_A_B, labelled({"node-a": 1, "node-b": 2}),
     "p-node-b-0", 1, False, [{"zone1": 1, "zone2": 1}], [[("zone1", 1), ("zone2", 1)]], gates()),
]  # fmt: skip


@pytest.mark.parametrize("case", UPDATE_CASES, ids=[c[0] for c in UPDATE_CASES])
def test_add_remove_pod(case: tuple) -> None:
    _, preemptor, nodes, existing, changed, node_idx, add, want_counts, want_paths, fg = case
    pl = make_plugin(nodes, existing, feature_gates=fg)
    state, status = run_pre_filter(pl, preemptor)
    assert status is None
    before = state.read(PRE_FILTER_STATE_KEY)
    cloned = state.clone()
    if isinstance(changed, str):
        changed = next(p for p in existing if p["metadata"]["name"] == changed)
    ni = pl.handle.snapshot.get(nodes[node_idx]["metadata"]["name"])
    ext = pl.pre_filter_extensions()
    status = (ext.add_pod if add else ext.remove_pod)(cloned, preemptor, PodInfo(changed), ni)
    assert status is None
    s = cloned.read(PRE_FILTER_STATE_KEY)
    assert s.tp_value_to_match_num == want_counts
    assert [sorted_paths(cp.as_tuples()) for cp in s.critical_paths] == want_paths
    assert s is not before and s.constraints is before.constraints  # the original survives preemption's what-if


# -- Filter -------------------------------------------------------------------------------------------------------

# (name, pod, nodes, existing, node -> expected code, gates)
FILTER_CASES = [
    ("no existing pods", incoming(hard(1, "zone", FOO)), four_nodes(), [], "SSSS", gates()),
    ("no existing pods, incoming pod doesn't match itself", incoming(hard(1, "zone", BAR)), four_nodes(), [], "SSSS",
     gates()),
    ("existing pods in a different namespace do not count", incoming(hard(1, "zone", FOO)), four_nodes(),
     [pod("p-a1", "node-a", FOO_POD, ns="ns1"), pod("p-b1", "node-a", FOO_POD, ns="ns2"),
      *labelled({"node-x": 1, "node-y": 1})], "SSUU", gates()),
    ("existing pods do not match null selector", incoming(hard(1, "zone", None)), four_nodes(),
     labelled({"node-x": 1, "node-y": 1}), "SSSS", gates()),
    ("pods spread across zones as 3/3, all nodes fit", incoming(hard(1, "zone", FOO)), four_nodes(),
     labelled({"node-a": 2, "node-b": 1, "node-y": 3}), "SSSS", gates()),
    ("spread 1/2 due to absence of label 'zone' on node-b", incoming(hard(1, "zone", FOO)),
     [zoned("node-a", "zone1"), node("node-b", {"zon": "zone1", "node": "node-b"}), zoned("node-x", "zone2"),
      zoned("node-y", "zone2")], labelled({"node-a": 1, "node-b": 1, "node-x": 1, "node-y": 1}), "S!UU", gates()),
    ("all nodes lack label 'rack'", incoming(hard(1, "rack", FOO)),
     [zoned("node-a", "zone1"), zoned("node-x", "zone2")], [], "!!", gates()),
    ("nodes 2/1/0/3, only node-x fits", incoming(hard(1, "node", FOO)), four_nodes(),
     labelled({"node-a": 2, "node-b": 1, "node-y": 3}), "UUSU", gates()),
    ("nodes 2/1/0/3, maxSkew 2: node-b and node-x fit", incoming(hard(2, "node", FOO)), four_nodes(),
     labelled({"node-a": 2, "node-b": 1, "node-y": 3}), "USSU", gates()),
    ("nodes 2/1/0/3, pod doesn't match itself", incoming(hard(1, "node", FOO), labels={"bar": ""}), four_nodes(),
     labelled({"node-a": 2, "node-b": 1, "node-y": 3}), "USSU", gates()),
    ("node affinity In [a, y]: 2/~1~/~0~/3, node-a fits",
     incoming(hard(1, "node", FOO), affinity=required_affinity("node", "In", ["node-a", "node-y"])), four_nodes(),
     labelled({"node-a": 2, "node-b": 1, "node-y": 3}), "SSSU", gates()),
    ("terminating pods are excluded", incoming(hard(1, "node", FOO)), only_node_label("node-a", "node-b"),
     [pod("p-a", "node-a", FOO_POD, terminating=True), pod("p-b", "node-b", FOO_POD)], "SU", gates()),
    ("node affinity NotIn b: 0/~2~/0/1", incoming(hard(1, "zone", FOO), affinity=required_affinity("node", "NotIn", ["node-b"])),
     four_nodes(), labelled({"node-b": 2, "node-y": 1}), "SSUU", gates()),
    ("2/2/1, maxSkew 2, domains < minDomains: only node-c fits", incoming(hard(2, "node", FOO, min_domains=4)),
     only_node_label("node-a", "node-b", "node-c"), labelled({"node-a": 2, "node-b": 2, "node-c": 1}), "UUS", gates()),
    ("2/2/1, maxSkew 2, domains > minDomains: all fit", incoming(hard(2, "node", FOO, min_domains=2)),
     only_node_label("node-a", "node-b", "node-c"), labelled({"node-a": 2, "node-b": 2, "node-c": 1}), "SSS", gates()),
    ("zones 2/1, maxSkew 2, domains < minDomains", incoming(hard(2, "zone", FOO, min_domains=3)), four_nodes(),
     labelled({"node-a": 1, "node-b": 1, "node-y": 1}), "UUSS", gates()),
    ("zones 2/1, maxSkew 2, domains > minDomains", incoming(hard(2, "zone", FOO, min_domains=1)), four_nodes(),
     labelled({"node-a": 1, "node-b": 1, "node-y": 1}), "SSSS", gates()),
    ("NodeAffinityPolicy honored with labelSelectors", incoming(hard(1, "node", FOO), node_selector={"foo": ""}),
     only_node_label("node-a", "node-b", "node-x", "node-y", **{n: {"foo": ""} for n in ("node-a", "node-b", "node-x")}),
     labelled({"node-a": 1, "node-b": 1, "node-y": 1}), "UUSS", gates(inclusion=True)),
    ("NodeAffinityPolicy ignored with labelSelectors",
     incoming(hard(1, "node", FOO, affinity_policy="Ignore"), node_selector={"foo": ""}),
     only_node_label("node-a", "node-b", "node-x", "node-y", **{n: {"foo": ""} for n in ("node-a", "node-b", "node-x")}),
     labelled({"node-a": 1, "node-b": 1, "node-y": 1}), "UUSU", gates(inclusion=True)),
    ("NodeAffinityPolicy honored with nodeAffinity",
     incoming(hard(1, "node", FOO), affinity=required_affinity("foo", "In", [""])),
     only_node_label("node-a", "node-b", "node-x", "node-y", **{n: {"foo": ""} for n in ("node-a", "node-b", "node-x")}),
     labelled({"node-a": 1, "node-b": 1, "node-y": 1}), "UUSS", gates(inclusion=True)),
    ("NodeTaintsPolicy honored", incoming(hard(1, "node", FOO, taints_policy="Honor")),
     [*only_node_label("node-a", "node-b", "node-x"), node("node-y", {"node": "node-y"}, taints=UNSCHEDULABLE_TAINT)],
     labelled({"node-a": 1, "node-b": 1, "node-y": 1}), "UUSS", gates(inclusion=True)),
    ("NodeTaintsPolicy ignored", incoming(hard(1, "node", FOO)),
     [*only_node_label("node-a", "node-b", "node-x"), node("node-y", {"node": "node-y"}, taints=UNSCHEDULABLE_TAINT)],
     labelled({"node-a": 1, "node-b": 1, "node-y": 1}), "UUSU", gates(inclusion=True)),
    # two constraints
    ("zone and node, spreads [3/3, 2/1/0/3]", incoming(*ZONE_NODE), four_nodes(),
     labelled({"node-a": 2, "node-b": 1, "node-y": 3}), "UUSU", gates()),
    ("zone and node, spreads [3/4, 2/1/0/4]", incoming(*ZONE_NODE), four_nodes(),
     labelled({"node-a": 2, "node-b": 1, "node-y": 4}), "UUUU", gates()),
    ("different labelSelectors, spreads [1/0, 1/0/0/1]",
     incoming(hard(1, "zone", FOO), hard(1, "node", BAR), labels={"foo": "", "bar": ""}), four_nodes(),
     [pod("p-a1", "node-a", {"foo": ""}), pod("p-y1", "node-y", {"bar": ""})], "UUSU", gates()),
    ("different labelSelectors, spreads [1/0, 0/0/1/1]",
     incoming(hard(1, "zone", FOO), hard(1, "node", BAR), labels={"foo": "", "bar": ""}), four_nodes(),
     [pod("p-a1", "node-a", {"foo": ""}), pod("p-x1", "node-x", {"bar": ""}), pod("p-y1", "node-y", {"bar": ""})],
     "UUUU", gates()),
    ("node inclusion, zone: honor/honor, node: ignore/ignore",
     incoming(hard(1, "zone", FOO, taints_policy="Honor"), hard(1, "node", FOO, affinity_policy="Ignore"),
              node_selector={"foo": ""}),
     [zoned("node-a", "zone1", labels={"foo": ""}), zoned("node-b", "zone1"), zoned("node-x", "zone2", labels={"foo": ""}),
      zoned("node-y", "zone2", labels={"foo": ""}, taints=UNSCHEDULABLE_TAINT)],
     labelled({"node-a": 1, "node-b": 1, "node-y": 1}), "UUSU", gates(inclusion=True)),
    ("two constraints on zone, spreads [3/3, 2/1]",
     incoming(hard(1, "zone", BAR), hard(1, "zone", FOO), labels={"foo": "", "bar": ""}), four_nodes(),
     [pod("p-a1", "node-a", {"foo": "", "bar": ""}), pod("p-a2", "node-a", {"foo": ""}),
      pod("p-b1", "node-b", {"foo": "", "bar": ""}), pod("p-y1", "node-y", {"foo": ""}),
      pod("p-y2", "node-y", {"foo": "", "bar": ""}), pod("p-y3", "node-y", {"foo": ""})], "UUSS", gates()),
    ("two constraints on zone, spreads [3/4, 2/1]",
     incoming(hard(1, "zone", BAR), hard(1, "zone", FOO), labels={"foo": "", "bar": ""}), four_nodes(),
     [pod("p-a1", "node-a", {"foo": "", "bar": ""}), pod("p-a2", "node-a", {"foo": ""}),
      pod("p-b1", "node-b", {"foo": "", "bar": ""}), pod("p-y1", "node-y", {"foo": ""}),
      pod("p-y2", "node-y", {"foo": "", "bar": ""}), pod("p-y3", "node-y", {"foo": ""}),
      pod("p-y4", "node-y", {"foo": ""})], "UUUU", gates()),
]  # fmt: skip

_CODES = {"S": (S, []), "U": (U, [ERR_REASON_CONSTRAINTS_NOT_MATCH]), "!": (UU, [ERR_REASON_NODE_LABEL_NOT_MATCH])}


@pytest.mark.parametrize("vectorize", [True, False], ids=["vector", "per-node"])
@pytest.mark.parametrize("case", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(case: tuple, vectorize: bool) -> None:
    _, p, nodes, existing, want, fg = case
    pl = make_plugin(nodes, existing, feature_gates=fg)
    pl.vectorize = vectorize
    state, status = run_pre_filter(pl, p)
    assert status is None
    snap = pl.handle.snapshot
    vec = pl.filter_vector(state, p, snap)
    for i, (ni, w) in enumerate(zip(snap.node_info_list, want, strict=True)):
        st = pl.filter(state, p, ni)
        code, reasons = _CODES[w]
        assert code_of(st) == code, ni.name
        assert (st.reasons if st else []) == reasons
        assert bool(vec[i]) == (st is None), ni.name
