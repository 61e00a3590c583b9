"""The nominator (upstream: pkg/scheduler/backend/queue/nominator.go): which pending pods are nominated to which
node, so that filters can count a preemptor on the node it is waiting for before the victims are gone.

A pod is nominated either by preemption (the node it chose, "override") or by the nominatedNodeName already
in its status when it enters the queue ("noop": keep what the pod says). The scheduling queue owns one and
hands out the freshest PodInfo it holds for each nominated pod.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .framework.interface import Pod
from .framework.types import PodInfo

MODE_NOOP = "ModeNoop"
MODE_OVERRIDE = "ModeOverride"


@dataclass(frozen=True)
class NominatingInfo:
    """Upstream's NominatingInfo: with ModeOverride the node is `nominated_node_name` ("" clears the
    nomination); with ModeNoop the pod's own status.nominatedNodeName is kept."""

    nominated_node_name: str = ""
    mode: str = MODE_OVERRIDE


def nominating_info_of(info: Any) -> NominatingInfo | None:
    """Accept a NominatingInfo, a node name (override with that node), anything with `nominated_node_name`
    and `mode` (e.g. a PostFilterResult), or None (ModeNoop, as upstream's nil NominatingInfo)."""
    if info is None or isinstance(info, NominatingInfo):
        return info
    if isinstance(info, str):
        return NominatingInfo(info, MODE_OVERRIDE)
    return NominatingInfo(getattr(info, "nominated_node_name", "") or "", getattr(info, "mode", MODE_OVERRIDE))


def nominated_node_name(pod: Pod) -> str:
    return (pod.get("status") or {}).get("nominatedNodeName") or ""


def _uid(pod: Pod) -> str:
    return pod["metadata"].get("uid", "")


class Nominator:
    """Nominated pods per node and the node per pod UID.

    `pod_getter(namespace, name)` is the pod lister: when given, a pod that no longer exists or is already
    bound is not nominated (upstream checks its informer cache the same way).
    """

    def __init__(self, pod_getter: Callable[[str, str], Pod | None] | None = None) -> None:
        self.pod_getter = pod_getter
        self.nominated_pods: dict[str, list[PodInfo]] = {}  # node name -> pods, in nomination order
        self.nominated_pod_to_node: dict[str, str] = {}  # pod UID -> node name
        self.version = 0  # changes whenever a nomination does, so readers may keep what they derived from it

    def add_nominated_pod(self, pod_info: PodInfo, nominating_info: Any = None) -> None:
        # A pod is nominated to at most one node: drop any earlier nomination first.
        self.delete_nominated_pod_if_exists(pod_info.pod)
        info = nominating_info_of(nominating_info)
        if info is None or info.mode == MODE_NOOP:
            node_name = nominated_node_name(pod_info.pod)
        else:
            node_name = info.nominated_node_name
        if not node_name:
            return
        if self.pod_getter is not None:
            md = pod_info.pod["metadata"]
            current = self.pod_getter(md.get("namespace", ""), md.get("name", ""))
            if current is None or (current.get("spec") or {}).get("nodeName"):
                return
        uid = pod_info.uid
        self.nominated_pod_to_node[uid] = node_name
        pods = self.nominated_pods.setdefault(node_name, [])
        if not any(p.uid == uid for p in pods):
            pods.append(pod_info)
        self.version += 1

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        uid = _uid(pod)
        node_name = self.nominated_pod_to_node.pop(uid, None)
        if node_name is None:
            return
        self.version += 1
        pods = self.nominated_pods.get(node_name, [])
        for i, p in enumerate(pods):
            if p.uid == uid:
                del pods[i]
                break
        if not pods:
            self.nominated_pods.pop(node_name, None)

    def update_nominated_pod(self, old_pod: Pod, new_pod_info: PodInfo) -> None:
        # An update that says nothing about the nomination (neither version carries one) must not lose the
        # node preemption reserved in memory before its status write arrived; any other update follows the pod.
        info: NominatingInfo | None = None
        if not nominated_node_name(old_pod) and not nominated_node_name(new_pod_info.pod):
            node_name = self.nominated_pod_to_node.get(_uid(old_pod))
            if node_name is not None:
                info = NominatingInfo(node_name, MODE_OVERRIDE)
        self.delete_nominated_pod_if_exists(old_pod)
        self.add_nominated_pod(new_pod_info, info)

    def nominated_pod_infos_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.nominated_pods.get(node_name, ()))
