"""The default RBAC policy as a user sees it: a fresh API server has every v1.32 default role and binding
(through kubectl), a restart puts back what was taken from a default (and leaves alone one annotated
`autoupdate: "false"`) and writes nothing when nothing changed; and, without a server, the reconciliation's
properties: reconciling twice is reconciling once, and nothing stored is ever removed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.apiserver.authz.node.policy import NODE_RULES
from pyk8s.apiserver.authz.rbac import bootstrap_policy, controller_policy, namespace_policy
from pyk8s.apiserver.authz.rbac.escalation import covers
from pyk8s.apiserver.authz.rbac.reconciliation import (
    NONE,
    compute_reconciled_role,
    compute_reconciled_role_binding,
)
from pyk8s.testing.cluster import APIServerProcess

RBAC = "/apis/rbac.authorization.k8s.io/v1"
DEFAULTS = "kubernetes.io/bootstrapping=rbac-defaults"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServerProcess]:
    proc = APIServerProcess().start()
    yield proc
    proc.cleanup()


def kubectl_json(server: APIServerProcess, *args: str) -> Any:
    return json.loads(server.kubectl(*args, "-o", "json", check=True).stdout)


def names(listing: dict[str, Any]) -> set[str]:
    return {item["metadata"]["name"] for item in listing["items"]}


def get(server: APIServerProcess, path: str) -> dict[str, Any]:
    status, body = server.request("GET", f"{RBAC}/{path}")
    assert status == 200, body
    assert isinstance(body, dict)
    return body


# -- a fresh server ---------------------------------------------------------------------------------------


def test_fresh_server_has_every_default(server: APIServerProcess) -> None:
    roles = kubectl_json(server, "get", "clusterroles", "-l", DEFAULTS)
    bindings = kubectl_json(server, "get", "clusterrolebindings", "-l", DEFAULTS)
    assert len(roles["items"]) == 31 + 33
    assert len(bindings["items"]) == 12 + 33
    assert {"cluster-admin", "admin", "edit", "view", "system:kube-scheduler", "system:node",
            "system:controller:generic-garbage-collector"} <= names(roles)  # fmt: skip
    assert names(roles) == {r["metadata"]["name"] for r in bootstrap_policy.cluster_roles()
                            + controller_policy.controller_roles()}  # fmt: skip
    for obj in roles["items"] + bindings["items"]:
        assert obj["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true"
    ns_roles = kubectl_json(server, "get", "roles", "-A", "-l", DEFAULTS)
    ns_bindings = kubectl_json(server, "get", "rolebindings", "-A", "-l", DEFAULTS)
    assert {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in ns_roles["items"]} == {
        ("kube-system", "extension-apiserver-authentication-reader"),
        ("kube-system", "system::leader-locking-kube-controller-manager"),
        ("kube-system", "system::leader-locking-kube-scheduler"),
        ("kube-system", "system:controller:bootstrap-signer"),
        ("kube-system", "system:controller:cloud-provider"),
        ("kube-system", "system:controller:token-cleaner"),
        ("kube-public", "system:controller:bootstrap-signer"),
    }
    assert len(ns_bindings["items"]) == 7


READ_WRITE = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def test_kube_scheduler_rules(server: APIServerProcess) -> None:
    role = get(server, "clusterroles/system:kube-scheduler")
    rules = [(tuple(r.get("apiGroups", ())), tuple(r.get("resources", ())), tuple(r.get("resourceNames", ())),
              tuple(r["verbs"])) for r in role["rules"]]  # fmt: skip
    assert rules[:9] == [
        (("", "events.k8s.io"), ("events",), (), ("create", "patch", "update")),
        (("coordination.k8s.io",), ("leases",), (), ("create",)),
        (("coordination.k8s.io",), ("leases",), ("kube-scheduler",), ("get", "list", "update", "watch")),
        (("coordination.k8s.io",), ("leasecandidates",), (), READ_WRITE),
        (("",), ("nodes",), (), ("get", "list", "watch")),
        (("",), ("pods",), (), ("delete", "get", "list", "watch")),
        (("",), ("bindings", "pods/binding"), (), ("create",)),
        (("",), ("pods/status",), (), ("patch", "update")),
        (("",), ("replicationcontrollers", "services"), (), ("get", "list", "watch")),
    ]
    assert (("apps", "extensions"), ("replicasets",), (), ("get", "list", "watch")) in rules
    assert (("storage.k8s.io",), ("csistoragecapacities",), (), ("get", "list", "watch")) in rules


def role_rules(server: APIServerProcess, name: str) -> list[dict[str, Any]]:
    return list(get(server, f"clusterroles/{name}")["rules"])


def test_controller_rules_as_upstream_1_32(server: APIServerProcess) -> None:
    """Rules of v1.32's golden controller-roles.yaml that an earlier copy of the policy lacked, each as the
    file writes it, and what they let the controllers' service accounts do."""
    core = {"apiGroups": [""]}
    mirroring = role_rules(server, "system:controller:endpointslicemirroring-controller")
    assert mirroring[1:3] == [
        {**core, "resources": ["services/finalizers"], "verbs": ["update"]},
        {**core, "resources": ["endpoints/finalizers"], "verbs": ["update"]},
    ]
    # the portworx volume plugin's service lookup, the last rule of both roles
    portworx = {**core, "resources": ["services"], "verbs": ["get"]}
    for name in ("expand-controller", "persistent-volume-binder"):
        assert role_rules(server, f"system:controller:{name}")[-1] == portworx
    # with StatefulSetAutoDeletePVC (GA in 1.32) its two rules come after the events rule
    statefulset = role_rules(server, "system:controller:statefulset-controller")
    assert statefulset[-3:] == [
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
        {**core, "resources": ["persistentvolumeclaims"], "verbs": ["delete", "update"]},
        {**core, "resources": ["pods/finalizers"], "verbs": ["update"]},
    ]
    sa = "--as=system:serviceaccount:kube-system:"
    for args in (("update", "endpoints", "--subresource=finalizers", "-n", "default",
                  sa + "endpointslicemirroring-controller"),
                 ("get", "services", "-n", "default", sa + "expand-controller"),
                 ("get", "services", "-n", "default", sa + "persistent-volume-binder"),
                 ("watch", "leases.coordination.k8s.io/kube-scheduler", "-n", "kube-system",
                  "--as=system:kube-scheduler")):  # fmt: skip
        res = server.kubectl("auth", "can-i", *args)
        assert (res.returncode, res.stdout.strip()) == (0, "yes"), (args, res.stdout, res.stderr)
    res = server.kubectl("auth", "can-i", "get", "services", "-n", "default", sa + "pv-protection-controller")
    assert res.stdout.strip() == "no"
    # LeaseCandidates are not served by default in 1.32 (kubectl cannot name them), yet the scheduler may write them
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": "system:kube-scheduler", "groups": ["system:authenticated"],
                       "resourceAttributes": {"namespace": "kube-system", "verb": "create",
                                              "group": "coordination.k8s.io", "resource": "leasecandidates"}}}  # fmt: skip
    status, body = server.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    assert status == 201 and isinstance(body, dict), body
    assert body["status"]["allowed"] is True, body


def test_aggregated_roles(server: APIServerProcess) -> None:
    for name, label in (("admin", "admin"), ("edit", "edit"), ("view", "view")):
        role = get(server, f"clusterroles/{name}")
        assert role["aggregationRule"] == {
            "clusterRoleSelectors": [{"matchLabels": {f"rbac.authorization.k8s.io/aggregate-to-{label}": "true"}}]
        }
    assert get(server, "clusterroles/edit")["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"]
    assert get(server, "clusterroles/view")["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"]
    edit = get(server, "clusterroles/system:aggregate-to-edit")
    # upstream 1.32 has no write to endpoints in edit (CVE-2021-25740)
    assert not any("endpoints" in r.get("resources", ()) for r in edit["rules"])


def test_default_bindings(server: APIServerProcess) -> None:
    public = get(server, "clusterrolebindings/system:public-info-viewer")
    assert public["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": "system:public-info-viewer"}  # fmt: skip
    assert public["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"},
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:unauthenticated"},
    ]
    assert get(server, "clusterroles/system:public-info-viewer")["rules"] == [
        {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]}
    ]
    assert "subjects" not in get(server, "clusterrolebindings/system:node")
    gc = get(server, "clusterrolebindings/system:controller:generic-garbage-collector")
    assert gc["subjects"] == [{"kind": "ServiceAccount", "name": "generic-garbage-collector",
                               "namespace": "kube-system"}]  # fmt: skip
    reader = get(server, "namespaces/kube-system/rolebindings/system::extension-apiserver-authentication-reader")
    assert [s["name"] for s in reader["subjects"]] == ["system:kube-controller-manager", "system:kube-scheduler"]


def _put(server: APIServerProcess, path: str, obj: dict[str, Any]) -> None:
    status, body = server.request("PUT", f"{RBAC}/{path}", obj)
    assert status == 200, body


def _versions(server: APIServerProcess) -> dict[str, str]:
    out = {}
    for plural in ("clusterroles", "clusterrolebindings", "roles", "rolebindings"):
        for item in kubectl_json(server, "get", plural, "-A", "-l", DEFAULTS)["items"]:
            md = item["metadata"]
            out[f"{plural}/{md.get('namespace', '')}/{md['name']}"] = md["resourceVersion"]
    return out


def test_restart_reconciles(server: APIServerProcess) -> None:
    # a default loses a rule and gains one of its own; another is protected and stripped; a binding loses a subject
    scheduler = get(server, "clusterroles/system:kube-scheduler")
    scheduler["rules"] = [r for r in scheduler["rules"] if r.get("resources") != ["pods"]]
    scheduler["rules"].append({"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]})
    _put(server, "clusterroles/system:kube-scheduler", scheduler)
    heapster = get(server, "clusterroles/system:heapster")
    heapster["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] = "false"
    heapster["rules"] = []
    _put(server, "clusterroles/system:heapster", heapster)
    public = get(server, "clusterrolebindings/system:public-info-viewer")
    public["subjects"] = public["subjects"][:1]
    _put(server, "clusterrolebindings/system:public-info-viewer", public)
    status, _ = server.request("DELETE", f"{RBAC}/namespaces/kube-system/roles/system:controller:token-cleaner")
    assert status == 200

    server.restart()

    rules = get(server, "clusterroles/system:kube-scheduler")["rules"]
    # the missing rule comes back broken down, one verb each, after what was stored
    assert rules[-4:] == [{"apiGroups": [""], "resources": ["pods"], "verbs": [v]}
                          for v in ("delete", "get", "list", "watch")]  # fmt: skip
    assert {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]} in rules
    protected = get(server, "clusterroles/system:heapster")
    assert protected.get("rules", []) == []
    assert protected["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "false"
    subjects = get(server, "clusterrolebindings/system:public-info-viewer")["subjects"]
    assert [s["name"] for s in subjects] == ["system:authenticated", "system:unauthenticated"]
    get(server, "namespaces/kube-system/roles/system:controller:token-cleaner")

    # a restart with nothing to reconcile writes nothing
    before = _versions(server)
    server.restart()
    assert _versions(server) == before


# -- the policy data ----------------------------------------------------------------------------------------


def test_policy_objects_are_well_formed() -> None:
    every = (bootstrap_policy.cluster_roles() + bootstrap_policy.cluster_role_bindings()
             + controller_policy.controller_roles() + controller_policy.controller_role_bindings()
             + namespace_policy.namespace_roles() + namespace_policy.namespace_role_bindings())  # fmt: skip
    keys = [(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in every]
    assert len(keys) == len(set(keys)) == 31 + 12 + 33 + 33 + 7 + 7
    for obj in every:
        assert obj["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert obj["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    # the Node authorizer's own copy of system:node's rules grants the same
    node = bootstrap_policy.node_rules()
    assert covers(node, list(NODE_RULES))[0] and covers(list(NODE_RULES), node)[0]


# -- reconciliation properties ------------------------------------------------------------------------------

_word = st.sampled_from(["a", "b", "c", "*"])
_resource_rule = st.fixed_dictionaries(
    {
        "verbs": st.lists(st.sampled_from(["get", "list", "create", "*"]), min_size=1, max_size=3, unique=True),
        "apiGroups": st.lists(st.sampled_from(["", "apps", "*"]), min_size=1, max_size=2, unique=True),
        "resources": st.lists(
            st.sampled_from(["pods", "pods/log", "*/scale", "*"]), min_size=1, max_size=2, unique=True
        ),
    },
    optional={"resourceNames": st.lists(_word, min_size=1, max_size=2, unique=True)},
)
_url_rule = st.fixed_dictionaries(
    {
        "verbs": st.lists(st.sampled_from(["get", "post"]), min_size=1, max_size=2, unique=True),
        "nonResourceURLs": st.lists(st.sampled_from(["/healthz", "/api/*", "*"]), min_size=1, max_size=2, unique=True),
    }
)
_rules = st.lists(st.one_of(_resource_rule, _url_rule), max_size=4)
_labels = st.dictionaries(st.sampled_from(["x", "y", "rbac.authorization.kubernetes.io/autoupdate"]),
                          st.sampled_from(["true", "false", "1"]), max_size=2)  # fmt: skip
_selector = st.fixed_dictionaries({"matchLabels": st.dictionaries(st.sampled_from(["p", "q"]),
                                                                  st.just("true"), min_size=1, max_size=1)})  # fmt: skip
_aggregation = st.one_of(st.none(), st.fixed_dictionaries({"clusterRoleSelectors": st.lists(_selector, max_size=2)}))


@st.composite
def roles(draw: st.DrawFn) -> dict[str, Any]:
    role: dict[str, Any] = {"kind": "ClusterRole", "metadata": {"name": "r", "labels": draw(_labels),
                                                                "annotations": draw(_labels)}}  # fmt: skip
    rules = draw(_rules)
    if rules:
        role["rules"] = rules
    agg = draw(_aggregation)
    if agg is not None:
        role["aggregationRule"] = agg
    return role


@settings(max_examples=300, deadline=None)
@given(existing=roles(), expected=roles())
def test_reconciling_a_role_twice_is_reconciling_once_and_removes_no_rule(
    existing: dict[str, Any], expected: dict[str, Any]
) -> None:
    once = compute_reconciled_role(existing, expected)
    twice = compute_reconciled_role(once.role, expected)
    assert twice.role == once.role
    assert twice.operation == NONE
    # every stored rule is still there, in its place, and everything the default grants is granted
    stored = existing.get("rules", [])
    assert once.role.get("rules", [])[: len(stored)] == stored
    assert covers(once.role.get("rules", []), expected.get("rules", []))[0]
    # stored labels and annotations win; the default's are added
    for key in ("labels", "annotations"):
        assert once.role["metadata"][key] == {**expected["metadata"][key], **existing["metadata"][key]}


_subject = st.fixed_dictionaries({"kind": st.sampled_from(["User", "Group"]), "name": _word})
_service_account = st.fixed_dictionaries({"kind": st.just("ServiceAccount"), "name": _word,
                                          "namespace": st.sampled_from(["kube-system", "x"])})  # fmt: skip


@st.composite
def bindings(draw: st.DrawFn, ref: str = "") -> dict[str, Any]:
    return {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "b", "labels": draw(_labels), "annotations": draw(_labels)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": ref or draw(st.sampled_from(["r1", "r2"]))},
        "subjects": draw(st.lists(st.one_of(_subject, _service_account), max_size=4)),
    }  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(existing=bindings(ref="r"), expected=bindings(ref="r"))
def test_reconciling_a_binding_twice_is_reconciling_once_and_removes_no_subject(
    existing: dict[str, Any], expected: dict[str, Any]
) -> None:
    once = compute_reconciled_role_binding(existing, expected)
    twice = compute_reconciled_role_binding(once.binding, expected)
    assert twice.binding == once.binding and twice.operation == NONE
    assert once.binding["subjects"][: len(existing["subjects"])] == existing["subjects"]
    assert all(s in once.binding["subjects"] for s in expected["subjects"])


def test_protected_role_is_reported() -> None:
    existing = {"metadata": {"name": "r", "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "false"}}}
    expected = bootstrap_policy.cluster_role("r", [bootstrap_policy.rule("get", "", "pods")])
    assert compute_reconciled_role(existing, expected).protected
