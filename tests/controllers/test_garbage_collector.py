"""Cascading deletion as a user sees it through kubectl: background, foreground and orphan propagation,
dangling owner references, and namespace deletion, carried out by pyk8s's controller manager."""

from __future__ import annotations

import asyncio

import pytest

from pyk8s.api import errors


async def eventually(check, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if await check():
            return
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"{what} not reached in {timeout}s")
        await asyncio.sleep(0.1)


def replicaset(name: str) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def owned_pod(name: str, *owners: dict, block: bool = True) -> dict:
    refs = [
        {
            "apiVersion": o["apiVersion"],
            "kind": o["kind"],
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
            "blockOwnerDeletion": block,
        }
        for o in owners
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "ownerReferences": refs},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


async def owner_with_pods(client, ns: str, name: str, n: int = 3) -> dict:
    rs = await client.create("replicasets.apps", replicaset(name), ns)
    for i in range(n):
        await client.create("pods", owned_pod(f"{name}-{i}", rs), ns)
    return rs


async def pod_names(client, ns: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in (await client.list("pods", ns))["items"])


async def test_background_deletion_removes_dependents(cluster, client, ns):
    await owner_with_pods(client, ns, "bg")
    res = cluster.kubectl("delete", "rs", "bg", "-n", ns)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == 'replicaset.apps "bg" deleted'

    async def pods_gone() -> bool:
        return await pod_names(client, ns) == []

    await eventually(pods_gone, what="dependents deleted")


async def test_foreground_deletion_waits_for_blocking_dependents(cluster, client, ns):
    rs = await owner_with_pods(client, ns, "fg")
    # A dependent that does not block its owner: deleted too, but not waited for.
    loose = await client.create(
        "configmaps",
        {
            "metadata": {
                "name": "loose",
                "ownerReferences": owned_pod("x", rs, block=False)["metadata"]["ownerReferences"],
            }
        },
        ns,
    )
    assert loose["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
    res = cluster.kubectl("delete", "rs", "fg", "-n", ns, "--cascade=foreground", timeout=60)
    assert res.returncode == 0, res.stderr
    # kubectl waited for the owner to vanish; in the foreground that happens only after its blocking
    # dependents are gone.
    with pytest.raises(errors.NotFound):
        await client.get("replicasets.apps", "fg", ns)
    assert await pod_names(client, ns) == []

    async def loose_gone() -> bool:
        try:
            await client.get("configmaps", "loose", ns)
        except errors.NotFound:
            return True
        return False

    await eventually(loose_gone, what="non-blocking dependent deleted")


async def test_foreground_owner_is_visible_while_dependents_remain(cluster, client, ns):
    rs = await owner_with_pods(client, ns, "held", n=1)
    # The dependent has a finalizer of its own, so it cannot go yet: the owner stays, marked for deletion.
    await client.patch("pods", "held-0", {"metadata": {"finalizers": ["example.com/hold"]}}, ns)
    res = cluster.kubectl("delete", "rs", "held", "-n", ns, "--cascade=foreground", "--wait=false")
    assert res.returncode == 0, res.stderr

    async def pod_terminating() -> bool:
        pod = await client.get("pods", "held-0", ns)
        return bool(pod["metadata"].get("deletionTimestamp"))

    await eventually(pod_terminating, what="dependent marked for deletion")
    owner = await client.get("replicasets.apps", "held", ns)
    assert owner["metadata"]["uid"] == rs["metadata"]["uid"]
    assert "foregroundDeletion" in owner["metadata"]["finalizers"]
    await client.patch("pods", "held-0", {"metadata": {"finalizers": None}}, ns, patch_type="merge")

    async def owner_gone() -> bool:
        try:
            await client.get("replicasets.apps", "held", ns)
        except errors.NotFound:
            return True
        return False

    await eventually(owner_gone, what="owner deleted after its dependent")


async def test_orphan_deletion_keeps_dependents_without_owner(cluster, client, ns):
    await owner_with_pods(client, ns, "or")
    res = cluster.kubectl("delete", "rs", "or", "-n", ns, "--cascade=orphan", timeout=60)
    assert res.returncode == 0, res.stderr
    with pytest.raises(errors.NotFound):
        await client.get("replicasets.apps", "or", ns)
    # The owner went only after every dependent was released.
    pods = (await client.list("pods", ns))["items"]
    assert sorted(p["metadata"]["name"] for p in pods) == ["or-0", "or-1", "or-2"]
    assert all(not p["metadata"].get("ownerReferences") for p in pods)


async def test_dangling_references(client, ns):
    ghost = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000001"},
    }
    keeper = await client.create("configmaps", {"metadata": {"name": "keeper"}}, ns)
    keeper = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": keeper["metadata"]}
    await client.create("pods", owned_pod("orphaned", ghost), ns)
    await client.create("pods", owned_pod("half", ghost, keeper), ns)

    async def settled() -> bool:
        names = await pod_names(client, ns)
        if names != ["half"]:
            return False
        refs = (await client.get("pods", "half", ns))["metadata"].get("ownerReferences") or []
        return [r["name"] for r in refs] == ["keeper"]

    # The pod whose only owner never existed is deleted; the one with a real owner only loses the bad reference.
    await eventually(settled, what="dangling owner handled")


async def test_namespace_deletion_empties_and_removes_it(cluster, client, ns):
    await owner_with_pods(client, ns, "app")
    await client.create("configmaps", {"metadata": {"name": "cfg"}}, ns)
    await client.create("secrets", {"metadata": {"name": "s"}, "stringData": {"k": "v"}}, ns)
    res = cluster.kubectl("delete", "namespace", ns, timeout=90)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f'namespace "{ns}" deleted'
    with pytest.raises(errors.NotFound):
        await client.get("namespaces", ns)
    assert (await client.list("configmaps", ns))["items"] == []


async def test_namespace_waits_for_finalizers_and_says_so(cluster, client, ns):
    await client.create("configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}, ns)
    res = cluster.kubectl("delete", "namespace", ns, "--wait=false")
    assert res.returncode == 0, res.stderr

    async def reported() -> bool:
        conds = {c["type"]: c for c in (await client.get("namespaces", ns)).get("status", {}).get("conditions") or []}
        c = conds.get("NamespaceFinalizersRemaining")
        return bool(c and c["status"] == "True")

    await eventually(reported, what="finalizers reported")
    namespace = await client.get("namespaces", ns)
    assert namespace["status"]["phase"] == "Terminating"
    conds = {c["type"]: c for c in namespace["status"]["conditions"]}
    assert conds["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    )
    assert (
        conds["NamespaceContentRemaining"]["message"]
        == "Some resources are remaining: configmaps has 1 resource instances"
    )
    await client.patch("configmaps", "held", {"metadata": {"finalizers": None}}, ns, patch_type="merge")

    async def gone() -> bool:
        try:
            await client.get("namespaces", ns)
        except errors.NotFound:
            return True
        return False

    await eventually(gone, what="namespace removed")


async def test_a_wrong_reference_does_not_orphan_a_right_one(client, ns):
    rs = await client.create("replicasets.apps", replicaset("real"), ns)
    typo = {**rs, "metadata": {**rs["metadata"], "name": "typo"}}
    await client.create("pods", owned_pod("good", rs), ns)
    await client.create("pods", owned_pod("bad", typo), ns)  # the right uid under a name that does not exist

    async def bad_gone() -> bool:
        return "bad" not in await pod_names(client, ns)

    await eventually(bad_gone, what="the pod with a dangling reference deleted")
    await asyncio.sleep(1.0)
    good = await client.get("pods", "good", ns)
    assert [r["name"] for r in good["metadata"]["ownerReferences"]] == ["real"]


async def test_cluster_scoped_object_with_namespaced_owner_is_left_alone(client, ns):
    def cluster_role(name: str, owner: dict) -> dict:
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name, "ownerReferences": [owner]},
            "rules": [],
        }

    pod_owner = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "00000000-0000-0000-0000-00000000000a"}
    ns_owner = {"apiVersion": "v1", "kind": "Namespace", "name": "never", "uid": "00000000-0000-0000-0000-00000000000b"}
    await client.create("clusterroles.rbac.authorization.k8s.io", cluster_role(f"{ns}-odd", pod_owner))
    await client.create("clusterroles.rbac.authorization.k8s.io", cluster_role(f"{ns}-dangling", ns_owner))

    async def dangling_gone() -> bool:
        try:
            await client.get("clusterroles.rbac.authorization.k8s.io", f"{ns}-dangling")
        except errors.NotFound:
            return True
        return False

    # The collector has looked at both by the time the one with a missing cluster-scoped owner is gone.
    await eventually(dangling_gone, what="the cluster role with a missing owner deleted")
    await asyncio.sleep(1.0)
    kept = await client.get("clusterroles.rbac.authorization.k8s.io", f"{ns}-odd")
    assert kept["metadata"]["ownerReferences"] == [pod_owner]
    await client.delete("clusterroles.rbac.authorization.k8s.io", f"{ns}-odd")
