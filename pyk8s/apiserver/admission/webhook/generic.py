"""What both webhook plugins share (upstream: apiserver pkg/admission/plugin/webhook/generic/webhook.go,
admission.VersionedAttributes, and the predicates of pkg/admission/plugin/webhook/predicates, which pyk8s keeps
once in pyk8s.apiserver.admission.policy.matching for policies and webhooks alike).

`should_call_hook` decides whether one webhook is called for a request: its namespaceSelector (the namespace's
labels from the watch cache, or a namespace object's own), its objectSelector (the new or the old object's
labels), its rules (operations, groups, versions, resources with `*` and `*/*` and subresources, scope) and,
under matchPolicy Equivalent, the same rules against every other version that serves the same stored resource
(upstream's EquivalentResourceMapper: the resources of one storage prefix, such as autoscaling/v1 and v2
HorizontalPodAutoscalers, core and events.k8s.io Events, or a custom resource's versions); then its
matchConditions. An invocation names the resource and kind the webhook matched; the object is converted to
that version before the call (and back after a mutating webhook's patch).

pyk8s's admission sees a request as its stored resource, so `requestKind`/`requestResource` name the storage
version even when the client used another one (an autoscaling/v1 request is seen as autoscaling/v2).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from ....api import errors
from ....api.meta import Object
from ....api.resources import Resource
from ....cel import authz as celauthz
from ...authn import UserInfo
from ...conversion import ConversionError, convert
from .. import Attributes
from ..policy import matching
from ..policy.compile import AUTHORIZER, OBJECT, OLD_OBJECT, REQUEST, REQUEST_RESOURCE
from .configuration import WebhookAccessor
from .request import GVK, GVR, ReviewRequest, admission_request

EXEMPT_KINDS = frozenset(("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
                          "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
                          "MutatingAdmissionPolicyBinding"))  # fmt: skip
ADMISSION_REGISTRATION = "admissionregistration.k8s.io"


class Host(Protocol):
    """What the plugins read of the API server (pyk8s.apiserver.server.APIServer has all of it), when a request
    comes: the service resolver and the authorizer are built after the admission chain."""

    table: Any  # ResourceTable of the built-in resources
    stores: dict[tuple[str, str], Any]  # (group/version, plural) -> RESTStore
    custom_resources: Any  # CustomResourceHandler, or None before it is built
    authorizer: Any  # authz.Union, or None before it is built
    service_resolver: Any  # ServiceResolver, or None before it is built


def is_exempt(a: Attributes) -> bool:
    """Writes of webhook configurations and admission policies never go to webhooks (upstream
    IsExemptAdmissionConfigurationResource): a bad webhook must not lock its own fix out."""
    return a.resource.group == ADMISSION_REGISTRATION and a.resource.kind in EXEMPT_KINDS


@dataclass(frozen=True)
class Invocation:
    """A webhook to call, and as which resource and kind (upstream WebhookInvocation)."""

    webhook: WebhookAccessor
    target: Resource  # the table entry of the matched version
    kind: GVK


@dataclass
class VersionedAttributes:
    """The request's objects in one version (upstream VersionedAttributes); `dirty` once a patch changed it."""

    attributes: Attributes
    target: Resource
    kind: GVK
    object: Object | None
    old_object: Object | None
    dirty: bool = False


def kind_for(r: Resource, subresource: str) -> GVK:
    """The kind a resource's subresource reads and writes (upstream KindFor)."""
    sub = r.subresource(subresource) if subresource else None
    if sub is not None and sub.kind:
        group = sub.group if sub.group is not None else r.group
        version = sub.version if sub.version is not None else r.version
        return GVK(group, version, sub.kind)
    return GVK(r.group, r.version, r.kind)


def with_type_meta(obj: Object | None, r: Resource) -> Object | None:
    if obj is None or (obj.get("apiVersion") == r.api_version and obj.get("kind") == r.kind):
        return obj
    return {"apiVersion": r.api_version, "kind": r.kind, **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}}  # fmt: skip


def _with_kind(obj: Object | None, gvk: GVK) -> Object | None:
    """`obj` with apiVersion and kind set when it lacks them (options objects built from a query have none)."""
    if obj is None or (obj.get("apiVersion") and obj.get("kind")):
        return obj
    api_version = f"{gvk.group}/{gvk.version}" if gvk.group else gvk.version
    return {"apiVersion": api_version, "kind": gvk.kind, **obj}


class Webhook:
    """The generic webhook plugin: its source of webhooks and the decisions both plugins make the same way."""

    def __init__(self, host: Host, source: Any) -> None:
        self.host = host
        self.source = source
        self.backend = f"{type(self).__name__}/{id(self)}"
        celauthz.register_backend(self.backend, self._authorize)

    # -- reading the server ----------------------------------------------------------------------------------

    def resolver(self) -> Any:
        resolver = self.host.service_resolver
        return resolver.resolve if resolver is not None else None

    def _resources(self) -> list[Resource]:
        out = list(self.host.table.resources)
        if self.host.custom_resources is not None:
            out += self.host.custom_resources.resources()
        return out

    def equivalents(self, r: Resource, subresource: str) -> list[Resource]:
        """Every version serving the same stored resource (with that subresource), `r` first."""
        out = [r]
        for other in self._resources():
            if other.group_version == r.group_version and other.plural == r.plural:
                continue
            if other.key_prefix == r.key_prefix and (not subresource or other.subresource(subresource) is not None):
                out.append(other)
        return out

    def store_of(self, r: Resource) -> Any:
        rest = self.host.stores.get((r.group_version, r.plural))
        if rest is None and r.custom and self.host.custom_resources is not None:
            rest = self.host.custom_resources.rest_of(f"{r.plural}.{r.group}")
        return rest

    async def namespace_labels(self, a: Attributes) -> dict[str, str] | None:
        """The labels of the request's namespace: from the watch cache, else from storage in case the cache
        lags (as upstream's lister-then-client lookup); None when it does not exist."""
        name = a.name if (a.resource.group, a.resource.plural) == ("", "namespaces") else a.namespace
        rest = self.host.stores.get(("v1", "namespaces"))
        if not name or rest is None:
            return None
        entry = rest.cacher.get(rest.key("", name)) if rest.cacher.ready else None
        if entry is not None:
            return entry.obj["metadata"].get("labels") or {}
        try:
            ns = await rest.get("", name)
        except errors.StatusError:
            return None
        return ns["metadata"].get("labels") or {}

    # -- matching --------------------------------------------------------------------------------------------

    @staticmethod
    def request_of(a: Attributes, r: Resource | None = None) -> matching.Request:
        r = r or a.resource
        return matching.Request(a.operation, r.group, r.version, r.plural, a.subresource, a.namespace, a.name,
                                kind_for(r, a.subresource).kind, a.object, a.old_object)  # fmt: skip

    def match_rules(self, hook: WebhookAccessor, a: Attributes) -> Invocation | None:
        """The rules, then (matchPolicy Equivalent) the rules against the other versions, earlier rules first."""
        request = self.request_of(a)
        for rule in hook.rules:
            if matching.rule_matches(rule, request):
                return Invocation(hook, a.resource, kind_for(a.resource, a.subresource))
        if hook.match_policy != matching.EQUIVALENT:
            return None
        others = self.equivalents(a.resource, a.subresource)[1:]
        for rule in hook.rules:
            for other in others:
                if matching.rule_matches(rule, self.request_of(a, other)):
                    return Invocation(hook, other, kind_for(other, a.subresource))
        return None

    async def should_call_hook(
        self, hook: WebhookAccessor, a: Attributes, ns_labels: dict[str, str] | None, versioned: Versioner
    ) -> Invocation | None:
        """Upstream ShouldCallHook: None to skip; a StatusError when a match cannot be decided."""
        request = self.request_of(a)
        ns_error: errors.StatusError | None = None

        def labels(name: str) -> dict[str, str] | None:
            if ns_labels is None:
                raise errors.not_found("namespaces", name)
            return ns_labels

        try:
            if not matching.namespace_matches(hook.hook.get("namespaceSelector"), request, labels):
                return None
        except errors.StatusError as err:
            ns_error = err
        if not matching.object_matches(hook.hook.get("objectSelector"), request):
            return None
        invocation = self.match_rules(hook, a)
        if invocation is None:
            return None
        if ns_error is not None:
            raise ns_error
        conditions = hook.match_conditions()
        if conditions is not None:
            va = await versioned.get(invocation)
            result = conditions.match(self.condition_values(va, invocation))
            if result.error:
                raise errors.forbidden_request(a.resource.plural, a.name, result.error, a.resource.group)
            if not result.matches:
                return None
        return invocation

    # -- the request as webhooks and expressions see it -------------------------------------------------------

    @staticmethod
    def review_request(va: VersionedAttributes, invocation: Invocation) -> ReviewRequest:
        a = va.attributes
        t = invocation.target
        return ReviewRequest(
            kind=invocation.kind,
            resource=GVR(t.group, t.version, t.plural),
            subresource=a.subresource,
            request_kind=kind_for(a.resource, a.subresource),
            request_resource=GVR(a.resource.group, a.resource.version, a.resource.plural),
            request_subresource=a.subresource,
            name=a.name,
            namespace=a.namespace,
            operation=a.operation,
            user=a.user,
            dry_run=a.dry_run,
            options=dict(a.options or {}),
        )

    def condition_values(self, va: VersionedAttributes, invocation: Invocation) -> dict[str, Any]:
        a = va.attributes
        user = _user_json(a.user)
        t = invocation.target
        return {
            OBJECT: va.object,
            OLD_OBJECT: va.old_object,
            REQUEST: admission_request(self.review_request(va, invocation)),
            AUTHORIZER: celauthz.authorizer_value(self.backend, user),
            REQUEST_RESOURCE: celauthz.request_resource_value(
                self.backend, user, t.group, t.plural, a.subresource, a.namespace, a.name
            ),
        }

    def _authorize(self, user: dict[str, Any], attrs: dict[str, Any]) -> tuple[str, str, str]:
        from ...authz import Attributes as AuthzAttributes  # (the authz package imports admission's neighbours)

        authorizer = self.host.authorizer
        if authorizer is None:
            return "NoOpinion", "", "no authorizer configured"
        info = UserInfo(user.get("name", ""), user.get("uid", ""), tuple(user.get("groups") or ()),
                        {k: tuple(v) for k, v in (user.get("extra") or {}).items()})  # fmt: skip
        d = authorizer.authorize(AuthzAttributes(
            info, attrs["verb"], attrs.get("resourceRequest", False), attrs.get("namespace", ""),
            attrs.get("apiGroup", ""), attrs.get("apiVersion", ""), attrs.get("resource", ""),
            attrs.get("subresource", ""), attrs.get("name", ""), attrs.get("path", ""),
        ))  # fmt: skip
        return d.decision, d.reason, d.error

    # -- versions ---------------------------------------------------------------------------------------------

    async def convert(
        self, obj: Object | None, source: Resource, target: Resource, *, typed: bool = False
    ) -> Object | None:
        """`obj` (in `source`'s version) in `target`'s, in stored form with `typed`; StatusError (500) when it
        cannot be converted."""
        if obj is None:
            return None
        if source.group_version == target.group_version:
            return with_type_meta(obj, target)
        try:
            if source.custom:
                info = self.host.custom_resources.infos.get(f"{source.plural}.{source.group}")
                if info is None or info.converter is None:
                    return with_type_meta(obj, target)
                return await info.converter.convert_object(obj, target.api_version)  # type: ignore[no-any-return]
            return with_type_meta(convert(obj, source, target, typed=typed), target)
        except (ConversionError, ValueError, errors.StatusError) as err:
            if isinstance(err, errors.StatusError):
                raise
            raise errors.internal_error(f"unable to convert to {target.group_version}: {err}") from None


class Versioner:
    """The request's objects in the versions webhooks ask for, converted once per version."""

    def __init__(self, webhook: Webhook, a: Attributes) -> None:
        self.webhook = webhook
        self.a = a
        self.by_kind: dict[GVK, VersionedAttributes] = {}
        self.current: VersionedAttributes | None = None  # the mutating plugin's working copy
        self._lock = asyncio.Lock()

    async def get(self, invocation: Invocation) -> VersionedAttributes:
        async with self._lock:
            found = self.by_kind.get(invocation.kind)
            if found is not None:
                return found
            a, target = self.a, invocation.target
            own = kind_for(a.resource, a.subresource) if a.subresource else None
            if own is not None and own.kind != a.resource.kind:
                # A subresource with a kind of its own (an Eviction, a Binding, a TokenRequest, PodExecOptions):
                # the object is that kind, as the client sent it, not the parent resource's.
                va = VersionedAttributes(
                    a, target, invocation.kind, _with_kind(a.object, own), _with_kind(a.old_object, own)
                )
            else:
                va = VersionedAttributes(
                    a, target, invocation.kind,
                    await self.webhook.convert(a.object, a.resource, target),
                    await self.webhook.convert(a.old_object, a.resource, target),
                )  # fmt: skip
            self.by_kind[invocation.kind] = va
            return va


def _user_json(user: UserInfo) -> dict[str, Any]:
    return {"name": user.name, "uid": user.uid, "groups": list(user.groups),
            "extra": {k: list(v) for k, v in user.extra.items()}}  # fmt: skip


@dataclass
class CallResult:
    """What one call brought back beyond its verdict, added to the request in the request's own task."""

    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)
