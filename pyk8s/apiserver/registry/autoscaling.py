"""Strategy of autoscaling HorizontalPodAutoscalers, stored as autoscaling/v2 (upstream:
pkg/registry/autoscaling, pkg/apis/autoscaling/v2/defaults.go)."""

from __future__ import annotations

from ...api import errors as e
from ...api.errors import FieldError
from ...api.meta import Object
from . import register
from .strategy import Strategy

DEFAULT_CPU_UTILIZATION = 80


@register("autoscaling", "HorizontalPodAutoscaler")
class HorizontalPodAutoscalerStrategy(Strategy):
    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("minReplicas", 1)
        if not spec.get("metrics"):
            spec["metrics"] = [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION},
                    },
                }
            ]

    def validate(self, obj: Object) -> list[FieldError]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [e.required("spec", "")]
        errs: list[FieldError] = []
        ref = spec.get("scaleTargetRef")
        if not isinstance(ref, dict) or not ref.get("kind") or not ref.get("name"):
            errs.append(e.required("spec.scaleTargetRef", ""))
        lo, hi = spec.get("minReplicas", 1), spec.get("maxReplicas")
        if not isinstance(hi, int) or hi < 1:
            errs.append(e.invalid("spec.maxReplicas", hi, "must be greater than or equal to 1"))
        elif isinstance(lo, int) and lo > hi:
            errs.append(e.invalid("spec.maxReplicas", hi, "must be greater than or equal to `minReplicas`"))
        if isinstance(lo, int) and lo < 1:
            errs.append(e.invalid("spec.minReplicas", lo, "must be greater than or equal to 1"))
        return errs
