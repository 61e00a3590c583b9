"""Properties of RBAC rule evaluation: the authorizer's compiled rules answer as upstream's RuleAllows does on
the stored rule; a rule's breakdown allows exactly what the rule does; whatever owner rules cover, they also
allow; every rule covers itself; a decision is what the user's resolved rules say."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.authz import Attributes
from pyk8s.apiserver.authz.rbac import RBACAuthorizer
from pyk8s.apiserver.authz.rbac.escalation import breakdown_rule, covers
from pyk8s.apiserver.authz.rbac.rules import CompiledRule, rule_allows

VERBS = ["get", "list", "create", "update", "delete", "watch", "escalate", "*"]
GROUPS = ["", "apps", "batch", "*"]
RESOURCES = ["pods", "deployments", "pods/log", "deployments/scale", "*/scale", "*/log", "*", "secrets"]
NAMES = ["a", "b", "c"]
URLS = ["/healthz", "/api", "/apis/*", "/apis/apps", "/metric*", "*", "/a**"]
PATHS = ["/healthz", "/api", "/apis", "/apis/", "/apis/apps/v1", "/metrics", "/a", "/a/b", "/version"]


def subset(xs: list[str], min_size: int = 0):
    return st.lists(st.sampled_from(xs), min_size=min_size, max_size=3, unique=True)


resource_rules = st.builds(
    lambda v, g, r, n: {"verbs": v, "apiGroups": g, "resources": r, **({"resourceNames": n} if n else {})},
    subset(VERBS, 1), subset(GROUPS, 1), subset(RESOURCES, 1), subset(NAMES),
)  # fmt: skip
url_rules = st.builds(lambda v, u: {"verbs": v, "nonResourceURLs": u}, subset(VERBS, 1), subset(URLS, 1))
rules = st.one_of(resource_rules, url_rules)

USER = UserInfo("u", groups=("g",))
resource_attrs = st.builds(
    lambda verb, group, res, sub, name, ns: Attributes(USER, verb, True, ns, group, "v1", res, sub, name),
    st.sampled_from([v for v in VERBS if v != "*"] + ["patch"]),
    st.sampled_from(["", "apps", "batch", "other"]),
    st.sampled_from(["pods", "deployments", "secrets", "nodes"]),
    st.sampled_from(["", "", "log", "scale", "status"]),
    st.sampled_from(["", "a", "b", "z"]),
    st.sampled_from(["", "team"]),
)  # fmt: skip
url_attrs = st.builds(
    lambda verb, path: Attributes(USER, verb, path=path),
    st.sampled_from(["get", "post", "delete"]),
    st.sampled_from(PATHS),
)
attrs = st.one_of(resource_attrs, url_attrs)


@settings(max_examples=400, deadline=None)
@given(rules, attrs)
def test_compiled_rule_answers_as_rule_allows(rule: dict, a: Attributes) -> None:
    assert CompiledRule(rule).allows(a) == rule_allows(a, rule)


@settings(max_examples=400, deadline=None)
@given(rules, attrs)
def test_breakdown_allows_what_the_rule_allows(rule: dict, a: Attributes) -> None:
    assert rule_allows(a, rule) == any(rule_allows(a, sub) for sub in breakdown_rule(rule))


@settings(max_examples=200, deadline=None)
@given(rules)
def test_a_rule_covers_itself(rule: dict) -> None:
    assert covers([rule], [rule]) == (True, [])


@settings(max_examples=500, deadline=None)
@given(st.lists(rules, max_size=3), rules, attrs)
def test_what_owner_rules_cover_they_allow(owner: list[dict], servant: dict, a: Attributes) -> None:
    ok, missing = covers(owner, [servant])
    if ok and rule_allows(a, servant):
        assert any(rule_allows(a, o) for o in owner)
    # what is missing is exactly the broken-down rules no owner rule allows all of
    assert all(sub in breakdown_rule(servant) for sub in missing)


@settings(max_examples=100, deadline=None)
@given(st.lists(rules, min_size=1, max_size=4), st.lists(rules, max_size=3), st.lists(attrs, min_size=1, max_size=6))
def test_decisions_follow_the_resolved_rules(cluster_rules: list[dict], ns_rules: list[dict], asks: list) -> None:
    a = RBACAuthorizer(lambda gv, plural: None)  # type: ignore[arg-type,return-value]
    ref = {"apiGroup": "rbac.authorization.k8s.io"}
    a.observe("clusterroles", "ADDED", {"metadata": {"name": "c"}, "rules": cluster_rules})
    a.observe("roles", "ADDED", {"metadata": {"namespace": "team", "name": "r"}, "rules": ns_rules})
    a.observe("clusterrolebindings", "ADDED", {
        "metadata": {"name": "cb"}, "roleRef": {**ref, "kind": "ClusterRole", "name": "c"},
        "subjects": [{"kind": "Group", "name": "g"}],
    })  # fmt: skip
    a.observe("rolebindings", "ADDED", {
        "metadata": {"namespace": "team", "name": "rb"}, "roleRef": {**ref, "kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "u"}],
    })  # fmt: skip
    for x in asks:
        expected = any(rule_allows(x, r) for r in cluster_rules + (ns_rules if x.namespace == "team" else []))
        assert a.authorize(x).allowed == expected
        assert a.authorize(x).allowed == expected  # memoised


@settings(max_examples=150, deadline=None)
@given(st.lists(rules, min_size=1, max_size=4), st.lists(rules, max_size=4), st.lists(attrs, min_size=1, max_size=12))
def test_a_memoised_decision_is_the_one_decided_afresh(
    cluster_rules: list[dict], ns_rules: list[dict], asks: list
) -> None:
    """Decisions are memoised once for every object name when no resourceNames take part; each one, reason
    included, is what an authorizer with nothing memoised decides."""
    memoised = RBACAuthorizer(lambda gv, plural: None)  # type: ignore[arg-type,return-value]
    fresh = RBACAuthorizer(lambda gv, plural: None)  # type: ignore[arg-type,return-value]
    ref = {"apiGroup": "rbac.authorization.k8s.io"}
    for authz in (memoised, fresh):
        authz.observe("clusterroles", "ADDED", {"metadata": {"name": "c"}, "rules": cluster_rules})
        authz.observe("roles", "ADDED", {"metadata": {"namespace": "team", "name": "r"}, "rules": ns_rules})
        authz.observe("clusterrolebindings", "ADDED", {
            "metadata": {"name": "cb"}, "roleRef": {**ref, "kind": "ClusterRole", "name": "c"},
            "subjects": [{"kind": "Group", "name": "g"}],
        })  # fmt: skip
        authz.observe("rolebindings", "ADDED", {
            "metadata": {"namespace": "team", "name": "rb"}, "roleRef": {**ref, "kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "u"}],
        })  # fmt: skip
    for x in asks + asks:
        fresh._memo.clear()
        assert memoised.authorize(x) == fresh.authorize(x)
