"""`pods/<name>/ephemeralcontainers`: what `kubectl debug` writes. Only spec.ephemeralContainers changes, only by
additions; fields an ephemeral container may not set are refused in upstream's words (upstream:
pkg/registry/core/pod/strategy.go podEphemeralContainersStrategy, pkg/apis/core/validation
ValidatePodEphemeralContainersUpdate and validateEphemeralContainers)."""

from __future__ import annotations

import json
from typing import Any

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "app", "image": "nginx"}], "volumes": [{"name": "data", "emptyDir": {}}]},
}
SMP = "application/strategic-merge-patch+json"


def create(cluster: Any, ns: str) -> dict[str, Any]:
    status, body = cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", POD)
    assert status == 201, body
    return body  # type: ignore[no-any-return]


def patch(cluster: Any, ns: str, body: Any, content_type: str = SMP, name: str = "web") -> tuple[int, Any]:
    path = f"/api/v1/namespaces/{ns}/pods/{name}/ephemeralcontainers"
    return cluster.request("PATCH", path, body, content_type=content_type)  # type: ignore[no-any-return]


def causes(body: Any) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


def test_kubectl_debug_adds_an_ephemeral_container(cluster, ns):
    create(cluster, ns)
    out = cluster.kubectl("debug", "-n", ns, "pod/web", "--image=busybox", "--profile=general", check=True)
    assert "Defaulting debug container name to debugger-" in out.stdout
    pod = json.loads(cluster.kubectl("get", "-n", ns, "pod", "web", "-o", "json", check=True).stdout)
    (ec,) = pod["spec"]["ephemeralContainers"]
    assert ec["name"].startswith("debugger-") and ec["image"] == "busybox"
    # Defaulted as any container is.
    assert (ec["terminationMessagePath"], ec["imagePullPolicy"]) == ("/dev/termination-log", "Always")
    # The GET of the subresource is the pod.
    status, got = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/web/ephemeralcontainers")
    assert status == 200 and got["kind"] == "Pod" and got["spec"]["ephemeralContainers"] == [ec]


def test_only_ephemeral_containers_change(cluster, ns):
    create(cluster, ns)
    body = {
        "metadata": {"labels": {"app": "other"}},
        "spec": {
            "containers": [{"name": "app", "image": "evil"}],
            "ephemeralContainers": [{"name": "dbg", "image": "busybox"}],
        },
        "status": {"phase": "Failed"},
    }
    status, pod = patch(cluster, ns, body)
    assert status == 200, pod
    assert pod["spec"]["containers"][0]["image"] == "nginx" and pod["metadata"]["labels"] == {"app": "web"}
    assert pod["status"]["phase"] == "Pending" and [c["name"] for c in pod["spec"]["ephemeralContainers"]] == ["dbg"]
    # A PUT of the whole pod through the subresource adds too.
    pod["spec"]["ephemeralContainers"].append({"name": "dbg2", "image": "alpine", "command": ["sleep", "1"]})
    status, put = cluster.request("PUT", f"/api/v1/namespaces/{ns}/pods/web/ephemeralcontainers", pod)
    assert status == 200, put
    assert [c["name"] for c in put["spec"]["ephemeralContainers"]] == ["dbg", "dbg2"]


def test_existing_ephemeral_containers_may_not_change_or_go(cluster, ns):
    create(cluster, ns)
    assert patch(cluster, ns, {"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}})[0] == 200
    status, body = patch(cluster, ns, {"spec": {"ephemeralContainers": []}}, "application/merge-patch+json")
    assert status == 422 and body["reason"] == "Invalid"
    assert causes(body) == [
        (
            "FieldValueForbidden",
            "spec.ephemeralContainers",
            'Forbidden: existing ephemeral containers "dbg" may not be removed\n',
        ),
    ]
    ops = [{"op": "replace", "path": "/spec/ephemeralContainers/0/image", "value": "alpine"}]
    status, body = patch(cluster, ns, ops, "application/json-patch+json")
    assert status == 422
    ((reason, fld, message),) = causes(body)
    assert (reason, fld) == ("FieldValueForbidden", "spec.ephemeralContainers[dbg]")
    assert message.startswith('Forbidden: existing ephemeral containers "dbg" may not be changed\n')


def test_fields_an_ephemeral_container_may_not_set(cluster, ns):
    create(cluster, ns)
    bad = {
        "name": "dbg", "image": "busybox", "ports": [{"containerPort": 80}],
        "resources": {"requests": {"cpu": "100m"}}, "readinessProbe": {"exec": {"command": ["true"]}},
        "lifecycle": {"preStop": {"exec": {"command": ["true"]}}}, "targetContainerName": "nope",
        "volumeMounts": [{"name": "data", "mountPath": "/d", "subPath": "x"}],
    }  # fmt: skip
    status, body = patch(cluster, ns, {"spec": {"ephemeralContainers": [bad]}})
    assert status == 422
    e = "spec.ephemeralContainers[0]"
    assert causes(body) == [
        ("FieldValueNotFound", f"{e}.targetContainerName", 'Not found: "nope"'),
        ("FieldValueForbidden", f"{e}.ports", "Forbidden: cannot be set for an Ephemeral Container"),
        ("FieldValueForbidden", f"{e}.resources", "Forbidden: cannot be set for an Ephemeral Container"),
        ("FieldValueForbidden", f"{e}.readinessProbe", "Forbidden: cannot be set for an Ephemeral Container"),
        ("FieldValueForbidden", f"{e}.lifecycle", "Forbidden: cannot be set for an Ephemeral Container"),
        ("FieldValueForbidden", f"{e}.volumeMounts[0].subPath", "Forbidden: cannot be set for an Ephemeral Container"),
    ]
    # A name another container has.
    status, body = patch(cluster, ns, {"spec": {"ephemeralContainers": [{"name": "app", "image": "busybox"}]}})
    assert status == 422 and causes(body) == [("FieldValueDuplicate", f"{e}.name", 'Duplicate value: "app"')]


def test_the_pod_must_exist_and_a_pod_is_created_without_them(cluster, ns):
    status, body = patch(cluster, ns, {"spec": {"ephemeralContainers": [{"name": "d", "image": "b"}]}}, name="nope")
    assert status == 404 and body["reason"] == "NotFound" and body["message"] == 'pods "nope" not found'
    with_ec = {**POD, "spec": {**POD["spec"], "ephemeralContainers": [{"name": "d", "image": "busybox"}]}}
    status, body = cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", with_ec)
    assert status == 422
    assert causes(body) == [("FieldValueForbidden", "spec.ephemeralContainers", "Forbidden: cannot be set on create")]
