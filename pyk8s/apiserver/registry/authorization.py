"""The access-review APIs of authorization.k8s.io/v1 (upstream: pkg/registry/authorization/*, validated as
pkg/apis/authorization/validation): SubjectAccessReview, LocalSubjectAccessReview and SelfSubjectAccessReview
ask the server's authorizer one question and answer it in `status`; SelfSubjectRulesReview lists what the
caller may do in a namespace. Each is created and answered, never stored; `kubectl auth can-i` is their client.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from ...api import errors
from ...api.meta import Object
from ...api.selectors import EQUALS, NOT_EQUALS, FieldRequirement, SelectorError, parse_field_selector
from ...api.validation import is_label_value, is_qualified_name
from .. import deferred
from ..authn import UserInfo
from ..authz import ALLOW, DENY, Attributes, Rules, Union
from ..handlers import ResourceHandlers
from ..request_info import RequestInfo
from .rest import Context

GROUP = "authorization.k8s.io"
VERSION = "v1"

AuthorizerGetter = Callable[[], Union | None]

# The structured field-selector operators an authorizer sees (metav1.FieldSelectorRequirement): one value each.
_FIELD_OPERATORS = {"In": EQUALS, "NotIn": NOT_EQUALS}


# -- Go's %#v of the values upstream's validation prints ------------------------------------------------


class _GoValue:
    """A value shown in a field error as upstream's `%#v` shows it."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def go_string(self) -> str:
        return self.text


def _go_strings_map(value: Any) -> str:
    if not isinstance(value, dict):
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{errors.go_quote(k)}:{errors.go_quote(str(v))}"
                                             for k, v in sorted(value.items())) + "}"  # fmt: skip


def _go_string_slice(value: Any) -> str:
    if not isinstance(value, list):
        return "[]string(nil)"
    return "[]string{" + ", ".join(errors.go_quote(str(v)) for v in value) + "}"


def _go_time(value: Any) -> str:
    """A metav1.Time as Go's GoString prints it (the zero time when unset or unreadable)."""
    when = datetime(1, 1, 1, tzinfo=UTC)
    if isinstance(value, str) and value:
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
        except ValueError:
            pass
    month = when.strftime("%B")
    return f"time.Date({when.year}, time.{month}, {when.day}, {when.hour}, {when.minute}, {when.second}, 0, time.UTC)"


def _go_object_meta(md: dict[str, Any]) -> _GoValue:
    """metav1.ObjectMeta as `%#v` prints it (the owner references and managed fields by count only: upstream's
    own rendering of those is a wall of pointers that helps nobody)."""
    created = md.get("creationTimestamp")
    owners = md.get("ownerReferences")
    parts = [
        f"Name:{errors.go_quote(str(md.get('name') or ''))}",
        f"GenerateName:{errors.go_quote(str(md.get('generateName') or ''))}",
        f"Namespace:{errors.go_quote(str(md.get('namespace') or ''))}",
        f"SelfLink:{errors.go_quote(str(md.get('selfLink') or ''))}",
        f"UID:{errors.go_quote(str(md.get('uid') or ''))}",
        f"ResourceVersion:{errors.go_quote(str(md.get('resourceVersion') or ''))}",
        f"Generation:{int(md.get('generation') or 0)}",
        f"CreationTimestamp:{_go_time(created)}",
        "DeletionTimestamp:(*v1.Time)(nil)",
        "DeletionGracePeriodSeconds:(*int64)(nil)",
        f"Labels:{_go_strings_map(md.get('labels'))}",
        f"Annotations:{_go_strings_map(md.get('annotations'))}",
        "OwnerReferences:" + (f"[]v1.OwnerReference{{...{len(owners)}}}" if isinstance(owners, list)
                              else "[]v1.OwnerReference(nil)"),
        f"Finalizers:{_go_string_slice(md.get('finalizers'))}",
        "ManagedFields:[]v1.ManagedFieldsEntry(nil)",
    ]  # fmt: skip
    return _GoValue("v1.ObjectMeta{" + ", ".join(parts) + "}")


def _go_non_resource(attrs: Any) -> Any:
    if not isinstance(attrs, dict):
        return None
    path, verb = errors.go_quote(str(attrs.get("path") or "")), errors.go_quote(str(attrs.get("verb") or ""))
    return _GoValue(f"authorization.NonResourceAttributes{{Path:{path}, Verb:{verb}}}")


# -- validation (upstream: pkg/apis/authorization/validation) -------------------------------------------


def _meta_is_empty(md: Any, allow_namespace: bool = False) -> bool:
    if not isinstance(md, dict):
        return True
    for key, value in md.items():
        if key == "managedFields" or (key == "namespace" and allow_namespace):
            continue
        if value not in (None, "", 0, {}, []):
            return False
    return True


def _selector_problems(selector: Any, path: str, label: bool) -> list[errors.FieldError]:
    """A field or label selector's attributes (upstream: validateFieldSelectorAttributes and the label one)."""
    if not isinstance(selector, dict):
        return []
    raw, reqs = selector.get("rawSelector") or "", selector.get("requirements") or []
    out: list[errors.FieldError] = []
    if raw and reqs:
        out.append(errors.invalid(f"{path}.rawSelector", raw, "may not specified at the same time as requirements"))
    if not raw and not reqs:
        out.append(errors.required(f"{path}.requirements", f"when {path} is specified, requirements or rawSelector is required"))  # fmt: skip
    for i, req in enumerate(reqs if isinstance(reqs, list) else []):
        out += _requirement_problems(req, f"{path}.requirements[{i}]", label)
    return out


def _requirement_problems(req: Any, path: str, label: bool) -> list[errors.FieldError]:
    """One selector requirement (upstream: ValidateFieldSelectorRequirement / ValidateLabelSelectorRequirement
    with unknown operators allowed, for newer clients), in upstream's order."""
    if not isinstance(req, dict):
        return []
    key, op, values = str(req.get("key") or ""), req.get("operator") or "", req.get("values") or []
    out: list[errors.FieldError] = []
    if not label and not key:
        out.append(errors.required(f"{path}.key", "must be specified"))
    if op in ("In", "NotIn") and not values:
        out.append(errors.required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist") and values:
        detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        out.append(errors.forbidden(f"{path}.values", detail))
    if label:
        out += [errors.invalid(f"{path}.key", key, msg) for msg in is_qualified_name(key)]
        for i, value in enumerate(values if isinstance(values, list) else []):
            out += [errors.invalid(f"{path}.values[{i}]", value, msg) for msg in is_label_value(str(value))]
    return out


def _spec_problems(spec: dict[str, Any], subject: bool) -> list[errors.FieldError]:
    res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    out: list[errors.FieldError] = []
    if res is not None and non is not None:
        out.append(errors.invalid("spec.nonResourceAttributes", _go_non_resource(non),
                                  "cannot be specified in combination with resourceAttributes"))  # fmt: skip
    if res is None and non is None:
        out.append(errors.invalid("spec.resourceAttributes", None,
                                  "exactly one of nonResourceAttributes or resourceAttributes must be specified"))  # fmt: skip
    if subject and not spec.get("user") and not spec.get("groups"):
        out.append(errors.invalid("spec.user", spec.get("user") or "", "at least one of user or group must be specified"))  # fmt: skip
    if isinstance(res, dict):
        out += _selector_problems(res.get("fieldSelector"), "spec.resourceAttributes.fieldSelector", False)
        out += _selector_problems(res.get("labelSelector"), "spec.resourceAttributes.labelSelector", True)
    return out


def validate_subject_access_review(obj: Object) -> list[errors.FieldError]:
    problems = _spec_problems(obj.get("spec") or {}, subject=True)
    md = obj.get("metadata") or {}
    if not _meta_is_empty(md):
        problems.append(errors.invalid("metadata", _go_object_meta(md), "must be empty"))
    return problems


def validate_self_subject_access_review(obj: Object) -> list[errors.FieldError]:
    problems = _spec_problems(obj.get("spec") or {}, subject=False)
    md = obj.get("metadata") or {}
    if not _meta_is_empty(md):
        problems.append(errors.invalid("metadata", _go_object_meta(md), "must be empty"))
    return problems


def validate_local_subject_access_review(obj: Object) -> list[errors.FieldError]:
    spec = obj.get("spec") or {}
    problems = _spec_problems(spec, subject=True)
    md = obj.get("metadata") or {}
    if not _meta_is_empty(md, allow_namespace=True):
        problems.append(errors.invalid("metadata", _go_object_meta(md), "must be empty except for namespace"))
    res = spec.get("resourceAttributes")
    if isinstance(res, dict) and (res.get("namespace") or "") != (md.get("namespace") or ""):
        problems.append(errors.invalid("spec.resourceAttributes.namespace", res.get("namespace") or "",
                                       "must match metadata.namespace"))  # fmt: skip
    if spec.get("nonResourceAttributes") is not None:
        problems.append(errors.invalid("spec.nonResourceAttributes",
                                       _go_non_resource(spec["nonResourceAttributes"]),
                                       "disallowed on this kind of request"))  # fmt: skip
    return problems


# -- the question a review asks (upstream: pkg/registry/authorization/util) -----------------------------


def _field_requirements(selector: Any) -> tuple[FieldRequirement, ...]:
    """The equality requirements of a review's field selector (what authorizers read; upstream parses the
    raw form or the structured one, and an authorizer sees nothing of a selector that does not parse)."""
    if not isinstance(selector, dict):
        return ()
    raw = selector.get("rawSelector") or ""
    if raw:
        try:
            return parse_field_selector(raw).requirements
        except SelectorError:
            return ()
    out: list[FieldRequirement] = []
    for req in selector.get("requirements") or []:
        if not isinstance(req, dict):
            continue
        values, op = req.get("values") or [], _FIELD_OPERATORS.get(req.get("operator") or "")
        if op is not None and len(values) == 1:  # others are parse errors upstream, which authorizers ignore
            out.append(FieldRequirement(str(req.get("key") or ""), op, str(values[0])))
    return tuple(out)


def attributes_from(user: UserInfo, spec: dict[str, Any]) -> Attributes:
    """The authorizer's question for a review's spec (upstream: ResourceAttributesFrom, NonResourceAttributesFrom;
    an empty version means every version)."""
    res = spec.get("resourceAttributes")
    if isinstance(res, dict):
        return Attributes(
            user, str(res.get("verb") or ""), True, str(res.get("namespace") or ""), str(res.get("group") or ""),
            str(res.get("version") or "") or "*", str(res.get("resource") or ""), str(res.get("subresource") or ""),
            str(res.get("name") or ""), "", _field_requirements(res.get("fieldSelector")),
        )  # fmt: skip
    non = spec.get("nonResourceAttributes") or {}
    return Attributes(user, str(non.get("verb") or ""), path=str(non.get("path") or ""))


def user_from_spec(spec: dict[str, Any]) -> UserInfo:
    extra = spec.get("extra") or {}
    return UserInfo(
        str(spec.get("user") or ""),
        uid=str(spec.get("uid") or ""),
        groups=tuple(str(g) for g in spec.get("groups") or []),
        extra={str(k): tuple(str(x) for x in v or []) for k, v in extra.items()},
    )


async def _admission(ctx: Context, obj: Object) -> None:
    """Validating admission, after the review's own validation and before it is answered (upstream's REST
    objects call createValidation there; a SelfSubjectRulesReview does not)."""
    if ctx.create_validation is not None:
        await ctx.create_validation(obj)


async def _status(authorizer: Union, a: Attributes) -> dict[str, Any]:
    d = await deferred.resolve(authorizer.authorize, a)  # a Webhook mode may have to be asked
    status: dict[str, Any] = {"allowed": d.decision == ALLOW}
    if d.decision == DENY:
        status["denied"] = True
    if d.reason:
        status["reason"] = d.reason
    if d.error:
        status["evaluationError"] = d.error
    return status


def rules_status(rules: Rules) -> dict[str, Any]:
    """A SelfSubjectRulesReview's status (upstream: SubjectRulesReviewStatus; the lists are never null)."""
    resource_rules = []
    for r in rules.resource_rules:
        rule: dict[str, Any] = {"verbs": list(r.verbs)}
        if r.api_groups:
            rule["apiGroups"] = list(r.api_groups)
        if r.resources:
            rule["resources"] = list(r.resources)
        if r.resource_names:
            rule["resourceNames"] = list(r.resource_names)
        resource_rules.append(rule)
    non_resource_rules = []
    for n in rules.non_resource_rules:
        nrule: dict[str, Any] = {"verbs": list(n.verbs)}
        if n.non_resource_urls:
            nrule["nonResourceURLs"] = list(n.non_resource_urls)
        non_resource_rules.append(nrule)
    status: dict[str, Any] = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": rules.incomplete,
    }
    if rules.error:
        status["evaluationError"] = rules.error
    return status


# -- the handlers -----------------------------------------------------------------------------------------


class AccessReviews:
    """The four kinds' Create, asking the authorizer `authorizer()` returns (built after the handlers are)."""

    def __init__(self, authorizer: AuthorizerGetter) -> None:
        self._authorizer = authorizer

    def authorizer(self) -> Union:
        authz = self._authorizer()
        if authz is None:  # the server answers nothing before its authorizers are built
            raise errors.service_unavailable("the authorizer is not ready")
        return authz

    async def subject_access_review(self, obj: Object, info: RequestInfo, ctx: Context, _r: web.Request) -> Object:
        problems = validate_subject_access_review(obj)
        if problems:
            raise errors.invalid_object("SubjectAccessReview", "", problems, GROUP)
        await _admission(ctx, obj)
        spec = obj.get("spec") or {}
        obj["status"] = await _status(self.authorizer(), attributes_from(user_from_spec(spec), spec))
        return obj

    async def local_subject_access_review(
        self, obj: Object, info: RequestInfo, ctx: Context, _r: web.Request
    ) -> Object:
        md = obj.setdefault("metadata", {})
        if not isinstance(md, dict):
            raise errors.bad_request("metadata must be an object")
        # The generic create handler's rule for namespaced kinds: the body's namespace is the URL's.
        if not md.get("namespace"):
            md["namespace"] = info.namespace
        elif md["namespace"] != info.namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the request")  # fmt: skip
        problems = validate_local_subject_access_review(obj)
        if problems:
            raise errors.invalid_object("LocalSubjectAccessReview", "", problems, GROUP)
        await _admission(ctx, obj)
        spec = obj.get("spec") or {}
        obj["status"] = await _status(self.authorizer(), attributes_from(user_from_spec(spec), spec))
        return obj

    async def self_subject_access_review(self, obj: Object, info: RequestInfo, ctx: Context, _r: web.Request) -> Object:
        problems = validate_self_subject_access_review(obj)
        if problems:
            raise errors.invalid_object("SelfSubjectAccessReview", "", problems, GROUP)
        await _admission(ctx, obj)
        obj["status"] = await _status(self.authorizer(), attributes_from(ctx.user, obj.get("spec") or {}))
        return obj

    async def self_subject_rules_review(self, obj: Object, info: RequestInfo, ctx: Context, _r: web.Request) -> Object:
        namespace = (obj.get("spec") or {}).get("namespace") or ""
        if not namespace:
            raise errors.bad_request("no namespace on request")
        rules = self.authorizer().rules_for(ctx.user, namespace)
        # Upstream answers with a new object: its status alone.
        return {
            "kind": "SelfSubjectRulesReview",
            "apiVersion": f"{GROUP}/{VERSION}",
            "metadata": {"creationTimestamp": None},
            "spec": {},
            "status": rules_status(rules),
        }


def register(handlers: ResourceHandlers, authorizer: AuthorizerGetter) -> AccessReviews:
    """Serve the four kinds from `handlers`, asking `authorizer()` (the server's authorizer union)."""
    reviews = AccessReviews(authorizer)
    handlers.create_only[(GROUP, "subjectaccessreviews")] = reviews.subject_access_review
    handlers.create_only[(GROUP, "localsubjectaccessreviews")] = reviews.local_subject_access_review
    handlers.create_only[(GROUP, "selfsubjectaccessreviews")] = reviews.self_subject_access_review
    handlers.create_only[(GROUP, "selfsubjectrulesreviews")] = reviews.self_subject_rules_review
    return reviews
