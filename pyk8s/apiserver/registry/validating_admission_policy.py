"""Strategies of admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies and their bindings: v1 defaults,
generation and status, and validation with upstream's messages, including compiling every CEL expression
(upstream: pkg/registry/admissionregistration/validatingadmissionpolicy*/strategy.go,
pkg/apis/admissionregistration/v1/defaults.go, pkg/apis/admissionregistration/validation/validation.go).

The authorization check upstream's strategies make on create (the writer must be able to `get` the
paramKind's objects) is not made here.
"""

from __future__ import annotations

import re
from typing import Any

from ...api import errors as e
from ...api import validation as v
from ...api.errors import FieldError
from ...api.meta import Object
from ...cel.environment import CompileError
from ..admission.policy.compile import AUDIT_RESULT, BOOL_RESULT, STRING_RESULT, Compiler
from ..printers.common import AGE, _col
from ..tables import NAME, Cells, age, printer
from . import register
from .strategy import Strategy

GROUP = "admissionregistration.k8s.io"
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
VALIDATION_ACTIONS = ("Audit", "Deny", "Warn")
REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")
MAX_AUDIT_ANNOTATIONS = 20
MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH = 5 * 1024
MAX_MATCH_CONDITIONS = 64

_CEL_IDENTIFIER = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_CEL_RESERVED = frozenset(("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
                           "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
                           "void", "while"))  # fmt: skip
_NEWLINE = re.compile(r"[\n\r]+")


# -- defaults -----------------------------------------------------------------------------------------------------


def default_match_resources(m: Any) -> None:
    """SetDefaults_MatchResources, and SetDefaults_Rule on every rule (scope `*`)."""
    if not isinstance(m, dict):
        return
    m.setdefault("matchPolicy", "Equivalent")
    if m.get("namespaceSelector") is None:
        m["namespaceSelector"] = {}
    if m.get("objectSelector") is None:
        m["objectSelector"] = {}
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in m.get(key) or ():
            if isinstance(rule, dict) and rule.get("scope") is None:
                rule["scope"] = "*"


# -- shared pieces ------------------------------------------------------------------------------------------------


def _has_wildcard(items: list[Any]) -> bool:
    return "*" in items


def validate_label_selector(sel: Any, path: str) -> list[FieldError]:
    """metav1validation.ValidateLabelSelector (strict label values)."""
    if not isinstance(sel, dict):
        return []
    errs: list[FieldError] = []
    for i, req in enumerate(sel.get("matchExpressions") or ()):
        p = f"{path}.matchExpressions[{i}]"
        if not isinstance(req, dict):
            continue
        op, values = req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(e.required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(e.forbidden(f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))  # fmt: skip
        else:
            errs.append(e.invalid(f"{p}.operator", op, "not a valid selector operator"))
        key = req.get("key") or ""
        errs += [e.invalid(f"{p}.key", key, m) for m in v.is_qualified_name(key)]
        for j, value in enumerate(values):
            errs += [e.invalid(f"{p}.values[{j}]", value, m) for m in v.is_label_value(str(value))]
    errs += v.validate_labels(sel.get("matchLabels"), f"{path}.matchLabels")
    return errs


def _validate_resources(resources: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not resources:
        errs.append(e.required(path, ""))
    with_wildcard_sub: set[str] = set()
    sub_with_wildcard_res: set[str] = set()
    double = single = plain = False
    for i, item in enumerate(resources):
        if item == "":
            errs.append(e.required(f"{path}[{i}]", ""))
            continue
        double = double or item == "*/*"
        single = single or item == "*"
        res, slash, sub = str(item).partition("/")
        if not slash:
            plain = item != "*"
            continue
        if res in with_wildcard_sub:
            errs.append(e.invalid(f"{path}[{i}]", item, f"if '{res}/*' is present, must not specify {item}"))
        if sub in sub_with_wildcard_res:
            errs.append(e.invalid(f"{path}[{i}]", item, f"if '*/{sub}' is present, must not specify {item}"))
        if sub == "*":
            with_wildcard_sub.add(res)
        if res == "*":
            sub_with_wildcard_res.add(sub)
    if len(resources) > 1 and double:
        errs.append(e.invalid(path, resources, "if '*/*' is present, must not specify other resources"))
    if single and plain:
        errs.append(e.invalid(path, resources, "if '*' is present, must not specify other resources without subresources"))  # fmt: skip
    return errs


def validate_rule_with_operations(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    ops = rule.get("operations") or []
    if not ops:
        errs.append(e.required(f"{path}.operations", ""))
    if len(ops) > 1 and _has_wildcard(ops):
        errs.append(e.invalid(f"{path}.operations", ops, "if '*' is present, must not specify other operations"))
    for i, op in enumerate(ops):
        if op not in OPERATIONS:
            errs.append(e.not_supported(f"{path}.operations[{i}]", op, OPERATIONS))
    groups = rule.get("apiGroups") or []
    if not groups:
        errs.append(e.required(f"{path}.apiGroups", ""))
    if len(groups) > 1 and _has_wildcard(groups):
        errs.append(e.invalid(f"{path}.apiGroups", groups, "if '*' is present, must not specify other API groups"))
    versions = rule.get("apiVersions") or []
    if not versions:
        errs.append(e.required(f"{path}.apiVersions", ""))
    if len(versions) > 1 and _has_wildcard(versions):
        errs.append(e.invalid(f"{path}.apiVersions", versions, "if '*' is present, must not specify other API versions"))  # fmt: skip
    for i, version in enumerate(versions):
        if version == "":
            errs.append(e.required(f"{path}.apiVersions[{i}]", ""))
    errs += _validate_resources(rule.get("resources") or [], f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        errs.append(e.not_supported(f"{path}.scope", scope, SCOPES))
    return errs


def _validate_named_rule(rule: Any, path: str) -> list[FieldError]:
    if not isinstance(rule, dict):
        return [e.type_invalid(path, rule, "must be an object")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, name in enumerate(rule.get("resourceNames") or ()):
        errs += [e.invalid(f"{path}.resourceNames[{i}]", name, m) for m in v.is_valid_path_segment_name(name)]
        if name in seen:
            errs.append(e.duplicate(f"{path}.resourceNames[{i}]", name))
        seen.add(name)
    return errs + validate_rule_with_operations(rule, path)


def validate_match_resources(m: Any, path: str) -> list[FieldError]:
    if not isinstance(m, dict):
        return []
    errs: list[FieldError] = []
    policy = m.get("matchPolicy")
    if policy is None:
        errs.append(e.required(f"{path}.matchPolicy", ""))
    elif policy not in MATCH_POLICIES:
        errs.append(e.not_supported(f"{path}.matchPolicy", policy, MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        if m.get(key) is None:
            errs.append(e.required(f"{path}.{key}", ""))
        else:
            errs += validate_label_selector(m[key], f"{path}.{key}")
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(m.get(key) or ()):
            errs += _validate_named_rule(rule, f"{path}.{key}[{i}]")
    return errs


def _compile(compiler: Compiler, source: str, returns: tuple[str, ...], path: str, *, authorizer: bool = True) -> list[FieldError]:  # fmt: skip
    try:
        compiler.compile(source, returns, has_authorizer=authorizer)
    except CompileError as err:
        return [e.invalid(path, source, err.detail)]
    return []


def validate_match_conditions(conditions: Any, has_params: bool, path: str) -> list[FieldError]:
    """validateMatchConditions (shared with webhooks: `has_params` is false there)."""
    conditions = conditions or []
    errs: list[FieldError] = []
    if len(conditions) > MAX_MATCH_CONDITIONS:
        errs.append(e.too_many(path, len(conditions), MAX_MATCH_CONDITIONS))
    compiler = Compiler(has_params)
    names: set[str] = set()
    for i, c in enumerate(conditions):
        p = f"{path}[{i}]"
        if not isinstance(c, dict):
            errs.append(e.type_invalid(p, c, "must be an object"))
            continue
        expression = (c.get("expression") or "").strip()
        if not expression:
            errs.append(e.required(f"{p}.expression", ""))
        else:
            errs += _compile(compiler, expression, BOOL_RESULT, f"{p}.expression")
        name = c.get("name") or ""
        if not name:
            errs.append(e.required(f"{p}.name", ""))
        else:
            errs += [e.invalid(f"{p}.name", name, m) for m in v.is_qualified_name(name)]
            if name in names:
                errs.append(e.duplicate(f"{p}.name", name))
            names.add(name)
    return errs


# -- policies -----------------------------------------------------------------------------------------------------


def _validate_param_kind(pk: Any, path: str) -> list[FieldError]:
    if not isinstance(pk, dict):
        return [e.type_invalid(path, pk, "must be an object")]
    errs: list[FieldError] = []
    api_version = pk.get("apiVersion") or ""
    if not api_version:
        errs.append(e.required(f"{path}.apiVersion", ""))
    elif api_version.count("/") > 1:
        errs.append(e.invalid(f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"))
    elif api_version != "/":
        group, _, version = api_version.rpartition("/")
        if group and (msgs := v.is_dns1123_subdomain(group)):
            errs.append(e.invalid(f"{path}.apiVersion", group, ",".join(msgs)))
        if not version:
            errs.append(e.invalid(f"{path}.apiVersion", api_version, "version must be specified"))
        elif msgs := v.is_dns1035_label(version):
            errs.append(e.invalid(f"{path}.apiVersion", version, ",".join(msgs)))
    kind = pk.get("kind") or ""
    if not kind:
        errs.append(e.required(f"{path}.kind", ""))
    elif msgs := v.is_dns1035_label(kind.lower()):
        errs.append(e.invalid(f"{path}.kind", kind, "may have mixed case, but should otherwise match: " + ",".join(msgs)))  # fmt: skip
    return errs


def _validate_validation(compiler: Compiler, val: Any, has_params: bool, path: str) -> list[FieldError]:
    if not isinstance(val, dict):
        return [e.type_invalid(path, val, "must be an object")]
    errs: list[FieldError] = []
    expression = val.get("expression") or ""
    if not expression.strip():
        errs.append(e.required(f"{path}.expression", "expression is not specified"))
    else:
        errs += _compile(compiler, expression, BOOL_RESULT, f"{path}.expression")
    message_expression = val.get("messageExpression") or ""
    if message_expression and not message_expression.strip():
        errs.append(e.invalid(f"{path}.messageExpression", message_expression, "must be non-empty if specified"))
    elif message_expression.strip():
        errs += _compile(compiler, message_expression, STRING_RESULT, f"{path}.messageExpression", authorizer=False)
    message = val.get("message") or ""
    if message and not message.strip():
        errs.append(e.invalid(f"{path}.message", message, "message must be non-empty if specified"))
    elif _NEWLINE.search(message.strip()):
        errs.append(e.invalid(f"{path}.message", message, "message must not contain line breaks"))
    reason = val.get("reason")
    if reason is not None and reason not in REASONS:
        errs.append(e.not_supported(f"{path}.reason", reason, REASONS))
    return errs


def _validate_variable(compiler: Compiler, var: Any, path: str) -> list[FieldError]:
    if not isinstance(var, dict):
        return [e.type_invalid(path, var, "must be an object")]
    errs: list[FieldError] = []
    name = var.get("name") or ""
    if not name.strip():
        errs.append(e.required(f"{path}.name", "name is not specified"))
    elif not _CEL_IDENTIFIER.fullmatch(name) or name in _CEL_RESERVED:
        errs.append(e.invalid(f"{path}.name", name, "name is not a valid CEL identifier"))
    expression = var.get("expression") or ""
    if not expression.strip():
        errs.append(e.required(f"{path}.expression", "expression is not specified"))
    else:
        detail = compiler.add_variable(name, expression)
        if detail:
            errs.append(e.invalid(f"{path}.expression", expression, detail))
    return errs


def _validate_audit_annotation(compiler: Compiler, policy_name: str, a: Any, path: str) -> list[FieldError]:
    if not isinstance(a, dict):
        return [e.type_invalid(path, a, "must be an object")]
    errs: list[FieldError] = []
    key = a.get("key") or ""
    if policy_name:
        errs += [e.invalid(f"{path}.key", f"{policy_name}/{key}", m) for m in v.is_qualified_name(f"{policy_name}/{key}")]  # fmt: skip
    else:
        errs.append(e.invalid(f"{path}.key", key, "requires metadata.name be non-empty"))
    value = (a.get("valueExpression") or "").strip()
    if not value:
        errs.append(e.required(f"{path}.valueExpression", "valueExpression is not specified"))
    elif len(value) > MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH:
        errs.append(e.required(f"{path}.valueExpression", f"must not exceed {MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH} bytes in length"))  # fmt: skip
    else:
        try:
            compiler.compile(value, AUDIT_RESULT)
        except CompileError as err:
            errs.append(e.invalid(f"{path}.valueExpression", a.get("valueExpression"), err.detail))
    return errs


def validate_policy_spec(obj: Object, *, check_match_conditions: bool = True) -> list[FieldError]:
    """validateValidatingAdmissionPolicySpec."""
    spec = obj.get("spec")
    path = "spec"
    if not isinstance(spec, dict):
        spec = {}
    errs: list[FieldError] = []
    failure = spec.get("failurePolicy")
    if failure is None:
        errs.append(e.required(f"{path}.failurePolicy", ""))
    elif failure not in FAILURE_POLICIES:
        errs.append(e.not_supported(f"{path}.failurePolicy", failure, FAILURE_POLICIES))
    param_kind = spec.get("paramKind")
    has_params = param_kind is not None
    if has_params:
        errs += _validate_param_kind(param_kind, f"{path}.paramKind")
    constraints = spec.get("matchConstraints")
    if constraints is None:
        errs.append(e.required(f"{path}.matchConstraints", ""))
    else:
        errs += validate_match_resources(constraints, f"{path}.matchConstraints")
        if isinstance(constraints, dict) and not constraints.get("resourceRules"):
            errs.append(e.required(f"{path}.matchConstraints.resourceRules", ""))
    if check_match_conditions:
        errs += validate_match_conditions(spec.get("matchConditions"), has_params, f"{path}.matchConditions")
    compiler = Compiler(has_params)
    for i, var in enumerate(spec.get("variables") or ()):
        errs += _validate_variable(compiler, var, f"{path}.variables[{i}]")
    validations = spec.get("validations") or []
    annotations = spec.get("auditAnnotations") or []
    if not validations and not annotations:
        detail = "validations or auditAnnotations must contain at least one item"
        errs += [e.required(f"{path}.validations", detail), e.required(f"{path}.auditAnnotations", detail)]
        return errs
    for i, val in enumerate(validations):
        errs += _validate_validation(compiler, val, has_params, f"{path}.validations[{i}]")
    if len(annotations) > MAX_AUDIT_ANNOTATIONS:
        errs.append(e.invalid(f"{path}.auditAnnotations", annotations, f"must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"))  # fmt: skip
    keys: set[str] = set()
    name = (obj.get("metadata") or {}).get("name") or ""
    for i, a in enumerate(annotations):
        errs += _validate_audit_annotation(compiler, name, a, f"{path}.auditAnnotations[{i}]")
        key = a.get("key") if isinstance(a, dict) else None
        if key in keys:
            errs.append(e.duplicate(f"{path}.auditAnnotations[{i}].key", key))
        keys.add(key)
    return errs


def _spec(obj: Object) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


@register(GROUP, "ValidatingAdmissionPolicy")
class ValidatingAdmissionPolicyStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: Object) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("failurePolicy", "Fail")
        default_match_resources(spec.get("matchConstraints"))

    def validate(self, obj: Object) -> list[FieldError]:
        return validate_policy_spec(obj)

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        # Unchanged match conditions (and paramKind) are not compiled again (ignoreMatchConditions upstream).
        same = _spec(new).get("paramKind") == _spec(old).get("paramKind") and _spec(new).get(
            "matchConditions"
        ) == _spec(old).get("matchConditions")
        return validate_policy_spec(new, check_match_conditions=not same)


# -- bindings -----------------------------------------------------------------------------------------------------


def _validate_param_ref(ref: Any, path: str) -> list[FieldError]:
    if ref is None:
        return []
    if not isinstance(ref, dict):
        return [e.type_invalid(path, ref, "must be an object")]
    errs: list[FieldError] = []
    name, selector = ref.get("name") or "", ref.get("selector")
    if name:
        errs += [e.invalid(f"{path}.name", name, m) for m in v.is_valid_path_segment_name(name)]
        if selector is not None:
            errs.append(e.forbidden(f"{path}.name", "name and selector are mutually exclusive"))
    if selector is not None:
        errs += validate_label_selector(selector, f"{path}.selector")
        if name:
            errs.append(e.forbidden(f"{path}.selector", "name and selector are mutually exclusive"))
    if not name and selector is None:
        errs.append(e.required(path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(e.required(f"{path}.parameterNotFoundAction", ""))
    elif action not in ("Deny", "Allow"):
        errs.append(e.not_supported(f"{path}.parameterNotFoundAction", action, ("Deny", "Allow")))
    return errs


def _validate_validation_actions(actions: Any, path: str) -> list[FieldError]:
    actions = actions or []
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action not in VALIDATION_ACTIONS:
            errs.append(e.not_supported(f"{path}[{i}]", action, VALIDATION_ACTIONS))
        if action in seen:
            errs.append(e.duplicate(f"{path}[{i}]", action))
        seen.add(action)
    if "Deny" in seen and "Warn" in seen:
        errs.append(e.invalid(path, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))  # fmt: skip
    if not seen:
        errs.append(e.required(path, "at least one validation action is required"))
    return errs


def validate_binding_spec(obj: Object) -> list[FieldError]:
    spec = _spec(obj)
    errs: list[FieldError] = []
    policy = spec.get("policyName") or ""
    if not policy:
        errs.append(e.required("spec.policyName", ""))
    else:
        errs += [e.invalid("spec.policyName", policy, m) for m in v.name_is_dns_subdomain(policy, False)]
    errs += _validate_param_ref(spec.get("paramRef"), "spec.paramRef")
    errs += validate_match_resources(spec.get("matchResources"), "spec.matchResouces")  # (upstream's spelling)
    errs += _validate_validation_actions(spec.get("validationActions"), "spec.validationActions")
    return errs


@register(GROUP, "ValidatingAdmissionPolicyBinding")
class ValidatingAdmissionPolicyBindingStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: Object) -> None:
        default_match_resources(_spec(obj).get("matchResources"))

    def validate(self, obj: Object) -> list[FieldError]:
        return validate_binding_spec(obj)


# -- printers (upstream: pkg/printers/internalversion printValidatingAdmissionPolicy[Binding]) -----------------


@printer(GROUP, "ValidatingAdmissionPolicy", [
    NAME,
    _col("Validations", "Validations indicates the number of validation rules defined in this configuration", "integer"),
    _col("ParamKind", "ParamKind specifies the kind of resources used to parameterize this policy"),
    AGE,
])  # fmt: skip
def policy_row(obj: Object) -> Cells:
    spec = _spec(obj)
    pk = spec.get("paramKind")
    param_kind = f"{pk.get('apiVersion', '')}/{pk.get('kind', '')}" if isinstance(pk, dict) else "<unset>"
    return [obj["metadata"].get("name", ""), len(spec.get("validations") or ()), param_kind, age(obj)]


@printer(GROUP, "ValidatingAdmissionPolicyBinding", [
    NAME,
    _col("PolicyName", "PolicyName indicates the policy definition which the policy binding binded to"),
    _col("ParamRef", "ParamRef indicates the param resource which sets the configration param"),
    AGE,
])  # fmt: skip
def binding_row(obj: Object) -> Cells:
    spec = _spec(obj)
    ref = spec.get("paramRef")
    param = "<unset>"
    if isinstance(ref, dict):
        if ref.get("name"):
            # Whether the param is cluster-scoped is not known here: without a namespace it is `*/name`.
            param = f"{ref.get('namespace') or '*'}/{ref['name']}"
        elif ref.get("selector") is not None:
            param = _go_label_selector(ref["selector"])
    return [obj["metadata"].get("name", ""), spec.get("policyName", ""), param, age(obj)]


def _go_label_selector(sel: Any) -> str:
    """A LabelSelector as its generated Go String() prints it."""
    sel = sel if isinstance(sel, dict) else {}
    labels = ",".join(f"{k}: {v}" for k, v in sorted((sel.get("matchLabels") or {}).items()))
    exprs = ",".join(
        f"LabelSelectorRequirement{{Key:{r.get('key', '')},Operator:{r.get('operator', '')},"
        f"Values:[{' '.join(r.get('values') or ())}],}}"
        for r in sel.get("matchExpressions") or ()
        if isinstance(r, dict)
    )
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels + ',' if labels else ''}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{exprs + ',' if exprs else ''}}},}}")  # fmt: skip
