"""Table printers of the core (v1) kinds (upstream: pkg/printers/internalversion/printers.go)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ...api.meta import Object
from ..tables import NAME, Cells, Column, age, printer
from .common import (
    AGE,
    CONTAINERS,
    IMAGES,
    _col,
    _containers,
    _d,
    _format_labels,
    _i,
    _join_host_port,
    _l,
    _meta,
    _name,
    _s,
    _since,
    _template_spec,
    _time,
    _wide,
    quantity,
)

# -- core: Pod -------------------------------------------------------------------------------------------

POD_COLUMNS = [
    NAME,
    _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", "The aggregate status of the containers in this pod."),
    _col(
        "Restarts",
        "The number of times the containers in this pod have been restarted and when the last container in "
        "this pod has restarted.",
    ),
    AGE,
    _wide("IP", "podIP address allocated to the pod."),
    _wide("Node", "NodeName indicates in which node this pod is scheduled."),
    _wide("Nominated Node", "nominatedNodeName is set when this pod preempts other pods on the node."),
    _wide("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness."),
]


def _restartable(container: Any) -> bool:
    """An init container with restartPolicy Always: a sidecar, counted among the pod's containers."""
    return _d(container).get("restartPolicy") == "Always"


def _later(current: dt.datetime | None, status: dict[str, Any]) -> dt.datetime | None:
    """The later of `current` and when the container's last run finished."""
    finished = _time(_d(_d(status.get("lastState")).get("terminated")).get("finishedAt"))
    if finished is None or (current is not None and finished <= current):
        return current
    return finished


def _condition_true(conditions: Any, type_: str, first_only: bool = False) -> bool:
    for c in _l(conditions):
        c = _d(c)
        if c.get("type") != type_:
            continue
        if c.get("status") == "True":
            return True
        if first_only:
            return False
    return False


def _terminated_reason(term: dict[str, Any], prefix: str) -> str:
    if term.get("reason"):
        return prefix + _s(term.get("reason"))
    if _i(term.get("signal")):
        return f"{prefix}Signal:{_i(term.get('signal'))}"
    return f"{prefix}ExitCode:{_i(term.get('exitCode'))}"


@printer("", "Pod", POD_COLUMNS)
def pod_row(pod: Object) -> Cells:
    meta, spec, status = _meta(pod), _d(pod.get("spec")), _d(pod.get("status"))
    conditions = status.get("conditions")
    restarts = sidecar_restarts = 0
    last_restart: dt.datetime | None = None
    last_sidecar_restart: dt.datetime | None = None
    ready = 0
    total = len(_l(spec.get("containers")))

    phase = _s(status.get("phase"))
    reason = _s(status.get("reason")) or phase
    for c in _l(conditions):
        if _d(c).get("type") == "PodScheduled" and _d(c).get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init_specs = [_d(c) for c in _l(spec.get("initContainers"))]
    init_by_name = {_s(c.get("name")): c for c in init_specs}
    total += sum(1 for c in init_specs if _restartable(c))

    initializing = False
    for i, cs in enumerate(_d(c) for c in _l(status.get("initContainerStatuses"))):
        restarts += _i(cs.get("restartCount"))
        last_restart = _later(last_restart, cs)
        sidecar = _restartable(init_by_name.get(_s(cs.get("name"))))
        if sidecar:
            sidecar_restarts += _i(cs.get("restartCount"))
            last_sidecar_restart = _later(last_sidecar_restart, cs)
        state = _d(cs.get("state"))
        term, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(term, dict) and _i(term.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started") is True:
            if cs.get("ready"):
                ready += 1
            continue
        if isinstance(term, dict):
            reason = _terminated_reason(term, "Init:")
        elif isinstance(waiting, dict) and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + _s(waiting.get("reason"))
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _condition_true(conditions, "Initialized", first_only=True):
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed([_d(c) for c in _l(status.get("containerStatuses"))]):
            restarts += _i(cs.get("restartCount"))
            last_restart = _later(last_restart, cs)
            state = _d(cs.get("state"))
            term, waiting = state.get("terminated"), state.get("waiting")
            if isinstance(waiting, dict) and waiting.get("reason"):
                reason = _s(waiting.get("reason"))
            elif isinstance(term, dict):
                reason = _terminated_reason(term, "")
            elif cs.get("ready") and isinstance(state.get("running"), dict):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(conditions, "Ready") else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts and last_restart is not None:
        restarts_cell = f"{restarts} ({_since(last_restart)} ago)"

    ips = _l(status.get("podIPs"))
    pod_ip = _s(_d(ips[0]).get("ip")) if ips else _s(status.get("podIP"))
    gates = _l(spec.get("readinessGates"))
    gates_cell = "<none>"
    if gates:
        true_count = 0
        for gate in gates:
            for c in _l(conditions):
                if _d(c).get("type") == _d(gate).get("conditionType"):
                    true_count += _d(c).get("status") == "True"
                    break
        gates_cell = f"{true_count}/{len(gates)}"
    return [
        _name(pod),
        f"{ready}/{total}",
        reason,
        restarts_cell,
        age(pod),
        pod_ip or "<none>",
        _s(spec.get("nodeName")) or "<none>",
        _s(status.get("nominatedNodeName")) or "<none>",
        gates_cell,
    ]


@printer(
    "",
    "PodTemplate",
    [
        NAME,
        _col("Containers", "Names of each container in the template."),
        _col("Images", "Images referenced by each container in the template."),
        _col("Pod Labels", "The labels for the pod template."),
    ],
)
def pod_template_row(obj: Object) -> Cells:
    template = _d(obj.get("template"))
    names, images = _containers(template.get("spec"))
    return [_name(obj), names, images, _format_labels(_d(template.get("metadata")).get("labels"))]


# -- core: Node ------------------------------------------------------------------------------------------

_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL = "kubernetes.io/role"


def node_roles(labels: Any) -> list[str]:
    """The node's roles: `node-role.kubernetes.io/<role>` label keys and `kubernetes.io/role` values, sorted."""
    roles: set[str] = set()
    for k, v in _d(labels).items():
        if k.startswith(_NODE_ROLE_PREFIX) and k[len(_NODE_ROLE_PREFIX) :]:
            roles.add(k[len(_NODE_ROLE_PREFIX) :])
        elif k == _NODE_ROLE_LABEL and v:
            roles.add(_s(v))
    return sorted(roles)


def _node_address(status: dict[str, Any], type_: str) -> str:
    for a in _l(status.get("addresses")):
        if _d(a).get("type") == type_:
            return _s(_d(a).get("address"))
    return "<none>"


@printer(
    "",
    "Node",
    [
        NAME,
        _col("Status", "The status of the node"),
        _col("Roles", "The roles of the node"),
        AGE,
        _col("Version", "Kubelet Version reported by the node."),
        _wide("Internal-IP", "List of addresses reachable to the node."),
        _wide("External-IP", "List of addresses reachable to the node."),
        _wide("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
        _wide("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
        _wide("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote API."),
    ],
)
def node_row(node: Object) -> Cells:
    spec, status = _d(node.get("spec")), _d(node.get("status"))
    ready_condition: dict[str, Any] | None = None
    for c in _l(status.get("conditions")):
        if _d(c).get("type") == "Ready":
            ready_condition = _d(c)  # the last one wins, as in upstream's map
    states = ["Unknown"]
    if ready_condition is not None:
        states = ["Ready" if ready_condition.get("status") == "True" else "NotReady"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    info = _d(status.get("nodeInfo"))
    return [
        _name(node),
        ",".join(states),
        ",".join(node_roles(_meta(node).get("labels"))) or "<none>",
        age(node),
        _s(info.get("kubeletVersion")),
        _node_address(status, "InternalIP"),
        _node_address(status, "ExternalIP"),
        _s(info.get("osImage")) or "<unknown>",
        _s(info.get("kernelVersion")) or "<unknown>",
        _s(info.get("containerRuntimeVersion")) or "<unknown>",
    ]


# -- core: Namespace, ConfigMap, Secret, ServiceAccount --------------------------------------------------


@printer("", "Namespace", [NAME, _col("Status", "The status of the namespace"), AGE])
def namespace_row(obj: Object) -> Cells:
    return [_name(obj), _s(_d(obj.get("status")).get("phase")), age(obj)]


@printer("", "ConfigMap", [NAME, _col("Data", "Data contains the configuration data."), AGE])
def config_map_row(obj: Object) -> Cells:
    return [_name(obj), len(_d(obj.get("data"))) + len(_d(obj.get("binaryData"))), age(obj)]


@printer(
    "",
    "Secret",
    [
        NAME,
        _col("Type", "Used to facilitate programmatic handling of secret data."),
        _col("Data", "Data contains the secret data."),
        AGE,
    ],
)
def secret_row(obj: Object) -> Cells:
    return [_name(obj), _s(obj.get("type")), len(_d(obj.get("data"))), age(obj)]


@printer(
    "",
    "ServiceAccount",
    [NAME, _col("Secrets", "Secrets is a list of the secrets in the same namespace that pods may use."), AGE],
)
def service_account_row(obj: Object) -> Cells:
    return [_name(obj), len(_l(obj.get("secrets"))), age(obj)]


# -- core: Service, Endpoints ----------------------------------------------------------------------------


def _lb_ingress(status: Any) -> str:
    """The load balancer's ingress points (IP, else hostname), sorted and deduplicated; never clipped, as
    the server always prints wide."""
    points = set()
    for ing in _l(_d(status).get("ingress")):
        ing = _d(ing)
        if ing.get("ip"):
            points.add(_s(ing.get("ip")))
        elif ing.get("hostname"):
            points.add(_s(ing.get("hostname")))
    return ",".join(sorted(points))


def service_external_ip(svc: Object) -> str:
    spec = _d(svc.get("spec"))
    external = [_s(ip) for ip in _l(spec.get("externalIPs"))]
    typ = spec.get("type")
    if typ in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if typ == "LoadBalancer":
        lb = _lb_ingress(_d(svc.get("status")).get("loadBalancer"))
        if external:
            return ",".join([*(lb.split(",") if lb else []), *external])
        return lb or "<pending>"
    if typ == "ExternalName":
        return _s(spec.get("externalName"))
    return "<unknown>"


def service_ports(ports: Any) -> str:
    pieces = []
    for p in (_d(p) for p in _l(ports)):
        proto = _s(p.get("protocol"))
        if _i(p.get("nodePort")) > 0:
            pieces.append(f"{_i(p.get('port'))}:{_i(p.get('nodePort'))}/{proto}")
        else:
            pieces.append(f"{_i(p.get('port'))}/{proto}")
    return ",".join(pieces)


@printer(
    "",
    "Service",
    [
        NAME,
        _col("Type", "type determines how the Service is exposed."),
        _col("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly."),
        _col(
            "External-IP",
            "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
        ),
        _col("Port(s)", "The list of ports that are exposed by this service."),
        AGE,
        _wide("Selector", "Route service traffic to pods with label keys and values matching this selector."),
    ],
)
def service_row(svc: Object) -> Cells:
    spec = _d(svc.get("spec"))
    cluster_ips = _l(spec.get("clusterIPs"))
    cluster_ip = _s(cluster_ips[0]) if cluster_ips else _s(spec.get("clusterIP"))
    return [
        _name(svc),
        _s(spec.get("type")),
        cluster_ip or "<none>",
        service_external_ip(svc),
        service_ports(spec.get("ports")) or "<none>",
        age(svc),
        _format_labels(spec.get("selector")),
    ]


def format_endpoints(subsets: Any) -> str:
    """Up to three `ip:port` endpoints (bare IPs for port-less subsets), then `+ N more...`."""
    subsets = [_d(s) for s in _l(subsets)]
    if not subsets:
        return "<none>"
    limit, count, more = 3, 0, False
    shown: list[str] = []
    for ss in subsets:
        addresses = [_s(_d(a).get("ip")) for a in _l(ss.get("addresses"))]
        ports: list[dict[str, Any] | None] = [_d(p) for p in _l(ss.get("ports"))]
        for port in ports or [None]:
            count += len(addresses)
            for ip in addresses:
                if len(shown) == limit:
                    more = True
                    break
                shown.append(ip if port is None else _join_host_port(ip, _i(port.get("port"))))
    text = ",".join(shown)
    return f"{text} + {count - limit} more..." if more else text


@printer("", "Endpoints", [NAME, _col("Endpoints", "The set of all endpoints is the union of all subsets."), AGE])
def endpoints_row(obj: Object) -> Cells:
    return [_name(obj), format_endpoints(obj.get("subsets")), age(obj)]


# -- core and events.k8s.io: Event -----------------------------------------------------------------------

EVENT_COLUMNS = [
    _col("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    _col("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    _col(
        "Reason",
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    ),
    _col("Object", "The object that this event is about."),
    _wide(
        "Subobject",
        "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
    ),
    _wide("Source", "The component reporting this event. Should be a short machine understandable string."),
    _col("Message", "A human-readable description of the status of this operation."),
    _wide("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
    _wide("Count", "The number of times this event has occurred."),
    Column("Name", "string", "name", NAME.description, 1),
]


def _event_fields(ev: Object) -> dict[str, Any]:
    """The event's fields under core/v1 names, whether it came as core/v1 or events.k8s.io/v1."""
    if _s(ev.get("apiVersion")).startswith("events.k8s.io/") or "regarding" in ev or "note" in ev:
        return {
            "firstTimestamp": ev.get("deprecatedFirstTimestamp"),
            "lastTimestamp": ev.get("deprecatedLastTimestamp"),
            "count": ev.get("deprecatedCount"),
            "eventTime": ev.get("eventTime"),
            "series": ev.get("series"),
            "involvedObject": ev.get("regarding"),
            "source": ev.get("deprecatedSource"),
            "reportingController": ev.get("reportingController"),
            "reportingInstance": ev.get("reportingInstance"),
            "message": ev.get("note"),
            "type": ev.get("type"),
            "reason": ev.get("reason"),
        }
    out = dict(ev)
    out["reportingController"] = ev.get("reportingComponent")
    return out


def event_row(ev: Object) -> Cells:
    f = _event_fields(ev)
    first = _since(f.get("firstTimestamp")) if _time(f.get("firstTimestamp")) else _since(f.get("eventTime"))
    last = _since(f.get("lastTimestamp")) if _time(f.get("lastTimestamp")) else first
    count = _i(f.get("count"))
    series = f.get("series")
    if isinstance(series, dict):
        last = _since(series.get("lastObservedTime"))
        count = _i(series.get("count"))
    elif count == 0:
        count = 1  # singleton events carry no count in the new API
    involved = _d(f.get("involvedObject"))
    kind, name = _s(involved.get("kind")).lower(), _s(involved.get("name"))
    target = f"{kind}/{name}" if name else kind
    source = _d(f.get("source"))
    component = _s(source.get("component")) or _s(f.get("reportingController"))
    instance = _s(source.get("host")) or _s(f.get("reportingInstance"))
    return [
        last,
        _s(f.get("type")),
        _s(f.get("reason")),
        target,
        _s(involved.get("fieldPath")),
        f"{component}, {instance}" if instance else component,
        _s(f.get("message")).strip(),
        first,
        count,
        _name(ev),
    ]


printer("", "Event", EVENT_COLUMNS)(event_row)
printer("events.k8s.io", "Event", EVENT_COLUMNS)(event_row)


# -- core: PersistentVolume, PersistentVolumeClaim -------------------------------------------------------

_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


def access_modes(modes: Any) -> str:
    """The access modes, abbreviated, always in the order RWO,ROX,RWX,RWOP."""
    have = set(_l(modes))
    order = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))
    return ",".join(short for mode, short in order if mode in have)


def _storage_class(obj: Object) -> str:
    annotations = _d(_meta(obj).get("annotations"))
    if _BETA_STORAGE_CLASS in annotations:
        return _s(annotations[_BETA_STORAGE_CLASS])
    return _s(_d(obj.get("spec")).get("storageClassName"))


def _storage(resources: Any) -> str:
    q = _d(resources).get("storage")
    return "0" if q is None else quantity(q)


@printer(
    "",
    "PersistentVolume",
    [
        NAME,
        _col("Capacity", "capacity is the description of the persistent volume's resources and capacity."),
        _col("Access Modes", "accessModes contains all ways the volume can be mounted."),
        _col(
            "Reclaim Policy",
            "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.",
        ),
        _col("Status", "phase indicates if a volume is available, bound to a claim, or released by a claim."),
        _col(
            "Claim", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim."
        ),
        _col("StorageClass", "StorageClass of the pv"),
        _col("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
        _col(
            "Reason",
            "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
        ),
        AGE,
        _wide(
            "VolumeMode",
            "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.",
        ),
    ],
)
def persistent_volume_row(pv: Object) -> Cells:
    spec, status = _d(pv.get("spec")), _d(pv.get("status"))
    claim = ""
    if isinstance(spec.get("claimRef"), dict):
        ref = spec["claimRef"]
        claim = f"{_s(ref.get('namespace'))}/{_s(ref.get('name'))}"
    phase = "Terminating" if _meta(pv).get("deletionTimestamp") else _s(status.get("phase"))
    vac = spec.get("volumeAttributesClassName")
    mode = spec.get("volumeMode")
    return [
        _name(pv),
        _storage(spec.get("capacity")),
        access_modes(spec.get("accessModes")),
        _s(spec.get("persistentVolumeReclaimPolicy")),
        phase,
        claim,
        _storage_class(pv),
        "<unset>" if vac is None else _s(vac),
        _s(status.get("reason")),
        age(pv),
        "<unset>" if mode is None else _s(mode),
    ]


@printer(
    "",
    "PersistentVolumeClaim",
    [
        NAME,
        _col("Status", "phase represents the current phase of PersistentVolumeClaim."),
        _col("Volume", "volumeName is the binding reference to the PersistentVolume backing this claim."),
        _col("Capacity", "capacity represents the actual resources of the underlying volume."),
        _col("Access Modes", "accessModes contains the actual access modes the volume backing the PVC has."),
        _col("StorageClass", "StorageClass of the pvc"),
        _col("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
        AGE,
        _wide("VolumeMode", "volumeMode defines what type of volume is required by the claim."),
    ],
)
def persistent_volume_claim_row(pvc: Object) -> Cells:
    spec, status = _d(pvc.get("spec")), _d(pvc.get("status"))
    phase = "Terminating" if _meta(pvc).get("deletionTimestamp") else _s(status.get("phase"))
    capacity = modes = ""
    if _s(spec.get("volumeName")):
        modes = access_modes(status.get("accessModes"))
        capacity = _storage(status.get("capacity"))
    vac = spec.get("volumeAttributesClassName")
    mode = spec.get("volumeMode")
    return [
        _name(pvc),
        phase,
        _s(spec.get("volumeName")),
        capacity,
        modes,
        _storage_class(pvc),
        "<unset>" if vac is None else _s(vac),
        age(pvc),
        "<unset>" if mode is None else _s(mode),
    ]


# -- core: ReplicationController, ResourceQuota ----------------------------------------------------------


def _replica_columns(selector_doc: str) -> list[Column]:
    return [
        NAME,
        _col("Desired", "Replicas is the number of desired replicas.", "integer"),
        _col("Current", "Replicas is the most recently observed number of replicas.", "integer"),
        _col("Ready", "The number of ready replicas for this replication controller.", "integer"),
        AGE,
        CONTAINERS,
        IMAGES,
        _wide("Selector", selector_doc),
    ]


@printer(
    "",
    "ReplicationController",
    _replica_columns("Selector is a label query over pods that should match the Replicas count."),
)
def replication_controller_row(rc: Object) -> Cells:
    spec, status = _d(rc.get("spec")), _d(rc.get("status"))
    names, images = _containers(_template_spec(rc))
    return [
        _name(rc),
        _i(spec.get("replicas")),
        _i(status.get("replicas")),
        _i(status.get("readyReplicas")),
        age(rc),
        names,
        images,
        _format_labels(spec.get("selector")),
    ]


@printer(
    "",
    "ResourceQuota",
    [
        NAME,
        _col("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
        _col(
            "Limit",
            "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        ),
        AGE,
    ],
)
def resource_quota_row(quota: Object) -> Cells:
    status = _d(quota.get("status"))
    hard, used = _d(status.get("hard")), _d(status.get("used"))
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        pieces = resource.split(".")
        column = limits if len(pieces) > 1 and pieces[0] == "limits" else requests
        column.append(f"{resource}: {quantity(used.get(resource, 0))}/{quantity(hard[resource])}")
    return [_name(quota), ", ".join(requests), ", ".join(limits), age(quota)]
