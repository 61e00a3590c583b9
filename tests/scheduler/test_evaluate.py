"""`pyk8s scheduler evaluate`: every candidate node gets each Score plugin's score (PreScore over the candidates,
then Score and NormalizeScore over them, as upstream's plugin unit tests score nodes), while `totalScore` and
`selectedNode` stay a scheduling cycle's decision: PreScore, Score and NormalizeScore over the feasible nodes."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.scheduler.evaluate import build_evaluation_framework, evaluate
from pyk8s.scheduler.framework.interface import CycleState
from pyk8s.scheduler.schedule_one import ScheduleAlgorithm

from .wrappers import make_node, make_pod


def prefer_taints(n: int) -> list[dict[str, Any]]:
    return [{"key": f"k{i}", "value": "v", "effect": "PreferNoSchedule"} for i in range(n)]


ZONE = "topology.kubernetes.io/zone"
SPREAD_SOFT = [
    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "w"}}}
]  # fmt: skip

# (name, scenario, nodes a Filter rejects)
SCENARIOS: list[tuple[str, dict[str, Any], set[str]]] = [
    (
        "insufficient cpu and an untolerated taint",
        {
            "pod": make_pod("p", cpu="2"),
            "nodes": [
                make_node("small", cpu="1"),
                make_node("tainted", cpu="8", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
                make_node("big", cpu="8"),
                make_node("busy", cpu="8"),
            ],
            "existingPods": [make_pod("other", cpu="5", node_name="busy")],
        },
        {"small", "tainted"},
    ),
    (
        # The rejected node has the most PreferNoSchedule taints: scored with it, "one" is not TaintToleration's
        # worst node; in the scheduler's cycle (without it) it is.
        "a rejected node changes NormalizeScore's range",
        {
            "pod": make_pod("p", cpu="2"),
            "nodes": [
                make_node("none", cpu="8"),
                make_node("one", cpu="8", taints=prefer_taints(1)),
                make_node("four", cpu="1", taints=prefer_taints(4)),
            ],
            "plugins": [{"name": "TaintToleration"}, {"name": "NodeResourcesFit"}],
        },
        {"four"},
    ),
    (
        "soft topology spread with a rejected zone",
        {
            "pod": make_pod("p", cpu="1", labels={"app": "w"}, spread=SPREAD_SOFT),
            "nodes": [
                make_node("a1", labels={ZONE: "a"}),
                make_node("b1", labels={ZONE: "b"}),
                make_node("c1", cpu="0", labels={ZONE: "c"}),
                make_node("nozone"),
            ],
            "existingPods": [
                make_pod("w1", labels={"app": "w"}, node_name="a1"),
                make_pod("w2", labels={"app": "w"}, node_name="a1"),
            ],
        },
        {"c1"},
    ),
    (
        "preferred pod affinity towards pods on a rejected node",
        {
            "pod": make_pod(
                "p",
                cpu="2",
                affinity={
                    "podAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 10,
                                "podAffinityTerm": {
                                    "topologyKey": "kubernetes.io/hostname",
                                    "labelSelector": {"matchLabels": {"db": "x"}},
                                },
                            }
                        ]
                    }
                },
            ),
            "nodes": [make_node("full", cpu="1"), make_node("free1"), make_node("free2")],
            "existingPods": [make_pod("db", labels={"db": "x"}, node_name="full")],
        },
        {"full"},
    ),
]


def scheduler_decision(scenario: dict[str, Any]) -> tuple[dict[str, int], str | None]:
    """The scheduling cycle's own answer: its feasible nodes' weighted totals and the best of them."""
    fw = build_evaluation_framework(scenario)
    alg = ScheduleAlgorithm(None, fw.handle.snapshot, percentage_of_nodes_to_score=100)
    pod = {**scenario["pod"], "metadata": {**scenario["pod"]["metadata"], "namespace": "default"}}
    state = CycleState()
    feasible, _ = alg.find_nodes_that_fit_pod(fw, state, pod)
    if not feasible:
        return {}, None
    totals = alg.prioritize_nodes(fw, state, pod, feasible).tolist()
    names = [fw.handle.snapshot.node_info_list[i].name for i in feasible]
    best = max(totals)
    return dict(zip(names, totals, strict=True)), names[totals.index(best)]


@pytest.mark.parametrize(("name", "scenario", "rejected"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_every_node_is_scored_and_the_decision_is_the_schedulers(
    name: str, scenario: dict[str, Any], rejected: set[str]
) -> None:
    out = evaluate(scenario)
    all_nodes = {n["metadata"]["name"] for n in scenario["nodes"]}
    failed = {
        node
        for verdicts in out["filter"].values()
        for node, v in verdicts.items()
        if v["code"] not in ("Success", "Skip")
    }
    assert failed == rejected
    assert out["score"], "some Score plugin ran"
    for plugin, scores in out["score"].items():
        assert set(scores) == all_nodes, plugin
        assert set(out["rawScore"][plugin]) == all_nodes, plugin
        assert out["weights"][plugin] >= 1
    totals, selected = scheduler_decision(scenario)
    assert out["totalScore"] == totals
    assert out["selectedNode"] == selected
    assert set(out["totalScore"]) == all_nodes - rejected
    # totalScore is the weighted sum of the decision's own per-plugin scores.
    for node, total in out["totalScore"].items():
        assert total == sum(out["weights"][p] * s[node] for p, s in out["decisionScore"].items())


def test_normalisation_over_all_nodes_differs_from_the_decision() -> None:
    out = evaluate(SCENARIOS[1][1])
    assert out["rawScore"]["TaintToleration"] == {"none": 0, "one": 1, "four": 4}
    assert out["score"]["TaintToleration"] == {"none": 100, "one": 75, "four": 0}
    assert out["decisionScore"]["TaintToleration"] == {"none": 100, "one": 0}
    assert out["selectedNode"] == "none"


def test_candidate_nodes_name_the_scored_nodes_not_the_decision() -> None:
    scenario = {**SCENARIOS[0][1], "candidateNodes": ["small", "busy"]}
    out = evaluate(scenario)
    assert all(set(scores) == {"small", "busy"} for scores in out["score"].values())
    totals, selected = scheduler_decision(scenario)
    assert (out["totalScore"], out["selectedNode"]) == (totals, selected)
    assert selected == "big"


def test_a_pre_filter_rejection_leaves_no_decision_but_scores_every_node() -> None:
    pod = make_pod("p", cpu="1", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "missing"}}])
    out = evaluate({"pod": pod, "nodes": [make_node("a"), make_node("b")]})
    assert out["preFilter"]["VolumeBinding"] == {
        "code": "UnschedulableAndUnresolvable", "reasons": ['persistentvolumeclaim "missing" not found']}  # fmt: skip
    assert (out["totalScore"], out["selectedNode"]) == ({}, None)
    assert set(out["score"]["NodeResourcesFit"]) == {"a", "b"}


def test_one_feasible_node_is_selected_without_comparing_scores() -> None:
    out = evaluate({"pod": make_pod("p", cpu="2"), "nodes": [make_node("small", cpu="1"), make_node("big")]})
    assert out["selectedNode"] == "big"
    assert set(out["score"]["NodeResourcesFit"]) == {"small", "big"}
