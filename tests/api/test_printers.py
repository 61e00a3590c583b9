"""Server-side Table printers: upstream v1.32's columns, and the cells `kubectl get` shows for realistic objects."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from pyk8s.apiserver import printers
from pyk8s.apiserver.tables import PRINTERS, printer_for, table

NOW = dt.datetime.now(dt.UTC)


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch):
    """Ages are printed against NOW, however long after collection a test runs."""
    monkeypatch.setattr("pyk8s.api.meta.now", lambda: NOW)


def ago(**delta: float) -> str:
    """An RFC 3339 timestamp `delta` before the start of the test run (offsets chosen so ages are stable)."""
    return (NOW - dt.timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


CREATED = ago(days=3)  # prints as "3d"


def cells(group: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The row of `obj` keyed by column name, after checking it has one cell per column."""
    p = printer_for(group, kind)
    row = p.row(obj)
    assert len(row) == len(p.columns), (kind, row)
    return dict(zip([c.name for c in p.columns], row, strict=True))


def check(group: str, kind: str, obj: dict[str, Any], want: dict[str, Any]) -> None:
    got = cells(group, kind, obj)
    assert {k: got[k] for k in want} == want
    for k, v in want.items():  # ints stay ints, strings stay strings
        assert type(got[k]) is type(v), (k, got[k])


def meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "creationTimestamp": CREATED, **extra}


# -- registration and column definitions -------------------------------------------------------------------

KINDS = [
    ("", k)
    for k in (
        "Pod", "Node", "Namespace", "Service", "Endpoints", "Event", "ConfigMap", "Secret", "ServiceAccount",
        "PersistentVolume", "PersistentVolumeClaim", "ReplicationController", "ResourceQuota", "LimitRange",
        "PodTemplate",
    )
] + [
    ("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
    ("apps", "ControllerRevision"), ("batch", "Job"), ("batch", "CronJob"), ("coordination.k8s.io", "Lease"),
    ("networking.k8s.io", "Ingress"), ("networking.k8s.io", "IngressClass"), ("networking.k8s.io", "NetworkPolicy"),
    ("scheduling.k8s.io", "PriorityClass"), ("storage.k8s.io", "StorageClass"), ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "CSIDriver"), ("storage.k8s.io", "CSINode"), ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"), ("discovery.k8s.io", "EndpointSlice"),
    ("policy", "PodDisruptionBudget"), ("autoscaling", "HorizontalPodAutoscaler"), ("events.k8s.io", "Event"),
    ("certificates.k8s.io", "CertificateSigningRequest"), ("node.k8s.io", "RuntimeClass"),
]  # fmt: skip


@pytest.mark.parametrize(("group", "kind"), KINDS)
def test_every_kind_is_registered_and_survives_a_bare_object(group: str, kind: str) -> None:
    assert (group, kind) in PRINTERS
    row = cells(group, kind, {"metadata": {"name": "x"}})
    assert "x" in row.values()
    cols = PRINTERS[(group, kind)].columns
    assert sum(c.format == "name" for c in cols) >= 1
    assert all(c.type in ("string", "integer", "boolean", "date") and c.priority in (0, 1) for c in cols)


def columns(group: str, kind: str) -> list[tuple[str, str, int]]:
    return [(c.name, c.type, c.priority) for c in PRINTERS[(group, kind)].columns]


@pytest.mark.parametrize(
    ("group", "kind", "want"),
    [
        (
            "",
            "Pod",
            [
                ("Name", "string", 0), ("Ready", "string", 0), ("Status", "string", 0), ("Restarts", "string", 0),
                ("Age", "string", 0), ("IP", "string", 1), ("Node", "string", 1), ("Nominated Node", "string", 1),
                ("Readiness Gates", "string", 1),
            ],
        ),
        (
            "",
            "Event",
            [
                ("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0), ("Object", "string", 0),
                ("Subobject", "string", 1), ("Source", "string", 1), ("Message", "string", 0),
                ("First Seen", "string", 1), ("Count", "string", 1), ("Name", "string", 1),
            ],
        ),
        (
            "batch",
            "Job",
            [
                ("Name", "string", 0), ("Status", "string", 0), ("Completions", "string", 0),
                ("Duration", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
                ("Images", "string", 1), ("Selector", "string", 1),
            ],
        ),
        (
            "batch",
            "CronJob",
            [
                ("Name", "string", 0), ("Schedule", "string", 0), ("Timezone", "string", 0),
                ("Suspend", "boolean", 0), ("Active", "integer", 0), ("Last Schedule", "string", 0),
                ("Age", "string", 0), ("Containers", "string", 1), ("Images", "string", 1), ("Selector", "string", 1),
            ],
        ),
        (
            "",
            "Node",
            [
                ("Name", "string", 0), ("Status", "string", 0), ("Roles", "string", 0), ("Age", "string", 0),
                ("Version", "string", 0), ("Internal-IP", "string", 1), ("External-IP", "string", 1),
                ("OS-Image", "string", 1), ("Kernel-Version", "string", 1), ("Container-Runtime", "string", 1),
            ],
        ),
        (
            "",
            "Service",
            [
                ("Name", "string", 0), ("Type", "string", 0), ("Cluster-IP", "string", 0),
                ("External-IP", "string", 0), ("Port(s)", "string", 0), ("Age", "string", 0),
                ("Selector", "string", 1),
            ],
        ),
        (
            "apps",
            "Deployment",
            [
                ("Name", "string", 0), ("Ready", "string", 0), ("Up-to-date", "string", 0),
                ("Available", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
                ("Images", "string", 1), ("Selector", "string", 1),
            ],
        ),
        (
            "",
            "PersistentVolume",
            [
                ("Name", "string", 0), ("Capacity", "string", 0), ("Access Modes", "string", 0),
                ("Reclaim Policy", "string", 0), ("Status", "string", 0), ("Claim", "string", 0),
                ("StorageClass", "string", 0), ("VolumeAttributesClass", "string", 0), ("Reason", "string", 0),
                ("Age", "string", 0), ("VolumeMode", "string", 1),
            ],
        ),
        ("rbac.authorization.k8s.io", "Role", [("Name", "string", 0), ("Created At", "date", 0)]),
        ("", "LimitRange", [("Name", "string", 0), ("Created At", "date", 0)]),
        (
            "scheduling.k8s.io",
            "PriorityClass",
            [
                ("Name", "string", 0), ("Value", "integer", 0), ("Global-Default", "boolean", 0),
                ("Age", "string", 0), ("PreemptionPolicy", "string", 0),
            ],
        ),
    ],
)  # fmt: skip
def test_column_definitions_match_upstream(group: str, kind: str, want: list[tuple[str, str, int]]) -> None:
    assert columns(group, kind) == want


def test_event_name_column_is_a_wide_name_column() -> None:
    name = PRINTERS[("", "Event")].columns[-1]
    assert (name.name, name.format, name.priority) == ("Name", "name", 1)


def test_table_document_uses_the_registered_printer() -> None:
    pod = {"metadata": meta("web"), "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}}
    doc = table([pod], "", "Pod")
    assert [c["name"] for c in doc["columnDefinitions"]][:3] == ["Name", "Ready", "Status"]
    assert doc["rows"][0]["cells"][:4] == ["web", "0/1", "Pending", "0"]


# -- Pod -------------------------------------------------------------------------------------------------


def running(name: str, restarts: int = 0, ready: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "started": True,
        "state": {"running": {"startedAt": ago(hours=1)}},
        **extra,
    }


def waiting(name: str, reason: str, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": restarts, "state": {"waiting": {"reason": reason}}, **extra}


def terminated(name: str, exit_code: int = 0, reason: str = "", signal: int = 0, **extra: Any) -> dict[str, Any]:
    term: dict[str, Any] = {"exitCode": exit_code, "finishedAt": ago(hours=1)}
    if reason:
        term["reason"] = reason
    if signal:
        term["signal"] = signal
    return {"name": name, "ready": False, "restartCount": 0, "state": {"terminated": term}, **extra}


LAST_CRASH = {
    "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(minutes=15, seconds=10)}}
}


def pod(
    containers: int = 1,
    statuses: list[dict[str, Any]] | None = None,
    phase: str = "Running",
    init: list[dict[str, Any]] | None = None,
    init_statuses: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    deleting: bool = False,
    reason: str = "",
    **spec_extra: Any,
) -> dict[str, Any]:
    m = meta("web-7d4b9c-x2x9k")
    if deleting:
        m["deletionTimestamp"] = ago(seconds=30)
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": "nginx"} for i in range(containers)]}
    spec.update(spec_extra)
    if init is not None:
        spec["initContainers"] = init
    status: dict[str, Any] = {"phase": phase, "conditions": conditions or []}
    if statuses is not None:
        status["containerStatuses"] = statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    if reason:
        status["reason"] = reason
    if phase != "Pending" or statuses:
        spec["nodeName"] = "node-1"
        status["podIP"] = "10.244.1.7"
        status["podIPs"] = [{"ip": "10.244.1.7"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": spec, "status": status}


READY_COND = [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}]
NOT_READY_COND = [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "False"}]


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            pod(2, [running("c0"), running("c1")], conditions=READY_COND),
            {
                "Name": "web-7d4b9c-x2x9k", "Ready": "2/2", "Status": "Running", "Restarts": "0", "Age": "3d",
                "IP": "10.244.1.7", "Node": "node-1", "Nominated Node": "<none>", "Readiness Gates": "<none>",
            },
            id="running",
        ),
        pytest.param(
            pod(1, None, phase="Pending"),
            {"Ready": "0/1", "Status": "Pending", "Restarts": "0", "IP": "<none>", "Node": "<none>"},
            id="pending-unscheduled",
        ),
        pytest.param(
            pod(1, [waiting("c0", "ContainerCreating")], phase="Pending"),
            {"Ready": "0/1", "Status": "ContainerCreating"},
            id="container-creating",
        ),
        pytest.param(
            pod(1, [terminated("c0", 0, "Completed")], phase="Succeeded"),
            {"Ready": "0/1", "Status": "Completed", "Restarts": "0"},
            id="completed",
        ),
        pytest.param(
            pod(1, [waiting("c0", "CrashLoopBackOff", restarts=5, **LAST_CRASH)]),
            {"Ready": "0/1", "Status": "CrashLoopBackOff", "Restarts": "5 (15m ago)"},
            id="crashloop",
        ),
        pytest.param(
            pod(2, [waiting("c0", "CrashLoopBackOff", restarts=2), waiting("c1", "ContainerCreating", restarts=1)]),
            {"Ready": "0/2", "Status": "CrashLoopBackOff", "Restarts": "3"},
            id="first-container-reason-wins",
        ),
        pytest.param(
            pod(1, [running("c0", restarts=3)], conditions=READY_COND),
            {"Status": "Running", "Restarts": "3"},
            id="restarts-without-a-finish-time",
        ),
        pytest.param(
            pod(1, [terminated("c0", 1, "Error")], phase="Failed"),
            {"Status": "Error"},
            id="failed-error",
        ),
        pytest.param(
            pod(1, [terminated("c0", 137)], phase="Failed"),
            {"Status": "ExitCode:137"},
            id="exit-code-without-reason",
        ),
        pytest.param(
            pod(1, [terminated("c0", 143, signal=15)], phase="Failed"),
            {"Status": "Signal:15"},
            id="signal-without-reason",
        ),
        pytest.param(pod(1, [], phase="Failed", reason="Evicted"), {"Status": "Evicted"}, id="evicted"),
        pytest.param(
            pod(1, [running("c0")], conditions=READY_COND, deleting=True),
            {"Ready": "1/1", "Status": "Terminating"},
            id="terminating",
        ),
        pytest.param(
            pod(1, [terminated("c0", 0, "Completed")], phase="Succeeded", deleting=True),
            {"Status": "Completed"},
            id="terminal-phase-is-not-terminating",
        ),
        pytest.param(
            pod(1, [running("c0")], deleting=True, reason="NodeLost"),
            {"Status": "Unknown"},
            id="node-lost",
        ),
        pytest.param(
            pod(
                1,
                [waiting("c0", "PodInitializing")],
                phase="Pending",
                init=[{"name": "migrate"}, {"name": "warm"}],
                init_statuses=[terminated("migrate", 0, "Completed"), running("warm", ready=False)],
            ),
            {"Ready": "0/1", "Status": "Init:1/2"},
            id="init-progress",
        ),
        pytest.param(
            pod(
                1,
                [waiting("c0", "PodInitializing")],
                phase="Pending",
                init=[{"name": "migrate"}],
                init_statuses=[waiting("migrate", "PodInitializing")],
            ),
            {"Status": "Init:0/1"},
            id="init-pod-initializing",
        ),
        pytest.param(
            pod(
                1,
                [waiting("c0", "PodInitializing")],
                phase="Pending",
                init=[{"name": "migrate"}],
                init_statuses=[waiting("migrate", "ImagePullBackOff")],
            ),
            {"Status": "Init:ImagePullBackOff"},
            id="init-waiting-reason",
        ),
        pytest.param(
            pod(
                1,
                [waiting("c0", "PodInitializing")],
                phase="Pending",
                init=[{"name": "migrate"}],
                init_statuses=[{**waiting("migrate", "CrashLoopBackOff", restarts=4), **LAST_CRASH}],
            ),
            {"Status": "Init:CrashLoopBackOff", "Restarts": "4 (15m ago)"},
            id="init-crashloop",
        ),
        pytest.param(
            pod(
                1,
                [waiting("c0", "PodInitializing")],
                phase="Failed",
                init=[{"name": "migrate"}],
                init_statuses=[terminated("migrate", 1, "Error")],
            ),
            {"Status": "Init:Error"},
            id="init-error",
        ),
        pytest.param(
            pod(
                1,
                [waiting("c0", "PodInitializing")],
                phase="Failed",
                init=[{"name": "migrate"}],
                init_statuses=[terminated("migrate", 2)],
            ),
            {"Status": "Init:ExitCode:2"},
            id="init-exit-code",
        ),
        pytest.param(
            pod(
                1,
                [waiting("c0", "PodInitializing")],
                phase="Failed",
                init=[{"name": "migrate"}],
                init_statuses=[terminated("migrate", 137, signal=9)],
            ),
            {"Status": "Init:Signal:9"},
            id="init-signal",
        ),
        pytest.param(
            pod(
                1,
                [running("c0")],
                init=[{"name": "proxy", "restartPolicy": "Always"}],
                init_statuses=[running("proxy", restarts=1, **LAST_CRASH)],
                conditions=READY_COND,
            ),
            {"Ready": "2/2", "Status": "Running", "Restarts": "1 (15m ago)"},
            id="sidecar",
        ),
        pytest.param(
            pod(2, [terminated("c0", 0, "Completed"), running("c1")], conditions=READY_COND),
            {"Ready": "1/2", "Status": "Running"},
            id="completed-container-with-a-running-one-ready",
        ),
        pytest.param(
            pod(2, [terminated("c0", 0, "Completed"), running("c1")], conditions=NOT_READY_COND),
            {"Ready": "1/2", "Status": "NotReady"},
            id="completed-container-with-a-running-one-not-ready",
        ),
        pytest.param(
            pod(
                1,
                None,
                phase="Pending",
                conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
            ),
            {"Status": "SchedulingGated"},
            id="scheduling-gated",
        ),
        pytest.param(
            pod(
                1,
                [running("c0")],
                conditions=[*READY_COND, {"type": "example.com/lb", "status": "True"}],
                readinessGates=[{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}],
            ),
            {"Readiness Gates": "1/2"},
            id="readiness-gates",
        ),
    ],
)  # fmt: skip
def test_pod(obj: dict[str, Any], want: dict[str, Any]) -> None:
    check("", "Pod", obj, want)


def test_pod_nominated_node_and_first_pod_ip() -> None:
    p = pod(1, None, phase="Pending")
    p["status"]["nominatedNodeName"] = "node-2"
    p["status"]["podIPs"] = [{"ip": "fd00::7"}, {"ip": "10.0.0.7"}]
    check("", "Pod", p, {"IP": "fd00::7", "Nominated Node": "node-2"})


# -- Node ------------------------------------------------------------------------------------------------


def node(labels: dict[str, str], ready: str | None, unschedulable: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {
        "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "172.18.0.2"}],
        "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian GNU/Linux 12 (bookworm)"},
        "conditions": [{"type": "MemoryPressure", "status": "False"}],
    }
    if ready is not None:
        status["conditions"].append({"type": "Ready", "status": ready})
    return {
        "metadata": {"name": "n1", "labels": labels, "creationTimestamp": CREATED},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": status,
    }


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            node({"node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "n1"}, "True"),
            {
                "Name": "n1", "Status": "Ready", "Roles": "control-plane", "Age": "3d", "Version": "v1.32.0",
                "Internal-IP": "172.18.0.2", "External-IP": "<none>", "OS-Image": "Debian GNU/Linux 12 (bookworm)",
                "Kernel-Version": "<unknown>", "Container-Runtime": "<unknown>",
            },
            id="ready-control-plane",
        ),
        pytest.param(
            node({}, "False"),
            {"Status": "NotReady", "Roles": "<none>"},
            id="not-ready",
        ),
        pytest.param(node({}, "Unknown"), {"Status": "NotReady"}, id="ready-unknown"),
        pytest.param(
            node({"node-role.kubernetes.io/worker": "", "kubernetes.io/role": "infra"}, "True", unschedulable=True),
            {"Status": "Ready,SchedulingDisabled", "Roles": "infra,worker"},
            id="cordoned-with-roles",
        ),
        pytest.param(
            node({"node-role.kubernetes.io/": "", "kubernetes.io/role": ""}, None, unschedulable=True),
            {"Status": "Unknown,SchedulingDisabled", "Roles": "<none>"},
            id="no-ready-condition",
        ),
    ],
)  # fmt: skip
def test_node(obj: dict[str, Any], want: dict[str, Any]) -> None:
    check("", "Node", obj, want)


# -- Service, Endpoints, EndpointSlice, Ingress ----------------------------------------------------------


def service(
    typ: str, ports: list[dict[str, Any]] | None = None, status: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"type": typ, **spec}
    if ports is not None:
        body["ports"] = ports
    return {"metadata": meta("svc"), "spec": body, "status": status or {"loadBalancer": {}}}


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            service(
                "ClusterIP",
                [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53, "protocol": "TCP"}],
                clusterIP="10.96.0.10",
                clusterIPs=["10.96.0.10"],
                selector={"k8s-app": "kube-dns", "a": "b"},
            ),
            {
                "Type": "ClusterIP", "Cluster-IP": "10.96.0.10", "External-IP": "<none>",
                "Port(s)": "53/UDP,53/TCP", "Age": "3d", "Selector": "a=b,k8s-app=kube-dns",
            },
            id="cluster-ip",
        ),
        pytest.param(
            service("ClusterIP", [{"port": 80, "protocol": "TCP"}], clusterIP="None", clusterIPs=["None"]),
            {"Cluster-IP": "None", "Selector": "<none>"},
            id="headless",
        ),
        pytest.param(
            service(
                "NodePort",
                [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 443, "nodePort": 30443, "protocol": "TCP"}],
                clusterIPs=["10.96.4.4"],
                externalIPs=["192.0.2.10", "192.0.2.11"],
            ),
            {"External-IP": "192.0.2.10,192.0.2.11", "Port(s)": "80:30080/TCP,443:30443/TCP"},
            id="node-port",
        ),
        pytest.param(
            service("LoadBalancer", [{"port": 80, "nodePort": 31000, "protocol": "TCP"}], clusterIPs=["10.96.5.5"]),
            {"External-IP": "<pending>", "Port(s)": "80:31000/TCP"},
            id="load-balancer-pending",
        ),
        pytest.param(
            service(
                "LoadBalancer",
                [{"port": 80, "nodePort": 31000, "protocol": "TCP"}],
                clusterIPs=["10.96.5.5"],
                status={
                    "loadBalancer": {
                        "ingress": [
                            {"hostname": "a1b2c3.elb.us-east-1.amazonaws.com"},
                            {"ip": "203.0.113.9"},
                            {"ip": "203.0.113.9"},
                        ]
                    }
                },
            ),
            {"External-IP": "203.0.113.9,a1b2c3.elb.us-east-1.amazonaws.com"},
            id="load-balancer-ingress-not-clipped",
        ),
        pytest.param(
            service(
                "LoadBalancer",
                [],
                clusterIPs=["10.96.5.5"],
                externalIPs=["192.0.2.1"],
                status={"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}]}},
            ),
            {"External-IP": "203.0.113.9,192.0.2.1", "Port(s)": "<none>"},
            id="load-balancer-with-external-ips",
        ),
        pytest.param(
            service("ExternalName", externalName="db.example.com"),
            {"Type": "ExternalName", "Cluster-IP": "<none>", "External-IP": "db.example.com", "Port(s)": "<none>"},
            id="external-name",
        ),
    ],
)  # fmt: skip
def test_service(obj: dict[str, Any], want: dict[str, Any]) -> None:
    check("", "Service", obj, want)


@pytest.mark.parametrize(
    ("subsets", "want"),
    [
        (None, "<none>"),
        ([{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 8080}]}], "10.0.0.1:8080"),
        ([{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}], "[fd00::1]:80"),
        ([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]}], "10.0.0.1,10.0.0.2"),
        ([{"notReadyAddresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}], ""),
        (
            [{"addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 4)], "ports": [{"port": 80}, {"port": 443}]}],
            "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 3 more...",
        ),
    ],
)
def test_endpoints(subsets: Any, want: str) -> None:
    obj: dict[str, Any] = {"metadata": meta("web")}
    if subsets is not None:
        obj["subsets"] = subsets
    check("", "Endpoints", obj, {"Endpoints": want})


def test_endpoint_slice() -> None:
    obj = {
        "metadata": meta("web-abc12"),
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 80}, {"name": "named"}, {}, {"port": 9090}],
        "endpoints": [
            {"addresses": ["10.0.0.1"]},
            {"addresses": ["10.0.0.2", "10.0.0.3"]},
            {"addresses": ["10.0.0.4"]},
        ],
    }
    check(
        "discovery.k8s.io",
        "EndpointSlice",
        obj,
        {
            "AddressType": "IPv4",
            "Ports": "80,named,* + 1 more...",
            "Endpoints": "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...",
        },
    )
    check("discovery.k8s.io", "EndpointSlice", {"metadata": meta("e")}, {"Ports": "<unset>", "Endpoints": "<unset>"})


@pytest.mark.parametrize(
    ("spec", "status", "want"),
    [
        ({}, {}, {"Class": "<none>", "Hosts": "*", "Address": "", "Ports": "80"}),
        (
            {"ingressClassName": "nginx", "rules": [{"host": "a.example.com"}, {}], "tls": [{"hosts": ["a"]}]},
            {"loadBalancer": {"ingress": [{"hostname": "very-long-load-balancer.example.com"}]}},
            {
                "Class": "nginx", "Hosts": "a.example.com", "Address": "very-long-load-balancer.example.com",
                "Ports": "80, 443",
            },
        ),
        (
            {"rules": [{"host": f"h{i}.example.com"} for i in range(5)]},
            {},
            {"Hosts": "h0.example.com,h1.example.com,h2.example.com + 2 more..."},
        ),
    ],
)  # fmt: skip
def test_ingress(spec: dict[str, Any], status: dict[str, Any], want: dict[str, Any]) -> None:
    check("networking.k8s.io", "Ingress", {"metadata": meta("ing"), "spec": spec, "status": status}, want)


def test_ingress_class_and_network_policy() -> None:
    ic = {
        "metadata": meta("nginx"),
        "spec": {
            "controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"},
        },
    }
    check(
        "networking.k8s.io",
        "IngressClass",
        ic,
        {"Controller": "k8s.io/ingress-nginx", "Parameters": "IngressParameters.k8s.example.com/external-lb"},
    )
    check("networking.k8s.io", "IngressClass", {"metadata": meta("x"), "spec": {}}, {"Parameters": "<none>"})
    np = {
        "metadata": meta("deny"),
        "spec": {"podSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}]}},
    }
    check("networking.k8s.io", "NetworkPolicy", np, {"Pod-Selector": "tier in (api,web)"})
    empty = {"metadata": meta("all"), "spec": {"podSelector": {}}}
    check("networking.k8s.io", "NetworkPolicy", empty, {"Pod-Selector": "<none>"})


# -- Event -----------------------------------------------------------------------------------------------


def test_event_core_v1() -> None:
    ev = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": meta("web.17a2b3c4d5e6f7a8"),
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default", "fieldPath": "spec.containers{nginx}"},
        "reason": "Pulled",
        "message": 'Successfully pulled image "nginx"\n',
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": ago(days=3),
        "lastTimestamp": ago(minutes=15, seconds=10),
        "count": 4,
        "type": "Normal",
    }
    assert printer_for("", "Event").row(ev) == [
        "15m",
        "Normal",
        "Pulled",
        "pod/web",
        "spec.containers{nginx}",
        "kubelet, node-1",
        'Successfully pulled image "nginx"',
        "3d",
        4,
        "web.17a2b3c4d5e6f7a8",
    ]


@pytest.mark.parametrize(
    ("ev", "want"),
    [
        pytest.param(
            {
                "eventTime": ago(days=3) ,
                "series": {"count": 7, "lastObservedTime": ago(minutes=15, seconds=10)},
                "reportingComponent": "default-scheduler",
                "reportingInstance": "",
                "involvedObject": {"kind": "Pod", "name": "web"},
                "type": "Warning",
                "reason": "FailedScheduling",
            },
            {"Last Seen": "15m", "First Seen": "3d", "Count": 7, "Source": "default-scheduler"},
            id="series",
        ),
        pytest.param(
            {"eventTime": ago(days=3), "reportingComponent": "c", "reportingInstance": "i", "involvedObject": {}},
            {"Last Seen": "3d", "First Seen": "3d", "Count": 1, "Source": "c, i", "Object": ""},
            id="singleton-new-style",
        ),
        pytest.param(
            {"involvedObject": {"kind": "Node"}, "count": 2},
            {"Last Seen": "<unknown>", "First Seen": "<unknown>", "Count": 2, "Object": "node", "Source": ""},
            id="no-times",
        ),
    ],
)  # fmt: skip
def test_event_variants(ev: dict[str, Any], want: dict[str, Any]) -> None:
    check("", "Event", {"metadata": meta("e"), **ev}, want)


def test_event_events_k8s_io_shape() -> None:
    ev = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": meta("n1.abc"),
        "eventTime": ago(days=3),
        "reportingController": "node-controller",
        "reportingInstance": "",
        "regarding": {"kind": "Node", "name": "n1"},
        "note": "Node n1 status is now: NodeNotReady",
        "reason": "NodeNotReady",
        "type": "Normal",
        "deprecatedSource": {"component": "node-controller"},
        "deprecatedFirstTimestamp": ago(days=3),
        "deprecatedLastTimestamp": ago(minutes=15, seconds=10),
        "deprecatedCount": 3,
    }
    check(
        "events.k8s.io",
        "Event",
        ev,
        {
            "Last Seen": "15m",
            "Object": "node/n1",
            "Message": "Node n1 status is now: NodeNotReady",
            "Source": "node-controller",
            "First Seen": "3d",
            "Count": 3,
            "Name": "n1.abc",
        },
    )


# -- config and storage ----------------------------------------------------------------------------------


def test_secret_config_map_service_account_namespace() -> None:
    secret = {"metadata": meta("tls"), "type": "kubernetes.io/tls", "data": {"tls.crt": "eA==", "tls.key": "eA=="}}
    check("", "Secret", secret, {"Name": "tls", "Type": "kubernetes.io/tls", "Data": 2, "Age": "3d"})
    check("", "Secret", {"metadata": meta("empty"), "type": "Opaque"}, {"Data": 0})
    cm = {"metadata": meta("cfg"), "data": {"a": "1"}, "binaryData": {"b": "AA=="}}
    check("", "ConfigMap", cm, {"Data": 2})
    check("", "ServiceAccount", {"metadata": meta("default"), "secrets": [{"name": "s"}]}, {"Secrets": 1})
    check("", "Namespace", {"metadata": meta("kube-system"), "status": {"phase": "Active"}}, {"Status": "Active"})


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            {
                "metadata": meta("pv-1"),
                "spec": {
                    "capacity": {"storage": "10Gi"},
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "standard",
                    "claimRef": {"namespace": "default", "name": "data"},
                    "volumeMode": "Filesystem",
                },
                "status": {"phase": "Bound"},
            },
            {
                "Capacity": "10Gi", "Access Modes": "RWO,RWX", "Reclaim Policy": "Retain", "Status": "Bound",
                "Claim": "default/data", "StorageClass": "standard", "VolumeAttributesClass": "<unset>",
                "Reason": "", "Age": "3d", "VolumeMode": "Filesystem",
            },
            id="bound",
        ),
        pytest.param(
            {
                "metadata": meta("pv-2", deletionTimestamp=ago(seconds=5)),
                "spec": {"capacity": {"storage": "1024Mi"}, "accessModes": ["ReadWriteOncePod"]},
                "status": {"phase": "Released", "reason": "Failed"},
            },
            {
                "Capacity": "1Gi", "Access Modes": "RWOP", "Status": "Terminating", "Claim": "",
                "StorageClass": "", "Reason": "Failed", "VolumeMode": "<unset>",
            },
            id="terminating",
        ),
        pytest.param(
            {
                "metadata": meta("pv-3", annotations={"volume.beta.kubernetes.io/storage-class": "slow"}),
                "spec": {"storageClassName": "fast", "volumeAttributesClassName": "gold"},
            },
            {"Capacity": "0", "StorageClass": "slow", "VolumeAttributesClass": "gold"},
            id="beta-class-annotation",
        ),
    ],
)  # fmt: skip
def test_persistent_volume(obj: dict[str, Any], want: dict[str, Any]) -> None:
    check("", "PersistentVolume", obj, want)


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            {
                "metadata": meta("data"),
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "5Gi"}},
                    "storageClassName": "standard",
                    "volumeName": "pvc-0b6e",
                    "volumeMode": "Filesystem",
                },
                "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "8Gi"}},
            },
            {
                "Status": "Bound", "Volume": "pvc-0b6e", "Capacity": "8Gi", "Access Modes": "RWO",
                "StorageClass": "standard", "VolumeAttributesClass": "<unset>", "Age": "3d",
                "VolumeMode": "Filesystem",
            },
            id="bound",
        ),
        pytest.param(
            {
                "metadata": meta("data", annotations={"volume.beta.kubernetes.io/storage-class": "legacy"}),
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}},
                "status": {"phase": "Pending"},
            },
            {"Status": "Pending", "Volume": "", "Capacity": "", "Access Modes": "", "StorageClass": "legacy"},
            id="pending",
        ),
        pytest.param(
            {"metadata": meta("data", deletionTimestamp=ago(seconds=1)), "spec": {}, "status": {"phase": "Bound"}},
            {"Status": "Terminating"},
            id="terminating",
        ),
    ],
)  # fmt: skip
def test_persistent_volume_claim(obj: dict[str, Any], want: dict[str, Any]) -> None:
    check("", "PersistentVolumeClaim", obj, want)


def test_storage_class_csi_and_volume_attachment() -> None:
    sc = {
        "metadata": meta("standard", annotations={"storageclass.kubernetes.io/is-default-class": "true"}),
        "provisioner": "rancher.io/local-path",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    check(
        "storage.k8s.io",
        "StorageClass",
        sc,
        {
            "Name": "standard (default)",
            "Provisioner": "rancher.io/local-path",
            "ReclaimPolicy": "Delete",
            "VolumeBindingMode": "WaitForFirstConsumer",
            "AllowVolumeExpansion": False,
        },
    )
    driver = {"metadata": meta("csi.example.com"), "spec": {"tokenRequests": [{"audience": "a"}, {"audience": "b"}]}}
    check(
        "storage.k8s.io",
        "CSIDriver",
        driver,
        {
            "AttachRequired": True,
            "PodInfoOnMount": False,
            "StorageCapacity": False,
            "TokenRequests": "a,b",
            "RequiresRepublish": False,
            "Modes": "<none>",
        },
    )
    bare = {
        "metadata": meta("d"),
        "spec": {"attachRequired": False, "volumeLifecycleModes": ["Persistent", "Ephemeral"]},
    }
    check(
        "storage.k8s.io",
        "CSIDriver",
        bare,
        {"AttachRequired": False, "TokenRequests": "<unset>", "Modes": "Persistent,Ephemeral"},
    )
    check("storage.k8s.io", "CSINode", {"metadata": meta("n1"), "spec": {"drivers": [{"name": "x"}]}}, {"Drivers": 1})
    va = {
        "metadata": meta("csi-123"),
        "spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv-1"}},
        "status": {"attached": True},
    }
    check(
        "storage.k8s.io",
        "VolumeAttachment",
        va,
        {"Attacher": "csi.example.com", "PV": "pv-1", "Node": "n1", "Attached": True},
    )


def test_resource_quota_splits_requests_and_limits() -> None:
    rq = {
        "metadata": meta("compute"),
        "status": {
            "hard": {
                "requests.cpu": "2",
                "limits.memory": "2Gi",
                "pods": "10",
                "limits.cpu": "4",
                "requests.memory": "1Gi",
            },
            "used": {"requests.cpu": "500m", "limits.memory": "1024Mi", "pods": "3", "requests.memory": "0"},
        },
    }
    check(
        "",
        "ResourceQuota",
        rq,
        {
            "Request": "pods: 3/10, requests.cpu: 500m/2, requests.memory: 0/1Gi",
            "Limit": "limits.cpu: 0/4, limits.memory: 1Gi/2Gi",
            "Age": "3d",
        },
    )


# -- workloads -------------------------------------------------------------------------------------------

TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}, {"name": "sidecar", "image": "busybox"}]},
}


@pytest.mark.parametrize(
    ("status", "want"),
    [
        (
            {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2},
            {
                "Name": "web", "Ready": "2/3", "Up-to-date": 3, "Available": 2, "Age": "3d",
                "Containers": "nginx,sidecar", "Images": "nginx:1.27,busybox", "Selector": "app=web",
            },
        ),
        ({}, {"Ready": "0/3", "Up-to-date": 0, "Available": 0}),
    ],
)  # fmt: skip
def test_deployment(status: dict[str, Any], want: dict[str, Any]) -> None:
    dep = {
        "metadata": meta("web"),
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
        "status": status,
    }
    check("apps", "Deployment", dep, want)


def test_deployment_invalid_selector_and_replica_set() -> None:
    bad = {"metadata": meta("x"), "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}}
    check("apps", "Deployment", bad, {"Selector": "<invalid>"})
    rs = {
        "metadata": meta("web-7d4b9c"),
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "7d4b9c"}},
            "template": TEMPLATE,
        },
        "status": {"replicas": 3, "readyReplicas": 1},
    }
    check(
        "apps",
        "ReplicaSet",
        rs,
        {"Desired": 3, "Current": 3, "Ready": 1, "Selector": "app=web,pod-template-hash=7d4b9c"},
    )
    check("apps", "ReplicaSet", {"metadata": meta("x"), "spec": {}}, {"Desired": 0, "Selector": "<none>"})
    rc = {
        "metadata": meta("rc"),
        "spec": {"replicas": 2, "selector": {"app": "web"}, "template": TEMPLATE},
        "status": {},
    }
    check("", "ReplicationController", rc, {"Desired": 2, "Current": 0, "Ready": 0, "Selector": "app=web"})


def test_stateful_set_daemon_set_controller_revision() -> None:
    sts = {"metadata": meta("db"), "spec": {"replicas": 3, "template": TEMPLATE}, "status": {"readyReplicas": 3}}
    check("apps", "StatefulSet", sts, {"Ready": "3/3", "Containers": "nginx,sidecar"})
    ds = {
        "metadata": meta("fluentd"),
        "spec": {
            "selector": {"matchLabels": {"app": "fluentd"}},
            "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": []}},
        },
        "status": {
            "desiredNumberScheduled": 3,
            "currentNumberScheduled": 3,
            "numberReady": 2,
            "updatedNumberScheduled": 3,
            "numberAvailable": 2,
        },
    }
    check(
        "apps",
        "DaemonSet",
        ds,
        {
            "Desired": 3,
            "Current": 3,
            "Ready": 2,
            "Up-to-date": 3,
            "Available": 2,
            "Node Selector": "kubernetes.io/os=linux",
            "Selector": "app=fluentd",
        },
    )
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "fluentd", "uid": "u", "controller": True}
    cr = {"metadata": meta("fluentd-6d5f", ownerReferences=[owner]), "revision": 2}
    check("apps", "ControllerRevision", cr, {"Controller": "daemonset.apps/fluentd", "Revision": 2})
    check("apps", "ControllerRevision", {"metadata": meta("x")}, {"Controller": "<none>", "Revision": 0})


def job(status: dict[str, Any], deleting: bool = False, **spec: Any) -> dict[str, Any]:
    m = meta("pi")
    if deleting:
        m["deletionTimestamp"] = ago(seconds=3)
    return {
        "metadata": m,
        "spec": {
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "abc"}},
            "template": TEMPLATE,
            **spec,
        },
        "status": status,
    }


def cond(type_: str, status: str = "True") -> dict[str, str]:
    return {"type": type_, "status": status}


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            job(
                {
                    "succeeded": 1,
                    "startTime": ago(hours=1),
                    "completionTime": ago(minutes=57, seconds=30),
                    "conditions": [cond("SuccessCriteriaMet"), cond("Complete")],
                },
                completions=1,
                parallelism=1,
            ),
            {
                "Name": "pi", "Status": "Complete", "Completions": "1/1", "Duration": "2m30s", "Age": "3d",
                "Containers": "nginx,sidecar", "Selector": "batch.kubernetes.io/controller-uid=abc",
            },
            id="complete",
        ),
        pytest.param(
            job({"active": 3, "startTime": ago(minutes=15, seconds=10)}, parallelism=3),
            {"Status": "Running", "Completions": "0/1 of 3", "Duration": "15m"},
            id="running-parallel-without-completions",
        ),
        pytest.param(
            job({"succeeded": 2, "startTime": ago(minutes=15, seconds=10)}, completions=5, parallelism=2),
            {"Status": "Running", "Completions": "2/5"},
            id="running-with-completions",
        ),
        pytest.param(job({}, parallelism=1), {"Status": "Running", "Completions": "0/1", "Duration": ""}, id="not-started"),
        pytest.param(
            job({"conditions": [cond("FailureTarget"), cond("Failed")], "startTime": ago(hours=1)}),
            {"Status": "Failed"},
            id="failed",
        ),
        pytest.param(job({"conditions": [cond("Complete", "False")]}), {"Status": "Running"}, id="false-condition"),
        pytest.param(job({"conditions": [cond("Suspended")]}), {"Status": "Suspended"}, id="suspended"),
        pytest.param(job({"conditions": [cond("FailureTarget")]}), {"Status": "FailureTarget"}, id="failure-target"),
        pytest.param(
            job({"conditions": [cond("Suspended")]}, deleting=True), {"Status": "Terminating"}, id="terminating"
        ),
        pytest.param(
            job({"conditions": [cond("Complete")]}, deleting=True), {"Status": "Complete"}, id="complete-wins"
        ),
    ],
)  # fmt: skip
def test_job(obj: dict[str, Any], want: dict[str, Any]) -> None:
    check("batch", "Job", obj, want)


@pytest.mark.parametrize(
    ("spec", "status", "want"),
    [
        (
            {"schedule": "*/5 * * * *", "suspend": False},
            {"active": [{"name": "a"}, {"name": "b"}], "lastScheduleTime": ago(minutes=15, seconds=10)},
            {
                "Name": "backup", "Schedule": "*/5 * * * *", "Timezone": "<none>", "Suspend": "False", "Active": 2,
                "Last Schedule": "15m", "Age": "3d", "Containers": "nginx,sidecar", "Selector": "<none>",
            },
        ),
        (
            {"schedule": "0 3 * * *", "timeZone": "Europe/Berlin", "suspend": True},
            {},
            {"Timezone": "Europe/Berlin", "Suspend": "True", "Active": 0, "Last Schedule": "<none>"},
        ),
        ({"schedule": "@hourly"}, {}, {"Suspend": "<unset>"}),
    ],
)  # fmt: skip
def test_cron_job(spec: dict[str, Any], status: dict[str, Any], want: dict[str, Any]) -> None:
    cj = {
        "metadata": meta("backup"),
        "spec": {**spec, "jobTemplate": {"spec": {"template": TEMPLATE}}},
        "status": status,
    }
    check("batch", "CronJob", cj, want)


def test_pod_template_and_pdb() -> None:
    pt = {"metadata": meta("tpl"), "template": TEMPLATE}
    check(
        "", "PodTemplate", pt, {"Containers": "nginx,sidecar", "Images": "nginx:1.27,busybox", "Pod Labels": "app=web"}
    )
    pdb = {"metadata": meta("web"), "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}}
    check(
        "policy",
        "PodDisruptionBudget",
        pdb,
        {"Min Available": "50%", "Max Unavailable": "N/A", "Allowed Disruptions": 1},
    )
    pdb2 = {"metadata": meta("web"), "spec": {"maxUnavailable": 1}, "status": {}}
    check(
        "policy",
        "PodDisruptionBudget",
        pdb2,
        {"Min Available": "N/A", "Max Unavailable": "1", "Allowed Disruptions": 0},
    )


# -- autoscaling -----------------------------------------------------------------------------------------


def hpa_v2(metrics: list[dict[str, Any]] | None, current: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 10,
    }
    if metrics is not None:
        spec["metrics"] = metrics
    status: dict[str, Any] = {"currentReplicas": 2, "desiredReplicas": 2}
    if current is not None:
        status["currentMetrics"] = current
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta("web"),
        "spec": spec,
        "status": status,
    }


def resource(name: str, **target: Any) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": name, "target": target}}


def resource_now(name: str, **current: Any) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": name, "current": current}}


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            hpa_v2([resource("cpu", type="Utilization", averageUtilization=50)], [resource_now("cpu", averageUtilization=20, averageValue="10m")]),
            {"Reference": "Deployment/web", "Targets": "cpu: 20%/50%", "MinPods": "1", "MaxPods": 10, "Replicas": 2, "Age": "3d"},
            id="v2-cpu",
        ),
        pytest.param(
            hpa_v2([resource("memory", type="AverageValue", averageValue="524288Ki")]),
            {"Targets": "memory: <unknown>/512Mi"},
            id="v2-memory-no-status",
        ),
        pytest.param(hpa_v2([]), {"Targets": "<none>"}, id="v2-no-metrics"),
        pytest.param(
            hpa_v2(
                [
                    {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
                    {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "30"}}},
                    resource("cpu", type="Utilization", averageUtilization=80),
                ],
                [
                    {"type": "Pods", "pods": {"metric": {"name": "rps"}, "current": {"averageValue": "1500m"}}},
                    {"type": "External", "external": {"metric": {"name": "queue"}, "current": {"averageValue": "12"}}},
                ],
            ),
            {"Targets": "1500m/1k, 12/30 (avg) + 1 more..."},
            id="v2-three-metrics",
        ),
        pytest.param(
            hpa_v2(
                [
                    {"type": "Object", "object": {"metric": {"name": "hits"}, "target": {"type": "Value", "value": "10k"}}},
                    {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "target": {"type": "Utilization"}}},
                ],
                [{"type": "Object", "object": {"current": {"value": "2k"}}}],
            ),
            {"Targets": "2k/10k, cpu: <unknown>/<auto>"},
            id="v2-object-and-container-resource",
        ),
        pytest.param(
            {
                "apiVersion": "autoscaling/v1",
                "metadata": meta("web"),
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70},
                "status": {"currentReplicas": 1, "currentCPUUtilizationPercentage": 35},
            },
            {"Targets": "cpu: 35%/70%", "MinPods": "<unset>", "MaxPods": 5, "Replicas": 1},
            id="v1-cpu",
        ),
        pytest.param(
            {
                "apiVersion": "autoscaling/v1",
                "metadata": meta("web"),
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 5},
                "status": {"currentReplicas": 0},
            },
            {"Targets": "cpu: <unknown>/80%", "MinPods": "2"},
            id="v1-default-cpu",
        ),
        pytest.param(
            {
                "apiVersion": "autoscaling/v1",
                "metadata": meta(
                    "web",
                    annotations={
                        "autoscaling.alpha.kubernetes.io/metrics": json.dumps(
                            [{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}]
                        ),
                        "autoscaling.alpha.kubernetes.io/current-metrics": json.dumps(
                            [{"type": "Resource", "resource": {"name": "memory", "currentAverageValue": "50Mi"}}]
                        ),
                    },
                ),
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60},
                "status": {"currentCPUUtilizationPercentage": 10},
            },
            {"Targets": "memory: 50Mi/100Mi, cpu: <unknown>/60%"},
            id="v1-annotation-metrics",
        ),
    ],
)  # fmt: skip
def test_horizontal_pod_autoscaler(obj: dict[str, Any], want: dict[str, Any]) -> None:
    check("autoscaling", "HorizontalPodAutoscaler", obj, want)


# -- rbac, coordination, scheduling, certificates, node ---------------------------------------------------


def test_role_bindings_and_default_tables() -> None:
    rb = {
        "metadata": meta("read-pods"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [
            {"kind": "User", "name": "jane"},
            {"kind": "User", "name": "joe"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "ci", "namespace": "build"},
        ],
    }
    check(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        rb,
        {"Role": "Role/pod-reader", "Users": "jane, joe", "Groups": "devs", "ServiceAccounts": "build/ci"},
    )
    crb = {"metadata": meta("admin"), "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"}}
    check("rbac.authorization.k8s.io", "ClusterRoleBinding", crb, {"Role": "ClusterRole/cluster-admin", "Users": ""})
    role = {"metadata": {"name": "pod-reader", "creationTimestamp": "2024-05-01T10:00:00Z"}, "rules": []}
    assert printer_for("rbac.authorization.k8s.io", "Role").row(role) == ["pod-reader", "2024-05-01T10:00:00Z"]
    assert printer_for("", "LimitRange").row({"metadata": {"name": "lr"}}) == ["lr", "0001-01-01T00:00:00Z"]


def test_lease_priority_class_runtime_class_csr() -> None:
    lease = {"metadata": meta("kube-scheduler"), "spec": {"holderIdentity": "cp_1a2b"}}
    check("coordination.k8s.io", "Lease", lease, {"Holder": "cp_1a2b"})
    check("coordination.k8s.io", "Lease", {"metadata": meta("x"), "spec": {}}, {"Holder": ""})
    pc = {"metadata": meta("system-node-critical"), "value": 2000001000, "preemptionPolicy": "PreemptLowerPriority"}
    check(
        "scheduling.k8s.io",
        "PriorityClass",
        pc,
        {"Value": 2000001000, "Global-Default": False, "PreemptionPolicy": "PreemptLowerPriority"},
    )
    check("node.k8s.io", "RuntimeClass", {"metadata": meta("gvisor"), "handler": "runsc"}, {"Handler": "runsc"})
    csr = {
        "metadata": meta("csr-abc"),
        "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "jane", "expirationSeconds": 86400},
        "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"},
    }
    check(
        "certificates.k8s.io",
        "CertificateSigningRequest",
        csr,
        {
            "Age": "3d",
            "SignerName": "kubernetes.io/kube-apiserver-client",
            "Requestor": "jane",
            "RequestedDuration": "24h",
            "Condition": "Approved,Issued",
        },
    )
    denied = {
        "metadata": meta("c"),
        "spec": {},
        "status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}, {"type": "Failed"}]},
    }
    check(
        "certificates.k8s.io",
        "CertificateSigningRequest",
        denied,
        {"SignerName": "<none>", "RequestedDuration": "<none>", "Condition": "Denied,Failed"},
    )
    pending = {"metadata": meta("c"), "spec": {}, "status": {}}
    check("certificates.k8s.io", "CertificateSigningRequest", pending, {"Condition": "Pending"})


# -- quantities ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"), ("1.5Gi", "1536Mi"), ("0.5Gi", "512Mi"),
        ("1025", "1025"), ("2000", "2k"), ("1500", "1500"), ("0.5", "500m"), ("1000m", "1"), ("100m", "100m"),
        ("1e3", "1e3"), ("1200e-3", "1200e-3"), ("0.0000000001", "1n"), ("-1Gi", "-1Gi"), (5, "5"), ("0", "0"),
        ("0Gi", "0"), (None, "<nil>"), ("garbage", "garbage"),
    ],
)  # fmt: skip
def test_quantity_canonical_form(raw: Any, want: str) -> None:
    assert printers.quantity(raw) == want
