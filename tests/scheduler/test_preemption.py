"""DefaultPreemption and the preemption Evaluator (cases re-expressed from upstream's
defaultpreemption/default_preemption_test.go: PostFilter, DryRunPreemption, SelectBestCandidate,
PodEligibleToPreemptOthers, Preempt), run through a real Framework with the tree's plugins."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.scheduler import metrics
from pyk8s.scheduler.framework.handle import FrameworkHandle, StaticLister
from pyk8s.scheduler.framework.interface import (
    Code,
    CycleState,
    FilterPlugin,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterPlugin,
    Status,
)
from pyk8s.scheduler.framework.preemption import (
    Victims,
    parse_time_ns,
    pick_one_node_for_preemption,
    updated_condition,
)
from pyk8s.scheduler.framework.runtime import Framework, FrameworkError, WaitingPod
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import NodeInfo, PodInfo
from pyk8s.scheduler.plugins.defaultbinder import DefaultBinder
from pyk8s.scheduler.plugins.defaultpreemption import (
    DefaultPreemption,
    filter_pods_with_pdb_violation,
    pod_terminating_by_preemption,
)
from pyk8s.scheduler.plugins.interpodaffinity import InterPodAffinity
from pyk8s.scheduler.plugins.noderesources.fit import NodeResourcesFit
from pyk8s.scheduler.plugins.podtopologyspread import PodTopologySpread
from pyk8s.scheduler.plugins.queuesort import PrioritySort
from pyk8s.scheduler.queue import PriorityQueue

from .wrappers import make_node, make_pod

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
NODE_RES = {"cpu": "200m", "memory": "400"}
ONE_POD = {"pods": "1"}

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# -- builders --------------------------------------------------------------------------------------------------


def node(spec: str, res: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A node; "name/zone/region" names also label hostname, zone and region as upstream's tests do."""
    parts = spec.split("/")
    res = {"pods": "32", **(res if res is not None else VERY_LARGE)}
    lbl = dict(zip(("hostname", "zone", "region"), parts, strict=False))
    n = make_node(
        parts[0],
        cpu=res.get("cpu", "0"),
        memory=res.get("memory", "0"),
        pods=res["pods"],
        labels={**lbl, **(labels or {})},
    )
    for key in ("cpu", "memory"):
        if key not in res:
            del n["status"]["allocatable"][key], n["status"]["capacity"][key]
    return n


def pod(
    name: str,
    on: str | None = None,
    prio: int | None = None,
    res: dict[str, str] | None = None,
    start: int | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    **kw: Any,
) -> dict[str, Any]:
    p = make_pod(name, namespace=namespace, node_name=on, priority=prio, requests=res, labels=labels, **kw)
    p["metadata"]["uid"] = name
    if start is not None:
        p["status"]["startTime"] = f"2024-01-01T00:00:{start:02d}Z"
    return p


def pdb(
    selector: dict[str, Any] | None,
    allowed: int = 0,
    disrupted: Sequence[str] = (),
    name: str = "pdb",
    namespace: str = "default",
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {},
        "status": {"disruptionsAllowed": allowed},
    }
    if selector is not None:
        obj["spec"]["selector"] = selector
    if disrupted:
        obj["status"]["disruptedPods"] = {p: "2024-01-01T00:00:00Z" for p in disrupted}
    return obj


class FakeFilter(FilterPlugin):
    """Counts Filter calls and answers a fixed code per node (upstream: tf.FakeFilterPlugin)."""

    name: ClassVar[str] = "FakeFilter"

    def __init__(self) -> None:
        self.calls = 0
        self.codes: dict[str, Code] = {}

    def filter(self, state: CycleState, pod: dict[str, Any], node_info: NodeInfo) -> Status | None:
        self.calls += 1
        code = self.codes.get(node_info.name, Code.SUCCESS)
        return None if code == Code.SUCCESS else Status(code)


class FalseFilter(FilterPlugin):
    name: ClassVar[str] = "FalseFilter"

    def filter(self, state: CycleState, pod: dict[str, Any], node_info: NodeInfo) -> Status | None:
        return Status(Code.UNSCHEDULABLE, "always fails")


class TrueFilter(FilterPlugin):
    name: ClassVar[str] = "TrueFilter"

    def filter(self, state: CycleState, pod: dict[str, Any], node_info: NodeInfo) -> Status | None:
        return None


class MatchFilter(FilterPlugin):
    """Fits only the node named like the pod."""

    name: ClassVar[str] = "MatchFilter"

    def filter(self, state: CycleState, pod: dict[str, Any], node_info: NodeInfo) -> Status | None:
        return None if pod["metadata"]["name"] == node_info.name else Status(Code.UNSCHEDULABLE, "name mismatch")


class ErrorOnLabelledNode(PreFilterPlugin, PreFilterExtensions):
    """Fails AddPod/RemovePod with an error on nodes labelled error=true (upstream's TestPlugin)."""

    name: ClassVar[str] = "test-plugin"

    def pre_filter(self, state: CycleState, pod: dict[str, Any], nodes: list[NodeInfo]) -> tuple[None, None]:
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(
        self, state: CycleState, pod: dict[str, Any], pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        if node_info.node and node_info.node["metadata"]["labels"].get("error") == "true":
            return Status.as_error(f"failed to add pod: {pod['metadata']['name']}")
        return None

    def remove_pod(
        self, state: CycleState, pod: dict[str, Any], pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        if node_info.node and node_info.node["metadata"]["labels"].get("error") == "true":
            return Status.as_error(f"failed to remove pod: {pod['metadata']['name']}")
        return None


def _instance(obj: Any) -> Any:
    return lambda args, handle: obj


REGISTRY: dict[str, Any] = {
    "PrioritySort": PrioritySort.new,
    "DefaultBinder": DefaultBinder.new,
    "NodeResourcesFit": NodeResourcesFit.new,
    "InterPodAffinity": InterPodAffinity.new,
    "PodTopologySpread": PodTopologySpread.new,
    "DefaultPreemption": DefaultPreemption.new,
    "FalseFilter": _instance(FalseFilter()),
    "TrueFilter": _instance(TrueFilter()),
    "MatchFilter": _instance(MatchFilter()),
    "test-plugin": _instance(ErrorOnLabelledNode()),
}
PRE_FILTERS = {"NodeResourcesFit", "InterPodAffinity", "PodTopologySpread", "test-plugin"}
FILTERS = {"NodeResourcesFit", "InterPodAffinity", "PodTopologySpread", "FalseFilter", "TrueFilter", "MatchFilter"}


class Env:
    """A profile with the given plugins over a snapshot of `nodes` and `pods`, plus DefaultPreemption."""

    def __init__(
        self,
        nodes: list[dict[str, Any]],
        pods: list[dict[str, Any]],
        plugins: Sequence[str] = ("NodeResourcesFit",),
        pdbs: Sequence[dict[str, Any]] = (),
        args: dict[str, Any] | None = None,
        fake: FakeFilter | None = None,
        nominator: Any = None,
        offsets: Sequence[int] = (0,),
        gates: dict[str, bool] | None = None,
    ) -> None:
        self.snapshot = Snapshot.from_objects(nodes, pods)
        self.handle = FrameworkHandle(
            self.snapshot, StaticLister({"poddisruptionbudgets": list(pdbs)}), feature_gates=gates
        )
        self.handle.nominator = nominator
        self.events: list[tuple[Any, ...]] = []
        self.handle.recorder = self  # an in-memory event recorder: record_event hands events to eventf
        registry = dict(REGISTRY)
        filters = [(p, 0) for p in plugins if p in FILTERS]
        if fake is not None:
            registry["FakeFilter"] = _instance(fake)
            filters.insert(0, ("FakeFilter", 0))  # first, so it sees (and counts) every filter run
        config = {
            "queueSort": [("PrioritySort", 0)],
            "preFilter": [(p, 0) for p in plugins if p in PRE_FILTERS],
            "filter": filters,
            "postFilter": [("DefaultPreemption", 0)],
            "bind": [("DefaultBinder", 0)],
        }
        self.fw = Framework("default-scheduler", config, registry, {"DefaultPreemption": args}, self.handle)
        self.pl: DefaultPreemption = self.fw.plugins["DefaultPreemption"]
        it = iter(offsets)
        self.pl.offset_rand = lambda n: next(it) % n

    def eventf(self, regarding: Any, related: Any, type_: str, reason: str, action: str, fmt: str, *args: Any) -> None:
        self.events.append(
            (regarding["metadata"]["name"], related["metadata"]["name"], type_, reason, action, fmt % args)
        )

    def state(self, pod: dict[str, Any]) -> CycleState:
        state = CycleState()
        _, st, _ = self.fw.run_pre_filter_plugins(state, pod, self.snapshot.node_info_list)
        assert st is None, st
        return state

    def nodes_by_name(self) -> list[NodeInfo]:
        return sorted(self.snapshot.node_info_list, key=lambda ni: ni.name)


def names(pods: Sequence[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def statuses(**codes: Code) -> dict[str, Status]:
    return {n: Status(c) for n, c in codes.items()}


# -- args ------------------------------------------------------------------------------------------------------


def test_args_defaults() -> None:
    env = Env([node("n1")], [])
    assert env.pl.args == {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}
    pl = DefaultPreemption.new({"minCandidateNodesAbsolute": 0}, env.handle)
    assert pl.args == {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 0}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"minCandidateNodesPercentage": -1},
            "minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesPercentage": 900},
            "minCandidateNodesPercentage: Invalid value: 900: not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
        ),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
            "minCandidateNodesAbsolute, minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same "
            "time as minCandidateNodesPercentage]",
        ),
        (
            {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": -1},
            "[minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100], "
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)]",
        ),
    ],
)
def test_args_validation(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        DefaultPreemption.new(args, FrameworkHandle())
    with pytest.raises(FrameworkError, match=re.escape(message)):
        Env([node("n1")], [], args=args)


@pytest.mark.parametrize(
    ("pct", "absolute", "num_nodes", "want"),
    [
        (10, 100, 0, 0),
        (10, 100, 10, 10),  # the absolute minimum, capped at all nodes
        (10, 100, 1000, 100),
        (10, 100, 5000, 500),  # 10 % beats the absolute minimum
        (40, 1, 5, 2),
        (5, 50, 999, 50),  # 49 (int division) is below the minimum
        (100, 0, 7, 7),
        (0, 3, 7, 3),
    ],
)
def test_calculate_num_candidates(pct: int, absolute: int, num_nodes: int, want: int) -> None:
    pl = DefaultPreemption.new({"minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": absolute}, None)
    assert pl.calculate_num_candidates(num_nodes) == want


# -- PostFilter (upstream: TestPostFilter) ---------------------------------------------------------------------

VIOLATING = {"test.kubernetes.io/is-violating-pdb": "violating"}
NON_VIOLATING = {"test.kubernetes.io/is-violating-pdb": "non-violating"}

# (preemptor, pods, nodes, PDBs, filter statuses, nominated node, message)
# fmt: off
POST_FILTER_CASES = [
    pytest.param(
        pod("p", prio=HIGH), [pod("p1", on="node1")], [node("node1", ONE_POD)], [], statuses(node1=U),
        "node1", None, id="higher priority pod can be made schedulable",
    ),
    pytest.param(
        pod("p"), [pod("p1", on="node1")], [node("node1", ONE_POD)], [], statuses(node1=U),
        "", "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        id="tied priority stays unschedulable",
    ),
    pytest.param(
        pod("p", prio=HIGH), [pod("p1", on="node1")], [node("node1", ONE_POD)], [], statuses(node1=UU),
        "", "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        id="UnschedulableAndUnresolvable nodes are not tried",
    ),
    pytest.param(
        pod("p", prio=HIGH), [pod("p1", on="node1")], [node("node1", ONE_POD)], [], {},
        "", "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        id="absent status means UnschedulableAndUnresolvable",
    ),
    pytest.param(
        pod("p", prio=MID), [pod("p1", on="node1", prio=HIGH), pod("p2", on="node2", prio=LOW)],
        [node("node1", ONE_POD), node("node2", ONE_POD)], [], statuses(node1=U, node2=U),
        "node2", None, id="only one node has lower-priority pods",
    ),
    pytest.param(
        pod("p", prio=VERY_HIGH),
        [
            pod("p1", on="node1", prio=HIGH, labels=NON_VIOLATING), pod("p2", on="node1", prio=LOW, labels=VIOLATING),
            pod("p3", on="node2", prio=MID, labels=VIOLATING),
        ],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        [
            pdb({"matchLabels": VIOLATING}, name="violating-pdb"),
            pdb({"matchLabels": NON_VIOLATING}, allowed=2**31 - 1, name="non-violating-pdb"),
        ],
        statuses(node1=U, node2=U),
        "node2", None, id="equal PDB violations: the node with the lowest highest-priority victim",
    ),
    pytest.param(
        pod("p", prio=HIGH, res=LARGE), [pod("p1", on="node1"), pod("p2", on="node2")],
        [node("node1", NODE_RES), node("node2", NODE_RES)], [], statuses(node1=U, node2=U),
        "", "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
        id="no room even after removing lower-priority pods",
    ),
    pytest.param(
        pod("p", prio=HIGH, res=LARGE),
        [pod("p1", on="node1", prio=HIGH), pod("p2", on="node2"), pod("p3", on="node3", prio=HIGH)],
        [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)], [],
        statuses(node1=U, node2=U, node3=U),
        "", "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
        id="mixed reasons: no victims and no room",
    ),
    pytest.param(
        pod("p", prio=HIGH, res=LARGE), [pod("p1", on="node1"), pod("p2", on="node2")],
        [node(f"node{i}", NODE_RES) for i in range(1, 5)], [], statuses(node1=U, node2=U, node4=UU),
        "", "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
        id="mixed reasons with untried nodes",
    ),
    pytest.param(
        pod("p", prio=HIGH, res=LARGE), [pod("p1", on="node1"), pod("p2", on="node2", res=MEDIUM)],
        [node("node1", LARGE, labels={"error": "true"}), node("node2", LARGE)], [], statuses(node1=U, node2=U),
        "node2", None, id="a node failing with an error does not stop another from being chosen",
    ),
]
# fmt: on


@pytest.mark.parametrize(("preemptor", "pods", "nodes", "pdbs", "m", "want_node", "want_msg"), POST_FILTER_CASES)
async def test_post_filter(
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    m: dict[str, Status],
    want_node: str,
    want_msg: str | None,
) -> None:
    env = Env(nodes, pods, plugins=("NodeResourcesFit", "test-plugin"), pdbs=pdbs)
    result, st = await env.pl.post_filter(env.state(preemptor), preemptor, m)
    assert result == PostFilterResult(want_node)
    if want_msg is None:
        assert st is None
    else:
        assert st is not None and st.code == Code.UNSCHEDULABLE and st.reasons == [want_msg]


async def test_post_filter_error_from_pre_filter_extension() -> None:
    env = Env(
        [node("node1", LARGE, labels={"error": "true"})],
        [pod("p1", on="node1")],
        plugins=("NodeResourcesFit", "test-plugin"),
    )
    preemptor = pod("p", prio=HIGH, res=LARGE)
    result, st = await env.pl.post_filter(env.state(preemptor), preemptor, statuses(node1=U))
    assert result is None
    assert st is not None and st.code == Code.ERROR
    assert st.message().startswith("preemption: running RemovePod on PreFilter plugin ")
    assert st.message().endswith("test-plugin': failed to remove pod: p") or st.message().endswith(
        'test-plugin": failed to remove pod: p'
    )


async def test_post_filter_counts_attempts() -> None:
    before = metrics.SCHEDULER_REGISTRY.get_sample_value("scheduler_preemption_attempts_total") or 0.0
    env = Env([node("node1", ONE_POD)], [pod("p1", on="node1")])
    preemptor = pod("p", prio=HIGH)
    await env.pl.post_filter(env.state(preemptor), preemptor, statuses(node1=U))
    await env.pl.post_filter(env.state(preemptor), preemptor, {})
    after = metrics.SCHEDULER_REGISTRY.get_sample_value("scheduler_preemption_attempts_total")
    assert after == before + 2


# -- dry run (upstream: TestDryRunPreemption) -------------------------------------------------------------------

Cand = dict[str, tuple[list[str], int]]  # node -> (victim names sorted, PDB violations)

# fmt: off
DRY_RUN_CASES: list[Any] = [
    pytest.param(
        ("FalseFilter",), ["node1", "node2"], [pod("p", prio=HIGH)],
        [pod("p1", on="node1", prio=MID), pod("p2", on="node2", prio=MID)],
        [], None, Code.SUCCESS, [{}], [2],
        id="fits no node even without the lower-priority pods",
    ),
    pytest.param(
        ("TrueFilter",), ["node1", "node2"], [pod("p", prio=HIGH)],
        [pod("p1", on="node1", prio=MID), pod("p2", on="node2", prio=MID)],
        [], None, U, [{}], [2],
        id="a filter rejecting every node",
    ),
    pytest.param(
        ("MatchFilter",), ["node1", "node2"], [pod("node1", prio=HIGH)],
        [pod("p1", on="node1", prio=MID), pod("p2", on="node2", prio=MID)],
        [], None, U, [{}], [2],
        id="fits one node by name but the fake filter rejects",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1", "node2"], [pod("p", prio=HIGH, res=LARGE)],
        [pod("p1", on="node1", prio=MID, res=LARGE), pod("p2", on="node2", prio=MID, res=LARGE)],
        [], None, Code.SUCCESS, [{"node1": (["p1"], 0), "node2": (["p2"], 0)}], [4],
        id="fits both nodes once lower-priority pods are gone",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1", "node2"], [pod("p", prio=LOW, res=LARGE)],
        [pod("p1", on="node1", prio=MID, res=LARGE), pod("p2", on="node2", prio=MID, res=LARGE)],
        [], None, Code.SUCCESS, [{}], [0],
        id="running pods have higher priority: no filter runs at all",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1", "node2"], [pod("p", prio=HIGH, res=LARGE)],
        [
            pod("p1.1", on="node1", prio=LOW, res=SMALL), pod("p1.2", on="node1", prio=MID, res=LARGE),
            pod("p2", on="node2", prio=MID, res=LARGE),
        ],
        [], None, Code.SUCCESS, [{"node1": (["p1.2"], 0), "node2": (["p2"], 0)}], [5],
        id="the medium pod is preempted, the small low one is reprieved",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1", "node2"], [pod("p", prio=HIGH, res=LARGE)],
        [
            pod("p1.1", on="node1", prio=MID, res=SMALL), pod("p1.2", on="node1", prio=LOW, res=SMALL),
            pod("p1.3", on="node1", prio=MID, res=MEDIUM), pod("p1.4", on="node1", prio=HIGH, res=SMALL),
            pod("p2", on="node2", prio=HIGH, res=LARGE),
        ],
        [], None, Code.SUCCESS, [{"node1": (["p1.2", "p1.3"], 0)}], [4],
        id="mixed priorities",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1", "node2"], [pod("p", prio=HIGH, res=LARGE)],
        [
            pod("p1.1", on="node1", prio=LOW, res=SMALL, start=5), pod("p1.2", on="node1", prio=LOW, res=SMALL, start=4),
            pod("p1.3", on="node1", prio=MID, res=MEDIUM, start=3), pod("p1.4", on="node1", prio=HIGH, res=SMALL, start=2),
            pod("p2", on="node2", prio=HIGH, res=LARGE, start=1),
        ],
        [], None, Code.SUCCESS, [{"node1": (["p1.1", "p1.3"], 0)}], [4],
        id="equal priorities: the later-started pod is preempted",
    ),
    pytest.param(
        ("NodeResourcesFit", "InterPodAffinity"), ["node1", "node2"],
        [pod("p", prio=HIGH, res=SMALL, labels={"foo": ""})],
        [
            pod("p1.1", on="node1", prio=LOW, res=SMALL, labels={"foo": ""}, affinity={"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                    "topologyKey": "hostname",
                }],
            }}),
            pod("p1.2", on="node1", prio=MID, res=SMALL), pod("p1.3", on="node1", prio=HIGH, res=SMALL),
            pod("p2", on="node2", prio=HIGH, res=SMALL),
        ],
        [], None, Code.SUCCESS, [{"node1": (["p1.1"], 0)}], [3],
        id="the pod with anti-affinity to the preemptor is preempted",
    ),
    pytest.param(
        ("PodTopologySpread",), ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        [pod("p", prio=HIGH, labels={"foo": ""}, topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}
            for key in ("zone", "hostname")
        ])],
        [
            pod("pod-a1", on="node-a", prio=MID, labels={"foo": ""}),
            pod("pod-a2", on="node-a", prio=LOW, labels={"foo": ""}),
            pod("pod-b1", on="node-b", prio=LOW, labels={"foo": ""}),
            pod("pod-x1", on="node-x", prio=HIGH, labels={"foo": ""}),
            pod("pod-x2", on="node-x", prio=HIGH, labels={"foo": ""}),
        ],
        [], None, Code.SUCCESS, [{"node-a": (["pod-a2"], 0), "node-b": (["pod-b1"], 0)}], [5],
        id="preemption resolves a topology spread failure",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1", "node2"], [pod("p", prio=HIGH, res=LARGE)],
        [pod("p1", on="node1", prio=MID, res=LARGE), pod("p2", on="node2", prio=MID, res=LARGE)],
        [], None, U, [{}], [2],
        id="a filter still rejecting after the pods are removed",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1"], [pod("p", prio=HIGH, res=VERY_LARGE)],
        [
            pod("p1.1", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
            pod("p1.2", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
        ],
        [pdb({"matchLabels": {"app": "foo"}}, allowed=1)], None, Code.SUCCESS,
        [{"node1": (["p1.1", "p1.2"], 1)}], [3],
        id="two victims of one PDB allowing one disruption",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1"], [pod("p", prio=HIGH, res=VERY_LARGE)],
        [
            pod("p1.1", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
            pod("p1.2", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
        ],
        [pdb({"matchLabels": {"app": "foo"}}, allowed=1, disrupted=["p2"])], None, Code.SUCCESS,
        [{"node1": (["p1.1", "p1.2"], 1)}], [3],
        id="another pod's processed eviction does not help",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1"], [pod("p", prio=HIGH, res=VERY_LARGE)],
        [
            pod("p1.1", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
            pod("p1.2", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
        ],
        [pdb({"matchLabels": {"app": "foo"}}, allowed=1, disrupted=["p1.2"])], None, Code.SUCCESS,
        [{"node1": (["p1.1", "p1.2"], 0)}], [3],
        id="a victim whose eviction was processed does not use the budget",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1"], [pod("p", prio=HIGH, res=VERY_LARGE)],
        [
            pod("p1.1", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
            pod("p1.2", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
            pod("p1.3", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
        ],
        [pdb({"matchLabels": {"app": "foo"}}, allowed=1, disrupted=["p1.3"])], None, Code.SUCCESS,
        [{"node1": (["p1.1", "p1.2", "p1.3"], 1)}], [4],
        id="the disrupted victim counts as non-violating",
    ),
    pytest.param(
        ("NodeResourcesFit",), [f"node{i}" for i in range(1, 6)], [pod("p", prio=HIGH, res=LARGE)],
        [pod(f"p{i}", on=f"node{i}", prio=MID, res=LARGE) for i in range(1, 6)],
        [], {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, Code.SUCCESS,
        # offset 4: node5, node1
        [{"node1": (["p1"], 0), "node5": (["p5"], 0)}], [4],
        id="args limit the candidates to two",
    ),
    pytest.param(
        ("NodeResourcesFit",), [f"node{i}" for i in range(1, 6)], [pod("p", prio=HIGH, res=LARGE)],
        [pod(f"p{i}", on=f"node{i}", prio=VERY_HIGH if i in (2, 5) else MID, res=LARGE) for i in range(1, 6)],
        [], {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, Code.SUCCESS,
        # offset 4: node5 (no victims), node1, node2 (no victims), node3
        [{"node1": (["p1"], 0), "node3": (["p3"], 0)}], [4],
        id="nodes without victims are skipped on the way to two candidates",
    ),
    pytest.param(
        ("NodeResourcesFit",), [f"node{i}" for i in range(1, 6)],
        [pod(f"tp{i}", prio=HIGH, res=LARGE) for i in range(1, 4)],
        [pod(f"p{i}", on=f"node{i}", prio=MID, res=LARGE) for i in range(1, 6)],
        [], {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, Code.SUCCESS,
        # offsets 4, 1, 3 over three cycles, wrapping around
        [
            {"node1": (["p1"], 0), "node5": (["p5"], 0)},
            {"node2": (["p2"], 0), "node3": (["p3"], 0)},
            {"node4": (["p4"], 0), "node5": (["p5"], 0)},
        ],
        [4, 4, 4],
        id="offsets across cycles wrap around",
    ),
    pytest.param(
        ("NodeResourcesFit",), [f"node{i}" for i in range(1, 6)], [pod("p", prio=HIGH, res=LARGE)],
        [
            pod(f"p{i}", on=f"node{i}", prio=MID, res=LARGE, labels={"app": "foo"} if i in (1, 2, 5) else None)
            for i in range(1, 6)
        ],
        [pdb({"matchLabels": {"app": "foo"}}, allowed=0)], {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
        Code.SUCCESS,
        # offset 4: node5 (PDB), node1 (PDB), node2 (PDB, the violating list is full), node3 (no PDB): stop
        [{"node1": (["p1"], 1), "node3": (["p3"], 0), "node5": (["p5"], 1)}], [8],
        id="the dry run goes past the candidate count until a PDB-respecting node is found",
    ),
]
# fmt: on


@pytest.mark.parametrize(
    ("plugins", "node_names", "preemptors", "pods", "pdbs", "args", "fake_code", "want", "want_calls"), DRY_RUN_CASES
)
def test_dry_run_preemption(
    plugins: tuple[str, ...],
    node_names: list[str],
    preemptors: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    args: dict[str, Any] | None,
    fake_code: Code,
    want: list[Cand],
    want_calls: list[int],
) -> None:
    fake = FakeFilter()
    fake.codes = {n.split("/")[0]: fake_code for n in node_names}
    env = Env([node(n) for n in node_names], pods, plugins=plugins, args=args, fake=fake, offsets=(4, 1, 3))
    nodes = env.nodes_by_name()
    for cycle, preemptor in enumerate(preemptors):
        state = env.state(preemptor)
        fake.calls = 0
        offset, num = env.pl.get_offset_and_num_candidates(len(nodes))
        got = env.pl.evaluator.dry_run_preemption(state, preemptor, nodes, pdbs, offset, num)
        cands = {c.name: (sorted(names(c.victims.pods)), c.victims.num_pdb_violations) for c in got.candidates}
        assert cands == want[cycle]
        assert len(got.candidates) == len(cands)
        assert fake.calls == want_calls[cycle]


def test_dry_run_keeps_the_snapshot_intact() -> None:
    env = Env([node("node1")], [pod("p1", on="node1", prio=MID, res=LARGE)])
    preemptor = pod("p", prio=HIGH, res=LARGE)
    ni = env.snapshot.get("node1")
    requested = ni.requested.milli_cpu
    got = env.pl.evaluator.dry_run_preemption(env.state(preemptor), preemptor, [ni], [], 0, 1)
    assert [c.name for c in got.candidates] == ["node1"]
    assert ni.requested.milli_cpu == requested and names(pi.pod for pi in ni.pods) == ["p1"]


# -- choosing the node (upstream: TestSelectBestCandidate) -------------------------------------------------------


def _p(name: str, prio: int, res: dict[str, str], start: int = 0) -> dict[str, Any]:
    return pod(name, on="node" + name[1], prio=prio, res=res, start=start)


# fmt: off
SELECT_CASES = [
    pytest.param(
        2, pod("p", prio=HIGH, res=LARGE), [_p("p1", MID, LARGE), _p("p2", MID, LARGE)], {"node1", "node2"},
        id="a tie: either node",
    ),
    pytest.param(
        3, pod("p", prio=HIGH, res=VERY_LARGE),
        [_p("p1.1", MID, MEDIUM), _p("p1.2", MID, LARGE), _p("p2.1", MID, MEDIUM), _p("p2.2", LOW, MEDIUM),
         _p("p3.1", LOW, MEDIUM), _p("p3.2", LOW, MEDIUM)],
        {"node3"}, id="the lowest highest-priority victim",
    ),
    pytest.param(
        3, pod("p", prio=HIGH, res=VERY_LARGE),
        [_p("p1.1", MID, MEDIUM), _p("p1.2", MID, LARGE), _p("p2.1", MID, LARGE), _p("p2.2", LOW, MEDIUM),
         _p("p3.1", MID, MEDIUM), _p("p3.2", MID, MEDIUM)],
        {"node2"}, id="equal highest priorities: the smallest priority sum",
    ),
    pytest.param(
        3, pod("p", prio=HIGH, res=VERY_LARGE),
        [_p("p1.1", MID, SMALL), _p("p1.2", NEG, SMALL), _p("p1.3", MID, SMALL), _p("p1.4", NEG, SMALL),
         _p("p2.1", MID, LARGE), _p("p2.2", NEG, MEDIUM), _p("p3.1", MID, MEDIUM), _p("p3.2", NEG, SMALL),
         _p("p3.3", LOW, SMALL)],
        {"node2"}, id="equal highest priority and sum: the fewest victims",
    ),
    pytest.param(
        3, pod("p", prio=HIGH, res=VERY_LARGE),
        [_p("p1.1", MID, SMALL), _p("p1.2", NEG, SMALL), _p("p1.3", NEG, SMALL), _p("p2.1", MID, LARGE),
         _p("p2.2", NEG, MEDIUM), _p("p3.1", MID, MEDIUM), _p("p3.2", NEG, SMALL), _p("p3.3", LOW, SMALL)],
        {"node2"}, id="priorities are shifted before summing",
    ),
    pytest.param(
        4, pod("p", prio=VERY_HIGH, res=VERY_LARGE),
        [_p("p1.1", MID, SMALL), _p("p1.2", LOW, SMALL), _p("p1.3", LOW, SMALL), _p("p2.1", HIGH, LARGE),
         _p("p3.1", MID, MEDIUM), _p("p3.2", LOW, SMALL), _p("p3.3", LOW, SMALL), _p("p3.4", LOW, MEDIUM),
         _p("p4.1", MID, MEDIUM), _p("p4.2", MID, SMALL), _p("p4.3", MID, SMALL), _p("p4.4", NEG, SMALL)],
        {"node1"}, id="non-overlapping criteria",
    ),
    pytest.param(
        3, pod("p", prio=HIGH, res=VERY_LARGE),
        [_p("p1.1", MID, MEDIUM, 2), _p("p1.2", MID, MEDIUM, 2), _p("p2.1", MID, MEDIUM, 3),
         _p("p2.2", MID, MEDIUM, 3), _p("p3.1", MID, MEDIUM, 1), _p("p3.2", MID, MEDIUM, 1)],
        {"node2"}, id="all equal but start times: the latest-started node",
    ),
    pytest.param(
        3, pod("p", prio=HIGH, res=VERY_LARGE),
        [_p("p1.1", MID, MEDIUM, 4), _p("p1.2", MID, MEDIUM, 2), _p("p2.1", MID, MEDIUM, 5),
         _p("p2.2", MID, MEDIUM, 1), _p("p3.1", MID, MEDIUM, 3), _p("p3.2", MID, MEDIUM, 6)],
        {"node3"}, id="the earliest start on each node decides",
    ),
    pytest.param(
        3, pod("p", prio=HIGH, res=VERY_LARGE),
        [_p("p1.1", LOW, MEDIUM, 4), _p("p1.2", MID, MEDIUM, 2), _p("p2.1", MID, MEDIUM, 6),
         _p("p2.2", LOW, MEDIUM, 1), _p("p3.1", LOW, MEDIUM, 3), _p("p3.2", MID, MEDIUM, 5)],
        {"node2"}, id="only the highest-priority victims' start times count",
    ),
]
# fmt: on


@pytest.mark.parametrize(("num_nodes", "preemptor", "pods", "want"), SELECT_CASES)
def test_select_candidate(
    num_nodes: int, preemptor: dict[str, Any], pods: list[dict[str, Any]], want: set[str]
) -> None:
    env = Env([node(f"node{i}") for i in range(1, num_nodes + 1)], pods)
    nodes = env.snapshot.node_info_list
    offset, num = env.pl.get_offset_and_num_candidates(len(nodes))
    got = env.pl.evaluator.dry_run_preemption(env.state(preemptor), preemptor, nodes, [], offset, num)
    best = env.pl.evaluator.select_candidate(got.candidates)
    assert best is not None and best.name in want


def test_pick_one_node_criteria_in_order() -> None:
    def v(*prios: int, pdb: int = 0, starts: Sequence[int] = ()) -> Victims:
        pods = [pod(f"x{i}", prio=p, start=starts[i] if starts else 0) for i, p in enumerate(prios)]
        return Victims(pods, pdb)

    assert pick_one_node_for_preemption({}) == ""
    assert pick_one_node_for_preemption({"a": v(LOW, pdb=1), "b": v(HIGH)}) == "b"
    assert pick_one_node_for_preemption({"a": v(MID), "b": v(LOW, LOW)}) == "b"
    assert pick_one_node_for_preemption({"a": v(MID, LOW), "b": v(MID, NEG)}) == "b"
    # Three victims at -100 sum higher (once shifted) than two at -100.
    assert pick_one_node_for_preemption({"a": v(NEG, NEG, NEG), "b": v(NEG, NEG)}) == "b"
    assert pick_one_node_for_preemption({"a": v(MID, starts=[3]), "b": v(MID, starts=[7])}) == "b"
    assert pick_one_node_for_preemption({"a": v(MID), "b": v(MID)}) == "a"  # a full tie: the first
    # Custom score functions replace the default ones.
    assert pick_one_node_for_preemption({"a": v(LOW), "b": v(HIGH)}, [lambda n: {"a": 0, "b": 1}[n]]) == "b"


# -- eligibility (upstream: TestPodEligibleToPreemptOthers) ------------------------------------------------------


def _terminating(p: dict[str, Any], by_preemption: bool) -> dict[str, Any]:
    p["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if by_preemption:
        p["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    return p


def _nominated(p: dict[str, Any], node_name: str) -> dict[str, Any]:
    p["status"]["nominatedNodeName"] = node_name
    return p


TERMINATING_MSG = "not eligible due to a terminating pod on the nominated node."

# (preemptor, pods, status of the nominated node, (eligible, message))
# fmt: off
ELIGIBLE_CASES = [
    pytest.param(
        _nominated(pod("p", prio=HIGH), "node1"), [_terminating(pod("p1", on="node1", prio=LOW), True)],
        Status(UU, "node(s) had untolerated taint"), (True, ""),
        id="the nominated node became UnschedulableAndUnresolvable",
    ),
    pytest.param(pod("p", prio=HIGH), [], None, (True, ""), id="no nominated node"),
    pytest.param(
        pod("p", prio=HIGH, preemptionPolicy="Never"), [], None, (False, "not eligible due to preemptionPolicy=Never."),
        id="preemptionPolicy Never",
    ),
    pytest.param(
        _nominated(pod("p", prio=HIGH), "node1"), [_terminating(pod("p1", on="node1", prio=LOW), True)],
        None, (False, TERMINATING_MSG), id="a victim is still terminating on the nominated node",
    ),
    pytest.param(
        _nominated(pod("p", prio=HIGH), "node1"), [_terminating(pod("p1", on="node1", prio=LOW), False)],
        None, (True, ""), id="a terminating pod that was not preempted",
    ),
    pytest.param(
        _nominated(pod("p", prio=HIGH), "node1"), [_terminating(pod("p1", on="node1", prio=HIGH), True)],
        None, (True, ""), id="a terminating preempted pod of equal priority",
    ),
    pytest.param(
        _nominated(pod("p", prio=HIGH), "node2"), [_terminating(pod("p1", on="node1", prio=LOW), True)],
        Status(U), (True, ""), id="terminating pods elsewhere do not matter",
    ),
]
# fmt: on


@pytest.mark.parametrize(("preemptor", "pods", "nominated_status", "want"), ELIGIBLE_CASES)
def test_pod_eligible_to_preempt_others(
    preemptor: dict[str, Any], pods: list[dict[str, Any]], nominated_status: Status | None, want: tuple[bool, str]
) -> None:
    env = Env([node("node1"), node("node2")], pods)
    assert env.pl.pod_eligible_to_preempt_others(preemptor, nominated_status) == want


def test_terminating_without_pod_disruption_conditions() -> None:
    p = _terminating(pod("p1", prio=LOW), False)
    assert pod_terminating_by_preemption(p, True) is False
    assert pod_terminating_by_preemption(p, False) is True
    env = Env(
        [node("node1")],
        [_terminating(pod("p1", on="node1", prio=LOW), False)],
        gates={"PodDisruptionConditions": False},
    )
    preemptor = _nominated(pod("p", prio=HIGH), "node1")
    assert env.pl.pod_eligible_to_preempt_others(preemptor, None)[0] is False


# -- PDB accounting -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "pdbs", "want_violating"),
    [
        ([pod("a", labels={"app": "x"})], [pdb({"matchLabels": {"app": "x"}}, allowed=0)], ["a"]),
        ([pod("a", labels={"app": "x"})], [pdb({"matchLabels": {"app": "x"}}, allowed=1)], []),
        (
            [pod("a", labels={"app": "x"}), pod("b", labels={"app": "x"})],
            [pdb({"matchLabels": {"app": "x"}}, allowed=1)],
            ["b"],
        ),
        ([pod("a")], [pdb({}, allowed=0)], []),  # no labels: no PDB matches
        ([pod("a", labels={"app": "x"})], [pdb({}, allowed=0)], []),  # an empty selector matches nothing here
        ([pod("a", labels={"app": "x"})], [pdb(None, allowed=0)], []),  # so does a missing one
        ([pod("a", labels={"app": "x"})], [pdb({"matchLabels": {"app": "x"}}, namespace="other")], []),
        ([pod("a", labels={"app": "x"})], [pdb({"matchExpressions": [{"key": "app", "operator": "Bad"}]})], []),
        (
            [pod("a", labels={"app": "x"}), pod("b", labels={"app": "x"})],
            [pdb({"matchLabels": {"app": "x"}}, allowed=0, disrupted=["a"])],
            ["b"],
        ),
        (
            [pod("a", labels={"app": "x", "tier": "web"})],
            [
                pdb({"matchLabels": {"app": "x"}}, allowed=5, name="p1"),
                pdb({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]}, name="p2"),
            ],
            ["a"],
        ),
    ],
)
def test_filter_pods_with_pdb_violation(
    pods: list[dict[str, Any]], pdbs: list[dict[str, Any]], want_violating: list[str]
) -> None:
    infos = [PodInfo(p) for p in pods]
    violating, non_violating = filter_pods_with_pdb_violation(infos, pdbs)
    assert [pi.pod["metadata"]["name"] for pi in violating] == want_violating
    assert len(violating) + len(non_violating) == len(pods)
    assert [pi for pi in infos if pi in non_violating] == non_violating  # order kept


# -- the whole preemption (upstream: TestPreempt) ------------------------------------------------------------------


# fmt: off
PREEMPT_CASES = [
    pytest.param(
        ("NodeResourcesFit",), ["node1", "node2", "node3"],
        pod("p", prio=HIGH, res=VERY_LARGE, preemptionPolicy="PreemptLowerPriority"),
        [
            pod("p1.1", on="node1", prio=LOW, res=SMALL), pod("p1.2", on="node1", prio=LOW, res=SMALL),
            pod("p2.1", on="node2", prio=HIGH, res=LARGE), pod("p3.1", on="node3", prio=MID, res=MEDIUM),
        ],
        "node1", ["p1.1", "p1.2"], id="basic preemption",
    ),
    pytest.param(
        ("PodTopologySpread",), ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        pod("p", prio=HIGH, labels={"foo": ""}, topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}
            for key in ("zone", "hostname")
        ]),
        [
            pod("p-a1", on="node-a", prio=HIGH, labels={"foo": ""}), pod("p-a2", on="node-a", prio=HIGH, labels={"foo": ""}),
            pod("p-b1", on="node-b", prio=LOW, labels={"foo": ""}),
            pod("p-x1", on="node-x", prio=HIGH, labels={"foo": ""}), pod("p-x2", on="node-x", prio=HIGH, labels={"foo": ""}),
        ],
        "node-b", ["p-b1"], id="preemption for topology spread constraints",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1", "node2", "node3"],
        pod("p", prio=HIGH, res=VERY_LARGE, preemptionPolicy="Never"),
        [
            pod("p1.1", on="node1", prio=LOW, res=SMALL), pod("p1.2", on="node1", prio=LOW, res=SMALL),
            pod("p2.1", on="node2", prio=HIGH, res=LARGE), pod("p3.1", on="node3", prio=MID, res=MEDIUM),
        ],
        None, [], id="preemptionPolicy Never",
    ),
    pytest.param(
        ("NodeResourcesFit",), ["node1", "node2", "node3"],
        pod("p", prio=HIGH, res=VERY_LARGE),
        [
            pod("p1.1", on="node1", prio=LOW, res=SMALL), pod("p1.2", on="node1", prio=LOW, res=SMALL),
            pod("p2.1", on="node2", prio=HIGH, res=LARGE), pod("p3.1", on="node3", prio=MID, res=MEDIUM),
        ],
        "node1", ["p1.1", "p1.2"], id="preemptionPolicy unset",
    ),
]
# fmt: on


@pytest.mark.parametrize(("plugins", "node_names", "preemptor", "pods", "want_node", "want_victims"), PREEMPT_CASES)
async def test_preempt(
    plugins: tuple[str, ...],
    node_names: list[str],
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    want_node: str | None,
    want_victims: list[str],
) -> None:
    env = Env([node(n) for n in node_names], pods, plugins=plugins)
    ev = env.pl.evaluator
    victims_before = metrics.SCHEDULER_REGISTRY.get_sample_value("scheduler_preemption_victims_sum") or 0.0
    m = {ni.name: Status(U) for ni in env.snapshot.node_info_list}
    result, st = await ev.preempt(env.state(preemptor), preemptor, m)
    if want_node is None:
        assert result is None and st is not None and st.code == U
        assert ev.last_candidate is None and ev.last_preempted == []
        return
    assert st is None and result == PostFilterResult(want_node)
    assert sorted(names(ev.last_preempted)) == want_victims
    assert ev.last_candidate is not None and ev.last_candidate.name == want_node
    victims_after = metrics.SCHEDULER_REGISTRY.get_sample_value("scheduler_preemption_victims_sum")
    assert victims_after == victims_before + len(want_victims)
    uid = preemptor["metadata"]["uid"]
    assert sorted(env.events) == sorted(
        (v, "p", "Normal", "Preempted", "Preempting", f"Preempted by pod {uid} on node {want_node}")
        for v in want_victims
    )

    # Next attempt: the pod is nominated, its victims are terminating; with no node worth trying, preemption
    # clears the nomination and evicts nothing more.
    _nominated(preemptor, want_node)
    for ni in env.snapshot.node_info_list:
        for pi in ni.pods:
            if pi.pod["metadata"]["name"] in want_victims:
                _terminating(pi.pod, True)
    ev.last_preempted = []
    result, st = await ev.preempt(env.state(preemptor), preemptor, {})
    assert result == PostFilterResult("") and st is not None and st.code == U
    assert ev.last_preempted == []
    # While the nominated node is still worth trying, the terminating victims make the pod wait.
    result, st = await ev.preempt(env.state(preemptor), preemptor, m)
    assert result is None and st == Status(U, TERMINATING_MSG)


async def test_waiting_victim_is_rejected_and_lower_nominations_cleared() -> None:
    queue = PriorityQueue(None)
    victim = pod("victim", on="node1", prio=LOW, res=LARGE)
    low_nominee = _nominated(pod("low-nominee", prio=LOW), "node1")
    high_nominee = _nominated(pod("high-nominee", prio=VERY_HIGH), "node1")
    elsewhere = _nominated(pod("elsewhere", prio=LOW), "node2")
    for p in (low_nominee, high_nominee, elsewhere):
        queue.add_nominated_pod(PodInfo(p))
    env = Env(
        [node("node1"), node("node2", LARGE)],
        [victim, pod("big", on="node2", prio=VERY_HIGH, res=LARGE)],
        nominator=queue,
    )
    waiting = WaitingPod(victim, {"SomePermit": 60.0})
    env.fw.waiting_pods["victim"] = waiting
    preemptor = pod("p", prio=HIGH, res=LARGE)
    result, st = await env.pl.post_filter(env.state(preemptor), preemptor, statuses(node1=U, node2=U))
    assert st is None and result == PostFilterResult("node1")
    assert waiting.future.done()
    assert waiting.future.result() == Status(U, "preempted")
    assert waiting.future.result().plugin == "DefaultPreemption"
    assert names(pi.pod for pi in queue.nominated_pods_for_node("node1")) == ["high-nominee"]
    assert names(pi.pod for pi in queue.nominated_pods_for_node("node2")) == ["elsewhere"]
    assert env.events == [("victim", "p", "Normal", "Preempted", "Preempting", "Preempted by pod p on node node1")]


async def test_nominated_pods_count_during_the_dry_run() -> None:
    # A higher-priority pod already nominated to node1 keeps its room: evicting the victim there is not
    # enough, so node2 is chosen.
    queue = PriorityQueue(None)
    queue.add_nominated_pod(PodInfo(_nominated(pod("nominee", prio=VERY_HIGH, res=LARGE), "node1")))
    pods = [pod("v1", on="node1", prio=LOW, res=LARGE), pod("v2", on="node2", prio=MID, res=LARGE)]
    env = Env([node("node1"), node("node2")], pods, nominator=queue)
    preemptor = pod("p", prio=HIGH, res=LARGE)
    result, st = await env.pl.post_filter(env.state(preemptor), preemptor, statuses(node1=U, node2=U))
    assert st is None and result == PostFilterResult("node2")
    assert names(env.pl.evaluator.last_preempted) == ["v2"]


# -- helpers ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T00:00:01Z", 1_000_000_000),
        ("1970-01-01T00:00:00.000000002Z", 2),
        ("1970-01-01T00:00:01.5Z", 1_500_000_000),
        ("1970-01-01T01:00:00+01:00", 0),
        ("", None),
        (None, None),
        ("yesterday", None),
    ],
)
def test_parse_time_ns(text: str | None, want: int | None) -> None:
    assert parse_time_ns(text) == want


def test_updated_condition() -> None:
    cond = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "message": "m"}
    new = updated_condition({}, cond)
    assert new is not None and new["lastTransitionTime"].endswith("Z") and new["reason"] == "PreemptionByScheduler"
    same = {**cond, "lastTransitionTime": "2024-01-01T00:00:00Z"}
    assert updated_condition({"conditions": [same]}, cond) is None
    changed = updated_condition({"conditions": [{**same, "message": "old"}]}, cond)
    assert changed is not None and changed["lastTransitionTime"] == "2024-01-01T00:00:00Z"  # status unchanged
    flipped = updated_condition({"conditions": [{**same, "status": "False"}]}, cond)
    assert flipped is not None and flipped["lastTransitionTime"] != "2024-01-01T00:00:00Z"


# -- property: the victims are enough, and none of them could have stayed -------------------------------------

_pods_strategy = st.lists(
    st.tuples(st.sampled_from([NEG, LOW, MID, HIGH]), st.integers(0, 400), st.integers(0, 9)), max_size=8
)


@settings(max_examples=150, deadline=None)
@given(
    existing=_pods_strategy,
    preemptor_prio=st.sampled_from([LOW, MID, HIGH, VERY_HIGH]),
    preemptor_cpu=st.integers(0, 600),
    node_cpu=st.integers(200, 800),
    max_pods=st.integers(1, 6),
)
def test_select_victims_on_node_properties(
    existing: list[tuple[int, int, int]], preemptor_prio: int, preemptor_cpu: int, node_cpu: int, max_pods: int
) -> None:
    pods = [
        pod(f"e{i}", on="node1", prio=prio, res={"cpu": f"{cpu}m"}, start=start)
        for i, (prio, cpu, start) in enumerate(existing)
    ]
    env = Env([node("node1", {"cpu": f"{node_cpu}m", "memory": "1Gi", "pods": str(max_pods)})], pods)
    preemptor = pod("p", prio=preemptor_prio, res={"cpu": f"{preemptor_cpu}m"})
    state = env.state(preemptor)
    original = env.snapshot.get("node1")

    def fits_without(removed: set[str]) -> bool:
        ni = NodeInfo(original.node, [pi.pod for pi in original.pods if pi.pod["metadata"]["name"] not in removed])
        return env.fw.run_filter_plugins(state, preemptor, ni) is None

    lower = {
        pi.pod["metadata"]["name"] for pi in original.pods if (pi.pod["spec"].get("priority") or 0) < preemptor_prio
    }
    victims, violations, st_ = env.pl.select_victims_on_node(state.clone(), preemptor, original.clone(), [])
    assert violations == 0
    if not lower:
        assert st_ == Status(UU, "No preemption victims found for incoming pod") and victims == []
        return
    if not fits_without(lower):
        assert st_ is not None and st_.code == U and victims == []
        return
    assert st_ is None
    chosen = set(names(victims))
    assert chosen <= lower and fits_without(chosen)
    # Fit only gets harder as pods are added back, so a victim rejected during the reprieve stays rejected.
    for v in chosen:
        assert not fits_without(chosen - {v})
    # Victims come most important first.
    keys = [(-(p["spec"].get("priority") or 0), p["status"].get("startTime", "")) for p in victims]
    assert keys == sorted(keys)
