"""Strategies of rbac.authorization.k8s.io/v1 (upstream: pkg/registry/rbac/*/strategy.go, the defaults of
pkg/apis/rbac/v1/defaults.go and pkg/apis/rbac/validation/validation.go): the defaulted API groups of a binding's
roleRef and subjects, the validation of rules, aggregation rules, roleRefs and subjects, and a binding's roleRef
that cannot change. (The escalation checks on the same writes are pyk8s.apiserver.authz.rbac.escalation.)"""

from __future__ import annotations

from typing import Any

from ...api import errors as e
from ...api.errors import FieldError, GoStrings
from ...api.meta import Object
from ...api.selectors import SelectorError, label_selector_from_object
from ...api.validation import is_valid_path_segment_name, name_is_dns_subdomain, name_is_path_segment
from . import register
from .strategy import Strategy

GROUP_NAME = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def validate_policy_rule(rule: Any, namespaced: bool, path: str) -> list[FieldError]:
    """One PolicyRule: verbs, and either resources with their groups or non-resource URLs (upstream:
    ValidatePolicyRule)."""
    if not isinstance(rule, dict):
        return [e.invalid(path, rule, "must be an object")]
    errs: list[FieldError] = []
    if not _list(rule.get("verbs")):
        errs.append(e.required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = _list(rule.get("nonResourceURLs"))
    if urls:
        if namespaced:
            errs.append(
                e.invalid(
                    f"{path}.nonResourceURLs", GoStrings(urls), "namespaced rules cannot apply to non-resource URLs"
                )
            )
        if _list(rule.get("apiGroups")) or _list(rule.get("resources")) or _list(rule.get("resourceNames")):
            errs.append(
                e.invalid(
                    f"{path}.nonResourceURLs",
                    GoStrings(urls),
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        return errs
    if not _list(rule.get("apiGroups")):
        errs.append(e.required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not _list(rule.get("resources")):
        errs.append(e.required(f"{path}.resources", "resource rules must supply at least one resource"))
    return errs


def _validate_rules(obj: Object, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(_list(obj.get("rules"))):
        errs += validate_policy_rule(rule, namespaced, f"rules[{i}]")
    return errs


def _validate_aggregation_rule(obj: Object) -> list[FieldError]:
    agg = obj.get("aggregationRule")
    if agg is None:
        return []
    selectors = _list(agg.get("clusterRoleSelectors")) if isinstance(agg, dict) else []
    if not selectors:
        return [
            e.required(
                "aggregationRule.clusterRoleSelectors",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            )
        ]
    errs: list[FieldError] = []
    for i, sel in enumerate(selectors):
        path = f"aggregationRule.clusterRoleSelectors[{i}]"
        try:
            label_selector_from_object(sel, path)
        except SelectorError as err:
            errs.append(e.invalid(path, sel, str(err)))
    return errs


class _RoleRef:
    """A roleRef as Go's %#v prints the internal type in a field error."""

    def __init__(self, ref: dict[str, Any]) -> None:
        self.ref = ref

    def go_string(self) -> str:
        r = self.ref
        return (
            f"rbac.RoleRef{{APIGroup:{e.go_quote(str(r.get('apiGroup') or ''))}, "
            f"Kind:{e.go_quote(str(r.get('kind') or ''))}, Name:{e.go_quote(str(r.get('name') or ''))}}}"
        )


def validate_role_ref(ref: Any, kinds: tuple[str, ...]) -> list[FieldError]:
    ref = ref if isinstance(ref, dict) else {}
    errs: list[FieldError] = []
    group = ref.get("apiGroup") or ""
    if group != GROUP_NAME:
        errs.append(e.not_supported("roleRef.apiGroup", group, [GROUP_NAME]))
    kind = ref.get("kind") or ""
    if kind not in kinds:
        errs.append(e.not_supported("roleRef.kind", kind, list(kinds)))
    name = ref.get("name") or ""
    if not name:
        errs.append(e.required("roleRef.name", ""))
    else:
        errs += [e.invalid("roleRef.name", name, msg) for msg in is_valid_path_segment_name(name)]
    return errs


def validate_subject(subject: Any, namespaced: bool, path: str) -> list[FieldError]:
    """One binding subject (upstream: ValidateRoleBindingSubject)."""
    s = subject if isinstance(subject, dict) else {}
    errs: list[FieldError] = []
    name = s.get("name") or ""
    group = s.get("apiGroup") or ""
    if not name:
        errs.append(e.required(f"{path}.name", ""))
    kind = s.get("kind") or ""
    if kind == "ServiceAccount":
        if name:
            errs += [e.invalid(f"{path}.name", name, msg) for msg in name_is_dns_subdomain(name, False)]
        if group:
            errs.append(e.not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not s.get("namespace"):
            errs.append(e.required(f"{path}.namespace", ""))
    elif kind in ("User", "Group"):
        if group != GROUP_NAME:
            errs.append(e.not_supported(f"{path}.apiGroup", group, [GROUP_NAME]))
    else:
        errs.append(e.not_supported(f"{path}.kind", kind, list(SUBJECT_KINDS)))
    return errs


def default_binding(obj: Object) -> None:
    """SetDefaults_RoleBinding / _ClusterRoleBinding / _Subject: the API groups a client may leave out."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP_NAME
    for s in _list(obj.get("subjects")):
        if isinstance(s, dict) and not s.get("apiGroup") and s.get("kind") in ("User", "Group"):
            s["apiGroup"] = GROUP_NAME


class _BindingStrategy(Strategy):
    name_validator = staticmethod(name_is_path_segment)  # type: ignore[assignment]
    role_ref_kinds: tuple[str, ...] = ("Role", "ClusterRole")
    namespaced_subjects = True

    def default(self, obj: Object) -> None:
        default_binding(obj)

    def validate(self, obj: Object) -> list[FieldError]:
        errs = validate_role_ref(obj.get("roleRef"), self.role_ref_kinds)
        for i, s in enumerate(_list(obj.get("subjects"))):
            errs += validate_subject(s, self.namespaced_subjects, f"subjects[{i}]")
        return errs

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        errs = self.validate(new)
        ref = new.get("roleRef") if isinstance(new.get("roleRef"), dict) else {}
        if ref != old.get("roleRef"):
            errs.append(e.invalid("roleRef", _RoleRef(ref), "cannot change roleRef"))
        return errs


@register("rbac.authorization.k8s.io", "RoleBinding")
class RoleBindingStrategy(_BindingStrategy):
    pass


@register("rbac.authorization.k8s.io", "ClusterRoleBinding")
class ClusterRoleBindingStrategy(_BindingStrategy):
    role_ref_kinds = ("ClusterRole",)
    namespaced_subjects = False


@register("rbac.authorization.k8s.io", "Role")
class RoleStrategy(Strategy):
    name_validator = staticmethod(name_is_path_segment)  # type: ignore[assignment]

    def validate(self, obj: Object) -> list[FieldError]:
        return _validate_rules(obj, namespaced=True)


@register("rbac.authorization.k8s.io", "ClusterRole")
class ClusterRoleStrategy(Strategy):
    name_validator = staticmethod(name_is_path_segment)  # type: ignore[assignment]

    def validate(self, obj: Object) -> list[FieldError]:
        return _validate_rules(obj, namespaced=False) + _validate_aggregation_rule(obj)
