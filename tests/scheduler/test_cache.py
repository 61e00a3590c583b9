"""The scheduler cache: assume, finish binding, forget, expiry of assumed pods, confirmation by the informer,
incremental snapshots and the zone round-robin node order."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.scheduler.cache import SchedulerCache
from pyk8s.scheduler.framework.image_states import image_states_for
from pyk8s.scheduler.framework.snapshot import Snapshot

from .wrappers import make_node, make_pod


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def bound(pod: dict, node: str) -> dict:
    p = copy.deepcopy(pod)
    p["spec"]["nodeName"] = node
    return p


def requested_cpu(cache: SchedulerCache, node: str) -> int:
    return cache.nodes[node].requested.milli_cpu


def test_assumed_pod_counts_until_forgotten():
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    pod = bound(make_pod("p", cpu="500m"), "n1")
    cache.assume_pod(pod)
    assert cache.is_assumed_pod(pod)
    assert requested_cpu(cache, "n1") == 500
    with pytest.raises(ValueError, match="can't be assumed"):
        cache.assume_pod(pod)
    cache.forget_pod(pod)
    assert not cache.is_assumed_pod(pod)
    assert requested_cpu(cache, "n1") == 0


def test_informer_add_confirms_an_assumed_pod_even_on_another_node():
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    cache.add_node(make_node("n2"))
    pod = make_pod("p", cpu="300m")
    cache.assume_pod(bound(pod, "n1"))
    cache.add_pod(bound(pod, "n2"))  # someone else bound it to n2
    assert not cache.is_assumed_pod(pod)
    assert requested_cpu(cache, "n1") == 0
    assert requested_cpu(cache, "n2") == 300
    cache.forget_pod(pod)  # no longer assumed: forgetting does nothing
    assert requested_cpu(cache, "n2") == 300


def test_assumed_pods_expire_only_after_binding_finished_and_ttl():
    clock = FakeClock()
    cache = SchedulerCache(ttl=30, clock=clock)
    cache.add_node(make_node("n1"))
    pod = bound(make_pod("p", cpu="1"), "n1")
    cache.assume_pod(pod)
    clock.now = 100
    assert cache.cleanup_assumed_pods() == []  # binding not finished: never expires
    cache.finish_binding(pod)
    clock.now = 129
    assert cache.cleanup_assumed_pods() == []
    clock.now = 130
    assert [p["metadata"]["name"] for p in cache.cleanup_assumed_pods()] == ["p"]
    assert requested_cpu(cache, "n1") == 0


def test_without_ttl_assumed_pods_never_expire():
    clock = FakeClock()
    cache = SchedulerCache(clock=clock)
    cache.add_node(make_node("n1"))
    pod = bound(make_pod("p", cpu="1"), "n1")
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    clock.now = 10**9
    assert cache.cleanup_assumed_pods() == []
    assert cache.is_assumed_pod(pod)


def test_pods_before_their_node_and_node_removed_before_its_pods():
    cache = SchedulerCache()
    pod = bound(make_pod("p", cpu="1"), "late")
    cache.add_pod(pod)
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.num_nodes() == 0  # a NodeInfo without a node is not schedulable
    cache.add_node(make_node("late"))
    cache.update_snapshot(snap)
    assert snap.get("late").requested.milli_cpu == 1000
    cache.remove_node(make_node("late"))
    cache.update_snapshot(snap)
    assert snap.num_nodes() == 0
    assert "late" in cache.nodes  # kept for its pod
    cache.remove_pod(pod)
    assert "late" not in cache.nodes


def test_snapshot_is_a_copy_refreshed_incrementally():
    cache = SchedulerCache()
    for i in range(3):
        cache.add_node(make_node(f"n{i}"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    before = snap.node_generation
    first = snap.get("n0")
    cache.add_pod(bound(make_pod("p", cpu="250m"), "n1"))
    assert snap.get("n1").requested.milli_cpu == 0  # the snapshot does not move until updated
    cache.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 250
    assert int(snap.columns.req_cpu[snap.positions["n1"]]) == 250
    assert snap.get("n0") is first  # untouched nodes are not copied again
    assert snap.node_generation == before  # a pod change keeps node-derived memos
    node = make_node("n2", labels={"x": "y"})
    cache.update_node(make_node("n2"), node)
    cache.update_snapshot(snap)
    assert snap.node_generation != before
    assert snap.get("n2").node["metadata"]["labels"]["x"] == "y"


def test_nodes_listed_zone_by_zone():
    cache = SchedulerCache()
    for name, zone in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")]:
        cache.add_node(make_node(name, labels={"topology.kubernetes.io/zone": zone}))
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert [ni.name for ni in snap.node_info_list] == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_node_updates_keep_the_zone_order_and_the_node_list():
    """Upstream's nodeTree.updateNode is a no-op while the zone key stays: a heartbeat neither moves the node in
    the round-robin order nor rebuilds the snapshot's node list. A zone change moves the node to the end of its
    new zone; adds and removals rebuild the list too."""
    zone = "topology.kubernetes.io/zone"
    cache = SchedulerCache()
    for name, z in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")]:
        cache.add_node(make_node(name, labels={zone: z}))
    snap = Snapshot()
    cache.update_snapshot(snap)
    order = ["a1", "b1", "c1", "a2", "c2", "a3"]
    epoch = snap.epoch
    for i in range(3):
        for name, z in [("a1", "a"), ("b1", "b"), ("a2", "a")]:
            old = cache.nodes[name].node
            cache.update_node(old, make_node(name, labels={zone: z, "beat": str(i)}))
        cache.add_node(make_node("c1", labels={zone: "c", "beat": str(i)}))  # a re-add of a known node, too
        cache.update_snapshot(snap)
        assert cache.node_names_in_tree_order() == order
        assert [ni.name for ni in snap.node_info_list] == order
        assert snap.epoch == epoch  # refreshed in place, not rebuilt
        assert snap.get("a1").node["metadata"]["labels"]["beat"] == str(i)
    cache.update_node(cache.nodes["a1"].node, make_node("a1", labels={zone: "b"}))
    cache.update_snapshot(snap)
    assert snap.epoch != epoch
    assert [ni.name for ni in snap.node_info_list] == ["a2", "b1", "c1", "a3", "a1", "c2"]
    epoch = snap.epoch
    cache.remove_node(cache.nodes["b1"].node)
    cache.remove_node(cache.nodes["a1"].node)
    cache.add_node(make_node("b2", labels={zone: "b"}))  # zone b emptied, then comes back last
    cache.update_snapshot(snap)
    assert snap.epoch != epoch
    assert [ni.name for ni in snap.node_info_list] == ["a2", "c1", "b2", "a3", "c2"]


def test_image_states_count_nodes_with_the_image():
    cache = SchedulerCache()
    img = [{"names": ["nginx:1.25"], "sizeBytes": 100 * 1024 * 1024}]
    cache.add_node(make_node("n1", images=img))
    cache.add_node(make_node("n2", images=img))
    cache.add_node(make_node("n3"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    state = snap.get("n1").image_states["nginx:1.25"]
    assert (state.size, state.num_nodes) == (100 * 1024 * 1024, 2)
    assert snap.get("n3").image_states == {}


def test_image_sizes_as_upstreams_cache_keeps_them():
    """A name's size is the one first seen while any node holds it (upstream: cache.addNodeImageStates); a node
    is counted once however often it lists the name."""

    def states(snap: Snapshot, node: str) -> dict[str, tuple[int, int]]:
        return {k: (v.size, v.num_nodes) for k, v in snap.get(node).image_states.items()}

    cache = SchedulerCache()
    a = make_node("a", images=[{"names": ["x:1"], "sizeBytes": 10}])
    cache.add_node(a)
    cache.add_node(make_node("b", images=[{"names": ["x:1"], "sizeBytes": 20},
                                          {"names": ["x:1", "y:1"], "sizeBytes": 30}]))  # fmt: skip
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert states(snap, "a") == {"x:1": (10, 2)}
    assert states(snap, "b") == {"x:1": (10, 2), "y:1": (30, 1)}
    cache.remove_node(a)
    # b alone holds x:1 now: its update drops the old state and starts one from b's own first listing.
    cache.update_node(None, make_node("b", images=[{"names": ["x:1"], "sizeBytes": 20}]))
    cache.update_snapshot(snap)
    assert states(snap, "b") == {"x:1": (20, 1)}


def test_image_states_for():
    """A snapshot built from node objects (Snapshot.from_objects) gets the summaries a cache given them would."""
    nodes = [
        make_node("a", images=[{"names": ["x:1", "x:latest"], "sizeBytes": 10}, {"names": ["x:1"], "sizeBytes": 99}]),
        make_node("b", images=[{"names": ["x:1"], "sizeBytes": 20}]),
        make_node("c"),
    ]
    states = image_states_for(nodes)
    assert states["c"] == {}
    assert (states["a"]["x:1"].size, states["a"]["x:1"].num_nodes) == (10, 2)  # first size seen; a counted once
    assert (states["a"]["x:latest"].size, states["a"]["x:latest"].num_nodes) == (10, 1)
    assert (states["b"]["x:1"].size, states["b"]["x:1"].num_nodes) == (10, 2)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["assume", "add", "update", "remove", "forget", "node"]),
                          st.integers(0, 5), st.integers(0, 2)), max_size=40))  # fmt: skip
def test_requested_always_equals_the_pods_counted(ops):
    """Whatever the order of events, each node's sums equal those of the pods the cache places there."""
    cache = SchedulerCache()
    pods = {i: make_pod(f"p{i}", cpu=f"{(i + 1) * 100}m") for i in range(6)}
    for op, i, n in ops:
        node = f"n{n}"
        pod = bound(pods[i], node)
        if op == "node":
            cache.add_node(make_node(node))
        elif op == "assume":
            if not cache.get_pod(pod):
                cache.assume_pod(pod)
        elif op == "add":
            cache.add_pod(pod)
        elif op == "update":
            old = cache.get_pod(pod)
            if old is not None:
                cache.update_pod(old, pod)
        elif op == "remove":
            cache.remove_pod(pod)
        else:
            cache.forget_pod(pod)
        for name, ni in cache.nodes.items():
            assert ni.requested.milli_cpu == sum(p.requests.milli_cpu for p in ni.pods), name
            on_node = {uid for uid, ps in cache.pod_states.items() if ps.node_name == name}
            assert {p.uid for p in ni.pods} == on_node
