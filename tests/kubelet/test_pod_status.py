"""The pod status a simulated kubelet writes, step by step: ContainerCreating, then Running (init containers
completed in order, sidecars running), in the kubelet's condition order, with the runtime's image references."""

from __future__ import annotations

import pytest

from pyk8s.kubelet.pod_status import _image_ref, creating_status, pod_ip, running_status

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:02Z"
SCHEDULED = {
    "type": "PodScheduled",
    "status": "True",
    "lastProbeTime": None,
    "lastTransitionTime": "2025-12-31T23:59:59Z",
}


def pod(init: bool = False) -> dict:
    spec: dict = {"nodeName": "n1", "containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis:7"}]}
    if init:
        spec["initContainers"] = [
            {"name": "setup", "image": "busybox"},
            {"name": "proxy", "image": "envoyproxy/envoy:v1.31.0", "restartPolicy": "Always"},
        ]
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "u1"},
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": "BestEffort", "conditions": [SCHEDULED]},
    }


@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("nginx", "docker.io/library/nginx:latest"),
        ("redis:7", "docker.io/library/redis:7"),
        ("envoyproxy/envoy:v1.31.0", "docker.io/envoyproxy/envoy:v1.31.0"),
        ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
    ],
)
def test_image_references_as_a_runtime_reports_them(image, want):
    name, digest = _image_ref(image)
    assert name == want
    assert digest.startswith(want.rsplit(":", 1)[0] + "@sha256:") and len(digest.rsplit(":", 1)[1]) == 64


def test_creating_then_running():
    p = pod()
    creating = creating_status(p, "127.0.0.1", T0)
    assert creating["phase"] == "Pending" and creating["hostIPs"] == [{"ip": "127.0.0.1"}]
    assert creating["startTime"] == T0 and creating["qosClass"] == "BestEffort"
    assert [(c["type"], c["status"]) for c in creating["conditions"]] == [
        ("PodReadyToStartContainers", "False"), ("Initialized", "True"), ("Ready", "False"),
        ("ContainersReady", "False"), ("PodScheduled", "True"),
    ]  # fmt: skip
    ready = creating["conditions"][2]
    assert (ready["reason"], ready["message"]) == ("ContainersNotReady", "containers with unready status: [a b]")
    assert [s["state"] for s in creating["containerStatuses"]] == [{"waiting": {"reason": "ContainerCreating"}}] * 2
    assert creating["conditions"][4] == SCHEDULED  # the scheduler's, kept as it was

    p["status"] = creating
    running = running_status(p, "127.0.0.1", "10.244.0.5", T1)
    assert running["phase"] == "Running" and running["podIPs"] == [{"ip": "10.244.0.5"}]
    assert running["startTime"] == T0  # set once
    conds = {c["type"]: c for c in running["conditions"]}
    assert all(c["status"] == "True" for c in conds.values())
    assert conds["Initialized"]["lastTransitionTime"] == T0  # unchanged status keeps its transition
    assert conds["Ready"]["lastTransitionTime"] == T1 and "reason" not in conds["Ready"]
    a, b = running["containerStatuses"]
    assert a["state"] == {"running": {"startedAt": T1}} and a["ready"] and a["started"]
    assert b["image"] == "docker.io/library/redis:7" and a["containerID"] != b["containerID"]


def test_init_containers_complete_in_order_and_sidecars_keep_running():
    p = pod(init=True)
    creating = creating_status(p, "127.0.0.1", T0)
    init = {c["type"]: c for c in creating["conditions"]}["Initialized"]
    assert (init["status"], init["reason"]) == ("False", "ContainersNotInitialized")
    assert init["message"] == "containers with incomplete status: [setup proxy]"
    assert [s["state"] for s in creating["initContainerStatuses"]] == [{"waiting": {"reason": "PodInitializing"}}] * 2
    p["status"] = creating
    setup, proxy = running_status(p, "127.0.0.1", "10.244.0.6", T1)["initContainerStatuses"]
    assert setup["state"]["terminated"]["exitCode"] == 0 and setup["state"]["terminated"]["reason"] == "Completed"
    assert not setup["started"] and "running" in proxy["state"] and proxy["started"]


def test_pod_ips_differ_by_node_and_by_pod():
    ips = {pod_ip(n, k) for n in range(300) for k in range(1, 5)}
    assert len(ips) == 1200
