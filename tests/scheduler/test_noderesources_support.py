"""Builders shared by the NodeResources plugin tests (in the spirit of upstream's newResourcePod and
makeNode helpers of noderesources' tests and st.MakePod().Req(...)); holds no tests itself."""

from __future__ import annotations

import itertools
from typing import Any

from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import CycleState
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import NodeInfo

_uid = itertools.count(1)

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_PAGE_A = "hugepages-2Mi"


def container(requests: dict[str, Any] | None = None, name: str = "c", sidecar: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "pause"}
    if requests is not None:
        c["resources"] = {"requests": {k: str(v) for k, v in requests.items()}}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def pod(
    *containers: dict[str, Any] | None,
    init: list[dict[str, Any] | None] | None = None,
    sidecars: list[dict[str, Any] | None] | None = None,
    overhead: dict[str, Any] | None = None,
    node: str = "",
    name: str = "",
    uid: str = "",
    pod_requests: dict[str, Any] | None = None,
    status_requests: dict[str, dict[str, Any] | None] | None = None,
    resize: str = "",
) -> dict[str, Any]:
    """A pod with one container per `containers` entry (a request dict, or None for a container without
    requests), plain init containers `init`, then restartable init containers `sidecars`; `pod_requests` are
    its pod-level spec.resources.requests, `status_requests` what status.containerStatuses report as each named
    container's resources.requests (None: a status without resources) and `resize` its status.resize."""
    n = next(_uid)
    spec: dict[str, Any] = {"containers": [container(r, f"c{i}") for i, r in enumerate(containers)]}
    inits = [container(r, f"i{i}") for i, r in enumerate(init or [])]
    inits += [container(r, f"s{i}", sidecar=True) for i, r in enumerate(sidecars or [])]
    if inits:
        spec["initContainers"] = inits
    if overhead:
        spec["overhead"] = {k: str(v) for k, v in overhead.items()}
    if node:
        spec["nodeName"] = node
    if pod_requests is not None:
        spec["resources"] = {"requests": {k: str(v) for k, v in pod_requests.items()}}
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name or f"p{n}", "namespace": "default", "uid": uid or f"uid-{n}"},
        "spec": spec,
    }
    if status_requests is not None or resize:
        statuses = []
        for cname, reqs in (status_requests or {}).items():
            cs: dict[str, Any] = {"name": cname}
            if reqs is not None:
                cs["resources"] = {"requests": {k: str(v) for k, v in reqs.items()}}
            statuses.append(cs)
        out["status"] = {"containerStatuses": statuses}
        if resize:
            out["status"]["resize"] = resize
    return out


def res(milli_cpu: int = 0, memory: int = 0, eph: int = 0, scalars: dict[str, int] | None = None) -> dict[str, str]:
    """Requests the way upstream's newResourcePod writes them: cpu, memory, pods and ephemeral-storage are
    always present (possibly zero), plus any scalar resources."""
    out = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "0", "ephemeral-storage": str(eph)}
    out.update({k: str(v) for k, v in (scalars or {}).items()})
    return out


def node(name: str = "n", alloc: dict[str, Any] | None = None) -> dict[str, Any]:
    """A node whose capacity and allocatable are `alloc`."""
    resources = {k: str(v) for k, v in (alloc or {}).items()}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"node-{name}", "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }


def cap_node(name: str, resources: dict[str, str]) -> dict[str, Any]:
    """st.MakeNode().Name(name).Capacity(resources): pods default to 32."""
    return node(name, {"pods": "32", **resources})


def make_node_milli(name: str, milli_cpu: int, memory: int, extended: dict[str, int] | None = None) -> dict[str, Any]:
    """upstream's makeNode(name, milliCPU, memory, extendedResource) of the noderesources tests."""
    return node(name, {**(extended or {}), "cpu": f"{milli_cpu}m", "memory": memory})


def node_info(n: dict[str, Any], *pods: dict[str, Any]) -> NodeInfo:
    return NodeInfo(n, list(pods))


def score_all(plugin: Any, requested_pod: dict[str, Any], nodes: list[dict[str, Any]], existing: list[dict[str, Any]],
              run_pre_score: bool = True) -> list[tuple[str, int]]:  # fmt: skip
    """Scores of every node as upstream's tests collect them (PreScore once, then Score per node)."""
    snap = Snapshot.from_objects(nodes, existing)
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, requested_pod, snap.node_info_list) is None
    out = []
    for ni in snap.node_info_list:
        s, st = plugin.score(state, requested_pod, ni)
        assert st is None, st
        out.append((ni.name, s))
    return out


def handle(**gates: bool) -> FrameworkHandle:
    return FrameworkHandle(feature_gates=gates)
