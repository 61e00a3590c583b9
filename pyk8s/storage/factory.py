"""Opening a store from a backend URL (upstream: storagebackend/factory).

- `sqlite:///path/to/dir-or-file[?synchronous=FULL]`: the embedded default; a directory holds `state.db`.
- `etcd://host:port[,host:port...]`: an etcd v3 cluster.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl

from .compactor import DEFAULT_COMPACTION_INTERVAL
from .etcd import EtcdKV
from .interface import KV
from .sqlite import sqlite_kv_from_options
from .store import Store


def default_data_dir() -> Path:
    """Where `pyk8s up` keeps state unless told otherwise: $XDG_DATA_HOME/pyk8s or ~/.local/share/pyk8s."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "pyk8s"


def kv_from_url(url: str) -> KV:
    """The backend a URL names (not yet started); ValueError for a URL that names none."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"storage URL {url!r} has no scheme: use sqlite:///path or etcd://host:port")
    rest, _, query = rest.partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    if scheme == "sqlite":
        path = rest or str(default_data_dir())
        return sqlite_kv_from_options(path, options)
    if scheme == "etcd":
        endpoints = [e.strip() for e in rest.strip("/").split(",") if e.strip()]
        if not endpoints:
            raise ValueError(f"storage URL {url!r} names no etcd endpoint")
        for ep in endpoints:
            host, colon, port = ep.rpartition(":")
            if not colon or not host or not port.isdigit():
                raise ValueError(f"etcd endpoint {ep!r} is not host:port")
        if options:
            raise ValueError(f"unknown etcd option(s): {', '.join(sorted(options))}")
        return EtcdKV(endpoints)
    raise ValueError(f"unknown storage scheme {scheme!r}: use sqlite:///path or etcd://host:port")


async def open_storage(url: str, *, compaction_interval: float = DEFAULT_COMPACTION_INTERVAL) -> Store:
    """A started `Store` on the backend `url` names; close it with `await store.close()`."""
    store = Store(kv_from_url(url), compaction_interval=compaction_interval)
    await store.start()
    return store
