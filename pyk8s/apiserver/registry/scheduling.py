"""Strategy of scheduling.k8s.io/v1 PriorityClasses (upstream: pkg/registry/scheduling,
pkg/apis/scheduling/validation)."""

from __future__ import annotations

from ...api import errors as e
from ...api.errors import FieldError
from ...api.meta import Object
from . import register
from .strategy import Strategy, immutable

HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}


@register("scheduling.k8s.io", "PriorityClass")
class PriorityClassStrategy(Strategy):
    def default(self, obj: Object) -> None:
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")

    def validate(self, obj: Object) -> list[FieldError]:
        errs: list[FieldError] = []
        name, value = obj["metadata"].get("name", ""), obj.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            errs.append(e.required("value", ""))
        elif name in SYSTEM_PRIORITY_CLASSES:
            if value != SYSTEM_PRIORITY_CLASSES[name]:
                errs.append(
                    e.invalid("value", value, f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}")
                )
        elif name.startswith("system-"):
            errs.append(
                e.forbidden(
                    "metadata.name", "priority class names with 'system-' prefix are reserved for system use only"
                )
            )
        elif value > HIGHEST_USER_PRIORITY:
            errs.append(
                e.forbidden("value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}")
            )
        if obj.get("preemptionPolicy") not in ("PreemptLowerPriority", "Never"):
            errs.append(
                e.not_supported("preemptionPolicy", obj.get("preemptionPolicy"), ("Never", "PreemptLowerPriority"))
            )
        return errs

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        return (
            self.validate(new)
            + immutable(new.get("value"), old.get("value"), "value")
            + immutable(new.get("preemptionPolicy"), old.get("preemptionPolicy"), "preemptionPolicy")
        )
