"""The long-running components' collector policy: survivors of a full collection are frozen, and a cycle that
dies while frozen is still reclaimed by the periodic complete collection."""

from __future__ import annotations

import gc
import weakref

import pytest

from pyk8s import gc_policy


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def policy():
    yield gc_policy
    gc_policy.stop_freezing()
    gc.set_threshold(700, 10, 10)


def test_survivors_of_a_full_collection_are_frozen(policy):
    policy.freeze_long_lived(complete_every=3600)
    before = gc.get_freeze_count()
    kept = [Node() for _ in range(1000)]  # noqa: F841 - alive across the collection
    gc.collect()
    assert gc.get_freeze_count() >= before + 1000


def test_a_cycle_that_dies_while_frozen_waits_for_the_complete_collection(policy):
    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    policy.freeze_long_lived(complete_every=3600)  # the cycle is frozen while still referenced
    del a, b
    gc.collect()
    assert alive() is not None  # frozen: the collector does not look at it
    policy.freeze_long_lived(complete_every=0)  # the next full collection is a complete one
    gc.collect()
    assert alive() is None


def test_young_collections_are_rarer_until_stopped(policy):
    gc.set_threshold(700, 10, 10)
    policy.freeze_long_lived()
    assert gc.get_threshold() == (gc_policy.YOUNG_THRESHOLD, 10, 10)
    policy.freeze_long_lived()  # idempotent: what stop_freezing restores is still the original
    policy.stop_freezing()
    assert gc.get_threshold() == (700, 10, 10)


def test_a_slow_full_collection_is_logged(policy, monkeypatch, caplog):
    monkeypatch.setattr(gc_policy, "SLOW_COLLECTION", 0.0)  # every full collection counts as slow
    policy.freeze_long_lived(complete_every=3600)
    with caplog.at_level("WARNING", logger="pyk8s.gc_policy"):
        gc.collect()
    assert any("full garbage collection took" in r.getMessage() for r in caplog.records)
    policy.freeze_long_lived(complete_every=0)
    with caplog.at_level("WARNING", logger="pyk8s.gc_policy"):
        gc.collect()
    assert "complete garbage collection took" in caplog.records[-1].getMessage()


def test_a_complete_collection_that_finds_nothing_waits_twice_as_long_next_time(policy):
    import time

    gc.collect()  # whatever garbage the test run left, gone first
    policy.freeze_long_lived(complete_every=0.001)
    time.sleep(0.002)
    gc.collect()  # complete (its interval has passed), and finds nothing
    assert gc_policy._policy is not None and gc_policy._policy.complete_every == 0.002
    garbage = [Node() for _ in range(gc_policy.COMPLETE_WORTHWHILE)]
    for n in garbage:
        n.other = n  # a thousand cycles, alive at the freeze of the next collection
    gc.collect()
    del garbage, n
    time.sleep(0.005)
    gc.collect()  # complete again: it reclaims them, so the interval goes back to its base
    assert gc_policy._policy.complete_every == 0.001


def test_an_event_loop_runs_short_full_collections(policy):
    import asyncio

    full = []

    def count(phase: str, info: dict) -> None:
        if phase == "stop" and info["generation"] == 2:
            full.append(1)

    async def main() -> None:
        policy.freeze_long_lived(complete_every=3600, full_every=0.05)
        await asyncio.sleep(0.5)

    gc.callbacks.append(count)
    try:
        asyncio.run(main())
    finally:
        gc.callbacks.remove(count)
    assert len(full) >= 4
