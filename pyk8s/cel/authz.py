"""The `authorizer` of admission expressions: `authorizer.group(g).resource(r).namespace(ns).name(n).check(verb)`,
`authorizer.path(p).check(verb)`, `authorizer.serviceAccount(ns, name)` and the Decision's `allowed()`,
`reason()`, `errored()` and `error()` (upstream: apiserver pkg/cel/library authz.go, the Authz and
AuthzSelectors libraries).

The runtime takes opaque values only as protobuf messages, so each type is a message in the Kubernetes pool
(kubetypes.POOL) carrying what the check has gathered. Which authorizer answers, and for whom, is a
`backend` key and the user's JSON in the message: a caller registers its authorizer once
(`register_backend`) and puts `authorizer_value(key, user)` in the activation. Checks are answered by
calling the backend synchronously: pyk8s' authorizers answer from memory.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, message_factory

from ..api import validation as v
from .kubetypes import POOL, CELError

PACKAGE = "kubernetes.authorization"
T = cel.Type

# Fields of each message: every check carries the backend key and the user, then what it has gathered.
_FIELDS = {
    "Authorizer": ("backend", "user"),
    "PathCheck": ("backend", "user", "path"),
    "GroupCheck": ("backend", "user", "group"),
    "ResourceCheck": (
        "backend",
        "user",
        "group",
        "resource",
        "subresource",
        "namespace",
        "name",
        "field_selector",
        "label_selector",
    ),
    "Decision": ("decision", "reason", "error"),
}


def _add_types() -> dict[str, Any]:
    proto = descriptor_pb2.FileDescriptorProto(name="pyk8s/cel/authz.proto", package=PACKAGE, syntax="proto3")
    for name, fields in _FIELDS.items():
        message = proto.message_type.add(name=name)
        for number, field in enumerate(fields, 1):
            message.field.add(
                name=field,
                number=number,
                type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
            )
    POOL.Add(proto)
    return {n: message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"{PACKAGE}.{n}")) for n in _FIELDS}


_CLASSES = _add_types()
AuthorizerMessage, PathCheckMessage, GroupCheckMessage, ResourceCheckMessage, DecisionMessage = (
    _CLASSES[n] for n in ("Authorizer", "PathCheck", "GroupCheck", "ResourceCheck", "Decision")
)
AUTHORIZER, PATH_CHECK, GROUP_CHECK, RESOURCE_CHECK, DECISION = (T(f"{PACKAGE}.{n}") for n in _FIELDS)

# -- backends -----------------------------------------------------------------------------------------------------

# A backend answers one check: (user as {"name","uid","groups","extra"}, attributes) -> (decision, reason, error),
# where decision is "Allow", "Deny" or "NoOpinion" and the attributes are those of upstream's AttributesRecord
# (verb, resourceRequest, apiGroup, apiVersion, resource, subresource, namespace, name, path).
Backend = Callable[[dict[str, Any], dict[str, Any]], tuple[str, str, str]]
_BACKENDS: dict[str, Backend] = {}


def register_backend(key: str, backend: Backend) -> None:
    _BACKENDS[key] = backend


def authorizer_value(backend: str, user: dict[str, Any]) -> Any:
    """The `authorizer` variable for requests by `user` answered by the backend registered as `backend`."""
    return AuthorizerMessage(backend=backend, user=json.dumps(user, sort_keys=True))


def request_resource_value(
    backend: str, user: dict[str, Any], group: str, resource: str, subresource: str, namespace: str, name: str
) -> Any:
    """The `authorizer.requestResource` variable: a resource check of the request's own resource."""
    return ResourceCheckMessage(backend=backend, user=json.dumps(user, sort_keys=True), group=group,
                                resource=resource, subresource=subresource, namespace=namespace, name=name)  # fmt: skip


def _authorize(backend: str, user: str, attributes: dict[str, Any]) -> Any:
    answer = _BACKENDS.get(backend)
    if answer is None:
        return DecisionMessage(decision="NoOpinion", error="no authorizer")
    decision, reason, error = answer(json.loads(user), attributes)
    return DecisionMessage(decision=decision, reason=reason, error=error)


# -- functions ----------------------------------------------------------------------------------------------------


def _path(a: Any, path: str) -> Any:
    if not path.strip():
        raise CELError("path must not be empty")
    return PathCheckMessage(backend=a.backend, user=a.user, path=path)


def _group(a: Any, group: str) -> Any:
    return GroupCheckMessage(backend=a.backend, user=a.user, group=group)


def _service_account(a: Any, namespace: str, name: str) -> Any:
    if v.is_dns1123_subdomain(name):
        raise CELError("Invalid service account name")
    if v.is_dns1123_label(namespace):
        raise CELError("Invalid service account namespace")
    user = {"name": f"system:serviceaccount:{namespace}:{name}", "uid": "",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"], "extra": {}}  # fmt: skip
    return AuthorizerMessage(backend=a.backend, user=json.dumps(user, sort_keys=True))


def _resource(g: Any, resource: str) -> Any:
    if not resource.strip():
        raise CELError("resource must not be empty")
    return ResourceCheckMessage(backend=g.backend, user=g.user, group=g.group, resource=resource)


def _with(field: str) -> Callable[[Any, str], Any]:
    def set_field(r: Any, value: str) -> Any:
        out = ResourceCheckMessage()
        out.CopyFrom(r)
        setattr(out, field, value)
        return out

    return set_field


def _path_check(p: Any, verb: str) -> Any:
    return _authorize(p.backend, p.user, {"verb": verb, "resourceRequest": False, "path": p.path})


def _resource_check(r: Any, verb: str) -> Any:
    # Any version: a policy asks about a resource, not one of its versions (upstream's APIVersion "*").
    attributes = {"verb": verb, "resourceRequest": True, "apiGroup": r.group, "apiVersion": "*",
                  "resource": r.resource, "subresource": r.subresource, "namespace": r.namespace, "name": r.name,
                  "fieldSelector": r.field_selector, "labelSelector": r.label_selector}  # fmt: skip
    return _authorize(r.backend, r.user, attributes)


def _check(c: Any, verb: str) -> Any:
    if isinstance(c, PathCheckMessage):
        return _path_check(c, verb)
    if isinstance(c, ResourceCheckMessage):
        return _resource_check(c, verb)
    raise CELError("no such overload")


def _member(overload: str, ret: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.Overload(overload, ret, params, is_member=True, impl=impl)


def _declarations() -> list[Any]:
    fd, s = cel.FunctionDecl, T.STRING
    return [
        fd("path", [_member("authorizer_path", PATH_CHECK, [AUTHORIZER, s], _path)]),
        fd("group", [_member("authorizer_group", GROUP_CHECK, [AUTHORIZER, s], _group)]),
        fd("serviceAccount", [_member("authorizer_serviceaccount", AUTHORIZER, [AUTHORIZER, s, s], _service_account)]),
        fd("resource", [_member("groupcheck_resource", RESOURCE_CHECK, [GROUP_CHECK, s], _resource)]),
        fd("subresource",
           [_member("resourcecheck_subresource", RESOURCE_CHECK, [RESOURCE_CHECK, s], _with("subresource"))]),
        fd("namespace", [_member("resourcecheck_namespace", RESOURCE_CHECK, [RESOURCE_CHECK, s], _with("namespace"))]),
        fd("name", [_member("resourcecheck_name", RESOURCE_CHECK, [RESOURCE_CHECK, s], _with("name"))]),
        # The runtime dispatches on the value's kind and registers an implementation once per kind; PathCheck
        # and ResourceCheck are both messages, so one overload on dyn answers both (it also type-checks
        # `check` on other values, which then fail when evaluated).
        fd("check", [_member("pathcheck_check", DECISION, [T.DYN, s], _check)]),
        fd("errored", [_member("decision_errored", T.BOOL, [DECISION], lambda d: bool(d.error))]),
        fd("error", [_member("decision_error", s, [DECISION], lambda d: d.error)]),
        fd("allowed", [_member("decision_allowed", T.BOOL, [DECISION], lambda d: d.decision == "Allow")]),
        fd("reason", [_member("decision_reason", s, [DECISION], lambda d: d.reason)]),
        # AuthzSelectors (AuthorizeWithSelectors is on in 1.32)
        fd("fieldSelector",
           [_member("authorizer_fieldselector", RESOURCE_CHECK, [RESOURCE_CHECK, s], _with("field_selector"))]),
        fd("labelSelector",
           [_member("authorizer_labelselector", RESOURCE_CHECK, [RESOURCE_CHECK, s], _with("label_selector"))]),
    ]  # fmt: skip


@functools.cache
def authz_extension() -> Any:
    """The runtime extension with the authorizer's functions (only admission environments declare it)."""
    return cel.CelExtension("kubernetes_authz", _declarations())
