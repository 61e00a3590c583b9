"""What an object costs against a ResourceQuota (upstream: pkg/quota/v1/evaluator/core for pods, services and
claims, apiserver/pkg/quota/v1/generic for object counts): the resources an evaluator understands, which quota
scopes an object falls under, the object's usage, and the constraints a quota puts on it. The admission plugin
charges one object's usage; the resource quota controller adds up everyone's (`usage_stats`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ....api.meta import Object
from ....api.quantity import Quantity
from . import resources as rq
from .resources import ResourceList

CREATE, UPDATE = "CREATE", "UPDATE"
ONE = Quantity(1)

# -- resource names (api/core/v1/types.go) -----------------------------------------------------------------------

PODS, SERVICES, PVCS = "pods", "services", "persistentvolumeclaims"
CPU, MEMORY, EPHEMERAL = "cpu", "memory", "ephemeral-storage"
REQUESTS_PREFIX, LIMITS_PREFIX = "requests.", "limits."
HUGEPAGES_PREFIX, REQUESTS_HUGEPAGES_PREFIX = "hugepages-", "requests.hugepages-"
SERVICES_LOAD_BALANCERS, SERVICES_NODE_PORTS = "services.loadbalancers", "services.nodeports"
REQUESTS_STORAGE = "requests.storage"
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"

# quota scopes
TERMINATING, NOT_TERMINATING = "Terminating", "NotTerminating"
BEST_EFFORT, NOT_BEST_EFFORT = "BestEffort", "NotBestEffort"
PRIORITY_CLASS, CROSS_NAMESPACE_POD_AFFINITY = "PriorityClass", "CrossNamespacePodAffinity"


def object_count_name(group: str, plural: str) -> str:
    """`count/<resource>[.<group>]` (upstream: ObjectCountQuotaResourceNameFor)."""
    return f"count/{plural}" if not group else f"count/{plural}.{group}"


POD_RESOURCES = frozenset({
    object_count_name("", PODS), CPU, MEMORY, EPHEMERAL, REQUESTS_PREFIX + CPU, REQUESTS_PREFIX + MEMORY,
    REQUESTS_PREFIX + EPHEMERAL, LIMITS_PREFIX + CPU, LIMITS_PREFIX + MEMORY, LIMITS_PREFIX + EPHEMERAL, PODS,
})  # fmt: skip
# If a quota holds cpu or memory, every container must state them (upstream calls this a mistake it keeps).
VALIDATION_SET = frozenset({CPU, MEMORY, REQUESTS_PREFIX + CPU, REQUESTS_PREFIX + MEMORY, LIMITS_PREFIX + CPU,
                            LIMITS_PREFIX + MEMORY})  # fmt: skip
SERVICE_RESOURCES = frozenset({object_count_name("", SERVICES), SERVICES, SERVICES_LOAD_BALANCERS, SERVICES_NODE_PORTS})
PVC_RESOURCES = frozenset({PVCS, object_count_name("", PVCS), REQUESTS_STORAGE})

# Resources counted before `count/` existed keep their bare name too (upstream: legacyObjectCountAliases).
LEGACY_OBJECT_COUNT_ALIASES = {
    ("", "configmaps"): "configmaps",
    ("", "resourcequotas"): "resourcequotas",
    ("", "replicationcontrollers"): "replicationcontrollers",
    ("", "secrets"): "secrets",
}

# Never charged: not stored, or never quota-ed (upstream: pkg/quota/v1/install DefaultIgnoredResources).
IGNORED_RESOURCES = frozenset({
    ("", "bindings"), ("", "componentstatuses"), ("", "events"), ("events.k8s.io", "events"),
    ("authentication.k8s.io", "tokenreviews"), ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"), ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"), ("authorization.k8s.io", "selfsubjectrulesreviews"),
})  # fmt: skip


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource_name(name: str) -> bool:
    return not is_native_resource(name) and not name.startswith(REQUESTS_PREFIX)


@dataclass(frozen=True)
class ScopeSelector:
    """One ScopedResourceSelectorRequirement: `scopes: [X]` is `{scopeName: X, operator: Exists}`."""

    scope_name: str
    operator: str = "Exists"
    values: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scopeName": self.scope_name, "operator": self.operator}
        if self.values:
            out["values"] = list(self.values)
        return out


def scope_selectors(quota: Object) -> list[ScopeSelector]:
    spec = quota.get("spec") or {}
    out = [ScopeSelector(str(s)) for s in spec.get("scopes") or []]
    for req in (spec.get("scopeSelector") or {}).get("matchExpressions") or []:
        if isinstance(req, dict):
            out.append(ScopeSelector(str(req.get("scopeName", "")), str(req.get("operator", "")),
                                     tuple(str(v) for v in req.get("values") or [])))  # fmt: skip
    return out


class Evaluator(Protocol):
    group: str
    plural: str

    def handles(self, operation: str, subresource: str) -> bool: ...

    def matching_resources(self, names: Iterable[str]) -> list[str]: ...

    def matches_scope(self, selector: ScopeSelector, obj: Object) -> bool: ...

    def constraints(self, required: list[str], obj: Object) -> str: ...

    def usage(self, obj: Object) -> ResourceList: ...


def matches(evaluator: Evaluator, quota: Object, obj: Object) -> bool:
    """The quota holds at least one resource the evaluator counts, and the object is in every one of its scopes
    (upstream: generic.Matches over status.hard)."""
    hard = ((quota.get("status") or {}).get("hard")) or {}
    if not evaluator.matching_resources(hard):
        return False
    return all(evaluator.matches_scope(s, obj) for s in scope_selectors(quota))


def matching_scopes(evaluator: Evaluator, obj: Object, selectors: list[ScopeSelector]) -> list[ScopeSelector]:
    return [s for s in selectors if evaluator.matches_scope(s, obj)]


def usage_stats(evaluator: Evaluator, items: Iterable[Object], quota: Object, names: Iterable[str]) -> ResourceList:
    """The summed usage of `items` that fall in every scope of `quota`, for `names` (each at least zero)
    (upstream: generic.CalculateUsageStats)."""
    used: ResourceList = {n: rq.ZERO for n in names}
    selectors = scope_selectors(quota)
    for item in items:
        if all(evaluator.matches_scope(s, item) for s in selectors):
            used = rq.add(used, evaluator.usage(item))
    return used


# -- object counts ------------------------------------------------------------------------------------------------


class ObjectCountEvaluator:
    """One per resource: a create costs one `count/<resource>` (and the legacy alias)."""

    def __init__(self, group: str, plural: str) -> None:
        self.group, self.plural = group, plural
        alias = LEGACY_OBJECT_COUNT_ALIASES.get((group, plural))
        self.resource_names = [object_count_name(group, plural), *([alias] if alias else [])]

    def handles(self, operation: str, subresource: str) -> bool:
        return not subresource and operation == CREATE

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n in self.resource_names]

    def matches_scope(self, selector: ScopeSelector, obj: Object) -> bool:
        return False  # no scope covers a plain count (MatchesNoScopeFunc)

    def constraints(self, required: list[str], obj: Object) -> str:
        return ""

    def usage(self, obj: Object) -> ResourceList:
        return {n: ONE for n in self.resource_names}


# -- pods ---------------------------------------------------------------------------------------------------------


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _container_resources(c: dict[str, Any], key: str) -> ResourceList:
    return rq.parse((c.get("resources") or {}).get(key))


def pod_requests(spec: dict[str, Any], key: str = "requests") -> ResourceList:
    """The pod's effective requests (or limits): app containers and sidecars add up, an init container counts with
    the sidecars before it, the pod needs the larger; the overhead is added, to limits only where one is set
    (upstream: component-helpers PodRequests/PodLimits)."""
    total: ResourceList = {}
    for c in _dicts(spec.get("containers")):
        total = rq.add(total, _container_resources(c, key))
    sidecars: ResourceList = {}
    init: ResourceList = {}
    for c in _dicts(spec.get("initContainers")):
        own = _container_resources(c, key)
        if c.get("restartPolicy") == "Always":
            total = rq.add(total, own)
            sidecars = rq.add(sidecars, own)
            current = sidecars
        else:
            current = rq.add(own, sidecars)
        init = rq.max_of(init, current)
    total = rq.max_of(total, init)
    overhead = rq.parse(spec.get("overhead"))
    if key == "requests":
        total = rq.add(total, overhead)
    else:
        total = rq.add(total, {k: v for k, v in overhead.items() if k in total})
    return total


def pod_compute_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """Upstream's podComputeUsageHelper: what requests and limits count as under quota."""
    out: ResourceList = {PODS: ONE}
    for name in (CPU, MEMORY, EPHEMERAL):
        if name in requests:
            out[name] = requests[name]
            out[REQUESTS_PREFIX + name] = requests[name]
        if name in limits:
            out[LIMITS_PREFIX + name] = limits[name]
    for name, q in requests.items():
        if name.startswith(HUGEPAGES_PREFIX):
            out[name] = q
            out[REQUESTS_PREFIX + name] = q
        if is_extended_resource_name(name):
            out[REQUESTS_PREFIX + name] = q
    return out


def _rfc3339(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None


def quota_v1_pod(pod: Object, now: datetime.datetime | None = None) -> bool:
    """Whether a pod still costs compute quota: not terminal, and not stuck past its deletion grace period."""
    if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        return False
    md = pod.get("metadata") or {}
    deleted = _rfc3339(md.get("deletionTimestamp") or "")
    grace = md.get("deletionGracePeriodSeconds")
    if deleted is not None and isinstance(grace, int):
        now = now or datetime.datetime.now(datetime.UTC)
        if now > deleted + datetime.timedelta(seconds=grace):
            return False
    return True


def _qos_class(pod: Object) -> str:
    status_class = (pod.get("status") or {}).get("qosClass")
    if status_class:
        return str(status_class)
    from ...registry.core import qos_class  # the registry's computation; imported late (it imports admission)

    return qos_class(pod.get("spec") or {})


def _uses_cross_namespace_pod_affinity(spec: dict[str, Any]) -> bool:
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = affinity.get(kind) or {}
        terms = _dicts(a.get("requiredDuringSchedulingIgnoredDuringExecution"))
        terms += [
            t.get("podAffinityTerm") or {} for t in _dicts(a.get("preferredDuringSchedulingIgnoredDuringExecution"))
        ]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def _selector_matches(selector: ScopeSelector, value: str) -> bool:
    """The requirement as a label selector over {PriorityClass: value} (the key is always there)."""
    if selector.operator == "In":
        return value in selector.values
    if selector.operator == "NotIn":
        return value not in selector.values
    return selector.operator == "Exists"


class PodEvaluator:
    group, plural = "", PODS

    def __init__(self, clock: Callable[[], datetime.datetime] | None = None) -> None:
        self.clock = clock

    def handles(self, operation: str, subresource: str) -> bool:
        # Updates change no pod resources in v1.32 (in-place resize is alpha and off).
        return operation == CREATE

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        out = []
        for n in names:
            if n in POD_RESOURCES or n.startswith((HUGEPAGES_PREFIX, REQUESTS_HUGEPAGES_PREFIX)):
                out.append(n)
            elif not is_native_resource(n) and n.startswith(REQUESTS_PREFIX):
                out.append(n)
        return out

    def matches_scope(self, selector: ScopeSelector, obj: Object) -> bool:
        spec = obj.get("spec") or {}
        name = selector.scope_name
        if name in (TERMINATING, NOT_TERMINATING):
            deadline = spec.get("activeDeadlineSeconds")
            terminating = isinstance(deadline, int) and deadline >= 0
            return terminating if name == TERMINATING else not terminating
        if name in (BEST_EFFORT, NOT_BEST_EFFORT):
            best_effort = _qos_class(obj) == "BestEffort"
            return best_effort if name == BEST_EFFORT else not best_effort
        if name == PRIORITY_CLASS:
            if selector.operator == "Exists":
                return bool(spec.get("priorityClassName"))
            return _selector_matches(selector, str(spec.get("priorityClassName") or ""))
        if name == CROSS_NAMESPACE_POD_AFFINITY:
            return _uses_cross_namespace_pod_affinity(spec)
        return False

    def constraints(self, required: list[str], obj: Object) -> str:
        """Every container states each cpu/memory resource the quota holds (upstream: must specify ...)."""
        wanted = set(required) & VALIDATION_SET
        missing: dict[str, set[str]] = {}
        spec = obj.get("spec") or {}
        for c in _dicts(spec.get("containers")) + _dicts(spec.get("initContainers")):
            usage = pod_compute_usage(_container_resources(c, "requests"), _container_resources(c, "limits"))
            for name in wanted - set(usage):
                missing.setdefault(name, set()).add(str(c.get("name", "")))
        if not missing:
            return ""
        return "must specify " + "; ".join(f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing))

    def usage(self, obj: Object) -> ResourceList:
        out: ResourceList = {object_count_name("", PODS): ONE}
        if not quota_v1_pod(obj, self.clock() if self.clock else None):
            return out
        spec = obj.get("spec") or {}
        return rq.add(out, pod_compute_usage(pod_requests(spec, "requests"), pod_requests(spec, "limits")))


# -- services -----------------------------------------------------------------------------------------------------


class ServiceEvaluator:
    group, plural = "", SERVICES

    def handles(self, operation: str, subresource: str) -> bool:
        return operation in (CREATE, UPDATE)

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n in SERVICE_RESOURCES]

    def matches_scope(self, selector: ScopeSelector, obj: Object) -> bool:
        return False

    def constraints(self, required: list[str], obj: Object) -> str:
        return ""

    def usage(self, obj: Object) -> ResourceList:
        spec = obj.get("spec") or {}
        out: ResourceList = {object_count_name("", SERVICES): ONE, SERVICES: ONE}
        ports = _dicts(spec.get("ports"))
        kind = spec.get("type")
        if kind == "NodePort":
            out[SERVICES_NODE_PORTS] = Quantity(len(ports))
        elif kind == "LoadBalancer":
            if spec.get("allocateLoadBalancerNodePorts") is False:
                # no node ports are allocated: only those asked for by number count
                out[SERVICES_NODE_PORTS] = Quantity(sum(1 for p in ports if p.get("nodePort")))
            else:
                out[SERVICES_NODE_PORTS] = Quantity(len(ports))
            out[SERVICES_LOAD_BALANCERS] = ONE
        return out


# -- persistent volume claims --------------------------------------------------------------------------------------


def claim_class(claim: Object) -> str:
    """The beta annotation wins over spec.storageClassName (upstream: GetPersistentVolumeClaimClass)."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    return str((claim.get("spec") or {}).get("storageClassName") or "")


def _round_up_to_bytes(q: Quantity) -> Quantity:
    """A fraction of a byte counts as a whole one (upstream: RoundUp(0)), so usage stays whole."""
    if q.exponent >= 0:
        return q
    scale = 10**-q.exponent
    whole = -(-q.coefficient // scale) if q.coefficient > 0 else q.coefficient // scale
    return Quantity(whole, 0, q.format)


class PersistentVolumeClaimEvaluator:
    group, plural = "", PVCS

    def handles(self, operation: str, subresource: str) -> bool:
        return operation in (CREATE, UPDATE)

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        out = []
        for n in names:
            if n in PVC_RESOURCES:
                out.append(n)
            elif STORAGE_CLASS_SUFFIX in n and n.split(STORAGE_CLASS_SUFFIX, 1)[1] in (PVCS, REQUESTS_STORAGE):
                out.append(n)
        return out

    def matches_scope(self, selector: ScopeSelector, obj: Object) -> bool:
        return False

    def constraints(self, required: list[str], obj: Object) -> str:
        return ""

    def usage(self, obj: Object) -> ResourceList:
        out: ResourceList = {PVCS: ONE, object_count_name("", PVCS): ONE}
        cls = claim_class(obj)
        if cls:
            out[cls + STORAGE_CLASS_SUFFIX + PVCS] = ONE
        requested = rq.parse(((obj.get("spec") or {}).get("resources") or {}).get("requests")).get("storage")
        if requested is None:
            return out
        storage = _round_up_to_bytes(requested)
        allocated = rq.parse((obj.get("status") or {}).get("allocatedResources")).get("storage")
        if allocated is not None and allocated > storage:
            storage = _round_up_to_bytes(allocated)  # RecoverVolumeExpansionFailure (beta, on in v1.32)
        out[REQUESTS_STORAGE] = storage
        if cls:
            out[cls + STORAGE_CLASS_SUFFIX + REQUESTS_STORAGE] = storage
        return out


class Registry:
    """The evaluators by (group, resource); a resource without one gets an object count evaluator."""

    def __init__(self, clock: Callable[[], datetime.datetime] | None = None) -> None:
        self.evaluators: dict[tuple[str, str], Evaluator] = {
            ("", PODS): PodEvaluator(clock), ("", SERVICES): ServiceEvaluator(),
            ("", PVCS): PersistentVolumeClaimEvaluator(),
        }  # fmt: skip
        for group, plural in LEGACY_OBJECT_COUNT_ALIASES:
            self.evaluators[(group, plural)] = ObjectCountEvaluator(group, plural)

    def get(self, group: str, plural: str) -> Evaluator:
        found = self.evaluators.get((group, plural))
        if found is None:
            found = self.evaluators[(group, plural)] = ObjectCountEvaluator(group, plural)
        return found
