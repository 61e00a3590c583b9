"""`pyk8s scheduler` against a real `pyk8s apiserver`, driven with the real kubectl: pods get bound, an
unschedulable pod gets upstream's condition message and event and is scheduled once a node fits, preemption
evicts the right victim, scheduling gates hold a pod, health and metrics are served."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from pyk8s.testing import polling
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess


@pytest.fixture(scope="module")
def cluster():
    server = APIServerProcess().start()
    sched = ComponentProcess("scheduler", server.kubeconfig, "--no-leader-elect", log_dir=server.dir).start()
    server.scheduler = sched  # type: ignore[attr-defined]
    yield server
    sched.stop()
    server.cleanup()


def wait_for(what: str, fn: Callable[[], Any], timeout: float = 30.0, cluster: Any = None) -> Any:
    """pyk8s.testing.polling.wait_for, showing the scheduler's log tail of `cluster` when it times out."""
    return polling.wait_for(what, fn, timeout, logs=cluster.scheduler.log_tail if cluster is not None else lambda: "")


def node(name: str, cpu: str = "4", memory: str = "32Gi", labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:  # fmt: skip
    res = {"cpu": cpu, "memory": memory, "pods": "110"}
    obj: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": res, "allocatable": res, "conditions": [{"type": "Ready", "status": "True"}]},
    }  # fmt: skip
    return obj


def pod(name: str, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}], **spec},
    }  # fmt: skip


def apply(cluster: APIServerProcess, *objs: dict[str, Any], ns: str | None = None) -> None:
    args = ["apply", "-f", "-"] + (["-n", ns] if ns else [])
    r = cluster.kubectl(*args, input=yaml.safe_dump_all(objs))
    assert r.returncode == 0, r.stderr


def get(cluster: APIServerProcess, *args: str) -> Any:
    r = cluster.kubectl("get", *args, "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def node_count(cluster: APIServerProcess) -> int:
    return len(get(cluster, "nodes")["items"])


def condition(p: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


def test_pods_get_bound_with_events(cluster):
    cluster.create_namespace("bound")
    apply(cluster, node("n-a", labels={"group": "bound"}), node("n-b", labels={"group": "bound"}))
    apply(cluster, *[pod(f"p{i}", nodeSelector={"group": "bound"}) for i in range(8)], ns="bound")

    def all_bound() -> bool:
        return all(p["spec"].get("nodeName") for p in get(cluster, "pods", "-n", "bound")["items"])

    wait_for("8 pods bound", all_bound, cluster=cluster)
    pods = get(cluster, "pods", "-n", "bound")["items"]
    assert {p["spec"]["nodeName"] for p in pods} == {"n-a", "n-b"}  # LeastAllocated spreads them
    for p in pods:
        assert condition(p, "PodScheduled")["status"] == "True"

    def scheduled_events() -> list[dict[str, Any]]:
        evs = get(cluster, "events.events.k8s.io", "-n", "bound")["items"]
        return [e for e in evs if e.get("reason") == "Scheduled"]

    events = wait_for("Scheduled events", lambda: len(scheduled_events()) == 8 and scheduled_events(), cluster=cluster)
    by_pod = {e["regarding"]["name"]: e for e in events}
    p0 = next(p for p in pods if p["metadata"]["name"] == "p0")
    assert by_pod["p0"]["note"] == f"Successfully assigned bound/p0 to {p0['spec']['nodeName']}"
    assert by_pod["p0"]["reportingController"] == "default-scheduler"
    assert by_pod["p0"]["action"] == "Binding"


def test_unschedulable_pod_gets_upstream_message_then_fits_a_new_node(cluster):
    cluster.create_namespace("unsched")
    apply(cluster, pod("big", cpu="64"), ns="unsched")
    n = node_count(cluster)

    def failed() -> dict[str, Any] | None:
        c = condition(get(cluster, "pod", "big", "-n", "unsched"), "PodScheduled")
        return c if c and c["status"] == "False" else None

    c = wait_for("PodScheduled=False", failed, cluster=cluster)
    assert c["reason"] == "Unschedulable"
    assert c["message"] == (
        f"0/{n} nodes are available: {n} Insufficient cpu. "
        f"preemption: 0/{n} nodes are available: {n} No preemption victims found for incoming pod."
    )
    evs = wait_for("FailedScheduling event", lambda: [
        e for e in get(cluster, "events.events.k8s.io", "-n", "unsched")["items"] if e["reason"] == "FailedScheduling"
    ], cluster=cluster)  # fmt: skip
    assert evs[0]["type"] == "Warning" and evs[0]["note"] == c["message"]
    # `pyk8s scheduler explain` shows the same verdict for the live pod, plugin by plugin.
    r = subprocess.run(
        [sys.executable, "-m", "pyk8s", "scheduler", "explain", "unsched/big", "--kubeconfig", str(cluster.kubeconfig),
         "-o", "json"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    explained = json.loads(r.stdout)
    assert explained["selectedNode"] is None
    fit = explained["filter"]["NodeResourcesFit"]
    assert len(fit) == n and all(v == {"code": "Unschedulable", "reasons": ["Insufficient cpu"]} for v in fit.values())
    # A node big enough arrives: the NodeAdd event moves the pod back and it is bound there.
    apply(cluster, node("n-huge", cpu="128"))
    bound = wait_for("big bound", lambda: get(cluster, "pod", "big", "-n", "unsched")["spec"].get("nodeName"),
                     cluster=cluster)  # fmt: skip
    assert bound == "n-huge"


def test_taints_and_selectors_in_the_message(cluster):
    cluster.create_namespace("taints")
    apply(cluster, node("n-tainted", labels={"only": "tainted"},
                        taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]))  # fmt: skip
    apply(cluster, pod("sel", nodeSelector={"only": "tainted"}), ns="taints")
    n = node_count(cluster)

    def message() -> str | None:
        c = condition(get(cluster, "pod", "sel", "-n", "taints"), "PodScheduled")
        return c["message"] if c and c["status"] == "False" else None

    msg = wait_for("PodScheduled=False", message, cluster=cluster)
    assert msg.startswith(
        f"0/{n} nodes are available: 1 node(s) had untolerated taint {{dedicated: gpu}}, "
        f"{n - 1} node(s) didn't match Pod's node affinity/selector. preemption: "
    )
    # Tolerating the taint makes it fit (an update of an unschedulable pod moves it back to the active queue).
    r = cluster.kubectl("delete", "pod", "sel", "-n", "taints", "--wait=true")
    assert r.returncode == 0, r.stderr
    apply(cluster, pod("sel", nodeSelector={"only": "tainted"},
                       tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]),
          ns="taints")  # fmt: skip
    assert wait_for("sel bound", lambda: get(cluster, "pod", "sel", "-n", "taints")["spec"].get("nodeName"),
                    cluster=cluster) == "n-tainted"  # fmt: skip


def test_preemption_evicts_the_lowest_priority_victim(cluster):
    cluster.create_namespace("preempt")
    apply(cluster, node("n-small", cpu="2", labels={"pool": "small"}))
    # (priorities come from PriorityClasses: the Priority admission plugin refuses a pod that states its own)
    apply(cluster, *({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"p{v}"},
                      "value": v} for v in (1, 5, 10)))  # fmt: skip
    apply(cluster,
          pod("low", cpu="1", priorityClassName="p1", nodeSelector={"pool": "small"}, terminationGracePeriodSeconds=0),
          pod("mid", cpu="1", priorityClassName="p5", nodeSelector={"pool": "small"}, terminationGracePeriodSeconds=0),
          ns="preempt")  # fmt: skip
    wait_for("low and mid bound", lambda: all(
        p["spec"].get("nodeName") == "n-small" for p in get(cluster, "pods", "-n", "preempt")["items"]
    ), cluster=cluster)  # fmt: skip
    apply(cluster, pod("high", cpu="1", priorityClassName="p10", nodeSelector={"pool": "small"}), ns="preempt")

    def names() -> set[str]:
        return {p["metadata"]["name"] for p in get(cluster, "pods", "-n", "preempt")["items"]}

    wait_for("low preempted", lambda: "low" not in names(), cluster=cluster)
    assert "mid" in names()
    assert wait_for("high bound", lambda: get(cluster, "pod", "high", "-n", "preempt")["spec"].get("nodeName"),
                    cluster=cluster) == "n-small"  # fmt: skip
    evs = get(cluster, "events.events.k8s.io", "-n", "preempt")["items"]
    preempted = [e for e in evs if e["reason"] == "Preempted"]
    assert preempted and preempted[0]["regarding"]["name"] == "low"


def test_scheduling_gates_hold_a_pod_until_removed(cluster):
    cluster.create_namespace("gates")
    apply(cluster, pod("gated", schedulingGates=[{"name": "example.com/wait"}]), ns="gates")
    time.sleep(2)
    assert not get(cluster, "pod", "gated", "-n", "gates")["spec"].get("nodeName")
    r = cluster.kubectl("patch", "pod", "gated", "-n", "gates", "--type=json",
                        "-p", '[{"op": "remove", "path": "/spec/schedulingGates"}]')  # fmt: skip
    assert r.returncode == 0, r.stderr
    wait_for(
        "gated bound", lambda: get(cluster, "pod", "gated", "-n", "gates")["spec"].get("nodeName"), cluster=cluster
    )


def test_health_and_metrics(cluster):
    sched = cluster.scheduler
    for path in ("/healthz", "/livez", "/readyz"):
        assert sched.get(path) == (200, "ok")
    status, text = sched.get("/metrics")
    assert status == 200
    for name in ("scheduler_schedule_attempts_total", "scheduler_pending_pods", "scheduler_queue_incoming_pods_total",
                 "scheduler_scheduling_attempt_duration_seconds", "scheduler_pod_scheduling_sli_duration_seconds",
                 "scheduler_framework_extension_point_duration_seconds"):  # fmt: skip
        assert name in text, name
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}' in text
