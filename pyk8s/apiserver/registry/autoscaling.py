"""Strategy of autoscaling HorizontalPodAutoscalers, stored as autoscaling/v2 (upstream:
pkg/registry/autoscaling, pkg/apis/autoscaling/v2/defaults.go, pkg/apis/autoscaling/validation, v1.32).

Defaults: `minReplicas` 1; no metrics means a CPU Utilization target of 80 %; a `behavior` gets each direction's
missing fields from upstream's rules (scale up: no stabilization, the larger of 4 pods or 100 % per 15 s; scale
down: 100 % per 15 s, its stabilization window left unset for the controller's flag to decide; `selectPolicy`
Max). Validation is upstream's, HPAScaleToZero being off: minReplicas at least 1 (0 stays allowed on an object
that already has it), the scale target reference, each metric source and target, and the scaling rules.
"""

from __future__ import annotations

from typing import Any

from ...api import errors as e
from ...api import validation as v
from ...api.errors import FieldError
from ...api.meta import Object, json_copy
from ...api.quantity import QuantityError, parse_quantity
from . import register
from .strategy import Strategy

DEFAULT_CPU_UTILIZATION = 80
MAX_PERIOD_SECONDS = 1800  # the longest scaling policy period
MAX_STABILIZATION_WINDOW_SECONDS = 3600  # the longest stabilization window

_SCALE_UP_RULES: Object = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_SCALE_DOWN_RULES: Object = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}
_SELECT_POLICIES = ("Disabled", "Max", "Min")
_POLICY_TYPES = ("Percent", "Pods")
_METRIC_SOURCE_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
# The field each metric source type is described in.
_SOURCE_FIELDS = {
    "Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
    "ContainerResource": "containerResource",
}  # fmt: skip
_STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _scaling_rules(given: Any, defaults: Object) -> Object:
    """Upstream's copyHPAScalingRules over a copy of the defaults: what is set is kept."""
    out = json_copy(defaults)
    if isinstance(given, dict):
        for k in ("selectPolicy", "stabilizationWindowSeconds", "policies"):
            if given.get(k) is not None:
                out[k] = given[k]
    return out


def default_hpa_spec(spec: Object) -> None:
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
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
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), _SCALE_UP_RULES)
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), _SCALE_DOWN_RULES)


def _sign(q: Any) -> int | None:
    """The sign of a quantity, None when it does not parse (the decoder rejects those first)."""
    try:
        return parse_quantity(str(q)).sign
    except (QuantityError, ValueError):
        return None


def _dict(value: Any) -> Object:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def validate_cross_version_object_reference(ref: Any, path: str) -> list[FieldError]:
    ref = ref if isinstance(ref, dict) else {}
    errs: list[FieldError] = []
    for fld in ("kind", "name"):
        value = ref.get(fld) or ""
        if not value:
            errs.append(e.required(f"{path}.{fld}", ""))
        else:
            errs += [e.invalid(f"{path}.{fld}", value, m) for m in v.is_valid_path_segment_name(str(value))]
    return errs


def validate_hpa_spec(spec: Any, min_replicas_lower_bound: int, path: str = "spec") -> list[FieldError]:
    if not isinstance(spec, dict):
        return [e.required(path, "")]
    errs: list[FieldError] = []
    lo, hi = spec.get("minReplicas"), _int(spec.get("maxReplicas"))
    if isinstance(lo, int) and lo < min_replicas_lower_bound:
        errs.append(
            e.invalid(f"{path}.minReplicas", lo, f"must be greater than or equal to {min_replicas_lower_bound}")
        )
    if hi < 1:
        errs.append(e.invalid(f"{path}.maxReplicas", hi, "must be greater than 0"))
    if isinstance(lo, int) and hi < lo:
        errs.append(e.invalid(f"{path}.maxReplicas", hi, "must be greater than or equal to `minReplicas`"))
    errs += validate_cross_version_object_reference(spec.get("scaleTargetRef"), f"{path}.scaleTargetRef")
    errs += _validate_metrics(spec.get("metrics") or [], f"{path}.metrics", lo)
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        errs += _validate_scaling_rules(behavior.get("scaleUp"), f"{path}.behavior.scaleUp")
        errs += _validate_scaling_rules(behavior.get("scaleDown"), f"{path}.behavior.scaleDown")
    return errs


def _validate_metrics(metrics: list[Any], path: str, min_replicas: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    types = set()
    for i, m in enumerate(metrics):
        m = m if isinstance(m, dict) else {}
        errs += _validate_metric_spec(m, f"{path}[{i}]")
        types.add(m.get("type"))
    if min_replicas == 0 and not types & {"Object", "External"}:
        errs.append(
            e.forbidden(path, "must specify at least one Object or External metric to support scaling to zero replicas")
        )
    return errs


def _validate_scaling_rules(rules: Any, path: str) -> list[FieldError]:
    if not isinstance(rules, dict):
        return []
    errs: list[FieldError] = []
    window = rules.get("stabilizationWindowSeconds")
    if isinstance(window, int) and window < 0:
        errs.append(e.invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if isinstance(window, int) and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errs.append(e.invalid(f"{path}.stabilizationWindowSeconds", window,
                              f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))  # fmt: skip
    select = rules.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        errs.append(e.not_supported(f"{path}.selectPolicy", select, _SELECT_POLICIES))
    policies = rules.get("policies") or []
    if not policies:
        errs.append(e.required(f"{path}.policies", "must specify at least one Policy"))
    for i, p in enumerate(policies):
        p = p if isinstance(p, dict) else {}
        where = f"{path}.policies[{i}]"
        if p.get("type") not in _POLICY_TYPES:
            errs.append(e.not_supported(f"{where}.type", p.get("type") or "", _POLICY_TYPES))
        value, period = _int(p.get("value")), _int(p.get("periodSeconds"))
        if value <= 0:
            errs.append(e.invalid(f"{where}.value", value, "must be greater than zero"))
        if period <= 0:
            errs.append(e.invalid(f"{where}.periodSeconds", period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            errs.append(e.invalid(f"{where}.periodSeconds", period,
                                  f"must be less than or equal to {MAX_PERIOD_SECONDS}"))  # fmt: skip
    return errs


def _validate_metric_spec(spec: Object, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = spec.get("type") or ""
    if not kind:
        errs.append(e.required(f"{path}.type", "must specify a metric source type"))
    if kind not in _METRIC_SOURCE_TYPES:
        errs.append(e.not_supported(f"{path}.type", kind, _METRIC_SOURCE_TYPES))
    present: list[str] = []
    validators = (
        ("object", _validate_object_source), ("external", _validate_external_source), ("pods", _validate_pods_source),
        ("resource", _validate_resource_source), ("containerResource", _validate_container_resource_source),
    )  # fmt: skip
    for fld, validate in validators:
        if spec.get(fld) is not None:
            present.append(fld)
            if len(present) == 1:  # only the first source present is looked into
                source = spec[fld] if isinstance(spec[fld], dict) else {}
                errs += validate(source, f"{path}.{fld}")
    expected = _SOURCE_FIELDS.get(kind, "")
    if expected:
        if spec.get(expected) is None:
            errs.append(e.required(f"{path}.{expected}", "must populate information for the given metric source"))
    else:
        errs.append(e.not_supported(f"{path}.type", kind, _METRIC_SOURCE_TYPES))
    if len(present) != 1:
        for fld in present:
            if fld != expected:
                errs.append(e.forbidden(f"{path}.{fld}", "must populate the given metric source only"))
    return errs


def _validate_metric_target(target: Any, path: str) -> list[FieldError]:
    target = target if isinstance(target, dict) else {}
    errs: list[FieldError] = []
    kind = target.get("type") or ""
    if not kind:
        errs.append(e.required(f"{path}.type", "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        errs.append(e.invalid(f"{path}.type", kind, "must be either Utilization, Value, or AverageValue"))
    for fld in ("value", "averageValue"):
        if target.get(fld) is not None and _sign(target[fld]) != 1:
            errs.append(e.invalid(f"{path}.{fld}", str(target[fld]), "must be positive"))
    util = target.get("averageUtilization")
    if util is not None and _int(util) < 1:
        errs.append(e.invalid(f"{path}.averageUtilization", util, "must be greater than 0"))
    return errs


def _validate_metric_identifier(metric: Any, path: str) -> list[FieldError]:
    name = (metric if isinstance(metric, dict) else {}).get("name") or ""
    if not name:
        return [e.required(f"{path}.name", "must specify a metric name")]
    return [e.invalid(f"{path}.name", name, m) for m in v.is_valid_path_segment_name(str(name))]


def _validate_object_source(src: Object, path: str) -> list[FieldError]:
    errs = validate_cross_version_object_reference(src.get("describedObject"), f"{path}.describedObject")
    errs += _validate_metric_identifier(src.get("metric"), f"{path}.metric")
    target = _dict(src.get("target"))
    errs += _validate_metric_target(target, f"{path}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        errs.append(e.required(f"{path}.target.averageValue", "must set either a target value or averageValue"))
    return errs


def _validate_external_source(src: Object, path: str) -> list[FieldError]:
    errs = _validate_metric_identifier(src.get("metric"), f"{path}.metric")
    target = _dict(src.get("target"))
    errs += _validate_metric_target(target, f"{path}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        errs.append(e.required(f"{path}.target.averageValue",
                               "must set either a target value for metric or a per-pod target"))  # fmt: skip
    if target.get("value") is not None and target.get("averageValue") is not None:
        errs.append(e.forbidden(f"{path}.target.value",
                                "may not set both a target value for metric and a per-pod target"))  # fmt: skip
    return errs


def _validate_pods_source(src: Object, path: str) -> list[FieldError]:
    errs = _validate_metric_identifier(src.get("metric"), f"{path}.metric")
    target = _dict(src.get("target"))
    errs += _validate_metric_target(target, f"{path}.target")
    if target.get("averageValue") is None:
        errs.append(e.required(f"{path}.target.averageValue", "must specify a positive target averageValue"))
    return errs


def _validate_utilization_or_value(target: Object, path: str) -> list[FieldError]:
    errs = _validate_metric_target(target, f"{path}.target")
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        errs.append(e.required(f"{path}.target.averageUtilization",
                               "must set either a target raw value or a target utilization"))  # fmt: skip
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        errs.append(e.forbidden(f"{path}.target.averageValue",
                                "may not set both a target raw value and a target utilization"))  # fmt: skip
    return errs


def _validate_resource_source(src: Object, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not src.get("name"):
        errs.append(e.required(f"{path}.name", "must specify a resource name"))
    target = _dict(src.get("target"))
    return errs + _validate_utilization_or_value(target, path)


def _validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    """Upstream's ValidateContainerResourceName: a qualified name, and a standard one unless it has a domain."""
    errs = [e.invalid(path, name, m) for m in v.is_qualified_name(name)]
    if "/" not in name and name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
        errs.append(e.invalid(path, name, "must be a standard resource for containers"))
    return errs


def _validate_container_resource_source(src: Object, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name, container = str(src.get("name") or ""), str(src.get("container") or "")
    if not name:
        errs.append(e.required(f"{path}.name", "must specify a resource name"))
    else:
        errs += _validate_container_resource_name(name, f"{path}.name")
    if not container:
        errs.append(e.required(f"{path}.container", "must specify a container"))
    else:
        errs += [e.invalid(f"{path}.container", container, m) for m in v.is_dns1123_label(container)]
    target = _dict(src.get("target"))
    return errs + _validate_utilization_or_value(target, path)


@register("autoscaling", "HorizontalPodAutoscaler")
class HorizontalPodAutoscalerStrategy(Strategy):
    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            default_hpa_spec(spec)

    def validate(self, obj: Object) -> list[FieldError]:
        return validate_hpa_spec(obj.get("spec"), 1)

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        # An autoscaler created with minReplicas 0 (the gate on at the time) may keep it.
        bound = 0 if (old.get("spec") or {}).get("minReplicas") == 0 else 1
        return validate_hpa_spec(new.get("spec"), bound)

    def validate_status_update(self, new: Object, old: Object) -> list[FieldError]:
        status = _dict(new.get("status"))
        errs: list[FieldError] = []
        for fld in ("currentReplicas", "desiredReplicas"):
            value = status.get(fld)
            if isinstance(value, int) and value < 0:
                errs.append(e.invalid(f"status.{fld}", value, "must be greater than or equal to 0"))
        return errs
