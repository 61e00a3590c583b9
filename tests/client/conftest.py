"""A real `pyk8s apiserver` (SQLite) for the client machinery's tests, a REST client per test, and a fresh
namespace per test."""

from __future__ import annotations

import itertools

import pytest

from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.testing.cluster import APIServerProcess

_counter = itertools.count()


@pytest.fixture(scope="session")
def apiserver():
    server = APIServerProcess().start()
    yield server
    server.cleanup()


@pytest.fixture
def client_config(apiserver):
    # No client-side rate limit in tests: they measure behaviour, and client-go's 5 qps would only slow them.
    return load_kubeconfig(str(apiserver.kubeconfig)).with_options(qps=-1)


@pytest.fixture
async def client(client_config):
    async with RESTClient(client_config) as c:
        yield c


@pytest.fixture
def ns(apiserver):
    name = f"c{next(_counter)}"
    apiserver.create_namespace(name)
    return name
