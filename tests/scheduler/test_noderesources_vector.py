"""Property tests: the vectorized NodeResources filter and scorers equal their per-node forms on random clusters
(random allocatable, existing pods with and without requests, init containers, sidecars, overhead, extended
resources, pod-level requests and resized containers under random PodLevelResources / InPlacePodVerticalScaling
gates), for every scoring strategy; and the once-per-cycle request computation equals types.pod_requests."""

from __future__ import annotations

import copy
import random
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.scheduler.framework.features import process_gates_set
from pyk8s.scheduler.framework.interface import CycleState
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import (
    NO_GATES,
    NodeInfo,
    RequestOptions,
    Resource,
    accounting_options,
    pod_requests,
    pod_requests_pair,
)
from pyk8s.scheduler.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit, vectors
from pyk8s.scheduler.plugins.noderesources.args import ResourceSpec
from pyk8s.scheduler.plugins.noderesources.resource_allocation import ResourceAllocationScorer
from tests.scheduler.test_noderesources_support import container, handle, node

EXTENDED = ["example.com/gpu", "hugepages-2Mi", "kubernetes.io/thing"]
NEVER_ON_NODES = "example.com/none"
SCORABLE = ["cpu", "memory", "ephemeral-storage", "pods", *EXTENDED, NEVER_ON_NODES, "storage"]


def _quantity(name: str, amount: int, style: int) -> str:
    if name == "cpu":
        # millicores, whole cores, or a decimal number of cores
        if style == 0 or amount % 1000:
            return f"{amount}m"
        return str(amount // 1000) if style == 1 else f"{amount / 1000:.1f}"
    if name == "memory" and style == 1 and amount % 1024 == 0:
        return f"{amount // 1024}Ki"
    return str(amount)


# Amounts come in coarse steps from small ranges so that exact fits (request == what is left) and
# over-commitment happen often.
_STEP = {"cpu": 250, "memory": 1 << 28, "ephemeral-storage": 1 << 28}


def _amount(rng: random.Random, name: str, top: int) -> int:
    r = rng.random()
    if r < 0.15:
        return 0
    if r < 0.25:
        return rng.randint(1, 3)  # tiny amounts, where integer division truncates the most
    return rng.randint(0, top) * _STEP.get(name, 1)


def _requests(rng: random.Random) -> dict[str, str] | None:
    """A container's requests: absent, empty, or any subset of resources, zeros included."""
    if rng.random() < 0.2:
        return None
    names = rng.sample([*_STEP, *EXTENDED, NEVER_ON_NODES], rng.randint(0, 4))
    return {n: _quantity(n, _amount(rng, n, 6 if n in _STEP else 3), rng.randint(0, 2)) for n in names}


def _pod(rng: random.Random, node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container(_requests(rng), f"c{i}") for i in range(rng.randint(0, 3))]}
    inits = [container(_requests(rng), f"i{i}", sidecar=rng.random() < 0.5) for i in range(rng.choice((0, 0, 1, 2)))]
    if inits:
        spec["initContainers"] = inits
    if rng.random() < 0.15:
        spec["overhead"] = {"cpu": f"{rng.randint(0, 300)}m", "memory": str(rng.randint(0, 1 << 20))}
    if rng.random() < 0.3:
        # pod-level requests: cpu and/or memory, and names v1.32 does not take at pod level
        names = rng.sample(["cpu", "memory", "ephemeral-storage", "hugepages-2Mi"], rng.randint(0, 3))
        spec["resources"] = {"requests": {n: _quantity(n, _amount(rng, n, 8), rng.randint(0, 2)) for n in names}}
    if node_name:
        spec["nodeName"] = node_name
    uid = f"u{rng.getrandbits(64):x}"
    out: dict[str, Any] = {"metadata": {"name": uid, "namespace": "default", "uid": uid}, "spec": spec}
    if spec["containers"] and rng.random() < 0.3:
        # what the kubelet reports of containers being resized (a status may report no resources)
        statuses = [
            {"name": c["name"], **({"resources": {"requests": _requests(rng) or {}}} if rng.random() < 0.8 else {})}
            for c in spec["containers"]
            if rng.random() < 0.7
        ]
        out["status"] = {
            "containerStatuses": statuses,
            "resize": rng.choice(["", "InProgress", "Deferred", "Infeasible"]),
        }
    return out


def _gates(rng: random.Random) -> dict[str, bool]:
    return {"PodLevelResources": rng.random() < 0.5, "InPlacePodVerticalScaling": rng.random() < 0.5}


def _cluster(rng: random.Random, the_pod: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes and the pods on them, for a test running under the process gates it will snapshot them with."""
    nodes, existing = [], []
    want = pod_requests(the_pod, opts=accounting_options())
    for i in range(rng.randint(1, 8)):
        name = f"n{i}"
        on_node = [_pod(rng, name) for _ in range(rng.randint(0, 4))]
        existing.extend(on_node)
        alloc: dict[str, Any] = {"pods": rng.randint(0, 5)}
        for res, top in (("cpu", 24), ("memory", 24), ("ephemeral-storage", 24)):
            if rng.random() < 0.85:
                alloc[res] = _quantity(res, _amount(rng, res, top), rng.randint(0, 2))
        for e in EXTENDED:
            if rng.random() < 0.5:
                alloc[e] = _amount(rng, e, 8)
        if rng.random() < 0.05:
            # beyond 2**45 the integer strategies leave the float64 shortcut for int64
            alloc[rng.choice(("memory", "ephemeral-storage"))] = rng.randint(1 << 45, 1 << 50)
        if rng.random() < 0.5:
            # On the edge: allocatable = what the pods there use + what the pod asks (+/- 1), so exact fits and
            # off-by-one misses are common.
            used = NodeInfo(node(name), on_node).requested
            alloc["pods"] = max(0, len(on_node) + 1 + rng.choice((-1, 0, 0, 1)))
            for res in ("cpu", "memory", "ephemeral-storage", *EXTENDED):
                if rng.random() < 0.8:
                    amount = max(0, used.get(res) + want.get(res) + rng.choice((-1, 0, 0, 1)))
                    alloc[res] = f"{amount}m" if res == "cpu" else amount
        nodes.append(node(name, alloc))
    return nodes, existing


# Hypothesis picks the seed (and so replays and reports failures); building a cluster from it with
# random.Random keeps each example cheap to generate.
seeds = st.integers(0, 2**64 - 1)


@st.composite
def fit_args(draw: Any) -> dict[str, Any]:
    stype = draw(st.sampled_from(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]))
    names = draw(st.lists(st.sampled_from(SCORABLE), min_size=1, max_size=5, unique=True))
    strategy: dict[str, Any] = {
        "type": stype,
        "resources": [{"name": n, "weight": draw(st.integers(1, 100))} for n in names],
    }
    if stype == "RequestedToCapacityRatio":
        us = sorted(draw(st.lists(st.integers(0, 100), min_size=1, max_size=5, unique=True)))
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": draw(st.integers(0, 10))} for u in us]
        }
    args: dict[str, Any] = {"scoringStrategy": strategy}
    if draw(st.booleans()):
        args["ignoredResources"] = draw(st.lists(st.sampled_from([*EXTENDED, NEVER_ON_NODES]), max_size=2))
    if draw(st.booleans()):
        args["ignoredResourceGroups"] = draw(st.lists(st.sampled_from(["example.com", "kubernetes.io"]), max_size=2))
    return args


def _positions(draw: Any, n: int) -> np.ndarray:
    """Some node positions in any order (the framework scores a subset of the feasible nodes)."""
    chosen = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    return np.asarray(chosen, dtype=np.int64)


@settings(max_examples=150, deadline=None)
@given(seed=seeds, args=fit_args(), data=st.data())
def test_fit_vector_equals_per_node(seed, args, data):
    rng = random.Random(seed)
    gates = _gates(rng)
    the_pod = _pod(rng)
    with process_gates_set(gates):
        nodes, existing = _cluster(rng, the_pod)
        snap = Snapshot.from_objects(nodes, existing)
    plugin = NodeResourcesFit.new(args, handle(**gates))
    state = CycleState()
    _, st_ = plugin.pre_filter(state, the_pod, snap.node_info_list)
    assert st_ is None
    per_node = [plugin.filter(state, the_pod, ni) is None for ni in snap.node_info_list]
    assert plugin.filter_vector(state, the_pod, snap).tolist() == per_node

    assert plugin.pre_score(state, the_pod, snap.node_info_list) is None
    idx = _positions(data.draw, len(nodes))
    want = []
    for i in idx.tolist():
        s, status = plugin.score(state, the_pod, snap.node_info_list[i])
        assert status is None
        assert 0 <= s <= 100
        want.append(s)
    assert plugin.score_vector(state, the_pod, snap, idx).tolist() == want


@settings(max_examples=150, deadline=None)
@given(seed=seeds, names=st.lists(st.sampled_from(SCORABLE), min_size=1, max_size=6, unique=True), data=st.data())
def test_balanced_allocation_vector_equals_per_node(seed, names, data):
    rng = random.Random(seed)
    gates = _gates(rng)
    the_pod = _pod(rng)
    with process_gates_set(gates):
        nodes, existing = _cluster(rng, the_pod)
        snap = Snapshot.from_objects(nodes, existing)
    args = {"resources": [{"name": n, "weight": 1} for n in names]}
    plugin = NodeResourcesBalancedAllocation.new(args, handle(**gates))
    state = CycleState()
    assert plugin.pre_score(state, the_pod, snap.node_info_list) is None
    idx = _positions(data.draw, len(nodes))
    want = []
    for i in idx.tolist():
        s, status = plugin.score(state, the_pod, snap.node_info_list[i])
        assert status is None
        assert 0 <= s <= 100
        want.append(s)
    assert plugin.score_vector(state, the_pod, snap, idx).tolist() == want


@settings(max_examples=150, deadline=None)
@given(seed=seeds)
def test_pod_requests_fast_path_equals_the_general_rule(seed):
    """Pods without init containers or overhead take a shortcut; with an empty-request init container added
    (which changes nothing) they take the general rule: both must agree. So must the gated rule, for a pod whose
    containers' statuses report exactly their spec's requests and whose pod-level requests (if any) are ignored."""
    the_pod = _pod(random.Random(seed))
    the_pod.pop("status", None)
    the_pod["spec"].pop("resources", None)
    general = copy.deepcopy(the_pod)
    noop = {"name": "noop", "image": "x", "resources": {"requests": {"cpu": "0", "memory": "0"}}}
    general["spec"]["initContainers"] = [noop]
    fast, slow = pod_requests_pair(the_pod), pod_requests_pair(general)
    if not the_pod["spec"].get("initContainers") and not the_pod["spec"].get("overhead"):
        assert fast == slow
    assert pod_requests(the_pod) == fast[0] and pod_requests(the_pod, non_zero=True) == fast[1]
    resized = copy.deepcopy(the_pod)
    resized["status"] = {
        "containerStatuses": [
            {"name": c["name"], "resources": c.get("resources") or {}} for c in resized["spec"]["containers"]
        ],
        "resize": random.Random(seed).choice(["", "InProgress", "Infeasible"]),
    }
    for everywhere in (False, True):
        assert pod_requests_pair(resized, RequestOptions(status_resources=True), defaults_everywhere=everywhere) == fast


@settings(max_examples=150, deadline=None)
@given(seed=seeds)
def test_pod_level_requests_replace_the_containers_cpu_and_memory(seed):
    """With pod-level requests, only cpu and memory change, to the pod-level values plus the overhead; the
    non-zero values agree with the plain ones wherever the pod's requests name the resource."""
    the_pod = _pod(random.Random(seed))
    the_pod.pop("status", None)
    plain_off, _ = pod_requests_pair(the_pod, NO_GATES)
    plain, nz = pod_requests_pair(the_pod, RequestOptions(pod_level=True))
    pod_level = {k: v for k, v in (the_pod["spec"].get("resources") or {}).get("requests", {}).items()
                 if k in ("cpu", "memory")}  # fmt: skip
    overhead = Resource.from_list(the_pod["spec"].get("overhead"))
    want = plain_off.clone()
    if pod_level:
        if "cpu" in pod_level:
            want.milli_cpu = Resource.from_list({"cpu": pod_level["cpu"]}).milli_cpu + overhead.milli_cpu
        if "memory" in pod_level:
            want.memory = Resource.from_list({"memory": pod_level["memory"]}).memory + overhead.memory
    assert plain == want
    for name in pod_level:
        assert nz.get(name) == plain.get(name)
    scoring_nz = pod_requests_pair(the_pod, RequestOptions(pod_level=True), defaults_everywhere=True)[1]
    for name in pod_level:
        assert scoring_nz.get(name) == plain.get(name)


# -- exhaustive grids over small integers ---------------------------------------------------------------------
# The float corners of BalancedAllocation (|f0 - f1| / 2 against the general formula) and the truncations of the
# integer strategies sit at specific small fractions that random clusters rarely hit, so sweep them all. The
# snapshot and node infos are stand-ins with just the fields the scorers read.


class _Columns(SimpleNamespace):
    def scalar(self, name: str, nodes: list) -> tuple[np.ndarray, np.ndarray]:
        return self.scalars[name]


def _grid_case(alloc: dict[str, list[int]], used: dict[str, list[int]]) -> tuple[SimpleNamespace, list]:
    """A fake snapshot (columns) and fake node infos with these allocatable/used amounts per node; used
    amounts serve as both plain and non-zero requests."""
    n = len(alloc["cpu"])
    zeros = np.zeros(n, dtype=np.int64)
    arr = {k: np.asarray(v, dtype=np.int64) for k, v in {**alloc, **{f"u:{k}": v for k, v in used.items()}}.items()}
    cols = _Columns(
        alloc_cpu=arr["cpu"], req_cpu=arr["u:cpu"], nz_cpu=arr["u:cpu"],
        alloc_mem=arr["memory"], req_mem=arr["u:memory"], nz_mem=arr["u:memory"],
        alloc_eph=zeros, req_eph=zeros,
        scalars={k: (arr[k], arr[f"u:{k}"]) for k in alloc if k not in ("cpu", "memory")},
    )  # fmt: skip
    infos = []
    for i in range(n):
        a = Resource(alloc["cpu"][i], alloc["memory"][i])
        u = Resource(used["cpu"][i], used["memory"][i])
        for k in cols.scalars:
            if alloc[k][i]:
                a.scalar[k] = alloc[k][i]
            u.scalar[k] = used[k][i]
        infos.append(SimpleNamespace(allocatable=a, requested=u, non_zero_requested=u))
    return SimpleNamespace(columns=cols, node_info_list=infos, node_derived=lambda key, build: build()), infos


def _assert_grid(scorer: ResourceAllocationScorer, snap: SimpleNamespace, infos: list, pod_reqs: list[int]) -> None:
    want = [scorer.score(ni, pod_reqs)[0] for ni in infos]
    got = scorer.score_vector(snap, np.arange(len(infos)), pod_reqs).tolist()  # type: ignore[arg-type]
    assert got == want


def _pairs(top: int, over: int = 1) -> list[tuple[int, int]]:
    """(used, allocatable) with allocatable 0..top and used up to allocatable + over."""
    return [(u, a) for a in range(top + 1) for u in range(a + over + 1)]


@pytest.mark.parametrize("with_zero_capacity", [False, True], ids=["all capacities set", "some zero capacities"])
def test_balanced_two_resources_grid(with_zero_capacity):
    # without zero capacities every node takes the two-resource shortcut of the vector form
    pairs = [(u, a) for u, a in _pairs(20) if with_zero_capacity or a > 0]
    cpu = [p for p in pairs for _ in pairs]
    mem = [q for _ in pairs for q in pairs]
    snap, infos = _grid_case({"cpu": [a for _, a in cpu], "memory": [a for _, a in mem]},
                             {"cpu": [u for u, _ in cpu], "memory": [u for u, _ in mem]})  # fmt: skip
    scorer = ResourceAllocationScorer("NodeResourcesBalancedAllocation", [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)], use_requested=True)  # fmt: skip
    _assert_grid(scorer, snap, infos, [0, 0])


@pytest.mark.parametrize("with_zero_capacity", [False, True], ids=["all capacities set", "some zero capacities"])
def test_balanced_three_resources_grid(with_zero_capacity):
    pairs = [(u, a) for u, a in _pairs(6) if with_zero_capacity or a > 0]
    combos = [(x, y, z) for x in pairs for y in pairs for z in pairs]
    names = ("cpu", "memory", "example.com/gpu")
    snap, infos = _grid_case(
        {n: [c[k][1] for c in combos] for k, n in enumerate(names)},
        {n: [c[k][0] for c in combos] for k, n in enumerate(names)},
    )
    scorer = ResourceAllocationScorer("NodeResourcesBalancedAllocation", [ResourceSpec(n, 1) for n in names], use_requested=True)  # fmt: skip
    # the pod asks 1 of the extended resource so it counts (0 would drop it from the score)
    _assert_grid(scorer, snap, infos, [0, 0, 1])


@pytest.mark.parametrize("path", ["float64", "int64"])
@pytest.mark.parametrize(
    ("strategy", "shape"),
    [
        ("LeastAllocated", None),
        ("MostAllocated", None),
        ("RequestedToCapacityRatio", ((0, 10), (100, 0))),
        ("RequestedToCapacityRatio", ((0, 0), (100, 10))),
        ("RequestedToCapacityRatio", ((7, 3), (33, 10), (61, 1), (90, 8))),  # rising and falling, truncating
        ("RequestedToCapacityRatio", ((50, 5),)),
    ],
)
def test_integer_strategies_grid(strategy, shape, path, monkeypatch):
    if path == "int64":
        # capacities beyond the float64 limit take the int64 path; lower the limit so these small ones do
        monkeypatch.setattr(vectors, "EXACT_FLOAT_LIMIT", 0)
    pairs = _pairs(12, over=2)
    cpu = [p for p in pairs for _ in pairs]
    mem = [q for _ in pairs for q in pairs]
    snap, infos = _grid_case({"cpu": [a for _, a in cpu], "memory": [a for _, a in mem]},
                             {"cpu": [u for u, _ in cpu], "memory": [u for u, _ in mem]})  # fmt: skip
    scorer = ResourceAllocationScorer(strategy, [ResourceSpec("cpu", 3), ResourceSpec("memory", 7)], shape=shape)
    _assert_grid(scorer, snap, infos, [0, 1])
