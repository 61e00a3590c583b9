"""RBAC decisions as upstream makes them, from a world of roles and bindings fed to the authorizer's index:
subjects (User, Group, ServiceAccount) x verbs x resources (`*`, `*/scale`, `pods/log`) x resourceNames x
nonResourceURLs (trailing `*`) x RoleBindings to ClusterRoles, with upstream's reasons; and the coverage check
escalation prevention uses, with its message."""

from __future__ import annotations

import pytest

from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.authz import ALLOW, NO_OPINION, Attributes
from pyk8s.apiserver.authz.rbac import RBACAuthorizer
from pyk8s.apiserver.authz.rbac.escalation import (
    compact_string,
    covers,
    escalation_message,
    is_only_mutating_gc_fields,
)

G = "rbac.authorization.k8s.io"
AUTH = "system:authenticated"


def cluster_role(name: str, *rules: dict) -> dict:
    return {"metadata": {"name": name}, "rules": list(rules)}


def role(ns: str, name: str, *rules: dict) -> dict:
    return {"metadata": {"namespace": ns, "name": name}, "rules": list(rules)}


def binding(name: str, ref_kind: str, ref: str, *subjects: dict, ns: str = "") -> dict:
    md = {"name": name, **({"namespace": ns} if ns else {})}
    return {"metadata": md, "roleRef": {"apiGroup": G, "kind": ref_kind, "name": ref}, "subjects": list(subjects)}


def user(n: str) -> dict:
    return {"kind": "User", "apiGroup": G, "name": n}


def group(n: str) -> dict:
    return {"kind": "Group", "apiGroup": G, "name": n}


def sa(n: str, ns: str = "") -> dict:
    return {"kind": "ServiceAccount", "name": n, **({"namespace": ns} if ns else {})}


def rule(verbs, groups=None, resources=None, names=None, urls=None) -> dict:
    r: dict = {"verbs": list(verbs)}
    if groups is not None:
        r["apiGroups"] = list(groups)
    if resources is not None:
        r["resources"] = list(resources)
    if names:
        r["resourceNames"] = list(names)
    if urls:
        r["nonResourceURLs"] = list(urls)
    return r


def world() -> RBACAuthorizer:
    a = RBACAuthorizer(lambda gv, plural: None)  # type: ignore[arg-type,return-value]
    objects = {
        "clusterroles": [
            cluster_role("pod-getter", rule(["get"], [""], ["pods"])),
            cluster_role("everything", rule(["*"], ["*"], ["*"])),
            cluster_role("scaler", rule(["update", "patch"], ["apps"], ["*/scale"])),
            cluster_role("log-reader", rule(["get"], [""], ["pods/log"])),
            cluster_role("named-cm", rule(["get", "update"], [""], ["configmaps"], names=["cm1", "cm2"])),
            cluster_role("urls", rule(["get"], urls=["/healthz", "/apis/*", "/metric*"])),
            cluster_role("all-urls", rule(["*"], urls=["*"])),
            cluster_role("star-verbs-pods", rule(["*"], [""], ["pods"])),
        ],
        "roles": [
            role("team", "deployer", rule(["create", "delete"], ["apps"], ["deployments"])),
            role("other", "deployer", rule(["*"], ["*"], ["*"])),
        ],
        "clusterrolebindings": [
            binding("crb-user", "ClusterRole", "pod-getter", user("u1")),
            binding("crb-group", "ClusterRole", "scaler", group("g1")),
            binding("crb-sa", "ClusterRole", "log-reader", sa("sa1", "ns1")),
            binding("crb-sa-no-namespace", "ClusterRole", "everything", sa("sa2")),
            binding("crb-urls", "ClusterRole", "urls", group("g2")),
            binding("crb-all-urls", "ClusterRole", "all-urls", user("urlmaster")),
            binding("crb-second-subject", "ClusterRole", "star-verbs-pods", user("nobody"), group("g3"), user("u4")),
            binding("crb-missing", "ClusterRole", "no-such-role", user("u5")),
        ],
        "rolebindings": [
            binding("rb-cluster-role", "ClusterRole", "named-cm", user("u2"), ns="team"),
            binding("rb-role", "Role", "deployer", sa("sa3"), ns="team"),
            binding("rb-other-ns-sa", "Role", "deployer", sa("sa3", "team"), ns="other"),
            binding("rb-missing", "Role", "nope", user("u3"), ns="team"),
            binding("rb-missing-2", "ClusterRole", "gone", user("u3"), ns="team"),
        ],
    }
    for kind, objs in objects.items():
        for o in objs:
            a.observe(kind, "ADDED", o)
    return a


def res(u: str, groups: tuple[str, ...], verb: str, ns: str, grp: str, resource: str, sub: str = "", name: str = ""):
    return Attributes(UserInfo(u, groups=groups), verb, True, ns, grp, "v1", resource, sub, name)


def url(u: str, groups: tuple[str, ...], verb: str, path: str):
    return Attributes(UserInfo(u, groups=groups), verb, path=path)


SA1 = "system:serviceaccount:ns1:sa1"
SA3 = "system:serviceaccount:team:sa3"

CRB_USER = 'RBAC: allowed by ClusterRoleBinding "crb-user" of ClusterRole "pod-getter" to User "u1"'
CRB_GROUP = 'RBAC: allowed by ClusterRoleBinding "crb-group" of ClusterRole "scaler" to Group "g1"'
CRB_SA = 'RBAC: allowed by ClusterRoleBinding "crb-sa" of ClusterRole "log-reader" to ServiceAccount "sa1/ns1"'
RB_CR = 'RBAC: allowed by RoleBinding "rb-cluster-role/team" of ClusterRole "named-cm" to User "u2"'
RB_ROLE = 'RBAC: allowed by RoleBinding "rb-role/team" of Role "deployer" to ServiceAccount "sa3/team"'
RB_OTHER = 'RBAC: allowed by RoleBinding "rb-other-ns-sa/other" of Role "deployer" to ServiceAccount "sa3/team"'
STAR_VERBS = 'RBAC: allowed by ClusterRoleBinding "crb-second-subject" of ClusterRole "star-verbs-pods" to '
URLS = 'RBAC: allowed by ClusterRoleBinding "crb-urls" of ClusterRole "urls" to Group "g2"'

MATRIX = [
    # User subject: exact verb and resource, any namespace and cluster scope (a ClusterRoleBinding)
    (res("u1", (AUTH,), "get", "team", "", "pods", name="p"), CRB_USER),
    (res("u1", (AUTH,), "get", "", "", "pods", name="p"), CRB_USER),
    (res("u1", (AUTH,), "list", "team", "", "pods"), None),
    (res("u1", (AUTH,), "get", "team", "apps", "pods", name="p"), None),  # another group's "pods"
    (res("u1", (AUTH,), "get", "team", "", "pods", "log", "p"), None),  # a resource does not grant its subresources
    (res("u1", (AUTH,), "get", "team", "", "pods", "status", "p"), None),
    (res("u1x", (AUTH,), "get", "team", "", "pods", name="p"), None),  # names are compared whole
    (res("U1", (AUTH,), "get", "team", "", "pods", name="p"), None),
    # Group subject and `*/scale`
    (res("x", ("g1", AUTH), "update", "team", "apps", "deployments", "scale", "d"), CRB_GROUP),
    (res("x", ("g1", AUTH), "patch", "", "apps", "statefulsets", "scale", "s"), CRB_GROUP),
    (res("x", ("g1", AUTH), "update", "team", "apps", "deployments", "", "d"), None),
    (res("x", ("g1", AUTH), "get", "team", "apps", "deployments", "scale", "d"), None),
    (res("x", ("g1", AUTH), "update", "team", "", "replicationcontrollers", "scale", "r"), None),
    (res("g1", (AUTH,), "update", "team", "apps", "deployments", "scale", "d"), None),  # a user named like the group
    # ServiceAccount subject in a ClusterRoleBinding, `pods/log`
    (res(SA1, (AUTH,), "get", "any", "", "pods", "log", "p"), CRB_SA),
    (res(SA1, (AUTH,), "get", "any", "", "pods", "", "p"), None),
    (res("system:serviceaccount:ns2:sa1", (AUTH,), "get", "any", "", "pods", "log", "p"), None),
    # a ServiceAccount subject without a namespace never matches in a ClusterRoleBinding
    (res("system:serviceaccount::sa2", (AUTH,), "get", "any", "", "pods"), None),
    (res("system:serviceaccount:default:sa2", (AUTH,), "get", "any", "", "pods"), None),
    # RoleBinding to a ClusterRole: its rules apply in the binding's namespace only; resourceNames
    (res("u2", (AUTH,), "get", "team", "", "configmaps", name="cm1"), RB_CR),
    (res("u2", (AUTH,), "update", "team", "", "configmaps", name="cm2"), RB_CR),
    (res("u2", (AUTH,), "get", "team", "", "configmaps", name="cm3"), None),
    (res("u2", (AUTH,), "list", "team", "", "configmaps"), None),  # a list has no name: resourceNames never match
    (res("u2", (AUTH,), "create", "team", "", "configmaps"), None),
    (res("u2", (AUTH,), "get", "other", "", "configmaps", name="cm1"), None),
    (res("u2", (AUTH,), "get", "", "", "configmaps", name="cm1"), None),
    # a ServiceAccount subject without a namespace in a RoleBinding is the binding's namespace's
    (res(SA3, (AUTH,), "create", "team", "apps", "deployments"), RB_ROLE),
    (res(SA3, (AUTH,), "delete", "team", "apps", "deployments", name="d"), RB_ROLE),
    (res(SA3, (AUTH,), "update", "team", "apps", "deployments", name="d"), None),
    (res(SA3, (AUTH,), "create", "", "apps", "deployments"), None),  # a Role never grants cluster-wide
    (res(SA3, (AUTH,), "get", "other", "", "secrets", name="s"), RB_OTHER),  # other's Role "deployer" is `*`
    (res("system:serviceaccount:other:sa3", (AUTH,), "get", "other", "", "secrets"), None),
    # `*` verb on one resource: every verb, subresources not included
    (res("u4", (AUTH,), "deletecollection", "x", "", "pods"), STAR_VERBS + 'User "u4"'),
    (res("x", ("g3",), "watch", "x", "", "pods"), STAR_VERBS + 'Group "g3"'),
    (res("x", ("g3",), "escalate", "", "", "pods", name="p"), STAR_VERBS + 'Group "g3"'),
    (res("x", ("g3",), "get", "x", "", "pods", "log", "p"), None),
    # non-resource URLs: exact, `/apis/*` (a prefix), `/metric*`
    (url("x", ("g2",), "get", "/healthz"), URLS),
    (url("x", ("g2",), "get", "/healthz/ping"), None),
    (url("x", ("g2",), "get", "/apis/apps/v1"), URLS),
    (url("x", ("g2",), "get", "/apis/"), URLS),
    (url("x", ("g2",), "get", "/apis"), None),
    (url("x", ("g2",), "get", "/metrics"), URLS),
    (url("x", ("g2",), "get", "/metric"), URLS),
    (url("x", ("g2",), "post", "/healthz"), None),
    (url("urlmaster", (), "delete", "/anything/at/all"), "RBAC: allowed by ClusterRoleBinding \"crb-all-urls\" of ClusterRole \"all-urls\" to User \"urlmaster\""),
    (url("u1", (), "get", "/healthz"), None),  # resource rules never grant paths
    # `*` on `*`: resource requests only
    (res("urlmaster", (), "get", "x", "", "pods"), None),
]  # fmt: skip


@pytest.fixture(scope="module")
def rbac() -> RBACAuthorizer:
    return world()


@pytest.mark.parametrize(("attrs", "reason"), MATRIX, ids=[str(i) for i in range(len(MATRIX))])
def test_decision_matrix(rbac: RBACAuthorizer, attrs: Attributes, reason: str | None) -> None:
    for _ in range(2):  # the second answer comes from the memo and must be the same
        d = rbac.authorize(attrs)
        if reason is None:
            assert d.decision == NO_OPINION, d
            assert d.reason == ""
        else:
            assert d.decision == ALLOW
            assert d.reason == reason


def test_reason_names_the_first_subject_that_matches(rbac: RBACAuthorizer) -> None:
    d = rbac.authorize(res("u4", ("g3",), "deletecollection", "x", "", "pods"))
    assert d.reason == (
        'RBAC: allowed by ClusterRoleBinding "crb-second-subject" of ClusterRole "star-verbs-pods" to Group "g3"'
    )
    d = rbac.authorize(res("u4", (), "watch", "x", "", "pods"))
    assert d.reason.endswith('to User "u4"')


def test_missing_roles_are_the_reason_when_nothing_allows(rbac: RBACAuthorizer) -> None:
    d = rbac.authorize(res("u3", (AUTH,), "get", "team", "", "pods"))
    assert d.decision == NO_OPINION
    assert d.reason == (
        'RBAC: [role.rbac.authorization.k8s.io "nope" not found, clusterrole.rbac.authorization.k8s.io "gone" not found]'
    )
    d = rbac.authorize(res("u5", (AUTH,), "get", "", "", "pods"))
    assert d.reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found'
    assert rbac.authorize(res("u3", (AUTH,), "get", "elsewhere", "", "pods")).reason == ""


def test_proxy_without_an_authenticated_group_is_unsafeproxy(rbac: RBACAuthorizer) -> None:
    a = RBACAuthorizer(lambda gv, plural: None)  # type: ignore[arg-type,return-value]
    a.observe(
        "clusterroles", "ADDED", cluster_role("proxier", rule(["get", "proxy"], [""], ["services/proxy", "nodes"]))
    )
    a.observe("clusterrolebindings", "ADDED", binding("b", "ClusterRole", "proxier", user("p")))
    assert a.authorize(res("p", (AUTH,), "get", "x", "", "services", "proxy", "s")).decision == ALLOW
    d = a.authorize(res("p", (), "get", "x", "", "services", "proxy", "s"))
    assert (d.decision, d.reason) == (NO_OPINION, "proxy subresource changed to unsafeproxy")
    d = a.authorize(res("p", (), "proxy", "", "", "nodes", "", "n"))
    assert (d.decision, d.reason) == (NO_OPINION, "proxy verb changed to unsafeproxy")


def test_changes_reach_decisions() -> None:
    a = world()
    who = res("u9", (AUTH,), "get", "team", "", "pods", name="p")
    assert not a.authorize(who).allowed
    rb = binding("rb-new", "ClusterRole", "pod-getter", user("u9"), ns="team")
    a.observe("rolebindings", "ADDED", rb)
    assert a.authorize(who).allowed
    # the role changes under the binding
    a.observe("clusterroles", "MODIFIED", cluster_role("pod-getter", rule(["list"], [""], ["pods"])))
    assert not a.authorize(who).allowed
    a.observe("clusterroles", "MODIFIED", cluster_role("pod-getter", rule(["get"], [""], ["pods"])))
    assert a.authorize(who).allowed
    a.observe("rolebindings", "DELETED", rb)
    assert not a.authorize(who).allowed
    # a binding's subjects change: the old subject loses, the new one gains
    a.observe("clusterrolebindings", "MODIFIED", binding("crb-user", "ClusterRole", "pod-getter", user("u10")))
    assert not a.authorize(res("u1", (AUTH,), "get", "", "", "pods", name="p")).allowed
    assert a.authorize(res("u10", (AUTH,), "get", "", "", "pods", name="p")).allowed


def test_rules_for(rbac: RBACAuthorizer) -> None:
    r = rbac.rules_for(UserInfo("u2", groups=("g2", AUTH)), "team")
    assert [(x.verbs, x.api_groups, x.resources, x.resource_names) for x in r.resource_rules] == [
        (["get", "update"], [""], ["configmaps"], ["cm1", "cm2"])
    ]
    assert [(x.verbs, x.non_resource_urls) for x in r.non_resource_rules] == [
        (["get"], ["/healthz", "/apis/*", "/metric*"])
    ]
    assert not r.incomplete and r.error == ""
    assert rbac.rules_for(UserInfo("u3"), "team").error.startswith('[role.rbac.authorization.k8s.io "nope" not found')


# -- coverage and the escalation message ----------------------------------------------------------------


def test_covers() -> None:
    owner = [rule(["get", "list"], [""], ["pods", "*/log"]), rule(["*"], ["apps"], ["deployments"], names=["d1"])]
    assert covers(owner, [rule(["get"], [""], ["pods", "pods/log", "services/log"])]) == (True, [])
    ok, missing = covers(owner, [rule(["get", "watch"], ["", "apps"], ["pods"])])
    assert not ok
    assert missing == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["watch"]},
        {"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["watch"]},
    ]
    # named owner rules cover the same names only, never all names
    assert covers(owner, [rule(["delete"], ["apps"], ["deployments"], names=["d1"])])[0]
    assert not covers(owner, [rule(["delete"], ["apps"], ["deployments"])])[0]
    assert not covers(owner, [rule(["delete"], ["apps"], ["deployments"], names=["d1", "d2"])])[0]
    # pods does not cover pods/log's sibling; `*` covers subresources
    assert not covers([rule(["get"], [""], ["pods"])], [rule(["get"], [""], ["pods/exec"])])[0]
    assert covers([rule(["get"], ["*"], ["*"])], [rule(["get"], ["x"], ["pods/exec"])])[0]
    # URLs: trailing `*` covers by prefix
    assert covers([rule(["get"], urls=["/apis/*"])], [rule(["get"], urls=["/apis/apps", "/apis/*"])])[0]
    assert not covers([rule(["get"], urls=["/apis/*"])], [rule(["get"], urls=["/api"])])[0]


def test_compact_string() -> None:
    assert compact_string(rule(["create"], ["apps"], ["deployments"])) == (
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["create"]}'
    )
    assert compact_string(rule(["get", "list"], [""], ["configmaps"], names=["a"])) == (
        '{APIGroups:[""], Resources:["configmaps"], ResourceNames:["a"], Verbs:["get" "list"]}'
    )
    assert compact_string(rule(["get"], urls=["/healthz"])) == '{NonResourceURLs:["/healthz"], Verbs:["get"]}'


def test_escalation_message_compacts_and_sorts() -> None:
    _, missing = covers([], [rule(["get", "list"], ["apps", ""], ["deployments"]), rule(["get"], urls=["/x"])])
    msg = escalation_message(UserInfo("alice", groups=("dev", AUTH)), missing, [])
    assert msg == (
        'user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently '
        "held:\n"
        '{APIGroups:[""], Resources:["deployments"], Verbs:["get" "list"]}\n'
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}\n'
        '{NonResourceURLs:["/x"], Verbs:["get"]}'
    )
    msg = escalation_message(UserInfo("bob"), missing[:1], ['roles.rbac.authorization.k8s.io "r" not found'])
    assert msg.endswith('Verbs:["get"]}; resolution errors: [roles.rbac.authorization.k8s.io "r" not found]')
    assert 'user "bob" (groups=[]) ' in msg


def test_only_gc_fields() -> None:
    old = {"metadata": {"name": "r", "resourceVersion": "5"}, "rules": [rule(["get"], [""], ["pods"])]}
    new = {**old, "metadata": {**old["metadata"], "finalizers": ["f"], "ownerReferences": [{"uid": "u"}]}}
    assert is_only_mutating_gc_fields(new, old)
    assert not is_only_mutating_gc_fields({**new, "rules": []}, old)
    assert not is_only_mutating_gc_fields({**new, "metadata": {**new["metadata"], "labels": {"a": "b"}}}, old)
