"""The Deployment controller's arithmetic without a server: maxSurge/maxUnavailable rounding, how far the new
ReplicaSet may grow, proportional scaling mid-rollout (property-tested), the template hash, revisions and their
history, and how conditions are set."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.controllers.deployment import util

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def deploy(replicas: int, surge: Any = "25%", unavailable: Any = "25%", kind: str = "RollingUpdate",
           status_replicas: int = 0) -> dict[str, Any]:  # fmt: skip
    strategy: dict[str, Any] = {"type": kind}
    if kind == "RollingUpdate":
        strategy["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    return {"metadata": {"name": "d", "generation": 1, "annotations": {"team": "a"}},
            "spec": {"replicas": replicas, "strategy": strategy, "template": {"metadata": {"labels": {"app": "d"}}}},
            "status": {"replicas": status_replicas}}  # fmt: skip


def rs(name: str, replicas: int, created: str = "2026-01-01T00:00:00Z", max_replicas: int | None = None,
       available: int = 0, revision: str | None = None) -> dict[str, Any]:  # fmt: skip
    ann: dict[str, str] = {}
    if max_replicas is not None:
        ann[util.MAX_REPLICAS_ANNOTATION] = str(max_replicas)
    if revision is not None:
        ann[util.REVISION_ANNOTATION] = revision
    return {"metadata": {"name": name, "uid": name, "creationTimestamp": created, "annotations": ann},
            "spec": {"replicas": replicas}, "status": {"replicas": replicas, "availableReplicas": available}}  # fmt: skip


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "want"),
    [
        (10, "25%", "25%", (3, 2)),  # 2.5 rounds up for surge, down for unavailable
        (3, "25%", "25%", (1, 0)),
        (1, "25%", "25%", (1, 0)),
        (10, 0, 0, (0, 1)),  # both zero: one may be unavailable, or nothing could move
        (10, "0%", "0%", (0, 1)),
        (5, 2, "50%", (2, 2)),
        (4, "100%", 0, (4, 0)),
        (0, "25%", "25%", (0, 1)),
    ],
)  # fmt: skip
def test_fenceposts(replicas, surge, unavailable, want):
    assert util.resolve_fenceposts(deploy(replicas, surge, unavailable)) == want


def test_max_unavailable_is_capped_and_recreate_has_none():
    assert util.max_unavailable(deploy(2, 0, "200%")) == 2
    assert util.max_unavailable(deploy(0, 0, 1)) == 0
    assert util.max_surge(deploy(3, kind="Recreate")) == 0 and util.max_unavailable(deploy(3, kind="Recreate")) == 0


def test_a_value_that_is_not_a_percentage_is_an_error():
    with pytest.raises(ValueError, match="not a percentage"):
        util.resolve_fenceposts(deploy(3, "5"))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 50), st.integers(0, 100), st.lists(st.integers(0, 60), max_size=4), st.integers(0, 60))
def test_the_new_replica_set_grows_within_max_surge(replicas, surge_pct, olds, new):
    d = deploy(replicas, f"{surge_pct}%", 1)
    new_rs = rs("new", new)
    all_rss = [*(rs(f"o{i}", n) for i, n in enumerate(olds)), new_rs]
    got = util.new_rs_new_replicas(d, all_rss, new_rs)
    surge = util.scaled_value(f"{surge_pct}%", replicas, True)
    total = sum(olds) + new
    if total >= replicas + surge:
        assert got == new  # no room: unchanged
    elif new > replicas:
        assert got == replicas  # never beyond the Deployment's replicas
    else:
        assert new <= got <= max(new, replicas)
        assert sum(olds) + got <= replicas + surge


@settings(max_examples=400, deadline=None)
@given(
    st.integers(0, 40),
    st.lists(st.tuples(st.integers(1, 40), st.integers(0, 60)), min_size=2, max_size=4),
    st.integers(0, 40),
)
def test_proportional_scaling_shares_exactly_the_room_there_is(replicas, sets, status_replicas):
    d = deploy(replicas, "25%", "25%", status_replicas=status_replicas)
    live = [
        rs(f"r{i}", n, created=f"2026-01-01T00:00:{i:02d}Z", max_replicas=m or None) for i, (n, m) in enumerate(sets)
    ]
    ordered, sizes, operation = util.proportional_sizes(d, live)
    allowed = replicas + util.max_surge(d) if replicas else 0
    before = sum(n for n, _ in sets)
    assert sorted(r["metadata"]["name"] for r in ordered) == sorted(r["metadata"]["name"] for r in live)
    assert all(s >= 0 for s in sizes)
    if allowed == before:
        assert operation == "" and sizes == [util.spec_replicas(r) for r in ordered]
        return
    assert operation == ("up" if allowed > before else "down")
    # All the room is placed exactly, except where the largest would have to go below zero to make it so.
    assert sum(sizes) == allowed or (sizes[0] == 0 and sum(sizes) > allowed)
    if replicas == 0:
        assert sizes == [0] * len(sizes)


def test_proportional_scaling_example():
    # Mid-rollout 10 replicas (maxSurge 3 -> 13 allowed), old 8 and new 5, both sized for 13; scaled to 20
    # (maxSurge 5 -> 25): each grows by 25/13 of itself, rounded; the larger goes first and takes the remainder.
    d = deploy(20, "25%", "25%")
    old = rs("old", 8, created="2026-01-01T00:00:00Z", max_replicas=13)
    new = rs("new", 5, created="2026-01-01T00:01:00Z", max_replicas=13)
    ordered, sizes, operation = util.proportional_sizes(d, [old, new])
    assert [r["metadata"]["name"] for r in ordered] == ["old", "new"] and operation == "up"
    assert sizes == [15, 10]  # 8*25/13 = 15.4 -> 15; 5*25/13 = 9.6 -> 10; 15 + 10 = 25


def test_equal_sizes_grow_newest_first_and_shrink_oldest_first():
    a = rs("a", 4, created="2026-01-01T00:00:00Z")
    b = rs("b", 4, created="2026-01-01T00:05:00Z")
    assert [r["metadata"]["name"] for r in util.by_size([a, b], newer_first=True)] == ["b", "a"]
    assert [r["metadata"]["name"] for r in util.by_size([a, b], newer_first=False)] == ["a", "b"]


def test_template_hash_ignores_nothing_but_the_hash_label_and_is_spelled_safely():
    t = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}
    h = util.compute_hash(t, None)
    assert h == util.compute_hash(t, None) and set(h) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert util.compute_hash(t, 1) != h  # a collision count gives another name
    changed = {**t, "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}
    assert util.compute_hash(changed, None) != h
    hashed = {"metadata": {"labels": {"app": "d", "pod-template-hash": h}}, "spec": t["spec"]}
    assert util.equal_ignore_hash(hashed, t) and not util.equal_ignore_hash(hashed, changed)


def test_new_replica_set_annotations_and_revision_history():
    d = deploy(4)
    d["metadata"]["annotations"][util.LAST_APPLIED_ANNOTATION] = "{}"
    fresh: dict[str, Any] = {"metadata": {}}
    assert util.set_new_replica_set_annotations(d, fresh, "1", exists=False)
    assert fresh["metadata"]["annotations"] == {"team": "a", util.REVISION_ANNOTATION: "1",
                                                util.DESIRED_REPLICAS_ANNOTATION: "4",
                                                util.MAX_REPLICAS_ANNOTATION: "5"}  # fmt: skip
    # An old ReplicaSet that becomes the new one again (a rollback) keeps its earlier revisions.
    back = {"metadata": {"annotations": {util.REVISION_ANNOTATION: "2", util.REVISION_HISTORY_ANNOTATION: "1"}}}
    assert util.set_new_replica_set_annotations(d, back, "5", exists=True)
    assert back["metadata"]["annotations"][util.REVISION_ANNOTATION] == "5"
    assert back["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "1,2"
    assert not util.set_new_replica_set_annotations(d, back, "5", exists=True)  # nothing left to change


def test_conditions_keep_their_transition_time_while_the_status_holds():
    status: dict[str, Any] = {}
    first = util.new_condition("Progressing", "True", util.NEW_REPLICA_SET, "Created", NOW)
    util.set_condition(status, first)
    later = util.new_condition("Progressing", "True", util.REPLICA_SET_UPDATED, "progressing",
                               NOW + dt.timedelta(minutes=1))  # fmt: skip
    util.set_condition(status, later)
    [cond] = status["conditions"]
    assert cond["reason"] == util.REPLICA_SET_UPDATED and cond["lastTransitionTime"] == first["lastTransitionTime"]
    assert cond["lastUpdateTime"] == later["lastUpdateTime"]
    util.set_condition(status, util.new_condition("Available", "True", util.MINIMUM_REPLICAS_AVAILABLE, "ok", NOW))
    util.set_condition(status, util.new_condition("Progressing", "False", util.TIMED_OUT, "late", NOW))
    assert [c["type"] for c in status["conditions"]] == ["Available", "Progressing"]  # a change goes last


def test_progress_deadline():
    d = deploy(1)
    d["spec"]["progressDeadlineSeconds"] = 60
    started = util.new_condition("Progressing", "True", util.REPLICA_SET_UPDATED, "x", NOW)
    status = {"conditions": [started]}
    assert not util.deployment_timed_out(d, status, NOW + dt.timedelta(seconds=59))
    assert util.deployment_timed_out(d, status, NOW + dt.timedelta(seconds=61))
    d["spec"]["progressDeadlineSeconds"] = util.MAX_INT32  # "no deadline"
    assert not util.deployment_timed_out(d, status, NOW + dt.timedelta(days=365))
