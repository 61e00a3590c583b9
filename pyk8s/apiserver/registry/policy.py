"""Strategy of policy/v1 PodDisruptionBudgets (upstream: pkg/registry/policy, pkg/apis/policy/validation)."""

from __future__ import annotations

from ...api import errors as e
from ...api.errors import FieldError
from ...api.meta import Object
from . import register
from .strategy import Strategy


@register("policy", "PodDisruptionBudget")
class PodDisruptionBudgetStrategy(Strategy):
    tracks_generation = True

    def initial_status(self, obj: Object) -> None:
        obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}

    def validate(self, obj: Object) -> list[FieldError]:
        spec = obj.get("spec") or {}
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            return [e.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")]
        return []
