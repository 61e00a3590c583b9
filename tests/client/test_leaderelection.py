"""pyk8s.client.leaderelection against a real API server: one leader among several candidates, hand-over on
release and on expiry, a leader cut off from the API server stepping down, never two leaders at once, the
config rules and the Lease's transition count.

All candidates run in this one event loop, so their leading intervals are measured on one monotonic clock
and can be checked for overlap directly. Durations are short (lease 2 s, renew deadline 1 s, retry 0.25 s);
the follower's wait of a whole lease after its last observed renewal is what the timings check.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

from pyk8s.client.events import EventBroadcaster
from pyk8s.client.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock
from pyk8s.client.rest import RESTClient
from pyk8s.testing.proxy import TCPProxy

LEASE = 2.0
RENEW = 1.0
RETRY = 0.25
JITTERED_RETRY = RETRY * (1 + 1.2)  # the longest wait between two tries of a follower
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@dataclass
class Interval:
    identity: str
    start: float
    end: float = float("inf")


@dataclass
class Election:
    """The candidates of one test, the leading intervals they recorded, and the clients to close."""

    namespace: str
    intervals: list[Interval] = field(default_factory=list)
    clients: list[RESTClient] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    leading_now: set[str] = field(default_factory=set)
    max_concurrent: int = 0

    def current(self) -> list[str]:
        return sorted(self.leading_now)

    def assert_never_two_leaders(self) -> None:
        assert self.max_concurrent <= 1, self.intervals
        ordered = sorted(self.intervals, key=lambda i: i.start)
        for before, after in itertools.pairwise(ordered):
            assert before.end <= after.start, f"{before} overlaps {after}"

    async def wait_for_leader(self, timeout: float, *, not_: str | None = None) -> tuple[str, float]:
        """The identity leading next (other than `not_`) and when it started."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for iv in reversed(self.intervals):
                if iv.end == float("inf") and iv.identity != not_:
                    return iv.identity, iv.start
            await asyncio.sleep(0.02)
        raise AssertionError(f"no leader within {timeout}s; intervals {self.intervals}")


class Candidate:
    def __init__(
        self, election: Election, identity: str, client: RESTClient, *, release_on_cancel: bool = True
    ) -> None:
        self.election = election
        self.identity = identity
        self.stopped = asyncio.Event()
        self.stopped_at: float | None = None
        self.new_leaders: list[str] = []
        self.work_cancelled = False
        lock = LeaseLock(client, election.namespace, "lock", identity)
        self.elector = LeaderElector(
            LeaderElectionConfig(
                lock=lock,
                on_started_leading=self._started,
                on_stopped_leading=self._stopped,
                on_new_leader=self.new_leaders.append,
                lease_duration=LEASE,
                renew_deadline=RENEW,
                retry_period=RETRY,
                release_on_cancel=release_on_cancel,
            )
        )
        self.task: asyncio.Task[None] | None = None
        election.candidates.append(self)

    def start(self) -> Candidate:
        self.stopped.clear()
        self.task = asyncio.create_task(self.elector.run(), name=self.identity)
        return self

    async def _started(self) -> None:
        e = self.election
        e.intervals.append(Interval(self.identity, time.monotonic()))
        e.leading_now.add(self.identity)
        e.max_concurrent = max(e.max_concurrent, len(e.leading_now))
        try:
            await asyncio.Event().wait()  # the "work" of a leader: runs until cancelled
        except asyncio.CancelledError:
            self.work_cancelled = True
            raise

    def _stopped(self) -> None:
        # The interval ends only here, after the work was cancelled: the latest point this replica could
        # still act as leader.
        now = time.monotonic()
        self.stopped_at = now
        self.election.leading_now.discard(self.identity)
        for iv in self.election.intervals:
            if iv.identity == self.identity and iv.end == float("inf"):
                iv.end = now
        self.stopped.set()

    async def cancel(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task


@pytest.fixture
async def election(ns):
    e = Election(ns)
    yield e
    for c in e.candidates:
        if c.task is not None and not c.task.done():
            c.task.cancel()
    await asyncio.gather(*(c.task for c in e.candidates if c.task is not None), return_exceptions=True)
    for client in e.clients:
        await client.close()


async def new_client(election: Election, config) -> RESTClient:
    client = RESTClient(config)
    election.clients.append(client)
    return client


async def lease_spec(client: RESTClient, ns: str) -> dict:
    return (await client.get("leases", "lock", ns))["spec"]


# -- config ---------------------------------------------------------------------------------------------


async def test_config_defaults_and_validation(client, ns):
    lock = LeaseLock(client, ns, "lock", "a")

    async def work() -> None:
        pass

    def stopped() -> None:
        pass

    cfg = LeaderElectionConfig(lock=lock, on_started_leading=work, on_stopped_leading=stopped)
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15.0, 10.0, 2.0)
    assert cfg.release_on_cancel is False

    bad = [
        (dict(lease_duration=10, renew_deadline=10), "lease_duration .* must be greater than renew_deadline"),
        (dict(lease_duration=5, renew_deadline=10), "lease_duration .* must be greater than renew_deadline"),
        (dict(renew_deadline=2.4, retry_period=2), r"renew_deadline .* must be greater than retry_period \* 1.2"),
        (dict(lease_duration=0, renew_deadline=-1, retry_period=-1), "lease_duration must be greater than zero"),
        (dict(lease_duration=1, renew_deadline=-1, retry_period=-1), "renew_deadline must be greater than zero"),
        (dict(lease_duration=2, renew_deadline=1, retry_period=0), "retry_period must be greater than zero"),
        (dict(lease_duration=2, renew_deadline=1, retry_period=-0.5), "retry_period must be greater than zero"),
    ]
    for kwargs, message in bad:
        with pytest.raises(ValueError, match=message):
            LeaderElectionConfig(lock=lock, on_started_leading=work, on_stopped_leading=stopped, **kwargs)
    with pytest.raises(ValueError, match="on_started_leading"):
        LeaderElectionConfig(lock=lock, on_started_leading=None, on_stopped_leading=stopped)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_stopped_leading"):
        LeaderElectionConfig(lock=lock, on_started_leading=work, on_stopped_leading=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="identity"):
        LeaseLock(client, ns, "lock", "")


# -- election ---------------------------------------------------------------------------------------------


async def test_one_of_three_leads_and_release_hands_over_quickly(election, client_config, client, ns):
    candidates = [Candidate(election, f"c{i}", await new_client(election, client_config)).start() for i in range(3)]
    leader, _ = await election.wait_for_leader(10)
    # Several renewal rounds later it is still the only one.
    await asyncio.sleep(4 * RETRY + 0.5)
    assert election.current() == [leader]
    by_id = {c.identity: c for c in candidates}
    assert [c.identity for c in candidates if c.elector.is_leader()] == [leader]
    assert all(c.elector.get_leader() == leader for c in candidates)
    assert all(c.new_leaders == [leader] for c in candidates)
    spec = await lease_spec(client, ns)
    assert spec["holderIdentity"] == leader
    assert spec["leaseDurationSeconds"] == 2
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["renewTime"]) and MICRO_TIME.match(spec["acquireTime"])
    assert spec["renewTime"] > spec["acquireTime"]  # renewed since acquired, acquireTime kept

    # Cancel the leader: it stops its work, releases, and the next takes over well before a lease runs out.
    old = by_id[leader]
    cancelled_at = time.monotonic()
    await old.cancel()
    assert old.work_cancelled and old.stopped.is_set()
    assert not old.elector.is_leader()
    assert (await lease_spec(client, ns))["holderIdentity"] != leader
    nxt, started = await election.wait_for_leader(LEASE, not_=leader)
    assert started - cancelled_at < LEASE, "a released lease is taken at the next try, not after expiry"
    spec = await lease_spec(client, ns)
    assert spec["holderIdentity"] == nxt
    assert spec["leaseTransitions"] == 1
    await asyncio.sleep(2 * RETRY)
    assert election.current() == [nxt]
    assert by_id[next(c for c in by_id if c not in (leader, nxt))].new_leaders[-1] == nxt
    election.assert_never_two_leaders()


async def test_killed_leader_is_replaced_after_lease_duration(election, client_config, client, ns):
    a = Candidate(election, "a", await new_client(election, client_config), release_on_cancel=False).start()
    b = Candidate(election, "b", await new_client(election, client_config), release_on_cancel=False).start()
    leader, _ = await election.wait_for_leader(10)
    await asyncio.sleep(3 * RETRY)  # let the follower observe a few renewals
    old, follower = (a, b) if leader == "a" else (b, a)
    killed_at = time.monotonic()
    await old.cancel()  # no release: the lease still names it and simply stops being renewed
    assert (await lease_spec(client, ns))["holderIdentity"] == old.identity
    nxt, started = await election.wait_for_leader(LEASE + 5, not_=old.identity)
    assert nxt == follower.identity
    waited = started - killed_at
    # The follower waits a whole lease after the last renewal it saw; that renewal was at most about one
    # retry period before the kill.
    assert LEASE - RETRY - 0.5 <= waited <= LEASE + 2 * JITTERED_RETRY + 2.0, waited
    spec = await lease_spec(client, ns)
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == (follower.identity, 1)
    election.assert_never_two_leaders()


async def test_partitioned_leader_steps_down_without_overlap(election, client_config, client, ns):
    target = urlsplit(client_config.server)
    proxy = await TCPProxy(target.hostname or "127.0.0.1", target.port or 443).start()
    try:
        via_proxy = await new_client(election, client_config.with_options(server=proxy.url))
        a = Candidate(election, "a", via_proxy, release_on_cancel=False).start()
        assert (await election.wait_for_leader(10))[0] == "a"
        others = [Candidate(election, n, await new_client(election, client_config)).start() for n in ("b", "c")]
        await asyncio.sleep(4 * RETRY)
        assert election.current() == ["a"]
        assert all(o.elector.get_leader() == "a" for o in others)

        cut_at = time.monotonic()
        proxy.partition()  # a black hole: a's requests are accepted and never answered
        # a cannot renew: it gives up within the renew deadline (from its last success) and run() returns.
        assert a.task is not None
        await asyncio.wait_for(a.task, RENEW + RETRY + 3)
        assert a.work_cancelled and a.stopped_at is not None
        assert a.stopped_at - cut_at <= RENEW + 0.5, a.stopped_at - cut_at
        assert not a.elector.is_leader()

        nxt, started = await election.wait_for_leader(LEASE + 5, not_="a")
        assert nxt in ("b", "c")
        assert started > a.stopped_at
        spec = await lease_spec(client, ns)
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == (nxt, 1)

        # Healed, a runs again as a candidate: it sees the new leader and stays a follower.
        proxy.heal()
        a.start()
        deadline = time.monotonic() + 10
        while a.elector.get_leader() != nxt and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert a.elector.get_leader() == nxt
        assert a.new_leaders[-1] == nxt
        await asyncio.sleep(4 * RETRY)
        assert election.current() == [nxt]
        election.assert_never_two_leaders()
    finally:
        await proxy.close()


async def test_lease_transitions_count_holder_changes(election, client_config, client, ns):
    a = Candidate(election, "a", await new_client(election, client_config))
    b = Candidate(election, "b", await new_client(election, client_config))
    a.start()
    assert (await election.wait_for_leader(10))[0] == "a"
    first = await lease_spec(client, ns)
    assert (first["holderIdentity"], first["leaseTransitions"]) == ("a", 0)
    b.start()
    await asyncio.sleep(3 * RETRY)
    renewed = await lease_spec(client, ns)
    # Renewals move renewTime only.
    assert renewed["acquireTime"] == first["acquireTime"] and renewed["leaseTransitions"] == 0
    assert renewed["renewTime"] > first["renewTime"]

    expected = 0
    for old, new in ((a, b), (b, a), (a, b)):
        await old.cancel()
        assert (await election.wait_for_leader(LEASE, not_=old.identity))[0] == new.identity
        expected += 1
        spec = await lease_spec(client, ns)
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == (new.identity, expected)
        assert spec["acquireTime"] != first["acquireTime"]
        old.start()  # back as a follower
        await asyncio.sleep(2 * RETRY)
    assert election.current() == ["b"]
    election.assert_never_two_leaders()


async def test_stopped_callback_runs_even_without_leading(election, client_config, ns):
    """As upstream, on_stopped_leading runs whenever run() ends — here for a follower that is cancelled."""
    a = Candidate(election, "a", await new_client(election, client_config)).start()
    await election.wait_for_leader(10)
    b = Candidate(election, "b", await new_client(election, client_config)).start()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(b.stopped.wait()), 2 * RETRY)
    assert not b.stopped.is_set()
    await b.cancel()
    assert b.stopped.is_set() and not b.work_cancelled
    assert b.new_leaders == ["a"]
    assert election.current() == ["a"] and a.elector.is_leader()


async def test_leadership_changes_are_recorded_as_events(client, ns):
    async with EventBroadcaster(client) as broadcaster:
        recorder = broadcaster.new_core_recorder("test-elector")
        started = asyncio.Event()

        async def lead() -> None:
            started.set()
            await asyncio.Event().wait()

        lock = LeaseLock(client, ns, "lock", "a", event_recorder=recorder)
        cfg = LeaderElectionConfig(
            lock=lock,
            on_started_leading=lead,
            on_stopped_leading=lambda: None,
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            release_on_cancel=True,
        )
        task = asyncio.create_task(LeaderElector(cfg).run())
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    items = (await client.list("events", ns, field_selector="involvedObject.name=lock"))["items"]
    assert sorted(e["message"] for e in items) == ["a became leader", "a stopped leading"]
    assert {(e["involvedObject"]["kind"], e["reason"]) for e in items} == {("Lease", "LeaderElection")}
