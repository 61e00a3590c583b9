"""NodeRestriction: a table of kubelet writes admitted or refused with upstream's messages, and the same through a
real server (`--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction`), the kubelet's identity
taken by impersonation from the admin."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pyk8s.api import errors
from pyk8s.api.resources import TABLE
from pyk8s.apiserver.admission import CREATE, DELETE, UPDATE, Attributes
from pyk8s.apiserver.admission.node_restriction import NodeRestriction, forbidden_labels
from pyk8s.apiserver.authn import UserInfo
from pyk8s.testing.cluster import APIServerProcess

N1 = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))
MIRROR = {"kubernetes.io/config.mirror": "hash"}
OWNER = {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "node-uid", "controller": True}

OBJECTS = {
    ("pods", "team", "mine"): {"metadata": {"name": "mine", "uid": "pod-uid"}, "spec": {"nodeName": "n1"}},
    ("pods", "team", "theirs"): {"metadata": {"name": "theirs", "uid": "other-uid"}, "spec": {"nodeName": "n2"}},
    ("nodes", "", "n1"): {"metadata": {"name": "n1", "uid": "node-uid"}},
}


class Plugin(NodeRestriction):
    """The plugin with its look-ups answered from OBJECTS."""

    async def lookup(self, group_version: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return OBJECTS.get((plural, namespace, name))


def resource(plural: str, group: str = "") -> Any:
    version = "v1"
    r = TABLE.get(group, version, plural)
    assert r is not None, plural
    return r


def mirror_pod(**spec: Any) -> dict[str, Any]:
    md = {"name": "static-web-n1", "annotations": MIRROR, "ownerReferences": [OWNER]}
    return {"metadata": md, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}], **spec}}


def with_meta(obj: dict[str, Any], **md: Any) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], **md}}


def node(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "labels": labels or {}}, "spec": spec}


def pvc(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c", "namespace": "team", "resourceVersion": "1"},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Bound", **status}}  # fmt: skip


def attrs(op: str, plural: str, name: str = "", ns: str = "", obj: Any = None, old: Any = None, sub: str = "",
          group: str = "", user: UserInfo = N1) -> Attributes:  # fmt: skip
    return Attributes(op, resource(plural, group), sub, ns, name, obj, old, user)


OK = None
CASES = [
    # pods: mirror pods only, bound to it, owned by its Node, naming nothing else
    (attrs(CREATE, "pods", "static-web-n1", "team", mirror_pod()), OK),
    (attrs(CREATE, "pods", "p", "team", {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}}),
     'pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods'),
    (attrs(CREATE, "pods", "static-web-n1", "team", {**mirror_pod(), "spec": {"nodeName": "n2"}}),
     'node "n1" can only create pods with spec.nodeName set to itself'),
    (attrs(CREATE, "pods", "static-web-n1", "team", with_meta(mirror_pod(), ownerReferences=[])),
     'node "n1" can only create pods with an owner reference set to itself'),
    (attrs(CREATE, "pods", "static-web-n1", "team", with_meta(mirror_pod(), ownerReferences=[OWNER, OWNER])),
     'node "n1" can only create pods with a single owner reference set to itself'),
    (attrs(CREATE, "pods", "static-web-n1", "team", with_meta(mirror_pod(), ownerReferences=[{**OWNER, "name": "n2"}])),
     'node "n1" can only create pods with an owner reference set to itself'),
    (attrs(CREATE, "pods", "static-web-n1", "team", with_meta(mirror_pod(), ownerReferences=[{**OWNER, "controller": False}])),
     'node "n1" can only create pods with a controller owner reference set to itself'),
    (attrs(CREATE, "pods", "static-web-n1", "team", with_meta(mirror_pod(), ownerReferences=[{**OWNER, "blockOwnerDeletion": True}])),
     'node "n1" must not set blockOwnerDeletion on an owner reference'),
    (attrs(CREATE, "pods", "static-web-n1", "team", with_meta(mirror_pod(), ownerReferences=[{**OWNER, "uid": "x"}])),
     "node n1 UID mismatch: expected x got node-uid"),
    (attrs(CREATE, "pods", "static-web-n1", "team", mirror_pod(serviceAccountName="default")),
     'node "n1" can not create pods that reference a service account'),
    (attrs(CREATE, "pods", "static-web-n1", "team", mirror_pod(imagePullSecrets=[{"name": "pull"}])),
     'node "n1" can not create pods that reference secrets'),
    (attrs(CREATE, "pods", "static-web-n1", "team", mirror_pod(volumes=[{"name": "v", "configMap": {"name": "c"}}])),
     'node "n1" can not create pods that reference configmaps'),
    (attrs(CREATE, "pods", "static-web-n1", "team", mirror_pod(volumes=[{"name": "v", "projected": {"sources": [
        {"clusterTrustBundle": {"name": "b", "path": "p"}}]}}])),
     'node "n1" can not create pods that reference clustertrustbundles'),
    (attrs(CREATE, "pods", "static-web-n1", "team", mirror_pod(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}])),
     'node "n1" can not create pods that reference persistentvolumeclaims'),
    (attrs(DELETE, "pods", "mine", "team", old=OBJECTS[("pods", "team", "mine")]), OK),
    (attrs(DELETE, "pods", "theirs", "team", old=OBJECTS[("pods", "team", "theirs")]),
     'pods "theirs" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself'),
    (attrs(UPDATE, "pods", "mine", "team", OBJECTS[("pods", "team", "mine")], OBJECTS[("pods", "team", "mine")]),
     'unexpected operation "UPDATE", node "n1" can only create and delete mirror pods'),
    (attrs(CREATE, "pods", "mine", "team", {}, sub="binding"),
     "unexpected pod subresource \"binding\", only 'status' and 'eviction' are allowed"),
    # pod status and evictions: its own pods
    (attrs(UPDATE, "pods", "mine", "team", OBJECTS[("pods", "team", "mine")], OBJECTS[("pods", "team", "mine")], "status"), OK),
    (attrs(UPDATE, "pods", "theirs", "team", {}, OBJECTS[("pods", "team", "theirs")], "status"),
     'node "n1" can only update pod status for pods with spec.nodeName set to itself'),
    (attrs(UPDATE, "pods", "mine", "team", with_meta(OBJECTS[("pods", "team", "mine")], labels={"a": "b"}),
           OBJECTS[("pods", "team", "mine")], "status"),
     'node "n1" cannot update labels through pod status'),
    (attrs(CREATE, "pods", "mine", "team", {"metadata": {"name": "mine"}}, sub="eviction"), OK),
    (attrs(CREATE, "pods", "theirs", "team", {"metadata": {"name": "theirs"}}, sub="eviction"),
     "node n1 can only evict pods with spec.nodeName set to itself"),
    (attrs(CREATE, "pods", "", "team", {"metadata": {}}, sub="eviction"), "could not determine pod from request data"),
    # its own Node
    (attrs(CREATE, "nodes", "n1", obj=node({"kubernetes.io/hostname": "n1", "node.kubernetes.io/x": "y",
                                             "example.com/free": "z", "a.kubelet.kubernetes.io/b": "c"})), OK),
    (attrs(CREATE, "nodes", "n2", obj=node()), 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"'),
    (attrs(CREATE, "nodes", "n1", obj=node({"node-role.kubernetes.io/master": "", "kubernetes.io/hostname": "n1"})),
     'node "n1" is not allowed to set the following labels: node-role.kubernetes.io/master'),
    (attrs(CREATE, "nodes", "n1", obj=node(configSource={"configMap": {}})),
     'node "n1" is not allowed to create pods with a non-nil configSource'),
    (attrs(UPDATE, "nodes", "n1", obj=node({"a": "b"}), old=node()), OK),
    (attrs(UPDATE, "nodes", "n1", obj=node(taints=[{"key": "k", "effect": "NoSchedule"}]), old=node(), sub="status"),
     'node "n1" is not allowed to modify taints'),
    (attrs(UPDATE, "nodes", "n1", obj=with_meta(node(), ownerReferences=[{"name": "x"}]), old=node()),
     'node "n1" is not allowed to modify ownerReferences'),
    (attrs(UPDATE, "nodes", "n1", obj=node({"node-restriction.kubernetes.io/x": "y", "k8s.io/z": "1"}), old=node()),
     'nodes "n1" is forbidden: is not allowed to modify labels: k8s.io/z, node-restriction.kubernetes.io/x'),
    (attrs(UPDATE, "nodes", "n1", obj=node(configSource={"configMap": {"name": "new"}}), old=node()),
     'node "n1" is not allowed to update configSource to a new non-nil configSource'),
    (attrs(DELETE, "nodes", "n2", old=node()), 'node "n1" is not allowed to modify node "n2"'),
    # PVC status: capacity and conditions only
    (attrs(UPDATE, "persistentvolumeclaims", "c", "team", pvc(capacity={"storage": "2Gi"},
           conditions=[{"type": "Resizing", "status": "True"}]), pvc(), "status"), OK),
    (attrs(UPDATE, "persistentvolumeclaims", "c", "team", pvc(phase="Lost"), pvc(), "status"),
     'node "n1" is not allowed to update fields other than status.capacity and status.conditions: '
     "-\tstatus.phase: Bound\n+\tstatus.phase: Lost"),
    (attrs(UPDATE, "persistentvolumeclaims", "c", "team", pvc(), pvc()), "may only update PVC status"),
    (attrs(DELETE, "persistentvolumeclaims", "c", "team", old=pvc()), "may only update PVC status"),
    # tokens bound to its pods
    (attrs(CREATE, "serviceaccounts", "default", "team", {"spec": {"boundObjectRef": {
        "apiVersion": "v1", "kind": "Pod", "name": "mine", "uid": "pod-uid"}}}, sub="token"), OK),
    (attrs(CREATE, "serviceaccounts", "default", "team", {"spec": {}}, sub="token"),
     "node requested token not bound to a pod"),
    (attrs(CREATE, "serviceaccounts", "default", "team", {"spec": {"boundObjectRef": {
        "apiVersion": "v1", "kind": "Pod", "name": "mine"}}}, sub="token"),
     "node requested token with a pod binding without a uid"),
    (attrs(CREATE, "serviceaccounts", "default", "team", {"spec": {"boundObjectRef": {
        "apiVersion": "v1", "kind": "Pod", "name": "mine", "uid": "old"}}}, sub="token"),
     "the UID in the bound object reference (old) does not match the UID in record. The object might have been "
     "deleted and then recreated"),
    (attrs(CREATE, "serviceaccounts", "default", "team", {"spec": {"boundObjectRef": {
        "apiVersion": "v1", "kind": "Pod", "name": "theirs", "uid": "other-uid"}}}, sub="token"),
     "node requested token bound to a pod scheduled on a different node"),
    (attrs(CREATE, "serviceaccounts", "sa", "team", {"metadata": {"name": "sa"}}), OK),
    # its lease in kube-node-lease, its CSINode
    (attrs(CREATE, "leases", "n1", "kube-node-lease", {"metadata": {"name": "n1"}}, group="coordination.k8s.io"), OK),
    (attrs(CREATE, "leases", "n2", "kube-node-lease", {"metadata": {"name": "n2"}}, group="coordination.k8s.io"),
     "can only access node lease with the same name as the requesting node"),
    (attrs(UPDATE, "leases", "n1", "default", {}, {}, group="coordination.k8s.io"),
     'can only access leases in the "kube-node-lease" system namespace'),
    (attrs(CREATE, "csinodes", "n1", obj={"metadata": {"name": "n1"}}, group="storage.k8s.io"), OK),
    (attrs(DELETE, "csinodes", "n2", old={}, group="storage.k8s.io"),
     "can only access CSINode with the same name as the requesting node"),
    # anything else, and anyone else
    (attrs(CREATE, "configmaps", "x", "team", {"metadata": {"name": "x"}}), OK),
    (attrs(CREATE, "pods", "p", "team", {"metadata": {"name": "p"}}, user=UserInfo("bob")), OK),
    (attrs(CREATE, "pods", "p", "team", {"metadata": {"name": "p"}}, user=UserInfo("system:node:n1")), OK),
    (attrs(CREATE, "pods", "p", "team", {"metadata": {"name": "p"}},
           user=UserInfo("system:node:", groups=("system:nodes",))),
     'could not determine node from user "system:node:"'),
]  # fmt: skip


@pytest.mark.parametrize(("a", "message"), CASES)
def test_admission(a: Attributes, message: str | None) -> None:
    plugin = Plugin(None)
    if message is None:
        asyncio.run(plugin.admit(a))
        return
    with pytest.raises(errors.StatusError) as err:
        asyncio.run(plugin.admit(a))
    assert err.value.code == 403 and err.value.reason == "Forbidden"
    assert err.value.message.endswith(message), err.value.message


def test_a_missing_pod_is_not_found() -> None:
    a = attrs(CREATE, "pods", "gone", "team", {"metadata": {"name": "gone"}}, sub="eviction")
    with pytest.raises(errors.StatusError) as err:
        asyncio.run(Plugin(None).admit(a))
    assert err.value.code == 404


def test_forbidden_labels() -> None:
    keys = {"kubernetes.io/hostname", "topology.kubernetes.io/zone", "beta.kubernetes.io/arch", "x.k8s.io/y",
            "kubelet.kubernetes.io/a", "sub.node.kubernetes.io/b", "node-restriction.kubernetes.io/c",
            "a.node-restriction.kubernetes.io/d", "plain", "example.com/e"}  # fmt: skip
    assert forbidden_labels(keys) == ["a.node-restriction.kubernetes.io/d", "node-restriction.kubernetes.io/c",
                                      "x.k8s.io/y"]  # fmt: skip


# -- through a server ------------------------------------------------------------------------------------------

NODE_HEADERS = {"Impersonate-User": "system:node:n1", "Impersonate-Group": "system:nodes"}


@pytest.fixture(scope="module")
def server():
    s = APIServerProcess(
        extra_args=("--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction")
    ).start()
    s.create_namespace("team")
    yield s
    s.cleanup()


def as_node(server: APIServerProcess, method: str, path: str, body: object = None,
            content_type: str = "application/json") -> tuple[int, Any]:  # fmt: skip
    return server.request(method, path, body, content_type, headers=NODE_HEADERS)


def test_a_kubelet_registers_only_its_own_node(server: APIServerProcess) -> None:
    n = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}}}
    status, body = as_node(server, "POST", "/api/v1/nodes", {**n, "metadata": {**n["metadata"], "name": "n2"}})
    assert status == 403
    assert body["message"] == 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"'
    labelled = {**n, "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}}}
    status, body = as_node(server, "POST", "/api/v1/nodes", labelled)
    assert status == 403
    assert body["message"] == ('nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: '
                               "node-role.kubernetes.io/control-plane")  # fmt: skip
    status, body = as_node(server, "POST", "/api/v1/nodes", n)
    assert status == 201, body
    merge = "application/merge-patch+json"
    status, body = as_node(
        server, "PATCH", "/api/v1/nodes/n1", {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}, merge
    )
    assert status == 403 and body["message"].endswith('node "n1" is not allowed to modify taints'), body
    status, body = as_node(
        server, "PATCH", "/api/v1/nodes/n1", {"metadata": {"labels": {"node.kubernetes.io/pool": "a"}}}, merge
    )
    assert status == 200, body
    status, body = as_node(server, "PATCH", "/api/v1/nodes/n1/status", {"status": {"phase": "Running"}}, merge)
    assert status == 200, body


def test_a_kubelet_creates_only_mirror_pods_of_its_own(server: APIServerProcess) -> None:
    status, node = server.request("GET", "/api/v1/nodes/n1")
    if status == 404:  # run alone: register the node first
        status, node = server.request(
            "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
        )
    uid = node["metadata"]["uid"]
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "static-n1", "annotations": MIRROR,
         "ownerReferences": [{**OWNER, "uid": uid}]},
         "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}}  # fmt: skip
    plain = {**p, "metadata": {"name": "plain"}}
    status, body = as_node(server, "POST", "/api/v1/namespaces/team/pods", plain)
    assert status == 403
    assert body["message"] == ('pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" '
                               'annotation, node "n1" can only create mirror pods')  # fmt: skip
    status, body = as_node(server, "POST", "/api/v1/namespaces/team/pods", p)
    assert status == 201, body
    other = {**p, "metadata": {"name": "elsewhere"}, "spec": {**p["spec"], "nodeName": "n2"}}
    status, body = server.request("POST", "/api/v1/namespaces/team/pods", other)  # the admin may
    assert status == 201, body
    status, body = as_node(server, "DELETE", "/api/v1/namespaces/team/pods/elsewhere")
    assert status == 403
    assert body["message"].endswith('node "n1" can only delete pods with spec.nodeName set to itself')
    status, body = as_node(server, "DELETE", "/api/v1/namespaces/team/pods/static-n1")
    assert status == 200, body


def test_a_kubelet_keeps_to_its_lease(server: APIServerProcess) -> None:
    def lease(name: str) -> dict[str, Any]:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
                "spec": {"holderIdentity": name}}  # fmt: skip

    path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    status, body = as_node(server, "POST", path, lease("n2"))
    assert status == 403
    assert body["message"] == ('leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the '
                               "same name as the requesting node")  # fmt: skip
    status, body = as_node(server, "POST", path, lease("n1"))
    assert status == 201, body
