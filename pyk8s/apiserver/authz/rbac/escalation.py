"""RBAC escalation prevention: nobody grants, through a role or a binding, what they do not hold themselves
(upstream: pkg/registry/rbac/escalation_check.go, the policybased storages of roles, clusterroles, rolebindings
and clusterrolebindings, ConfirmNoEscalation and CompactRules in pkg/registry/rbac/validation, and Covers in
k8s.io/component-helpers/auth/rbac/validation/policy_comparator.go).

A write of a Role or ClusterRole passes when the user is in system:masters, may `escalate` it, or already holds
every rule it has in the object's namespace; a ClusterRole with an aggregationRule needs cluster-admin's rules
too. A write of a binding passes for system:masters, for `bind` on the referenced role, or when the user holds
all of that role's rules. Updates that only touch ownerReferences and finalizers (the garbage collector's) pass.
The checks run on the write path of the four stores (`EscalationCheck`, installed by `install`), after mutating
admission, as upstream's run inside its storage's Create and Update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ....api import errors
from ....api.meta import Object
from ...admission import CREATE, UPDATE
from ...authn import UserInfo
from ...registry.rest import Context, RESTStore
from .. import ALLOW, SYSTEM_PRIVILEGED_GROUP, Attributes, Authorizer
from .authorizer import CLUSTER_ROLES, GROUP_VERSION, KINDS, ROLES, RBACAuthorizer, aggregate_error
from .rules import API_GROUP_ALL, GROUP_NAME, RESOURCE_ALL, VERB_ALL, Rule

# What a ClusterRole's aggregationRule needs: it can gather anything.
FULL_AUTHORITY: list[Rule] = [
    {"verbs": [VERB_ALL], "apiGroups": [API_GROUP_ALL], "resources": [RESOURCE_ALL]},
    {"verbs": [VERB_ALL], "nonResourceURLs": ["*"]},
]
AGGREGATION_RULE_MESSAGE = "must have cluster-admin privileges to use the aggregationRule"


# -- coverage (policy_comparator.go) ---------------------------------------------------------------------


def _strings(rule: Rule, key: str) -> list[str]:
    v = rule.get(key)
    return v if isinstance(v, list) else []


def breakdown_rule(rule: Rule) -> list[Rule]:
    """`rule` as rules of one verb, one group and resource, and at most one name; or one verb and one URL."""
    verbs = _strings(rule, "verbs")
    names = _strings(rule, "resourceNames")
    out: list[Rule] = []
    for group in _strings(rule, "apiGroups"):
        for resource in _strings(rule, "resources"):
            for verb in verbs:
                if names:
                    out += [{"apiGroups": [group], "resources": [resource], "verbs": [verb], "resourceNames": [n]}
                            for n in names]  # fmt: skip
                else:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    for url in _strings(rule, "nonResourceURLs"):
        out += [{"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs]
    return out


def _resources_cover(owner: list[str], wanted: list[str]) -> bool:
    if RESOURCE_ALL in owner:
        return True
    for path in wanted:
        if path in owner:
            continue
        if "/" not in path:
            return False
        if "*/" + path.split("/", 1)[1] not in owner:
            return False
    return True


def _url_covers(owner: str, path: str) -> bool:
    return owner == path or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """Whether `owner` grants everything the broken-down rule `sub` does (upstream: ruleCovers)."""
    owner_verbs, owner_groups = _strings(owner, "verbs"), _strings(owner, "apiGroups")
    if not (VERB_ALL in owner_verbs or set(_strings(sub, "verbs")) <= set(owner_verbs)):
        return False
    if not (API_GROUP_ALL in owner_groups or set(_strings(sub, "apiGroups")) <= set(owner_groups)):
        return False
    if not _resources_cover(_strings(owner, "resources"), _strings(sub, "resources")):
        return False
    owner_urls = _strings(owner, "nonResourceURLs")
    if not all(any(_url_covers(o, p) for o in owner_urls) for p in _strings(sub, "nonResourceURLs")):
        return False
    owner_names, sub_names = _strings(owner, "resourceNames"), _strings(sub, "resourceNames")
    if not sub_names:
        return not owner_names
    return not owner_names or set(sub_names) <= set(owner_names)


def covers(owner_rules: list[Rule], servant_rules: list[Rule]) -> tuple[bool, list[Rule]]:
    """Whether `owner_rules` grant all that `servant_rules` do, and the broken-down rules they do not."""
    uncovered = [
        sub
        for servant in servant_rules
        for sub in breakdown_rule(servant)
        if not any(rule_covers(o, sub) for o in owner_rules)
    ]
    return not uncovered, uncovered


# -- printing (CompactRules, CompactString) ---------------------------------------------------------------


def compact_rules(rules: list[Rule]) -> list[Rule]:
    """Rules of one group and one resource and nothing else but verbs, merged per (group, resource)."""
    out: list[Rule] = []
    simple: dict[tuple[str, str], Rule] = {}
    for r in rules:
        groups, resources = _strings(r, "apiGroups"), _strings(r, "resources")
        is_simple = (
            not _strings(r, "resourceNames")
            and not _strings(r, "nonResourceURLs")
            and len(groups) == 1
            and len(resources) == 1
        )
        if not is_simple:
            out.append(r)
            continue
        key = (groups[0], resources[0])
        if key in simple:
            simple[key]["verbs"] += _strings(r, "verbs")
        else:
            simple[key] = {"apiGroups": list(groups), "resources": list(resources), "verbs": list(_strings(r, "verbs"))}
    return out + list(simple.values())


def _go_strings(values: Any) -> str:
    """A []string as Go's %q prints it: `["a" "b"]`."""
    return "[" + " ".join(errors.go_quote(str(v)) for v in values) + "]"


def compact_string(rule: Rule) -> str:
    """A rule as upstream's escalation message prints it: the non-empty parts in a fixed order."""
    parts = [
        f"{label}:{_go_strings(_strings(rule, key))}"
        for label, key in (
            ("APIGroups", "apiGroups"),
            ("Resources", "resources"),
            ("NonResourceURLs", "nonResourceURLs"),
            ("ResourceNames", "resourceNames"),
            ("Verbs", "verbs"),
        )
        if _strings(rule, key)
    ]
    return "{" + ", ".join(parts) + "}"


def escalation_message(user: UserInfo, missing: list[Rule], resolution_errors: list[str]) -> str:
    descriptions = sorted({compact_string(r) for r in compact_rules(missing)})
    msg = (
        f"user {errors.go_quote(user.name)} (groups={_go_strings(user.groups)}) is attempting to grant RBAC "
        "permissions not currently held:\n" + "\n".join(descriptions)
    )
    if resolution_errors:
        msg += f"; resolution errors: [{aggregate_error(resolution_errors)}]"
    return msg


# -- the checks (escalation_check.go) --------------------------------------------------------------------


def escalation_allowed(user: UserInfo) -> bool:
    """system:masters may write any role or binding (the server's own loopback identity is one)."""
    return SYSTEM_PRIVILEGED_GROUP in user.groups


def role_escalation_authorized(
    authorizer: Authorizer | None, user: UserInfo, resource: str, namespace: str, name: str
) -> bool:
    """Whether the user may `escalate` the role or clusterrole the request names (its URL's name: none on a
    create)."""
    if authorizer is None or resource not in (ROLES, CLUSTER_ROLES):
        return False
    a = Attributes(user, "escalate", True, namespace, GROUP_NAME, "*", resource, "", name)
    return authorizer.authorize(a).decision == ALLOW


def binding_authorized(authorizer: Authorizer | None, user: UserInfo, role_ref: Any, namespace: str) -> bool:
    """Whether the user may `bind` the referenced role in the binding's namespace ("" for a
    ClusterRoleBinding: cluster-wide)."""
    if authorizer is None or not isinstance(role_ref, dict):
        return False
    resource = {"ClusterRole": CLUSTER_ROLES, "Role": ROLES}.get(role_ref.get("kind") or "")
    if resource is None:
        return False
    a = Attributes(user, "bind", True, namespace, str(role_ref.get("apiGroup") or ""), "", resource, "",
                   str(role_ref.get("name") or ""))  # fmt: skip
    return authorizer.authorize(a).decision == ALLOW


_GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "managedFields")


def is_only_mutating_gc_fields(new: Object, old: Object) -> bool:
    """Whether an update changes nothing but what the garbage collector writes (and the write's own
    managedFields entry)."""

    def stripped(obj: Object) -> Object:
        md = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _GC_FIELDS}
        return {**obj, "metadata": md}

    return stripped(new) == stripped(old)


def has_aggregation_rule(obj: Object | None) -> bool:
    rule = (obj or {}).get("aggregationRule")
    return isinstance(rule, dict) and bool(rule.get("clusterRoleSelectors"))


class EscalationCheck:
    """The before-write hook of one RBAC store: raises upstream's 403 (or the 404 of a missing role a binding
    refers to) for a write that would grant what its user does not hold."""

    def __init__(self, resource: str, rest: RESTStore, authorizer: Authorizer | None, resolver: RBACAuthorizer) -> None:
        self.resource = resource
        self.rest = rest
        self.authorizer = authorizer
        self.resolver = resolver
        self.stores = resolver.stores

    async def __call__(
        self, operation: str, namespace: str, name: str, new: Object, old: Object | None, ctx: Context
    ) -> None:
        user = ctx.user
        if operation not in (CREATE, UPDATE) or escalation_allowed(user):
            return
        if self.resource in (ROLES, CLUSTER_ROLES):
            await self._check_role(operation, namespace, name, new, old, user)
        else:
            await self._check_binding(operation, namespace, new, old, user)

    def _forbidden(self, obj: Object, message: str) -> errors.StatusError:
        return errors.forbidden_request(self.resource, (obj.get("metadata") or {}).get("name") or "", message,
                                        GROUP_NAME)  # fmt: skip

    async def _confirm(self, user: UserInfo, namespace: str, rules: list[Rule]) -> str | None:
        """None when the user holds every one of `rules` in `namespace`, else upstream's message."""
        await self.resolver.fresh()
        owner, errs = self.resolver.policy_rules_for(user, namespace)
        ok, missing = covers(owner, rules)
        if ok:
            return None
        return escalation_message(user, missing, [e.message(registry=True) for e in errs])

    async def _check_role(
        self, operation: str, namespace: str, name: str, new: Object, old: Object | None, user: UserInfo
    ) -> None:
        if role_escalation_authorized(self.authorizer, user, self.resource, namespace, name):
            return
        if operation == UPDATE and old is not None and is_only_mutating_gc_fields(new, old):
            return
        rules = [r for r in new.get("rules") or [] if isinstance(r, dict)]
        if (msg := await self._confirm(user, namespace, rules)) is not None:
            raise self._forbidden(new, msg)
        if self.resource == CLUSTER_ROLES and (has_aggregation_rule(new) or has_aggregation_rule(old)):
            if await self._confirm(user, namespace, FULL_AUTHORITY) is not None:
                raise self._forbidden(new, AGGREGATION_RULE_MESSAGE)

    async def _check_binding(
        self, operation: str, namespace: str, new: Object, old: Object | None, user: UserInfo
    ) -> None:
        if operation == UPDATE and old is not None and is_only_mutating_gc_fields(new, old):
            return
        ref = new.get("roleRef") or {}
        if binding_authorized(self.authorizer, user, ref, namespace):
            return
        rules = await self._role_reference_rules(ref, namespace)
        if (msg := await self._confirm(user, namespace, rules)) is not None:
            raise self._forbidden(new, msg)

    async def _role_reference_rules(self, ref: dict[str, Any], namespace: str) -> list[Rule]:
        """The referenced role's rules, read as the registry reads them (a missing role: its 404)."""
        kind = ref.get("kind")
        if kind == "ClusterRole":
            role = await self.stores[CLUSTER_ROLES].get("", str(ref.get("name") or ""))
        elif kind == "Role":
            role = await self.stores[ROLES].get(namespace, str(ref.get("name") or ""))
        else:
            raise errors.internal_error(f"unsupported role reference kind: {errors.go_quote(str(kind))}")
        return [r for r in role.get("rules") or [] if isinstance(r, dict)]


def install(rest: Callable[[str, str], RESTStore], authorizer: Authorizer | None, resolver: RBACAuthorizer) -> None:
    """Put the escalation checks on the writes of roles, clusterroles, rolebindings and clusterrolebindings;
    `authorizer` answers the `escalate` and `bind` questions (upstream: the server's whole authorizer chain)."""
    for kind in KINDS:
        store = rest(GROUP_VERSION, kind)
        store.before_write = EscalationCheck(kind, store, authorizer, resolver)
