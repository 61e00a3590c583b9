"""Errors raised by the storage layer.

They mirror upstream's storage errors (k8s.io/apiserver/pkg/storage/errors.go): they name the key and the
revision involved but know nothing of API groups; the registry turns them into Kubernetes `Status` errors
(NotFound, AlreadyExists, Conflict, Gone, BadRequest, Timeout, InternalError).
"""

from __future__ import annotations


class StorageError(Exception):
    """Base class of every error the store raises on purpose."""

    def __init__(self, message: str, *, key: str = "") -> None:
        super().__init__(message)
        self.key = key


class KeyNotFoundError(StorageError):
    """The key does not exist (404 NotFound)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key not found: {key}", key=key)


class KeyExistsError(StorageError):
    """A create found the key already present (409 AlreadyExists)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key exists: {key}", key=key)


class ConflictError(StorageError):
    """A precondition (uid or resourceVersion) did not hold (409 Conflict)."""


class GoneError(StorageError):
    """The requested revision has been compacted away (410 Gone / Expired)."""

    def __init__(self, message: str, *, revision: int, compacted_revision: int = 0, key: str = "") -> None:
        super().__init__(message, key=key)
        self.revision = revision
        self.compacted_revision = compacted_revision


class TooLargeResourceVersionError(StorageError):
    """The requested revision is newer than the store's current revision (upstream: 504, reason Timeout)."""

    def __init__(self, revision: int, current: int, *, key: str = "") -> None:
        super().__init__(
            f"Too large resource version: {revision}, current: {current}",
            key=key,
        )
        self.revision = revision
        self.current = current


class InvalidKeyError(StorageError, ValueError):
    """The key is malformed or outside the store's prefix (a caller's bug: 400 or 500)."""


class InvalidRevisionError(StorageError, ValueError):
    """A negative or otherwise meaningless revision (400 BadRequest)."""


class InvalidObjectError(StorageError, ValueError):
    """The value cannot be stored: not a JSON object, not serialisable, or a resourceVersion on create."""


class InvalidContinueError(StorageError, ValueError):
    """A continue token that cannot be decoded or points outside the listed prefix (400 BadRequest)."""


class RequestTooLargeError(StorageError):
    """The object is larger than the store takes in one write (etcd's --max-request-bytes, 1.5 MiB by default).
    The message is etcd's, as upstream passes it on."""

    def __init__(self, *, key: str = "") -> None:
        super().__init__("etcdserver: request is too large", key=key)


class CorruptObjectError(StorageError):
    """Stored bytes that do not decode as a JSON object (500 InternalError)."""


class StoreLockedError(StorageError):
    """The data directory is already opened by another process."""


class StorageUnavailableError(StorageError):
    """The backend cannot be reached (the etcd cluster is down, the SQLite file vanished)."""
