"""StatefulSets with kubectl on simulated nodes: pods come up in order with stable names and identity labels,
`kubectl rollout status` as upstream prints it, scale-down from the highest ordinal, a rolling update from the
highest ordinal down through ControllerRevisions, Parallel management, and the claims volumeClaimTemplates make."""

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


def statefulset(name: str, replicas: int, image: str = "db:1", **spec: Any) -> str:
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": image}]}}, **spec},
    })  # fmt: skip


def pods_of(cluster: APIServerProcess, name: str) -> list[dict[str, Any]]:
    items = kubectl_json(cluster, "get", "pods", "-l", f"app={name}")["items"]
    return sorted((p for p in items if not p["metadata"].get("deletionTimestamp")),
                  key=lambda p: p["metadata"]["creationTimestamp"] + p["metadata"]["name"])  # fmt: skip


def test_ordered_pods_identity_scale_and_rolling_update(cluster):
    cluster.kubectl("apply", "-f", "-", input=statefulset("db", 3), check=True)
    res = cluster.kubectl("rollout", "status", "sts/db", "--timeout=90s", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip().splitlines()[-1] == "partitioned roll out complete: 3 new pods have been updated..."
    pods = pods_of(cluster, "db")
    assert [p["metadata"]["name"] for p in pods] == ["db-0", "db-1", "db-2"]  # created in order
    for i, pod in enumerate(pods):
        labels = pod["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == f"db-{i}" and labels[
            "apps.kubernetes.io/pod-index"
        ] == str(i)
        assert pod["spec"]["hostname"] == f"db-{i}" and pod["spec"]["subdomain"] == "db"
    st = kubectl_json(cluster, "get", "sts", "db")["status"]
    assert st["replicas"] == st["readyReplicas"] == st["availableReplicas"] == st["currentReplicas"] == 3
    assert st["currentRevision"] == st["updateRevision"] == pods[0]["metadata"]["labels"]["controller-revision-hash"]
    events = [
        e["message"]
        for e in kubectl_json(cluster, "get", "events", "--field-selector", "involvedObject.name=db")["items"]
    ]
    assert "create Pod db-0 in StatefulSet db successful" in events
    items = kubectl_json(cluster, "get", "events", "--field-selector", "involvedObject.name=db")["items"]
    created = sorted(
        (e for e in items if e["reason"] == "SuccessfulCreate"),
        key=lambda e: int(e["metadata"]["name"].rsplit(".", 1)[1], 16),
    )
    assert [e["message"] for e in created] == [f"create Pod db-{i} in StatefulSet db successful" for i in (0, 1, 2)]

    cluster.kubectl("set", "image", "sts/db", "c=db:2", check=True)
    res = cluster.kubectl("rollout", "status", "sts/db", "--timeout=90s", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    pods = pods_of(cluster, "db")
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"db:2"}
    # Replaced from the highest ordinal down: db-2 first, db-0 last (events are named after their time in ns).
    items = kubectl_json(cluster, "get", "events", "--field-selector", "involvedObject.name=db")["items"]
    deleted = sorted(
        (e for e in items if e["reason"] == "SuccessfulDelete"),
        key=lambda e: int(e["metadata"]["name"].rsplit(".", 1)[1], 16),
    )
    assert [e["message"] for e in deleted] == [f"delete Pod db-{i} in StatefulSet db successful" for i in (2, 1, 0)]
    st = kubectl_json(cluster, "get", "sts", "db")["status"]
    assert st["currentRevision"] == st["updateRevision"] and st["updatedReplicas"] == 3

    cluster.kubectl("scale", "sts/db", "--replicas=1", check=True)
    wait_for("scaled down to db-0", lambda: [p["metadata"]["name"] for p in pods_of(cluster, "db")] == ["db-0"])


def test_parallel_pods_and_claims(cluster):
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=statefulset("par", 3, podManagementPolicy="Parallel",
                                                          volumeClaimTemplates=[claim]), check=True)  # fmt: skip
    wait_for("three pods at once", lambda: len(pods_of(cluster, "par")) == 3)
    claims = kubectl_json(cluster, "get", "pvc", "-l", "app=par")["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-par-0", "data-par-1", "data-par-2"]
    pod = next(p for p in pods_of(cluster, "par") if p["metadata"]["name"] == "par-1")
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-par-1"}} in pod["spec"]["volumes"]


def test_claim_retention_policy_deletes_claims_with_scale_down_and_set(cluster):
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    policy = {"whenDeleted": "Delete", "whenScaled": "Delete"}
    cluster.kubectl("apply", "-f", "-", input=statefulset("ret", 2, podManagementPolicy="Parallel",
                                                          volumeClaimTemplates=[claim],
                                                          persistentVolumeClaimRetentionPolicy=policy), check=True)  # fmt: skip
    res = cluster.kubectl("rollout", "status", "sts/ret", "--timeout=90s", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    sts_uid = kubectl_json(cluster, "get", "sts", "ret")["metadata"]["uid"]
    refs = kubectl_json(cluster, "get", "pvc", "data-ret-1")["metadata"]["ownerReferences"]
    assert refs == [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ret", "uid": sts_uid}]

    # Scaled down: the condemned ordinal's claim goes with its pod; the other stays.
    cluster.kubectl("scale", "sts/ret", "--replicas=1", check=True)

    def claims() -> list[str]:
        return sorted(c["metadata"]["name"] for c in kubectl_json(cluster, "get", "pvc", "-l", "app=ret")["items"]
                      if not c["metadata"].get("deletionTimestamp"))  # fmt: skip

    wait_for("data-ret-1 deleted with its pod", lambda: claims() == ["data-ret-0"], timeout=60)
    # The set deleted: its remaining claims go too.
    cluster.kubectl("delete", "sts", "ret", "--wait=false", check=True)
    wait_for("every claim deleted with the set", lambda: claims() == [], timeout=60)


@pytest.mark.parametrize(
    ("when_deleted", "when_scaled", "ordinal", "owners"),
    [
        ("Retain", "Retain", 0, set()),
        ("Retain", "Retain", 5, set()),
        ("Delete", "Retain", 0, {"set"}),
        ("Delete", "Retain", 5, {"set"}),
        ("Retain", "Delete", 0, set()),
        ("Retain", "Delete", 5, {"pod"}),
        ("Delete", "Delete", 0, {"set"}),
        ("Delete", "Delete", 5, {"pod"}),  # condemned: the pod's, no longer the set's
    ],
)
def test_claim_owners_follow_the_retention_policy(when_deleted, when_scaled, ordinal, owners):
    from pyk8s.controllers.statefulset.stateful_set_utils import claim_owner_refs

    sts = {"metadata": {"name": "s", "uid": "set-uid"},
           "spec": {"replicas": 2, "persistentVolumeClaimRetentionPolicy": {"whenDeleted": when_deleted,
                                                                           "whenScaled": when_scaled}}}  # fmt: skip
    pod = {"metadata": {"name": f"s-{ordinal}", "uid": "pod-uid"}}
    uids = {"set": "set-uid", "pod": "pod-uid"}
    # From no owners, and from both (a policy changed): the same end state, and then nothing more to do.
    for start in ([], [{"uid": "set-uid"}, {"uid": "pod-uid"}]):
        claim = {"metadata": {"ownerReferences": start}}
        refs = claim_owner_refs(claim, sts, pod, ordinal)
        final = start if refs is None else refs
        assert {r["uid"] for r in final} == {uids[o] for o in owners}
        assert claim_owner_refs({"metadata": {"ownerReferences": final}}, sts, pod, ordinal) is None
