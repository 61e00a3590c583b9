"""The kubelet's own admission of a pod bound to its node (upstream: pkg/kubelet/lifecycle/predicate.go `Admit`,
which runs the scheduler's AdmissionCheck): the pod must still fit beside the pods the node already admitted
and still match the node, since the binding may be stale or made by someone other than the scheduler.

`admit(pod, node, admitted)` answers None, or the (reason, message) of the first failure, in upstream's order:
resources (`OutOfcpu`, `OutOfmemory`, `OutOfpods`, ...: "Node didn't have enough resource: cpu, requested: 2000,
used: 500, capacity: 1000"), then NodeAffinity, NodeName and NodePorts ("Predicate X failed: ..."), then
NoExecute taints the pod does not tolerate. A rejected pod is Failed with reason R and message
"Pod was rejected: " + M, and gets a Warning event R with message M.

`AdmittedPods` keeps a node's admitted pods with their summed requests and ports, updated as pods come and go,
so that admitting a pod costs the same beside 5 pods as beside 110.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..scheduler.framework.types import NodeInfo, host_ports
from ..scheduler.plugins.helper import (
    find_matching_untolerated_taint,
    node_taints,
    pod_tolerations,
    required_node_affinity_matches,
)
from ..scheduler.plugins.nodeports import fits_ports
from ..scheduler.plugins.noderesources.fit import fits

Rejection = tuple[str, str]


def _predicate(name: str, description: str) -> Rejection:
    return name, f"Predicate {name} failed: {description}"


class AdmittedPods:
    """The pods one node's kubelet admitted and has not seen end, by key, with their usage summed (a NodeInfo)."""

    def __init__(self) -> None:
        self.pods: dict[str, Mapping[str, Any]] = {}
        self.info = NodeInfo()

    def __contains__(self, key: str) -> bool:
        return key in self.pods

    def __len__(self) -> int:
        return len(self.pods)

    def add(self, key: str, pod: Mapping[str, Any]) -> None:
        self.remove(key)
        self.pods[key] = pod
        self.info.add_pod(dict(pod))

    def remove(self, key: str) -> None:
        pod = self.pods.pop(key, None)
        if pod is not None:
            self.info.remove_pod(dict(pod))


def admit(
    pod: Mapping[str, Any], node: Mapping[str, Any], admitted: AdmittedPods | Iterable[Mapping[str, Any]]
) -> Rejection | None:
    """Whether the kubelet of `node` admits `pod`, beside the pods it already `admitted`."""
    if isinstance(admitted, AdmittedPods):
        info = admitted.info
        info.set_node(dict(node))
    else:
        info = NodeInfo(dict(node))
        for other in admitted:
            info.add_pod(dict(other))
    missing = fits(dict(pod), info)
    if missing:
        r = missing[0]  # upstream reports only the first
        return (
            f"OutOf{r.resource_name}",
            f"Node didn't have enough resource: {r.resource_name}, requested: {r.requested}, used: {r.used}, "
            f"capacity: {r.capacity}",
        )
    if not required_node_affinity_matches(dict(pod), dict(node)):
        return _predicate("NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
    wanted = (pod.get("spec") or {}).get("nodeName")
    if wanted and wanted != (node.get("metadata") or {}).get("name"):
        return _predicate("NodeName", "node(s) didn't match the requested node name")
    ports = host_ports(dict(pod))
    if ports and not fits_ports(ports, info.used_ports):
        return _predicate("NodePorts", "node(s) didn't have free ports for the requested pod ports")
    untolerated = find_matching_untolerated_taint(
        node_taints(dict(node)), pod_tolerations(dict(pod)), lambda t: t.get("effect") == "NoExecute"
    )
    if untolerated is not None:
        return _predicate("TaintToleration", "node(s) had taints that the pod didn't tolerate")
    return None
