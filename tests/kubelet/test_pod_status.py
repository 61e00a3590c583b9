"""The first pod status a simulated kubelet writes (ContainerCreating, in the kubelet's condition order), the
runtime's image references and pod IPs. What follows is tests/kubelet/test_pod_lifecycle.py."""

from __future__ import annotations

import pytest

from pyk8s.kubelet.pod_status import _image_ref, creating_status, pod_ip

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


def test_creating():
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


def test_init_containers_wait_in_pod_initializing():
    creating = creating_status(pod(init=True), "127.0.0.1", T0)
    init = {c["type"]: c for c in creating["conditions"]}["Initialized"]
    assert (init["status"], init["reason"]) == ("False", "ContainersNotInitialized")
    assert init["message"] == "containers with incomplete status: [setup proxy]"
    assert [s["state"] for s in creating["initContainerStatuses"]] == [{"waiting": {"reason": "PodInitializing"}}] * 2


def test_pod_ips_differ_by_node_and_by_pod():
    ips = {pod_ip(n, k) for n in range(300) for k in range(1, 5)}
    assert len(ips) == 1200
