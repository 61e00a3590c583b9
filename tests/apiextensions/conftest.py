"""A real `pyk8s apiserver` process shared by the CRD tests (SQLite), and a fresh namespace per test."""

from __future__ import annotations

import itertools

import pytest

from pyk8s.testing.cluster import APIServerProcess

_counter = itertools.count()


@pytest.fixture(scope="session")
def crd_cluster():
    server = APIServerProcess().start()
    yield server
    server.cleanup()


@pytest.fixture
def crd_ns(crd_cluster):
    name = f"crd{next(_counter)}"
    crd_cluster.create_namespace(name)
    return name
