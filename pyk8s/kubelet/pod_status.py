"""The status a simulated kubelet writes for a pod bound to its node, as a v1.32 kubelet's status manager
would (upstream: pkg/kubelet/kubelet_pods.go generateAPIPodStatus, pkg/kubelet/status).

The first step is here: `creating_status` (admitted, containers being created: phase Pending, each container
waiting in ContainerCreating, hostIP and startTime set); `pod_lifecycle` takes the pod on from there. Also the
pieces every status shares: conditions that keep their transition time, the runtime's image references,
container IDs and pod IPs. Conditions come in upstream's order: PodReadyToStartContainers, Initialized, Ready,
ContainersReady, PodScheduled (the scheduler's, kept).
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from typing import Any

Pod = Mapping[str, Any]


def _condition(
    type_: str, status: str, now: str, previous: Mapping[str, Mapping[str, Any]], **extra: str
) -> dict[str, Any]:
    prev = previous.get(type_)
    transition = prev.get("lastTransitionTime") if prev and prev.get("status") == status else None
    return {"type": type_, "status": status, "lastProbeTime": None, "lastTransitionTime": transition or now, **extra}


def _conditions(pod: Pod, now: str, *, started: bool, initialized: bool, ready: bool) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    previous: dict[str, Mapping[str, Any]] = {
        str(c.get("type")): c for c in status.get("conditions") or () if isinstance(c, Mapping)
    }
    unready = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or ()]
    not_ready = {"reason": "ContainersNotReady", "message": f"containers with unready status: [{' '.join(unready)}]"}
    not_initialized = {
        "reason": "ContainersNotInitialized",
        "message": f"containers with incomplete status: [{' '.join(_init_names(pod))}]",
    }
    out = [
        _condition("PodReadyToStartContainers", "True" if started else "False", now, previous),
        _condition(
            "Initialized", "True" if initialized else "False", now, previous, **({} if initialized else not_initialized)
        ),
        _condition("Ready", "True" if ready else "False", now, previous, **({} if ready else not_ready)),
        _condition("ContainersReady", "True" if ready else "False", now, previous, **({} if ready else not_ready)),
    ]
    scheduled = previous.get("PodScheduled")
    out.append(dict(scheduled) if scheduled else _condition("PodScheduled", "True", now, previous))
    return out


def _init_names(pod: Pod) -> list[str]:
    return [c.get("name", "") for c in (pod.get("spec") or {}).get("initContainers") or ()]


def _image_ref(image: str) -> tuple[str, str]:
    """The fully qualified image and a digest reference, as a container runtime reports them (Docker's reference
    normalisation: a bare name is a Docker Hub library image, a first part without '.', ':' or "localhost" is a
    Docker Hub user, a missing tag is "latest")."""
    first, sep, _ = image.partition("/")
    if not sep:
        name = f"docker.io/library/{image}"
    elif "." in first or ":" in first or first == "localhost":
        name = image
    else:
        name = f"docker.io/{image}"
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in last:
        name += ":latest"
    repo = name.split("@")[0]
    if ":" in repo.rsplit("/", 1)[-1]:
        repo = repo.rsplit(":", 1)[0]
    digest = hashlib.sha256(name.encode()).hexdigest()
    return name, f"{repo}@sha256:{digest}"


def container_id(pod: Pod, container: str, restart_count: int = 0) -> str:
    """A stable containerd ID for an instance of a container of this pod (each restart is a new container)."""
    uid = (pod.get("metadata") or {}).get("uid", "")
    instance = f"{uid}/{container}" + (f"/{restart_count}" if restart_count else "")
    return "containerd://" + hashlib.sha256(instance.encode()).hexdigest()


def creating_status(pod: Pod, host_ip: str, now: str) -> dict[str, Any]:
    """Admitted to the node; containers being created."""
    spec = pod.get("spec") or {}
    status = dict(pod.get("status") or {})
    inits = spec.get("initContainers") or ()
    status.update(
        phase="Pending",
        conditions=_conditions(pod, now, started=False, initialized=not inits, ready=False),
        hostIP=host_ip,
        hostIPs=[{"ip": host_ip}],
        startTime=status.get("startTime") or now,
    )
    waiting = {"waiting": {"reason": "PodInitializing" if inits else "ContainerCreating"}}
    status["containerStatuses"] = [_waiting(c, waiting) for c in spec.get("containers") or ()]
    if inits:
        status["initContainerStatuses"] = [_waiting(c, {"waiting": {"reason": "PodInitializing"}}) for c in inits]
    return status


def _waiting(container: Mapping[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    image = container.get("image", "")
    return {
        "name": container.get("name", ""), "state": state, "lastState": {}, "ready": False, "restartCount": 0,
        "image": image, "imageID": "", "started": False,
    }  # fmt: skip


def pod_ip(node_index: int, pod_number: int, pod_cidr: str | None = None) -> str:
    """An address for the `pod_number`th pod of a node: from the node's spec.podCIDR when it has one (the node
    IPAM controller's), else from 10.244.0.0/16 per node as a /24 would give it (`node_index`: the node's place
    in its process). Data only: nothing connects to pod IPs."""
    if pod_cidr:
        try:
            net = ipaddress.ip_network(pod_cidr, strict=False)
        except ValueError:
            net = None
        if net is not None:
            # Neither the network address nor (in IPv4) the broadcast one; at least one host in a /31 or /32.
            hosts = max(1, net.num_addresses - 2)
            return str(net.network_address + min(net.num_addresses - 1, pod_number % hosts + 1))
    return f"10.{244 + (node_index // 256) % 12}.{node_index % 256}.{pod_number % 254 + 1}"
