"""The RBAC authorizer (upstream: plugin/pkg/auth/authorizer/rbac, with the DefaultRuleResolver of
pkg/registry/rbac/validation/rule.go and the browsersafe wrapper kube-apiserver puts around it).

A request is allowed when a rule of a role bound to the user allows it: every ClusterRoleBinding naming the user
counts, and for a namespaced request the RoleBindings of that namespace too (a RoleBinding to a ClusterRole grants
its rules in the binding's namespace only). RBAC never denies; with no rule it has no opinion.

Authorization runs on every request, so the roles and bindings live in an index fed by the watch caches:
bindings by subject (user name — a ServiceAccount subject is its user name — and group) and namespace, roles by
(namespace, name) with their rules as sets. What applies to (user, groups, namespace) is resolved once and kept,
and so is each decision; both are dropped whenever a role or binding changes.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ....api import errors
from ....api.meta import Object
from ....storage.interface import DELETED
from ...authn import AUTHENTICATED_GROUP, UserInfo
from ...informers import CacheFollower
from ...registry.rest import RESTStore
from .. import ALLOW, NO_OPINION, NO_OPINION_DECISION, Attributes, Decision, NonResourceRule, ResourceRule, Rules
from .rules import (
    GROUP_KIND,
    GROUP_NAME,
    CompiledRule,
    Rule,
    applies_to,
    compile_rules,
    describe_subject,
    subject_username,
)

log = logging.getLogger("pyk8s.authz.rbac")

GROUP_VERSION = f"{GROUP_NAME}/v1"
ROLES, ROLE_BINDINGS = "roles", "rolebindings"
CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS = "clusterroles", "clusterrolebindings"
KINDS = (CLUSTER_ROLES, ROLES, CLUSTER_ROLE_BINDINGS, ROLE_BINDINGS)

# Decisions kept between changes of roles and bindings: past this many the memo starts again (a bound, not a
# working-set estimate: a decision costs some microseconds to make again).
MEMO_LIMIT = 20_000
ANY_NAME = None  # in a memo key: the decision holds for every object name (names are strings)
RESOLVED_LIMIT = 20_000

PROXY, UNSAFE_PROXY = "proxy", "unsafeproxy"


@dataclass(frozen=True, slots=True)
class Binding:
    """A RoleBinding or ClusterRoleBinding as the index keeps it."""

    namespace: str  # "" for a ClusterRoleBinding
    name: str
    role_kind: str
    role_name: str
    subjects: tuple[dict[str, Any], ...]
    users: frozenset[str]  # User subjects and ServiceAccount subjects as user names
    groups: frozenset[str]

    def describe(self, user: UserInfo) -> str:
        """The source an allowing rule came from, as upstream's reason names it."""
        i = applies_to(user, list(self.subjects), self.namespace) or 0
        subject = describe_subject(self.subjects[i], self.namespace)
        role = f"{self.role_kind} {errors.go_quote(self.role_name)}"
        if self.namespace:
            return f"RoleBinding {errors.go_quote(self.name + '/' + self.namespace)} of {role} to {subject}"
        return f"ClusterRoleBinding {errors.go_quote(self.name)} of {role} to {subject}"


def binding_of(obj: Object) -> Binding:
    md = obj.get("metadata") or {}
    ns = md.get("namespace") or ""
    ref = obj.get("roleRef") or {}
    subjects = tuple(s for s in obj.get("subjects") or () if isinstance(s, dict))
    users = {u for s in subjects if (u := subject_username(s, ns)) is not None}
    groups = {str(s.get("name") or "") for s in subjects if s.get("kind") == GROUP_KIND}
    return Binding(
        ns, md.get("name") or "", str(ref.get("kind") or ""), str(ref.get("name") or ""), subjects,
        frozenset(users), frozenset(groups),
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class RoleRefError:
    """A binding whose role cannot be had; worded as a lister's error (the authorizer) or the registry's
    (escalation checks), as upstream's two resolvers word it."""

    kind: str
    name: str

    def message(self, registry: bool = False) -> str:
        if self.kind not in ("Role", "ClusterRole"):
            return f"unsupported role reference kind: {errors.go_quote(self.kind)}"
        resource = self.kind.lower() + ("s" if registry else "")
        return f"{resource}.{GROUP_NAME} {errors.go_quote(self.name)} not found"


def aggregate_error(messages: list[str]) -> str:
    """Errors as upstream's utilerrors.Aggregate prints them: one alone, several deduplicated in brackets."""
    if len(messages) == 1:
        return messages[0]
    seen = list(dict.fromkeys(messages))
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


@dataclass(slots=True)
class Resolved:
    """Every rule that applies to a user in a namespace, in upstream's visiting order, with its binding."""

    rules: list[tuple[CompiledRule, Binding]]
    errors: list[RoleRefError]


class RBACAuthorizer:
    """`authorize` (Allow or NoOpinion) and `rules_for` from the cluster's roles and bindings."""

    def __init__(self, rest: Callable[[str, str], RESTStore]) -> None:
        self.stores = {kind: rest(GROUP_VERSION, kind) for kind in KINDS}
        self._follower = CacheFollower(self.stores, self._apply, self._reset, "RBAC")
        self.cluster_roles: dict[str, tuple[CompiledRule, ...]] = {}
        self.roles: dict[tuple[str, str], tuple[CompiledRule, ...]] = {}
        self.cluster_role_bindings: dict[str, Binding] = {}
        self.role_bindings: dict[tuple[str, str], Binding] = {}
        self._crb_by_user: dict[str, set[str]] = {}
        self._crb_by_group: dict[str, set[str]] = {}
        self._rb_by_user: dict[tuple[str, str], set[str]] = {}
        self._rb_by_group: dict[tuple[str, str], set[str]] = {}
        self._memo: dict[tuple[Any, ...], Decision] = {}
        self._resolved: dict[tuple[str, tuple[str, ...], str], Resolved] = {}
        self.generation = 0  # moves whenever a role or binding changes what anyone may do

    # -- keeping the index -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Build the index from the watch caches; the watches that keep it current start here too."""
        await self._follower.start()

    async def run(self) -> None:
        """Follow the watches for ever (requests also take what is queued before deciding: see `sync`)."""
        await self._follower.run()

    def sync(self) -> None:
        """Apply the events already queued, so a request sees every change the watch caches have (a binding
        created just before it included), whether or not `run` has been scheduled since."""
        self._follower.sync()

    async def fresh(self) -> None:
        """Catch up with storage (what a consistent read sees), then `sync` (escalation checks: the
        registry's resolver reads storage)."""
        for store in self.stores.values():
            try:
                await store.cacher.wait_until_fresh(await store.store.current_revision())
            except Exception:  # a slow cache: decide on what it has, as a lister would
                log.debug("RBAC: %s cache not fresh", store.resource.plural, exc_info=True)
        self.sync()

    def observe(self, kind: str, typ: str, obj: Object) -> None:
        """Take one change of a role or binding (what the watches deliver; tests feed objects this way)."""
        self._apply(kind, typ, obj)

    def _apply(self, kind: str, typ: str, obj: Object | None) -> None:
        if obj is None:
            return
        md = obj.get("metadata") or {}
        ns, name = md.get("namespace") or "", md.get("name") or ""
        deleted = typ == DELETED
        changed: bool
        if kind == CLUSTER_ROLES:
            changed = self._put_rules(self.cluster_roles, name, None if deleted else obj)
        elif kind == ROLES:
            changed = self._put_rules(self.roles, (ns, name), None if deleted else obj)
        elif kind == CLUSTER_ROLE_BINDINGS:
            changed = self._put_binding(
                self.cluster_role_bindings, name, None if deleted else binding_of(obj),
                lambda u: self._crb_by_user.setdefault(u, set()), lambda g: self._crb_by_group.setdefault(g, set()),
                lambda u: self._crb_by_user.get(u), lambda g: self._crb_by_group.get(g),
            )  # fmt: skip
        else:
            changed = self._put_binding(
                self.role_bindings, (ns, name), None if deleted else binding_of(obj),
                lambda u: self._rb_by_user.setdefault((ns, u), set()),
                lambda g: self._rb_by_group.setdefault((ns, g), set()),
                lambda u: self._rb_by_user.get((ns, u)), lambda g: self._rb_by_group.get((ns, g)),
            )  # fmt: skip
        if changed:
            self._invalidate()

    @staticmethod
    def _put_rules(table: dict[Any, tuple[CompiledRule, ...]], key: Any, obj: Object | None) -> bool:
        old = table.get(key)
        if obj is None:
            return table.pop(key, None) is not None
        rules = obj.get("rules") or []
        if old is not None and [r.source for r in old] == rules:
            return False  # metadata only: nobody's permissions moved
        table[key] = compile_rules(rules)
        return True

    @staticmethod
    def _put_binding(
        table: dict[Any, Binding],
        key: Any,
        new: Binding | None,
        user_set: Callable[[str], set[str]],
        group_set: Callable[[str], set[str]],
        user_get: Callable[[str], set[str] | None],
        group_get: Callable[[str], set[str] | None],
    ) -> bool:
        old = table.get(key)
        if old is not None and new is not None and old == new:
            return False
        if old is not None:
            for u in old.users:
                if (s := user_get(u)) is not None:
                    s.discard(old.name)
            for g in old.groups:
                if (s := group_get(g)) is not None:
                    s.discard(old.name)
            del table[key]
        if new is None:
            return old is not None
        table[key] = new
        for u in new.users:
            user_set(u).add(new.name)
        for g in new.groups:
            group_set(g).add(new.name)
        return True

    def _reset(self, kind: str) -> None:
        """Forget every object of `kind` (the watch starts again with the current ones)."""
        if kind == CLUSTER_ROLES:
            self.cluster_roles.clear()
        elif kind == ROLES:
            self.roles.clear()
        elif kind == CLUSTER_ROLE_BINDINGS:
            self.cluster_role_bindings.clear()
            self._crb_by_user.clear()
            self._crb_by_group.clear()
        else:
            self.role_bindings.clear()
            self._rb_by_user.clear()
            self._rb_by_group.clear()
        self._invalidate()

    def _invalidate(self) -> None:
        self.generation += 1
        self._memo.clear()
        self._resolved.clear()

    # -- resolving -------------------------------------------------------------------------------------

    def role_rules(self, kind: str, name: str, namespace: str) -> tuple[CompiledRule, ...] | None:
        """The rules of a binding's roleRef (upstream: GetRoleReferenceRules), None when there is no such role."""
        if kind == "ClusterRole":
            return self.cluster_roles.get(name)
        if kind == "Role":
            return self.roles.get((namespace, name))
        return None

    def resolve(self, user: UserInfo, namespace: str) -> Resolved:
        """Every rule bound to `user` cluster-wide and, for a namespace, in it (upstream: VisitRulesFor)."""
        groups = user.groups if isinstance(user.groups, tuple) else tuple(user.groups)
        key = (user.name, groups, namespace)
        res = self._resolved.get(key)
        if res is not None:
            return res
        res = Resolved([], [])
        names = set(self._crb_by_user.get(user.name, ()))
        for g in groups:
            names.update(self._crb_by_group.get(g, ()))
        for name in sorted(names):
            self._add(res, self.cluster_role_bindings[name])
        if namespace:
            names = set(self._rb_by_user.get((namespace, user.name), ()))
            for g in groups:
                names.update(self._rb_by_group.get((namespace, g), ()))
            for name in sorted(names):
                self._add(res, self.role_bindings[(namespace, name)])
        if len(self._resolved) >= RESOLVED_LIMIT:
            self._resolved.clear()
        self._resolved[key] = res
        return res

    def _add(self, res: Resolved, b: Binding) -> None:
        rules = self.role_rules(b.role_kind, b.role_name, b.namespace)
        if rules is None:
            res.errors.append(RoleRefError(b.role_kind, b.role_name))
            return
        res.rules.extend((r, b) for r in rules)

    def policy_rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[RoleRefError]]:
        """The user's rules as stored PolicyRules, and the bindings whose roles are missing (upstream: RulesFor)."""
        self.sync()
        res = self.resolve(user, namespace)
        return [r.source for r, _ in res.rules], list(res.errors)

    # -- authorizing -----------------------------------------------------------------------------------

    def authorize(self, a: Attributes) -> Decision:
        self._follower.sync()
        user = a.user
        # A decision that no rule's resourceNames take part in holds for every object of the kind: it is
        # memoised once for them all (`ANY_NAME`), so GETs of many objects are decided once. The path of a
        # resource request is its name again, so only non-resource requests are keyed by it.
        key = (user.name, user.groups, a.verb, a.resource_request, a.namespace, a.api_group, a.resource,
               a.subresource, ANY_NAME, "" if a.resource_request else a.path)  # fmt: skip
        d = self._memo.get(key)
        if d is not None:
            return d
        named = (*key[:8], a.name, key[9])  # a request without a name is keyed by "" then
        d = self._memo.get(named)
        if d is not None:
            return d
        d, any_name = self._decide(a)
        if len(self._memo) >= MEMO_LIMIT:
            self._memo.clear()
        self._memo[key if any_name else named] = d
        return d

    def _decide(self, a: Attributes) -> tuple[Decision, bool]:
        """The decision, and whether it would be the same for any other object name."""
        # kube-apiserver wraps RBAC in browsersafe: a proxy request without an authenticated group (a browser's
        # page load) is asked as "unsafeproxy", which only an explicit rule grants.
        proxy_verb = proxy_sub = False
        if a.resource_request and (a.verb == PROXY or a.subresource == PROXY):
            if AUTHENTICATED_GROUP not in a.user.groups:
                proxy_verb, proxy_sub = a.verb == PROXY, a.subresource == PROXY
                a = dataclasses.replace(
                    a, verb=UNSAFE_PROXY if proxy_verb else a.verb,
                    subresource=UNSAFE_PROXY if proxy_sub else a.subresource,
                )  # fmt: skip
        res = self.resolve(a.user, a.namespace)
        any_name = True  # no rule so far would decide differently for another name
        for rule, binding in res.rules:
            if rule.allows(a):
                return Decision(ALLOW, f"RBAC: allowed by {binding.describe(a.user)}"), any_name and not rule.names
            if any_name and rule.names and rule.allows_any_name(a):
                any_name = False
        reason = f"RBAC: {aggregate_error([e.message() for e in res.errors])}" if res.errors else ""
        if proxy_verb:
            reason += (", " if reason else "") + f"{PROXY} verb changed to {UNSAFE_PROXY}"
        if proxy_sub:
            reason += (", " if reason else "") + f"{PROXY} subresource changed to {UNSAFE_PROXY}"
        return (Decision(NO_OPINION, reason) if reason else NO_OPINION_DECISION), any_name

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        """What `user` may do in `namespace` (SelfSubjectRulesReview; upstream: RBACAuthorizer.RulesFor)."""
        rules, errs = self.policy_rules_for(user, namespace)
        out = Rules()
        for r in rules:
            if r.get("resources"):
                verbs, groups = list(r.get("verbs") or []), list(r.get("apiGroups") or [])
                names = list(r.get("resourceNames") or [])
                out.resource_rules.append(ResourceRule(verbs, groups, list(r["resources"]), names))
            if r.get("nonResourceURLs"):
                out.non_resource_rules.append(
                    NonResourceRule(list(r.get("verbs") or []), list(r.get("nonResourceURLs") or []))
                )
        if errs:
            out.error = aggregate_error([e.message() for e in errs])
        return out
