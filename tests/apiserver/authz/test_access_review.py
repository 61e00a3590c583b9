"""The access-review APIs (SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview,
SelfSubjectRulesReview) through a real server: `kubectl auth can-i` (with `--as`, `-n`, non-resource paths and
`--list`) under AlwaysAllow, AlwaysDeny and RBAC, and upstream's validation messages."""

from __future__ import annotations

import json

import pytest

from pyk8s.testing.cluster import APIServerProcess

AZ = "/apis/authorization.k8s.io/v1"
G = "rbac.authorization.k8s.io"


def sar(spec: dict, kind: str = "SubjectAccessReview", metadata: dict | None = None) -> dict:
    body: dict = {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}
    if metadata is not None:
        body["metadata"] = metadata
    return body


@pytest.fixture(scope="module")
def allow():
    s = APIServerProcess(extra_args=("--authorization-mode=AlwaysAllow",)).start()
    yield s
    s.cleanup()


@pytest.fixture(scope="module")
def deny():
    s = APIServerProcess(extra_args=("--authorization-mode=AlwaysDeny",)).start()
    yield s
    s.cleanup()


@pytest.fixture(scope="module")
def rbac():
    s = APIServerProcess(extra_args=("--authorization-mode=RBAC",)).start()
    for ns in ("team", "other"):
        s.create_namespace(ns)
    # What every authenticated user gets from the bootstrap policy (system:basic-user, system:discovery).
    manifest = [
        {"apiVersion": f"{G}/v1", "kind": "ClusterRole", "metadata": {"name": "test-basic"},
         "rules": [{"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                   {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/version"]}]},
        {"apiVersion": f"{G}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "test-basic"},
         "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "test-basic"},
         "subjects": [{"apiGroup": G, "kind": "Group", "name": "system:authenticated"}]},
        {"apiVersion": f"{G}/v1", "kind": "Role", "metadata": {"namespace": "team", "name": "pod-reader"},
         "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]},
                   {"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments"],
                    "resourceNames": ["web"]}]},
        {"apiVersion": f"{G}/v1", "kind": "RoleBinding", "metadata": {"namespace": "team", "name": "bob-reads"},
         "roleRef": {"apiGroup": G, "kind": "Role", "name": "pod-reader"},
         "subjects": [{"apiGroup": G, "kind": "User", "name": "bob"}]},
    ]  # fmt: skip
    s.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": manifest}),
              check=True)  # fmt: skip
    yield s
    s.cleanup()


def can_i(server: APIServerProcess, *args: str) -> tuple[int, str]:
    """kubectl's exit code and answer (its warnings, on stderr, left out unless it failed)."""
    res = server.kubectl("auth", "can-i", *args)
    return res.returncode, (res.stdout.strip() or res.stderr.strip())


# -- AlwaysAllow -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("get", "pods"),
        ("create", "deployments.apps", "-n", "elsewhere"),
        ("get", "pods", "--as=bob"),
        ("delete", "nodes/n1", "--as=bob", "--as-group=devs"),
        ("get", "/logs"),
        ("get", "/logs", "--as=bob"),
        ("get", "pods", "--subresource=log", "--as=bob"),
    ],
)
def test_always_allow_says_yes(allow: APIServerProcess, args: tuple[str, ...]) -> None:
    assert can_i(allow, *args) == (0, "yes")


def test_always_allow_lists_everything(allow: APIServerProcess) -> None:
    code, out = can_i(allow, "--list", "--as=bob")
    assert code == 0, out
    rows = [line.split() for line in out.splitlines()[1:]]
    assert ["*.*", "[]", "[]", "[*]"] in rows
    assert ["[*]", "[]", "[*]"] in rows


# -- AlwaysDeny: only system:masters (the admin) ------------------------------------------------------------


def test_always_deny_allows_only_system_masters(deny: APIServerProcess) -> None:
    assert can_i(deny, "get", "pods") == (0, "yes")
    assert can_i(deny, "get", "/logs") == (0, "yes")
    # bob may not even ask: creating his SelfSubjectAccessReview is forbidden too, as upstream
    code, out = can_i(deny, "get", "pods", "--as=bob")
    assert code != 0
    assert 'User "bob" cannot create resource "selfsubjectaccessreviews"' in out, out
    # asked by the admin about bob: not allowed, not explicitly denied, with AlwaysDeny's reason
    status, body = deny.request("POST", f"{AZ}/subjectaccessreviews",
                                sar({"user": "bob", "resourceAttributes": {"verb": "get", "resource": "pods"}}))  # fmt: skip
    assert status == 201, body
    assert body["status"] == {"allowed": False, "reason": "Everything is forbidden."}
    status, body = deny.request("POST", f"{AZ}/subjectaccessreviews",
                                sar({"groups": ["system:masters"], "nonResourceAttributes": {"verb": "get", "path": "/x"}}))  # fmt: skip
    assert status == 201 and body["status"] == {"allowed": True}, body


# -- RBAC ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("list", "pods", "-n", "team"), "yes"),
        (("get", "pods/p1", "-n", "team"), "yes"),
        (("get", "pods", "--subresource=log", "-n", "team"), "yes"),
        (("delete", "pods", "-n", "team"), "no"),
        (("list", "pods", "-n", "other"), "no"),
        (("list", "pods", "-A"), "no"),
        (("update", "deployments.apps/web", "-n", "team"), "yes"),
        (("update", "deployments.apps/api", "-n", "team"), "no"),
        (("get", "/logs"), "no"),
        (("get", "/version"), "yes"),
    ],
)
def test_rbac_can_i_as_bob(rbac: APIServerProcess, args: tuple[str, ...], expected: str) -> None:
    code, out = can_i(rbac, *args, "--as=bob")
    assert out == expected
    assert code == (0 if expected == "yes" else 1)


def test_rbac_can_i_list(rbac: APIServerProcess) -> None:
    code, out = can_i(rbac, "--list", "-n", "team", "--as=bob")
    assert code == 0, out
    rows = [line.split() for line in out.splitlines()[1:]]
    assert ["pods/log", "[]", "[]", "[get", "list]"] in rows
    assert ["pods", "[]", "[]", "[get", "list]"] in rows
    assert ["deployments.apps", "[]", "[web]", "[update]"] in rows
    assert ["[/version]", "[]", "[get]"] in rows
    code, out = can_i(rbac, "--list", "-n", "other", "--as=bob")
    assert "pods" not in out.split()


def test_rbac_subject_access_reviews(rbac: APIServerProcess) -> None:
    status, body = rbac.request("POST", f"{AZ}/subjectaccessreviews",
                                sar({"user": "bob", "resourceAttributes": {"namespace": "team", "verb": "list", "resource": "pods"}}))  # fmt: skip
    assert status == 201, body
    assert body["status"]["allowed"] is True
    assert (
        body["status"]["reason"] == 'RBAC: allowed by RoleBinding "bob-reads/team" of Role "pod-reader" to User "bob"'
    )
    lsar = sar({"user": "bob", "resourceAttributes": {"namespace": "other", "verb": "list", "resource": "pods"}},
               "LocalSubjectAccessReview")  # fmt: skip
    status, body = rbac.request("POST", f"{AZ}/namespaces/other/localsubjectaccessreviews", lsar)
    assert status == 201, body
    assert body["status"] == {"allowed": False}
    assert body["metadata"]["namespace"] == "other"


# -- validation -----------------------------------------------------------------------------------------------

RES = {"verb": "get", "resource": "pods"}
NON = {"verb": "get", "path": "/x"}


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("subjectaccessreviews", sar({"user": "u"}),
         'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: '
         "exactly one of nonResourceAttributes or resourceAttributes must be specified"),
        ("subjectaccessreviews", sar({"resourceAttributes": RES}),
         'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": '
         "at least one of user or group must be specified"),
        ("subjectaccessreviews", sar({"user": "u", "resourceAttributes": RES, "nonResourceAttributes": NON}),
         'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: '
         'authorization.NonResourceAttributes{Path:"/x", Verb:"get"}: cannot be specified in combination with '
         "resourceAttributes"),
        ("subjectaccessreviews", sar({"user": "u", "resourceAttributes": RES}, metadata={"name": "n"}),
         "metadata: Invalid value: v1.ObjectMeta{Name:\"n\""),
        ("selfsubjectaccessreviews", sar({}, "SelfSubjectAccessReview"),
         'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: '
         "null: exactly one of nonResourceAttributes or resourceAttributes must be specified"),
        ("selfsubjectaccessreviews",
         sar({"resourceAttributes": {**RES, "fieldSelector": {"rawSelector": "a=b", "requirements": [
             {"key": "a", "operator": "In", "values": ["b"]}]}}}, "SelfSubjectAccessReview"),
         'spec.resourceAttributes.fieldSelector.rawSelector: Invalid value: "a=b": may not specified at the same '
         "time as requirements"),
        ("selfsubjectaccessreviews", sar({"resourceAttributes": {**RES, "labelSelector": {}}}, "SelfSubjectAccessReview"),
         "spec.resourceAttributes.labelSelector.requirements: Required value: when "
         "spec.resourceAttributes.labelSelector is specified, requirements or rawSelector is required"),
        ("namespaces/default/localsubjectaccessreviews",
         sar({"user": "u", "resourceAttributes": {**RES, "namespace": "x"}}, "LocalSubjectAccessReview"),
         'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: '
         'Invalid value: "x": must match metadata.namespace'),
        ("namespaces/default/localsubjectaccessreviews",
         sar({"user": "u", "resourceAttributes": {**RES, "namespace": "default"}}, "LocalSubjectAccessReview",
             {"namespace": "default", "labels": {"a": "b"}}),
         'Labels:map[string]string{"a":"b"}'),
        ("namespaces/default/localsubjectaccessreviews",
         sar({"user": "u", "nonResourceAttributes": NON}, "LocalSubjectAccessReview"),
         "spec.nonResourceAttributes: Invalid value: authorization.NonResourceAttributes{Path:\"/x\", "
         "Verb:\"get\"}: disallowed on this kind of request"),
    ],
)  # fmt: skip
def test_validation(allow: APIServerProcess, path: str, body: dict, message: str) -> None:
    status, answer = allow.request("POST", f"{AZ}/{path}", body)
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    assert message in answer["message"], answer["message"]
    assert answer["details"]["group"] == "authorization.k8s.io"


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("selfsubjectrulesreviews", sar({}, "SelfSubjectRulesReview"), "no namespace on request"),
        ("namespaces/default/localsubjectaccessreviews",
         sar({"user": "u", "resourceAttributes": {**RES, "namespace": "x"}}, "LocalSubjectAccessReview",
             {"namespace": "x"}),
         "the namespace of the provided object does not match the namespace sent on the request"),
    ],
)  # fmt: skip
def test_bad_requests(allow: APIServerProcess, path: str, body: dict, message: str) -> None:
    status, answer = allow.request("POST", f"{AZ}/{path}", body)
    assert (status, answer["reason"], answer["message"]) == (400, "BadRequest", message)


def test_reviews_are_create_only(allow: APIServerProcess) -> None:
    status, answer = allow.request("GET", f"{AZ}/subjectaccessreviews")
    assert status == 405, answer
    status, _ = allow.request("GET", f"{AZ}/localsubjectaccessreviews")
    assert status == 404
    res = allow.kubectl("api-resources", "--api-group=authorization.k8s.io", "-o", "wide")
    names = {line.split()[0]: line for line in res.stdout.splitlines()[1:]}
    assert set(names) == {"localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews",
                          "subjectaccessreviews"}  # fmt: skip
    assert all(line.split()[-1] == "create" for line in names.values())


def test_self_subject_rules_review_answers_its_status_only(allow: APIServerProcess) -> None:
    status, body = allow.request("POST", f"{AZ}/selfsubjectrulesreviews",
                                 sar({"namespace": "default"}, "SelfSubjectRulesReview"))  # fmt: skip
    assert status == 201, body
    assert body["spec"] == {}
    assert body["status"]["incomplete"] is False
    assert {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]} in body["status"]["resourceRules"]
