"""LimitRanges' strategy: upstream's defaulting of a Container limit (SetDefaults_LimitRangeItem: the default
limit from max, the default request from the default limit, then from min) and its validation
(ValidateLimitRange: known or qualified types, each type once, resource names, min <= defaultRequest <= default
<= max, ratios), so that what the LimitRanger admission plugin reads is what upstream would have stored."""

from __future__ import annotations

from typing import Any

from ...api import errors as e
from ...api import validation as v
from ...api.errors import FieldError
from ...api.meta import Object
from ...api.quantity import Quantity, QuantityError, canonical, parse_quantity
from . import register
from .strategy import Strategy

CONTAINER, POD, PVC = "Container", "Pod", "PersistentVolumeClaim"
STANDARD_TYPES = (POD, CONTAINER, PVC)
_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
# upstream's standardResources (pkg/apis/core/helper): what a name without a domain may be
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "persistentvolumeclaims", "configmaps", "services.nodeports",
    "services.loadbalancers", "storage", "requests.storage",
})  # fmt: skip
_MAPS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


@register("", "LimitRange")
class LimitRangeStrategy(Strategy):
    def default(self, obj: Object) -> None:
        limits = (obj.get("spec") or {}).get("limits") if isinstance(obj.get("spec"), dict) else None
        for item in limits if isinstance(limits, list) else ():
            if isinstance(item, dict) and item.get("type") == CONTAINER:
                default_item(item)

    def validate(self, obj: Object) -> list[FieldError]:
        return validate_limit_range(obj)

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        return validate_limit_range(new)


def default_item(item: dict[str, Any]) -> None:
    """A Container item's default limit is its max, and its default request its default limit, else its min,
    for each resource that names none."""
    default = item.get("default") if isinstance(item.get("default"), dict) else {}
    request = item.get("defaultRequest") if isinstance(item.get("defaultRequest"), dict) else {}
    for source, target in (("max", default), ("default", request), ("min", request)):
        given = default if source == "default" else item.get(source)
        for k, q in given.items() if isinstance(given, dict) else ():
            target.setdefault(k, q)
    if default:
        item["default"] = default
    if request:
        item["defaultRequest"] = request


def _is_huge_pages(name: str) -> bool:
    return name.startswith("hugepages-") or name.startswith("requests.hugepages-")


def _resource_name_errors(limit_type: str, name: str, path: str) -> list[FieldError]:
    """Upstream's validateLimitRangeResourceName: container names for Pod and Container, any standard or
    qualified resource name for the other types."""
    errs = [e.invalid(path, name, m) for m in v.is_qualified_name(name)]
    if errs or "/" in name:
        return errs
    if limit_type in (POD, CONTAINER):
        if name not in _CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            errs.append(e.invalid(path, name, "must be a standard resource for containers"))
    elif name not in _STANDARD_RESOURCES and not _is_huge_pages(name):
        errs.append(e.invalid(path, name, "must be a standard resource type or fully qualified"))
    return errs


def _overcommit_allowed(name: str) -> bool:
    native = "/" not in name or "kubernetes.io/" in name
    return native and not _is_huge_pages(name)


def validate_limit_range(obj: Object) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = obj.get("spec")
    limits = spec.get("limits") if isinstance(spec, dict) else None
    seen: set[str] = set()
    for i, item in enumerate(limits if isinstance(limits, list) else ()):
        path = f"spec.limits[{i}]"
        if not isinstance(item, dict):
            continue
        typ = str(item.get("type") or "")
        type_errs = [e.invalid(f"{path}.type", typ, m) for m in v.is_qualified_name(typ)]
        if not type_errs and "/" not in typ and typ not in STANDARD_TYPES:
            type_errs.append(e.invalid(f"{path}.type", typ, "must be a standard limit type or fully qualified"))
        errs += type_errs
        if typ in seen:
            errs.append(e.duplicate(f"{path}.type", typ))
        seen.add(typ)
        maps: dict[str, dict[str, Quantity]] = {m: {} for m in _MAPS}
        for field in _MAPS:
            given = item.get(field)
            if not isinstance(given, dict) or not given:
                continue
            if typ == POD and field in ("default", "defaultRequest"):
                errs.append(e.forbidden(f"{path}.{field}", "may not be specified when `type` is 'Pod'"))
                continue
            for k, raw in given.items():
                key_path = f"{path}.{field}[{k}]"
                errs += _resource_name_errors(typ, str(k), key_path)
                try:
                    maps[field][str(k)] = parse_quantity(str(raw))
                except QuantityError as err:
                    errs.append(e.invalid(key_path, raw, str(err)))
        if typ == PVC and "storage" not in maps["min"] and "storage" not in maps["max"]:
            errs.append(e.required(f"{path}.limits", "either minimum or maximum storage value is required, "
                                                     "but neither was provided"))  # fmt: skip
        errs += _bounds_errors(path, maps)
    return errs


def _bounds_errors(path: str, maps: dict[str, dict[str, Quantity]]) -> list[FieldError]:
    errs: list[FieldError] = []
    lo, hi, dflt, req, ratio = maps["min"], maps["max"], maps["default"], maps["defaultRequest"], maps[_MAPS[4]]
    for k in sorted(set().union(*maps.values())):
        mn, mx, d, r, rt = lo.get(k), hi.get(k), dflt.get(k), req.get(k), ratio.get(k)
        s = canonical
        if mn is not None and mx is not None and mn > mx:
            errs.append(e.invalid(f"{path}.min[{k}]", s(mn), f"min value {s(mn)} is greater than max value {s(mx)}"))
        if r is not None and mn is not None and mn > r:
            errs.append(e.invalid(f"{path}.defaultRequest[{k}]", s(r),
                                  f"min value {s(mn)} is greater than default request value {s(r)}"))  # fmt: skip
        if r is not None and mx is not None and r > mx:
            errs.append(e.invalid(f"{path}.defaultRequest[{k}]", s(r),
                                  f"default request value {s(r)} is greater than max value {s(mx)}"))  # fmt: skip
        if r is not None and d is not None and r > d:
            errs.append(e.invalid(f"{path}.defaultRequest[{k}]", s(r),
                                  f"default request value {s(r)} is greater than default limit value {s(d)}"))  # fmt: skip
        if d is not None and mn is not None and mn > d:
            errs.append(
                e.invalid(f"{path}.default[{k}]", s(mn), f"min value {s(mn)} is greater than default value {s(d)}")
            )
        if d is not None and mx is not None and d > mx:
            errs.append(
                e.invalid(f"{path}.default[{k}]", s(mx), f"default value {s(d)} is greater than max value {s(mx)}")
            )
        if rt is not None and rt < parse_quantity("1"):
            errs.append(e.invalid(f"{path}.maxLimitRequestRatio[{k}]", s(rt), f"ratio {s(rt)} is less than 1"))
        if rt is not None and mn is not None and mx is not None and not mn.is_zero:
            limit = mx.as_fraction() / mn.as_fraction()
            if rt.as_fraction() > limit:
                errs.append(e.invalid(f"{path}.maxLimitRequestRatio[{k}]", s(rt),
                                      f"ratio {s(rt)} is greater than max/min = {float(limit):f}"))  # fmt: skip
        if not _overcommit_allowed(k) and d is not None and r is not None and d != r:
            errs.append(e.invalid(f"{path}.defaultRequest[{k}]", s(r),
                                  f"default value {s(d)} must equal to defaultRequest value {s(r)} in {k}"))  # fmt: skip
    return errs
