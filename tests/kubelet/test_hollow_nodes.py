"""`pyk8s nodes` against a real `pyk8s apiserver`, seen through the real kubectl: nodes register Ready, their
Leases are held and renewed, and a process killed and started again takes its nodes back without duplicates,
restoring only what the kubelet owns."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess
from pyk8s.testing.polling import wait_for


@pytest.fixture(scope="module", params=["sqlite", "etcd"])
def apiserver(request: pytest.FixtureRequest) -> Iterator[APIServerProcess]:
    # The kubelet's writes (registration, leases, statuses, pods) behave the same on both stores.
    etcd = request.getfixturevalue("etcd_server") if request.param == "etcd" else None
    server = APIServerProcess(etcd_url=etcd.url if etcd else "").start()
    yield server
    server.cleanup()


def kubectl_json(server: APIServerProcess, *args: str) -> Any:
    out = server.kubectl(*args, "-o", "json", check=True)
    return json.loads(out.stdout)


def nodes_with_prefix(server: APIServerProcess, prefix: str) -> dict[str, Any]:
    items = kubectl_json(server, "get", "nodes")["items"]
    return {n["metadata"]["name"]: n for n in items if n["metadata"]["name"].startswith(prefix)}


def ready(node: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or ())


def start_nodes(server: APIServerProcess, prefix: str, *args: str) -> ComponentProcess:
    proc = ComponentProcess(
        "nodes", server.kubeconfig, "--count", "3", "--name-prefix", prefix, *args, log_dir=server.dir,
        secure_port=False,
    )  # fmt: skip
    return proc.start()


def test_nodes_register_ready_with_leases(apiserver):
    proc = start_nodes(apiserver, "hn-", "--cpu", "8", "--labels", "team=a", "--taints", "dedicated=x:NoSchedule")
    try:
        nodes = wait_for(
            "3 Ready nodes", lambda: (n := nodes_with_prefix(apiserver, "hn-")) and len(n) == 3
            and all(map(ready, n.values())) and n,
        )  # fmt: skip
        assert sorted(nodes) == ["hn-0", "hn-1", "hn-2"]
        node = nodes["hn-1"]
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "hn-1"
        assert node["metadata"]["labels"]["team"] == "a"
        assert node["spec"]["taints"] == [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
        assert node["status"]["capacity"]["cpu"] == "8" and node["status"]["allocatable"]["memory"] == "32668Mi"
        assert node["status"]["addresses"][0] == {"type": "InternalIP", "address": "127.0.0.1"}
        # kubectl's own view of them.
        table = apiserver.kubectl("get", "nodes", "hn-0", "hn-1", "hn-2", "--no-headers", check=True).stdout
        assert [line.split()[:2] for line in table.splitlines()] == [[f"hn-{i}", "Ready"] for i in range(3)]

        def leases() -> dict[str, Any]:
            items = kubectl_json(apiserver, "get", "leases", "-n", "kube-node-lease")["items"]
            return {ls["metadata"]["name"]: ls for ls in items if ls["metadata"]["name"].startswith("hn-")}

        held = wait_for("3 leases", lambda: (ls := leases()) and len(ls) == 3 and ls)
        lease = held["hn-1"]
        assert lease["spec"]["holderIdentity"] == "hn-1" and lease["spec"]["leaseDurationSeconds"] == 40
        assert lease["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": "hn-1", "uid": node["metadata"]["uid"]}
        ]
        # Renewed about every 10 s.
        first = lease["spec"]["renewTime"]
        wait_for("a renewal", lambda: leases()["hn-1"]["spec"]["renewTime"] > first, timeout=25)
    finally:
        proc.stop()


def test_a_restarted_process_takes_its_nodes_back(apiserver):
    proc = start_nodes(apiserver, "rn-")
    try:
        before = wait_for("3 nodes", lambda: (n := nodes_with_prefix(apiserver, "rn-")) and len(n) == 3 and n)
        proc.kill()
        # While it is down, a user labels a node and removes a label the kubelet owns.
        apiserver.kubectl("label", "node", "rn-0", "owner=me", "kubernetes.io/os-", check=True)
        proc = start_nodes(apiserver, "rn-")

        def reconciled() -> dict[str, Any] | None:
            # The labels are put back first, then the new process reports its status (its own boot).
            n = nodes_with_prefix(apiserver, "rn-")
            rn0 = n["rn-0"]
            booted = rn0["status"]["nodeInfo"]["bootID"] != before["rn-0"]["status"]["nodeInfo"]["bootID"]
            return n if rn0["metadata"]["labels"].get("kubernetes.io/os") == "linux" and booted else None

        after = wait_for("the node reconciled", reconciled)
        assert sorted(after) == ["rn-0", "rn-1", "rn-2"]
        assert {k: v["metadata"]["uid"] for k, v in after.items()} == {
            k: v["metadata"]["uid"] for k, v in before.items()
        }
        assert after["rn-0"]["metadata"]["labels"]["owner"] == "me"
        # The new process reports its own boot, so the node's status is fresh.
        assert after["rn-0"]["status"]["nodeInfo"]["bootID"] != before["rn-0"]["status"]["nodeInfo"]["bootID"]
        assert all(map(ready, after.values()))
    finally:
        proc.stop()


POD = """
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  nodeName: pn-1
  initContainers:
  - {name: setup, image: busybox}
  - {name: proxy, image: envoyproxy/envoy:v1.31.0, restartPolicy: Always}
  containers:
  - {name: app, image: nginx}
"""


def test_a_pod_bound_to_a_node_runs_and_its_deletion_is_confirmed(apiserver):
    proc = start_nodes(apiserver, "pn-")
    try:
        wait_for("3 nodes", lambda: len(nodes_with_prefix(apiserver, "pn-")) == 3)
        apiserver.kubectl("apply", "-f", "-", input=POD, check=True)

        def running() -> dict[str, Any] | None:
            pod = kubectl_json(apiserver, "get", "pod", "web")
            return pod if pod["status"].get("phase") == "Running" else None

        pod = wait_for("the pod Running", running)
        status = pod["status"]
        assert status["hostIP"] == "127.0.0.1" and status["podIP"].startswith("10.")
        assert status["podIPs"] == [{"ip": status["podIP"]}]
        assert [c["type"] for c in status["conditions"]] == [
            "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled",
        ]  # fmt: skip
        assert all(c["status"] == "True" for c in status["conditions"])
        (app,) = status["containerStatuses"]
        assert app["ready"] and app["started"] and "running" in app["state"]
        assert app["image"] == "docker.io/library/nginx:latest" and app["containerID"].startswith("containerd://")
        setup, proxy = status["initContainerStatuses"]
        assert setup["state"]["terminated"]["reason"] == "Completed" and "running" in proxy["state"]
        table = apiserver.kubectl("get", "pod", "web", "--no-headers", check=True).stdout.split()
        assert table[1:3] == ["2/2", "Running"]  # the sidecar counts, as upstream prints it

        # The kubelet's events, as `kubectl describe pod` lists them.
        def events() -> list[tuple[str, str, str]]:
            items = kubectl_json(apiserver, "get", "events", "--field-selector", "involvedObject.name=web")["items"]
            return [(e["involvedObject"].get("fieldPath", ""), e["reason"], e["message"]) for e in items
                    if e["source"].get("component") == "kubelet"]  # fmt: skip

        got = wait_for("the kubelet's events", lambda: (ev := events()) and len(ev) >= 9 and ev)
        assert ("spec.containers{app}", "Pulling", 'Pulling image "nginx"') in got
        assert ("spec.containers{app}", "Created", "Created container: app") in got
        assert ("spec.containers{app}", "Started", "Started container app") in got
        assert ("spec.initContainers{setup}", "Started", "Started container setup") in got
        # Started once: the node's own ContainerCreating write, seen again, does not start the pod a second time.
        assert not [e for e in got if "already present" in e[2]]
        assert all(e["source"].get("host") == "pn-1" for e in kubectl_json(
            apiserver, "get", "events", "--field-selector", "involvedObject.name=web,source=kubelet")["items"])  # fmt: skip
        # kubectl delete waits until the node has confirmed the graceful deletion.
        started = time.monotonic()
        apiserver.kubectl("delete", "pod", "web", "--timeout=30s", check=True)
        assert time.monotonic() - started < 25
        assert apiserver.kubectl("get", "pod", "web").returncode != 0
        killing = wait_for("Killing events", lambda: {(p, m) for p, r, m in events() if r == "Killing"})
        assert killing == {("spec.containers{app}", "Stopping container app"),
                           ("spec.initContainers{proxy}", "Stopping container proxy")}  # fmt: skip
    finally:
        proc.stop()


def test_a_pod_that_no_longer_fits_is_rejected_by_the_node(apiserver):
    proc = start_nodes(apiserver, "an-", "--cpu", "1")
    try:
        wait_for("3 nodes", lambda: len(nodes_with_prefix(apiserver, "an-")) == 3)
        big = (
            POD.replace("name: web", "name: big")
            .replace("pn-1", "an-0")
            .replace("- {name: app, image: nginx}", "- {name: app, image: nginx, resources: {requests: {cpu: '2'}}}")
        )
        apiserver.kubectl("apply", "-f", "-", input=big, check=True)

        def failed() -> dict[str, Any] | None:
            pod = kubectl_json(apiserver, "get", "pod", "big")
            return pod if pod["status"].get("phase") == "Failed" else None

        status = wait_for("the pod rejected", failed)["status"]
        assert status["reason"] == "OutOfcpu"
        assert status["message"] == (
            "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"
        )
        assert "containerStatuses" not in status  # no container was created
        apiserver.kubectl("delete", "pod", "big", "--timeout=30s", check=True)
    finally:
        proc.stop()


NODE_TEMPLATE = """
apiVersion: v1
kind: Node
metadata:
  labels: {topology.kubernetes.io/zone: zone-b, pool: gpu}
spec:
  taints: [{key: gpu, value: "true", effect: NoSchedule}]
status:
  capacity: {cpu: "8", nvidia.com/gpu: "2"}
"""


def test_nodes_from_a_template_with_flags_on_top(apiserver):
    template = apiserver.dir / "node-template.yaml"
    template.write_text(NODE_TEMPLATE)
    proc = start_nodes(apiserver, "tn-", "--node-template", str(template), "--cpu", "12", "--labels", "pool=tpl")
    try:
        nodes = wait_for("3 nodes", lambda: (n := nodes_with_prefix(apiserver, "tn-")) and len(n) == 3 and n)
        node = nodes["tn-1"]
        labels = node["metadata"]["labels"]
        assert labels["topology.kubernetes.io/zone"] == "zone-b" and labels["pool"] == "tpl"  # --labels wins
        assert {"key": "gpu", "value": "true", "effect": "NoSchedule"} in node["spec"]["taints"]
        assert node["status"]["capacity"]["cpu"] == "12"  # the flag given explicitly wins over the template
        assert node["status"]["capacity"]["nvidia.com/gpu"] == "2" == node["status"]["allocatable"]["nvidia.com/gpu"]
    finally:
        proc.stop()
    bad = apiserver.dir / "bad-template.yaml"
    bad.write_text("kind: Pod\n")
    res = subprocess.run(
        [sys.executable, "-m", "pyk8s", "nodes", "--kubeconfig", str(apiserver.kubeconfig), "--node-template", str(bad)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 2 and "Invalid value for --node-template: want apiVersion v1, kind Node" in res.stderr
