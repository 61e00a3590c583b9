"""What the Endpoints and EndpointSlice controllers share (upstream: pkg/controller/util/endpoint and
k8s.io/endpointslice/util): which pods a Service selects and which of them get an endpoint, their addresses per
IP family, the ports a Service's target ports name on a pod, and the hostname of a pod under its subdomain."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..api.selectors import LabelSelector, label_selector_from_object

Object = Mapping[str, Any]

HEADLESS_LABEL = "service.kubernetes.io/headless"
LAST_CHANGE_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"


def service_selector(svc: Object) -> LabelSelector | None:
    """The Service's pod selector, None when it has none (its endpoints are the user's to manage)."""
    sel = (svc.get("spec") or {}).get("selector")
    if not sel:
        return None
    return label_selector_from_object({"matchLabels": sel})


def services_for_pod(services: Iterable[Object], pod: Object) -> list[Object]:
    """The Services (of the pod's namespace) whose selector matches the pod's labels."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    out = []
    for svc in services:
        selector = service_selector(svc)
        if selector is not None and selector.matches(labels):
            out.append(svc)
    return out


def services_to_sync(services: Iterable[Object], pod: Object, old: Object | None) -> set[str]:
    """The `namespace/name` keys of the Services a pod change concerns: those selecting it now or before (none
    for a resync that changed nothing)."""
    if old is not None and (old.get("metadata") or {}).get("resourceVersion") == (pod.get("metadata") or {}).get(
        "resourceVersion"
    ):
        return set()
    services = list(services)
    keys = {_key(s) for s in services_for_pod(services, pod)}
    if old is not None:
        keys |= {_key(s) for s in services_for_pod(services, old)}
    return keys


def _key(obj: Object) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace')}/{md.get('name')}"


def is_terminal(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def should_pod_be_in_endpoints(pod: Object, include_terminating: bool) -> bool:
    """Not terminal, with an IP; a terminating pod only with `include_terminating` (upstream:
    ShouldPodBeInEndpoints)."""
    if is_terminal(pod):
        return False
    status = pod.get("status") or {}
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not (pod.get("metadata") or {}).get("deletionTimestamp")


def ip_family(ip: str) -> str:
    return "IPv6" if ":" in ip else "IPv4"


def pod_ips(pod: Object) -> list[str]:
    status = pod.get("status") or {}
    ips = [str(p.get("ip")) for p in status.get("podIPs") or () if isinstance(p, Mapping) and p.get("ip")]
    if not ips and status.get("podIP"):
        ips = [str(status["podIP"])]
    return ips


def pod_ip_of_family(pod: Object, family: str) -> str | None:
    return next((ip for ip in pod_ips(pod) if ip_family(ip) == family), None)


def should_set_hostname(pod: Object, svc: Object) -> bool:
    spec = pod.get("spec") or {}
    return (
        bool(spec.get("hostname"))
        and spec.get("subdomain") == (svc.get("metadata") or {}).get("name")
        and ((pod.get("metadata") or {}).get("namespace") == (svc.get("metadata") or {}).get("namespace"))
    )


def find_port(pod: Object, service_port: Object) -> int | None:
    """The pod port a Service port's targetPort means: a number as it is, a name looked up among the
    containers' ports of the same protocol; None when the name is not there (upstream: podutil.FindPort)."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    name = str(target)
    if name.isdigit():
        return int(name)
    protocol = service_port.get("protocol") or "TCP"
    for c in (pod.get("spec") or {}).get("containers") or ():
        for p in c.get("ports") or ():
            if p.get("name") == name and (p.get("protocol") or "TCP") == protocol:
                return int(p.get("containerPort"))
    return None


def target_ref(pod: Object) -> dict[str, Any]:
    md = pod.get("metadata") or {}
    return {"kind": "Pod", "namespace": md.get("namespace"), "name": md.get("name"), "uid": md.get("uid")}


def service_labels(svc: Object, reserved: Iterable[str] = ()) -> dict[str, str]:
    """The Service's labels for the objects made for it, with the headless label when it is headless."""
    skip = set(reserved) | {HEADLESS_LABEL}
    labels = {k: v for k, v in ((svc.get("metadata") or {}).get("labels") or {}).items() if k not in skip}
    if (svc.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    return labels
