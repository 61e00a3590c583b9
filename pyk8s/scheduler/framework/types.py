"""What the scheduler derives from pods and nodes, once per object (upstream: framework/types.go):
resource vectors (`Resource`, `pod_requests`), a pod's parsed affinity terms (`PodInfo`), a node with the pods
on it and their sums (`NodeInfo`), and a pod waiting in the queue (`QueuedPodInfo`).

Objects stay plain dicts (the house rule); these wrap them and keep the derived form beside the dict.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ...api.errors import aggregate
from ...api.quantity import milli_value, parse_quantity, value
from ...api.selectors import EVERYTHING, LabelSelector, SelectorError, label_selector_from_object
from .features import process_gates
from .image_states import ImageStateSummary
from .interface import Node, Pod

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"

# What a container without a request counts as when spreading load (upstream: schedutil.DefaultMilliCPURequest,
# DefaultMemoryRequest); used only by scoring, never by Filter.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def is_scalar_resource(name: str) -> bool:
    """Extended and prefixed-native (domain/name), hugepages-* and attachable-volumes-* resources (upstream:
    IsScalarResourceName)."""
    return (
        name.startswith("hugepages-")
        or name.startswith("attachable-volumes-")
        or ("/" in name and not name.startswith("requests."))
    )


def quantity_value(name: str, text: Any) -> int:
    """A resource quantity as the scheduler counts it: millicores for cpu, whole units for the rest."""
    q = parse_quantity(str(text))
    return milli_value(q) if name == CPU else value(q)


@dataclass(slots=True)
class Resource:
    """Amounts of compute resources (upstream: framework.Resource); cpu in millicores."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, resources: dict[str, Any] | None) -> Resource:
        r = cls()
        r.add_list(resources)
        return r

    def add_list(self, resources: dict[str, Any] | None) -> None:
        for name, q in (resources or {}).items():
            self.add_one(name, quantity_value(name, q))

    def add_one(self, name: str, amount: int) -> None:
        if name == CPU:
            self.milli_cpu += amount
        elif name == MEMORY:
            self.memory += amount
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage += amount
        elif name == PODS:
            self.allowed_pod_number += amount
        elif is_scalar_resource(name):
            self.scalar[name] = self.scalar.get(name, 0) + amount

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def add(self, other: Resource, sign: int = 1) -> None:
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        self.allowed_pod_number += sign * other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + sign * v

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)
        for k, v in other.scalar.items():
            self.scalar[k] = max(self.scalar.get(k, 0), v)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar))

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or any(self.scalar.values()))


# Quantities repeat across pods ("100m", "1Gi"), and parsing one is the dominant cost of a pod's requests.
_quantity = lru_cache(maxsize=16384)(quantity_value)


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """What a pod's requests are computed with besides the pod (upstream: resourcehelper.PodResourcesOptions).

    `status_resources` (UseStatusResources, on with the InPlacePodVerticalScaling gate): a container whose status
    reports resources counts the larger of its spec's and its status's request of each resource, or only its
    status's while the pod's resize is Infeasible. `pod_level` (not SkipPodLevelResources, on with the
    PodLevelResources gate): the cpu and memory of the pod's spec.resources.requests replace the containers' sum.
    """

    status_resources: bool = False
    pod_level: bool = False


NO_GATES = RequestOptions()

# The resources spec.resources may set in v1.32 (upstream: IsSupportedPodLevelResource); hugepages came in v1.33.
POD_LEVEL_RESOURCES = (CPU, MEMORY)


def _container_requests(container: dict[str, Any]) -> tuple[Resource, Resource]:
    """A container's requests as they are, and with the scheduler's defaults for a missing cpu/memory."""
    requests = (container.get("resources") or {}).get("requests") or {}
    r = Resource()
    for name, q in requests.items():
        r.add_one(name, _quantity(name, q))
    nz = r.clone()
    if CPU not in requests:
        nz.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
    if MEMORY not in requests:
        nz.memory = DEFAULT_MEMORY_REQUEST
    return r, nz


def _combine(apps: list[Resource], inits: list[tuple[Resource, bool]], overhead: dict[str, Any] | None) -> Resource:
    # Same rule as types.pod_requests: app containers and sidecars add up; a plain init container needs its own
    # requests plus the sidecars started before it; the pod needs the larger of the two; then the overhead.
    total = Resource()
    for r in apps:
        total.add(r)
    sidecars = Resource()
    init_peak = Resource()
    for r, sidecar in inits:
        if sidecar:
            total.add(r)
            sidecars.add(r)
            peak = sidecars.clone()
        else:
            peak = r.clone()
            peak.add(sidecars)
        init_peak.set_max(peak)
    total.set_max(init_peak)
    if overhead:
        for name, q in overhead.items():
            total.add_one(name, _quantity(name, q))
    return total


def _spec_requests_pair(spec: dict[str, Any]) -> tuple[Resource, Resource]:
    """pod_requests_pair without the gated options: the containers' requests alone."""
    if not spec.get("initContainers") and not spec.get("overhead"):
        # The common shape, summed directly: the two totals differ only in cpu/memory defaults.
        total = Resource()
        nz_cpu = nz_mem = 0
        for c in spec.get("containers") or ():
            requests = (c.get("resources") or {}).get("requests") or {}
            for name, q in requests.items():
                total.add_one(name, _quantity(name, q))
            nz_cpu += _quantity(CPU, requests[CPU]) if CPU in requests else DEFAULT_MILLI_CPU_REQUEST
            nz_mem += _quantity(MEMORY, requests[MEMORY]) if MEMORY in requests else DEFAULT_MEMORY_REQUEST
        nz = total.clone()
        nz.milli_cpu, nz.memory = nz_cpu, nz_mem
        return total, nz
    apps, apps_nz = [], []
    for c in spec.get("containers") or ():
        r, nz = _container_requests(c)
        apps.append(r)
        apps_nz.append(nz)
    inits, inits_nz = [], []
    for c in spec.get("initContainers") or ():
        r, nz = _container_requests(c)
        sidecar = c.get("restartPolicy") == "Always"
        inits.append((r, sidecar))
        inits_nz.append((nz, sidecar))
    overhead = spec.get("overhead")
    return _combine(apps, inits, overhead), _combine(apps_nz, inits_nz, overhead)


def _pod_level_requests(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The supported resources of spec.resources.requests, None when it names none (upstream:
    IsPodLevelRequestsSet)."""
    requests = (spec.get("resources") or {}).get("requests") or {}
    found = {name: requests[name] for name in POD_LEVEL_RESOURCES if name in requests}
    return found or None


def _larger_of(spec_requests: dict[str, Any], status_requests: dict[str, Any]) -> dict[str, Any]:
    """Each resource's larger request of the two lists, the status's on a tie (upstream: resourcehelper's max)."""
    out = dict(status_requests)
    for name, q in spec_requests.items():
        if name in status_requests and parse_quantity(str(q)) <= parse_quantity(str(status_requests[name])):
            continue
        out[name] = q
    return out


def _resized_app_requests(pod: Pod, spec: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The app containers' request lists with what their statuses report taken in (upstream:
    AggregateContainerRequests with UseStatusResources; init containers are never resized); None when no
    container status reports resources."""
    status = pod.get("status") or {}
    reported = {
        cs.get("name", ""): cs["resources"]
        for cs in status.get("containerStatuses") or ()
        if cs.get("resources") is not None
    }
    if not reported:
        return None
    infeasible = status.get("resize") == "Infeasible"
    out = []
    for c in spec.get("containers") or ():
        requests = (c.get("resources") or {}).get("requests") or {}
        got = reported.get(c.get("name", ""))
        if got is not None:
            status_requests = got.get("requests") or {}
            requests = dict(status_requests) if infeasible else _larger_of(requests, status_requests)
        out.append(requests)
    return out


def _requests_total(
    apps: list[dict[str, Any]],
    inits: list[tuple[dict[str, Any], bool]],
    default_cpu: bool,
    default_memory: bool,
    pod_level: dict[str, Any] | None,
    overhead: dict[str, Any],
) -> Resource:
    """upstream's PodRequests over explicit request lists: containers (with the defaults for a missing cpu/memory
    asked for, NonMissingContainerRequests), then the pod-level cpu/memory in place of the containers', then the
    overhead."""

    def one(requests: dict[str, Any]) -> Resource:
        r = Resource()
        for name, q in requests.items():
            r.add_one(name, _quantity(name, q))
        if default_cpu and CPU not in requests:
            r.milli_cpu += DEFAULT_MILLI_CPU_REQUEST
        if default_memory and MEMORY not in requests:
            r.memory += DEFAULT_MEMORY_REQUEST
        return r

    total = _combine([one(r) for r in apps], [(one(r), sidecar) for r, sidecar in inits], None)
    for name, q in (pod_level or {}).items():
        if name == CPU:
            total.milli_cpu = _quantity(CPU, q)
        else:
            total.memory = _quantity(MEMORY, q)
    for name, q in overhead.items():
        total.add_one(name, _quantity(name, q))
    return total


def pod_requests_pair(
    pod: Pod, opts: RequestOptions = NO_GATES, *, defaults_everywhere: bool = False
) -> tuple[Resource, Resource]:
    """A pod's requests (upstream: resourcehelper.PodRequests) and the same with the scheduler's defaults for
    a container without a cpu or memory request (what scoring counts), in one pass.

    The sum of the app containers and restartable init containers ("sidecars", which keep running), or, if
    larger, the peak of any plain init container plus the sidecars started before it; with `opts.pod_level`, the
    pod-level cpu/memory requests instead; then the pod overhead.

    The defaults are those of NodeInfo's accounting (upstream: framework.calculateResource): for a pod with
    pod-level requests, only a cpu or memory that the pod's requests do not name at all gets the containers'
    defaults. `defaults_everywhere` is the scorers' rule instead (calculatePodResourceRequest): every container
    without a cpu/memory request gets the default before the pod-level values replace the sum.
    """
    spec = pod.get("spec") or {}
    pod_level = _pod_level_requests(spec) if opts.pod_level else None
    apps = _resized_app_requests(pod, spec) if opts.status_resources else None
    if pod_level is None and apps is None:
        return _spec_requests_pair(spec)
    if apps is None:
        apps = [(c.get("resources") or {}).get("requests") or {} for c in spec.get("containers") or ()]
    inits = [
        ((c.get("resources") or {}).get("requests") or {}, c.get("restartPolicy") == "Always")
        for c in spec.get("initContainers") or ()
    ]
    overhead = spec.get("overhead") or {}
    plain = _requests_total(apps, inits, False, False, pod_level, overhead)
    default_cpu = default_memory = True
    if pod_level is not None and not defaults_everywhere:
        lists = [*apps, *(r for r, _ in inits), pod_level, overhead]
        default_cpu = not any(CPU in r for r in lists)
        default_memory = not any(MEMORY in r for r in lists)
        if not (default_cpu or default_memory):
            return plain, plain.clone()
    return plain, _requests_total(apps, inits, default_cpu, default_memory, pod_level, overhead)


def pod_requests(pod: Pod, non_zero: bool = False, opts: RequestOptions = NO_GATES) -> Resource:
    """The pod's requests, or with `non_zero` the scheduler's defaults for missing cpu/memory (scoring)."""
    return pod_requests_pair(pod, opts)[1 if non_zero else 0]


def accounting_options() -> RequestOptions:
    """What NodeInfo counts a pod's requests with: the process's gates, as upstream's calculateResource reads
    utilfeature.DefaultFeatureGate."""
    g = process_gates()
    if not (g.in_place_pod_vertical_scaling or g.pod_level_resources):
        return NO_GATES
    return RequestOptions(g.in_place_pod_vertical_scaling, g.pod_level_resources)


# -- affinity terms ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class AffinityTerm:
    """A parsed pod (anti-)affinity term (upstream: framework.AffinityTerm)."""

    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    namespace_selector: LabelSelector  # NOTHING when the term has none

    def matches(self, pod: Pod, ns_labels: dict[str, str] | None) -> bool:
        """Whether `pod` (living in a namespace with labels `ns_labels`) is selected by this term."""
        md = pod["metadata"]
        ns = md.get("namespace", "")
        if ns in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(md.get("labels"))
        return False


@dataclass(slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


def new_affinity_term(pod: Pod, term: dict[str, Any]) -> AffinityTerm:
    """Parse one PodAffinityTerm (upstream: newAffinityTerm): no namespaces and no namespaceSelector mean the
    pod's own namespace. Raises SelectorError for an invalid labelSelector, then namespaceSelector."""
    selector = label_selector_from_object(term.get("labelSelector"))
    namespaces = frozenset(term.get("namespaces") or ())
    ns_sel_obj = term.get("namespaceSelector")
    ns_selector = label_selector_from_object(ns_sel_obj)  # None -> NOTHING, {} -> EVERYTHING
    if not namespaces and ns_sel_obj is None:
        namespaces = frozenset((pod["metadata"].get("namespace", ""),))
    return AffinityTerm(
        namespaces=namespaces,
        selector=selector,
        topology_key=term.get("topologyKey", ""),
        namespace_selector=ns_selector,
    )


def _terms(pod: Pod, kind: str, field_name: str) -> list[dict[str, Any]]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    return affinity.get(field_name) or []


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

# How upstream's NewPodInfo names each kind of term in its parse error.
REQUIRED_AFFINITY_TERMS = "requiredAffinityTerms"
REQUIRED_ANTI_AFFINITY_TERMS = "requiredAntiAffinityTerms"
PREFERRED_AFFINITY_TERMS = "preferredAffinityTerms"
PREFERRED_ANTI_AFFINITY_TERMS = "preferredAntiAffinityTerms"


def has_preferred_pod_affinity(pod: Pod) -> bool:
    """Whether the pod lists preferred pod (anti-)affinity terms, valid or not."""
    return bool(_terms(pod, "podAffinity", _PREFERRED) or _terms(pod, "podAntiAffinity", _PREFERRED))


def _required_terms(pod: Pod, kind: str) -> list[AffinityTerm]:
    return [new_affinity_term(pod, t) for t in _terms(pod, kind, _REQUIRED)]


def _preferred_terms(pod: Pod, kind: str) -> list[WeightedAffinityTerm]:
    return [
        WeightedAffinityTerm(new_affinity_term(pod, t.get("podAffinityTerm") or {}), int(t.get("weight", 0)))
        for t in _terms(pod, kind, _PREFERRED)
    ]


# -- PodInfo, NodeInfo ------------------------------------------------------------------------------------------


class PodInfo:
    """A pod with its parsed affinity terms and resource requests, computed once.

    A kind of term (required affinity, required anti-affinity, preferred ones) with an invalid selector is left
    empty and its error kept in `parse_errors`, as upstream's NewPodInfo does: the API server lets such pods
    through, so the scheduler must hold them; the plugins that need the terms reject the pod being scheduled.
    """

    __slots__ = (
        "_non_zero",
        "_requests",
        "_usage",
        "parse_errors",
        "pod",
        "preferred_affinity_terms",
        "preferred_anti_affinity_terms",
        "required_affinity_terms",
        "required_anti_affinity_terms",
        "uid",
    )

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        # Read on every removal from a node (a scan of its pods, as upstream's removePod): kept, not looked up.
        self.uid: str = pod["metadata"].get("uid", "")
        self._requests: Resource | None = None
        self._non_zero: Resource | None = None
        self._usage: tuple[list[tuple[str, str, int]], list[str]] | None = None
        self.parse_errors: dict[str, str] | None = None  # kind of term -> its first selector error
        spec = pod.get("spec") or {}
        if not spec.get("affinity"):
            self.required_affinity_terms: list[AffinityTerm] = []
            self.required_anti_affinity_terms: list[AffinityTerm] = []
            self.preferred_affinity_terms: list[WeightedAffinityTerm] = []
            self.preferred_anti_affinity_terms: list[WeightedAffinityTerm] = []
            return
        try:
            self.required_affinity_terms = _required_terms(pod, "podAffinity")
        except SelectorError as e:
            self.required_affinity_terms = self._failed(REQUIRED_AFFINITY_TERMS, e)
        try:
            self.required_anti_affinity_terms = _required_terms(pod, "podAntiAffinity")
        except SelectorError as e:
            self.required_anti_affinity_terms = self._failed(REQUIRED_ANTI_AFFINITY_TERMS, e)
        try:
            self.preferred_affinity_terms = _preferred_terms(pod, "podAffinity")
        except SelectorError as e:
            self.preferred_affinity_terms = self._failed(PREFERRED_AFFINITY_TERMS, e)
        try:
            self.preferred_anti_affinity_terms = _preferred_terms(pod, "podAntiAffinity")
        except SelectorError as e:
            self.preferred_anti_affinity_terms = self._failed(PREFERRED_ANTI_AFFINITY_TERMS, e)

    def _failed(self, kind: str, error: SelectorError) -> list[Any]:
        if self.parse_errors is None:
            self.parse_errors = {}
        self.parse_errors[kind] = str(error)
        return []

    @property
    def parse_error(self) -> str | None:
        """Upstream's aggregated NewPodInfo error: each kind of term that failed, with its selector's error."""
        if not self.parse_errors:
            return None
        return aggregate(f"{kind}: {message}" for kind, message in self.parse_errors.items())

    @property
    def required_terms_unparsable(self) -> bool:
        """Whether the required (anti-)affinity terms failed to parse (the queueing hints need only those)."""
        errors = self.parse_errors
        return errors is not None and (REQUIRED_AFFINITY_TERMS in errors or REQUIRED_ANTI_AFFINITY_TERMS in errors)

    @property
    def requests(self) -> Resource:
        if self._requests is None:
            self._requests, self._non_zero = pod_requests_pair(self.pod, accounting_options())
        return self._requests

    @property
    def non_zero_requests(self) -> Resource:
        if self._non_zero is None:
            self._requests, self._non_zero = pod_requests_pair(self.pod, accounting_options())
        return self._non_zero

    @property
    def has_affinity(self) -> bool:
        return bool(self.required_affinity_terms or self.preferred_affinity_terms) or bool(
            self.required_anti_affinity_terms or self.preferred_anti_affinity_terms
        )

    @property
    def has_required_anti_affinity(self) -> bool:
        return bool(self.required_anti_affinity_terms)

    @property
    def node_usage(self) -> tuple[list[tuple[str, str, int]], list[str]]:
        """What the pod takes on its node besides resources: its host ports and its claims ("ns/claim")."""
        if self._usage is None:
            ns = self.pod["metadata"].get("namespace", "")
            volumes = (self.pod.get("spec") or {}).get("volumes") or ()
            claims = [f"{ns}/{c}" for v in volumes if (c := (v.get("persistentVolumeClaim") or {}).get("claimName"))]
            self._usage = (host_ports(self.pod), claims)
        return self._usage

    @property
    def key(self) -> str:
        md = self.pod["metadata"]
        return f"{md.get('namespace', '')}/{md.get('name', '')}"


def pod_key(pod: Pod) -> str:
    md = pod["metadata"]
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


def pod_priority(pod: Pod) -> int:
    """spec.priority, 0 when unset (upstream: corev1helpers.PodPriority)."""
    p = (pod.get("spec") or {}).get("priority")
    return int(p) if p is not None else 0


def host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    """(hostIP, protocol, hostPort) of every regular container port with a hostPort, hostIP and protocol
    defaulted as upstream's HostPortInfo does: both what a pod holds on its node (NodeInfo.updateUsedPorts) and
    what it asks for (NodePorts). v1.32 reads spec.containers only; sidecars' (restartPolicy: Always init
    containers) host ports count from kubernetes#132040, in v1.34 and v1.33 patch releases."""
    out = []
    for c in (pod.get("spec") or {}).get("containers") or ():
        for p in c.get("ports") or ():
            hp = int(p.get("hostPort") or 0)
            if hp > 0:
                out.append((p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", hp))
    return out


_generation = itertools.count(1)


def next_generation() -> int:
    return next(_generation)


class NodeInfo:
    """A node with the pods assigned to it and their sums (upstream: framework.NodeInfo).

    `generation` changes on every modification so the snapshot refreshes only the nodes that changed.
    """

    __slots__ = (
        "allocatable",
        "generation",
        "image_states",
        "name",
        "node",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "requested",
        "used_ports",
    )

    def __init__(self, node: Node | None = None, pods: list[Pod] | None = None) -> None:
        self.node: Node | None = None
        self.name = ""  # the node's name, read on every per-node path, so kept rather than looked up
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports: dict[tuple[str, str, int], int] = {}
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.pvc_ref_counts: dict[str, int] = {}
        self.generation = next_generation()
        if node is not None:
            self.set_node(node)
        for p in pods or ():
            self.add_pod(p)

    def set_node(self, node: Node) -> None:
        self.node = node
        self.name = node["metadata"]["name"]
        self.allocatable = Resource.from_list((node.get("status") or {}).get("allocatable"))
        self.generation = next_generation()

    def remove_node(self) -> None:
        self.node = None
        self.name = ""
        self.generation = next_generation()

    def add_pod(self, pod: Pod | PodInfo) -> PodInfo:
        pi = pod if isinstance(pod, PodInfo) else PodInfo(pod)
        self.pods.append(pi)
        if pi.has_affinity:
            self.pods_with_affinity.append(pi)
        if pi.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pi)
        self._update(pi, 1)
        return pi

    def remove_pod(self, pod: Pod) -> bool:
        """Remove the pod with this pod's UID; False when it is not here."""
        uid = pod["metadata"].get("uid", "")
        for i, pi in enumerate(self.pods):
            if pi.uid == uid:
                del self.pods[i]
                self.pods_with_affinity = [p for p in self.pods_with_affinity if p.uid != uid]
                self.pods_with_required_anti_affinity = [
                    p for p in self.pods_with_required_anti_affinity if p.uid != uid
                ]
                self._update(pi, -1)
                return True
        return False

    def _update(self, pi: PodInfo, sign: int) -> None:
        self.requested.add(pi.requests, sign)
        nz = pi.non_zero_requests
        self.non_zero_requested.milli_cpu += sign * nz.milli_cpu
        self.non_zero_requested.memory += sign * nz.memory
        ports, claims = pi.node_usage
        for port in ports:
            n = self.used_ports.get(port, 0) + sign
            if n > 0:
                self.used_ports[port] = n
            else:
                self.used_ports.pop(port, None)
        for k in claims:
            n = self.pvc_ref_counts.get(k, 0) + sign
            if n > 0:
                self.pvc_ref_counts[k] = n
            else:
                self.pvc_ref_counts.pop(k, None)
        self.generation = next_generation()

    def clone(self) -> NodeInfo:
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.used_ports = dict(self.used_ports)
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.allocatable = self.allocatable
        c.image_states = self.image_states
        c.pvc_ref_counts = dict(self.pvc_ref_counts)
        c.generation = self.generation
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)})"


@dataclass(eq=False)
class QueuedPodInfo:
    """A pod in the scheduling queue with its bookkeeping (upstream: framework.QueuedPodInfo)."""

    pod_info: PodInfo
    timestamp: float = 0.0  # when it was last added to the queue
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod


EVERYTHING_SELECTOR = EVERYTHING


class Positions(Sequence[int]):
    """Node positions in the snapshot, held as the numpy array they were computed as: vectorized plugins index
    the columns with it, and the list of Python ints is built only if something iterates (most cycles only
    take one element)."""

    __slots__ = ("_list", "array")

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self._list: list[int] | None = None

    def _as_list(self) -> list[int]:
        if self._list is None:
            self._list = self.array.tolist()
        return self._list

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i: Any) -> Any:
        if self._list is None and isinstance(i, int):
            return int(self.array[i])
        return self._as_list()[i]

    def __iter__(self) -> Iterator[int]:
        return iter(self._as_list())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"Positions({self._as_list()!r})"


def position_array(positions: Sequence[int]) -> np.ndarray:
    """Positions as an int64 array (the one they came from, when they are `Positions`)."""
    if isinstance(positions, Positions):
        return positions.array
    return np.asarray(positions, dtype=np.int64)


class FeasibleNodes(Sequence[NodeInfo]):
    """The feasible NodeInfos handed to PreScore, built only if a plugin reads them (most do not)."""

    __slots__ = ("_list", "_nodes", "_positions")

    def __init__(self, nodes: list[NodeInfo], positions: Sequence[int]) -> None:
        self._nodes = nodes
        self._positions = positions
        self._list: list[NodeInfo] | None = None

    def _materialise(self) -> list[NodeInfo]:
        if self._list is None:
            self._list = [self._nodes[i] for i in self._positions]
        return self._list

    def __len__(self) -> int:
        return len(self._positions)

    def __getitem__(self, i: Any) -> Any:
        return self._materialise()[i]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self._materialise())

    def positions_in(self, nodes: list[NodeInfo]) -> Sequence[int] | None:
        """The positions of these NodeInfos in `nodes` when that is the list they were taken from, else None:
        vectorized PreScore plugins index the snapshot's columns with them instead of looking nodes up."""
        return self._positions if self._nodes is nodes else None
