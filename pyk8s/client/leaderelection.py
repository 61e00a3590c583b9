"""Leader election over a coordination.k8s.io/v1 Lease (upstream: client-go tools/leaderelection and its
resourcelock.LeaseLock).

Several replicas of a component run a `LeaderElector` against one Lease; at most one of them leads at a
time, and the others stand by and take over when it stops renewing. The pieces keep upstream's names:

- `LeaderElectionRecord`: the election state as a Lease spec holds it (holderIdentity, leaseDurationSeconds,
  acquireTime, renewTime, leaseTransitions).
- `LeaseLock` (upstream resourcelock.LeaseLock): reads, creates and updates that Lease. Updates are a
  compare-and-swap on the Lease's resourceVersion, so two candidates can never both win the same round.
- `LeaderElectionConfig` (upstream LeaderElectionConfig + LeaderCallbacks): durations with upstream's
  defaults (lease 15 s, renew deadline 10 s, retry period 2 s) and validation, the callbacks, and
  `release_on_cancel` (upstream ReleaseOnCancel).
- `LeaderElector` (upstream LeaderElector): `run()` acquires (retrying every retry period with jitter
  factor 1.2, upstream JitterFactor), starts `on_started_leading` as a task, renews, and returns when
  leadership is lost; `is_leader()` and `get_leader()` (upstream IsLeader, GetLeader).

Timing follows upstream's rule that no machine trusts another's clock: the timestamps in the record are
only compared for change, never read as times. A candidate notes, on its own monotonic clock, when it last
saw the record change, and takes over only when it has stayed unchanged for the record's
leaseDurationSeconds since then (upstream isLeaseValid), or at once when holderIdentity is empty (a
released lease). The leader's renewal is bounded from its side: it gives up when it has not renewed within
renew_deadline of the start of its last successful renewal. Upstream starts each renewal round's deadline
a retry period after the previous success instead; anchoring it at the last success's start makes the
guarantee independent of the retry period and of request latency — any record a follower saw was written
after that start, so the follower's lease_duration ends after the leader has let go, because
renew_deadline < lease_duration.

When leadership ends, the work started by `on_started_leading` is cancelled and awaited before
`on_stopped_leading` runs and before the lease is released, so a successor never starts while that work
is still running here. As upstream, `on_stopped_leading` runs whenever `run()` ends, also when this
candidate never led.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..api import errors
from ..api.meta import rfc3339_micro
from .rest import RESTClient

log = logging.getLogger(__name__)

__all__ = [
    "JITTER_FACTOR",
    "EventRecorderLike",
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
]

# upstream JitterFactor: the acquire loop waits retry_period * [1, 1 + 1.2) between tries.
JITTER_FACTOR = 1.2

StartedLeading = Callable[[], Awaitable[None]]
StoppedLeading = Callable[[], Awaitable[None] | None]
NewLeader = Callable[[str], Awaitable[None] | None]


@dataclass(frozen=True)
class LeaderElectionRecord:
    """The election state as it lives in a Lease's spec. Times are the wire strings, kept as written:
    they are compared for change only, never interpreted."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0

    @classmethod
    def from_lease_spec(cls, spec: dict[str, Any] | None) -> LeaderElectionRecord:
        spec = spec or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_lease_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        }


class EventRecorderLike(Protocol):
    """What `LeaseLock` needs to report leadership changes: `events.CoreEventRecorder` fits."""

    def eventf(self, obj: Mapping[str, Any] | None, type: str, reason: str, message_fmt: str, *args: Any) -> None: ...


class LeaseLock:
    """The lock a `LeaderElector` contends for: one Lease, read and written through `client`.

    The last Lease read or written is kept, so `update` sends it back with its resourceVersion: a write
    based on a stale read fails with `Conflict` instead of overwriting someone else's win. With an
    `event_recorder`, "became leader" and "stopped leading" are recorded as LeaderElection events on the
    Lease (upstream ResourceLockConfig.EventRecorder).
    """

    def __init__(
        self,
        client: RESTClient,
        namespace: str,
        name: str,
        identity: str,
        *,
        event_recorder: EventRecorderLike | None = None,
    ) -> None:
        if not identity:
            raise ValueError("identity must not be empty")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.event_recorder = event_recorder
        self._lease: dict[str, Any] | None = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> LeaderElectionRecord:
        """The current record; raises `NotFound` when the Lease does not exist yet."""
        self._lease = await self.client.get("leases", self.name, self.namespace)
        return LeaderElectionRecord.from_lease_spec(self._lease.get("spec"))

    async def create(self, record: LeaderElectionRecord) -> None:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_lease_spec(),
        }
        self._lease = await self.client.create("leases", lease, self.namespace)

    async def update(self, record: LeaderElectionRecord) -> None:
        """Write `record` over the Lease last seen; `Conflict` if it changed since."""
        if self._lease is None:
            raise RuntimeError(f"lease {self.describe()} not read yet: call get or create first")
        # Only the election fields are ours; anything else in the spec (preferredHolder, strategy) stays.
        lease = {**self._lease, "spec": {**(self._lease.get("spec") or {}), **record.to_lease_spec()}}
        self._lease = await self.client.update("leases", lease, self.namespace)

    def record_event(self, what: str) -> None:
        if self.event_recorder is None:
            return
        meta = (self._lease or {}).get("metadata") or {"name": self.name, "namespace": self.namespace}
        subject = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta}
        try:
            self.event_recorder.eventf(subject, "Normal", "LeaderElection", "%s %s", self.identity, what)
        except Exception:
            log.exception("%s: recording the %r event failed", self.identity, what)


@dataclass
class LeaderElectionConfig:
    """What a `LeaderElector` needs (upstream LeaderElectionConfig and LeaderCallbacks).

    `on_started_leading` is a coroutine function, run as a task when leadership is won and cancelled when
    it is lost. `on_stopped_leading()` and `on_new_leader(identity)` may be plain functions or coroutine
    functions; `on_new_leader` fires whenever the observed holder changes, including the first one seen.
    Durations are seconds; see `validate` for the rules between them.
    """

    lock: LeaseLock
    on_started_leading: StartedLeading
    on_stopped_leading: StoppedLeading
    on_new_leader: NewLeader | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = False

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Upstream NewLeaderElector's checks: lease_duration > renew_deadline > 1.2 * retry_period,
        all positive, and the two required callbacks present. Raises ValueError."""
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"lease_duration ({self.lease_duration}s) must be greater than renew_deadline ({self.renew_deadline}s)"
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(
                f"renew_deadline ({self.renew_deadline}s) must be greater than retry_period * {JITTER_FACTOR} "
                f"({JITTER_FACTOR * self.retry_period:g}s)"
            )
        if self.lease_duration <= 0:
            raise ValueError("lease_duration must be greater than zero")
        if self.renew_deadline <= 0:
            raise ValueError("renew_deadline must be greater than zero")
        if self.retry_period <= 0:
            raise ValueError("retry_period must be greater than zero")
        if self.on_started_leading is None:
            raise ValueError("on_started_leading callback must not be None")
        if self.on_stopped_leading is None:
            raise ValueError("on_stopped_leading callback must not be None")
        if self.lock is None:
            raise ValueError("lock must not be None")


class LeaderElector:
    """One candidate. `await run()` until it returns (leadership lost) or cancel it (shutdown)."""

    def __init__(self, config: LeaderElectionConfig, *, clock: Callable[[], float] = time.monotonic) -> None:
        config.validate()
        self.config = config
        self._clock = clock
        self._observed = LeaderElectionRecord()
        # When `_observed` last changed, on our clock (upstream observedTime).
        self._observed_time = -math.inf
        self._reported_leader = ""
        self._leading = False
        # Start, on our clock, of the last renewal that succeeded: the leader's deadline runs from here.
        self._last_renew_start = -math.inf

    @property
    def identity(self) -> str:
        return self.config.lock.identity

    def get_leader(self) -> str:
        """The holder last observed ("" before any is seen)."""
        return self._observed.holder_identity

    def is_leader(self) -> bool:
        """Whether this candidate currently leads: it won the lease and has not lost it since."""
        return self._leading and self._holds_record()

    def _holds_record(self) -> bool:
        return self._observed.holder_identity == self.identity

    # -- the loops --------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Acquire, lead, renew; return once leadership is lost. Cancelling it stops the candidate (and
        releases the lease first when `release_on_cancel`); the cancellation is re-raised."""
        leader_task: asyncio.Task[None] | None = None
        try:
            await self._acquire()
            self._leading = True
            leader_task = asyncio.create_task(self._lead(), name=f"leading:{self.identity}")
            await self._renew()
        finally:
            was_leading = self._leading
            self._leading = False
            if leader_task is not None:
                await _cancel_and_wait(leader_task)
            if was_leading:
                self.config.lock.record_event("stopped leading")
            await self._call(self.config.on_stopped_leading)
            if was_leading and self.config.release_on_cancel:
                await self._release()

    async def _lead(self) -> None:
        try:
            await self.config.on_started_leading()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: on_started_leading failed", self.identity)

    async def _acquire(self) -> None:
        desc = self.config.lock.describe()
        log.info("%s: attempting to acquire leader lease %s", self.identity, desc)
        while True:
            ok = await self._try_within(self.config.renew_deadline)
            self._maybe_report_transition()
            if ok:
                self.config.lock.record_event("became leader")
                log.info("%s: successfully acquired lease %s", self.identity, desc)
                return
            period = self.config.retry_period
            await asyncio.sleep(period + random.random() * JITTER_FACTOR * period)

    async def _renew(self) -> None:
        desc = self.config.lock.describe()
        while True:
            await asyncio.sleep(self.config.retry_period)
            # Keep trying until the deadline counted from the start of the last success.
            while True:
                remaining = self._last_renew_start + self.config.renew_deadline - self._clock()
                if remaining <= 0:
                    self._maybe_report_transition()
                    log.info("%s: failed to renew lease %s: deadline exceeded", self.identity, desc)
                    return
                ok = await self._try_within(remaining)
                self._maybe_report_transition()
                if ok:
                    break
                if not self._holds_record():
                    # Someone else holds a lease that is valid in our eyes: we lost it.
                    log.info("%s: lease %s taken by %s", self.identity, desc, self._observed.holder_identity)
                    return
                remaining = self._last_renew_start + self.config.renew_deadline - self._clock()
                await asyncio.sleep(min(self.config.retry_period, max(0.0, remaining)))

    async def _try_within(self, seconds: float) -> bool:
        start = self._clock()
        try:
            async with asyncio.timeout(seconds):
                ok = await self._try_acquire_or_renew()
        except TimeoutError:
            log.info("%s: lease %s: no answer within %.2fs", self.identity, self.config.lock.describe(), seconds)
            return False
        except Exception:
            # Whatever went wrong, this round failed; the loops decide what that means.
            log.exception("%s: lease %s: unexpected error", self.identity, self.config.lock.describe())
            return False
        if ok:
            self._last_renew_start = start
        return ok

    async def _try_acquire_or_renew(self) -> bool:
        """One round (upstream tryAcquireOrRenew): True when we hold the lease afterwards."""
        lock = self.config.lock
        now = rfc3339_micro()
        record = LeaderElectionRecord(
            holder_identity=self.identity,
            # Rounded up: a fractional lease must not make followers wait less than we renew for.
            lease_duration_seconds=max(1, math.ceil(self.config.lease_duration)),
            acquire_time=now,
            renew_time=now,
        )

        # 1. The leader's fast path: write over the Lease we last wrote, without reading it first.
        if self._holds_record() and self._lease_valid():
            fast = LeaderElectionRecord(
                holder_identity=record.holder_identity,
                lease_duration_seconds=record.lease_duration_seconds,
                acquire_time=self._observed.acquire_time,
                renew_time=now,
                leader_transitions=self._observed.leader_transitions,
            )
            try:
                await lock.update(fast)
            except (errors.StatusError, ConnectionError, RuntimeError) as err:
                log.info("%s: optimistic lease update failed (%s), reading it again", self.identity, err)
            else:
                self._set_observed(fast)
                return True

        # 2. Read the record, or create it.
        try:
            current = await lock.get()
        except errors.NotFound:
            try:
                await lock.create(record)
            except (errors.StatusError, ConnectionError) as err:
                log.info("%s: creating lease %s failed: %s", self.identity, lock.describe(), err)
                return False
            self._set_observed(record)
            return True
        except (errors.StatusError, ConnectionError) as err:
            log.info("%s: reading lease %s failed: %s", self.identity, lock.describe(), err)
            return False

        # 3. Note a change (on our clock), and stand back while someone else's lease is still valid.
        if current != self._observed:
            self._set_observed(current)
        if current.holder_identity and self._lease_valid() and not self._holds_record():
            log.debug("%s: lease held by %s and not yet expired", self.identity, current.holder_identity)
            return False

        # 4. Renew (keeping acquireTime and the transition count) or take over (counting a transition).
        if self._holds_record():
            record = LeaderElectionRecord(
                holder_identity=record.holder_identity,
                lease_duration_seconds=record.lease_duration_seconds,
                acquire_time=current.acquire_time,
                renew_time=now,
                leader_transitions=current.leader_transitions,
            )
        else:
            record = LeaderElectionRecord(
                holder_identity=record.holder_identity,
                lease_duration_seconds=record.lease_duration_seconds,
                acquire_time=now,
                renew_time=now,
                leader_transitions=current.leader_transitions + 1,
            )
        try:
            await lock.update(record)
        except (errors.StatusError, ConnectionError) as err:
            log.info("%s: updating lease %s failed: %s", self.identity, lock.describe(), err)
            return False
        self._set_observed(record)
        return True

    async def _release(self) -> None:
        """Hand the lease back (upstream release): empty holder and a one-second duration, so the next
        candidate takes over at its next try."""
        if not self._holds_record():
            return
        now = rfc3339_micro()
        record = LeaderElectionRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            leader_transitions=self._observed.leader_transitions,
        )
        lock = self.config.lock
        try:
            async with asyncio.timeout(self.config.renew_deadline):
                for _ in range(3):
                    try:
                        await lock.update(record)
                        break
                    except errors.Conflict:
                        # A renewal cut short by the cancellation may have landed after all, leaving our
                        # copy stale. Read again: as long as the Lease still names us nobody else can have
                        # taken it, and releasing over the fresh copy is safe.
                        current = await lock.get()
                        if current.holder_identity != self.identity:
                            self._set_observed(current)
                            return
                else:
                    raise errors.Conflict(409, "Conflict", "the lease kept changing")
        except (errors.StatusError, ConnectionError, RuntimeError, TimeoutError) as err:
            log.warning("%s: failed to release lease %s: %s", self.identity, lock.describe(), err)
            return
        self._set_observed(record)
        log.info("%s: released lease %s", self.identity, lock.describe())

    # -- bookkeeping ------------------------------------------------------------------------------------

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        self._observed = record
        self._observed_time = self._clock()

    def _lease_valid(self) -> bool:
        """Whether the observed lease has not yet run out, on our own clock (upstream isLeaseValid)."""
        duration = self._observed.lease_duration_seconds or self.config.lease_duration
        return self._observed_time + duration > self._clock()

    def _maybe_report_transition(self) -> None:
        holder = self._observed.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if self.config.on_new_leader is not None:
            # Upstream runs it on its own goroutine: a slow callback must not delay renewal.
            task = asyncio.ensure_future(self._call(self.config.on_new_leader, holder))
            _background.add(task)
            task.add_done_callback(_background.discard)

    async def _call(self, fn: Callable[..., Awaitable[None] | None], *args: Any) -> None:
        try:
            result = fn(*args)
            if inspect.isawaitable(result):
                await result
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: leader election callback %s failed", self.identity, getattr(fn, "__name__", fn))


# Tasks started for callbacks, held so they are not garbage-collected while running.
_background: set[asyncio.Future[None]] = set()


async def _cancel_and_wait(task: asyncio.Task[None]) -> None:
    """Cancel `task` and wait until it has finished, even if we are being cancelled ourselves."""
    task.cancel()
    try:
        await asyncio.shield(asyncio.wait({task}))
    except asyncio.CancelledError:
        # Cancelled again while waiting: still let the task finish first, then propagate.
        await asyncio.wait({task})
        raise
