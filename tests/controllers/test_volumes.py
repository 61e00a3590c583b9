"""Volumes with kubectl on simulated nodes: a StatefulSet's claims are provisioned by the default `local-path`
class once the scheduler picks a node and come up Bound in order; static PersistentVolumes bind to matching claims
and are Released or Failed by their reclaim policy when the claim goes; the protection finalizers keep a claim in
use, and a Bound volume, from disappearing; the PV controller's events as upstream words them."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from pyk8s.api.storage_class import default_class
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.polling import wait_for


@pytest.fixture
def cluster(full_cluster: APIServerProcess) -> APIServerProcess:
    return full_cluster


def kubectl_json(cluster: APIServerProcess, *args: str) -> Any:
    return json.loads(cluster.kubectl(*args, "-o", "json", check=True).stdout)


def apply(cluster: APIServerProcess, *objs: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input="".join("---\n" + json.dumps(o) + "\n" for o in objs), check=True)


def get(cluster: APIServerProcess, kind: str, name: str) -> dict[str, Any] | None:
    res = cluster.kubectl("get", kind, name, "-o", "json")
    return json.loads(res.stdout) if res.returncode == 0 else None


def events_of(cluster: APIServerProcess, name: str) -> list[tuple[str, str]]:
    items = kubectl_json(cluster, "get", "events", "--field-selector", f"involvedObject.name={name}")["items"]
    return [(e["reason"], e["message"]) for e in items]


def phase(cluster: APIServerProcess, kind: str, name: str) -> str | None:
    obj = get(cluster, kind, name)
    return None if obj is None else (obj.get("status") or {}).get("phase")


def pv(name: str, *, size: str = "1Gi", policy: str = "Retain", cls: str = "manual", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": {"disk": name}},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                     "persistentVolumeReclaimPolicy": policy, "hostPath": {"path": f"/tmp/{name}"}, **spec}}  # fmt: skip


def pvc(name: str, *, size: str = "1Gi", cls: str | None = "manual", **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}
    if cls is not None:
        s["storageClassName"] = cls
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": s}


def test_statefulset_claims_are_provisioned_and_bound(cluster):
    classes = kubectl_json(cluster, "get", "storageclass")["items"]
    assert [c["metadata"]["name"] for c in classes if c["provisioner"] == "rancher.io/local-path"] == ["local-path"]
    assert "local-path (default)" in cluster.kubectl("get", "storageclass", check=True).stdout
    template = {"metadata": {"name": "www"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}}  # fmt: skip
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "store"},
           "spec": {"replicas": 2, "serviceName": "store", "selector": {"matchLabels": {"app": "store"}},
                    "template": {"metadata": {"labels": {"app": "store"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                    "volumeClaimTemplates": [template]}}  # fmt: skip
    apply(cluster, sts)
    res = cluster.kubectl("rollout", "status", "sts/store", "--timeout=90s", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    for i in range(2):
        claim = kubectl_json(cluster, "get", "pvc", f"www-store-{i}")
        pod = kubectl_json(cluster, "get", "pod", f"store-{i}")
        assert claim["status"]["phase"] == "Bound" and claim["spec"]["storageClassName"] == "local-path"
        assert claim["status"]["capacity"] == {"storage": "2Gi"} and claim["status"]["accessModes"] == ["ReadWriteOnce"]
        assert "kubernetes.io/pvc-protection" in claim["metadata"]["finalizers"]
        ann = claim["metadata"]["annotations"]
        assert ann["pv.kubernetes.io/bind-completed"] == "yes" and ann["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert ann["volume.kubernetes.io/selected-node"] == pod["spec"]["nodeName"]
        assert ann["volume.kubernetes.io/storage-provisioner"] == "rancher.io/local-path"
        volume = kubectl_json(cluster, "get", "pv", claim["spec"]["volumeName"])
        assert volume["metadata"]["name"] == f"pvc-{claim['metadata']['uid']}"
        assert volume["status"]["phase"] == "Bound" and volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
        assert volume["spec"]["claimRef"]["name"] == f"www-store-{i}"
        assert volume["spec"]["local"]["path"] == (
            f"/var/lib/rancher/k3s/storage/{volume['metadata']['name']}_default_www-store-{i}"
        )
        terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == [pod["spec"]["nodeName"]]
        assert volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "rancher.io/local-path"
        assert "kubernetes.io/pv-protection" in volume["metadata"]["finalizers"]
    reasons = [r for r, _ in events_of(cluster, "www-store-0")]
    assert {"ExternalProvisioning", "Provisioning", "ProvisioningSucceeded"} <= set(reasons), reasons
    table = cluster.kubectl("get", "pvc", "www-store-0", check=True).stdout
    assert "Bound" in table and "local-path" in table

    # Deleting a claim in use waits for its pod; then its provisioned volume goes too (reclaim policy Delete).
    volume_name = kubectl_json(cluster, "get", "pvc", "www-store-1")["spec"]["volumeName"]
    cluster.kubectl("scale", "sts/store", "--replicas=1", check=True)
    cluster.kubectl("delete", "pvc", "www-store-1", "--wait=false", check=True)
    wait_for("the claim gone once its pod is", lambda: get(cluster, "pvc", "www-store-1") is None, timeout=60)
    wait_for("its volume deleted", lambda: get(cluster, "pv", volume_name) is None, timeout=60)


def test_static_volume_binds_and_is_released(cluster):
    apply(cluster, pv("disk-small", size="1Gi"), pv("disk-big", size="5Gi"))
    wait_for(
        "volumes Available",
        lambda: phase(cluster, "pv", "disk-small") == phase(cluster, "pv", "disk-big") == "Available",
    )
    apply(cluster, pvc("claim-a", size="500Mi"))
    wait_for("claim-a Bound", lambda: phase(cluster, "pvc", "claim-a") == "Bound")
    claim = kubectl_json(cluster, "get", "pvc", "claim-a")
    assert claim["spec"]["volumeName"] == "disk-small"  # the smallest that fits
    assert claim["status"]["capacity"] == {"storage": "1Gi"}
    volume = kubectl_json(cluster, "get", "pv", "disk-small")
    assert volume["status"]["phase"] == "Bound" and volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert volume["status"]["lastPhaseTransitionTime"]
    assert phase(cluster, "pv", "disk-big") == "Available"

    # A Bound volume is protected: deleting it waits until its claim lets go, and then Retain keeps nothing bound.
    cluster.kubectl("delete", "pv", "disk-small", "--wait=false", check=True)
    assert get(cluster, "pv", "disk-small")["metadata"]["deletionTimestamp"]
    cluster.kubectl("delete", "pvc", "claim-a", check=True, timeout=60)
    wait_for("the released volume gone", lambda: get(cluster, "pv", "disk-small") is None, timeout=60)

    # Retain on a released volume: it stays Released, not offered to new claims.
    apply(cluster, pvc("claim-b", size="2Gi"))
    wait_for(
        "claim-b Bound to the big disk",
        lambda: (get(cluster, "pvc", "claim-b") or {}).get("spec", {}).get("volumeName") == "disk-big",
    )
    cluster.kubectl("delete", "pvc", "claim-b", check=True, timeout=60)
    wait_for("disk-big Released", lambda: phase(cluster, "pv", "disk-big") == "Released")

    # Delete on a volume nobody provisioned: no deleter for it here, so it is Failed with upstream's event.
    apply(cluster, pv("disk-del", policy="Delete", cls="manual-del"), pvc("claim-c", cls="manual-del"))
    wait_for("claim-c Bound", lambda: phase(cluster, "pvc", "claim-c") == "Bound")
    cluster.kubectl("delete", "pvc", "claim-c", check=True, timeout=60)
    wait_for("disk-del Failed", lambda: phase(cluster, "pv", "disk-del") == "Failed")
    # The event follows the status write (as upstream's recorder, asynchronously): wait for it, not assume it.
    failed = ("VolumeFailedDelete", 'error getting deleter volume plugin for volume "disk-del": no deletable volume '
              "plugin matched")  # fmt: skip
    wait_for("the VolumeFailedDelete event", lambda: failed in events_of(cluster, "disk-del"))


def test_claims_that_cannot_bind_say_why(cluster):
    apply(cluster, pv("disk-rox", cls="rox", accessModes=["ReadOnlyMany"]))
    apply(
        cluster,
        pvc("no-class", cls=""),  # an empty class asks for none: not the default's
        pvc("wants-missing", volumeName="no-such-pv"),
        pvc("wants-rox", cls="rox", volumeName="disk-rox"),
        pvc("wait-consumer", cls=None),  # gets local-path, which waits for a pod
    )
    wait_for("FailedBinding", lambda: ("FailedBinding", "no persistent volumes available for this claim and no "
                                       "storage class is set") in events_of(cluster, "no-class"))  # fmt: skip
    wait_for("VolumeMismatch", lambda: ("VolumeMismatch", 'Cannot bind to requested volume "disk-rox": incompatible '
                                        "accessMode") in events_of(cluster, "wants-rox"))  # fmt: skip
    wait_for("WaitForFirstConsumer", lambda: ("WaitForFirstConsumer", "waiting for first consumer to be created "
                                              "before binding") in events_of(cluster, "wait-consumer"))  # fmt: skip
    assert kubectl_json(cluster, "get", "pvc", "wait-consumer")["spec"]["storageClassName"] == "local-path"
    for name in ("no-class", "wants-missing", "wants-rox", "wait-consumer"):
        assert phase(cluster, "pvc", name) == "Pending"
    assert phase(cluster, "pv", "disk-rox") == "Available"

    # The missing volume appears: the claim that named it binds to it.
    apply(cluster, pv("no-such-pv"))
    wait_for("wants-missing Bound", lambda: phase(cluster, "pvc", "wants-missing") == "Bound", timeout=40)
    for name in ("no-class", "wants-missing", "wants-rox", "wait-consumer"):
        cluster.kubectl("delete", "pvc", name, "--wait=false", check=True)


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        ([], None),
        ([("a", "2024-01-01T00:00:00Z", False)], None),
        ([("a", "2024-01-01T00:00:00Z", True), ("b", "2024-01-02T00:00:00Z", False)], "a"),
        ([("a", "2024-01-01T00:00:00Z", True), ("b", "2024-01-02T00:00:00Z", True)], "b"),  # the newest
        ([("b", "2024-01-01T00:00:00Z", True), ("a", "2024-01-01T00:00:00Z", True)], "a"),  # same age: by name
    ],
)
def test_default_storage_class_choice(classes, expected):
    objs = [{"metadata": {"name": n, "creationTimestamp": t,
                          "annotations": {"storageclass.kubernetes.io/is-default-class": "true"} if d else {}}}
            for n, t, d in classes]  # fmt: skip
    chosen = default_class(objs)
    assert (chosen["metadata"]["name"] if chosen else None) == expected


def test_pod_starts_once_its_claim_is_bound(cluster):
    # Bound straight to a node, past the scheduler (which would wait for the claim itself): the kubelet waits.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mounter"},
           "spec": {"nodeName": "dn-0", "containers": [{"name": "c", "image": "busybox"}],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "late-claim"}}]}}  # fmt: skip
    apply(cluster, pod)
    time.sleep(3)  # a few of the kubelet's looks at the missing claim
    status = kubectl_json(cluster, "get", "pod", "mounter")["status"]
    assert status.get("phase") == "Pending" and not status.get("containerStatuses")
    apply(cluster, pv("late-disk", cls="late"), pvc("late-claim", cls="late"))
    wait_for("the pod Running", lambda: phase(cluster, "pod", "mounter") == "Running", timeout=40)
    cluster.kubectl("delete", "pod", "mounter", "--wait=false", check=True)
