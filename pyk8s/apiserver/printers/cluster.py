"""Table printers of the other API groups: coordination, scheduling, node, networking, storage, rbac, discovery, policy, autoscaling, events.k8s.io, certificates (upstream: pkg/printers/internalversion/printers.go)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from typing import Any

from ...api.meta import Object
from ...api.storage_class import is_default_class
from ..tables import NAME, Cells, Column, age, human_duration, printer
from .common import AGE, _col, _d, _format_selector, _i, _int_or_string, _l, _meta, _more, _name, _s, _wide, quantity
from .core import _lb_ingress

# -- coordination, scheduling, node ----------------------------------------------------------------------


@printer(
    "coordination.k8s.io",
    "Lease",
    [NAME, _col("Holder", "holderIdentity contains the identity of the holder of a current lease."), AGE],
)
def lease_row(obj: Object) -> Cells:
    return [_name(obj), _s(_d(obj.get("spec")).get("holderIdentity")), age(obj)]


@printer(
    "scheduling.k8s.io",
    "PriorityClass",
    [
        NAME,
        _col("Value", "value represents the integer value of this priority class.", "integer"),
        _col(
            "Global-Default",
            "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
            "boolean",
        ),
        AGE,
        _col("PreemptionPolicy", "preemptionPolicy is the Policy for preempting pods with lower priority."),
    ],
)
def priority_class_row(obj: Object) -> Cells:
    return [
        _name(obj),
        _i(obj.get("value")),
        bool(obj.get("globalDefault")),
        age(obj),
        _s(obj.get("preemptionPolicy")),
    ]


@printer("node.k8s.io", "RuntimeClass", [NAME, _col("Handler"), AGE])
def runtime_class_row(obj: Object) -> Cells:
    return [_name(obj), _s(obj.get("handler")), age(obj)]


# -- networking ------------------------------------------------------------------------------------------


def ingress_hosts(rules: Any) -> str:
    rules = [_d(r) for r in _l(rules)]
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        if not more and rule.get("host"):
            hosts.append(_s(rule.get("host")))
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - 3} more..." if more else text


@printer(
    "networking.k8s.io",
    "Ingress",
    [
        NAME,
        _col("Class", "The name of the IngressClass resource that should be used for additional configuration"),
        _col("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
        _col("Address", "Address is a list containing ingress points for the load-balancer"),
        _col("Ports", "Ports of TLS configurations that open"),
        AGE,
    ],
)
def ingress_row(obj: Object) -> Cells:
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    class_name = spec.get("ingressClassName")
    return [
        _name(obj),
        "<none>" if class_name is None else _s(class_name),
        ingress_hosts(spec.get("rules")),
        _lb_ingress(status.get("loadBalancer")),
        "80, 443" if _l(spec.get("tls")) else "80",
        age(obj),
    ]


@printer(
    "networking.k8s.io",
    "IngressClass",
    [
        NAME,
        _col("Controller", "Controller that is responsible for handling this class"),
        _col("Parameters", "A reference to a resource with additional parameters"),
        AGE,
    ],
)
def ingress_class_row(obj: Object) -> Cells:
    spec = _d(obj.get("spec"))
    params = spec.get("parameters")
    parameters = "<none>"
    if isinstance(params, dict):
        parameters = _s(params.get("kind"))
        if params.get("apiGroup") is not None:
            parameters += "." + _s(params.get("apiGroup"))
        parameters += "/" + _s(params.get("name"))
    return [_name(obj), _s(spec.get("controller")), parameters, age(obj)]


@printer(
    "networking.k8s.io",
    "NetworkPolicy",
    [NAME, _col("Pod-Selector", "Selects the pods to which this NetworkPolicy object applies."), AGE],
)
def network_policy_row(obj: Object) -> Cells:
    selector = _d(obj.get("spec")).get("podSelector")
    return [_name(obj), _format_selector(selector if selector is not None else {}), age(obj)]


# -- storage ---------------------------------------------------------------------------------------------


@printer(
    "storage.k8s.io",
    "StorageClass",
    [
        NAME,
        _col("Provisioner", "provisioner indicates the type of the provisioner."),
        _col(
            "ReclaimPolicy",
            "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class.",
        ),
        _col(
            "VolumeBindingMode",
            "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.",
        ),
        _col("AllowVolumeExpansion", "allowVolumeExpansion shows whether the storage class allow volume expand."),
        AGE,
    ],
)
def storage_class_row(obj: Object) -> Cells:
    name = _name(obj)
    if is_default_class(obj):
        name += " (default)"
    reclaim, binding = obj.get("reclaimPolicy"), obj.get("volumeBindingMode")
    return [
        name,
        _s(obj.get("provisioner")),
        "Delete" if reclaim is None else _s(reclaim),
        "Immediate" if binding is None else _s(binding),
        bool(obj.get("allowVolumeExpansion")),
        age(obj),
    ]


@printer(
    "storage.k8s.io",
    "VolumeAttachment",
    [
        NAME,
        _col(
            "Attacher",
            "attacher indicates the name of the volume driver that MUST handle this request.",
            format_="name",
        ),
        _col("PV", "persistentVolumeName represents the name of the persistent volume to attach."),
        _col("Node", "nodeName represents the node that the volume should be attached to."),
        _col("Attached", "attached indicates the volume is successfully attached.", "boolean"),
        AGE,
    ],
)
def volume_attachment_row(obj: Object) -> Cells:
    spec = _d(obj.get("spec"))
    return [
        _name(obj),
        _s(spec.get("attacher")),
        _s(_d(spec.get("source")).get("persistentVolumeName")),
        _s(spec.get("nodeName")),
        bool(_d(obj.get("status")).get("attached")),
        age(obj),
    ]


@printer(
    "storage.k8s.io",
    "CSIDriver",
    [
        NAME,
        _col(
            "AttachRequired", "attachRequired indicates this CSI volume driver requires an attach operation.", "boolean"
        ),
        _col(
            "PodInfoOnMount",
            "podInfoOnMount indicates this CSI volume driver requires additional pod information during mount operations.",
            "boolean",
        ),
        _col(
            "StorageCapacity",
            "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report.",
            "boolean",
        ),
        _col(
            "TokenRequests",
            "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication.",
        ),
        _col(
            "RequiresRepublish",
            "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume.",
            "boolean",
        ),
        _col("Modes", "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports."),
        AGE,
    ],
)
def csi_driver_row(obj: Object) -> Cells:
    spec = _d(obj.get("spec"))
    attach = spec.get("attachRequired")
    tokens = spec.get("tokenRequests")
    token_cell = "<unset>"
    if isinstance(tokens, list):
        token_cell = ",".join(_s(_d(t).get("audience")) for t in tokens)
    return [
        _name(obj),
        True if attach is None else bool(attach),
        bool(spec.get("podInfoOnMount")),
        bool(spec.get("storageCapacity")),
        token_cell,
        bool(spec.get("requiresRepublish")),
        ",".join(_s(m) for m in _l(spec.get("volumeLifecycleModes"))) or "<none>",
        age(obj),
    ]


@printer(
    "storage.k8s.io",
    "CSINode",
    [NAME, _col("Drivers", "Drivers indicates the number of CSI drivers registered on the node", "integer"), AGE],
)
def csi_node_row(obj: Object) -> Cells:
    return [_name(obj), len(_l(_d(obj.get("spec")).get("drivers"))), age(obj)]


# -- rbac ------------------------------------------------------------------------------------------------


def _binding_columns(what: str) -> list[Column]:
    return [
        NAME,
        _col("Role", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace."),
        AGE,
        _wide("Users", f"Users in the {what}"),
        _wide("Groups", f"Groups in the {what}"),
        _wide("ServiceAccounts", f"ServiceAccounts in the {what}"),
    ]


def binding_row(obj: Object) -> Cells:
    ref = _d(obj.get("roleRef"))
    users, groups, sas = [], [], []
    for s in (_d(s) for s in _l(obj.get("subjects"))):
        kind, name = s.get("kind"), _s(s.get("name"))
        if kind == "ServiceAccount":
            sas.append(f"{_s(s.get('namespace'))}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [
        _name(obj),
        f"{_s(ref.get('kind'))}/{_s(ref.get('name'))}",
        age(obj),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(sas),
    ]


printer("rbac.authorization.k8s.io", "RoleBinding", _binding_columns("roleBinding"))(binding_row)
printer("rbac.authorization.k8s.io", "ClusterRoleBinding", _binding_columns("clusterRoleBinding"))(binding_row)


# -- discovery -------------------------------------------------------------------------------------------


def _first(items: Iterable[str], limit: int = 3) -> str:
    shown: list[str] = []
    count = 0
    for item in items:
        if len(shown) < limit:
            shown.append(item)
        count += 1
    return _more(shown, count > limit, count, limit)


def _slice_port(port: dict[str, Any]) -> str:
    if port.get("port") is not None:
        return str(_i(port.get("port")))
    if port.get("name") is not None:
        return _s(port.get("name"))
    return "*"


@printer(
    "discovery.k8s.io",
    "EndpointSlice",
    [
        NAME,
        _col("AddressType", "addressType specifies the type of address carried by this EndpointSlice."),
        _col("Ports", "ports specifies the list of network ports exposed by each endpoint in this slice."),
        _col("Endpoints", "endpoints is a list of unique endpoints in this slice."),
        AGE,
    ],
)
def endpoint_slice_row(obj: Object) -> Cells:
    ports = (_slice_port(_d(p)) for p in _l(obj.get("ports")))
    addresses = (_s(a) for e in _l(obj.get("endpoints")) for a in _l(_d(e).get("addresses")))
    return [_name(obj), _s(obj.get("addressType")), _first(ports), _first(addresses), age(obj)]


# -- policy ----------------------------------------------------------------------------------------------


@printer(
    "policy",
    "PodDisruptionBudget",
    [
        NAME,
        _col("Min Available", "The minimum number of pods that must be available."),
        _col("Max Unavailable", "The maximum number of pods that may be unavailable."),
        _col("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time.", "integer"),
        AGE,
    ],
)
def pod_disruption_budget_row(obj: Object) -> Cells:
    spec = _d(obj.get("spec"))
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        _name(obj),
        "N/A" if min_available is None else _int_or_string(min_available),
        "N/A" if max_unavailable is None else _int_or_string(max_unavailable),
        _i(_d(obj.get("status")).get("disruptionsAllowed")),
        age(obj),
    ]


# -- autoscaling -----------------------------------------------------------------------------------------

_HPA_SPECS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
_HPA_STATUSES_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
_DEFAULT_CPU_UTILIZATION = 80


def _v1_metric_spec(m: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v1 MetricSpec (from the metrics annotation) in the v2 shape."""
    typ = m.get("type")
    out: dict[str, Any] = {"type": typ}
    if typ in ("Resource", "ContainerResource"):
        key = "resource" if typ == "Resource" else "containerResource"
        src = _d(m.get(key))
        util = src.get("targetAverageUtilization")
        out[key] = {
            "name": src.get("name"),
            "target": {
                "type": "AverageValue" if util is None else "Utilization",
                "averageUtilization": util,
                "averageValue": src.get("targetAverageValue"),
            },
        }
    elif typ == "Pods":
        src = _d(m.get("pods"))
        out["pods"] = {"target": {"type": "AverageValue", "averageValue": src.get("targetAverageValue", 0)}}
    elif typ == "Object":
        src = _d(m.get("object"))
        out["object"] = {"target": {"value": src.get("targetValue", 0), "averageValue": src.get("averageValue")}}
    elif typ == "External":
        src = _d(m.get("external"))
        out["external"] = {"target": {"value": src.get("targetValue"), "averageValue": src.get("targetAverageValue")}}
    return out


def _v1_metric_status(m: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v1 MetricStatus (from the current-metrics annotation) in the v2 shape."""
    typ = m.get("type")
    out: dict[str, Any] = {"type": typ}
    if typ in ("Resource", "ContainerResource"):
        key = "resource" if typ == "Resource" else "containerResource"
        src = _d(m.get(key))
        out[key] = {
            "name": src.get("name"),
            "current": {
                "averageUtilization": src.get("currentAverageUtilization"),
                "averageValue": src.get("currentAverageValue", 0),
            },
        }
    elif typ == "Pods":
        out["pods"] = {"current": {"averageValue": _d(m.get("pods")).get("currentAverageValue", 0)}}
    elif typ == "Object":
        src = _d(m.get("object"))
        out["object"] = {"current": {"value": src.get("currentValue", 0), "averageValue": src.get("averageValue")}}
    elif typ == "External":
        src = _d(m.get("external"))
        out["external"] = {
            "current": {"value": src.get("currentValue", 0), "averageValue": src.get("currentAverageValue")}
        }
    return out


def _json_list(text: Any) -> list[dict[str, Any]]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    return [_d(v) for v in _l(value)]


def hpa_metrics(hpa: Object) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The HPA's metric specs and current statuses in the autoscaling/v2 shape, converting a v1 object the way
    upstream converts it to its internal version (annotation metrics, then the CPU target, else 80% CPU)."""
    spec, status = _d(hpa.get("spec")), _d(hpa.get("status"))
    is_v1 = _s(hpa.get("apiVersion")) == "autoscaling/v1" or (
        "apiVersion" not in hpa and "metrics" not in spec and "targetCPUUtilizationPercentage" in spec
    )
    if not is_v1:
        return [_d(m) for m in _l(spec.get("metrics"))], [_d(m) for m in _l(status.get("currentMetrics"))]
    annotations = _d(_meta(hpa).get("annotations"))
    specs = [_v1_metric_spec(m) for m in _json_list(annotations.get(_HPA_SPECS_ANNOTATION))]
    cpu = spec.get("targetCPUUtilizationPercentage")
    if cpu is not None:
        specs.append(_cpu_utilization_spec(_i(cpu)))
    if not specs:
        specs = [_cpu_utilization_spec(_DEFAULT_CPU_UTILIZATION)]
    if _HPA_STATUSES_ANNOTATION in annotations:
        statuses = [_v1_metric_status(m) for m in _json_list(annotations.get(_HPA_STATUSES_ANNOTATION))]
    elif status.get("currentCPUUtilizationPercentage") is not None:
        current = {"averageUtilization": _i(status.get("currentCPUUtilizationPercentage"))}
        statuses = [{"type": "Resource", "resource": {"name": "cpu", "current": current}}]
    else:
        statuses = []
    return specs, statuses


def _cpu_utilization_spec(percent: int) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": percent}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def _value_target(src: dict[str, Any], current_src: Any) -> str:
    """An Object or External metric: `current/target`, or `current/target (avg)` for an average value."""
    target = _d(src.get("target"))
    current = "<unknown>"
    if target.get("averageValue") is not None:
        if isinstance(current_src, dict) and _d(current_src.get("current")).get("averageValue") is not None:
            current = quantity(_d(current_src.get("current")).get("averageValue"))
        return f"{current}/{quantity(target.get('averageValue'))} (avg)"
    if isinstance(current_src, dict):
        current = quantity(_d(current_src.get("current")).get("value"))
    return f"{current}/{quantity(target.get('value'))}"


def _resource_target(src: dict[str, Any], current_src: Any) -> str:
    """A Resource or ContainerResource metric: `name: current/target`, utilizations as percentages."""
    target = _d(src.get("target"))
    current = "<unknown>"
    now = _d(_d(current_src).get("current"))
    if target.get("averageValue") is not None:
        if isinstance(current_src, dict):
            current = quantity(now.get("averageValue"))
        return f"{_s(src.get('name'))}: {current}/{quantity(target.get('averageValue'))}"
    if isinstance(current_src, dict) and now.get("averageUtilization") is not None:
        current = f"{_i(now.get('averageUtilization'))}%"
    wanted = "<auto>"
    if target.get("averageUtilization") is not None:
        wanted = f"{_i(target.get('averageUtilization'))}%"
    return f"{_s(src.get('name'))}: {current}/{wanted}"


def format_hpa_metrics(specs: list[dict[str, Any]], statuses: list[dict[str, Any]]) -> str:
    """The TARGETS cell: each metric as `current/target`, matched to its status by position; two at most."""
    if not specs:
        return "<none>"
    shown: list[str] = []
    for i, spec in enumerate(specs):
        st = statuses[i] if i < len(statuses) else {}
        typ = spec.get("type")
        if typ in ("External", "Object"):
            key = typ.lower()
            shown.append(_value_target(_d(spec.get(key)), st.get(key)))
        elif typ == "Pods":
            target = _d(_d(spec.get("pods")).get("target"))
            current = "<unknown>"
            if isinstance(st.get("pods"), dict):
                current = quantity(_d(st["pods"].get("current")).get("averageValue"))
            shown.append(f"{current}/{quantity(target.get('averageValue'))}")
        elif typ in ("Resource", "ContainerResource"):
            key = "resource" if typ == "Resource" else "containerResource"
            shown.append(_resource_target(_d(spec.get(key)), st.get(key)))
        else:
            shown.append("<unknown type>")
    if len(specs) > 2:
        return f"{', '.join(shown[:2])} + {len(specs) - 2} more..."
    return ", ".join(shown)


@printer(
    "autoscaling",
    "HorizontalPodAutoscaler",
    [
        NAME,
        _col(
            "Reference",
            "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
        ),
        _col(
            "Targets",
            "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).",
        ),
        _col(
            "MinPods",
            "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
        ),
        _col(
            "MaxPods", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up."
        ),
        _col(
            "Replicas",
            "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
        ),
        AGE,
    ],
)
def horizontal_pod_autoscaler_row(hpa: Object) -> Cells:
    spec, status = _d(hpa.get("spec")), _d(hpa.get("status"))
    ref = _d(spec.get("scaleTargetRef"))
    min_replicas = spec.get("minReplicas")
    return [
        _name(hpa),
        f"{_s(ref.get('kind'))}/{_s(ref.get('name'))}",
        format_hpa_metrics(*hpa_metrics(hpa)),
        "<unset>" if min_replicas is None else str(_i(min_replicas)),
        _i(spec.get("maxReplicas")),
        _i(status.get("currentReplicas")),
        age(hpa),
    ]


# -- certificates ----------------------------------------------------------------------------------------


def csr_condition(csr: Object) -> str:
    status = _d(csr.get("status"))
    types = {_d(c).get("type") for c in _l(status.get("conditions"))}
    text = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        text += ",Failed"
    if status.get("certificate"):
        text += ",Issued"
    return text


@printer(
    "certificates.k8s.io",
    "CertificateSigningRequest",
    [
        NAME,
        AGE,
        _col("SignerName", "signerName indicates the requested signer, and is a qualified name."),
        _col(
            "Requestor",
            'request contains an x509 certificate signing request encoded in a "CERTIFICATE REQUEST" PEM block.',
        ),
        _col("RequestedDuration", "expirationSeconds is the requested duration of validity of the issued certificate."),
        _col("Condition", "conditions applied to the request."),
    ],
)
def certificate_signing_request_row(csr: Object) -> Cells:
    spec = _d(csr.get("spec"))
    seconds = spec.get("expirationSeconds")
    return [
        _name(csr),
        age(csr),
        _s(spec.get("signerName")) or "<none>",
        _s(spec.get("username")),
        "<none>" if seconds is None else human_duration(dt.timedelta(seconds=_i(seconds))),
        csr_condition(csr),
    ]
