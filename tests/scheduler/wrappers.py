"""Builders of pods and nodes for scheduler tests (upstream: scheduler/testing/wrappers.go, in our shape)."""

from __future__ import annotations

import itertools
from typing import Any

_uid = itertools.count(1)


def make_node(
    name: str,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    extra: dict[str, str] | None = None,
    images: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"node-uid-{name}",
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": {},
        "status": {
            "capacity": dict(alloc),
            "allocatable": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    if taints:
        node["spec"]["taints"] = taints
    if unschedulable:
        node["spec"]["unschedulable"] = True
    if images:
        node["status"]["images"] = images
    return node


def make_pod(
    name: str,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    priority: int | None = None,
    affinity: dict[str, Any] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    node_selector: dict[str, str] | None = None,
    host_ports: list[int] | None = None,
    volumes: list[dict[str, Any]] | None = None,
    spread: list[dict[str, Any]] | None = None,
    requests: dict[str, str] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    req: dict[str, str] = dict(requests or {})
    if cpu is not None:
        req["cpu"] = cpu
    if memory is not None:
        req["memory"] = memory
    container: dict[str, Any] = {"name": "c", "image": "pause"}
    if req:
        container["resources"] = {"requests": req}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p, "protocol": "TCP"} for p in host_ports]
    spec: dict[str, Any] = {"containers": [container], "schedulerName": "default-scheduler", **spec_extra}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    if volumes:
        spec["volumes"] = volumes
    if spread:
        spec["topologySpreadConstraints"] = spread
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"pod-uid-{next(_uid)}",
            "labels": dict(labels or {}),
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }
