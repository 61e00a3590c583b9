"""RBAC through a real `pyk8s apiserver --authorization-mode=RBAC` and real kubectl: requests refused with
upstream's 403 until a binding grants them, a ServiceAccount's namespaced Role doing exactly what it says, and
escalation attempts on roles and bindings refused with upstream's messages. The tests act as other users by
impersonation from the admin (system:masters)."""

from __future__ import annotations

import json

import pytest

from pyk8s.testing.cluster import APIServerProcess

G = "rbac.authorization.k8s.io"
AUTH = "system:authenticated"

# What kubectl needs to find resources (the bootstrap policy's system:discovery gives the same).
DISCOVERY = {
    "apiVersion": f"{G}/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "test-discovery"},
    "rules": [{"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/version", "/openapi/*"]}],
}
DISCOVERY_BINDING = {
    "apiVersion": f"{G}/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "test-discovery"},
    "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "test-discovery"},
    "subjects": [{"apiGroup": G, "kind": "Group", "name": AUTH}],
}


@pytest.fixture(scope="module")
def server():
    s = APIServerProcess(extra_args=("--authorization-mode=RBAC",)).start()
    for obj, plural in ((DISCOVERY, "clusterroles"), (DISCOVERY_BINDING, "clusterrolebindings")):
        status, body = s.request("POST", f"/apis/{G}/v1/{plural}", obj)
        assert status == 201, body
    for ns in ("team", "other"):
        s.create_namespace(ns)
    yield s
    s.cleanup()


def apply(server: APIServerProcess, manifest: str) -> None:
    server.kubectl("apply", "-f", "-", input=manifest, check=True)


def as_user(server: APIServerProcess, user: str, method: str, path: str, body: object = None, *groups: str):
    headers = {"Impersonate-User": user}
    if groups:
        # urllib joins repeated headers poorly; one group is all these tests need
        headers["Impersonate-Group"] = groups[0]
    return server.request(method, path, body, headers=headers)


def role(ns: str, name: str, *rules: dict) -> str:
    return json.dumps({"apiVersion": f"{G}/v1", "kind": "Role", "metadata": {"namespace": ns, "name": name},
                       "rules": list(rules)})  # fmt: skip


def binding(ns: str, name: str, ref_kind: str, ref: str, *subjects: dict) -> str:
    kind = "RoleBinding" if ns else "ClusterRoleBinding"
    md = {"name": name, **({"namespace": ns} if ns else {})}
    return json.dumps({"apiVersion": f"{G}/v1", "kind": kind, "metadata": md,
                       "roleRef": {"apiGroup": G, "kind": ref_kind, "name": ref}, "subjects": list(subjects)})  # fmt: skip


def cluster_role(name: str, *rules: dict, aggregation: dict | None = None) -> str:
    obj: dict = {"apiVersion": f"{G}/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": list(rules)}
    if aggregation is not None:
        obj["aggregationRule"] = aggregation
    return json.dumps(obj)


def user(name: str) -> dict:
    return {"apiGroup": G, "kind": "User", "name": name}


def test_forbidden_until_a_rolebinding_grants_it(server: APIServerProcess) -> None:
    r = server.kubectl("--as=alice", "get", "pods", "-n", "team")
    assert r.returncode == 1
    assert r.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" '
        'in the namespace "team"'
    )
    server.kubectl("create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods", "-n", "team", check=True)
    server.kubectl(
        "create", "rolebinding", "alice-reads", "--role=pod-reader", "--user=alice", "-n", "team", check=True
    )
    r = server.kubectl("--as=alice", "get", "pods", "-n", "team")
    assert r.returncode == 0, r.stderr
    # only in that namespace, and only what the role says
    r = server.kubectl("--as=alice", "get", "pods", "-n", "other")
    assert 'cannot list resource "pods" in API group "" in the namespace "other"' in r.stderr
    r = server.kubectl("--as=alice", "get", "pods", "-A")
    assert 'cannot list resource "pods" in API group "" at the cluster scope' in r.stderr
    r = server.kubectl("--as=alice", "delete", "pod", "x", "-n", "team")
    assert 'pods "x" is forbidden: User "alice" cannot delete resource "pods"' in r.stderr
    status, body = as_user(server, "alice", "GET", "/api/v1/namespaces/team/pods/x/log")
    assert (status, body["message"]) == (
        403,
        'pods "x" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "team"',
    )


def test_a_service_account_does_exactly_what_its_role_says(server: APIServerProcess) -> None:
    apply(server, role("team", "cm-editor", {"verbs": ["get", "list", "create"], "apiGroups": [""],
                                             "resources": ["configmaps"]}))  # fmt: skip
    apply(server, binding("team", "robot-cm", "Role", "cm-editor", {"kind": "ServiceAccount", "name": "robot"}))
    robot = "system:serviceaccount:team:robot"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made-by-robot"}}
    status, body = as_user(server, robot, "POST", "/api/v1/namespaces/team/configmaps", cm)
    assert status == 201, body
    assert as_user(server, robot, "GET", "/api/v1/namespaces/team/configmaps/made-by-robot")[0] == 200
    status, body = as_user(server, robot, "DELETE", "/api/v1/namespaces/team/configmaps/made-by-robot")
    assert status == 403
    assert body["message"] == (
        'configmaps "made-by-robot" is forbidden: User "system:serviceaccount:team:robot" cannot delete resource '
        '"configmaps" in API group "" in the namespace "team"'
    )
    assert body["details"] == {"name": "made-by-robot", "kind": "configmaps"}
    assert as_user(server, robot, "GET", "/api/v1/namespaces/other/configmaps")[0] == 403
    assert as_user(server, robot, "GET", "/api/v1/namespaces/team/secrets")[0] == 403
    # the same name in another namespace is another service account
    assert as_user(server, "system:serviceaccount:other:robot", "GET", "/api/v1/namespaces/team/configmaps")[0] == 403


def test_non_resource_urls(server: APIServerProcess) -> None:
    status, body = as_user(server, "bob", "GET", "/metrics")
    assert status == 403
    assert body["message"] == 'forbidden: User "bob" cannot get path "/metrics"'
    apply(server, cluster_role("metrics-reader", {"verbs": ["get"], "nonResourceURLs": ["/metric*"]}))
    apply(server, binding("", "bob-metrics", "ClusterRole", "metrics-reader", user("bob")))
    assert as_user(server, "bob", "GET", "/metrics")[0] == 200


def test_creating_a_role_with_rules_not_held_is_refused(server: APIServerProcess) -> None:
    apply(server, role("team", "role-writer", {"verbs": ["create", "update", "get"], "apiGroups": [G],
                                               "resources": ["roles"]},
                       {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}))  # fmt: skip
    apply(server, binding("team", "carol-writes-roles", "Role", "role-writer", user("carol")))
    r = server.kubectl("--as=carol", "create", "role", "too-much", "--verb=create,get", "--resource=deployments.apps",
                       "--verb=list", "-n", "team")  # fmt: skip
    assert r.returncode == 1
    assert r.stderr.strip() == (
        'Error from server (Forbidden): roles.rbac.authorization.k8s.io "too-much" is forbidden: user "carol" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["create" "get" "list"]}'
    )
    # what she holds she may give; in another namespace she holds nothing
    r = server.kubectl(
        "--as=carol", "create", "role", "cm-lister", "--verb=list", "--resource=configmaps", "-n", "team"
    )
    assert r.returncode == 0, r.stderr
    # updating her role to more is refused too, with the 403 on the role
    obj = json.loads(role("team", "cm-lister", {"verbs": ["list", "delete"], "apiGroups": [""],
                                                "resources": ["configmaps"]}))  # fmt: skip
    status, body = as_user(server, "carol", "PUT", f"/apis/{G}/v1/namespaces/team/roles/cm-lister", obj)
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["details"] == {"name": "cm-lister", "group": G, "kind": "roles"}
    assert body["message"].endswith('not currently held:\n{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}')


def test_escalate_verb_allows_any_role(server: APIServerProcess) -> None:
    apply(server, role("team", "escalator", {"verbs": ["create", "escalate"], "apiGroups": [G],
                                             "resources": ["roles"]}))  # fmt: skip
    apply(server, binding("team", "dave-escalates", "Role", "escalator", user("dave")))
    r = server.kubectl("--as=dave", "create", "role", "anything", "--verb=*", "--resource=secrets", "-n", "team")
    assert r.returncode == 0, r.stderr


def test_binding_a_role_needs_its_rules_or_bind(server: APIServerProcess) -> None:
    apply(server, cluster_role("secret-admin", {"verbs": ["*"], "apiGroups": [""], "resources": ["secrets"]}))
    apply(server, role("team", "binder", {"verbs": ["create", "get"], "apiGroups": [G],
                                          "resources": ["rolebindings"]}))  # fmt: skip
    apply(server, binding("team", "erin-binds", "Role", "binder", user("erin")))
    r = server.kubectl("--as=erin", "create", "rolebinding", "erin-secrets", "--clusterrole=secret-admin",
                       "--user=erin", "-n", "team")  # fmt: skip
    assert r.returncode == 1
    assert r.stderr.strip() == (
        'error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io "erin-secrets" is forbidden: '
        'user "erin" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["*"]}'
    )
    # a binding to a role that does not exist: the registry's 404
    r = server.kubectl("--as=erin", "create", "rolebinding", "x", "--role=nope", "--user=erin", "-n", "team")
    assert r.stderr.strip().endswith('roles.rbac.authorization.k8s.io "nope" not found')
    # `bind` on that one clusterrole, in this namespace only
    apply(server, role("team", "secret-admin-binder", {"verbs": ["bind"], "apiGroups": [G],
                                                       "resources": ["clusterroles"],
                                                       "resourceNames": ["secret-admin"]}))  # fmt: skip
    apply(server, binding("team", "erin-binds-secret-admin", "Role", "secret-admin-binder", user("erin")))
    r = server.kubectl("--as=erin", "create", "rolebinding", "erin-secrets", "--clusterrole=secret-admin",
                       "--user=erin", "-n", "team")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert server.kubectl("--as=erin", "get", "secrets", "-n", "team").returncode == 0


def test_a_clusterrolebinding_needs_the_rules_cluster_wide(server: APIServerProcess) -> None:
    apply(server, cluster_role("crb-writer", {"verbs": ["create"], "apiGroups": [G], "resources": ["clusterrolebindings"]},
                               {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}))  # fmt: skip
    apply(server, binding("", "frank-writes-crbs", "ClusterRole", "crb-writer", user("frank")))
    apply(server, cluster_role("node-reader", {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}))
    r = server.kubectl("--as=frank", "create", "clusterrolebinding", "frank-nodes", "--clusterrole=node-reader",
                       "--group=ops")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = server.kubectl("--as=frank", "create", "clusterrolebinding", "frank-secrets", "--clusterrole=secret-admin",
                       "--group=ops")  # fmt: skip
    assert 'clusterrolebindings.rbac.authorization.k8s.io "frank-secrets" is forbidden: user "frank"' in r.stderr


def test_aggregation_rule_needs_cluster_admin(server: APIServerProcess) -> None:
    apply(server, cluster_role("cr-writer", {"verbs": ["create", "update"], "apiGroups": [G],
                                             "resources": ["clusterroles"]}))  # fmt: skip
    apply(server, binding("", "gina-writes-crs", "ClusterRole", "cr-writer", user("gina")))
    agg = json.loads(cluster_role("gathers", aggregation={"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}))
    status, body = as_user(server, "gina", "POST", f"/apis/{G}/v1/clusterroles", agg)
    assert status == 403
    assert body["message"] == (
        'clusterroles.rbac.authorization.k8s.io "gathers" is forbidden: must have cluster-admin privileges to use '
        "the aggregationRule"
    )
    plain = json.loads(cluster_role("plain"))
    assert as_user(server, "gina", "POST", f"/apis/{G}/v1/clusterroles", plain)[0] == 201


def test_rbac_validation(server: APIServerProcess) -> None:
    bad = json.loads(role("team", "bad", {"verbs": ["get"], "nonResourceURLs": ["/x"]}, {"apiGroups": [""]}))
    status, body = server.request("POST", f"/apis/{G}/v1/namespaces/team/roles", bad)
    assert status == 422
    assert body["message"] == (
        'Role.rbac.authorization.k8s.io "bad" is invalid: [rules[0].nonResourceURLs: Invalid value: '
        '[]string{"/x"}: namespaced rules cannot apply to non-resource URLs, rules[1].verbs: Required value: verbs '
        "must contain at least one value, rules[1].resources: Required value: resource rules must supply at least "
        "one resource]"
    )
    crb = json.loads(
        binding("", "bad", "Role", "x", {"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "r"})
    )
    status, body = server.request("POST", f"/apis/{G}/v1/clusterrolebindings", crb)
    assert status == 422
    assert body["message"] == (
        'ClusterRoleBinding.rbac.authorization.k8s.io "bad" is invalid: [roleRef.kind: Unsupported value: "Role": '
        'supported values: "ClusterRole", subjects[0].namespace: Required value, subjects[1].kind: Unsupported value: '
        '"Robot": supported values: "ServiceAccount", "User", "Group"]'
    )
    # a user subject's apiGroup is defaulted; a roleRef cannot change
    ok = json.loads(binding("team", "fine", "Role", "pod-reader", {"kind": "User", "name": "u"}))
    ok["roleRef"].pop("apiGroup")
    status, body = server.request("POST", f"/apis/{G}/v1/namespaces/team/rolebindings", ok)
    assert status == 201, body
    assert body["subjects"][0]["apiGroup"] == G and body["roleRef"]["apiGroup"] == G
    body["roleRef"]["name"] = "other"
    status, body = server.request("PUT", f"/apis/{G}/v1/namespaces/team/rolebindings/fine", body)
    assert status == 422
    assert body["message"].endswith(
        'roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"other"}: '
        "cannot change roleRef"
    )
