"""`kubectl expose` and what a Service's endpoints then list, on a cluster whose pods run (simulated nodes): the
Endpoints and the EndpointSlices carry exactly the ready pods' IPs and resolved ports, not-ready pods apart,
and follow scaling; a selector-less Service is left to the user."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.polling import wait_for


@pytest.fixture
def cluster(full_cluster: APIServerProcess) -> APIServerProcess:
    return full_cluster


def kubectl_json(cluster: APIServerProcess, *args: str) -> Any:
    return json.loads(cluster.kubectl(*args, "-o", "json", check=True).stdout)


def deployment(name: str, replicas: int, ready_after: int | None = None) -> str:
    container: dict[str, Any] = {"name": "c", "image": "nginx", "ports": [{"name": "http", "containerPort": 8080}]}
    if ready_after is not None:
        container["readinessProbe"] = {"exec": {"command": ["true"]}, "initialDelaySeconds": ready_after}
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}},
    })  # fmt: skip


def running_ips(cluster: APIServerProcess, app: str, ready: bool) -> set[str]:
    pods = kubectl_json(cluster, "get", "pods", "-l", f"app={app}")["items"]
    out = set()
    for p in pods:
        if p["metadata"].get("deletionTimestamp") or not p["status"].get("podIP"):
            continue
        is_ready = any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        if is_ready == ready:
            out.add(p["status"]["podIP"])
    return out


def endpoint_ips(cluster: APIServerProcess, name: str, key: str = "addresses") -> set[str]:
    res = cluster.kubectl("get", "endpoints", name, "-o", "json")
    if res.returncode != 0:
        return set()
    return {a["ip"] for s in json.loads(res.stdout).get("subsets", []) for a in s.get(key, [])}


def slice_endpoints(cluster: APIServerProcess, name: str) -> list[dict[str, Any]]:
    items = kubectl_json(cluster, "get", "endpointslices", "-l", f"kubernetes.io/service-name={name}")["items"]
    return [e for s in items for e in s.get("endpoints") or []]


def test_expose_lists_exactly_the_ready_pods(cluster):
    cluster.kubectl("apply", "-f", "-", input=deployment("front", 3), check=True)
    assert cluster.kubectl("rollout", "status", "deploy/front", "--timeout=90s", timeout=120).returncode == 0
    out = cluster.kubectl("expose", "deploy/front", "--port=80", "--target-port=http", check=True).stdout.strip()
    assert out == "service/front exposed"
    ips = running_ips(cluster, "front", ready=True)
    assert len(ips) == 3
    wait_for("endpoints list the ready pods", lambda: endpoint_ips(cluster, "front") == ips)
    ep = kubectl_json(cluster, "get", "endpoints", "front")
    [subset] = ep["subsets"]
    assert subset["ports"] == [{"port": 8080, "protocol": "TCP"}]  # the named target port resolved
    assert {a["targetRef"]["kind"] for a in subset["addresses"]} == {"Pod"}
    assert all(a["nodeName"].startswith("dn-") for a in subset["addresses"])

    slices = kubectl_json(cluster, "get", "endpointslices", "-l", "kubernetes.io/service-name=front")["items"]
    assert len(slices) == 1
    [s] = slices
    assert s["addressType"] == "IPv4" and s["metadata"]["name"].startswith("front-")
    assert s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    assert s["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert s["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    assert {e["addresses"][0] for e in s["endpoints"]} == ips
    assert all(e["conditions"] == {"ready": True, "serving": True, "terminating": False} for e in s["endpoints"])
    # Pods already ready when the Service appeared: the first writes date from the Service's creation.
    svc = kubectl_json(cluster, "get", "svc", "front")
    trigger = "endpoints.kubernetes.io/last-change-trigger-time"
    assert ep["metadata"]["annotations"][trigger] == svc["metadata"]["creationTimestamp"]
    assert s["metadata"]["annotations"][trigger] == svc["metadata"]["creationTimestamp"]
    described = cluster.kubectl("describe", "svc", "front", check=True).stdout
    endpoints_line = next(line for line in described.splitlines() if line.startswith("Endpoints:"))
    assert all(f"{ip}:8080" in endpoints_line for ip in ips)

    cluster.kubectl("scale", "deploy/front", "--replicas=1", check=True)

    def shrunk() -> bool:
        now = running_ips(cluster, "front", ready=True)
        return (
            len(now) == 1
            and endpoint_ips(cluster, "front") == now
            and {e["addresses"][0] for e in slice_endpoints(cluster, "front") if not e["conditions"]["terminating"]}
            == now
        )

    wait_for("endpoints follow the scale-down", shrunk)


def test_pods_not_ready_are_listed_apart(cluster):
    cluster.kubectl("apply", "-f", "-", input=deployment("slowpoke", 2, ready_after=3600), check=True)
    cluster.kubectl("expose", "deploy/slowpoke", "--port=80", "--target-port=8080", check=True)
    wait_for("two pods with IPs", lambda: len(running_ips(cluster, "slowpoke", ready=False)) == 2)
    ips = running_ips(cluster, "slowpoke", ready=False)
    wait_for("not-ready addresses", lambda: endpoint_ips(cluster, "slowpoke", "notReadyAddresses") == ips)
    assert endpoint_ips(cluster, "slowpoke") == set()
    wait_for("slice endpoints", lambda: {e["addresses"][0] for e in slice_endpoints(cluster, "slowpoke")} == ips)
    assert all(
        not e["conditions"]["ready"] and not e["conditions"]["serving"] for e in slice_endpoints(cluster, "slowpoke")
    )


def test_a_service_without_selector_gets_an_empty_placeholder_slice_and_keeps_user_endpoints(cluster):
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "manual"},
           "spec": {"ports": [{"port": 80}]}}  # fmt: skip
    ep = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "manual"},
          "subsets": [{"addresses": [{"ip": "10.9.9.9"}], "ports": [{"port": 80}]}]}  # fmt: skip
    for obj in (svc, ep):
        cluster.kubectl("apply", "-f", "-", input=json.dumps(obj), check=True)
    # A Service with a selector but no pods has one empty slice; "manual" has no selector: no slice at all.
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lonely"},
            "spec": {"selector": {"app": "nobody"}, "ports": [{"port": 80}]}}  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body), check=True)

    def placeholder() -> bool:
        items = kubectl_json(cluster, "get", "endpointslices", "-l", "kubernetes.io/service-name=lonely")["items"]
        return len(items) == 1 and not items[0].get("endpoints") and items[0].get("ports") is None

    wait_for("the placeholder slice", placeholder)
    assert endpoint_ips(cluster, "manual") == {"10.9.9.9"}
    assert kubectl_json(cluster, "get", "endpointslices", "-l", "kubernetes.io/service-name=manual")["items"] == []
