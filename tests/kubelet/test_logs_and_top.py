"""`kubectl logs`, `kubectl exec` and `kubectl top` against a real `pyk8s apiserver` and a real `pyk8s nodes`
process, through the real kubectl: logs come from the nodes' kubelet endpoint through the API server's
`pods/log`, usage from the API server's metrics.k8s.io."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyk8s.api.meta import parse_time
from pyk8s.testing.cluster import APIServerProcess, kubectl_binary
from pyk8s.testing.components import ComponentProcess, get_unverified
from pyk8s.testing.polling import wait_for

PODS = """
apiVersion: v1
kind: Pod
metadata: {name: echo}
spec:
  nodeName: lt-0
  restartPolicy: Never
  containers:
  - {name: main, image: busybox, command: [sh, -c, 'echo hi; echo there']}
---
apiVersion: v1
kind: Pod
metadata: {name: multi}
spec:
  nodeName: lt-0
  restartPolicy: Never
  initContainers:
  - {name: init, image: busybox, command: [sh, -c, 'echo init done']}
  containers:
  - {name: a, image: busybox, command: [sh, -c, 'echo from a']}
  - {name: b, image: busybox, command: [sh, -c, 'echo from b']}
---
apiVersion: v1
kind: Pod
metadata: {name: forever}
spec:
  nodeName: lt-0
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: busybox, command: [sh, -c, 'echo start; sleep infinity']}
---
apiVersion: v1
kind: Pod
metadata: {name: unscheduled}
spec:
  containers:
  - {name: main, image: busybox}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  nodeName: lt-2
  containers:
  - {name: a, image: nginx, resources: {requests: {cpu: 250m, memory: 64Mi}}}
  - {name: b, image: nginx, resources: {limits: {cpu: 100m, memory: 32Mi}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: busy
  namespace: kube-system
  labels: {app: busy}
  annotations: {pyk8s.io/simulate: '{"cpu": "1500m", "memory": "1Gi", "logs": ["busy start", "ready"]}'}
spec:
  nodeName: lt-2
  containers:
  - {name: main, image: busybox}
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[APIServerProcess]:
    server = APIServerProcess().start()
    nodes = ComponentProcess(
        "nodes", server.kubeconfig, "--count", "3", "--name-prefix", "lt-", log_dir=server.dir, secure_port=False
    ).start()
    try:
        server.kubectl("apply", "-f", "-", input=PODS, check=True)
        want = {"echo": "Succeeded", "multi": "Succeeded", "forever": "Running", "web": "Running", "busy": "Running"}

        def phases() -> dict[str, str]:
            return {
                p["metadata"]["name"]: p["status"].get("phase")
                for p in kubectl_json(server, "get", "pods", "-A")["items"]
            }

        wait_for("the pods running or done", lambda: want.items() <= phases().items())
        yield server
    finally:
        nodes.stop()
        server.cleanup()


def kubectl_json(server: APIServerProcess, *args: str) -> Any:
    return json.loads(server.kubectl(*args, "-o", "json", check=True).stdout)


def is_running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def kubectl_ok(server: APIServerProcess, *args: str) -> str:
    return server.kubectl(*args, check=True, timeout=30).stdout


def kubectl_err(server: APIServerProcess, *args: str) -> str:
    res = server.kubectl(*args, timeout=30)
    assert res.returncode != 0, res.stdout
    return res.stderr.strip()


def test_nodes_register_the_shared_kubelet_endpoint(cluster):
    nodes = [n for n in kubectl_json(cluster, "get", "nodes")["items"] if n["metadata"]["name"].startswith("lt-")]
    ports = {n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] for n in nodes}
    assert len(nodes) == 3 and len(ports) == 1 and ports != {10250}
    assert all(n["status"]["addresses"][0] == {"type": "InternalIP", "address": "127.0.0.1"} for n in nodes)


def test_logs_of_a_pod_with_one_container(cluster):
    assert kubectl_ok(cluster, "logs", "echo") == "hi\nthere\n"
    assert kubectl_ok(cluster, "logs", "echo", "--tail=1") == "there\n"
    assert kubectl_ok(cluster, "logs", "echo", "--limit-bytes=4") == "hi\nt"
    assert kubectl_ok(cluster, "logs", "echo", "--since=1h") == "hi\nthere\n"
    started = kubectl_json(cluster, "get", "pod", "echo")["status"]["containerStatuses"][0]["state"]["terminated"]
    stamped = kubectl_ok(cluster, "logs", "echo", "--timestamps").splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == ["hi", "there"]
    assert all(parse_time(line.split(" ")[0]) == parse_time(started["startedAt"]) for line in stamped)
    # The whole query goes through as kubectl sends it (and `follow` ends with the container: echo exits).
    assert kubectl_ok(cluster, "logs", "echo", "-f", "--tail=-1", "--insecure-skip-tls-verify-backend") == "hi\nthere\n"
    # Lines from the pyk8s.io/simulate annotation; the official Python client reads the same.
    assert kubectl_ok(cluster, "logs", "-n", "kube-system", "busy") == "busy start\nready\n"
    from kubernetes import client, config

    core = client.CoreV1Api(config.new_client_from_config(config_file=str(cluster.kubeconfig)))
    assert core.read_namespaced_pod_log("echo", "default", tail_lines=1) == "there\n"


def test_logs_of_a_pod_with_several_containers(cluster):
    res = cluster.kubectl("logs", "multi", timeout=30)
    assert res.stdout == "from a\n"
    assert 'Defaulted container "a" out of: a, b, init (init)' in res.stderr
    assert kubectl_ok(cluster, "logs", "multi", "-c", "b") == "from b\n"
    assert kubectl_ok(cluster, "logs", "multi", "-c", "init") == "init done\n"
    out = kubectl_ok(cluster, "logs", "multi", "--all-containers", "--prefix")
    # (kubectl reads the containers in its map's order, which varies)
    assert sorted(out.splitlines()) == ["[pod/multi/a] from a", "[pod/multi/b] from b", "[pod/multi/init] init done"]
    # What the API server says when kubectl's own checks are bypassed.
    base = "/api/v1/namespaces/default/pods/multi/log"
    assert kubectl_err(cluster, "get", "--raw", base) == (
        "Error from server (BadRequest): a container name must be specified for pod multi, choose one of: [init a b]"
    )
    assert kubectl_err(cluster, "get", "--raw", base + "?container=nope") == (
        "Error from server (BadRequest): container nope is not valid for pod multi"
    )
    assert "may be specified" in kubectl_err(cluster, "get", "--raw", base + "?container=a&sinceSeconds=5&sinceTime="
                                             "2026-01-01T00:00:00Z")  # fmt: skip
    assert kubectl_err(cluster, "get", "--raw", base + "?container=a&tailLines=-2") == (
        'The PodLogOptions "multi" is invalid: tailLines: Invalid value: -2: must be greater than or equal to 0'
    )


def test_follow_prints_lines_as_they_come(cluster):
    manifest = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "later"},
        "spec": {"nodeName": "lt-0", "restartPolicy": "Never", "containers": [
            {"name": "main", "image": "busybox", "command": ["sh", "-c", "echo one; sleep 4; echo two"]},
        ]},
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest), check=True)
    pod = wait_for("later running", lambda: (p := kubectl_json(cluster, "get", "pod", "later")) and is_running(p) and p)
    started = parse_time(pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]).timestamp()
    assert kubectl_ok(cluster, "logs", "-f", "later") == "one\ntwo\n"
    # It waited for the second line (startedAt is whole seconds: up to one second early).
    assert time.time() >= started + 3


def test_follow_ends_when_the_pod_goes_away(cluster):
    env = {"HOME": str(cluster.home), "KUBECONFIG": str(cluster.kubeconfig), "PATH": os.environ.get("PATH", "")}
    proc = subprocess.Popen(
        [kubectl_binary(), "logs", "-f", "forever"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "start\n"
        time.sleep(1)
        assert proc.poll() is None  # still following: the container runs until deleted
        cluster.kubectl("delete", "pod", "forever", "--wait=false", check=True)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()


def test_log_errors(cluster):
    assert kubectl_err(cluster, "logs", "echo", "--previous") == (
        'Error from server (BadRequest): previous terminated container "main" in pod "echo" not found'
    )
    # A pod no node has taken yet has no log: an empty answer (upstream: 204 No Content).
    assert kubectl_ok(cluster, "logs", "unscheduled") == ""
    # A container that has not started, as the kubelet reports it: its pod's init container still runs.
    manifest = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "initializing"},
        "spec": {"nodeName": "lt-0", "initContainers": [{"name": "init", "image": "busybox",
                                                          "command": ["sleep", "3600"]}],
                 "containers": [{"name": "main", "image": "busybox"}]},
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest), check=True)
    want = 'Error from server (BadRequest): container "main" in pod "initializing" is waiting to start: PodInitializing'
    wait_for(
        "the kubelet's waiting message",
        lambda: cluster.kubectl("logs", "initializing", "-c", "main", timeout=30).stderr.strip() == want,
    )


def test_previous_shows_the_instance_before_the_restart(cluster):
    manifest = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "crashing"},
        "spec": {"nodeName": "lt-1", "containers": [
            {"name": "main", "image": "busybox", "command": ["sh", "-c", "echo attempt; exit 3"]}]},
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest), check=True)

    def restarted() -> bool:
        statuses = kubectl_json(cluster, "get", "pod", "crashing")["status"].get("containerStatuses") or []
        return bool(statuses) and statuses[0]["restartCount"] >= 1

    wait_for("a restart", restarted)
    assert kubectl_ok(cluster, "logs", "crashing", "--previous") == "attempt\n"


def test_a_kubelet_off_loopback_is_never_contacted(cluster):
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "far-away"},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "10.1.2.3"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "remote"},
        "spec": {"nodeName": "far-away", "containers": [{"name": "main", "image": "busybox"}]},
    }  # fmt: skip
    for obj in (node, pod):
        cluster.kubectl("create", "-f", "-", input=json.dumps(obj), check=True)
    assert kubectl_err(cluster, "logs", "remote") == (
        'Error from server (BadRequest): node "far-away" has kubelet address 10.1.2.3, which is not a loopback '
        "address: pyk8s connects only to 127.0.0.0/8 and ::1"
    )


def test_the_kubelet_endpoint_answers_for_its_own_pods_only(cluster):
    lt0 = kubectl_json(cluster, "get", "node", "lt-0")
    port = lt0["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    base = f"https://127.0.0.1:{port}"
    assert get_unverified(f"{base}/healthz") == (200, "ok")
    assert get_unverified(f"{base}/containerLogs/default/echo/main?tailLines=1") == (200, "there\n")
    assert get_unverified(f"{base}/containerLogs/default/echo/main?tailLines=-1")[0] == 422
    assert get_unverified(f"{base}/containerLogs/default/echo/nope") == (
        404,
        'container "nope" not found in pod "echo"\n',
    )
    code, body = get_unverified(f"{base}/exec/default/echo/main?command=ls")
    assert (code, body) == (400, "containers on pyk8s simulated nodes are not real processes: exec is not available")
    # A node that points at this endpoint but is not one of its nodes: the kubelet does not know the pod, and
    # the API server relays its 404 as upstream's response checker does.
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "impostor"},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        },
    }
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray"},
        "spec": {"nodeName": "impostor", "containers": [{"name": "main", "image": "busybox"}]},
    }  # fmt: skip
    for obj in (node, pod):
        cluster.kubectl("create", "-f", "-", input=json.dumps(obj), check=True)
    assert kubectl_err(cluster, "logs", "stray") == (
        "Error from server (NotFound): the server could not find the requested resource ( pods/log stray)"
    )


def test_exec_attach_and_port_forward_say_the_containers_are_simulated(cluster):
    simulated = "containers on pyk8s simulated nodes are not real processes"
    # (running pods: kubectl itself refuses to exec into a completed one)
    assert kubectl_err(cluster, "exec", "-n", "kube-system", "busy", "--", "ls") == (
        f"Error from server (BadRequest): pod busy: {simulated}: exec is not available"
    )
    assert kubectl_err(cluster, "exec", "web", "-c", "b", "--", "ls").endswith(f"{simulated}: exec is not available")
    assert kubectl_err(cluster, "attach", "-n", "kube-system", "busy").endswith(
        f"Error from server (BadRequest): pod busy: {simulated}: attach is not available"
    )
    assert kubectl_err(cluster, "port-forward", "-n", "kube-system", "busy", "18080:80") == (
        f"error: error upgrading connection: pod busy: {simulated}: port-forward is not available"
    )
    assert kubectl_err(cluster, "exec", "unscheduled", "--", "ls") == (
        "Error from server (BadRequest): pod unscheduled does not have a host assigned"
    )


def table(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def test_top_nodes(cluster):
    # lt-2 runs web (250m + 100m, 64Mi + 32Mi) and busy (1500m, 1Gi); lt-1 nothing: the system's 50m and 256Mi.
    rows = {r[0]: r[1:] for r in table(kubectl_ok(cluster, "top", "nodes"))}
    assert rows["NAME"] == ["CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    assert rows["lt-2"] == ["1900m", "47%", "1376Mi", "4%"]
    assert rows["lt-1"] == ["50m", "1%", "256Mi", "0%"]
    assert table(kubectl_ok(cluster, "top", "node", "lt-1", "--no-headers")) == [["lt-1", "50m", "1%", "256Mi", "0%"]]


def test_top_pods(cluster):
    assert table(kubectl_ok(cluster, "top", "pods", "-l", "app=web")) == [
        ["NAME", "CPU(cores)", "MEMORY(bytes)"], ["web", "350m", "96Mi"],
    ]  # fmt: skip
    rows = table(kubectl_ok(cluster, "top", "pods", "-A", "--containers", "-l", "app in (web, busy)"))
    assert rows == [
        ["NAMESPACE", "POD", "NAME", "CPU(cores)", "MEMORY(bytes)"],
        ["default", "web", "a", "250m", "64Mi"],
        ["default", "web", "b", "100m", "32Mi"],
        ["kube-system", "busy", "main", "1500m", "1024Mi"],
    ]
    names = {r[0] for r in table(kubectl_ok(cluster, "top", "pods", "--no-headers"))}
    # No running container, no metrics: not for a pod not yet on a node, nor for one whose containers completed.
    assert "web" in names and not names & {"unscheduled", "echo", "multi"}
    assert kubectl_err(cluster, "top", "pod", "unscheduled") == (
        'Error from server (NotFound): podmetrics.metrics.k8s.io "unscheduled" not found'
    )
    metrics = json.loads(
        kubectl_ok(cluster, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web")
    )
    assert metrics["kind"] == "PodMetrics" and metrics["window"] == "15s"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", metrics["timestamp"])
    assert metrics["containers"][0] == {"name": "a", "usage": {"cpu": "250m", "memory": "64Mi"}}


def test_a_node_address_another_client_changed_is_set_back(cluster):
    # Its kubelet's next status check (every 10 s) writes the loopback address again, as upstream's setters do.
    patch = '{"status":{"addresses":[{"type":"InternalIP","address":"10.1.2.4"},{"type":"Hostname","address":"lt-0"}]}}'

    def internal_ip() -> str | None:
        addresses = kubectl_json(cluster, "get", "node", "lt-0")["status"]["addresses"]
        found = {a["type"]: a["address"] for a in addresses}.get("InternalIP")
        return found if found == "127.0.0.1" else None

    for _ in range(3):
        cluster.kubectl("patch", "node", "lt-0", "--subresource=status", "--type=merge", "-p", patch, check=True)
        res = cluster.kubectl("logs", "echo")
        if res.returncode != 0 or not internal_ip():
            break
        # the kubelet's status check came between the patch and the logs request: the race is lost, try again
    assert res.returncode != 0
    assert res.stderr.startswith('Error from server (BadRequest): node "lt-0" has kubelet')

    wait_for("the node's own address back", internal_ip, timeout=30)
    assert kubectl_ok(cluster, "logs", "echo") == "hi\nthere\n"
