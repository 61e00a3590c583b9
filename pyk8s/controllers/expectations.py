"""What a controller is still waiting to see (upstream: pkg/controller/controller_utils.go, ControllerExpectations
and UIDTrackingControllerExpectations).

A controller that creates or deletes pods acts on its informer's cache, which lags its own writes. Without
expectations, the next sync would see the old count and create (or delete) the same pods again. So before acting,
a controller records how many creations and which deletions it expects for its owner; the pod event handlers
lower those counts as the informer observes them; and the owner's next sync manages replicas only once the
expectations are met, or after `EXPECTATIONS_TIMEOUT` (a lost watch event must not block the owner forever).
Status is still updated while expectations are pending.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

# Upstream's ExpectationsTimeout: after this long, unmet expectations no longer hold an owner back.
EXPECTATIONS_TIMEOUT = 5 * 60.0


@dataclass
class _Expectation:
    add: int
    delete: int
    timestamp: float

    def fulfilled(self) -> bool:
        # Counts can go below zero: an observation may arrive before the expectation is raised.
        return self.add <= 0 and self.delete <= 0


@dataclass
class ControllerExpectations:
    """Per owner key (`namespace/name`): how many creations and deletions are still unobserved."""

    clock: Callable[[], float] = time.monotonic
    _records: dict[str, _Expectation] = field(default_factory=dict)

    def get(self, key: str) -> tuple[int, int] | None:
        """(creations, deletions) still expected for `key`, or None if nothing was ever expected."""
        exp = self._records.get(key)
        return None if exp is None else (exp.add, exp.delete)

    def satisfied(self, key: str) -> bool:
        """Whether the owner may act: nothing pending, the record expired, or no record (a new owner, or one
        this controller never acted for)."""
        exp = self._records.get(key)
        if exp is None:
            return True
        if exp.fulfilled():
            return True
        if self.clock() - exp.timestamp > EXPECTATIONS_TIMEOUT:
            log.info("expectations of %s expired: still expecting %d creation(s), %d deletion(s)", key, exp.add,
                     exp.delete)  # fmt: skip
            return True
        return False

    def set(self, key: str, add: int, delete: int) -> None:
        self._records[key] = _Expectation(add, delete, self.clock())

    def expect_creations(self, key: str, n: int) -> None:
        self.set(key, n, 0)

    def expect_deletions(self, key: str, n: int) -> None:
        self.set(key, 0, n)

    def lower(self, key: str, add: int, delete: int) -> None:
        exp = self._records.get(key)
        if exp is not None:
            exp.add -= add
            exp.delete -= delete

    def raise_(self, key: str, add: int, delete: int) -> None:
        exp = self._records.get(key)
        if exp is not None:
            exp.add += add
            exp.delete += delete

    def creation_observed(self, key: str) -> None:
        self.lower(key, 1, 0)

    def deletion_observed(self, key: str) -> None:
        self.lower(key, 0, 1)

    def delete(self, key: str) -> None:
        self._records.pop(key, None)


@dataclass
class UIDTrackingControllerExpectations:
    """Expectations that also remember which pods (by `namespace/name`) are expected to go, so that a pod's
    deletion is counted once, whether it is seen first as a deletionTimestamp update or as the delete itself."""

    expectations: ControllerExpectations = field(default_factory=ControllerExpectations)
    _deleting: dict[str, set[str]] = field(default_factory=dict)

    def get(self, key: str) -> tuple[int, int] | None:
        return self.expectations.get(key)

    def satisfied(self, key: str) -> bool:
        return self.expectations.satisfied(key)

    def expect_creations(self, key: str, n: int) -> None:
        self.expectations.expect_creations(key, n)

    def creation_observed(self, key: str) -> None:
        self.expectations.creation_observed(key)

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        keys = set(pod_keys)
        if self._deleting.get(key):
            # Upstream logs this too: the previous deletions were never all observed (expired expectations).
            log.info("%s: clobbering the deletions still expected (%d) with %d new ones", key,
                     len(self._deleting[key]), len(keys))  # fmt: skip
        self._deleting[key] = keys
        self.expectations.expect_deletions(key, len(keys))

    def deletion_observed(self, key: str, pod_key: str) -> None:
        pending = self._deleting.get(key)
        if pending and pod_key in pending:
            pending.discard(pod_key)
            self.expectations.deletion_observed(key)

    def delete(self, key: str) -> None:
        self._deleting.pop(key, None)
        self.expectations.delete(key)
