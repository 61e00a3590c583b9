"""Shared fixtures: a real etcd for the session, and a store on each backend."""

from __future__ import annotations

import os

import pytest

# Every API server the tests start checks that what it stores is in the form upstream stores (see
# RESTStore.typed): a strategy that writes something else fails the test that made it.
os.environ["PYK8S_VERIFY_TYPED"] = "1"

from pyk8s.testing.etcd import EtcdServer


@pytest.fixture(scope="session")
def etcd_server():
    server = EtcdServer(progress_notify_interval="500ms").start()
    yield server
    server.stop()
