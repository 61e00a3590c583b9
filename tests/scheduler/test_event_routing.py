"""How the Scheduler routes pod and node informer events to its cache and queue (upstream: eventhandlers.go):
terminal pods count as deleted, a UID change is a delete and an add, tombstones clean up both sides, a pod
getting bound leaves the queue for the cache."""

from __future__ import annotations

import copy

from pyk8s.scheduler.cache import SchedulerCache
from pyk8s.scheduler.scheduler import Scheduler, node_update_events

from .wrappers import make_node, make_pod


def bound(pod: dict, node: str = "n1") -> dict:
    p = copy.deepcopy(pod)
    p["spec"]["nodeName"] = node
    return p


def phase(pod: dict, value: str) -> dict:
    p = copy.deepcopy(pod)
    p["status"]["phase"] = value
    return p


def offline_scheduler() -> Scheduler:
    """The real Scheduler without an API server: its informer handlers are driven by hand."""
    return Scheduler(None)


def on_node(cache: SchedulerCache, node: str = "n1") -> list[str]:
    ni = cache.nodes.get(node)
    return [] if ni is None else [p.pod["metadata"]["name"] for p in ni.pods]


async def test_unassigned_pods_go_to_the_queue_and_leave_it_when_bound():
    sched = offline_scheduler()
    sched._on_node_add(make_node("n1"))
    pod = make_pod("p")
    sched._on_pod_add(pod)
    assert len(sched.queue) == 1
    sched._on_pod_update(pod, bound(pod))
    assert len(sched.queue) == 0
    assert on_node(sched.cache) == ["p"]


async def test_a_pod_turning_terminal_is_deleted_once():
    sched = offline_scheduler()
    pod = bound(make_pod("p"))
    sched._on_pod_add(pod)
    done = phase(pod, "Succeeded")
    sched._on_pod_update(pod, done)
    assert on_node(sched.cache) == []
    # Later updates and the final delete of a terminal pod are not seen again.
    sched._on_pod_update(done, phase(done, "Succeeded"))
    sched._on_pod_delete(done)
    assert on_node(sched.cache) == []
    # An assumed pod that the informer next shows as bound and already terminal is not leaked.
    other = make_pod("q")
    sched.cache.assume_pod(bound(other))
    sched._on_pod_update(other, phase(bound(other), "Failed"))
    assert on_node(sched.cache) == []


async def test_uid_change_is_a_delete_and_an_add():
    sched = offline_scheduler()
    old = bound(make_pod("p"))
    sched._on_pod_add(old)
    new = copy.deepcopy(old)
    new["metadata"]["uid"] = "another"
    sched._on_pod_update(old, new)
    assert [p.uid for p in sched.cache.nodes["n1"].pods] == ["another"]


async def test_tombstone_with_a_stale_unassigned_object_still_cleans_the_cache():
    from pyk8s.client.cache import DeletedFinalStateUnknown

    sched = offline_scheduler()
    pod = make_pod("p")
    sched.cache.assume_pod(bound(pod))
    sched._on_pod_delete(DeletedFinalStateUnknown("default/p", pod))
    assert on_node(sched.cache) == []


def test_node_update_events_are_upstreams():
    base = make_node("n")
    cordoned = copy.deepcopy(base)
    cordoned["spec"]["unschedulable"] = True
    labels = [ev.label for ev in node_update_events(base, cordoned)]
    assert labels == []  # cordoning cannot help a pod
    assert node_update_events(cordoned, base) != []  # uncordoning can
    same_value = copy.deepcopy(base)
    same_value["status"]["allocatable"]["cpu"] = "4000m"  # "4" == "4000m"
    assert node_update_events(base, same_value) == []
    more = copy.deepcopy(base)
    more["status"]["allocatable"]["cpu"] = "8"
    assert len(node_update_events(base, more)) == 1
