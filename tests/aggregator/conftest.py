"""A real `pyk8s apiserver` with aggregator routing, and the wardle extension server behind an APIService:
Service `wardle/api` (port 443) whose Endpoints list the loopback address and port the server listens on."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterator

import pytest

from pyk8s.testing.cluster import APIServerProcess

from .wardle import GROUP, VERSION, Wardle

NAMESPACE = "wardle"
APISERVICE = f"{VERSION}.{GROUP}"


@pytest.fixture(scope="module")
def cluster() -> Iterator[APIServerProcess]:
    # Availability is checked every second here instead of every 30 s, so that a stopped server shows soon.
    old = os.environ.get("PYK8S_APISERVICE_RESYNC")
    os.environ["PYK8S_APISERVICE_RESYNC"] = "1"
    try:
        server = APIServerProcess(extra_args=("--enable-aggregator-routing",)).start()
    finally:
        if old is None:
            os.environ.pop("PYK8S_APISERVICE_RESYNC", None)
        else:
            os.environ["PYK8S_APISERVICE_RESYNC"] = old
    yield server
    server.cleanup()


def authentication_configmap(cluster: APIServerProcess) -> dict[str, str]:
    out = cluster.kubectl("get", "configmap", "-n", "kube-system", "extension-apiserver-authentication", "-o", "json",
                          check=True)  # fmt: skip
    data: dict[str, str] = json.loads(out.stdout)["data"]
    return data


@pytest.fixture(scope="module")
def wardle(cluster: APIServerProcess) -> Iterator[Wardle]:
    """The extension server, configured from the ConfigMap as sample-apiserver is, registered and Available."""
    data = authentication_configmap(cluster)
    server = Wardle(data["requestheader-client-ca-file"], json.loads(data["requestheader-allowed-names"])).start()
    cluster.create_namespace(NAMESPACE)
    manifests = [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": NAMESPACE},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": server.port}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "api", "namespace": NAMESPACE},
         "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": server.port}]}]},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": APISERVICE},
         "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 1000, "versionPriority": 15,
                  "service": {"namespace": NAMESPACE, "name": "api"},
                  "caBundle": base64.b64encode(server.ca_bundle).decode()}},
    ]  # fmt: skip
    for m in manifests:
        cluster.kubectl("apply", "-f", "-", input=json.dumps(m), check=True)
    wait_for_available(cluster, APISERVICE, "True")
    yield server
    server.close()


def available(cluster: APIServerProcess, name: str) -> dict[str, str]:
    out = cluster.kubectl("get", "apiservice", name, "-o", "json", check=True).stdout
    for c in (json.loads(out).get("status") or {}).get("conditions") or []:
        if c["type"] == "Available":
            return c  # type: ignore[no-any-return]
    return {}


def wait_for_available(cluster: APIServerProcess, name: str, status: str, timeout: float = 30.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        cond = available(cluster, name)
        if cond.get("status") == status:
            return cond
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: Available is {cond}, not {status}")
        time.sleep(0.2)
