"""The sizes an OpenAPI schema allows, for estimating the cost of x-kubernetes-validations rules, and upstream's
cost limits and messages (upstream: apiserver pkg/cel/common schemas.go estimateMax*, apiextensions-apiserver
pkg/apis/apiextensions/validation cel_validation.go's cardinality and validation.go's getCostErrorMessage).
"""

from __future__ import annotations

from typing import Any

from ...cel.checked import SizeInfo

MAX_REQUEST_SIZE = 3 * 1024 * 1024  # celconfig.MaxRequestSizeBytes
PER_CALL_LIMIT = 1_000_000  # celconfig.PerCallLimit
RUNTIME_BUDGET = 10_000_000  # celconfig.RuntimeCELCostBudget
STATIC_RULE_LIMIT = 10_000_000  # StaticEstimatedCostLimit
STATIC_CRD_LIMIT = 100_000_000  # StaticEstimatedCRDCostLimit

# The JSON sizes upstream assumes for time strings (apiserver pkg/cel/types.go).
_MAX_DURATION_JSON = 32
_JSON_DATE = 12
_MAX_DATETIME_JSON = 37


def min_serialized_size(s: Any) -> int:
    """The fewest bytes a value of `s` takes in JSON (upstream: DeclType.MinSerializedSize)."""
    if not isinstance(s, dict) or s.get("x-kubernetes-int-or-string") is True:
        return 1
    t = s.get("type")
    if t == "object":
        props = s.get("properties")
        if isinstance(props, dict) and props:
            required = set(s.get("required") or ())
            return 2 + sum(len(name) + min_serialized_size(p) + 4 for name, p in props.items()
                           if name in required and isinstance(p, dict) and p.get("default") is None)  # fmt: skip
        return 2
    if t in ("array", "string"):
        return 2
    if t == "boolean":
        return 4
    return 1


def _string_max(s: dict[str, Any]) -> int:
    fmt = s.get("format") or ""
    max_length = s.get("maxLength")
    if fmt == "byte":
        return max(0, max_length) if isinstance(max_length, int) else MAX_REQUEST_SIZE - 2
    if fmt == "duration":
        return _MAX_DURATION_JSON
    if fmt == "date":
        return _JSON_DATE
    if fmt == "date-time":
        return _MAX_DATETIME_JSON
    if isinstance(max_length, int):
        return max(0, max_length) * 4
    enum = s.get("enum")
    if isinstance(enum, list) and enum:
        return max((len(v) for v in enum if isinstance(v, str)), default=0)
    return MAX_REQUEST_SIZE - 2


def max_elements(s: Any) -> int:
    """The most elements (items, properties, characters) a value of `s` can have in one request."""
    if not isinstance(s, dict) or s.get("x-kubernetes-int-or-string") is True:
        return MAX_REQUEST_SIZE - 2
    t = s.get("type")
    if t == "array":
        limit = s.get("maxItems")
        if isinstance(limit, int):
            return max(0, limit)
        return (MAX_REQUEST_SIZE - 2) // (min_serialized_size(s.get("items")) + 1)
    if t == "object":
        additional = s.get("additionalProperties")
        if isinstance(additional, dict) and not s.get("properties"):
            limit = s.get("maxProperties")
            if isinstance(limit, int):
                return max(0, limit)
            return (MAX_REQUEST_SIZE - 2) // (min_serialized_size(additional) + 6)
        return len(s.get("properties") or ()) or MAX_REQUEST_SIZE - 2
    if t == "string":
        return _string_max(s)
    return 1


def size_info(s: Any) -> SizeInfo:
    """The estimator's view of schema `s`, built lazily through properties, items and additionalProperties."""
    info = SizeInfo(max_elements(s))
    if isinstance(s, dict):
        props = s.get("properties")
        if isinstance(props, dict):
            info.props = {name: size_info(p) for name, p in props.items()}
        if isinstance(s.get("items"), dict):
            info.elem = size_info(s["items"])
        elif isinstance(s.get("additionalProperties"), dict):
            info.elem = size_info(s["additionalProperties"])
    return info


def unbounded_cardinality(s: Any) -> int:
    """How often a node of schema `s` can appear in a request when an ancestor list or map is unbounded."""
    return MAX_REQUEST_SIZE // (min_serialized_size(s) + 1)


def cost_error_message(name: str, cost: int, limit: int) -> str:
    factor = cost / limit
    if factor > 100.0:
        text = "more than 100x"
    elif factor < 1.5:
        text = f"{factor:f}x"
    else:
        text = f"{factor:.1f}x"
    return (f"{name} exceeds budget by factor of {text} (try simplifying the rule, or adding maxItems, "
            "maxProperties, and maxLength where arrays, maps, and strings are declared)")  # fmt: skip
