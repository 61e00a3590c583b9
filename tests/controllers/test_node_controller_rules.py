"""The arithmetic of the node controllers, table- and property-tested: zone states and their eviction rates, the
per-zone rate-limited taint queue, toleration times, the CIDR set, and the pod GC's order."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyk8s.controllers.nodeipam import mask_sizes, parse_cluster_cidrs
from pyk8s.controllers.nodeipam.cidrset import CIDRSet, CIDRSetError, NoCIDRsRemaining
from pyk8s.controllers.nodelifecycle.rate_limited_queue import RateLimitedTimedQueue, TimedValue
from pyk8s.controllers.nodelifecycle.zones import EvictionRates, ZoneState
from pyk8s.controllers.podgc import terminated_to_delete
from pyk8s.controllers.tainteviction.taint_eviction import get_matching_tolerations, get_min_toleration_time

RATES = EvictionRates()


def conditions(ready: int, not_ready: int, missing: int = 0) -> list[dict[str, Any] | None]:
    return (
        [{"type": "Ready", "status": "True"}] * ready
        + [{"type": "Ready", "status": "Unknown"}] * not_ready
        + [None] * missing
    )


@pytest.mark.parametrize(
    ("ready", "not_ready", "missing", "state"),
    [
        (0, 1, 0, ZoneState.FULL_DISRUPTION),
        (0, 0, 1, ZoneState.FULL_DISRUPTION),  # a node with no Ready condition counts as not ready
        (1, 0, 0, ZoneState.NORMAL),
        (1, 2, 0, ZoneState.NORMAL),  # two not-ready nodes never make a zone unhealthy
        (2, 3, 0, ZoneState.PARTIAL_DISRUPTION),  # 3/5 = 0.6 >= 0.55
        (9, 11, 0, ZoneState.PARTIAL_DISRUPTION),  # 11/20 = 0.55 exactly: unhealthy
        (10, 10, 0, ZoneState.NORMAL),  # 0.5
        (100, 3, 0, ZoneState.NORMAL),
    ],
)
def test_zone_state_table(ready: int, not_ready: int, missing: int, state: ZoneState) -> None:
    unhealthy, got = RATES.compute_zone_state(conditions(ready, not_ready, missing))
    assert (unhealthy, got) == (not_ready + missing, state)


@given(st.integers(0, 200), st.integers(0, 200))
def test_zone_state_properties(ready: int, not_ready: int) -> None:
    if ready + not_ready == 0:
        return
    unhealthy, state = RATES.compute_zone_state(conditions(ready, not_ready))
    assert unhealthy == not_ready
    assert (state == ZoneState.FULL_DISRUPTION) == (ready == 0)
    if state == ZoneState.PARTIAL_DISRUPTION:
        assert not_ready > 2 and not_ready / (ready + not_ready) >= 0.55 - 1e-7


@pytest.mark.parametrize(
    ("state", "size", "qps"),
    [
        (ZoneState.NORMAL, 3, 0.1),
        (ZoneState.FULL_DISRUPTION, 3, 0.1),  # a single fully disrupted zone among healthy ones: normal rate
        (ZoneState.PARTIAL_DISRUPTION, 50, 0.0),  # small zone: evictions stop
        (ZoneState.PARTIAL_DISRUPTION, 51, 0.01),  # large zone: the secondary rate
        (ZoneState.INITIAL, 10, None),
    ],
)
def test_rate_for_zone_state(state: ZoneState, size: int, qps: float | None) -> None:
    assert RATES.qps_for(state, size) == qps


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def drain(q: RateLimitedTimedQueue, answer: tuple[bool, float] = (True, 0.0)) -> list[str]:
    async def fn(_v: TimedValue) -> tuple[bool, float]:
        return answer

    return [v.value for v in asyncio.run(q.try_process(fn))]


def test_rate_limited_queue_lets_one_through_per_token() -> None:
    clock = FakeClock()
    q = RateLimitedTimedQueue(0.1, clock=clock)  # --node-eviction-rate, burst 1
    for n in ("a", "b", "c"):
        assert q.add(n)
    assert not q.add("a")  # already queued
    assert drain(q) == ["a"]  # the one token of the burst
    assert drain(q) == []
    clock.t += 10.0  # one token per 10 s
    assert drain(q) == ["b"]
    clock.t += 5.0
    assert drain(q) == []
    clock.t += 5.0
    assert drain(q) == ["c"]
    # Processed values stay known: not queued again until removed.
    assert not q.add("a") and "a" in q
    assert q.remove("a") and q.add("a")


def test_rate_limited_queue_retries_after_the_delay_and_swaps_limiters() -> None:
    clock = FakeClock()
    q = RateLimitedTimedQueue(100.0, clock=clock)
    q.add("a")
    assert drain(q, (False, 2.0)) == ["a"]  # failed: back in 2 s
    clock.t += 1.0
    assert drain(q) == []
    clock.t += 1.1
    assert drain(q) == ["a"]
    q.add("b")
    q.swap_limiter(0)  # full disruption of every zone: nothing passes
    clock.t += 100.0
    assert drain(q) == [] and q.queued() == ["b"]
    q.swap_limiter(100.0)
    clock.t += 1.0
    assert drain(q) == ["b"]
    assert q.remove("b") and not q.remove("b")


TOL = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
TAINT = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
OTHER = {"key": "x", "value": "y", "effect": "NoExecute"}


@pytest.mark.parametrize(
    ("taints", "tolerations", "tolerated", "seconds"),
    [
        ([TAINT], [], False, None),
        ([TAINT], [TOL], True, -1),  # no tolerationSeconds: forever
        ([TAINT], [{**TOL, "tolerationSeconds": 2}], True, 2),
        ([TAINT], [{**TOL, "tolerationSeconds": 0}], True, 0),
        ([TAINT], [{**TOL, "tolerationSeconds": -5}], True, 0),
        ([TAINT, OTHER], [{**TOL, "tolerationSeconds": 30}], False, None),
        ([TAINT, OTHER], [{**TOL, "tolerationSeconds": 30}, {"key": "x", "operator": "Exists", "tolerationSeconds": 7}],
         True, 7),  # the smallest of the tolerations used
        ([TAINT], [{"operator": "Exists"}], True, -1),  # tolerates everything, forever
        ([TAINT], [{**TOL, "tolerationSeconds": 300}, {**TOL, "tolerationSeconds": 1}], True, 300),  # first match
        ([], [], True, 0),
    ],
)  # fmt: skip
def test_toleration_time_table(taints: list[Any], tolerations: list[Any], tolerated: bool, seconds: int | None) -> None:
    ok, used = get_matching_tolerations(taints, tolerations)
    assert ok == tolerated
    if ok:
        assert get_min_toleration_time(used) == seconds


@given(st.lists(st.one_of(st.none(), st.integers(-10, 10_000)), min_size=1, max_size=6))
def test_min_toleration_time_property(seconds: list[int | None]) -> None:
    tolerations = [{**TOL, **({"tolerationSeconds": s} if s is not None else {})} for s in seconds]
    got = get_min_toleration_time(tolerations)
    bounded = [s for s in seconds if s is not None]
    assert got == (-1 if not bounded else max(0, min(bounded)))


def test_cidr_set_allocation_release_occupy_and_exhaustion() -> None:
    s = CIDRSet(ipaddress.ip_network("10.244.0.0/22"), 24)
    assert s.max_cidrs == 4
    got = [str(s.allocate_next()) for _ in range(3)]
    assert got == ["10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"]
    s.release(ipaddress.ip_network("10.244.1.0/24"))
    # Round robin: the next after the last handed out, then the released one.
    assert str(s.allocate_next()) == "10.244.3.0/24"
    assert str(s.allocate_next()) == "10.244.1.0/24"
    with pytest.raises(NoCIDRsRemaining, match="no remaining CIDRs left to allocate"):
        s.allocate_next()
    # Recovery at start: what nodes already hold is occupied, so a fresh set does not hand it out again.
    fresh = CIDRSet(ipaddress.ip_network("10.244.0.0/22"), 24)
    for held in ("10.244.0.0/24", "10.244.2.0/24"):
        fresh.occupy(ipaddress.ip_network(held))
    assert [str(fresh.allocate_next()) for _ in range(2)] == ["10.244.1.0/24", "10.244.3.0/24"]
    fresh.occupy(ipaddress.ip_network("192.168.0.0/24"))  # outside: ignored
    assert fresh.allocated == 4


@given(st.integers(16, 24), st.integers(0, 8), st.lists(st.integers(0, 300), max_size=40))
def test_cidr_set_never_hands_out_a_subnet_twice(cluster_prefix: int, extra: int, releases: list[int]) -> None:
    s = CIDRSet(ipaddress.ip_network(f"10.0.0.0/{cluster_prefix}"), min(32, cluster_prefix + extra))
    held: set[str] = set()
    for i in range(min(s.max_cidrs, 300)):
        c = str(s.allocate_next())
        assert c not in held
        held.add(c)
        if i in releases and held:
            gone = sorted(held)[0]
            held.discard(gone)
            s.release(ipaddress.ip_network(gone))
    assert s.allocated == len(held)


def test_cidr_flags() -> None:
    with pytest.raises(ValueError, match="--cluster-cidr must be set"):
        parse_cluster_cidrs("")
    with pytest.raises(ValueError, match="invalid CIDR"):
        parse_cluster_cidrs("10.0.0.0/33")
    dual = parse_cluster_cidrs("10.244.0.0/16,fd00::/48")
    assert mask_sizes(dual) == [24, 64] and mask_sizes(dual, size_v4=26) == [26, 64]
    with pytest.raises(CIDRSetError, match="too big"):
        CIDRSet(ipaddress.ip_network("10.0.0.0/8"), 25)


def _pod(name: str, created: str, phase: str, reason: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created}, "status": {"phase": phase, "reason": reason}}


def test_terminated_pods_over_the_threshold_go_evicted_first_then_oldest() -> None:
    pods = [
        _pod("a", "2024-01-01T00:00:03Z", "Succeeded"),
        _pod("b", "2024-01-01T00:00:01Z", "Failed"),
        _pod("c", "2024-01-01T00:00:05Z", "Failed", "Evicted"),
        _pod("d", "2024-01-01T00:00:01Z", "Succeeded"),
        _pod("e", "2024-01-01T00:00:00Z", "Running"),
    ]
    assert [p["metadata"]["name"] for p in terminated_to_delete(pods, 2)] == ["c", "b"]
    assert terminated_to_delete(pods, 4) == [] and terminated_to_delete(pods, 0) == []
