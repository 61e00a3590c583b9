"""NodeResourcesFit scoring strategies and NodeResourcesBalancedAllocation (cases re-expressed from upstream's
noderesources least_allocated_test.go, most_allocated_test.go, requested_to_capacity_ratio_test.go,
fit_test.go TestFitScore and balanced_allocation_test.go, v1.32). These plugins have no NormalizeScore, so
the raw scores are the final ones. Every case also checks the vector form against the per-node one."""

from __future__ import annotations

import numpy as np
import pytest

from pyk8s.scheduler.framework.features import process_gates_set
from pyk8s.scheduler.framework.interface import Code, CycleState
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import NodeInfo
from pyk8s.scheduler.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from pyk8s.scheduler.plugins.noderesources.args import ResourceSpec
from pyk8s.scheduler.plugins.noderesources.resource_allocation import (
    ResourceAllocationScorer,
    broken_linear,
    go_div,
    go_round,
)
from tests.scheduler.test_noderesources_support import cap_node, handle, make_node_milli, pod, score_all

DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT = "abc.com/xyz"
EXTENDED_SET = [*DEFAULT, {"name": EXT, "weight": 1}]


def _req(cpu: str, memory: str, **more: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory, **more}


def _n(name: str, cpu: str, memory: str, **more: str) -> dict:
    return cap_node(name, {"cpu": cpu, "memory": memory, **more})


def _fit(strategy: str, resources: list[dict], shape: list[tuple[int, int]] | None = None) -> NodeResourcesFit:
    s: dict = {"type": strategy, "resources": resources}
    if shape is not None:
        s["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": v} for u, v in shape]}
    return NodeResourcesFit.new({"scoringStrategy": s}, handle())


def _check(plugin, requested_pod, nodes, existing, want, run_pre_score=True):
    got = score_all(plugin, requested_pod, nodes, existing, run_pre_score)
    assert got == want
    # the vector form gives the same numbers, over all nodes and over a reordered subset
    snap = Snapshot.from_objects(nodes, existing)
    state = CycleState()
    if run_pre_score:
        plugin.pre_score(state, requested_pod, snap.node_info_list)
    idx = np.arange(len(nodes))
    assert plugin.score_vector(state, requested_pod, snap, idx).tolist() == [s for _, s in want]
    rev = idx[::-1]
    assert plugin.score_vector(state, requested_pod, snap, rev).tolist() == [s for _, s in want][::-1]


TWO_CONTAINERS = pod(_req("1000", "2000"), _req("2000", "3000"))
N4_10 = _n("node1", "4000", "10000")
N6_10 = _n("node2", "6000", "10000")


def _empty_pods_on(*names: str) -> list[dict]:
    return [pod(node=n) for n in names]


LEAST_CASES = [
    ("nothing scheduled, nothing requested", pod(), [N4_10, _n("node2", "4000", "10000")], [], DEFAULT, [100, 100]),
    ("resources requested, differently sized nodes", TWO_CONTAINERS, [N4_10, N6_10], [], DEFAULT, [37, 50]),
    (
        "no resources requested, pods scheduled",
        pod(),
        [N4_10, _n("node2", "4000", "10000")],
        _empty_pods_on("node1", "node1", "node2", "node2"),
        DEFAULT,
        [100, 100],
    ),
    (
        "no resources requested, pods scheduled with resources",
        pod(),
        [_n("node1", "10000", "20000"), _n("node2", "10000", "20000")],
        [
            pod(_req("3000", "0"), node="node1"),
            pod(_req("3000", "0"), node="node1"),
            pod(_req("3000", "0"), node="node2"),
            pod(_req("3000", "5000"), node="node2"),
        ],
        DEFAULT,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        TWO_CONTAINERS,
        [_n("node1", "10000", "20000"), _n("node2", "10000", "20000")],
        [pod(_req("3000", "0"), node="node1"), pod(_req("3000", "5000"), node="node2")],
        DEFAULT,
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        TWO_CONTAINERS,
        [_n("node1", "10000", "20000"), _n("node2", "10000", "50000")],
        [pod(_req("3000", "0"), node="node1"), pod(_req("3000", "5000"), node="node2")],
        DEFAULT,
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        pod(_req("3000", "0")),
        [N4_10, _n("node2", "4000", "10000")],
        [pod(_req("3000", "0"), node="node1"), pod(_req("3000", "5000"), node="node2")],
        DEFAULT,
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        pod(),
        [cap_node("node1", {}), cap_node("node2", {})],
        [pod(_req("3000", "0"), node="node1"), pod(_req("3000", "5000"), node="node2")],
        DEFAULT,
        [0, 0],
    ),
    (
        "different weights on cpu and memory",
        TWO_CONTAINERS,
        [N4_10, N6_10],
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        TWO_CONTAINERS,
        [_n("node1", "6000", "10000"), _n("node2", "6000", "10000", **{EXT: "4"})],
        [],
        EXTENDED_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        pod(_req("3000", "5000", **{EXT: "2"})),
        [_n("node1", "6000", "10000", **{EXT: "4"}), _n("node2", "6000", "10000", **{EXT: "10"})],
        [],
        EXTENDED_SET,
        [50, 60],
    ),
    (
        "if the node doesn't have a resource",
        pod(_req("3000", "4000")),
        [_n("node1", "6000", "10000"), _n("node2", "6000", "10000", **{EXT: "4"})],
        [],
        [{"name": EXT, "weight": 2}, *DEFAULT],
        [55, 55],
    ),
]


@pytest.mark.parametrize(("name", "the_pod", "nodes", "existing", "resources", "want"), LEAST_CASES,
                         ids=[c[0] for c in LEAST_CASES])  # fmt: skip
def test_least_allocated(name, the_pod, nodes, existing, resources, want):
    names = [n["metadata"]["name"] for n in nodes]
    _check(_fit("LeastAllocated", resources), the_pod, nodes, existing, list(zip(names, want, strict=True)))


MOST_CASES = [
    ("nothing scheduled, nothing requested", pod(), [N4_10, _n("node2", "4000", "10000")], [], DEFAULT, [0, 0]),
    ("resources requested, differently sized nodes", TWO_CONTAINERS, [N4_10, N6_10], [], DEFAULT, [62, 50]),
    (
        "no resources requested, pods scheduled with resources",
        pod(),
        [_n("node1", "10000", "20000"), _n("node2", "10000", "20000")],
        [
            pod(_req("3000", "0"), node="node1"),
            pod(_req("3000", "0"), node="node1"),
            pod(_req("3000", "0"), node="node2"),
            pod(_req("3000", "5000"), node="node2"),
        ],
        DEFAULT,
        [30, 42],
    ),
    (
        "resources requested, pods scheduled with resources",
        TWO_CONTAINERS,
        [_n("node1", "10000", "20000"), _n("node2", "10000", "20000")],
        [pod(_req("3000", "0"), node="node1"), pod(_req("3000", "5000"), node="node2")],
        DEFAULT,
        [42, 55],
    ),
    (
        "resources requested equal node capacity",
        pod(_req("2000", "4000"), _req("3000", "5000")),
        [_n("node1", "5000", "10000"), _n("node2", "10000", "9000")],
        [],
        DEFAULT,
        [95, 75],
    ),
    (
        "different weights on cpu and memory",
        TWO_CONTAINERS,
        [N4_10, N6_10],
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [58, 50],
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        pod(None),
        [_n("node1", "250m", "1000Mi"), _n("node2", "250m", "1000Mi")],
        [pod(None, node="node1"), pod(None, node="node1")],
        DEFAULT,
        [80, 30],
    ),
    (
        "bypass extended resource if the pod does not request",
        TWO_CONTAINERS,
        [_n("node1", "6000", "10000"), _n("node2", "6000", "10000", **{EXT: "4"})],
        [],
        EXTENDED_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        pod(_req("3000", "5000", **{EXT: "2"})),
        [_n("node1", "6000", "10000", **{EXT: "4"}), _n("node2", "6000", "10000", **{EXT: "10"})],
        [],
        EXTENDED_SET,
        [50, 40],
    ),
    (
        "if the node doesn't have a resource",
        pod(_req("3000", "4000")),
        [_n("node1", "6000", "10000"), _n("node2", "6000", "10000", **{EXT: "4"})],
        [],
        [{"name": EXT, "weight": 2}, *DEFAULT],
        [45, 45],
    ),
]


@pytest.mark.parametrize(("name", "the_pod", "nodes", "existing", "resources", "want"), MOST_CASES,
                         ids=[c[0] for c in MOST_CASES])  # fmt: skip
def test_most_allocated(name, the_pod, nodes, existing, resources, want):
    names = [n["metadata"]["name"] for n in nodes]
    _check(_fit("MostAllocated", resources), the_pod, nodes, existing, list(zip(names, want, strict=True)))


LEAST_REQUESTED_SHAPE = [(0, 10), (100, 0)]
GIB_10 = 10000 * 1024 * 1024
FOO, BAR = "intel.com/foo", "intel.com/bar"

RTCR_CASES = [
    (
        "nothing scheduled, nothing requested",
        pod(),
        [N4_10, _n("node2", "4000", "10000")],
        _empty_pods_on("node1", "node1"),
        DEFAULT,
        LEAST_REQUESTED_SHAPE,
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        TWO_CONTAINERS,
        [N4_10, N6_10],
        _empty_pods_on("node1", "node1"),
        DEFAULT,
        LEAST_REQUESTED_SHAPE,
        [38, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        pod(),
        [N4_10, N6_10],
        [pod(_req("3000", "5000"), node="node1"), pod(_req("3000", "5000"), node="node2")],
        DEFAULT,
        LEAST_REQUESTED_SHAPE,
        [38, 50],
    ),
    # bin packing on one extended resource, shape 0 -> 0, 100 -> 1 (x10)
    (
        "single extended: nothing requested",
        pod(),
        [make_node_milli("node1", 4000, GIB_10, {FOO: 8}), make_node_milli("node2", 4000, GIB_10, {FOO: 4})],
        [],
        [{"name": FOO, "weight": 1}],
        [(0, 0), (100, 1)],
        [0, 0],
    ),
    (
        "single extended: requested, pods scheduled with less resources",
        pod({FOO: "2"}),
        [make_node_milli("node1", 4000, GIB_10, {FOO: 8}), make_node_milli("node2", 4000, GIB_10, {FOO: 4})],
        [pod()],
        [{"name": FOO, "weight": 1}],
        [(0, 0), (100, 1)],
        [2, 5],
    ),
    (
        "single extended: requested, on node with existing pod running",
        pod({FOO: "2"}),
        [make_node_milli("node1", 4000, GIB_10, {FOO: 8}), make_node_milli("node2", 4000, GIB_10, {FOO: 4})],
        [pod({FOO: "2"}, node="node2")],
        [{"name": FOO, "weight": 1}],
        [(0, 0), (100, 1)],
        [2, 10],
    ),
    (
        "single extended: requested more",
        pod({FOO: "4"}),
        [make_node_milli("node1", 4000, GIB_10, {FOO: 8}), make_node_milli("node2", 4000, GIB_10, {FOO: 4})],
        [pod()],
        [{"name": FOO, "weight": 1}],
        [(0, 0), (100, 1)],
        [5, 10],
    ),
    (
        "multiple extended: nothing requested",
        pod(),
        [
            make_node_milli("node1", 4000, GIB_10, {FOO: 8, BAR: 4}),
            make_node_milli("node2", 4000, GIB_10, {FOO: 4, BAR: 8}),
        ],
        [],
        [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}],
        [(0, 0), (100, 1)],
        [0, 0],
    ),
    (
        "multiple extended: requested, pods scheduled with less resources",
        pod({FOO: "2", BAR: "2"}),
        [
            make_node_milli("node1", 4000, GIB_10, {FOO: 8, BAR: 4}),
            make_node_milli("node2", 4000, GIB_10, {FOO: 4, BAR: 8}),
        ],
        [pod()],
        [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}],
        [(0, 0), (100, 1)],
        [4, 3],
    ),
    (
        "multiple extended: requested, on node with existing pod running",
        pod({FOO: "2", BAR: "2"}),
        [
            make_node_milli("node1", 4000, GIB_10, {FOO: 8, BAR: 4}),
            make_node_milli("node2", 4000, GIB_10, {FOO: 4, BAR: 8}),
        ],
        [pod({FOO: "4", BAR: "2"}, node="node2")],
        [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}],
        [(0, 0), (100, 1)],
        [4, 7],
    ),
    (
        "multiple extended: requested more",
        pod({FOO: "4", BAR: "2"}),
        [
            make_node_milli("node1", 4000, GIB_10, {FOO: 8, BAR: 4}),
            make_node_milli("node2", 4000, GIB_10, {FOO: 4, BAR: 8}),
        ],
        [pod()],
        [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}],
        [(0, 0), (100, 1)],
        [5, 5],
    ),
]


@pytest.mark.parametrize(("name", "the_pod", "nodes", "existing", "resources", "shape", "want"), RTCR_CASES,
                         ids=[c[0] for c in RTCR_CASES])  # fmt: skip
def test_requested_to_capacity_ratio(name, the_pod, nodes, existing, resources, shape, want):
    names = [n["metadata"]["name"] for n in nodes]
    plugin = _fit("RequestedToCapacityRatio", resources, shape)
    # upstream's ratio tests call Score without PreScore
    _check(plugin, the_pod, nodes, existing, list(zip(names, want, strict=True)), run_pre_score=False)


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        ([(10, 1), (90, 9)], [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9),
                              (99, 9), (100, 9), (110, 9)]),
        ([(0, 2), (40, 10), (100, 0)], [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
        ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
    ],
)  # fmt: skip
def test_broken_linear_function(points, assertions):
    f = broken_linear(points)
    for p, want in assertions:
        assert f(p) == want, (points, p)


def test_broken_linear_truncates_toward_zero():
    # a falling segment: (10 - 0) * 3 / 7 -> -4.28 truncates to -4 (Go), not -5 (floor)
    f = broken_linear([(0, 10), (7, 0)])
    assert f(3) == 10 + go_div(-10 * 3, 7) == 6


def test_go_helpers():
    assert go_div(-7, 2) == -3 and go_div(7, -2) == -3 and go_div(7, 2) == 3
    assert go_round(37.5) == 38 and go_round(36.5) == 37 and go_round(0.49999999999999994) == 0
    assert go_round(-2.5) == -3


SHAPE_10_0 = [(0, 10), (100, 0)]
FIT_SCORE_EXISTING = [pod(_req("2000", "4000"), node="node1"), pod(_req("1000", "2000"), node="node2")]
SIDECAR_EXISTING = [
    pod(_req("1000", "2000"), sidecars=[_req("1000", "2000")], node="node1"),
    pod(_req("1000", "2000"), node="node2"),
]
N4_10_B = _n("node2", "4000", "10000")

FIT_SCORE_CASES = [
    ("RequestedToCapacityRatio case1", pod(_req("3000", "5000")), [N4_10, N6_10], FIT_SCORE_EXISTING,
     ("RequestedToCapacityRatio", SHAPE_10_0), [10, 32]),
    ("RequestedToCapacityRatio case2", pod(_req("3000", "5000")), [N4_10, N6_10], FIT_SCORE_EXISTING,
     ("RequestedToCapacityRatio", [(0, 0), (100, 10)]), [95, 68]),
    ("MostAllocated", pod(_req("1000", "2000")), [N4_10, N6_10], FIT_SCORE_EXISTING, ("MostAllocated", None), [67, 36]),
    ("LeastAllocated", pod(_req("1000", "2000")), [N4_10, N6_10], FIT_SCORE_EXISTING, ("LeastAllocated", None),
     [32, 63]),
    ("MostAllocated with sidecar container", pod(_req("1000", "2000")), [N4_10, N4_10_B], SIDECAR_EXISTING,
     ("MostAllocated", None), [67, 45]),
    ("LeastAllocated with sidecar container", pod(_req("1000", "2000")), [N4_10, N4_10_B], SIDECAR_EXISTING,
     ("LeastAllocated", None), [32, 55]),
]  # fmt: skip


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["with PreScore", "without PreScore"])
@pytest.mark.parametrize(("name", "the_pod", "nodes", "existing", "strategy", "want"), FIT_SCORE_CASES,
                         ids=[c[0] for c in FIT_SCORE_CASES])  # fmt: skip
def test_fit_score(name, the_pod, nodes, existing, strategy, want, run_pre_score):
    names = [n["metadata"]["name"] for n in nodes]
    plugin = _fit(strategy[0], DEFAULT, strategy[1])
    _check(plugin, the_pod, nodes, existing, list(zip(names, want, strict=True)), run_pre_score)


def test_default_plugin_scores_least_allocated():
    plugin = NodeResourcesFit.new(None, handle())
    _check(plugin, pod(_req("1000", "2000")), [N4_10, N6_10], FIT_SCORE_EXISTING, [("node1", 32), ("node2", 63)])


def test_scorer_without_resources_is_an_error():
    # upstream's "Resources not set" cases; v1 args always default the resources, so build the scorer directly
    for strategy in ("LeastAllocated", "MostAllocated"):
        scorer = ResourceAllocationScorer(strategy, [])
        score, st = scorer.score(NodeInfo(N4_10), [])
        assert score == 0 and st is not None and st.code == Code.ERROR and st.message() == "resources not found"


def test_unrequested_non_scalar_resources_are_ignored():
    # "pods" and unknown names are never scored; ephemeral-storage is, even when the pod asks for none
    scorer = ResourceAllocationScorer(
        "LeastAllocated", [ResourceSpec("pods", 5), ResourceSpec("storage", 5), ResourceSpec("ephemeral-storage", 1)]
    )
    ni = NodeInfo(cap_node("n", {"cpu": "1", "ephemeral-storage": "100"}), [pod({"ephemeral-storage": "25"})])
    assert scorer.score(ni, [0, 0, 0]) == (75, None)


# -- BalancedAllocation ---------------------------------------------------------------------------------------------

CPU_AND_MEMORY = [_req("1000m", "2000"), _req("2000m", "3000")]
CPU_ONLY = [_req("1000m", "0"), _req("2000m", "0")]
CPU_MEM_GPU = [_req("1000m", "2000"), _req("2000m", "3000", **{"nvidia.com/gpu": "3"})]
GPU8 = {"nvidia.com/gpu": 8}
WITH_GPU = [*DEFAULT, {"name": "nvidia.com/gpu", "weight": 1}]
BALANCED_EXISTING = [pod(*CPU_ONLY, node="node1"), pod(*CPU_AND_MEMORY, node="node2")]

BALANCED_CASES = [
    # v1.32 still scores best-effort pods (the PreScore skip for them came in v1.33, kubernetes#130260), with zero
    # requests: no scheduler defaults (those would give 51 here: 100m of 4000m against 200Mi capped at 1)
    ("nothing scheduled, nothing requested", pod(), [make_node_milli("node1", 4000, 10000),
                                                     make_node_milli("node2", 4000, 10000)], [], DEFAULT, [100, 100]),
    ("best-effort pod: the existing pods' requests decide", pod(None),
     [make_node_milli("node1", 10000, 20000), make_node_milli("node2", 10000, 20000)], BALANCED_EXISTING, DEFAULT,
     [85, 97]),
    ("nothing scheduled, resources requested, differently sized nodes", pod(*CPU_AND_MEMORY),
     [make_node_milli("node1", 4000, 10000), make_node_milli("node2", 6000, 10000)], [], DEFAULT, [87, 100]),
    ("resources requested, pods scheduled with resources", pod(*CPU_AND_MEMORY),
     [make_node_milli("node1", 10000, 20000), make_node_milli("node2", 10000, 20000)], BALANCED_EXISTING, DEFAULT,
     [82, 95]),
    ("resources requested, pods scheduled with resources, differently sized nodes", pod(*CPU_AND_MEMORY),
     [make_node_milli("node1", 10000, 20000), make_node_milli("node2", 10000, 50000)], BALANCED_EXISTING, DEFAULT,
     [82, 80]),
    ("requested resources at node capacity", pod(*CPU_ONLY),
     [make_node_milli("node1", 6000, 10000), make_node_milli("node2", 6000, 10000)], BALANCED_EXISTING, DEFAULT,
     [50, 75]),
    ("include scalar resource on a node", pod({"memory": "0", "nvidia.com/gpu": "1"}),
     [make_node_milli("node1", 3500, 40000, GPU8), make_node_milli("node2", 3500, 40000, GPU8)],
     [pod(*CPU_AND_MEMORY, node="node2"), pod(*CPU_MEM_GPU, node="node1")], WITH_GPU, [70, 65]),
    ("node without the scalar resource skips it", pod(*CPU_AND_MEMORY),
     [make_node_milli("node1", 3500, 40000, GPU8), make_node_milli("node2", 3500, 40000)], [], WITH_GPU, [63, 63]),
    ("no requests on best-effort existing pods count as zero", pod(*CPU_AND_MEMORY),
     [make_node_milli("node1", 6000, 10000), make_node_milli("node2", 6000, 10000)],
     [pod(None, node="node1"), pod(None, None, node="node1")], DEFAULT, [100, 100]),
    # two fractions take |f0 - f1| / 2: 1 and 8/25 give 66, where the general formula's rounding would give 65
    ("two resources use the halved difference", pod({"cpu": "1", "memory": "8"}),
     [make_node_milli("node1", 1000, 25), make_node_milli("node2", 5000, 10)], [], DEFAULT, [66, 70]),
]  # fmt: skip


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["with PreScore", "without PreScore"])
@pytest.mark.parametrize(("name", "the_pod", "nodes", "existing", "resources", "want"), BALANCED_CASES,
                         ids=[c[0] for c in BALANCED_CASES])  # fmt: skip
def test_balanced_allocation(name, the_pod, nodes, existing, resources, want, run_pre_score):
    names = [n["metadata"]["name"] for n in nodes]
    plugin = NodeResourcesBalancedAllocation.new({"resources": resources}, handle())
    assert plugin.score_extensions() is None
    _check(plugin, the_pod, nodes, existing, list(zip(names, want, strict=True)), run_pre_score)


# -- PodLevelResources ----------------------------------------------------------------------------------------------

POD_LEVEL_NODES = [make_node_milli("node1", 4000, 10000), make_node_milli("node2", 6000, 10000)]
POD_LEVEL_EXISTING = [pod(None, node="node1", pod_requests={"cpu": "2000m", "memory": "4000"})]
POD_LEVEL_POD = pod(*CPU_AND_MEMORY, pod_requests={"cpu": "1000m", "memory": "1000"})

# (name, plugin, want with the gate on, want with it off): the pod's and the existing pod's pod-level requests
# replace their containers' (off: the containers' 3000m/5000, and the existing pod's defaults 100m/200Mi)
POD_LEVEL_SCORE_CASES = [
    ("LeastAllocated", lambda gate: NodeResourcesFit.new(None, handle(PodLevelResources=gate)), [37, 86], [11, 50]),
    ("BalancedAllocation", lambda gate: NodeResourcesBalancedAllocation.new(None, handle(PodLevelResources=gate)),
     [87, 96], [87, 100]),
]  # fmt: skip


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["with PreScore", "without PreScore"])
@pytest.mark.parametrize("gate", [True, False], ids=["PodLevelResources", "gate off"])
@pytest.mark.parametrize(("name", "make", "want_on", "want_off"), POD_LEVEL_SCORE_CASES,
                         ids=[c[0] for c in POD_LEVEL_SCORE_CASES])  # fmt: skip
def test_pod_level_scores(name, make, want_on, want_off, gate, run_pre_score):
    want = want_on if gate else want_off
    with process_gates_set({"PodLevelResources": gate}):
        _check(make(gate), POD_LEVEL_POD, POD_LEVEL_NODES, POD_LEVEL_EXISTING,
               list(zip(["node1", "node2"], want, strict=True)), run_pre_score)  # fmt: skip


def test_fit_has_no_normalize_score():
    assert NodeResourcesFit.new(None, handle()).score_extensions() is None
