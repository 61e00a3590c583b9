"""Strategies of rbac.authorization.k8s.io/v1 (upstream: pkg/registry/rbac): a binding's roleRef cannot
change."""

from __future__ import annotations

from ...api import errors as e
from ...api.errors import FieldError
from ...api.meta import Object
from ...api.validation import name_is_path_segment
from . import register
from .strategy import Strategy


class _BindingStrategy(Strategy):
    name_validator = staticmethod(name_is_path_segment)  # type: ignore[assignment]

    def validate(self, obj: Object) -> list[FieldError]:
        ref = obj.get("roleRef")
        if not isinstance(ref, dict) or not ref.get("name"):
            return [e.required("roleRef.name", "")]
        if ref.get("kind") not in ("Role", "ClusterRole"):
            return [e.not_supported("roleRef.kind", ref.get("kind"), ("Role", "ClusterRole"))]
        return []

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        errs = self.validate(new)
        if new.get("roleRef") != old.get("roleRef"):
            errs.append(e.invalid("roleRef", new.get("roleRef"), "cannot change roleRef"))
        return errs


@register("rbac.authorization.k8s.io", "RoleBinding")
class RoleBindingStrategy(_BindingStrategy):
    pass


@register("rbac.authorization.k8s.io", "ClusterRoleBinding")
class ClusterRoleBindingStrategy(_BindingStrategy):
    pass


@register("rbac.authorization.k8s.io", "Role")
class RoleStrategy(Strategy):
    name_validator = staticmethod(name_is_path_segment)  # type: ignore[assignment]


@register("rbac.authorization.k8s.io", "ClusterRole")
class ClusterRoleStrategy(Strategy):
    name_validator = staticmethod(name_is_path_segment)  # type: ignore[assignment]
