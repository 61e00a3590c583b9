"""PodDisruptionBudgets as `kubectl drain` meets them: the disruption controller's status (expected, desired and
current healthy pods, disruptions allowed, the DisruptionAllowed condition), the eviction API's 429 with
upstream's message and cause while the budget allows nothing, and a drain that proceeds once it does."""

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


def deployment(name: str, replicas: int) -> str:
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    })  # fmt: skip


def pdb(name: str, **spec: Any) -> str:
    return json.dumps({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
                       "spec": {"selector": {"matchLabels": {"app": name}}, **spec}})  # fmt: skip


def status(cluster: APIServerProcess, name: str) -> dict[str, Any]:
    got: dict[str, Any] = kubectl_json(cluster, "get", "pdb", name).get("status") or {}
    return got


def test_drain_waits_for_the_budget(cluster):
    cluster.kubectl("apply", "-f", "-", input=deployment("guarded", 2), check=True)
    assert cluster.kubectl("rollout", "status", "deploy/guarded", "--timeout=90s", timeout=120).returncode == 0
    cluster.kubectl("apply", "-f", "-", input=pdb("guarded", maxUnavailable=0), check=True)
    wait_for("the budget's status", lambda: status(cluster, "guarded").get("expectedPods") == 2)
    st = status(cluster, "guarded")
    assert (st["currentHealthy"], st["desiredHealthy"], st["disruptionsAllowed"]) == (2, 2, 0)
    [cond] = st["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("DisruptionAllowed", "False", "InsufficientPods")

    pod = kubectl_json(cluster, "get", "pods", "-l", "app=guarded")["items"][0]
    name, node = pod["metadata"]["name"], pod["spec"]["nodeName"]
    code, body = cluster.request("POST", f"/api/v1/namespaces/default/pods/{name}/eviction",
                                 {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})  # fmt: skip
    assert code == 429 and body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"] == [{"type": "DisruptionBudget",
                                          "message": "The disruption budget guarded needs 2 healthy pods and has 2 currently"}]  # fmt: skip

    try:
        res = cluster.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force",
                              "--timeout=4s", timeout=60)  # fmt: skip
        assert res.returncode != 0
        assert "Cannot evict pod as it would violate the pod's disruption budget." in res.stderr
        assert kubectl_json(cluster, "get", "pod", name)["metadata"].get("deletionTimestamp") is None

        cluster.kubectl("patch", "pdb", "guarded", "--type=merge", "-p", '{"spec":{"maxUnavailable":1}}', check=True)
        wait_for("a disruption allowed", lambda: status(cluster, "guarded").get("disruptionsAllowed") == 1)
        # A dry run of the eviction is allowed now, and changes nothing: the pod stays, the budget too.
        code, _ = cluster.request("POST", f"/api/v1/namespaces/default/pods/{name}/eviction",
                                  {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name},
                                   "deleteOptions": {"dryRun": ["All"]}})  # fmt: skip
        assert code == 201
        assert kubectl_json(cluster, "get", "pod", name)["metadata"].get("deletionTimestamp") is None
        assert status(cluster, "guarded")["disruptionsAllowed"] == 1 and "disruptedPods" not in status(
            cluster, "guarded"
        )
        res = cluster.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force",
                              "--timeout=60s", timeout=90)  # fmt: skip
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"pod/{name} evicted" in res.stdout
        assert kubectl_json(cluster, "get", "node", node)["spec"].get("unschedulable") is True
    finally:
        cluster.kubectl("uncordon", node, check=True)
    assert cluster.kubectl("rollout", "status", "deploy/guarded", "--timeout=90s", timeout=120).returncode == 0


def test_a_pod_that_is_not_ready_may_go_when_the_policy_allows(cluster):
    body = json.loads(deployment("unready", 1))
    body["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] = {"exec": {"command": ["true"]},
                                                                          "initialDelaySeconds": 3600}  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body), check=True)
    cluster.kubectl("apply", "-f", "-", input=pdb("unready", minAvailable=1, unhealthyPodEvictionPolicy="AlwaysAllow"),
                    check=True)  # fmt: skip
    wait_for("a running, unready pod", lambda: [p["status"].get("phase") for p in
                                                kubectl_json(cluster, "get", "pods", "-l", "app=unready")["items"]] == ["Running"])  # fmt: skip
    wait_for("the budget's status", lambda: status(cluster, "unready").get("expectedPods") == 1)
    assert status(cluster, "unready")["disruptionsAllowed"] == 0
    name = kubectl_json(cluster, "get", "pods", "-l", "app=unready")["items"][0]["metadata"]["name"]
    code, body = cluster.request("POST", f"/api/v1/namespaces/default/pods/{name}/eviction",
                                 {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})  # fmt: skip
    assert code == 201, body  # not Ready: it serves nothing, so AlwaysAllow lets it go despite the budget
    cluster.kubectl("delete", "deploy", "unready", check=True)
