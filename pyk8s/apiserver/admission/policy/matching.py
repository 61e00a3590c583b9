"""Which requests a policy or a binding applies to: `matchConstraints` / `matchResources` with their
namespaceSelector, objectSelector, resourceRules, excludeResourceRules and matchPolicy (upstream: apiserver
pkg/admission/plugin/policy/matching matching.go, and the webhook predicates it shares: rules/rules.go,
namespace/matcher.go, object/matcher.go).

A request is seen through `Request`: its operation and group/version/resource/subresource, namespace and
name, and the object and old object whose labels the object selector reads. With matchPolicy `Equivalent` a
rule that does not name the request's version may still match another version of the same resource; the
request is then matched as that resource (`Match.resource`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ....api import errors
from ....api.selectors import EVERYTHING, LabelSelector, SelectorError, label_selector_from_object

EXACT, EQUIVALENT = "Exact", "Equivalent"
ALL_SCOPES, CLUSTER_SCOPE, NAMESPACED_SCOPE = "*", "Cluster", "Namespaced"


@dataclass(frozen=True)
class Request:
    """What matching reads of one admission request."""

    operation: str
    group: str
    version: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    kind: str = ""
    object: Any = None
    old_object: Any = None

    @property
    def is_namespace(self) -> bool:
        return self.group == "" and self.version == "v1" and self.resource == "namespaces"


@dataclass(frozen=True)
class Match:
    """A request matched: as which resource and kind (another version's with matchPolicy Equivalent)."""

    group: str
    version: str
    resource: str
    kind: str


# (group, version, resource) -> the same resource at other group/versions, each with its kind
Equivalents = Callable[[str, str, str], Sequence[tuple[str, str, str, str]]]
# namespace name -> its labels; raises StatusError (NotFound) when there is no such namespace
NamespaceLabels = Callable[[str], dict[str, str] | None]


def _exact_or_wildcard(items: Any, requested: str) -> bool:
    return any(item == "*" or item == requested for item in items or ())


def rule_matches(rule: dict[str, Any], r: Request) -> bool:
    """One rule (operations, apiGroups, apiVersions, resources, scope) against the request (upstream:
    rules.Matcher.Matches)."""
    scope = rule.get("scope") or ALL_SCOPES
    if scope == NAMESPACED_SCOPE:
        if r.is_namespace or not r.namespace:
            return False
    elif scope == CLUSTER_SCOPE:
        if not (r.is_namespace or not r.namespace):
            return False
    elif scope != ALL_SCOPES:
        return False
    if not any(op == "*" or op == r.operation for op in rule.get("operations") or ()):
        return False
    if not _exact_or_wildcard(rule.get("apiGroups"), r.group):
        return False
    if not _exact_or_wildcard(rule.get("apiVersions"), r.version):
        return False
    for item in rule.get("resources") or ():
        res, _, sub = item.partition("/")
        if (res == "*" or res == r.resource) and (sub == "*" or sub == r.subresource):
            return True
    return False


def _named_rule_matches(rule: dict[str, Any], r: Request) -> bool:
    if not rule_matches(rule, r):
        return False
    names = rule.get("resourceNames") or ()
    return not names or r.name in names


def matches_resource_rules(
    rules: Sequence[dict[str, Any]], match_policy: str | None, r: Request, equivalents: Equivalents
) -> Match | None:
    """The first rule matching the request, or with matchPolicy Equivalent one matching the same resource at
    another version (upstream: matchesResourceRules)."""
    for rule in rules:
        if _named_rule_matches(rule, r):
            return Match(r.group, r.version, r.resource, r.kind)
    if match_policy != EQUIVALENT:  # (validation makes it one of the two; nil is Exact)
        return None
    others = [
        e for e in equivalents(r.group, r.version, r.resource) if (e[0], e[1], e[2]) != (r.group, r.version, r.resource)
    ]
    for rule in rules:
        for group, version, resource, kind in others:
            if _named_rule_matches(rule, replace(r, group=group, version=version, resource=resource)):
                return Match(group, version, resource, kind)
    return None


def parse_selector(selector: Any) -> LabelSelector:
    """A namespaceSelector / objectSelector; a missing one matches everything, as a defaulted `{}` does."""
    if selector is None:
        return EVERYTHING
    try:
        return label_selector_from_object(selector)
    except SelectorError as err:
        raise errors.internal_error(str(err)) from None


def _labels(obj: Any) -> dict[str, str] | None:
    if not isinstance(obj, dict):
        return None
    meta = obj.get("metadata")
    return (meta.get("labels") or {}) if isinstance(meta, dict) else {}


def namespace_matches(selector: Any, r: Request, namespace_labels: NamespaceLabels) -> bool:
    """Upstream's MatchNamespaceSelector: cluster-scoped requests (but namespaces themselves) always match;
    a namespace create or update is matched by the labels it is given."""
    namespace = r.name if r.is_namespace else r.namespace
    if not namespace and not r.is_namespace:
        return True
    parsed = parse_selector(selector)
    if parsed.empty:
        return True
    if r.is_namespace and not r.subresource and r.operation in ("CREATE", "UPDATE"):
        return parsed.matches(_labels(r.object) or {})
    return parsed.matches(namespace_labels(namespace) or {})


def object_matches(selector: Any, r: Request) -> bool:
    """Upstream's MatchObjectSelector: the object's labels or the old object's."""
    parsed = parse_selector(selector)
    if parsed.empty:
        return True
    return any(labels is not None and parsed.matches(labels) for labels in (_labels(r.object), _labels(r.old_object)))


def matches(
    criteria: dict[str, Any] | None, r: Request, namespace_labels: NamespaceLabels, equivalents: Equivalents
) -> Match | None:
    """Whether `criteria` (a matchConstraints or matchResources) select the request, and as what (upstream:
    Matcher.Matches). Namespace lookups that fail raise their StatusError, but only for a request the rules
    match."""
    criteria = criteria or {}
    ns_error: errors.StatusError | None = None
    try:
        if not namespace_matches(criteria.get("namespaceSelector"), r, namespace_labels):
            return None
    except errors.StatusError as err:
        ns_error = err
    if not object_matches(criteria.get("objectSelector"), r):
        return None
    policy = criteria.get("matchPolicy")
    if matches_resource_rules(criteria.get("excludeResourceRules") or (), policy, r, equivalents) is not None:
        return None
    rules = criteria.get("resourceRules") or ()
    found = (
        matches_resource_rules(rules, policy, r, equivalents)
        if rules
        else Match(r.group, r.version, r.resource, r.kind)
    )
    if found is None:
        return None
    if ns_error is not None:
        raise ns_error
    return found
