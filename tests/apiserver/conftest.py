"""A real `pyk8s apiserver` process per backend, shared by the session's tests; a fresh namespace per test."""

from __future__ import annotations

import itertools

import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.etcd import EtcdServer

_counter = itertools.count()


@pytest.fixture(scope="session", params=["sqlite", "etcd"])
def cluster(request):
    etcd = EtcdServer().start() if request.param == "etcd" else None
    server = APIServerProcess(etcd_url=etcd.url if etcd else "").start()
    yield server
    server.cleanup()
    if etcd is not None:
        etcd.stop()


@pytest.fixture
def ns(cluster):
    name = f"t{next(_counter)}"
    cluster.create_namespace(name)
    return name
