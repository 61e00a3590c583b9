"""LimitRanger (upstream: plugin/pkg/admission/limitranger/admission.go): the LimitRanges of a namespace default
the requests and limits of a new pod's containers (`default` -> limits, `defaultRequest` -> requests, recorded in
the `kubernetes.io/limit-ranger` annotation) and hold containers, pods and claims to their min, max and
maxLimitRequestRatio. Pod updates are not looked at (containers' resources cannot change, as in v1.32).

A LimitRange's items are defaulted as upstream's v1 defaulting does (`SetDefaults_LimitRangeItem`: default <-
max, defaultRequest <- default, defaultRequest <- min) before they are applied.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ...api.meta import Object, json_copy
from ...api.quantity import Quantity, QuantityError, milli_value, parse_quantity, value
from . import CREATE, UPDATE, Attributes, reads
from .errors import new_forbidden

LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"
LIVE_LOOKUP_TTL = 30.0
MAX_MILLI_VALUE = ((1 << 63) - 1) // 1000  # resource.MaxMilliValue

ResourceList = dict[str, Quantity]


def resource_list(value_: Any) -> ResourceList:
    """A ResourceList of a stored object; a quantity that does not parse is left out (validation refused it)."""
    out: ResourceList = {}
    if isinstance(value_, dict):
        for k, v in value_.items():
            try:
                out[str(k)] = parse_quantity(str(v))
            except QuantityError:
                continue
    return out


def default_item(item: dict[str, Any]) -> dict[str, Any]:
    """A copy of a LimitRange item with upstream's v1 defaults (SetDefaults_LimitRangeItem)."""
    item = json_copy(item)
    if item.get("type") == "Container":
        if not isinstance(item.get("default"), dict):
            item["default"] = {}
        if not isinstance(item.get("defaultRequest"), dict):
            item["defaultRequest"] = {}
        default, request = item["default"], item["defaultRequest"]
        for k, v in (item.get("max") or {}).items():
            default.setdefault(k, v)
        for k, v in default.items():
            request.setdefault(k, v)
        for k, v in (item.get("min") or {}).items():
            request.setdefault(k, v)
    return item


def _items(limit_range: Object) -> list[dict[str, Any]]:
    limits = (limit_range.get("spec") or {}).get("limits")
    return [default_item(i) for i in limits if isinstance(i, dict)] if isinstance(limits, list) else []


# -- the constraints, worded as upstream --------------------------------------------------------------------------


def min_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList, limit: ResourceList) -> str:
    if name not in request:
        return f"minimum {name} usage per {limit_type} is {enforced}.  No request is specified"
    if enforced > request[name]:
        return f"minimum {name} usage per {limit_type} is {enforced}, but request is {request[name]}"
    if name in limit and enforced > limit[name]:
        return f"minimum {name} usage per {limit_type} is {enforced}, but limit is {limit[name]}"
    return ""


def max_request_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList) -> str:
    """For kinds whose limits mean nothing (claims): the max holds the request."""
    if name not in request:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No request is specified"
    if request[name] > enforced:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {request[name]}"
    return ""


def max_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList, limit: ResourceList) -> str:
    if name not in limit:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No limit is specified"
    if limit[name] > enforced:
        return f"maximum {name} usage per {limit_type} is {enforced}, but limit is {limit[name]}"
    if name in request and request[name] > enforced:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {request[name]}"
    return ""


def _enforced_values(request: Quantity, limit: Quantity, enforced: Quantity) -> tuple[int, int, int]:
    """Upstream's requestLimitEnforcedValues: milli-units when none of the three would overflow, else units."""
    r, lim, e = value(request), value(limit), value(enforced)
    if r <= MAX_MILLI_VALUE and lim <= MAX_MILLI_VALUE and e <= MAX_MILLI_VALUE:
        return milli_value(request), milli_value(limit), milli_value(enforced)
    return r, lim, e


def limit_request_ratio_constraint(
    limit_type: str, name: str, enforced: Quantity, request: ResourceList, limit: ResourceList
) -> str:
    zero = parse_quantity("0")
    observed_request, observed_limit, _ = _enforced_values(request.get(name, zero), limit.get(name, zero), enforced)
    if name not in request or observed_request == 0:
        return (f"{name} max limit to request ratio per {limit_type} is {enforced}, "
                "but no request is specified or request is 0")  # fmt: skip
    if name not in limit or observed_limit == 0:
        return (f"{name} max limit to request ratio per {limit_type} is {enforced}, "
                "but no limit is specified or limit is 0")  # fmt: skip
    # Upstream compares in float64, the ratio scaled by a thousand when the enforced value allows it.
    observed = float(observed_limit) / float(observed_request)
    shown = observed
    allowed = float(value(enforced))
    if value(enforced) <= MAX_MILLI_VALUE:
        observed *= 1000
        allowed = float(milli_value(enforced))
    if observed > allowed:
        return (f"{name} max limit to request ratio per {limit_type} is {enforced}, "
                f"but provided ratio is {shown:f}")  # fmt: skip
    return ""


def aggregate(messages: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message as is, several as `[a, b]`, repeats dropped."""
    seen: list[str] = []
    for m in messages:
        if m and m not in seen:
            seen.append(m)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]" if seen else ""


# -- pods and claims ------------------------------------------------------------------------------------------------


def _containers(spec: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value_ = spec.get(key)
    return [c for c in value_ if isinstance(c, dict)] if isinstance(value_, list) else []


def _resources(container: dict[str, Any], key: str) -> ResourceList:
    return resource_list((container.get("resources") or {}).get(key))


def _add(into: ResourceList, more: ResourceList) -> None:
    for k, v in more.items():
        into[k] = into[k] + v if k in into else v


def _max(into: ResourceList, other: ResourceList) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def pod_resources(spec: dict[str, Any], key: str) -> ResourceList:
    """The pod's effective requests or limits (upstream: the limit ranger's podRequests/podLimits, spec only):
    app containers and sidecars add up; an ordinary init container counts with the sidecars started before it,
    and the pod needs the most of that or the running total."""
    total: ResourceList = {}
    for c in _containers(spec, "containers"):
        _add(total, _resources(c, key))
    sidecars: ResourceList = {}
    init: ResourceList = {}
    for c in _containers(spec, "initContainers"):
        own = _resources(c, key)
        if c.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            current = dict(sidecars)
        else:
            current = dict(own)
            _add(current, sidecars)
        _max(init, current)
    _max(total, init)
    return total


def _check(item: dict[str, Any], limit_type: str, request: ResourceList, limit: ResourceList) -> list[str]:
    out: list[str] = []
    for name, enforced in sorted(resource_list(item.get("min")).items()):
        out.append(min_constraint(limit_type, name, enforced, request, limit))
    for name, enforced in sorted(resource_list(item.get("max")).items()):
        out.append(max_constraint(limit_type, name, enforced, request, limit))
    for name, enforced in sorted(resource_list(item.get("maxLimitRequestRatio")).items()):
        out.append(limit_request_ratio_constraint(limit_type, name, enforced, request, limit))
    return [m for m in out if m]


def validate_pod(limit_range: Object, pod: Object) -> str:
    spec = pod.get("spec") or {}
    errs: list[str] = []
    for item in _items(limit_range):
        if item.get("type") == "Container":
            for key in ("containers", "initContainers"):
                for c in _containers(spec, key):
                    errs += _check(item, "Container", _resources(c, "requests"), _resources(c, "limits"))
        elif item.get("type") == "Pod":
            errs += _check(item, "Pod", pod_resources(spec, "requests"), pod_resources(spec, "limits"))
    return aggregate(errs)


def validate_claim(limit_range: Object, claim: Object) -> str:
    requests = resource_list(((claim.get("spec") or {}).get("resources") or {}).get("requests"))
    errs: list[str] = []
    for item in _items(limit_range):
        if item.get("type") != "PersistentVolumeClaim":
            continue
        for name, enforced in sorted(resource_list(item.get("min")).items()):
            errs.append(min_constraint("PersistentVolumeClaim", name, enforced, requests, {}))
        for name, enforced in sorted(resource_list(item.get("max")).items()):
            errs.append(max_request_constraint("PersistentVolumeClaim", name, enforced, requests))
    return aggregate([e for e in errs if e])


def mutate_pod(limit_range: Object, pod: Object) -> None:
    """Fill in the defaults of `type: Container` items that a container lacks, and say so in the annotation."""
    default_limits: dict[str, Any] = {}
    default_requests: dict[str, Any] = {}
    for item in _items(limit_range):
        if item.get("type") == "Container":
            default_requests.update(item.get("defaultRequest") or {})
            default_limits.update(item.get("default") or {})
    spec = pod.get("spec") or {}
    notes: list[str] = []
    for key, what in (("containers", "container"), ("initContainers", "init container")):
        for c in _containers(spec, key):
            res = c.get("resources")
            if not isinstance(res, dict):
                res = c["resources"] = {}
            set_requests, set_limits = [], []
            for field, defaults, changed in (("limits", default_limits, set_limits),
                                             ("requests", default_requests, set_requests)):  # fmt: skip
                if not defaults:
                    continue
                current = res.get(field)
                if not isinstance(current, dict):
                    current = res[field] = {}
                for k, v in defaults.items():
                    if k not in current:
                        current[k] = v
                        changed.append(k)
            name = c.get("name", "")
            if set_requests:
                notes.append(", ".join(sorted(set_requests)) + f" request for {what} {name}")
            if set_limits:
                notes.append(", ".join(sorted(set_limits)) + f" limit for {what} {name}")
    if notes:
        md = pod.setdefault("metadata", {})
        md.setdefault("annotations", {})
        if not isinstance(md["annotations"], dict):
            md["annotations"] = {}
        md["annotations"][LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


# -- the plugin ---------------------------------------------------------------------------------------------------


class LimitRanger:
    name = "LimitRanger"

    def __init__(self, host: Any, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.host = host
        self.clock = clock
        self._live: dict[str, tuple[float, list[Object]]] = {}  # namespace -> (expiry, items): upstream's LRU

    def _supports(self, a: Attributes) -> bool:
        if a.operation not in (CREATE, UPDATE) or a.subresource or a.resource.group != "" or a.object is None:
            return False
        if a.resource.plural == "pods":
            return a.operation == CREATE
        return a.resource.plural == "persistentvolumeclaims"

    async def limit_ranges(self, namespace: str) -> list[Object]:
        """The cached LimitRanges; none cached, a live list remembered for 30 s (the cache may lag)."""
        items = reads.cached_list(self.host, "v1", "limitranges", namespace)
        if items:
            return items
        now = self.clock()
        found = self._live.get(namespace)
        if found is None or found[0] < now:
            if len(self._live) > 10000:
                self._live.clear()
            found = (now + LIVE_LOOKUP_TTL, await reads.live_list(self.host, "v1", "limitranges", namespace))
            self._live[namespace] = found
        return found[1]

    def _ignored(self, a: Attributes) -> bool:
        return not self._supports(a) or bool(((a.old_object or {}).get("metadata") or {}).get("deletionTimestamp"))

    async def admit(self, a: Attributes) -> None:
        if self._ignored(a) or a.resource.plural != "pods":
            return
        assert a.object is not None
        ranges = await self.limit_ranges(a.namespace)
        if not ranges:
            return
        before = json_copy(a.object.get("spec"))
        for lr in ranges:
            mutate_pod(lr, a.object)
        if a.object.get("spec") != before:
            # pyk8s sets a new pod's QoS class before admission (upstream: after); the defaults may change it.
            from ..registry.core import qos_class

            status = a.object.get("status")
            if isinstance(status, dict) and "qosClass" in status:
                status["qosClass"] = qos_class(a.object.get("spec") or {})

    async def validate(self, a: Attributes) -> None:
        if self._ignored(a):
            return
        assert a.object is not None
        check = validate_pod if a.resource.plural == "pods" else validate_claim
        for lr in await self.limit_ranges(a.namespace):
            problem = check(lr, a.object)
            if problem:
                raise new_forbidden(a, problem)
