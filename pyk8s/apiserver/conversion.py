"""Conversion between the versions a resource is served at and the version it is stored in.

Most resources have one version and need nothing but their apiVersion and kind set. Two are served in a
second shape: events.k8s.io/v1 Events are core/v1 Events with renamed fields, and autoscaling/v1
HorizontalPodAutoscalers are autoscaling/v2 ones with only the CPU target in the spec (the rest kept in
annotations, as upstream does, so a v1 round trip loses nothing).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson

from ..api.meta import Object, json_copy
from ..api.resources import Resource
from ..api.selectors import FieldRequirement, FieldSelector
from ..api.types.codec import codec_for

Converter = Callable[[Object], Object]

# core/v1 Event field <-> events.k8s.io/v1 Event field
_EVENT_FIELDS = (
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
)
_SHARED_EVENT_FIELDS = ("eventTime", "series", "reportingInstance", "action", "reason", "related", "type")


def _core_event_to_events(obj: Object) -> Object:
    out: Object = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": obj.get("metadata", {})}
    for f in _SHARED_EVENT_FIELDS:
        if f in obj:
            out[f] = obj[f]
    for core, ev in _EVENT_FIELDS:
        if core in obj:
            out[ev] = obj[core]
    return out


def _events_event_to_core(obj: Object) -> Object:
    out: Object = {"apiVersion": "v1", "kind": "Event", "metadata": obj.get("metadata", {})}
    for f in _SHARED_EVENT_FIELDS:
        if f in obj:
            out[f] = obj[f]
    for core, ev in _EVENT_FIELDS:
        if ev in obj:
            out[core] = obj[ev]
    out.setdefault("involvedObject", {})
    return out


_HPA_METRICS = "autoscaling.alpha.kubernetes.io/metrics"
_HPA_BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_HPA_CURRENT = "autoscaling.alpha.kubernetes.io/current-metrics"
_HPA_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"


def _is_cpu_utilization(m: Object) -> bool:
    r = m.get("resource") or {}
    return (
        m.get("type") == "Resource" and r.get("name") == "cpu" and (r.get("target") or {}).get("type") == "Utilization"
    )


def _hpa_v2_to_v1(obj: Object) -> Object:
    md = copy.deepcopy(obj.get("metadata", {}))
    annotations = dict(md.get("annotations") or {})
    spec2, status2 = obj.get("spec") or {}, obj.get("status") or {}
    spec: Object = {k: spec2[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec2}
    others = []
    for m in spec2.get("metrics") or []:
        if _is_cpu_utilization(m) and "targetCPUUtilizationPercentage" not in spec:
            spec["targetCPUUtilizationPercentage"] = m["resource"]["target"].get("averageUtilization")
        else:
            others.append(m)
    if others:
        annotations[_HPA_METRICS] = orjson.dumps(others).decode()
    if spec2.get("behavior"):
        annotations[_HPA_BEHAVIOR] = orjson.dumps(spec2["behavior"]).decode()
    status: Object = {}
    for k in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"):
        if k in status2:
            status[k] = status2[k]
    current = []
    for m in status2.get("currentMetrics") or []:
        r = m.get("resource") or {}
        if m.get("type") == "Resource" and r.get("name") == "cpu" and "averageUtilization" in (r.get("current") or {}):
            status["currentCPUUtilizationPercentage"] = r["current"]["averageUtilization"]
        else:
            current.append(m)
    if current:
        annotations[_HPA_CURRENT] = orjson.dumps(current).decode()
    if status2.get("conditions"):
        annotations[_HPA_CONDITIONS] = orjson.dumps(status2["conditions"]).decode()
    if annotations:
        md["annotations"] = annotations
    out: Object = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": md, "spec": spec}
    if status or "status" in obj:
        out["status"] = status
    return out


class ConversionError(ValueError):
    """A value that cannot be converted (an annotation that does not hold what it should); the client's input."""


def _annotation_json(annotations: dict[str, str], key: str, want: type) -> Any:
    """The JSON value an autoscaling/v1 annotation carries, of the type `want`."""
    try:
        value = orjson.loads(annotations.pop(key))
    except (orjson.JSONDecodeError, TypeError) as e:
        raise ConversionError(f"the annotation {key} is not valid JSON: {e}") from None
    if not isinstance(value, want):
        kind = "array" if want is list else "object"
        raise ConversionError(f"the annotation {key} must hold a JSON {kind}")
    return value


def _hpa_v1_to_v2(obj: Object) -> Object:
    md = copy.deepcopy(obj.get("metadata", {}))
    annotations = dict(md.get("annotations") or {})
    spec1, status1 = obj.get("spec") or {}, obj.get("status") or {}
    spec: Object = {k: spec1[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec1}
    metrics = []
    if spec1.get("targetCPUUtilizationPercentage") is not None:
        metrics.append(
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": spec1["targetCPUUtilizationPercentage"]},
                },
            }
        )
    if _HPA_METRICS in annotations:
        metrics += _annotation_json(annotations, _HPA_METRICS, list)
    if metrics:
        spec["metrics"] = metrics
    if _HPA_BEHAVIOR in annotations:
        spec["behavior"] = _annotation_json(annotations, _HPA_BEHAVIOR, dict)
    status: Object = {}
    for k in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"):
        if k in status1:
            status[k] = status1[k]
    current = []
    if status1.get("currentCPUUtilizationPercentage") is not None:
        current.append(
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageUtilization": status1["currentCPUUtilizationPercentage"]},
                },
            }
        )
    if _HPA_CURRENT in annotations:
        current += _annotation_json(annotations, _HPA_CURRENT, list)
    if current:
        status["currentMetrics"] = current
    if _HPA_CONDITIONS in annotations:
        status["conditions"] = _annotation_json(annotations, _HPA_CONDITIONS, list)
    if annotations:
        md["annotations"] = annotations
    else:
        md.pop("annotations", None)
    out: Object = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": md, "spec": spec}
    if status or "status" in obj:
        out["status"] = status
    return out


_CONVERTERS: dict[tuple[str, str, str], Converter] = {
    ("v1", "events.k8s.io/v1", "Event"): _core_event_to_events,
    ("events.k8s.io/v1", "v1", "Event"): _events_event_to_core,
    ("autoscaling/v2", "autoscaling/v1", "HorizontalPodAutoscaler"): _hpa_v2_to_v1,
    ("autoscaling/v1", "autoscaling/v2", "HorizontalPodAutoscaler"): _hpa_v1_to_v2,
}


def convert(obj: Object, source: Resource, target: Resource, *, typed: bool = True) -> Object:
    """`obj` (in `source`'s version) as `target` serves it. The input is never changed; when nothing needs
    converting the same dict comes back, so callers must treat the result as read-only too. With `typed` a
    converted object is also put into the target's stored form (callers that store it do that themselves)."""
    if source.group_version == target.group_version:
        if obj.get("apiVersion") == target.api_version and obj.get("kind") == target.kind:
            return obj
        return {
            "apiVersion": target.api_version,
            "kind": target.kind,
            **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")},
        }
    fn = _CONVERTERS.get((source.group_version, target.group_version, target.kind))
    if fn is None:
        raise ValueError(f"no conversion from {source.group_version} to {target.group_version} for {target.kind}")
    converted = fn(obj)
    codec = codec_for(target.group, target.version, target.kind)
    if codec is None or not typed:
        return converted
    if fn in _MOVES_WHOLE_VALUES:
        # Only the top level is new: what it holds are values already in stored form, of the same Go types,
        # but for the series (its count is omitempty in core/v1 and not in events.k8s.io/v1).
        return codec.decode_top(converted, ("series",))
    # In the target's stored form too (its zero values, its omitempty); a copy first, as the converters share
    # values with their input and the decode works in place.
    return codec.decode(json_copy(converted))  # type: ignore[no-any-return]


# Converters that only move whole values between fields of the same Go types (ObjectReference, EventSource,
# EventSeries, MicroTime, ...): what they return needs only its top level put into stored form.
_MOVES_WHOLE_VALUES = {_core_event_to_events, _events_event_to_core}

# events.k8s.io/v1 selects on its own field names, mapped onto the stored core Event's (upstream: the
# events/v1 field label conversion); the core names stay accepted there too.
_EVENTS_FIELD_LABELS = {
    **{
        f"regarding.{f}": f"involvedObject.{f}"
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    },
    "reportingController": "reportingComponent",
}


def convert_field_selector(served: Resource, selector: FieldSelector) -> FieldSelector:
    """A field selector written against `served`'s field names, in the stored version's names."""
    if served.group != "events.k8s.io" or selector.empty:
        return selector
    return FieldSelector(
        tuple(
            FieldRequirement(_EVENTS_FIELD_LABELS.get(r.field, r.field), r.op, r.value) for r in selector.requirements
        )
    )
