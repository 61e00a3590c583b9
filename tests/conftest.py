"""Shared fixtures: a real etcd for the session, and a store on each backend."""

from __future__ import annotations

import pytest

from pyk8s.testing.etcd import EtcdServer


@pytest.fixture(scope="session")
def etcd_server():
    server = EtcdServer(progress_notify_interval="500ms").start()
    yield server
    server.stop()
