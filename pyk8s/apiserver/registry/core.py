"""Strategies of the core (v1) group: defaulting, validation, status split and selectable fields for pods,
namespaces, services, nodes, events, configmaps, secrets and the other core kinds (upstream:
pkg/registry/core/*/strategy.go, pkg/apis/core/v1/defaults.go, pkg/apis/core/validation).

Validation covers what users hit in practice and what the scheduler and controllers rely on; messages use
upstream's field paths and wording.
"""

from __future__ import annotations

import base64
import ipaddress
from typing import Any, ClassVar

from ...api import errors as e
from ...api import validation as v
from ...api.content_memo import ContentMemo
from ...api.errors import FieldError
from ...api.meta import Object, json_copy, rfc3339
from . import pod_ephemeral_containers, register
from .pod_affinity import fold_label_keys, validate_label_keys
from .strategy import Strategy, immutable

RESTART_POLICIES = ("Always", "OnFailure", "Never")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
PROTOCOLS = ("TCP", "UDP", "SCTP")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
NODE_PORT_RANGE = (30000, 32767)


def _image_pull_policy(image: str) -> str:
    name = image.rsplit("/", 1)[-1]
    if "@" in name:
        return "IfNotPresent"
    tag = name.split(":", 1)[1] if ":" in name else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def default_container(c: Object) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if c.get("image") and "imagePullPolicy" not in c:
        c["imagePullPolicy"] = _image_pull_policy(c["image"])
    res = c.setdefault("resources", {})
    limits = res.get("limits") or {}
    if limits:
        # Requests default to limits (upstream: SetDefaults_Container's resource defaulting).
        requests = res.setdefault("requests", {})
        for k, q in limits.items():
            requests.setdefault(k, q)
    for p in c.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
    for env in c.get("env") or []:
        # The downward API's field selectors default to v1 (upstream: SetDefaults_ObjectFieldSelector).
        ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        pr = c.get(probe)
        if isinstance(pr, dict):
            for k, val in (
                ("timeoutSeconds", 1),
                ("periodSeconds", 10),
                ("successThreshold", 1),
                ("failureThreshold", 3),
            ):
                pr.setdefault(k, val)


def default_pod_spec(spec: Object) -> None:
    """Upstream's v1 PodSpec defaults (also for pod templates in workloads)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        if isinstance(c, dict):
            default_container(c)
    for vol in spec.get("volumes") or []:
        if isinstance(vol, dict):
            for src in ("secret", "configMap", "downwardAPI", "projected"):
                if isinstance(vol.get(src), dict):
                    vol[src].setdefault("defaultMode", 420)
            if isinstance(vol.get("hostPath"), dict):
                vol["hostPath"].setdefault("type", "")
            if not any(k for k in vol if k != "name"):
                vol["emptyDir"] = {}
    if spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccount"] = spec["serviceAccountName"]


def _validate_quantity_map(m: Any, path: str) -> list[FieldError]:
    from ...api.quantity import QuantityError, parse_quantity

    errs: list[FieldError] = []
    if m is None:
        return errs
    if not isinstance(m, dict):
        return [e.type_invalid(path, m, "must be an object")]
    for k, q in m.items():
        try:
            if parse_quantity(str(q)) < parse_quantity("0"):
                errs.append(e.invalid(f"{path}[{k}]", q, "must be greater than or equal to 0"))
        except QuantityError as err:
            errs.append(e.invalid(f"{path}[{k}]", q, str(err)))
    return errs


def validate_container(c: Any, path: str, names: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(c, dict):
        return [e.type_invalid(path, c, "must be an object")]
    name = c.get("name") or ""
    if not name:
        errs.append(e.required(f"{path}.name", ""))
    else:
        errs += [e.invalid(f"{path}.name", name, m) for m in v.is_dns1123_label(name)]
        if name in names:
            errs.append(e.duplicate(f"{path}.name", name))
        names.add(name)
    if not c.get("image"):
        errs.append(e.required(f"{path}.image", ""))
    pp = c.get("imagePullPolicy")
    if pp and pp not in PULL_POLICIES:
        errs.append(e.not_supported(f"{path}.imagePullPolicy", pp, PULL_POLICIES))
    ports_seen: set[tuple[int, str]] = set()
    for i, p in enumerate(c.get("ports") or []):
        pp_path = f"{path}.ports[{i}]"
        if not isinstance(p, dict):
            errs.append(e.type_invalid(pp_path, p, "must be an object"))
            continue
        cp = p.get("containerPort")
        if not isinstance(cp, int) or not 0 < cp < 65536:
            errs.append(e.invalid(f"{pp_path}.containerPort", cp, "must be between 1 and 65535, inclusive"))
        proto = p.get("protocol", "TCP")
        if proto not in PROTOCOLS:
            errs.append(e.not_supported(f"{pp_path}.protocol", proto, PROTOCOLS))
        if p.get("name"):
            errs += [e.invalid(f"{pp_path}.name", p["name"], m) for m in _port_name_errors(p["name"])]
        if isinstance(cp, int):
            if (cp, proto) in ports_seen:
                errs.append(e.duplicate(f"{pp_path}", {"containerPort": cp, "protocol": proto}))
            ports_seen.add((cp, proto))
    res = c.get("resources") or {}
    errs += _validate_quantity_map(res.get("limits"), f"{path}.resources.limits")
    errs += _validate_quantity_map(res.get("requests"), f"{path}.resources.requests")
    errs += _requests_within_limits(res, f"{path}.resources")
    for i, env in enumerate(c.get("env") or []):
        if not isinstance(env, dict) or not env.get("name"):
            errs.append(e.required(f"{path}.env[{i}].name", ""))
    return errs


def _requests_within_limits(res: Object, path: str) -> list[FieldError]:
    from ...api.quantity import QuantityError, parse_quantity

    errs: list[FieldError] = []
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    if not isinstance(limits, dict) or not isinstance(requests, dict):
        return errs
    for k, q in requests.items():
        if k in limits:
            try:
                if parse_quantity(str(q)) > parse_quantity(str(limits[k])):
                    errs.append(
                        e.invalid(f"{path}.requests", q, f"must be less than or equal to {k} limit of {limits[k]}")
                    )
            except QuantityError:
                pass
    return errs


def _port_name_errors(name: str) -> list[str]:
    errs = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not all(ch.islower() or ch.isdigit() or ch == "-" for ch in name) or not any(ch.isalpha() for ch in name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    return errs


_SPEC_ERRORS = ContentMemo()  # validation errors (a tuple) by spec content and path
_QOS = ContentMemo()  # QoS class by spec content


def validate_pod_spec(spec: Any, path: str) -> list[FieldError]:
    """A pod spec's errors, worked out once per distinct spec (replicas repeat theirs)."""
    if not isinstance(spec, dict):
        return [e.required(path, "")]
    return list(_SPEC_ERRORS.get(spec, lambda: tuple(_validate_pod_spec(spec, path)), extra=path))


def _validate_pod_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    containers = spec.get("containers")
    if not containers:
        errs.append(e.required(f"{path}.containers", ""))
    elif not isinstance(containers, list):
        errs.append(e.type_invalid(f"{path}.containers", containers, "must be a list"))
    else:
        for i, c in enumerate(containers):
            errs += validate_container(c, f"{path}.containers[{i}]", names)
    for i, c in enumerate(spec.get("initContainers") or []):
        errs += validate_container(c, f"{path}.initContainers[{i}]", names)
    rp = spec.get("restartPolicy", "Always")
    if rp not in RESTART_POLICIES:
        errs.append(e.not_supported(f"{path}.restartPolicy", rp, RESTART_POLICIES))
    dp = spec.get("dnsPolicy", "ClusterFirst")
    if dp not in DNS_POLICIES:
        errs.append(e.not_supported(f"{path}.dnsPolicy", dp, DNS_POLICIES))
    tg = spec.get("terminationGracePeriodSeconds")
    if tg is not None and (not isinstance(tg, int) or tg < 0):
        errs.append(e.invalid(f"{path}.terminationGracePeriodSeconds", tg, "must be greater than or equal to 0"))
    node_name = spec.get("nodeName")
    if isinstance(node_name, str) and node_name:
        # A node's name: what the kubelet, pods/log and pod GC look up ("a/b" or ".." would be other paths).
        errs += [e.invalid(f"{path}.nodeName", node_name, msg) for msg in v.name_is_dns_subdomain(node_name, False)]
    vols: set[str] = set()
    for i, vol in enumerate(spec.get("volumes") or []):
        vname = vol.get("name", "") if isinstance(vol, dict) else ""
        if not vname:
            errs.append(e.required(f"{path}.volumes[{i}].name", ""))
        elif vname in vols:
            errs.append(e.duplicate(f"{path}.volumes[{i}].name", vname))
        vols.add(vname)
    for i, c in enumerate((spec.get("containers") or []) + (spec.get("initContainers") or [])):
        for j, m in enumerate((c.get("volumeMounts") or []) if isinstance(c, dict) else []):
            if isinstance(m, dict) and m.get("name") not in vols:
                errs.append(_field_not_found(f"{path}.containers[{i}].volumeMounts[{j}].name", m.get("name")))
    for i, t in enumerate(spec.get("tolerations") or []):
        if isinstance(t, dict) and t.get("operator", "Equal") not in ("Equal", "Exists"):
            errs.append(e.not_supported(f"{path}.tolerations[{i}].operator", t.get("operator"), ("Equal", "Exists")))
    if spec.get("nodeSelector") is not None:
        errs += v.validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    if spec.get("affinity"):
        errs += validate_label_keys(spec["affinity"], f"{path}.affinity")
    return errs


def _field_not_found(path: str, value: Any) -> FieldError:
    return FieldError(e.NOT_FOUND, path, value)


# -- Namespace -------------------------------------------------------------------------------------------------


@register("", "Namespace")
class NamespaceStrategy(Strategy):
    name_validator = staticmethod(v.name_is_dns_label)  # type: ignore[assignment]
    status_fields = ("status",)

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("finalizers", ["kubernetes"])
        # upstream labels every namespace with its own name
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")

    def initial_status(self, obj: Object) -> None:
        obj["status"] = {"phase": "Active"}

    def prepare_for_update(self, new: Object, old: Object) -> None:
        super().prepare_for_update(new, old)
        # spec.finalizers change only through /finalize
        if "spec" in old:
            new["spec"] = json_copy(old["spec"])

    def graceful_deletion_seconds(self, obj: Object, requested: int | None) -> int:
        return 0

    def deletion_blocked(self, obj: Object) -> bool:
        return bool((obj.get("spec") or {}).get("finalizers"))

    def on_mark_deleted(self, obj: Object) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"


# -- Pod -------------------------------------------------------------------------------------------------------

_POD_MUTABLE_HINT = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def qos_class(spec: Object) -> str:
    """BestEffort, Burstable or Guaranteed (upstream: pkg/apis/core/helper/qos)."""
    return _QOS.get(spec, lambda: _qos_class(spec))


def _qos_class(spec: Object) -> str:
    from ...api.quantity import QuantityError, parse_quantity

    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    guaranteed = True
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {} if isinstance(c, dict) else {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        try:
            for k in ("cpu", "memory"):
                if k in req and parse_quantity(str(req[k])) > parse_quantity("0"):
                    requests[k] = True
                if k in lim and parse_quantity(str(lim[k])) > parse_quantity("0"):
                    limits[k] = True
            if not all(k in lim for k in ("cpu", "memory")):
                guaranteed = False
            for k in ("cpu", "memory"):
                if k in req and k in lim and parse_quantity(str(req[k])) != parse_quantity(str(lim[k])):
                    guaranteed = False
        except QuantityError:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    return "Guaranteed" if guaranteed and limits else "Burstable"


@register("", "Pod")
class PodStrategy(Strategy):
    selectable_fields = (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    )
    trigger_field = "spec.nodeName"  # each node's kubelet watches its own pods (upstream: NodeNameTriggerFunc)

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            default_pod_spec(spec)
            spec.setdefault("enableServiceLinks", True)

    def admission_defaults(self, obj: Object) -> None:
        # The ServiceAccount plugin's default, kept for servers that turn the plugin off (tests); not for mirror
        # pods, which may name no service account. Priority and preemptionPolicy are the Priority plugin's alone:
        # set here, they would read as values the client gave.
        spec = obj.get("spec")
        mirror = "kubernetes.io/config.mirror" in ((obj.get("metadata") or {}).get("annotations") or {})
        if isinstance(spec, dict) and not mirror:
            spec.setdefault("serviceAccountName", "default")
            spec.setdefault("serviceAccount", spec["serviceAccountName"])

    def prepare_for_create(self, obj: Object) -> None:
        super().prepare_for_create(obj)
        # Only on create: a pod keeps the selectors folded from the labels it was created with.
        fold_label_keys(obj)

    def initial_status(self, obj: Object) -> None:
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj.get("spec") or {})}

    def validate(self, obj: Object) -> list[FieldError]:
        errs = validate_pod_spec(obj.get("spec"), "spec")
        if isinstance(obj.get("spec"), dict) and obj["spec"].get("ephemeralContainers"):
            errs.append(e.forbidden("spec.ephemeralContainers", "cannot be set on create"))
        return errs

    def prepare_for_ephemeral_containers_update(self, new: Object, old: Object) -> None:
        pod_ephemeral_containers.prepare_update(new, old, default_container)

    def validate_ephemeral_containers_update(self, new: Object, old: Object) -> list[FieldError]:
        return pod_ephemeral_containers.validate_update(new, old, validate_container)

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        errs = validate_pod_spec(new.get("spec"), "spec")
        if errs:
            return errs
        a, b = json_copy(new.get("spec") or {}), json_copy(old.get("spec") or {})
        for spec in (a, b):
            for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
                c.pop("image", None)
            spec.pop("activeDeadlineSeconds", None)
            spec.pop("terminationGracePeriodSeconds", None)
            spec.pop("schedulingGates", None)
        old_tol = b.pop("tolerations", None) or []
        new_tol = a.pop("tolerations", None) or []
        if a != b or any(t not in new_tol for t in old_tol):
            return [e.forbidden("spec", _POD_MUTABLE_HINT)]
        gates_new = (new.get("spec") or {}).get("schedulingGates") or []
        gates_old = (old.get("spec") or {}).get("schedulingGates") or []
        if any(g not in gates_old for g in gates_new):
            return [e.forbidden("spec.schedulingGates", "only deletion is allowed, but found new scheduling gate")]
        return []

    def graceful_deletion_seconds(self, obj: Object, requested: int | None) -> int:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return requested
        grace = spec.get("terminationGracePeriodSeconds", 30)
        return grace if isinstance(grace, int) and grace >= 0 else 30


# -- Service ---------------------------------------------------------------------------------------------------


@register("", "Service")
class ServiceStrategy(Strategy):
    name_validator = staticmethod(v.name_is_dns1035_label)  # type: ignore[assignment]

    def __init__(self, resource: Any) -> None:
        super().__init__(resource)
        # IPs handed to creates that are not in the watch cache yet (two creates in flight must differ).
        self._pending_ips: set[str] = set()

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        typ = spec.setdefault("type", "ClusterIP")
        if typ != "ExternalName":
            spec.setdefault("sessionAffinity", "None")
            spec.setdefault("internalTrafficPolicy", "Cluster")
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("ipFamilies", ["IPv4"])
        if typ in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        if typ == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
        for p in spec.get("ports") or []:
            if isinstance(p, dict):
                p.setdefault("protocol", "TCP")
                if "targetPort" not in p and "port" in p:
                    p["targetPort"] = p["port"]

    def initial_status(self, obj: Object) -> None:
        obj["status"] = {"loadBalancer": {}}

    async def allocate(self, obj: Object, old: Object | None, store: Any) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
            return
        old_spec = (old or {}).get("spec") or {}
        if old is not None and old_spec.get("clusterIP") and not spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
            spec["clusterIPs"] = old_spec.get("clusterIPs", [old_spec["clusterIP"]])
        entries, _ = store.cacher.list(store.resource.key_prefix)
        used_ips = {((en.obj.get("spec") or {}).get("clusterIP")) for en in entries}
        self._pending_ips -= used_ips
        if not spec.get("clusterIP"):
            for host in SERVICE_CIDR.hosts():
                ip = str(host)
                if host.packed[-1] < 10 and ip != "10.96.0.1":
                    continue
                if ip not in used_ips and ip not in self._pending_ips:
                    spec["clusterIP"] = ip
                    self._pending_ips.add(ip)
                    break
        if spec.get("clusterIP") and spec["clusterIP"] != "None":
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        elif spec.get("clusterIP") == "None":
            spec.setdefault("clusterIPs", ["None"])
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            used_ports = {
                p.get("nodePort")
                for en in entries
                for p in ((en.obj.get("spec") or {}).get("ports") or [])
                if isinstance(p, dict)
            }
            old_ports = {(p.get("port"), p.get("protocol")): p.get("nodePort") for p in old_spec.get("ports") or []}
            nxt = NODE_PORT_RANGE[0]
            for p in spec.get("ports") or []:
                if isinstance(p, dict) and not p.get("nodePort"):
                    kept = old_ports.get((p.get("port"), p.get("protocol")))
                    if kept:
                        p["nodePort"] = kept
                        continue
                    while nxt in used_ports:
                        nxt += 1
                    p["nodePort"] = nxt
                    used_ports.add(nxt)

    def validate(self, obj: Object) -> list[FieldError]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [e.required("spec", "")]
        errs: list[FieldError] = []
        typ = spec.get("type", "ClusterIP")
        if typ not in SERVICE_TYPES:
            errs.append(e.not_supported("spec.type", typ, SERVICE_TYPES))
        ports = spec.get("ports") or []
        if typ != "ExternalName" and not ports and spec.get("clusterIP") != "None":
            errs.append(e.required("spec.ports", ""))
        if typ == "ExternalName" and not spec.get("externalName"):
            errs.append(e.required("spec.externalName", ""))
        names: set[str] = set()
        for i, p in enumerate(ports):
            path = f"spec.ports[{i}]"
            if not isinstance(p, dict):
                errs.append(e.type_invalid(path, p, "must be an object"))
                continue
            port = p.get("port")
            if not isinstance(port, int) or not 0 < port < 65536:
                errs.append(e.invalid(f"{path}.port", port, "must be between 1 and 65535, inclusive"))
            if len(ports) > 1 and not p.get("name"):
                errs.append(e.required(f"{path}.name", ""))
            if p.get("name"):
                if p["name"] in names:
                    errs.append(e.duplicate(f"{path}.name", p["name"]))
                names.add(p["name"])
            if p.get("protocol", "TCP") not in PROTOCOLS:
                errs.append(e.not_supported(f"{path}.protocol", p.get("protocol"), PROTOCOLS))
        if spec.get("selector") is not None:
            errs += v.validate_labels(spec.get("selector"), "spec.selector")
        ip = spec.get("clusterIP")
        if ip and ip != "None":
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                errs.append(
                    e.invalid("spec.clusterIPs[0]", ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")
                )
        return errs

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        errs = self.validate(new)
        ns, os_ = new.get("spec") or {}, old.get("spec") or {}
        if os_.get("clusterIP") and ns.get("type") != "ExternalName" and ns.get("clusterIP") != os_.get("clusterIP"):
            errs += immutable(ns.get("clusterIPs"), os_.get("clusterIPs"), "spec.clusterIPs[0]")
        return errs


# -- Node ------------------------------------------------------------------------------------------------------


@register("", "Node")
class NodeStrategy(Strategy):
    selectable_fields = ("spec.unschedulable",)

    def fields(self, obj: Object) -> dict[str, str]:
        out = super().fields(obj)
        out["spec.unschedulable"] = "true" if (obj.get("spec") or {}).get("unschedulable") else "false"
        return out

    def validate(self, obj: Object) -> list[FieldError]:
        errs: list[FieldError] = []
        for i, t in enumerate((obj.get("spec") or {}).get("taints") or []):
            if not isinstance(t, dict):
                continue
            if t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                errs.append(
                    e.not_supported(
                        f"spec.taints[{i}].effect", t.get("effect"), ("NoSchedule", "PreferNoSchedule", "NoExecute")
                    )
                )
            errs += [
                e.invalid(f"spec.taints[{i}].key", t.get("key"), m) for m in v.is_qualified_name(t.get("key") or "")
            ]
        return errs

    def prepare_for_create(self, obj: Object) -> None:
        # Nodes register with their status (kubelets create them that way).
        status = obj.get("status")
        super().prepare_for_create(obj)
        if status is not None:
            obj["status"] = status


# -- Events ----------------------------------------------------------------------------------------------------


@register("", "Event")
class EventStrategy(Strategy):
    allow_create_on_update = True
    name_validator = staticmethod(v.name_is_path_segment)  # type: ignore[assignment]
    selectable_fields = (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    )

    def fields(self, obj: Object) -> dict[str, str]:
        out = super().fields(obj)
        src = obj.get("source") or {}
        out["source"] = src.get("component", "") if isinstance(src, dict) else ""
        return out

    def validate(self, obj: Object) -> list[FieldError]:
        errs: list[FieldError] = []
        inv = obj.get("involvedObject")
        if not isinstance(inv, dict):
            errs.append(e.required("involvedObject", ""))
        elif (
            obj["metadata"].get("namespace")
            and inv.get("namespace")
            and inv["namespace"] != obj["metadata"]["namespace"]
        ):
            errs.append(e.invalid("involvedObject.namespace", inv["namespace"], "does not match event.namespace"))
        t = obj.get("type")
        if t and t not in ("Normal", "Warning"):
            errs.append(e.not_supported("type", t, ("Normal", "Warning")))
        return errs


# -- ConfigMaps and Secrets ------------------------------------------------------------------------------------


def _validate_data_keys(data: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(data, dict):
        return errs
    for k in data:
        if not k or any(not (ch.isalnum() or ch in "-._") for ch in k) or len(k) > 253:
            errs.append(
                e.invalid(
                    path,
                    k,
                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                )
            )
    return errs


class _ImmutableDataStrategy(Strategy):
    data_fields: ClassVar[tuple[str, ...]] = ("data", "binaryData")

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        errs = self.validate(new)
        if old.get("immutable"):
            if not new.get("immutable"):
                errs.append(e.forbidden("immutable", "field is immutable when `immutable` is set"))
            for f in self.data_fields:
                if new.get(f) != old.get(f):
                    errs.append(e.forbidden(f, "field is immutable when `immutable` is set"))
        return errs


@register("", "ConfigMap")
class ConfigMapStrategy(_ImmutableDataStrategy):
    def validate(self, obj: Object) -> list[FieldError]:
        errs = _validate_data_keys(obj.get("data"), "data") + _validate_data_keys(obj.get("binaryData"), "binaryData")
        for k in set(obj.get("data") or {}) & set(obj.get("binaryData") or {}):
            errs.append(e.invalid("data", k, "duplicate of key present in binaryData"))
        return errs


@register("", "Secret")
class SecretStrategy(_ImmutableDataStrategy):
    data_fields = ("data",)
    selectable_fields = ("type",)

    def default(self, obj: Object) -> None:
        obj.setdefault("type", "Opaque")
        # stringData is write-only: merged into data (base64) on write.
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            data = obj.setdefault("data", {})
            for k, val in string_data.items():
                data[k] = base64.b64encode(str(val).encode()).decode()

    def validate(self, obj: Object) -> list[FieldError]:
        errs = _validate_data_keys(obj.get("data"), "data")
        for k, val in (obj.get("data") or {}).items():
            try:
                base64.b64decode(val, validate=True)
            except (ValueError, TypeError):
                errs.append(e.invalid(f"data[{k}]", "<secret contents redacted>", "must be valid base64"))
        return errs

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        return super().validate_update(new, old) + immutable(new.get("type"), old.get("type"), "type")


# -- Others ----------------------------------------------------------------------------------------------------


@register("", "ReplicationController")
class ReplicationControllerStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("replicas", 1)
            template = spec.get("template")
            if isinstance(template, dict):
                labels = (template.get("metadata") or {}).get("labels") or {}
                if not spec.get("selector") and labels:
                    spec["selector"] = dict(labels)
                if isinstance(template.get("spec"), dict):
                    default_pod_spec(template["spec"])

    def initial_status(self, obj: Object) -> None:
        obj["status"] = {"replicas": 0}


@register("", "PersistentVolume")
class PersistentVolumeStrategy(Strategy):
    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
            spec.setdefault("volumeMode", "Filesystem")

    def initial_status(self, obj: Object) -> None:
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": rfc3339()}

    def prepare_for_status_update(self, new: Object, old: Object) -> None:
        super().prepare_for_status_update(new, old)
        # The server stamps a phase change unless the writer set the time itself (PersistentVolumeLastPhaseTransitionTime).
        status, old_status = new.get("status"), old.get("status") or {}
        if isinstance(status, dict) and status.get("phase") != old_status.get("phase"):
            if status.get("lastPhaseTransitionTime") in (None, old_status.get("lastPhaseTransitionTime")):
                status["lastPhaseTransitionTime"] = rfc3339()


@register("", "PersistentVolumeClaim")
class PersistentVolumeClaimStrategy(Strategy):
    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("volumeMode", "Filesystem")

    def initial_status(self, obj: Object) -> None:
        obj["status"] = {"phase": "Pending"}


@register("", "Endpoints")
class EndpointsStrategy(Strategy):
    allow_create_on_update = True


@register("", "ServiceAccount")
class ServiceAccountStrategy(Strategy):
    pass
