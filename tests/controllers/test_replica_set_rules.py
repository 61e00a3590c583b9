"""The ReplicaSet controller's rules without a server: which pods go first on scale-down (property-tested against a
plain lexicographic order), the deletion-cost annotation, slow-start batches, expectations, and the status it
computes (counts, availability after minReadySeconds, the ReplicaFailure condition), and that counting from the pod
informer's tally agrees with reading every pod."""

from __future__ import annotations

import asyncio
import datetime as dt
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.api import errors
from pyk8s.api.selectors import label_selector_from_object, parse_label_selector
from pyk8s.client.cache.indexer import Indexer
from pyk8s.controllers.active_pods import (
    POD_DELETION_COST,
    colocation_ranks,
    deletion_cost,
    deletion_order,
    related_pods_per_node,
)
from pyk8s.controllers.controller_ref_manager import add_pod_controller_uid_indexer, add_pod_state_tally
from pyk8s.controllers.expectations import (
    EXPECTATIONS_TIMEOUT,
    ControllerExpectations,
    UIDTrackingControllerExpectations,
)
from pyk8s.controllers.pod_control import pod_from_template, pods_prefix, slow_start_batch
from pyk8s.controllers.podutil import POD_FACTS, pod_facts
from pyk8s.controllers.replicaset.replica_set import ReplicaSetController
from pyk8s.controllers.replicaset.replica_set_utils import calculate_status, count_pods, status_unchanged

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - dt.timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_pod(uid: str, *, node: str = "", phase: str = "Running", ready: bool | None = None, ready_ago: float | None = None,
             cost: str | None = None, restarts: int = 0, sidecar_restarts: int = 0,
             created_ago: float | None = None) -> dict[str, Any]:  # fmt: skip
    md: dict[str, Any] = {"name": f"p-{uid}", "namespace": "ns", "uid": uid}
    if cost is not None:
        md["annotations"] = {POD_DELETION_COST: cost}
    if created_ago is not None:
        md["creationTimestamp"] = ts(created_ago)
    status: dict[str, Any] = {"phase": phase, "containerStatuses": [{"name": "c", "restartCount": restarts}],
                              "initContainerStatuses": [{"name": "side", "restartCount": sidecar_restarts}]}  # fmt: skip
    if ready is not None:
        cond: dict[str, Any] = {"type": "Ready", "status": "True" if ready else "False"}
        if ready_ago is not None:
            cond["lastTransitionTime"] = ts(ready_ago)
        status["conditions"] = [cond]
    spec: dict[str, Any] = {
        "containers": [{"name": "c"}],
        "initContainers": [{"name": "side", "restartPolicy": "Always"}],
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": md, "spec": spec, "status": status}


_PHASE = {"Pending": 0, "Unknown": 1, "Running": 2}


def oracle_key(pod: dict[str, Any], rank: int) -> tuple[Any, ...]:
    """Upstream's rules as one lexicographic key, valid when times are compared exactly (no powers of two):
    smaller goes first. A missing time sorts first; a later time (more recent) before an earlier one."""
    md, status = pod["metadata"], pod["status"]
    cond = (status.get("conditions") or [{}])[0]
    ready = cond.get("status") == "True"
    ready_at = cond.get("lastTransitionTime") if ready else None

    def newer_first(t: str | None) -> tuple[int, float]:
        return (0, 0.0) if t is None else (1, -dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp())

    return (
        bool(pod["spec"].get("nodeName")),
        _PHASE.get(status.get("phase"), 0),
        ready,
        deletion_cost(pod),
        -rank,
        newer_first(ready_at) if ready else (0, 0.0),
        -status["containerStatuses"][0]["restartCount"],
        -status["initContainerStatuses"][0]["restartCount"],
        newer_first(md.get("creationTimestamp")),
    )


pods_strategy = st.lists(
    st.tuples(  # node, phase, ready, ready_ago, cost, restarts, sidecar restarts, created_ago
        st.sampled_from(["", "n1", "n2"]),
        st.sampled_from(["Pending", "Unknown", "Running", "Weird"]),
        st.sampled_from([None, True, False]),
        st.sampled_from([None, 5, 100, 4000]),
        st.sampled_from([None, "0", "5", "-3", "+4", "007", "x"]),
        st.integers(0, 2),
        st.integers(0, 2),
        st.sampled_from([None, 10, 20, 600]),
    ),
    min_size=0,
    max_size=8,
)


@settings(max_examples=400, deadline=None)
@given(pods_strategy, st.data())
def test_deletion_order_follows_the_rules_in_order(specs, data):
    pods = [
        make_pod(
            f"u{i}", node=n, phase=ph, ready=r, ready_ago=ra, cost=c, restarts=rs, sidecar_restarts=sd, created_ago=cr
        )
        for i, (n, ph, r, ra, c, rs, sd, cr) in enumerate(specs)
    ]
    ranks = data.draw(st.lists(st.integers(0, 3), min_size=len(pods), max_size=len(pods)))
    got = deletion_order(pods, ranks, None)
    rank_of = {p["metadata"]["uid"]: r for p, r in zip(pods, ranks, strict=True)}
    keys = [oracle_key(p, rank_of[p["metadata"]["uid"]]) for p in got]
    assert keys == sorted(keys)
    assert sorted(p["metadata"]["uid"] for p in got) == sorted(p["metadata"]["uid"] for p in pods)
    # Asking for the first k only is the same as ordering all and cutting (with and without powers of two).
    k = data.draw(st.integers(0, len(pods)))
    for now in (None, NOW):
        whole = [p["metadata"]["uid"] for p in deletion_order(pods, ranks, now)]
        assert [p["metadata"]["uid"] for p in deletion_order(pods, ranks, now, first=k)] == whole[:k]


def test_ready_times_in_the_same_power_of_two_tie_by_uid():
    # 1200 s and 1500 s ago are in the same power of two of nanoseconds (2^40..2^41): the UID decides. 10 s ago is
    # in a smaller one: that pod became Ready more recently and goes first.
    a = make_pod("b", node="n", ready=True, ready_ago=1200)
    b = make_pod("a", node="n", ready=True, ready_ago=1500)
    c = make_pod("z", node="n", ready=True, ready_ago=10)
    order = [p["metadata"]["uid"] for p in deletion_order([a, b, c], [1, 1, 1], NOW)]
    assert order == ["z", "a", "b"]
    # Compared exactly (no `now`), the later transition goes first.
    assert [p["metadata"]["uid"] for p in deletion_order([a, b, c], [1, 1, 1], None)] == ["z", "b", "a"]


def test_creation_times_in_the_same_power_of_two_tie_by_uid():
    old = make_pod("a", node="n", created_ago=3000)
    older = make_pod("b", node="n", created_ago=3500)
    young = make_pod("c", node="n", created_ago=2)
    assert [p["metadata"]["uid"] for p in deletion_order([young, older, old], [0, 0, 0], NOW)] == ["c", "a", "b"]


@pytest.mark.parametrize(
    ("value", "cost"),
    [("10", 10), ("-5", -5), ("0", 0), ("+10", 0), ("008", 0), ("abc", 0), ("", 0), ("2147483647", 2147483647),
     ("2147483648", 0), ("-2147483648", -2147483648), ("1.5", 0)],
)  # fmt: skip
def test_deletion_cost_annotation(value, cost):
    assert deletion_cost({"metadata": {"annotations": {POD_DELETION_COST: value}}}) == cost


def test_colocation_ranks_count_active_related_pods_per_node():
    pods = [labelled(make_pod("a", node="n1"), app="web", h="1"), labelled(make_pod("b", node="n2"), app="web", h="1")]
    candidates = [
        *pods,
        labelled(make_pod("c", node="n1"), app="web", h="2"),  # another ReplicaSet of the same Deployment
        labelled(make_pod("d", node="n1", phase="Succeeded"), app="web", h="2"),  # not active
        labelled(make_pod("e", node="n1"), app="db"),  # selected by neither
        labelled(make_pod("f"), app="web", h="1"),  # not scheduled
    ]
    selectors = [parse_label_selector("app=web,h=1"), parse_label_selector("app=web,h=2"), parse_label_selector("app")]
    on_node = related_pods_per_node(candidates, selectors[:2])
    assert on_node == {"n1": 2, "n2": 1, "": 1}
    assert colocation_ranks(pods, on_node) == [2, 1]
    # A pod two selectors match counts once.
    assert related_pods_per_node(candidates, selectors) == {"n1": 3, "n2": 1, "": 1}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.sets(st.integers(0, 40), max_size=3))
def test_slow_start_batches_stop_after_the_first_failing_batch(count, failing):
    calls = 0

    async def fn() -> None:
        nonlocal calls
        n = calls
        calls += 1
        await asyncio.sleep(0)
        if n in failing:
            raise errors.StatusError(500, "InternalError", "boom")

    ok, err = asyncio.run(slow_start_batch(count, 1, fn))
    # Batches are 1, 2, 4, ...: the calls made are those of every batch up to the first one holding a failure.
    made, size, remaining = 0, 1, count
    while remaining > 0:
        size = min(size, remaining)
        made += size
        remaining -= size
        if any(made - size <= f < made for f in failing):
            break
        size *= 2
    assert calls == made
    failures = len([f for f in failing if f < made])
    assert ok == made - failures
    assert (err is not None) == (failures > 0)


def test_expectations_hold_until_observed_or_expired():
    clock = [0.0]
    exp = UIDTrackingControllerExpectations(ControllerExpectations(clock=lambda: clock[0]))
    assert exp.satisfied("ns/rs")  # never acted: free to act
    exp.expect_creations("ns/rs", 2)
    assert not exp.satisfied("ns/rs")
    exp.creation_observed("ns/rs")
    exp.creation_observed("ns/rs")
    assert exp.satisfied("ns/rs")
    exp.expect_deletions("ns/rs", ["ns/a", "ns/b"])
    exp.deletion_observed("ns/rs", "ns/a")
    exp.deletion_observed("ns/rs", "ns/a")  # seen again (an update, then the delete): counted once
    assert not exp.satisfied("ns/rs")
    clock[0] += EXPECTATIONS_TIMEOUT + 1
    assert exp.satisfied("ns/rs")  # a lost event does not block the owner for ever
    exp.delete("ns/rs")
    assert exp.get("ns/rs") is None


def rs(replicas: int = 3, min_ready: int = 0, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "ns", "uid": "rs-uid", "generation": 2},
        "spec": {"replicas": replicas, "minReadySeconds": min_ready, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}, "spec": {"containers": []}}},
        "status": status or {"replicas": 0},
    }  # fmt: skip


def labelled(pod: dict[str, Any], **labels: str) -> dict[str, Any]:
    pod["metadata"]["labels"] = labels
    return pod


def test_status_counts_labels_readiness_and_availability():
    pods = [
        labelled(make_pod("a", node="n", ready=True, ready_ago=30), app="web", tier="front"),
        labelled(make_pod("b", node="n", ready=True, ready_ago=2), app="web", tier="front"),
        labelled(make_pod("c", node="n", ready=False), app="web"),
    ]
    status = calculate_status(rs(min_ready=10), pods, None, NOW)
    assert status == {"replicas": 3, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 1}
    assert not status_unchanged(rs(min_ready=10), status)


def test_replica_failure_condition_comes_and_goes():
    failed = calculate_status(rs(), [], errors.StatusError(403, "Forbidden", "pods is forbidden: quota"), NOW)
    assert failed["conditions"] == [{"type": "ReplicaFailure", "status": "True", "lastTransitionTime": ts(0),
                                     "reason": "FailedCreate", "message": "pods is forbidden: quota"}]  # fmt: skip
    assert failed["replicas"] == 0 and "readyReplicas" not in failed
    # A later failure keeps the first condition as it is; a success removes it.
    again = calculate_status(rs(status=failed), [], errors.StatusError(500, "InternalError", "other"), NOW)
    assert again["conditions"] == failed["conditions"]
    healed = calculate_status(rs(status=failed), [], None, NOW)
    assert "conditions" not in healed


def test_unchanged_status_is_not_written_again():
    stored = rs(status={"replicas": 3, "fullyLabeledReplicas": 3, "observedGeneration": 2})
    assert status_unchanged(stored, {"replicas": 3, "fullyLabeledReplicas": 3})
    stale_generation = rs(status={"replicas": 3, "fullyLabeledReplicas": 3, "observedGeneration": 1})
    assert not status_unchanged(stale_generation, {"replicas": 3, "fullyLabeledReplicas": 3})


def test_pods_from_a_template():
    template = {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}, "finalizers": ["x/y"]},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u", "controller": True,
           "blockOwnerDeletion": True}  # fmt: skip
    pod = pod_from_template(template, {"metadata": {"name": "web"}}, ref)
    assert pod["metadata"] == {"generateName": "web-", "labels": {"app": "web"}, "annotations": {"a": "b"},
                               "finalizers": ["x/y"], "ownerReferences": [ref]}  # fmt: skip
    assert pod["spec"] == template["spec"] and pod["spec"] is not template["spec"]
    assert pods_prefix("x" * 253) == "x" * 253  # `<name>-` would be too long for a name prefix


def _pod_for_tally(i: int, owner: str | None, app: str, ready: bool, phase: str, deleting: bool) -> dict[str, Any]:
    # "web-only": selected, but without the template's tier label
    md: dict[str, Any] = {
        "name": f"p{i}",
        "namespace": "ns",
        "uid": f"u{i}",
        "labels": {"app": app.removesuffix("-only")},
    }
    if app == "web":
        md["labels"]["tier"] = "front"
    if owner is not None:
        md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner,
                                  "controller": True}]  # fmt: skip
    if deleting:
        md["deletionTimestamp"] = ts(1)
    return {"metadata": md, "spec": {"nodeName": "n"},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    pods=st.lists(
        st.tuples(
            st.sampled_from([None, "rs-1", "rs-2"]),
            st.sampled_from(["web", "web-only", "db"]),
            st.booleans(),
            st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
            st.booleans(),
        ),
        max_size=25,
    ),
    min_ready=st.sampled_from([0, 0, 5]),
)
def test_counting_from_the_tally_agrees_with_reading_every_pod(pods, min_ready):
    """The sync's shortcut (the pod informer's tally) answers only when reading the pods would adopt, release and
    choose nothing, and then with the same counts."""
    idx = Indexer()
    add_pod_controller_uid_indexer(idx)
    add_pod_state_tally(idx)
    for i, p in enumerate(pods):
        idx.add(_pod_for_tally(i, *p))
    owner = rs(min_ready=min_ready)
    owner["metadata"].update(name="rs-1", uid="rs-1")
    owner["spec"]["template"] = {"metadata": {"labels": {"app": "web", "tier": "front"}}}
    selector = label_selector_from_object({"matchLabels": {"app": "web"}})
    rig = SimpleNamespace(pods=SimpleNamespace(indexer=idx), pod_facts=idx.derived(POD_FACTS, pod_facts))
    got = ReplicaSetController._count_without_reading(rig, owner, selector)  # type: ignore[arg-type]

    def active(p: dict[str, Any]) -> bool:
        return pod_facts(p).active

    objs = idx.list()
    mine = [p for p in objs if active(p) and p["metadata"].get("ownerReferences", [{}])[0].get("uid") == "rs-1"]
    strays = [p for p in mine if not selector.matches(p["metadata"]["labels"])]
    adoptable = [p for p in objs if active(p) and "ownerReferences" not in p["metadata"]
                 and selector.matches(p["metadata"]["labels"])]  # fmt: skip
    if min_ready or strays or adoptable:
        assert got is None
    else:
        assert got == count_pods(owner, mine, NOW)
