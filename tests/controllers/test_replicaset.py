"""ReplicaSets and ReplicationControllers as a user drives them with kubectl, kept by pyk8s's controller manager:
pods made from the template and owned by their controller, replaced when deleted, the surplus on scale-down
chosen as upstream chooses it, orphans adopted and strays released, status counts (ready, available after
minReadySeconds), events, and cascading deletion of the pods."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from typing import Any

import pytest

from pyk8s.api import errors
from pyk8s.testing.polling import until


def manifest(kind: str, name: str, replicas: int, min_ready: int = 0) -> str:
    if kind == "ReplicationController":
        api, selector = "v1", {"app": name}
    else:
        api, selector = "apps/v1", {"matchLabels": {"app": name}}
    return json.dumps({
        "apiVersion": api, "kind": kind, "metadata": {"name": name},
        "spec": {
            "replicas": replicas, "minReadySeconds": min_ready, "selector": selector,
            "template": {"metadata": {"labels": {"app": name, "tier": "web"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    })  # fmt: skip


async def pods_of(client, ns: str, app: str) -> list[dict[str, Any]]:
    items = (await client.list("pods", ns, label_selector=f"app={app}"))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


async def count_is(client, ns: str, app: str, n: int) -> list[dict[str, Any]] | None:
    pods = await pods_of(client, ns, app)
    return pods if len(pods) == n else None


async def make_ready(client, ns: str, pod: dict[str, Any], *, node: str = "node-a") -> None:
    """What a kubelet would do: bind the pod (its node need not exist for the binding) and report it Running and
    Ready."""
    name = pod["metadata"]["name"]
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip
    await client.create("pods", binding, ns, name=name, subresource="binding")
    fresh = await client.get("pods", name, ns)
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    fresh["status"] = {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}  # fmt: skip
    await client.update_status("pods", fresh, ns)


async def test_replicaset_creates_owned_pods_reports_status_and_events(cluster, client, ns):
    res = cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest("ReplicaSet", "web", 3))
    assert res.returncode == 0, res.stderr
    pods = await until("3 pods", lambda: count_is(client, ns, "web", 3))
    rs = await client.get("replicasets.apps", "web", ns)
    for pod in pods:
        md = pod["metadata"]
        assert md["generateName"] == "web-" and md["name"].startswith("web-")
        assert md["labels"] == {"app": "web", "tier": "web"}
        assert md["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                          "uid": rs["metadata"]["uid"], "controller": True,
                                          "blockOwnerDeletion": True}]  # fmt: skip

    async def status_counted() -> dict[str, Any] | None:
        got = await client.get("replicasets.apps", "web", ns)
        st = got.get("status") or {}
        return got if st.get("replicas") == 3 and st.get("observedGeneration") == 1 else None

    rs = await until("status replicas 3", status_counted)
    assert rs["status"]["fullyLabeledReplicas"] == 3
    assert "readyReplicas" not in rs["status"]  # none is Ready: no kubelet here
    out = cluster.kubectl("get", "rs", "web", "-n", ns, "--no-headers", check=True).stdout.split()
    assert out[:4] == ["web", "3", "3", "0"]  # NAME DESIRED CURRENT READY

    async def events() -> list[dict[str, Any]] | None:
        items = (await client.list("events", ns))["items"]
        made = [e for e in items if e["reason"] == "SuccessfulCreate" and e["involvedObject"]["name"] == "web"]
        return made if len(made) == 3 else None

    made = await until("three SuccessfulCreate events", events)
    assert {e["message"] for e in made} == {f"Created pod: {p['metadata']['name']}" for p in pods}
    assert {e["source"]["component"] for e in made} == {"replicaset-controller"}
    assert {e["involvedObject"]["kind"] for e in made} == {"ReplicaSet"}


async def test_deleted_pods_are_replaced_and_scale_down_removes_the_least_established(cluster, client, ns):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest("ReplicaSet", "keep", 3), check=True)
    pods = await until("3 pods", lambda: count_is(client, ns, "keep", 3))
    victim = pods[0]["metadata"]["name"]
    cluster.kubectl("delete", "pod", victim, "-n", ns, check=True)

    async def replaced() -> list[dict[str, Any]] | None:
        now = await pods_of(client, ns, "keep")
        return now if len(now) == 3 and victim not in {p["metadata"]["name"] for p in now} else None

    pods = await until("the deleted pod replaced", replaced)
    # One pod runs and is Ready on a node; the two others were never scheduled: they go first.
    established = pods[1]
    await make_ready(client, ns, established)
    cluster.kubectl("scale", "rs", "keep", "-n", ns, "--replicas=1", check=True)
    left = await until("scaled down to 1", lambda: count_is(client, ns, "keep", 1))
    assert left[0]["metadata"]["name"] == established["metadata"]["name"]

    async def deleted_events() -> list[str] | None:
        items = (await client.list("events", ns))["items"]
        gone = [
            e["message"] for e in items if e["reason"] == "SuccessfulDelete" and e["involvedObject"]["name"] == "keep"
        ]
        return gone if len(gone) == 2 else None

    gone = await until("two SuccessfulDelete events", deleted_events)
    assert all(m.startswith("Deleted pod: keep-") for m in gone)

    async def ready_counted() -> bool:
        st = (await client.get("replicasets.apps", "keep", ns)).get("status") or {}
        return st.get("replicas") == 1 and st.get("readyReplicas") == 1 and st.get("availableReplicas") == 1

    await until("status counts the Ready pod", ready_counted)


async def test_orphans_are_adopted_and_pods_that_stop_matching_are_released(cluster, client, ns):
    orphan = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray", "labels": {"app": "adopt"}},
              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip
    await client.create("pods", orphan, ns)
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest("ReplicaSet", "adopt", 2), check=True)
    rs = await client.get("replicasets.apps", "adopt", ns)

    async def adopted() -> dict[str, Any] | None:
        pod = await client.get("pods", "stray", ns)
        refs = pod["metadata"].get("ownerReferences") or []
        return pod if refs and refs[0]["uid"] == rs["metadata"]["uid"] and refs[0]["controller"] else None

    await until("the orphan adopted", adopted)
    pods = await until("2 pods", lambda: count_is(client, ns, "adopt", 2))
    assert "stray" in {p["metadata"]["name"] for p in pods}  # only one new pod was needed
    await asyncio.sleep(0.5)
    assert len(await pods_of(client, ns, "adopt")) == 2

    # Relabelled out of the selector: released (the reference removed), and a new pod keeps the count.
    cluster.kubectl("label", "pod", "stray", "-n", ns, "app=elsewhere", "--overwrite", check=True)

    async def released() -> bool:
        pod = await client.get("pods", "stray", ns)
        return not pod["metadata"].get("ownerReferences")

    await until("the pod released", released)
    await until("a replacement for the released pod", lambda: count_is(client, ns, "adopt", 2))


async def test_available_replicas_wait_for_min_ready_seconds(cluster, client, ns):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest("ReplicaSet", "slow", 1, min_ready=2), check=True)
    pods = await until("1 pod", lambda: count_is(client, ns, "slow", 1))
    await make_ready(client, ns, pods[0])

    async def status() -> dict[str, Any]:
        return (await client.get("replicasets.apps", "slow", ns)).get("status") or {}

    async def ready_not_available() -> bool:
        st = await status()
        return st.get("readyReplicas") == 1

    await until("readyReplicas 1", ready_not_available)
    assert not (await status()).get("availableReplicas")

    async def available() -> bool:
        return (await status()).get("availableReplicas") == 1

    await until("availableReplicas 1 after minReadySeconds", available, 15)


async def test_replication_controller_keeps_its_pods(cluster, client, ns):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest("ReplicationController", "legacy", 2), check=True)
    pods = await until("2 pods", lambda: count_is(client, ns, "legacy", 2))
    rc = await client.get("replicationcontrollers", "legacy", ns)
    assert {p["metadata"]["ownerReferences"][0]["kind"] for p in pods} == {"ReplicationController"}
    assert {p["metadata"]["ownerReferences"][0]["uid"] for p in pods} == {rc["metadata"]["uid"]}
    cluster.kubectl("scale", "rc", "legacy", "-n", ns, "--replicas=3", check=True)
    await until("scaled up to 3", lambda: count_is(client, ns, "legacy", 3))

    async def events() -> bool:
        items = (await client.list("events", ns))["items"]
        made = [e for e in items if e["reason"] == "SuccessfulCreate" and e["involvedObject"]["name"] == "legacy"]
        return len(made) == 3 and {e["source"]["component"] for e in made} == {"replication-controller"}

    await until("the replication controller's events", events)

    async def counted() -> bool:
        st = (await client.get("replicationcontrollers", "legacy", ns)).get("status") or {}
        return st.get("replicas") == 3 and st.get("observedGeneration") == 2

    await until("RC status replicas 3", counted)


async def test_deleting_a_replicaset_deletes_its_pods(cluster, client, ns):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest("ReplicaSet", "gone", 2), check=True)
    await until("2 pods", lambda: count_is(client, ns, "gone", 2))
    cluster.kubectl("delete", "rs", "gone", "-n", ns, check=True)

    async def no_pods() -> bool:
        items = (await client.list("pods", ns, label_selector="app=gone"))["items"]
        return not items

    await until("the pods deleted with their ReplicaSet", no_pods)
    with pytest.raises(errors.NotFound):
        await client.get("replicasets.apps", "gone", ns)
