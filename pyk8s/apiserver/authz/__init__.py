"""Authorization: may this user do this (upstream: apiserver/pkg/authorization/authorizer, union, the
privileged-groups and always-allow/deny authorizers, and kube-apiserver's `--authorization-mode`).

Every request is described by its `Attributes` (built from its RequestInfo after authentication and
impersonation) and asked of the configured authorizers in turn: the first Allow or Deny decides; NoOpinion
goes on; all NoOpinion is a refusal (403). `system:masters` is allowed everything before any mode is asked,
as kube-apiserver always does. Authorizers answer synchronously from memory (the RBAC index, the node graph):
authorization runs on every request and must cost microseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ...api import errors
from ...api.selectors import FieldRequirement, Requirement, SelectorError, parse_field_selector, parse_label_selector
from ..authn import UserInfo
from ..request_info import RequestInfo

ALLOW, DENY, NO_OPINION = "Allow", "Deny", "NoOpinion"
SYSTEM_PRIVILEGED_GROUP = "system:masters"

MODE_ALWAYS_ALLOW, MODE_ALWAYS_DENY, MODE_ABAC = "AlwaysAllow", "AlwaysDeny", "ABAC"
MODE_WEBHOOK, MODE_RBAC, MODE_NODE = "Webhook", "RBAC", "Node"
MODES = (MODE_ALWAYS_ALLOW, MODE_ALWAYS_DENY, MODE_ABAC, MODE_WEBHOOK, MODE_RBAC, MODE_NODE)
DEFAULT_MODES = (MODE_NODE, MODE_RBAC)  # what kubeadm-style clusters run (upstream's flag default: AlwaysAllow)


@dataclass(frozen=True, slots=True)
class Attributes:
    """One question (upstream: authorizer.AttributesRecord): a resource request (group, version, resource,
    subresource, namespace, name) or a non-resource one (path), with its verb."""

    user: UserInfo
    verb: str
    resource_request: bool = False
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""
    # list, watch and deletecollection: the request's field selector, parsed (upstream: GetFieldSelector, with
    # AuthorizeWithSelectors); empty when there is none or it does not parse. The Node authorizer reads it.
    field_selector: tuple[FieldRequirement, ...] = ()
    # list, watch and deletecollection: the request's label selector, parsed (upstream: GetLabelSelector); the
    # Webhook mode sends it.
    label_selector: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    decision: str  # ALLOW, DENY or NO_OPINION
    reason: str = ""
    error: str = ""  # an evaluation error (SubjectAccessReview's status.evaluationError)

    @property
    def allowed(self) -> bool:
        return self.decision == ALLOW


NO_OPINION_DECISION = Decision(NO_OPINION)
ALLOWED = Decision(ALLOW)


@dataclass
class ResourceRule:
    """A rule as SelfSubjectRulesReview reports it (authorization.k8s.io/v1 ResourceRule)."""

    verbs: list[str]
    api_groups: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    resource_names: list[str] = field(default_factory=list)


@dataclass
class NonResourceRule:
    verbs: list[str]
    non_resource_urls: list[str] = field(default_factory=list)


@dataclass
class Rules:
    """What a user may do in a namespace, as far as the authorizers can tell (upstream: RulesFor)."""

    resource_rules: list[ResourceRule] = field(default_factory=list)
    non_resource_rules: list[NonResourceRule] = field(default_factory=list)
    incomplete: bool = False
    error: str = ""


class Authorizer(Protocol):
    def authorize(self, a: Attributes) -> Decision: ...


class RuleResolver(Protocol):
    def rules_for(self, user: UserInfo, namespace: str) -> Rules: ...


class AlwaysAllow:
    def authorize(self, a: Attributes) -> Decision:
        return ALLOWED

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules([ResourceRule(["*"], ["*"], ["*"])], [NonResourceRule(["*"], ["*"])])


class AlwaysDeny:
    def authorize(self, a: Attributes) -> Decision:
        return Decision(NO_OPINION, "Everything is forbidden.")

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules(incomplete=True)


class PrivilegedGroups:
    """Members of these groups may do anything (upstream: authorizerfactory.NewPrivilegedGroups)."""

    def __init__(self, *groups: str) -> None:
        self.groups = frozenset(groups)

    def authorize(self, a: Attributes) -> Decision:
        if not self.groups.isdisjoint(a.user.groups):
            return ALLOWED
        return NO_OPINION_DECISION

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        if not self.groups.isdisjoint(user.groups):
            return AlwaysAllow().rules_for(user, namespace)
        return Rules()


class Union:
    """The authorizers in order: the first Allow or Deny wins; the NoOpinion reasons are joined."""

    def __init__(self, authorizers: list[Authorizer]) -> None:
        self.authorizers = authorizers

    def authorize(self, a: Attributes) -> Decision:
        reasons: list[str] = []
        errs: list[str] = []
        for authz in self.authorizers:
            d = authz.authorize(a)
            if d.decision != NO_OPINION:
                return d
            if d.reason:
                reasons.append(d.reason)
            if d.error:
                errs.append(d.error)
        if not reasons and not errs:
            return NO_OPINION_DECISION
        return Decision(NO_OPINION, "\n".join(reasons), ", ".join(errs))

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        out = Rules()
        errs: list[str] = []
        for authz in self.authorizers:
            resolver = getattr(authz, "rules_for", None)
            if resolver is None:
                out.incomplete = True
                continue
            r: Rules = resolver(user, namespace)
            out.resource_rules += r.resource_rules
            out.non_resource_rules += r.non_resource_rules
            out.incomplete = out.incomplete or r.incomplete
            if r.error:
                errs.append(r.error)
        out.error = ", ".join(errs)
        return out


def attributes_of(info: RequestInfo, user: UserInfo, query: Mapping[str, str] | None = None) -> Attributes:
    """The question a request asks (upstream: filters.GetAuthorizerAttributes); `query` is the request's, for
    the field selector of a list, watch or deletecollection."""
    if not info.is_resource_request:
        return Attributes(user, info.verb, path=info.path)
    fields: tuple[FieldRequirement, ...] = ()
    name = info.name
    if query and info.verb in _SELECTING_VERBS and query.get("fieldSelector"):
        try:
            selector = parse_field_selector(query["fieldSelector"])
        except SelectorError:
            pass  # decided as if there were none, as upstream does with a selector that does not parse
        else:
            fields = selector.requirements
            # A list or watch of one object by name is asked about that name, as upstream's RequestInfo
            # takes it (a kubelet watching its own Node; RBAC's resourceNames).
            pinned = selector.exact("metadata.name") if info.verb != "deletecollection" and not name else None
            if pinned and pinned not in (".", "..") and "/" not in pinned and "%" not in pinned:
                name = pinned
    labels: tuple[Requirement, ...] = ()
    if query and info.verb in _SELECTING_VERBS and query.get("labelSelector"):
        try:
            labels = parse_label_selector(query["labelSelector"]).requirements
        except SelectorError:
            pass
    return Attributes(user, info.verb, True, info.namespace, info.api_group, info.api_version, info.resource,
                      info.subresource, name, info.path, fields, labels)  # fmt: skip


_SELECTING_VERBS = frozenset({"list", "watch", "deletecollection"})


_SANITIZE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})  # nothing in an error that looks like HTML


def forbidden_message(a: Attributes, reason: str = "") -> str:
    """Why a request is refused, worded as upstream's forbiddenMessage (without the resource prefix)."""
    user = errors.go_quote(a.user.name)
    if not a.resource_request:
        msg = f"User {user} cannot {a.verb} path {errors.go_quote(a.path)}"
    else:
        resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        where = f"in the namespace {errors.go_quote(a.namespace)}" if a.namespace else "at the cluster scope"
        msg = (f"User {user} cannot {a.verb} resource {errors.go_quote(resource)} in API group "
               f"{errors.go_quote(a.api_group)} {where}")  # fmt: skip
    msg = msg.translate(_SANITIZE)
    return f"{msg}: {reason}" if reason else msg


def forbidden(a: Attributes, reason: str = "") -> errors.StatusError:
    """The 403 a refused request gets (upstream: responsewriters.ForbiddenStatusError)."""
    # (the Status names the resource without its subresource, as upstream's GroupResource does)
    return errors.forbidden_request(a.resource, a.name, forbidden_message(a, reason), a.api_group)


def parse_modes(text: str, webhook_config_file: str = "") -> tuple[str, ...]:
    """`--authorization-mode`: comma-separated modes (with `--authorization-webhook-config-file`, which the
    Webhook mode needs and only it takes); ValueError with upstream's messages."""
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if not modes:
        raise ValueError("at least one authorization-mode must be passed")
    for m in modes:
        if m not in MODES:
            raise ValueError(f"authorization-mode {errors.go_quote(m)} is not a valid mode")
    if len(set(modes)) != len(modes):
        raise ValueError(f"authorization-mode {list(modes)} has mode specified more than once")
    if MODE_ABAC in modes:
        raise ValueError("authorization-mode ABAC is not supported by pyk8s")
    if MODE_WEBHOOK in modes and not webhook_config_file:
        raise ValueError("authorization-mode Webhook's authorization config file not passed")
    if webhook_config_file and MODE_WEBHOOK not in modes:
        raise ValueError("cannot specify --authorization-webhook-config-file without mode Webhook")
    return modes
