"""The storage suite's store: a fresh one on each backend (SQLite, and the session's real etcd)."""

from __future__ import annotations

import pytest

from .backends import BACKENDS, open_store


@pytest.fixture(params=BACKENDS)
async def store(request):
    etcd = request.getfixturevalue("etcd_server") if request.param == "etcd" else None
    async with open_store(request.param, etcd) as s:
        yield s
