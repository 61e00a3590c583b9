"""How one RBAC PolicyRule matches a request and one binding subject matches a user (upstream:
pkg/apis/rbac/v1/evaluation_helpers.go, RuleAllows in plugin/pkg/auth/authorizer/rbac/rbac.go, appliesToUser and
describeSubject in pkg/registry/rbac/validation/rule.go).

Rules arrive as the stored JSON (`verbs`, `apiGroups`, `resources`, `resourceNames`, `nonResourceURLs`). The
plain functions read that form directly; `CompiledRule` holds the same rule as sets, which is what the
authorizer's index keeps, since it asks the same rules on every request.
"""

from __future__ import annotations

from typing import Any

from ....api.errors import go_quote
from ...authn import UserInfo
from .. import Attributes

GROUP_NAME = "rbac.authorization.k8s.io"
VERB_ALL = "*"
API_GROUP_ALL = "*"
RESOURCE_ALL = "*"
NON_RESOURCE_ALL = "*"

USER_KIND, GROUP_KIND, SERVICE_ACCOUNT_KIND = "User", "Group", "ServiceAccount"
SERVICE_ACCOUNT_USERNAME_PREFIX = "system:serviceaccount:"

Rule = dict[str, Any]  # a rbac.authorization.k8s.io/v1 PolicyRule as stored


def _strings(rule: Rule, key: str) -> list[str]:
    v = rule.get(key)
    return v if isinstance(v, list) else []


def verb_matches(rule: Rule, verb: str) -> bool:
    return any(v == VERB_ALL or v == verb for v in _strings(rule, "verbs"))


def api_group_matches(rule: Rule, group: str) -> bool:
    return any(g == API_GROUP_ALL or g == group for g in _strings(rule, "apiGroups"))


def resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    """`combined` is `resource[/subresource]`: `*` matches anything, a subresource needs its combined name or
    `*/<subresource>`; a bare resource never grants its subresources."""
    for r in _strings(rule, "resources"):
        if r == RESOURCE_ALL or r == combined:
            return True
        if subresource and r == "*/" + subresource:
            return True
    return False


def resource_name_matches(rule: Rule, name: str) -> bool:
    names = _strings(rule, "resourceNames")
    return not names or name in names


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    for u in _strings(rule, "nonResourceURLs"):
        if u == NON_RESOURCE_ALL or u == path:
            return True
        if u.endswith("*") and path.startswith(u.rstrip("*")):
            return True
    return False


def rule_allows(a: Attributes, rule: Rule) -> bool:
    """Whether `rule` grants the request `a` (upstream: RuleAllows)."""
    if a.resource_request:
        combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        return (
            verb_matches(rule, a.verb)
            and api_group_matches(rule, a.api_group)
            and resource_matches(rule, combined, a.subresource)
            and resource_name_matches(rule, a.name)
        )
    return verb_matches(rule, a.verb) and non_resource_url_matches(rule, a.path)


def rules_allow(a: Attributes, rules: list[Rule]) -> bool:
    return any(rule_allows(a, r) for r in rules)


class CompiledRule:
    """A PolicyRule as sets, answering `allows` as `rule_allows` does on its stored form."""

    __slots__ = (
        "all_groups",
        "all_resources",
        "all_urls",
        "all_verbs",
        "groups",
        "names",
        "resources",
        "source",
        "url_prefixes",
        "urls",
        "verbs",
    )

    def __init__(self, rule: Rule) -> None:
        self.source = rule
        self.verbs = frozenset(_strings(rule, "verbs"))
        self.all_verbs = VERB_ALL in self.verbs
        self.groups = frozenset(_strings(rule, "apiGroups"))
        self.all_groups = API_GROUP_ALL in self.groups
        self.resources = frozenset(_strings(rule, "resources"))
        self.all_resources = RESOURCE_ALL in self.resources
        self.names = frozenset(_strings(rule, "resourceNames"))
        urls = _strings(rule, "nonResourceURLs")
        self.urls = frozenset(urls)
        self.all_urls = NON_RESOURCE_ALL in self.urls
        self.url_prefixes = tuple(u.rstrip("*") for u in urls if u.endswith("*"))

    def allows(self, a: Attributes) -> bool:
        if not (self.all_verbs or a.verb in self.verbs):
            return False
        if a.resource_request:
            return self._allows_resource(a) and (not self.names or a.name in self.names)
        if self.all_urls or a.path in self.urls:
            return True
        return any(a.path.startswith(p) for p in self.url_prefixes)

    def allows_any_name(self, a: Attributes) -> bool:
        """Whether the rule would allow `a` for some object name: everything but resourceNames matches."""
        return (self.all_verbs or a.verb in self.verbs) and a.resource_request and self._allows_resource(a)

    def _allows_resource(self, a: Attributes) -> bool:
        if not (self.all_groups or a.api_group in self.groups):
            return False
        if self.all_resources:
            return True
        sub = a.subresource
        if sub:
            return f"{a.resource}/{sub}" in self.resources or "*/" + sub in self.resources
        return a.resource in self.resources


def compile_rules(rules: Any) -> tuple[CompiledRule, ...]:
    return tuple(CompiledRule(r) for r in rules if isinstance(r, dict)) if isinstance(rules, list) else ()


# -- subjects --------------------------------------------------------------------------------------------


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}"


def subject_username(subject: dict[str, Any], binding_namespace: str) -> str | None:
    """The user name a User or ServiceAccount subject stands for ("" namespace of a ServiceAccount: the
    binding's; none at all, in a ClusterRoleBinding, matches nobody), None for other kinds."""
    kind = subject.get("kind")
    name = subject.get("name") or ""
    if kind == USER_KIND:
        return name
    if kind == SERVICE_ACCOUNT_KIND:
        ns = subject.get("namespace") or binding_namespace
        return service_account_username(ns, name) if ns else None
    return None


def applies_to_user(user: UserInfo, subject: dict[str, Any], namespace: str) -> bool:
    """Whether a binding subject names `user` (upstream: appliesToUser); `namespace` is the binding's ("" for
    a ClusterRoleBinding)."""
    if subject.get("kind") == GROUP_KIND:
        return subject.get("name") in user.groups
    username = subject_username(subject, namespace)
    return username is not None and username == user.name


def applies_to(user: UserInfo, subjects: Any, namespace: str) -> int | None:
    """The index of the first subject that names `user`, or None."""
    if not isinstance(subjects, list):
        return None
    for i, s in enumerate(subjects):
        if isinstance(s, dict) and applies_to_user(user, s, namespace):
            return i
    return None


def describe_subject(subject: dict[str, Any], binding_namespace: str) -> str:
    """A subject as an RBAC reason names it: `Group "g"`, `ServiceAccount "name/ns"`."""
    kind = str(subject.get("kind") or "")
    name = str(subject.get("name") or "")
    if kind == SERVICE_ACCOUNT_KIND:
        return f"{kind} {go_quote(name + '/' + (subject.get('namespace') or binding_namespace))}"
    return f"{kind} {go_quote(name)}"
