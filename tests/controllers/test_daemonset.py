"""DaemonSets with kubectl on a cluster of three simulated nodes: one pod per node, placed by the scheduler through
the node affinity the controller adds, with the daemon tolerations; `kubectl rollout status`; a rolling update
through ControllerRevisions and `rollout history`; nodeSelector; a node added later gets its pod and a deleted
node's pod goes."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.polling import wait_for


@pytest.fixture
def cluster(full_cluster: APIServerProcess) -> APIServerProcess:
    return full_cluster


def kubectl_json(cluster: APIServerProcess, *args: str) -> Any:
    return json.loads(cluster.kubectl(*args, "-o", "json", check=True).stdout)


def daemonset(name: str, image: str = "agent:1", **pod_spec: Any) -> str:
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": image}], **pod_spec}}},
    })  # fmt: skip


def pods_of(cluster: APIServerProcess, name: str) -> list[dict[str, Any]]:
    items = kubectl_json(cluster, "get", "pods", "-l", f"app={name}")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def node_names(cluster: APIServerProcess) -> set[str]:
    return {
        n["metadata"]["name"]
        for n in kubectl_json(cluster, "get", "nodes")["items"]
        if n["metadata"]["name"].startswith("dn-")
    }


def test_one_pod_per_node_then_a_rolling_update(cluster):
    cluster.kubectl("apply", "-f", "-", input=daemonset("agent"), check=True)
    res = cluster.kubectl("rollout", "status", "ds/agent", "--timeout=90s", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip().splitlines()[-1] == 'daemon set "agent" successfully rolled out'
    pods = pods_of(cluster, "agent")
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(node_names(cluster))
    pod = pods[0]
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [pod["spec"]["nodeName"]]}]}]
    keys = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert {("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/unschedulable", "NoSchedule")} <= keys  # fmt: skip
    st = kubectl_json(cluster, "get", "ds", "agent")["status"]
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberReady"], st["numberAvailable"],
            st["updatedNumberScheduled"], st["numberMisscheduled"]) == (3, 3, 3, 3, 3, 0)  # fmt: skip
    [rev1] = kubectl_json(cluster, "get", "controllerrevisions", "-l", "app=agent")["items"]
    assert (
        rev1["revision"] == 1
        and rev1["metadata"]["name"] == f"agent-{pod['metadata']['labels']['controller-revision-hash']}"
    )

    cluster.kubectl("set", "image", "ds/agent", "c=agent:2", check=True)
    res = cluster.kubectl("rollout", "status", "ds/agent", "--timeout=90s", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    pods = pods_of(cluster, "agent")
    assert len(pods) == 3 and {p["spec"]["containers"][0]["image"] for p in pods} == {"agent:2"}
    revisions = sorted(
        r["revision"] for r in kubectl_json(cluster, "get", "controllerrevisions", "-l", "app=agent")["items"]
    )
    assert revisions == [1, 2]
    history = cluster.kubectl("rollout", "history", "ds/agent", check=True).stdout
    assert [line.split()[0] for line in history.strip().splitlines()[2:]] == ["1", "2"]


def test_node_selector_and_nodes_that_come_and_go(cluster):
    target = sorted(node_names(cluster))[0]
    cluster.kubectl("label", "node", target, "disk=ssd", check=True)
    tolerate = [{"key": "example.com/test-only", "operator": "Exists", "effect": "NoSchedule"}]
    cluster.kubectl("apply", "-f", "-", input=daemonset("ssd", nodeSelector={"disk": "ssd"}, tolerations=tolerate),
                    check=True)  # fmt: skip
    wait_for(
        "one pod, on the labelled node",
        lambda: [p["spec"].get("nodeName") for p in pods_of(cluster, "ssd")] == [target],
    )
    # A node that joins later (tainted so that nothing else lands on it; this DaemonSet tolerates the taint).
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "late-node", "labels": {"disk": "ssd"}},
            "spec": {"taints": [{"key": "example.com/test-only", "effect": "NoSchedule"}]}}  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(node), check=True)
    try:

        def on_both() -> bool:
            pods = pods_of(cluster, "ssd")
            pinned = {p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                      ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0] for p in pods}  # fmt: skip
            return pinned == {target, "late-node"}

        wait_for("a pod for the new node", on_both)
    finally:
        cluster.kubectl("delete", "node", "late-node", check=True)
    wait_for(
        "the gone node's pod removed", lambda: [p["spec"].get("nodeName") for p in pods_of(cluster, "ssd")] == [target]
    )
    cluster.kubectl("label", "node", target, "disk-", check=True)
    wait_for("no pod once no node matches", lambda: pods_of(cluster, "ssd") == [])


def test_rolling_update_with_surge_keeps_every_node_served(cluster):
    ds = json.loads(daemonset("surge"))
    ds["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    # Pods become ready 1 s after they start, so that old and new pods visibly overlap.
    ds["spec"]["template"]["metadata"]["annotations"] = {"pyk8s.io/simulate": json.dumps({"readySeconds": 1})}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(ds), check=True)
    res = cluster.kubectl("rollout", "status", "ds/surge", "--timeout=90s", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    desired = kubectl_json(cluster, "get", "ds", "surge")["status"]["desiredNumberScheduled"]
    cluster.kubectl("set", "image", "ds/surge", "c=agent:2", check=True)

    def sample_pods() -> tuple[int, int, set[str]]:
        """Nodes with a Ready pod, the most pods on one node, and the images of the pods not being deleted."""
        pods = kubectl_json(cluster, "get", "pods", "-l", "app=surge")["items"]
        per_node: dict[str, int] = {}
        ready: set[str] = set()
        images: set[str] = set()
        for p in pods:
            node = p["spec"].get("nodeName") or "?"
            per_node[node] = per_node.get(node, 0) + 1
            conds = {c["type"]: c["status"] for c in p.get("status", {}).get("conditions", [])}
            if not p["metadata"].get("deletionTimestamp"):
                images.add(p["spec"]["containers"][0]["image"])
                if conds.get("Ready") == "True":
                    ready.add(node)
        return len(ready), max(per_node.values(), default=0), images

    least_ready, most_per_node = desired, 1
    deadline = time.monotonic() + 90
    while True:  # sample the pods until the rollout is done
        # The status first, then the pods: a status read after the pods could count a new pod the sample missed
        # while its old neighbour is still there.
        st = kubectl_json(cluster, "get", "ds", "surge")["status"]
        ready, most, images = sample_pods()
        least_ready, most_per_node = min(least_ready, ready), max(most_per_node, most)
        done = st.get("updatedNumberScheduled") == desired and st.get("numberAvailable") == desired
        if done and most == 1 and images == {"agent:2"}:
            break
        assert time.monotonic() < deadline, f"surge rollout not done: {st}"
    pods = pods_of(cluster, "surge")
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"agent:2"} and len(pods) == desired
    assert least_ready == desired  # maxUnavailable 0: every node kept a ready pod throughout
    assert most_per_node == 2  # the new pod started beside the old one
