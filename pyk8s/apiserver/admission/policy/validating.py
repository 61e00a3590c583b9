"""The ValidatingAdmissionPolicy admission plugin: every write a policy and one of its bindings match is
checked by the policy's CEL validations, with the binding's params, and denied, warned about or audited as
the binding's validationActions say (upstream: apiserver pkg/admission/plugin/policy/validating plugin.go,
dispatcher.go, validator.go, and policy/generic policy_dispatcher.go CollectParams).

Policies and bindings are read from their watch caches at each request and compiled once per generation.
Params are read from the watch cache of the paramKind's resource, built-in or custom. The host is the API
server: its resource table, stores, custom resources and authorizer (read when a request comes, as the
authorizer is built after the admission chain).

Audit annotations (the policy's auditAnnotations and the Audit action's validation_failure) go to the
request's annotations in pyk8s.apiserver.warning; the audit log records them only where the audit filter
takes them from there.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ....api import errors
from ....api.meta import Object
from ....api.resources import Resource
from ....api.selectors import SelectorError, label_selector_from_object
from ....cel import authz as celauthz
from ....cel.environment import CompileError, CostLimitExceeded, EvalError, Program
from ...authn import UserInfo
from ...warning import add_audit_annotation, add_warning
from .. import Attributes
from . import matching
from .compile import (
    AUDIT_RESULT,
    AUTHORIZER,
    BOOL_RESULT,
    MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES,
    NAMESPACE_OBJECT,
    OBJECT,
    OLD_OBJECT,
    OUT_OF_BUDGET,
    PARAMS,
    REQUEST,
    REQUEST_RESOURCE,
    RUNTIME_CEL_COST_BUDGET,
    RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS,
    STRING_RESULT,
    Compiler,
    Context,
    OutOfBudget,
    evaluation_error,
)

log = logging.getLogger(__name__)

GROUP_VERSION = "admissionregistration.k8s.io/v1"
POLICIES, BINDINGS = "validatingadmissionpolicies", "validatingadmissionpolicybindings"
EXEMPT_KINDS = frozenset(("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
                          "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
                          "MutatingAdmissionPolicyBinding"))  # fmt: skip
VALIDATION_FAILURE_ANNOTATION = "validation.policy.admission.k8s.io/validation_failure"
MAX_AUDIT_ANNOTATION_VALUE_LENGTH = 10 * 1024
_REASON_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}


class Host(Protocol):
    """What the plugin reads of the API server (pyk8s.apiserver.server.APIServer has all of it)."""

    table: Any  # ResourceTable of the built-in resources
    stores: dict[tuple[str, str], Any]  # (group/version, plural) -> RESTStore
    custom_resources: Any  # CustomResourceHandler, or None before it is built
    authorizer: Any  # authz.Union (authorize(Attributes) -> Decision), or None before it is built


# -- compiled policies --------------------------------------------------------------------------------------------


@dataclass
class Expr:
    source: str
    program: Program | None
    error: str  # the compile error's detail when `program` is None


@dataclass
class Validation:
    expression: Expr
    message: str
    message_expression: Expr | None
    reason: str


@dataclass
class CompiledPolicy:
    """One generation of a policy, compiled."""

    policy: Object
    match_conditions: list[tuple[str, Expr]] = field(default_factory=list)
    validations: list[Validation] = field(default_factory=list)
    audit_annotations: list[tuple[str, Expr]] = field(default_factory=list)
    compiler: Compiler | None = None

    @property
    def name(self) -> str:
        return self.policy["metadata"]["name"]

    @property
    def spec(self) -> dict[str, Any]:
        return self.policy.get("spec") or {}

    @property
    def failure_policy(self) -> str:
        return self.spec.get("failurePolicy") or "Fail"


def _compile(compiler: Compiler, source: str, returns: tuple[str, ...], *, authorizer: bool = True) -> Expr:
    try:
        return Expr(source, compiler.compile(source, returns, has_authorizer=authorizer), "")
    except CompileError as err:
        return Expr(source, None, err.detail)


def compile_policy(policy: Object) -> CompiledPolicy:
    spec = policy.get("spec") or {}
    has_params = spec.get("paramKind") is not None
    compiler = Compiler(has_params)
    for var in spec.get("variables") or ():
        compiler.add_variable(var.get("name") or "", var.get("expression") or "")
    out = CompiledPolicy(policy, compiler=compiler)
    conditions = Compiler(has_params)  # match conditions do not see the variables
    for c in spec.get("matchConditions") or ():
        out.match_conditions.append((c.get("name") or "", _compile(conditions, c.get("expression") or "", BOOL_RESULT)))
    for v in spec.get("validations") or ():
        message_expression = v.get("messageExpression") or ""
        out.validations.append(
            Validation(
                _compile(compiler, v.get("expression") or "", BOOL_RESULT),
                v.get("message") or "",
                _compile(compiler, message_expression, STRING_RESULT, authorizer=False) if message_expression else None,
                v.get("reason") or "",
            )
        )
    for a in spec.get("auditAnnotations") or ():
        out.audit_annotations.append((a.get("key") or "", _compile(compiler, (a.get("valueExpression") or "").strip(), AUDIT_RESULT)))  # fmt: skip
    return out


# -- decisions ----------------------------------------------------------------------------------------------------

ADMIT, DENY = "admit", "deny"


@dataclass
class Decision:
    action: str
    message: str = ""
    reason: str = ""  # set for a failed validation; "" (Invalid) for errors
    index: int = 0  # the validation's index, for the Audit annotation


def _action_for_error(failure_policy: str) -> str:
    return ADMIT if failure_policy == "Ignore" else DENY


class ConfigurationError(Exception):
    pass


# -- the plugin ---------------------------------------------------------------------------------------------------


class ValidatingAdmissionPolicy:
    name = "ValidatingAdmissionPolicy"

    def __init__(self, host: Host) -> None:
        self.host = host
        self._compiled: dict[tuple[str, int], CompiledPolicy] = {}
        self.backend = f"ValidatingAdmissionPolicy/{id(self)}"
        celauthz.register_backend(self.backend, self._authorize)

    async def admit(self, a: Attributes) -> None:
        return None

    # -- reading the caches ------------------------------------------------------------------------------

    def _store(self, group: str, version: str, plural: str) -> Any:
        gv = f"{group}/{version}" if group else version
        rest = self.host.stores.get((gv, plural))
        if rest is None and self.host.custom_resources is not None:
            rest = self.host.custom_resources.rest_of(f"{plural}.{group}")
        return rest

    def _list(self, plural: str) -> list[Object]:
        rest = self.host.stores.get((GROUP_VERSION, plural))
        if rest is None or not rest.cacher.ready:
            return []
        entries, _ = rest.cacher.list(rest.resource.collection_key(""))
        return [en.obj for en in entries]

    def _policies(self) -> list[CompiledPolicy]:
        out: list[CompiledPolicy] = []
        live: set[tuple[str, int]] = set()
        for p in self._list(POLICIES):
            meta = p["metadata"]
            key = (meta.get("uid", ""), meta.get("generation", 0))
            live.add(key)
            compiled = self._compiled.get(key)
            if compiled is None:
                compiled = self._compiled[key] = compile_policy(p)
            out.append(compiled)
        for key in [k for k in self._compiled if k not in live]:
            del self._compiled[key]
        return sorted(out, key=lambda c: c.name)

    def _resources(self) -> list[Resource]:
        out = list(self.host.table.resources)
        if self.host.custom_resources is not None:
            out += self.host.custom_resources.resources()
        return out

    def _equivalents(self, group: str, version: str, plural: str) -> list[tuple[str, str, str, str]]:
        return [(r.group, r.version, r.plural, r.kind) for r in self._resources() if r.group == group and r.plural == plural]  # fmt: skip

    def _namespace(self, name: str) -> Object | None:
        rest = self.host.stores.get(("v1", "namespaces"))
        if rest is None:
            return None
        entry = rest.cacher.get(rest.key("", name)) if rest.cacher.ready else None
        return entry.obj if entry is not None else None

    def _namespace_labels(self, name: str) -> dict[str, str] | None:
        ns = self._namespace(name)
        if ns is None:
            raise errors.not_found("namespaces", name)
        return ns["metadata"].get("labels") or {}

    # -- the authorizer of expressions -----------------------------------------------------------------------

    def _authorize(self, user: dict[str, Any], attrs: dict[str, Any]) -> tuple[str, str, str]:
        from ...authz import Attributes as AuthzAttributes  # (the authz package imports admission's neighbours)

        authorizer = self.host.authorizer
        if authorizer is None:
            return "NoOpinion", "", "no authorizer configured"
        info = UserInfo(user.get("name", ""), user.get("uid", ""), tuple(user.get("groups") or ()),
                        {k: tuple(v) for k, v in (user.get("extra") or {}).items()})  # fmt: skip
        a = AuthzAttributes(info, attrs["verb"], attrs.get("resourceRequest", False), attrs.get("namespace", ""),
                            attrs.get("apiGroup", ""), attrs.get("apiVersion", ""), attrs.get("resource", ""),
                            attrs.get("subresource", ""), attrs.get("name", ""), attrs.get("path", ""))  # fmt: skip
        d = authorizer.authorize(a)
        return d.decision, d.reason, d.error

    # -- validate ----------------------------------------------------------------------------------------------

    async def validate(self, a: Attributes) -> None:
        if a.resource.group == "admissionregistration.k8s.io" and a.resource.kind in EXEMPT_KINDS:
            return
        policies = self._policies()
        if not policies:
            return
        bindings: dict[str, list[Object]] = {}
        for b in self._list(BINDINGS):
            bindings.setdefault((b.get("spec") or {}).get("policyName") or "", []).append(b)
        request = _request_of(a)
        denied: list[tuple[CompiledPolicy, Object | None, Decision]] = []

        def config_error(policy: CompiledPolicy, binding: Object | None, message: str) -> None:
            if policy.failure_policy == "Ignore":
                return
            prefix = "failed to configure policy" if binding is None else "failed to configure binding"
            denied.append((policy, binding, Decision(DENY, f"{prefix}: {message}")))

        for policy in policies:
            try:
                found = matching.matches(policy.spec.get("matchConstraints"), request, self._namespace_labels,
                                         self._equivalents)  # fmt: skip
            except errors.StatusError as err:
                config_error(policy, None, err.message)
                continue
            if found is None:
                continue
            param_resource: Resource | None = None
            param_kind = policy.spec.get("paramKind")
            if param_kind is not None:
                param_resource = self._param_resource(param_kind)
                if param_resource is None:
                    config_error(policy, None, _unknown_param_kind(param_kind))
                    continue
            annotations: dict[str, str] = {}
            for binding in sorted(bindings.get(policy.name, ()), key=lambda b: b["metadata"]["name"]):
                spec = binding.get("spec") or {}
                try:
                    if (
                        spec.get("matchResources") is not None
                        and matching.matches(spec["matchResources"], request, self._namespace_labels, self._equivalents)
                        is None
                    ):
                        continue
                    params = self._collect_params(param_kind, param_resource, spec.get("paramRef"), a.namespace)
                except (errors.StatusError, ConfigurationError) as err:
                    config_error(policy, binding, err.message if isinstance(err, errors.StatusError) else str(err))
                    continue
                namespace_object = self._namespace_object(a, request)
                for param in params:
                    decisions, published = self._validate_one(policy, a, request, found, param, namespace_object)
                    self._act(policy, binding, decisions, denied)
                    for key, value in published:
                        annotations.setdefault(key, value)
            for key, value in annotations.items():
                add_audit_annotation(f"{policy.name}/{key}", value)
        if denied:
            raise _denial(a, *denied[0])

    def _act(
        self,
        policy: CompiledPolicy,
        binding: Object,
        decisions: list[Decision],
        denied: list[tuple[CompiledPolicy, Object | None, Decision]],
    ) -> None:
        actions = (binding.get("spec") or {}).get("validationActions") or ()
        for d in decisions:
            if d.action != DENY:
                continue
            for action in actions:
                if action == "Deny":
                    denied.append((policy, binding, d))
                elif action == "Warn":
                    add_warning(f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' with binding "
                                f"'{binding['metadata']['name']}': {d.message}")  # fmt: skip
                elif action == "Audit":
                    value = [{"message": d.message, "policy": policy.name, "binding": binding["metadata"]["name"],
                              "expressionIndex": d.index, "validationActions": list(actions)}]  # fmt: skip
                    add_audit_annotation(VALIDATION_FAILURE_ANNOTATION, json.dumps(value, separators=(",", ":")))

    # -- params ------------------------------------------------------------------------------------------------

    def _param_resource(self, param_kind: dict[str, Any]) -> Resource | None:
        group, _, version = (param_kind.get("apiVersion") or "").rpartition("/")
        kind = param_kind.get("kind") or ""
        for r in self._resources():
            if r.group == group and r.version == version and r.kind == kind and "list" in r.verbs:
                return r
        return None

    def _collect_params(
        self, param_kind: Any, resource: Resource | None, ref: Any, namespace: str
    ) -> Sequence[Object | None]:
        """Upstream's CollectParams: [None] without paramKind or paramRef; else the params the ref names."""
        if param_kind is None or ref is None or resource is None:
            return [None]
        rest = self._store(resource.group, resource.version, resource.plural)
        if rest is None or not rest.cacher.ready:
            raise ConfigurationError(f"paramKind kind `{_param_kind_string(param_kind)}` not yet synced to use for admission")  # fmt: skip
        params_namespace = ""
        if resource.namespaced:
            params_namespace = ref.get("namespace") or namespace
            if not params_namespace:
                raise ConfigurationError("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")  # fmt: skip
        elif ref.get("namespace"):
            raise ConfigurationError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
        params: list[Object]
        if ref.get("name"):
            if ref.get("selector") is not None:
                raise ConfigurationError("paramRef.name and paramRef.selector are mutually exclusive")
            entry = rest.cacher.get(rest.key(params_namespace, ref["name"]))
            params = [entry.obj] if entry is not None else []
        elif ref.get("selector") is not None:
            try:
                selector = label_selector_from_object(ref["selector"])
            except SelectorError as err:
                raise ConfigurationError(str(err)) from None
            entries, _ = rest.cacher.list(rest.resource.collection_key(params_namespace))
            params = [en.obj for en in entries if selector.matches(en.obj["metadata"].get("labels"))]
        else:
            raise ConfigurationError("one of name or selector must be provided")
        if not params and ref.get("parameterNotFoundAction") == "Deny":
            raise ConfigurationError("no params found for policy binding with `Deny` parameterNotFoundAction")
        return [_with_type_meta(p, param_kind) for p in params]

    def _namespace_object(self, a: Attributes, r: matching.Request) -> Object | None:
        if r.is_namespace or not a.namespace:
            return None
        ns = self._namespace(a.namespace)
        return namespace_object(ns) if ns is not None else None

    # -- one policy, one binding, one param (upstream: validator.Validate) --------------------------------------

    def _values(
        self, a: Attributes, r: matching.Request, found: matching.Match, param: Any, ns: Any, has_params: bool
    ) -> dict[str, Any]:
        user = {"name": a.user.name, "uid": a.user.uid, "groups": list(a.user.groups),
                "extra": {k: list(v) for k, v in a.user.extra.items()}}  # fmt: skip
        values: dict[str, Any] = {
            OBJECT: a.object,
            OLD_OBJECT: a.old_object,
            REQUEST: admission_request(a, r, found),
            NAMESPACE_OBJECT: ns,
            AUTHORIZER: celauthz.authorizer_value(self.backend, user),
            REQUEST_RESOURCE: celauthz.request_resource_value(
                self.backend, user, r.group, r.resource, r.subresource, r.namespace, r.name
            ),
        }
        if has_params:
            values[PARAMS] = param
        return values

    def _validate_one(
        self, policy: CompiledPolicy, a: Attributes, r: matching.Request, found: matching.Match, param: Any, ns: Any
    ) -> tuple[list[Decision], list[tuple[str, str]]]:
        failure = policy.failure_policy
        values = self._values(a, r, found, param, ns, policy.spec.get("paramKind") is not None)
        if policy.match_conditions:
            conditions = Context(values, budget=RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS)
            problems: list[str] = []
            for _, expr in policy.match_conditions:
                try:
                    result = _evaluate(conditions, expr)
                except (EvalError, OutOfBudget) as err:
                    problems.append(str(err))
                    continue
                if result is False:
                    return [], []
            if problems:
                if failure == "Ignore":
                    return [], []
                return [Decision(DENY, errors.aggregate(problems))], []
        assert policy.compiler is not None
        ctx = Context(values, policy.compiler.variables, RUNTIME_CEL_COST_BUDGET)
        decisions: list[Decision] = []
        try:
            for i, v in enumerate(policy.validations):
                try:
                    result = _evaluate(ctx, v.expression)
                except EvalError as err:
                    decisions.append(Decision(_action_for_error(failure), str(err), index=i))
                    continue
                if result is True:
                    decisions.append(Decision(ADMIT, index=i))
                    continue
                decisions.append(Decision(DENY, "", v.reason or "Invalid", i))
        except OutOfBudget as err:
            return [Decision(_action_for_error(failure), str(err))], []
        for d in decisions:
            if d.action == DENY and d.reason:  # a failed validation (not an error): its message
                v = policy.validations[d.index]
                try:
                    d.message = self._message(ctx, v)
                except OutOfBudget:
                    d.action, d.reason = _action_for_error(failure), ""
                    d.message = f"failed messageExpression: {OUT_OF_BUDGET}"
        published: list[tuple[str, str]] = []
        annotations = Context({**values, AUTHORIZER: None, REQUEST_RESOURCE: None}, policy.compiler.variables)
        for key, expr in policy.audit_annotations:
            try:
                value = _evaluate(annotations, expr)
            except (EvalError, OutOfBudget) as err:
                if failure != "Ignore":
                    decisions.append(Decision(DENY, str(err)))
                continue
            if isinstance(value, str):
                value = value.strip()
                if value:
                    published.append((key, value[:MAX_AUDIT_ANNOTATION_VALUE_LENGTH]))
            elif value is not None and failure != "Ignore":
                decisions.append(Decision(DENY, f"valueExpression '{expr.source}' resulted in unsupported return type: "
                                                f"{_cel_type_of(value)}. Return type must be either string or null."))  # fmt: skip
        return decisions, published

    @staticmethod
    def _message(ctx: Context, v: Validation) -> str:
        message = ""
        if v.message_expression is not None and v.message_expression.program is not None:
            try:
                value = ctx.evaluate(v.message_expression.program)
            except (EvalError, CostLimitExceeded):
                value = None
            if isinstance(value, str):
                message = value.strip()
                if len(message.encode()) > MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES or "\n" in message:
                    message = ""
        if not message and v.message:
            message = v.message.strip()
        return message or f"failed expression: {v.expression.source.strip()}"


def _evaluate(ctx: Context, expr: Expr) -> Any:
    """The expression's value, or EvalError with upstream's text for the decision's message."""
    if expr.program is None:
        raise EvalError(f"compilation error: {expr.error}")
    try:
        return ctx.evaluate(expr.program)
    except EvalError as err:
        raise EvalError(evaluation_error(expr.source, err)) from None


def _cel_type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def _param_kind_string(param_kind: dict[str, Any]) -> str:
    """A ParamKind as its generated String() prints it."""
    return f"&ParamKind{{APIVersion:{param_kind.get('apiVersion', '')},Kind:{param_kind.get('kind', '')},}}"


def _unknown_param_kind(param_kind: dict[str, Any]) -> str:
    group, _, version = (param_kind.get("apiVersion") or "").rpartition("/")
    return f"failed to find resource referenced by paramKind: '{group}/{version}, Kind={param_kind.get('kind', '')}'"


def _with_type_meta(param: Object, param_kind: dict[str, Any]) -> Object:
    if param.get("apiVersion") and param.get("kind"):
        return param
    return {"apiVersion": param_kind.get("apiVersion"), "kind": param_kind.get("kind"), **param}


def _request_of(a: Attributes) -> matching.Request:
    r = a.resource
    kind = r.kind
    sub = r.subresource(a.subresource) if a.subresource else None
    if sub is not None and sub.kind:
        kind = sub.kind
    return matching.Request(a.operation, r.group, r.version, r.plural, a.subresource, a.namespace, a.name, kind,
                            a.object, a.old_object)  # fmt: skip


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _gvr(group: str, version: str, resource: str) -> dict[str, str]:
    return {"group": group, "version": version, "resource": resource}


_OPTIONS_KINDS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


def admission_request(a: Attributes, r: matching.Request, found: matching.Match) -> dict[str, Any]:
    """The `request` variable: an AdmissionRequest in JSON without object and oldObject (upstream:
    CreateAdmissionRequest), for the resource the policy matched (another version with matchPolicy
    Equivalent) and the one asked for."""
    user: dict[str, Any] = {"username": a.user.name}
    if a.user.uid:
        user["uid"] = a.user.uid
    if a.user.groups:
        user["groups"] = list(a.user.groups)
    if a.user.extra:
        user["extra"] = {k: list(v) for k, v in a.user.extra.items()}
    sub = a.resource.subresource(a.subresource) if a.subresource else None
    kind_group = sub.group if sub is not None and sub.group is not None else found.group
    kind_version = sub.version if sub is not None and sub.version is not None else found.version
    request_kind_group = sub.group if sub is not None and sub.group is not None else r.group
    request_kind_version = sub.version if sub is not None and sub.version is not None else r.version
    out: dict[str, Any] = {
        "kind": _gvk(kind_group, kind_version, found.kind),
        "resource": _gvr(found.group, found.version, found.resource),
        "requestKind": _gvk(request_kind_group, request_kind_version, r.kind),
        "requestResource": _gvr(r.group, r.version, r.resource),
        "operation": a.operation,
        "userInfo": user,
        "dryRun": a.dry_run,
    }
    if a.subresource:
        out["subResource"] = out["requestSubResource"] = a.subresource
    name = a.name or ""
    if name:
        out["name"] = name
    if a.namespace:
        out["namespace"] = a.namespace
    options = dict(a.options or {})
    if a.operation in _OPTIONS_KINDS:
        options = {"kind": _OPTIONS_KINDS[a.operation], "apiVersion": "meta.k8s.io/v1", **options}
    if options:
        out["options"] = options
    return out


_NAMESPACE_META = ("name", "generateName", "namespace", "labels", "annotations", "uid", "creationTimestamp",
                   "deletionGracePeriodSeconds", "deletionTimestamp", "generation", "resourceVersion",
                   "finalizers")  # fmt: skip


def namespace_object(ns: Object) -> Object:
    """The `namespaceObject` variable: the namespace's spec, status and chosen metadata (upstream:
    CreateNamespaceObject)."""
    meta = ns.get("metadata") or {}
    out: Object = {"metadata": {k: meta[k] for k in _NAMESPACE_META if k in meta}}
    for key in ("spec", "status"):
        if key in ns:
            out[key] = ns[key]
    return out


def _denial(a: Attributes, policy: CompiledPolicy, binding: Object | None, d: Decision) -> errors.StatusError:
    """The first denial as upstream's dispatcher returns it: admission's Forbidden, with the validation's
    reason and its code."""
    if binding is not None:
        message = (f"ValidatingAdmissionPolicy '{policy.name}' with binding '{binding['metadata']['name']}' "
                   f"denied request: {d.message}")  # fmt: skip
    else:
        message = f"ValidatingAdmissionPolicy '{policy.name}' denied request: {d.message}"
    name = a.name
    if not name:
        meta = (a.object or {}).get("metadata") or {}
        name = meta.get("name") or meta.get("generateName") or "Unknown"
    err = errors.forbidden_request(a.resource.plural, name, message, a.resource.group)
    reason = d.reason or "Invalid"
    details = dict(err.details or {})
    details["causes"] = [*details.get("causes", []), {"message": message}]
    return errors.StatusError(_REASON_CODES.get(reason, 422), reason, err.message, details=details)
