"""End to end, all real processes: an API server with upstream's default admission plugins, a controller manager
running the node controllers, and two `pyk8s nodes` processes. Killing one (SIGKILL) makes its node Unknown within
the grace period, tainted unreachable, and its pods evicted after their tolerationSeconds (a pod tolerating the
taint forever stays); starting it again brings the node back Ready and takes the taints away. Pod IPs come from
the podCIDR the node IPAM controller gave each node."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess
from pyk8s.testing.polling import wait_for

GRACE = 20  # seconds: twice the kubelet's 10 s lease renewal (upstream wants a few renewals per grace period)
UNREACHABLE = "node.kubernetes.io/unreachable"


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, Any]]:
    server = APIServerProcess(admission_args=()).start()
    cm = ComponentProcess(
        "controller-manager", server.kubeconfig, "--no-leader-elect",
        "--controllers", "node-lifecycle-controller,taint-eviction-controller,nodeipam,podgc,serviceaccount",
        "--node-monitor-period", "1s", "--node-monitor-grace-period", f"{GRACE}s",
        "--allocate-node-cidrs", "--cluster-cidr", "10.244.0.0/16", log_dir=server.dir,
    ).start()  # fmt: skip
    live = nodes_process(server, "live-", 2).start()
    lost = nodes_process(server, "lost-", 1).start()
    running: dict[str, Any] = {"server": server, "cm": cm, "live": live, "lost": lost}
    yield running
    # The test replaces "lost" with the restarted process. Nothing of theirs is checked after the test: no need
    # to wait for graceful shutdowns.
    for name in ("lost", "live", "cm"):
        running[name].kill()
    server.cleanup()


def nodes_process(server: APIServerProcess, prefix: str, count: int) -> ComponentProcess:
    return ComponentProcess(
        "nodes", server.kubeconfig, "--count", str(count), "--name-prefix", prefix, log_dir=server.dir,
        secure_port=False,
    )  # fmt: skip


def get(server: APIServerProcess, path: str) -> Any:
    status, body = server.request("GET", path)
    return body if status == 200 else None


def condition(obj: dict[str, Any], typ: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == typ), {})


def taints(node: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in (node.get("spec") or {}).get("taints") or ()}


def pod(name: str, node: str, tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "pause"}], "tolerations": tolerations},
    }  # fmt: skip


def test_killed_node_goes_unknown_is_tainted_and_evicted_then_recovers(cluster):
    server, cm = cluster["server"], cluster["cm"]
    names = ("live-0", "live-1", "lost-0")

    def nodes_settled() -> dict[str, Any] | None:
        nodes = {n: get(server, f"/api/v1/nodes/{n}") for n in names}
        if not all(nodes.values()):
            return None
        for n in nodes.values():
            # Ready, with a podCIDR, and the not-ready taint TaintNodesByCondition put on at creation is gone.
            if condition(n, "Ready").get("status") != "True" or not n["spec"].get("podCIDR") or taints(n):
                return None
        return nodes

    nodes = wait_for("3 Ready nodes with podCIDRs and no taints", nodes_settled, 60, cm.log_tail)
    cidrs = {n: ipaddress.ip_network(obj["spec"]["podCIDR"]) for n, obj in nodes.items()}
    assert len(set(cidrs.values())) == 3 and all(c.prefixlen == 24 for c in cidrs.values())
    assert all(c.subnet_of(ipaddress.ip_network("10.244.0.0/16")) for c in cidrs.values())
    time.sleep(1.0)  # the nodes processes' Node informers see the podCIDRs too

    server.create_namespace("e2e")
    forever = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
    for p in (
        pod("evicted", "lost-0", [{**forever, "tolerationSeconds": 2}]),
        pod("stays", "lost-0", [forever]),
        pod("elsewhere", "live-0", []),
    ):
        status, body = server.request("POST", "/api/v1/namespaces/e2e/pods", p)
        assert status == 201, body
    created = get(server, "/api/v1/namespaces/e2e/pods/elsewhere")
    # DefaultTolerationSeconds: the 300 s tolerations a pod does not already have.
    assert {(t["key"], t.get("tolerationSeconds")) for t in created["spec"]["tolerations"]} == {
        ("node.kubernetes.io/not-ready", 300), (UNREACHABLE, 300),
    }  # fmt: skip

    def running() -> dict[str, Any] | None:
        pods = {p: get(server, f"/api/v1/namespaces/e2e/pods/{p}") for p in ("evicted", "stays", "elsewhere")}
        ok = all(p and p["status"].get("phase") == "Running" and p["status"].get("podIP") for p in pods.values())
        return pods if ok else None

    pods = wait_for("3 Running pods", running, 30)
    for p in pods.values():
        assert ipaddress.ip_address(p["status"]["podIP"]) in cidrs[p["spec"]["nodeName"]], p["status"]

    cluster["lost"].kill()
    killed = time.monotonic()
    lost = wait_for(
        "lost-0 Ready=Unknown", lambda: (n := get(server, "/api/v1/nodes/lost-0"))
        and condition(n, "Ready").get("status") == "Unknown" and n, GRACE + 15, cm.log_tail,
    )  # fmt: skip
    assert time.monotonic() - killed <= GRACE + 15
    ready = condition(lost, "Ready")
    assert (ready["reason"], ready["message"]) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
    assert condition(lost, "MemoryPressure")["status"] == "Unknown"
    lost = wait_for(
        "the unreachable taints", lambda: (n := get(server, "/api/v1/nodes/lost-0"))
        and {(UNREACHABLE, "NoExecute"), (UNREACHABLE, "NoSchedule")} <= taints(n) and n, 15, cm.log_tail,
    )  # fmt: skip

    evicted = wait_for(
        "the pod tolerating 2 s to be evicted", lambda: (p := get(server, "/api/v1/namespaces/e2e/pods/evicted"))
        and p["metadata"].get("deletionTimestamp") and p, 15, cm.log_tail,
    )  # fmt: skip
    target = condition(evicted, "DisruptionTarget")
    assert (target["status"], target["reason"]) == ("True", "DeletionByTaintManager")
    assert target["message"] == "Taint manager: deleting due to NoExecute taint"
    events = get(server, "/api/v1/namespaces/e2e/events")["items"]
    assert any(
        e["reason"] == "TaintManagerEviction" and e["message"] == "Marking for deletion Pod e2e/evicted"
        and e["source"]["component"] == "taint-eviction-controller" for e in events
    ), [(e["reason"], e["message"]) for e in events]  # fmt: skip
    time.sleep(1.0)
    stays = get(server, "/api/v1/namespaces/e2e/pods/stays")
    assert not stays["metadata"].get("deletionTimestamp")
    assert condition(stays, "Ready")["status"] == "False"  # MarkPodsNotReady
    for name in ("live-0", "live-1"):
        n = get(server, f"/api/v1/nodes/{name}")
        assert condition(n, "Ready")["status"] == "True" and not taints(n)

    cluster["lost"] = nodes_process(server, "lost-", 1).start()
    wait_for(
        "lost-0 Ready again without taints", lambda: (n := get(server, "/api/v1/nodes/lost-0"))
        and condition(n, "Ready").get("status") == "True" and not taints(n), 30, cm.log_tail,
    )  # fmt: skip
    # The restarted node confirms the eviction; the pod that tolerates forever is still there.
    wait_for("the evicted pod gone", lambda: get(server, "/api/v1/namespaces/e2e/pods/evicted") is None, 30)
    assert get(server, "/api/v1/namespaces/e2e/pods/stays") is not None


def test_no_schedule_taints_follow_conditions(cluster):
    server, cm = cluster["server"], cluster["cm"]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def cond(typ: str, status: str) -> dict[str, str]:
        return {"type": typ, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": now}

    node = {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}, "spec": {"unschedulable": True},
        "status": {"conditions": [cond("Ready", "True"), cond("MemoryPressure", "True")]},
    }  # fmt: skip
    status, body = server.request("POST", "/api/v1/nodes", node)
    assert status == 201 and taints(body) == {("node.kubernetes.io/not-ready", "NoSchedule")}, body

    def has(expected: set[tuple[str, str]]) -> Callable[[], Any]:
        return lambda: (
            (n := get(server, "/api/v1/nodes/bare")) and {t for t in taints(n) if t[1] == "NoSchedule"} == expected
        )

    wait_for("memory-pressure and unschedulable taints", has({
        ("node.kubernetes.io/memory-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"),
    }), 15, cm.log_tail)  # fmt: skip
    patch = {"status": {"conditions": [cond("Ready", "False"), cond("MemoryPressure", "False")]}}
    status, body = server.request(
        "PATCH", "/api/v1/nodes/bare/status", patch, content_type="application/strategic-merge-patch+json"
    )
    assert status == 200, body
    wait_for("not-ready instead of memory-pressure", has({
        ("node.kubernetes.io/not-ready", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"),
    }), 15, cm.log_tail)  # fmt: skip
