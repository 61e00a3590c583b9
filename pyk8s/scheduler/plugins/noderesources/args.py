"""Defaults and validation of the NodeResources plugins' args (upstream: apis/config/v1/defaults.go
SetDefaults_NodeResourcesFitArgs / SetDefaults_NodeResourcesBalancedAllocationArgs and
apis/config/validation/validation_pluginargs.go ValidateNodeResourcesFitArgs /
ValidateNodeResourcesBalancedAllocationArgs).

Args arrive in the v1 JSON shape (camelCase keys) and may be None or partial; `fit_args` and
`balanced_allocation_args` apply the v1 defaults, validate, and return the typed form the plugins use.
Invalid args raise ValueError carrying upstream's aggregated field error text.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ....api import errors
from ....api.errors import FieldError
from ....api.validation import is_qualified_name

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SUPPORTED_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)  # sorted, as listed

# The highest score a RequestedToCapacityRatio shape point may give (upstream: config.MaxCustomPriorityScore).
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


def default_resources() -> list[dict[str, Any]]:
    return [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource a scorer looks at and its weight (upstream: config.ResourceSpec)."""

    name: str
    weight: int


@dataclass(frozen=True, slots=True)
class FitArgs:
    ignored_resources: frozenset[str]
    ignored_resource_groups: frozenset[str]
    strategy: str
    resources: tuple[ResourceSpec, ...]
    shape: tuple[tuple[int, int], ...] | None  # (utilization, score) points of RequestedToCapacityRatio


@dataclass(frozen=True, slots=True)
class BalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...]


def _aggregate(errs: list[FieldError]) -> str:
    """Upstream's aggregate error text: one message alone, several in brackets (duplicates dropped)."""
    msgs: list[str] = []
    for e in errs:
        m = str(e)
        if m not in msgs:
            msgs.append(m)
    return msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"


def _as_int(value: Any, field: str) -> int:
    # The v1 types are int32/int64; anything else cannot have come from a well-formed config.
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise ValueError(f"{field}: Invalid value: {value!r}: must be an integer")
    return int(value)


def _str_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{field}: Invalid value: {value!r}: must be a list of strings")
    return list(value)


def _resource_specs(items: Any, field: str) -> list[dict[str, Any]]:
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(r, dict) for r in items):
        raise ValueError(f"{field}: Invalid value: {items!r}: must be a list of resources")
    return [dict(r) for r in items]


def _apply_weight_defaults(resources: list[dict[str, Any]], field: str) -> None:
    # v1 defaulting: an unset (or zero) weight becomes 1.
    for i, r in enumerate(resources):
        w = r.get("weight")
        r["weight"] = 1 if w is None else _as_int(w, f"{field}[{i}].weight")
        if r["weight"] == 0:
            r["weight"] = 1
        if not isinstance(r.get("name", ""), str):
            raise ValueError(f"{field}[{i}].name: Invalid value: {r.get('name')!r}: must be a string")


def _validate_label_name(value: str, field: str) -> list[FieldError]:
    return [errors.invalid(field, value, msg) for msg in is_qualified_name(value)]


def _validate_resources(resources: list[dict[str, Any]], field: str) -> list[FieldError]:
    errs = []
    for i, r in enumerate(resources):
        w = r["weight"]
        if w <= 0 or w > 100:
            name = r.get("name", "")
            errs.append(
                errors.invalid(f"{field}[{i}].weight", w, f"resource weight of {name} not in valid range (0, 100]")
            )
    return errs


def _validate_shape(shape: list[tuple[int, int]], field: str) -> list[FieldError]:
    if not shape:
        return [errors.required(field, "at least one point must be specified")]
    errs = []
    for i in range(1, len(shape)):
        if shape[i - 1][0] >= shape[i][0]:
            errs.append(
                errors.invalid(f"{field}[{i}].utilization", shape[i][0], "values must be sorted in increasing order")
            )
            break
    for i, (utilization, score) in enumerate(shape):
        if utilization < 0 or utilization > MAX_UTILIZATION:
            errs.append(
                errors.invalid(f"{field}[{i}].utilization", utilization, f"not in valid range [0, {MAX_UTILIZATION}]")
            )
        if score < 0 or score > MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(
                errors.invalid(f"{field}[{i}].score", score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
            )
    return errs


def fit_args(args: dict[str, Any] | None) -> FitArgs:
    """NodeResourcesFitArgs defaulted as v1 does, then validated as ValidateNodeResourcesFitArgs."""
    a = copy.deepcopy(args) if args else {}
    strategy = a.get("scoringStrategy")
    if strategy is None:
        strategy = {"type": LEAST_ALLOCATED, "resources": default_resources()}
    elif not isinstance(strategy, dict):
        raise ValueError(f"scoringStrategy: Invalid value: {strategy!r}: must be an object")
    resources = _resource_specs(strategy.get("resources"), "scoringStrategy.resources")
    if not resources:
        resources = default_resources()
    _apply_weight_defaults(resources, "scoringStrategy.resources")
    ignored = _str_list(a.get("ignoredResources"), "ignoredResources")
    groups = _str_list(a.get("ignoredResourceGroups"), "ignoredResourceGroups")

    errs: list[FieldError] = []
    for i, name in enumerate(ignored):
        errs.extend(_validate_label_name(name, f"ignoredResources[{i}]"))
    for i, group in enumerate(groups):
        if "/" in group:
            errs.append(errors.invalid(f"ignoredResourceGroups[{i}]", group, "resource group name can't contain '/'"))
        errs.extend(_validate_label_name(group, f"ignoredResourceGroups[{i}]"))
    stype = strategy.get("type", "")
    if stype not in SUPPORTED_STRATEGIES:
        errs.append(errors.not_supported("scoringStrategy.type", stype, SUPPORTED_STRATEGIES))
    errs.extend(_validate_resources(resources, "scoringStrategy.resources"))
    shape: tuple[tuple[int, int], ...] | None = None
    rtcr = strategy.get("requestedToCapacityRatio")
    if rtcr is not None:
        points = (rtcr or {}).get("shape") or []
        shape = tuple(
            (
                _as_int(p.get("utilization", 0), f"scoringStrategy.shape[{i}].utilization"),
                _as_int(p.get("score", 0), f"scoringStrategy.shape[{i}].score"),
            )
            for i, p in enumerate(points)
        )
        # v1.32 reports shape errors under "scoringStrategy.shape" (not under requestedToCapacityRatio).
        errs.extend(_validate_shape(list(shape), "scoringStrategy.shape"))
    elif stype == REQUESTED_TO_CAPACITY_RATIO:
        # v1.32 has no check here and dereferences nil when building the scorer; later releases reject it so.
        errs.append(
            errors.required(
                "scoringStrategy.requestedToCapacityRatio", "must be specified when type is RequestedToCapacityRatio"
            )
        )
    if errs:
        raise ValueError(_aggregate(errs))
    return FitArgs(
        ignored_resources=frozenset(ignored),
        ignored_resource_groups=frozenset(groups),
        strategy=stype,
        resources=tuple(ResourceSpec(r.get("name", ""), r["weight"]) for r in resources),
        shape=shape,
    )


def balanced_allocation_args(args: dict[str, Any] | None) -> BalancedAllocationArgs:
    """NodeResourcesBalancedAllocationArgs defaulted as v1 does, then validated as upstream."""
    a = copy.deepcopy(args) if args else {}
    resources = _resource_specs(a.get("resources"), "resources")
    if not resources:
        resources = default_resources()
    _apply_weight_defaults(resources, "resources")
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, r in enumerate(resources):
        name = r.get("name", "")
        if name in seen:
            errs.append(errors.duplicate(f"resources[{i}].name", name))
        else:
            seen.add(name)
        if r["weight"] != 1:
            errs.append(errors.invalid(f"resources[{i}].weight", r["weight"], "must be 1"))
    if errs:
        raise ValueError(_aggregate(errs))
    return BalancedAllocationArgs(resources=tuple(ResourceSpec(r.get("name", ""), r["weight"]) for r in resources))
