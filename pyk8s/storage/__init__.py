"""Durable state with etcd semantics: one protocol (`Storage`), one implementation of its semantics
(`Store`), two backends (`SqliteKV` embedded, `EtcdKV`). See `interface` for the contract."""

from .errors import (
    ConflictError,
    CorruptObjectError,
    GoneError,
    InvalidContinueError,
    InvalidKeyError,
    InvalidObjectError,
    InvalidRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    RequestTooLargeError,
    StorageError,
    StorageUnavailableError,
    StoreLockedError,
    TooLargeResourceVersionError,
)
from .factory import default_data_dir, kv_from_url, open_storage
from .interface import (
    ADDED,
    BOOKMARK,
    DELETED,
    KV,
    MODIFIED,
    ListResult,
    Preconditions,
    Storage,
    Watch,
    WatchEvent,
)
from .store import Store

__all__ = [
    "ADDED",
    "BOOKMARK",
    "DELETED",
    "KV",
    "MODIFIED",
    "ConflictError",
    "CorruptObjectError",
    "GoneError",
    "InvalidContinueError",
    "InvalidKeyError",
    "InvalidObjectError",
    "InvalidRevisionError",
    "KeyExistsError",
    "KeyNotFoundError",
    "ListResult",
    "Preconditions",
    "RequestTooLargeError",
    "Storage",
    "StorageError",
    "StorageUnavailableError",
    "Store",
    "StoreLockedError",
    "TooLargeResourceVersionError",
    "Watch",
    "WatchEvent",
    "default_data_dir",
    "kv_from_url",
    "open_storage",
]
