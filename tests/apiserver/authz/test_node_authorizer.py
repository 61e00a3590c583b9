"""The Node authorizer: a table of kubelet requests decided from a graph of pods, volumes and attachments (with
upstream's reasons), a property test of reachability against a brute-force walk, and the same rules through a
real `pyk8s apiserver --authorization-mode=Node,RBAC` with a kubelet's identity by impersonation."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.api.selectors import EQUALS, FieldRequirement
from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.authz import ALLOW, NO_OPINION, Attributes
from pyk8s.apiserver.authz.node import NodeAuthorizer, node_identity
from pyk8s.apiserver.authz.node.graph import POD, PV, SECRET, VOLUME_ATTACHMENT, Graph
from pyk8s.storage.interface import ADDED, DELETED
from pyk8s.testing.cluster import APIServerProcess

N1 = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))
UNRELATED = "no relationship found between node 'n1' and this object"


def pod(ns: str, name: str, node: str = "", *, mirror: bool = False, **spec: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"namespace": ns, "name": name, "uid": f"uid-{name}"}
    if mirror:
        md["annotations"] = {"kubernetes.io/config.mirror": "x"}
    return {"metadata": md, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}], **spec}}


P1 = pod(
    "team", "p1", "n1",
    serviceAccountName="sa1",
    imagePullSecrets=[{"name": "pull"}],
    initContainers=[{"name": "i", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "envsec", "key": "k"}}}]}],
    containers=[{"name": "c", "envFrom": [{"configMapRef": {"name": "cmenv"}}]}],
    volumes=[
        {"name": "s", "secret": {"secretName": "volsec"}},
        {"name": "p", "projected": {"sources": [{"secret": {"name": "projsec"}}, {"configMap": {"name": "projcm"}}]}},
        {"name": "c", "configMap": {"name": "cm1"}},
        {"name": "d", "persistentVolumeClaim": {"claimName": "claim1"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
    ],
)  # fmt: skip
P2 = pod("team", "p2", "n2", volumes=[{"name": "s", "secret": {"secretName": "other-secret"}}])
PENDING = pod("team", "p3", volumes=[{"name": "s", "secret": {"secretName": "pending-secret"}}])
MIRROR = pod("team", "m1", "n1", mirror=True, volumes=[{"name": "s", "secret": {"secretName": "mirror-secret"}}])
PV1 = {"metadata": {"name": "pv1"}, "spec": {"claimRef": {"namespace": "team", "name": "claim1"}, "csi": {
    "driver": "d", "volumeHandle": "h",
    "nodePublishSecretRef": {"namespace": "storage", "name": "csi-secret"},
    "controllerPublishSecretRef": {"namespace": "storage", "name": "ctrl-secret"}}}}  # fmt: skip
PV2 = {"metadata": {"name": "pv2"}, "spec": {"claimRef": {"namespace": "team", "name": "unused"}}}
VA1 = {"metadata": {"name": "va1"}, "spec": {"nodeName": "n1"}}
VA2 = {"metadata": {"name": "va2"}, "spec": {"nodeName": "n2"}}


@pytest.fixture(scope="module")
def authorizer() -> NodeAuthorizer:
    a = NodeAuthorizer(None)
    for kind, obj in ((POD, P1), (POD, P2), (POD, PENDING), (POD, MIRROR), (PV, PV1), (PV, PV2),
                      (VOLUME_ATTACHMENT, VA1), (VOLUME_ATTACHMENT, VA2)):  # fmt: skip
        a.observe(kind, ADDED, obj)
    return a


def attrs(verb: str, resource: str, name: str = "", ns: str = "", group: str = "", sub: str = "",
          fields: tuple[FieldRequirement, ...] = (), user: UserInfo = N1) -> Attributes:  # fmt: skip
    return Attributes(user, verb, True, ns, group, "v1", resource, sub, name, "", fields)


def node_name_is(value: str) -> tuple[FieldRequirement, ...]:
    return (FieldRequirement("spec.nodeName", EQUALS, value),)


CASES = [
    # secrets and configmaps: read of single objects its pods use
    (attrs("get", "secrets", "pull", "team"), ALLOW, ""),
    (attrs("get", "secrets", "envsec", "team"), ALLOW, ""),
    (attrs("watch", "secrets", "volsec", "team"), ALLOW, ""),
    (attrs("list", "secrets", "projsec", "team"), ALLOW, ""),
    (attrs("get", "secrets", "other-secret", "team"), NO_OPINION, "no relationship found between node 'n1' and this object"),
    (attrs("get", "secrets", "pending-secret", "team"), NO_OPINION, UNRELATED),
    (attrs("get", "secrets", "mirror-secret", "team"), NO_OPINION, UNRELATED),
    (attrs("get", "secrets", "pull", "elsewhere"), NO_OPINION, UNRELATED),
    (attrs("list", "secrets", "", "team"), NO_OPINION, "No Object name found"),
    (attrs("create", "secrets", "", "team"), NO_OPINION, "can only read resources of this type"),
    (attrs("get", "secrets", "pull", "team", sub="x"), NO_OPINION, "cannot read subresource"),
    (attrs("get", "secrets", "pull"), NO_OPINION, "can only read namespaced object of this type"),
    (attrs("get", "configmaps", "cm1", "team"), ALLOW, ""),
    (attrs("get", "configmaps", "cmenv", "team"), ALLOW, ""),
    (attrs("get", "configmaps", "projcm", "team"), ALLOW, ""),
    (attrs("get", "configmaps", "kube-root-ca.crt", "team"), NO_OPINION, UNRELATED),
    # claims, volumes, attachments: get only
    (attrs("get", "persistentvolumeclaims", "claim1", "team"), ALLOW, ""),
    (attrs("get", "persistentvolumeclaims", "p1-scratch", "team"), ALLOW, ""),
    (attrs("get", "persistentvolumeclaims", "unused", "team"), NO_OPINION, UNRELATED),
    (attrs("list", "persistentvolumeclaims", "", "team"), NO_OPINION, "can only get individual resources of this type"),
    (attrs("patch", "persistentvolumeclaims", "claim1", "team", sub="status"), ALLOW, ""),
    (attrs("get", "persistentvolumeclaims", "claim1", "team", sub="status"), NO_OPINION, "can only get/update/patch this type"),
    (attrs("get", "persistentvolumes", "pv1"), ALLOW, ""),
    (attrs("get", "persistentvolumes", "pv2"), NO_OPINION, UNRELATED),
    (attrs("get", "persistentvolumes", "pv1", sub="status"), NO_OPINION, "cannot get subresource"),
    (attrs("get", "secrets", "csi-secret", "storage"), ALLOW, ""),
    (attrs("get", "secrets", "ctrl-secret", "storage"), NO_OPINION, UNRELATED),
    (attrs("get", "volumeattachments", "va1", group="storage.k8s.io"), ALLOW, ""),
    (attrs("get", "volumeattachments", "va2", group="storage.k8s.io"), NO_OPINION, UNRELATED),
    # service-account tokens of its pods' accounts
    (attrs("create", "serviceaccounts", "sa1", "team", sub="token"), ALLOW, ""),
    (attrs("create", "serviceaccounts", "default", "team", sub="token"), NO_OPINION, UNRELATED),
    (attrs("get", "serviceaccounts", "sa1", "team"), NO_OPINION, "can only create tokens for individual service accounts"),
    (attrs("create", "serviceaccounts", "sa1", "team"), NO_OPINION, "can only create token subresource of serviceaccount"),
    # its lease and CSINode
    (attrs("update", "leases", "n1", "kube-node-lease", "coordination.k8s.io"), ALLOW, ""),
    (attrs("create", "leases", "", "kube-node-lease", "coordination.k8s.io"), ALLOW, ""),
    (attrs("get", "leases", "n2", "kube-node-lease", "coordination.k8s.io"), NO_OPINION,
     "can only access node lease with the same name as the requesting node"),
    (attrs("get", "leases", "n1", "default", "coordination.k8s.io"), NO_OPINION,
     'can only access leases in the "kube-node-lease" system namespace'),
    (attrs("list", "leases", "", "kube-node-lease", "coordination.k8s.io"), NO_OPINION,
     "can only get, create, update, patch, or delete a node lease"),
    (attrs("get", "csinodes", "n1", group="storage.k8s.io"), ALLOW, ""),
    (attrs("create", "csinodes", "", group="storage.k8s.io"), ALLOW, ""),
    (attrs("delete", "csinodes", "n2", group="storage.k8s.io"), NO_OPINION,
     "can only access CSINode with the same name as the requesting node"),
    (attrs("list", "csinodes", group="storage.k8s.io"), NO_OPINION, "can only get, create, update, patch, or delete a CSINode"),
    # nodes: its own to read, any to write (NodeRestriction narrows)
    (attrs("get", "nodes", "n1"), ALLOW, ""),
    (attrs("watch", "nodes", "n1"), ALLOW, ""),
    (attrs("list", "nodes"), NO_OPINION, "node 'n1' cannot read all nodes, only its own Node object"),
    (attrs("get", "nodes", "n2"), NO_OPINION, "node 'n1' cannot read 'n2', only its own Node object"),
    (attrs("create", "nodes"), ALLOW, ""),
    (attrs("patch", "nodes", "n2"), ALLOW, ""),
    (attrs("update", "nodes", "n1", sub="status"), ALLOW, ""),
    (attrs("delete", "nodes", "n1"), NO_OPINION, ""),
    # pods
    (attrs("get", "pods", "p1", "team"), ALLOW, ""),
    (attrs("get", "pods", "m1", "team"), ALLOW, ""),
    (attrs("get", "pods", "p2", "team"), NO_OPINION, UNRELATED),
    (attrs("list", "pods", fields=node_name_is("n1")), ALLOW, ""),
    (attrs("watch", "pods", "", "team", fields=node_name_is("n1")), ALLOW, ""),
    (attrs("list", "pods", fields=node_name_is("n2")), NO_OPINION, "can only list/watch pods with spec.nodeName field selector"),
    (attrs("list", "pods"), NO_OPINION, "can only list/watch pods with spec.nodeName field selector"),
    (attrs("watch", "pods", "p1", "team"), ALLOW, ""),
    (attrs("watch", "pods", "p2", "team"), NO_OPINION, UNRELATED),
    (attrs("create", "pods", "", "team"), ALLOW, ""),
    (attrs("delete", "pods", "p2", "team"), ALLOW, ""),
    (attrs("patch", "pods", "p2", "team", sub="status"), ALLOW, ""),
    (attrs("create", "pods", "p2", "team", sub="eviction"), ALLOW, ""),
    (attrs("update", "pods", "p1", "team"), NO_OPINION, ""),
    (attrs("get", "pods", "p1", "team", sub="log"), NO_OPINION, ""),
    # the rest: the system:node ClusterRole's rules
    (attrs("list", "services"), ALLOW, ""),
    (attrs("create", "events", "", "team"), ALLOW, ""),
    (attrs("create", "certificatesigningrequests", group="certificates.k8s.io"), ALLOW, ""),
    (attrs("list", "runtimeclasses", group="node.k8s.io"), ALLOW, ""),
    (attrs("get", "endpoints", "e", "team"), ALLOW, ""),
    (attrs("create", "subjectaccessreviews", group="authorization.k8s.io"), ALLOW, ""),
    (attrs("list", "deployments", group="apps"), NO_OPINION, ""),
    (attrs("delete", "services", "s", "team"), NO_OPINION, ""),
    # not a node, or no node name
    (attrs("get", "secrets", "pull", "team", user=UserInfo("bob")), NO_OPINION, ""),
    (attrs("get", "secrets", "pull", "team", user=UserInfo("system:node:n1")), NO_OPINION, ""),
    (attrs("get", "nodes", "n1", user=UserInfo("n1", groups=("system:nodes",))), NO_OPINION, ""),
    (attrs("get", "nodes", "n1", user=UserInfo("system:node:", groups=("system:nodes",))), NO_OPINION,
     'unknown node for user "system:node:"'),
]  # fmt: skip


@pytest.mark.parametrize(("a", "decision", "reason"), CASES)
def test_decisions(authorizer: NodeAuthorizer, a: Attributes, decision: str, reason: str) -> None:
    d = authorizer.authorize(a)
    assert (d.decision, d.reason) == (decision, reason)


def test_non_resource_requests_follow_the_static_rules(authorizer: NodeAuthorizer) -> None:
    d = authorizer.authorize(Attributes(N1, "get", path="/healthz"))
    assert d.decision == NO_OPINION


def test_node_identity() -> None:
    assert node_identity(N1) == ("n1", True)
    assert node_identity(UserInfo("system:node:n1")) == ("", False)
    assert node_identity(UserInfo("system:node:", groups=("system:nodes",))) == ("", True)


def test_rules_of_a_node_are_not_listed(authorizer: NodeAuthorizer) -> None:
    r = authorizer.rules_for(N1, "team")
    assert r.incomplete and r.error == "node authorizer does not support user rule resolution"
    assert not authorizer.rules_for(UserInfo("bob"), "team").incomplete


def test_edges_follow_pods_and_volumes() -> None:
    a = NodeAuthorizer(None)
    shared = [{"name": "s", "secret": {"secretName": "shared"}}]
    a.observe(POD, ADDED, pod("ns", "a", "n1", volumes=shared))
    a.observe(POD, ADDED, pod("ns", "b", "n1", volumes=shared))
    get_shared = attrs("get", "secrets", "shared", "ns")
    assert a.authorize(get_shared).allowed
    a.observe(POD, DELETED, pod("ns", "a", "n1"))
    assert a.authorize(get_shared).allowed  # b still uses it
    a.observe(POD, DELETED, pod("ns", "b", "n1"))
    assert not a.authorize(get_shared).allowed
    # a pending pod gains its edges when it is bound
    a.observe(POD, ADDED, pod("ns", "c", volumes=shared))
    assert not a.authorize(get_shared).allowed
    a.observe(POD, ADDED, pod("ns", "c", "n1", volumes=shared))
    assert a.authorize(get_shared).allowed
    # a volume's secret follows its claim; unbinding the volume takes it away
    a.observe(POD, ADDED, pod("ns", "d", "n1", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]))
    pv = {"metadata": {"name": "v"}, "spec": {"claimRef": {"namespace": "ns", "name": "c"},
                                              "rbd": {"secretRef": {"name": "rbd-secret"}}}}  # fmt: skip
    a.observe(PV, ADDED, pv)
    assert a.authorize(attrs("get", "secrets", "rbd-secret", "ns")).allowed  # the claim's namespace
    a.observe(PV, ADDED, {"metadata": {"name": "v"}, "spec": {}})
    assert not a.authorize(attrs("get", "secrets", "rbd-secret", "ns")).allowed
    assert not a.authorize(attrs("get", "persistentvolumes", "v")).allowed


# -- reachability, against a plain walk over the same objects ---------------------------------------------------

NODES = ["n1", "n2", "n3"]
NAMES = ["a", "b", "c", "d"]


@st.composite
def cluster(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pods = []
    for i in range(draw(st.integers(0, 8))):
        node = draw(st.sampled_from(["", *NODES]))
        secrets = draw(st.lists(st.sampled_from(NAMES), max_size=3))
        claims = draw(st.lists(st.sampled_from(NAMES), max_size=2))
        vols = [{"name": f"s{j}", "secret": {"secretName": s}} for j, s in enumerate(secrets)]
        vols += [{"name": f"c{j}", "persistentVolumeClaim": {"claimName": c}} for j, c in enumerate(claims)]
        pods.append(pod("ns", f"p{i}", node, mirror=draw(st.booleans()), volumes=vols))
    pvs = []
    for i in range(draw(st.integers(0, 4))):
        claim, secret = draw(st.sampled_from(NAMES)), draw(st.sampled_from(NAMES))
        pvs.append({"metadata": {"name": f"pv{i}"}, "spec": {"claimRef": {"namespace": "ns", "name": claim},
                                                             "iscsi": {"secretRef": {"name": secret}}}})  # fmt: skip
    return pods, pvs


def walk(pods: list[dict[str, Any]], pvs: list[dict[str, Any]], secret: str, node: str) -> bool:
    """Whether a secret leads to a node: a non-mirror pod on it names the secret, or names a claim that a volume
    needing the secret is bound to."""

    def on_node(p: dict[str, Any]) -> bool:
        return p["spec"]["nodeName"] == node and "annotations" not in p["metadata"]

    def volumes(p: dict[str, Any], key: str, field: str) -> set[str]:
        return {v[key][field] for v in p["spec"]["volumes"] if key in v}

    live = [p for p in pods if on_node(p)]
    if any(secret in volumes(p, "secret", "secretName") for p in live):
        return True
    claims = set().union(*(volumes(p, "persistentVolumeClaim", "claimName") for p in live))
    return any(pv["spec"]["iscsi"]["secretRef"]["name"] == secret and pv["spec"]["claimRef"]["name"] in claims
               for pv in pvs)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(cluster(), st.integers(0, 8))
def test_reachability_matches_a_walk(world: tuple[list[dict[str, Any]], list[dict[str, Any]]], deleted: int) -> None:
    pods, pvs = world
    g = Graph()
    for p in pods:
        g.put_pod(p)
    for pv in pvs:
        g.put_pv(pv)
    if deleted < len(pods):  # a deletion takes exactly that pod's edges away
        g.delete_pod("ns", pods[deleted]["metadata"]["name"])
        pods = pods[:deleted] + pods[deleted + 1 :]
    for node in NODES:
        for secret in NAMES:
            assert g.has_path(SECRET, "ns", secret, node) == walk(pods, pvs, secret, node), (node, secret)


# -- through a server ------------------------------------------------------------------------------------------

NODE_HEADERS = {"Impersonate-User": "system:node:n1", "Impersonate-Group": "system:nodes"}


@pytest.fixture(scope="module")
def server():
    s = APIServerProcess(extra_args=("--authorization-mode=Node,RBAC",)).start()
    s.create_namespace("team")
    for name in ("s1", "s2"):
        status, body = s.request("POST", "/api/v1/namespaces/team/secrets",
                                 {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}})  # fmt: skip
        assert status == 201, body
    yield s
    s.cleanup()


def as_node(server: APIServerProcess, method: str, path: str, body: object = None) -> tuple[int, Any]:
    return server.request(method, path, body, headers=NODE_HEADERS)


def eventually(check: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result[0] != 403 or time.monotonic() > deadline:
            return result
        time.sleep(0.05)


def test_a_kubelet_reads_what_its_pods_use(server: APIServerProcess) -> None:
    status, body = as_node(server, "GET", "/api/v1/namespaces/team/secrets/s1")
    assert status == 403
    assert body["message"] == ('secrets "s1" is forbidden: User "system:node:n1" cannot get resource "secrets" in '
                               "API group \"\" in the namespace \"team\": no relationship found between node 'n1' "
                               "and this object")  # fmt: skip
    p = pod("team", "web", "n1", volumes=[{"name": "s", "secret": {"secretName": "s1"}}])
    p["metadata"].pop("uid")
    status, body = server.request("POST", "/api/v1/namespaces/team/pods", {"apiVersion": "v1", "kind": "Pod", **p})
    assert status == 201, body
    status, body = eventually(lambda: as_node(server, "GET", "/api/v1/namespaces/team/secrets/s1"))
    assert status == 200, body
    status, _ = as_node(server, "GET", "/api/v1/namespaces/team/secrets/s2")
    assert status == 403
    status, body = as_node(server, "GET", "/api/v1/namespaces/team/pods/web")
    assert status == 200, body


def test_a_kubelet_lists_only_its_pods(server: APIServerProcess) -> None:
    status, body = as_node(server, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1")
    assert status == 200, body
    status, body = as_node(server, "GET", "/api/v1/pods")
    assert status == 403
    assert body["message"].endswith(": can only list/watch pods with spec.nodeName field selector")
    status, body = as_node(server, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn2")
    assert status == 403


def test_a_kubelet_reads_only_its_node(server: APIServerProcess) -> None:
    status, body = as_node(server, "GET", "/api/v1/nodes/n1")
    assert status == 404, body  # allowed, and not there yet
    status, body = as_node(server, "GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dn1")
    assert status == 200, body
    status, body = as_node(server, "GET", "/api/v1/nodes")
    assert status == 403
    assert body["message"].endswith(": node 'n1' cannot read all nodes, only its own Node object")


def test_access_reviews_ask_the_node_authorizer(server: APIServerProcess) -> None:
    def review(verb: str, resource: str, **more: Any) -> dict[str, Any]:
        spec = {"user": "system:node:n1", "groups": ["system:nodes"],
                "resourceAttributes": {"verb": verb, "resource": resource, **more}}  # fmt: skip
        status, body = server.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                      {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                                       "spec": spec})  # fmt: skip
        assert status == 201, body
        return body["status"]

    assert review("list", "pods", fieldSelector={"rawSelector": "spec.nodeName=n1"})["allowed"] is True
    structured = {"requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["n1"]}]}
    assert review("watch", "pods", fieldSelector=structured)["allowed"] is True
    assert review("list", "pods") == {"allowed": False,
                                      "reason": "can only list/watch pods with spec.nodeName field selector"}  # fmt: skip
    assert review("get", "secrets", namespace="team", name="s2") == {
        "allowed": False, "reason": "no relationship found between node 'n1' and this object"}  # fmt: skip
