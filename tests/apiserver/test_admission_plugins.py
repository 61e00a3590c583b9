"""The node-related admission plugins through a real API server (SQLite and etcd): DefaultTolerationSeconds adds
the not-ready/unreachable NoExecute tolerations a pod lacks, with the seconds its flags give; TaintNodesByCondition
creates Nodes with the not-ready NoSchedule taint; --disable-admission-plugins turns them off and an unknown plugin
name stops the server with upstream's message."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from pyk8s.supervisor import component_command, component_env
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.etcd import EtcdServer

NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"


@pytest.fixture(scope="module", params=["sqlite", "etcd"])
def server(request: pytest.FixtureRequest) -> Iterator[APIServerProcess]:
    etcd = EtcdServer().start() if request.param == "etcd" else None
    # Upstream's default plugins (no test-harness exceptions), one toleration time changed by its flag.
    proc = APIServerProcess(
        etcd_url=etcd.url if etcd else "", admission_args=("--default-unreachable-toleration-seconds", "60")
    ).start()
    proc.create_namespace("adm")
    # No controller manager runs here: the ServiceAccount plugin needs the account its controller would make.
    proc.request("POST", "/api/v1/namespaces/adm/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})  # fmt: skip
    yield proc
    proc.cleanup()
    if etcd is not None:
        etcd.stop()


def create_pod(server: APIServerProcess, name: str, tolerations: list[dict[str, Any]] | None = None) -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    status, body = server.request(
        "POST",
        "/api/v1/namespaces/adm/pods",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec},
    )
    assert status == 201, body
    return body


def create_node(server: APIServerProcess, name: str, taints: list[dict[str, Any]] | None = None) -> Any:
    status, body = server.request(
        "POST",
        "/api/v1/nodes",
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"taints": taints or []}},
    )
    assert status == 201, body
    return body


def test_default_toleration_seconds(server: APIServerProcess) -> None:
    pod = create_pod(server, "plain")
    assert pod["spec"]["tolerations"] == [
        {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
    ]
    own = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
    pod = create_pod(server, "own", [own])
    assert pod["spec"]["tolerations"] == [own, {**own, "key": NOT_READY, "tolerationSeconds": 300}]
    # An empty key (or effect) covers both taints, as upstream counts it.
    everything = {"operator": "Exists"}
    assert create_pod(server, "all", [everything])["spec"]["tolerations"] == [everything]
    stored = server.request("GET", "/api/v1/namespaces/adm/pods/plain")[1]
    assert len(stored["spec"]["tolerations"]) == 2


def test_taint_nodes_by_condition(server: APIServerProcess) -> None:
    node = create_node(server, "fresh")
    assert node["spec"]["taints"] == [{"key": NOT_READY, "effect": "NoSchedule"}]
    node = create_node(server, "own", [{"key": NOT_READY, "value": "x", "effect": "NoSchedule"}])
    assert node["spec"]["taints"] == [{"key": NOT_READY, "value": "x", "effect": "NoSchedule"}]
    # Only on create: taken off by an update, it stays off.
    node = server.request("GET", "/api/v1/nodes/fresh")[1]
    node["spec"]["taints"] = []
    status, body = server.request("PUT", "/api/v1/nodes/fresh", node)
    assert status == 200 and not body["spec"].get("taints"), body


def test_disabled_plugins_and_unknown_names() -> None:
    with APIServerProcess(
        admission_args=("--disable-admission-plugins", "DefaultTolerationSeconds,TaintNodesByCondition,ServiceAccount")
    ) as server:
        server.create_namespace("adm")
        assert not create_pod(server, "plain")["spec"].get("tolerations")
        assert not create_node(server, "bare")["spec"].get("taints")
        server.cleanup()
    with tempfile.TemporaryDirectory() as d:
        res = subprocess.run(
            component_command("apiserver", "--data-dir", d, "--secure-port", "0", "--enable-admission-plugins",
                              "Foo", "--disable-admission-plugins", "NamespaceLifecycle,Bar"),
            capture_output=True, text=True, env=component_env(), timeout=60,
        )  # fmt: skip
    assert res.returncode != 0
    assert 'enable-admission-plugins plugin "Foo" is unknown' in res.stderr
    assert 'disable-admission-plugins plugin "Bar" is unknown' in res.stderr
