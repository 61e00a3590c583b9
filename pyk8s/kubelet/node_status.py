"""The Node object a simulated kubelet registers and the status it reports, as a v1.32 kubelet writes them
(upstream: pkg/kubelet/kubelet_node_status.go `initialNode`, and the setters of pkg/kubelet/nodestatus).

`NodeSpec` is what one simulated machine is (name, resources, labels, taints, zone). `initial_node` builds the
Node to create: upstream's default labels, the attach-detach annotation, taints, and the status every setter
fills (addresses, capacity and allocatable, nodeInfo, daemon endpoint, the four conditions).
`conditions_changed` is the kubelet's test for whether a status must be written before the report interval
is up: conditions compared without their heartbeat times.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api.quantity import Format, Quantity, canonical, parse_quantity, value

KUBELET_VERSION = "v1.32.13"
CONTAINER_RUNTIME_VERSION = "containerd://1.7.24"
KUBELET_PORT = 10250  # upstream ports.KubeletPort
OS, ARCH = "linux", "amd64"
KERNEL_VERSION = "6.1.0-pyk8s"
OS_IMAGE = "pyk8s simulated node"
CONTROLLER_MANAGED_ATTACH_DETACH = "volumes.kubernetes.io/controller-managed-attach-detach"
# The kubelet's default hard eviction thresholds are reserved from allocatable (upstream DefaultEvictionHard:
# memory.available<100Mi, nodefs.available<10%).
EVICTION_HARD_MEMORY = 100 * 1024 * 1024
EVICTION_HARD_NODEFS_FRACTION = 0.10

# (type, status, reason, message) of a healthy node's conditions, in the order a fresh node lists them.
HEALTHY_CONDITIONS: tuple[tuple[str, str, str, str], ...] = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


@dataclass(frozen=True)
class NodeSpec:
    """One simulated machine. `address` is the loopback address its kubelet endpoint is reached at."""

    name: str
    cpu: str = "4"
    memory: str = "32Gi"
    pods: int = 110
    ephemeral_storage: str = "100Gi"
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    zone: str = ""
    region: str = ""
    instance_type: str = ""
    address: str = "127.0.0.1"
    port: int = KUBELET_PORT
    # From --node-template: annotations, spec.providerID, extended resources (e.g. nvidia.com/gpu) and allocatable
    # given outright rather than computed.
    annotations: Mapping[str, str] = field(default_factory=dict)
    provider_id: str = ""
    extended_capacity: Mapping[str, str] = field(default_factory=dict)
    allocatable_overrides: Mapping[str, str] = field(default_factory=dict)


def default_labels(spec: NodeSpec) -> dict[str, str]:
    """The labels the kubelet sets itself (upstream initialNode; the cloud ones when known), before
    --node-labels."""
    labels = {
        "beta.kubernetes.io/arch": ARCH,
        "beta.kubernetes.io/os": OS,
        "kubernetes.io/arch": ARCH,
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": OS,
    }
    if spec.instance_type:
        labels["node.kubernetes.io/instance-type"] = spec.instance_type
        labels["beta.kubernetes.io/instance-type"] = spec.instance_type
    if spec.zone:
        labels["topology.kubernetes.io/zone"] = spec.zone
        labels["failure-domain.beta.kubernetes.io/zone"] = spec.zone
    if spec.region:
        labels["topology.kubernetes.io/region"] = spec.region
        labels["failure-domain.beta.kubernetes.io/region"] = spec.region
    return labels


def capacity(spec: NodeSpec) -> dict[str, str]:
    return {
        "cpu": spec.cpu,
        "ephemeral-storage": spec.ephemeral_storage,
        "memory": spec.memory,
        "pods": str(spec.pods),
        **spec.extended_capacity,
    }


def allocatable(spec: NodeSpec) -> dict[str, str]:
    """Capacity less the kubelet's reservations: with no system/kube reservations configured, only the hard
    eviction thresholds (100Mi of memory, 10% of the root filesystem), floored at zero."""
    memory = max(value(parse_quantity(spec.memory)) - EVICTION_HARD_MEMORY, 0)
    storage = value(parse_quantity(spec.ephemeral_storage))
    storage_left = max(storage - int(storage * EVICTION_HARD_NODEFS_FRACTION), 0)
    computed = {
        "cpu": spec.cpu,
        "ephemeral-storage": canonical(Quantity.from_value(storage_left, Format.DecimalSI)),
        "memory": canonical(Quantity.from_value(memory, Format.BinarySI)),
        "pods": str(spec.pods),
        **spec.extended_capacity,
    }
    # A template's allocatable is taken as given, for the resources the node has.
    return {k: spec.allocatable_overrides.get(k, v) for k, v in computed.items()}


def healthy_conditions(now: str, previous: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, str]]:
    """The four conditions of a healthy node, each with heartbeat `now`; a condition keeps its transition
    time while its status does not change (upstream's setters)."""
    before = {c.get("type"): c for c in previous}
    out = []
    for type_, status, reason, message in HEALTHY_CONDITIONS:
        prev = before.get(type_)
        transition = prev.get("lastTransitionTime") if prev is not None and prev.get("status") == status else None
        out.append({
            "type": type_,
            "status": status,
            "lastHeartbeatTime": now,
            "lastTransitionTime": transition or now,
            "reason": reason,
            "message": message,
        })  # fmt: skip
    return out


def conditions_changed(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the conditions differ in anything but their heartbeat times (upstream nodeConditionsHaveChanged)."""

    def strip(conds: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return sorted(
            ({k: v for k, v in c.items() if k != "lastHeartbeatTime"} for c in conds), key=lambda c: str(c.get("type"))
        )

    return strip(old) != strip(new)


def initial_node(spec: NodeSpec, now: str, boot_id: str | None = None) -> dict[str, Any]:
    """The Node a kubelet for `spec` creates: metadata, spec (taints) and the whole status."""
    labels = {**default_labels(spec), **spec.labels}
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": labels,
            "annotations": {**spec.annotations, CONTROLLER_MANAGED_ATTACH_DETACH: "true"},
        },
        "spec": {},
        "status": node_status(spec, now, boot_id=boot_id),
    }
    if spec.taints:
        node["spec"]["taints"] = [dict(t) for t in spec.taints]
    if spec.provider_id:
        node["spec"]["providerID"] = spec.provider_id
    return node


def addresses(spec: NodeSpec) -> list[dict[str, str]]:
    """The node's addresses (upstream's NodeAddress setter): the loopback one its kubelet endpoint listens on."""
    return [{"type": "InternalIP", "address": spec.address}, {"type": "Hostname", "address": spec.name}]


def node_status(
    spec: NodeSpec, now: str, previous: Sequence[Mapping[str, Any]] = (), *, boot_id: str | None = None
) -> dict[str, Any]:
    """The status the setters compute for `spec` at time `now` (previous conditions keep their transitions)."""
    # Stable per node name, as a machine's IDs are; the boot ID changes with each start of the process.
    machine_id = uuid.uuid5(uuid.NAMESPACE_DNS, f"{spec.name}.nodes.pyk8s.io").hex
    return {
        "capacity": capacity(spec),
        "allocatable": allocatable(spec),
        "conditions": healthy_conditions(now, previous),
        "addresses": addresses(spec),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": spec.port}},
        "nodeInfo": {
            "machineID": machine_id,
            "systemUUID": str(uuid.UUID(machine_id)),
            "bootID": boot_id or str(uuid.uuid4()),
            "kernelVersion": KERNEL_VERSION,
            "osImage": OS_IMAGE,
            "containerRuntimeVersion": CONTAINER_RUNTIME_VERSION,
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": OS,
            "architecture": ARCH,
        },
        "runtimeHandlers": [{"name": "", "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}}],
    }


def reconcile_existing(existing: Mapping[str, Any], fresh: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a re-registering kubelet changes on the Node it finds (upstream tryRegisterWithAPIServer's
    reconcilers): the attach-detach annotation and the default labels, and capacity/allocatable if unset.
    Returns the updated Node, or None when nothing needs writing. Spec, taints and other labels stay."""
    node = {**existing, "metadata": dict(existing.get("metadata") or {}), "status": dict(existing.get("status") or {})}
    md = node["metadata"]
    changed = False
    annotations = dict(md.get("annotations") or {})
    if annotations.get(CONTROLLER_MANAGED_ATTACH_DETACH) != "true":
        annotations[CONTROLLER_MANAGED_ATTACH_DETACH] = "true"
        md["annotations"] = annotations
        changed = True
    labels = dict(md.get("labels") or {})
    fresh_labels = (fresh.get("metadata") or {}).get("labels") or {}
    for key in default_label_keys():
        want = fresh_labels.get(key)
        if want is None and key in labels:
            del labels[key]
            changed = True
        elif want is not None and labels.get(key) != want:
            labels[key] = want
            changed = True
    md["labels"] = labels
    for res in ("capacity", "allocatable"):
        if not node["status"].get(res):
            node["status"][res] = fresh["status"][res]
            changed = True
    return node if changed else None


def default_label_keys() -> tuple[str, ...]:
    """Every label key the kubelet owns (upstream updateDefaultLabels' list)."""
    return (
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "beta.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    )
