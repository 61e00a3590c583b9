"""`pods/log` against a kubelet address that misbehaves: the API server gives the backend up with its client."""

from __future__ import annotations

import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from pyk8s.testing.cluster import APIServerProcess


@pytest.fixture(scope="module")
def server() -> Iterator[APIServerProcess]:
    with APIServerProcess() as s:
        yield s


def test_a_kubelet_that_never_answers_is_dropped_when_the_client_goes(server: APIServerProcess) -> None:
    # A "kubelet" that accepts connections and never says a word (a stopped `pyk8s nodes` process, say).
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    port = silent.getsockname()[1]
    node = {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "frozen"},
        "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                   "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}},
    }  # fmt: skip
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stuck"},
        "spec": {"nodeName": "frozen", "containers": [{"name": "main", "image": "busybox"}]},
    }  # fmt: skip
    assert server.request("POST", "/api/v1/nodes", node)[0] == 201
    assert server.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
    req = urllib.request.Request(
        f"{server.url}/api/v1/namespaces/default/pods/stuck/log?follow=true",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        urllib.request.urlopen(req, context=ctx, timeout=1.5)  # the client gives up
    silent.settimeout(5)
    conn, _ = silent.accept()
    with conn, silent:
        conn.settimeout(10)
        started = time.monotonic()
        while conn.recv(65536):  # the TLS hello, then nothing until the API server closes
            pass
        assert time.monotonic() - started < 8
