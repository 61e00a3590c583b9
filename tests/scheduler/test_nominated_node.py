"""The nominated node tried first (upstream v1.32: schedule_one.go's findNodesThatFitPod and evaluateNominatedNode;
schedule_one_test.go's TestPreferNominatedNodeFilterCallCounts): a pod with status.nominatedNodeName has that node
judged by the Filter plugins before any search, whatever PreFilter narrowed the search to; when it fails, its own
status stays in the diagnosis (the search over PreFilter's nodes does not overwrite it), its plugin joins the
unschedulable ones — and so the framework's reason for the nodes PreFilter left out — and the round-robin start
moves past it too."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import (
    Code,
    CycleState,
    FilterPlugin,
    FitError,
    Plugin,
    PluginFactory,
    PreFilterPlugin,
    PreFilterResult,
    ScorePlugin,
    Status,
)
from pyk8s.scheduler.framework.runtime import Framework
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import NodeInfo
from pyk8s.scheduler.schedule_one import ScheduleAlgorithm

from .wrappers import make_node, make_pod

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
PENDING = Code.PENDING
ERROR = Code.ERROR
INJECTED = "injecting failure for pod p"


class FakeFilter(FilterPlugin):
    """Counts its calls and answers a fixed code per node with upstream's message (tf.FakeFilterPlugin)."""

    name: ClassVar[str] = "FakeFilter"

    def __init__(self, codes: dict[str, Code]) -> None:
        self.codes = codes
        self.calls = 0

    def filter(self, state: CycleState, pod: dict[str, Any], node_info: NodeInfo) -> Status | None:
        self.calls += 1
        code = self.codes.get(node_info.name)
        return None if code is None else Status(code, f"injecting failure for pod {pod['metadata']['name']}")


class FakePreFilter(PreFilterPlugin):
    name: ClassVar[str] = "FakePreFilter"

    def __init__(self, nodes: set[str] | None) -> None:
        self.nodes = nodes

    def pre_filter(
        self, state: CycleState, pod: dict[str, Any], nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return (None if self.nodes is None else PreFilterResult(set(self.nodes))), None


class EqualScore(ScorePlugin):
    """A score plugin, so that every node is searched rather than the first fit (tf.EqualPrioritizerPlugin)."""

    name: ClassVar[str] = "EqualPrioritizerPlugin"

    def score(self, state: CycleState, pod: dict[str, Any], node_info: NodeInfo) -> tuple[int, Status | None]:
        return 1, None


def outside(*plugins: str) -> tuple[Code, str]:
    return UU, f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}]"


# (name, PreFilter's nodes, the nomination, FakeFilter's codes, want feasible, want filter calls or None,
#  want status per node, want unschedulable plugins, want pending plugins, want next start, want FitError message)
CASES: list[tuple[Any, ...]] = [
    # upstream's TestPreferNominatedNodeFilterCallCounts
    (
        "pod has the nominated node set, filter is called only once",
        None, "node1", {}, ["node1"], 1, {}, set(), set(), 0, None,
    ),
    (
        "pod without the nominated pod, filter is called for each node",
        None, None, {}, ["node1", "node2", "node3"], 3, {}, set(), set(), 0, None,
    ),
    (
        "nominated pod cannot pass the filter, filter is called for each node",
        None, "node1", {"node1": U}, ["node2", "node3"], 4, {"node1": (U, INJECTED)}, {"FakeFilter"}, set(), 0, None,
    ),
    # evaluateNominatedNode does not look at the PreFilterResult
    (
        "a nominated node outside the PreFilterResult that passes the filters is chosen",
        {"node2"}, "node1", {}, ["node1"], 1, {}, {"FakePreFilter"}, set(), 0, None,
    ),
    (
        "a nominated node outside the PreFilterResult keeps its own reason; its plugin joins the others' reason",
        {"node2"}, "node1", {"node1": U}, ["node2"], 2,
        {"node1": (U, INJECTED), "node3": outside("FakeFilter", "FakePreFilter")},
        {"FakeFilter", "FakePreFilter"}, set(), 2, None,
    ),
    (
        "the nominated node and the PreFilterResult's node both fail",
        {"node2"}, "node1", {"node1": U, "node2": UU}, [], None,
        {"node1": (U, INJECTED), "node2": (UU, INJECTED), "node3": outside("FakeFilter", "FakePreFilter")},
        {"FakeFilter", "FakePreFilter"}, set(), 2,
        f"0/3 nodes are available: 1 node(s) didn't satisfy plugin(s) [FakeFilter FakePreFilter], 2 {INJECTED}.",
    ),
    (
        "a nominated node inside the PreFilterResult is judged again by the search",
        {"node1", "node2"}, "node1", {"node1": U}, ["node2"], 3,
        {"node1": (U, INJECTED), "node3": outside("FakeFilter", "FakePreFilter")},
        {"FakeFilter", "FakePreFilter"}, set(), 2, None,
    ),
    (
        "a nominated node inside the PreFilterResult, nothing fits",
        {"node1", "node2"}, "node1", {"node1": U, "node2": U}, [], None,
        {"node1": (U, INJECTED), "node2": (U, INJECTED), "node3": outside("FakeFilter", "FakePreFilter")},
        {"FakeFilter", "FakePreFilter"}, set(), 2,
        f"0/3 nodes are available: 1 node(s) didn't satisfy plugin(s) [FakeFilter FakePreFilter], 2 {INJECTED}.",
    ),
    (
        "a nominated node missing from the snapshot is skipped",
        {"node2"}, "ghost", {}, ["node2"], 1,
        {"node1": outside("FakePreFilter"), "node3": outside("FakePreFilter")}, {"FakePreFilter"}, set(), 1, None,
    ),
    (
        "an error on the nominated node is only logged; the node gets the others' reason",
        {"node2"}, "node1", {"node1": ERROR}, ["node2"], 2,
        {"node1": outside("FakePreFilter"), "node3": outside("FakePreFilter")}, {"FakePreFilter"}, set(), 1, None,
    ),
    (
        # evaluateNominatedNode fills a copy of the diagnosis whose PendingPlugins set it creates itself
        "a Pending nominated node's plugin is unschedulable, not pending",
        {"node2"}, "node1", {"node1": PENDING, "node2": U}, [], None,
        {"node1": (PENDING, INJECTED), "node2": (U, INJECTED), "node3": outside("FakeFilter", "FakePreFilter")},
        {"FakeFilter", "FakePreFilter"}, set(), 2,
        f"0/3 nodes are available: 1 node(s) didn't satisfy plugin(s) [FakeFilter FakePreFilter], 2 {INJECTED}.",
    ),
    (
        "a Pending node found by the search names its plugin both pending and unschedulable",
        None, None, {"node1": PENDING, "node2": PENDING, "node3": PENDING}, [], None,
        {"node1": (PENDING, INJECTED), "node2": (PENDING, INJECTED), "node3": (PENDING, INJECTED)},
        {"FakeFilter"}, {"FakeFilter"}, 0, f"0/3 nodes are available: 3 {INJECTED}.",
    ),
]  # fmt: skip


def _instance(plugin: Plugin) -> PluginFactory:
    return lambda args, handle: plugin


def algorithm(
    pre_filter_nodes: set[str] | None, codes: dict[str, Code], vectorized: bool
) -> tuple[ScheduleAlgorithm, Framework, FakeFilter]:
    """Three nodes; a profile of FakePreFilter, FakeFilter and a score plugin."""
    snapshot = Snapshot.from_objects([make_node(n) for n in ("node1", "node2", "node3")])
    fake = FakeFilter(codes)
    plugins: list[Plugin] = [FakePreFilter(pre_filter_nodes), fake, EqualScore()]
    registry = {p.name: _instance(p) for p in plugins}
    config = {
        "preFilter": [("FakePreFilter", 0)],
        "filter": [("FakeFilter", 0)],
        "score": [("EqualPrioritizerPlugin", 1)],
    }
    handle = FrameworkHandle(snapshot)
    fw = Framework("test", config, registry, handle=handle, require_bind=False, vectorized=vectorized)
    return ScheduleAlgorithm(None, snapshot), fw, fake


@pytest.mark.parametrize("run", ["sync", "async"])
@pytest.mark.parametrize("vectorized", [True, False], ids=["vectorized", "per-node"])
@pytest.mark.parametrize(
    ("name", "pre_filter_nodes", "nominated", "codes", "want_feasible", "want_calls", "want_statuses",
     "want_unschedulable", "want_pending", "want_next_start", "want_message"),
    CASES, ids=[c[0] for c in CASES],
)  # fmt: skip
def test_find_nodes_that_fit_a_nominated_pod(
    name: str,
    pre_filter_nodes: set[str] | None,
    nominated: str | None,
    codes: dict[str, Code],
    want_feasible: list[str],
    want_calls: int | None,
    want_statuses: dict[str, tuple[Code, str]],
    want_unschedulable: set[str],
    want_pending: set[str],
    want_next_start: int,
    want_message: str | None,
    vectorized: bool,
    run: str,
) -> None:
    algo, fw, fake = algorithm(pre_filter_nodes, codes, vectorized)
    pod = make_pod("p")
    if nominated:
        pod["status"] = {"nominatedNodeName": nominated}
    if run == "sync":
        feasible, diagnosis = algo.find_nodes_that_fit_pod(fw, CycleState(), pod)
    else:
        feasible, diagnosis = asyncio.run(algo.find_nodes_that_fit_pod_async(fw, CycleState(), pod))
    nodes = algo.snapshot.node_info_list
    assert sorted(nodes[i].name for i in feasible) == want_feasible
    if want_calls is not None:  # a search that fits nowhere judges the nodes again for their statuses
        assert fake.calls == want_calls
    got = {n: (st.code, st.message()) for n, st in diagnosis.node_to_status.items()}
    assert got == want_statuses
    assert diagnosis.unschedulable_plugins == want_unschedulable
    assert diagnosis.pending_plugins == want_pending
    assert algo.next_start_node_index == want_next_start
    if want_message is not None:
        assert not feasible
        assert FitError(pod, len(nodes), diagnosis).message() == want_message
