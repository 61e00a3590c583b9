"""The scheduler cache (upstream: pkg/scheduler/backend/cache): nodes and the pods on them, kept from
informer events, plus pods the scheduler has *assumed* onto a node before the API server confirms the binding.

- `assume_pod` right after a scheduling cycle picks a node, so the next cycle already counts the pod there;
- `finish_binding` once the bind request returned (starts the assumed pod's expiry clock, if a TTL is set);
- `forget_pod` when binding failed; the informer's add of the bound pod confirms an assumed pod;
- `cleanup_assumed_pods` drops assumed pods whose binding finished but never showed up within the TTL.

`update_snapshot` refreshes the cycle's `Snapshot` by copying only the nodes that changed since the last call.
Nodes are listed zone by zone, round-robin, as upstream's nodeTree does, so a percentage-limited search spreads
over zones. A node keeps its place in that order while its zone stays the same: an update (a heartbeat) only
refreshes its NodeInfo in the snapshot; an add, a removal or a zone change rebuilds the snapshot's node list.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .framework.image_states import ImageStates
from .framework.interface import Node, Pod
from .framework.snapshot import Snapshot
from .framework.types import NodeInfo, PodInfo

log = logging.getLogger(__name__)

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")


def zone_key(node: Node) -> str:
    """A node's region and zone as one key (upstream: utilnode.GetZoneKey); "" when it has neither."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    region = next((labels[k] for k in REGION_LABELS if labels.get(k)), "")
    zone = next((labels[k] for k in ZONE_LABELS if labels.get(k)), "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


@dataclass
class PodState:
    pod: Pod
    node_name: str
    deadline: float | None = None  # set by finish_binding when a TTL is configured
    binding_finished: bool = False


class SchedulerCache:
    def __init__(self, ttl: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl  # 0: assumed pods never expire (they are confirmed by the informer or forgotten)
        self.clock = clock
        self.nodes: dict[str, NodeInfo] = {}
        self.pod_states: dict[str, PodState] = {}
        self.assumed: set[str] = set()
        # The node tree: zone key -> its nodes' names (an ordered set, in arrival order), zones in arrival order,
        # and each node's zone key there.
        self._zones: dict[str, dict[str, None]] = {}
        self._zone_of: dict[str, str] = {}
        self._images = ImageStates()
        self._dirty: set[str] = set()
        self._node_object_dirty: set[str] = set()
        self._membership_changed = True
        self.generation = 0

    # -- nodes ------------------------------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        name = node["metadata"]["name"]
        ni = self.nodes.get(name)
        if ni is None:
            ni = self.nodes[name] = NodeInfo()
        elif ni.node is not None:
            self._images.remove_node(ni.node)
        ni.set_node(node)
        self._place_in_tree(name, zone_key(node))
        self._images.add_node(node)
        self._touch(name, node_object=True)

    def update_node(self, old: Node | None, new: Node) -> None:
        """A node's new version (upstream: UpdateNode). Its place in the zone order is the one the cache holds,
        whatever `old` says."""
        self.add_node(new)

    def remove_node(self, node: Node) -> None:
        name = node["metadata"]["name"]
        ni = self.nodes.get(name)
        if ni is None or ni.node is None:
            return
        self._remove_from_tree(name)
        self._images.remove_node(ni.node)
        if ni.pods:
            ni.remove_node()  # keep the pods until their deletes arrive (upstream does the same)
        else:
            del self.nodes[name]
        self._membership_changed = True
        self._touch(name, node_object=True)

    def _place_in_tree(self, name: str, zone: str) -> None:
        """Put the node in its zone's list (upstream: nodeTree.addNode / updateNode). A node already in that zone
        stays where it is, so an update neither reorders the nodes nor rebuilds the snapshot's list; a new
        node, or one whose zone changed, goes to the end of its zone's list."""
        current = self._zone_of.get(name)
        if current == zone:
            return
        if current is not None:
            self._remove_from_tree(name)
        self._zones.setdefault(zone, {})[name] = None
        self._zone_of[name] = zone
        self._membership_changed = True

    def _remove_from_tree(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        names = self._zones[zone]
        del names[name]
        if not names:
            del self._zones[zone]  # a zone that comes back goes to the end of the zone order, as upstream

    def node_names_in_tree_order(self) -> list[str]:
        """Zone round-robin: the first node of each zone, then the second of each, … (upstream: nodeTree.list)."""
        zones = [list(z) for z in self._zones.values()]
        out: list[str] = []
        depth = max((len(z) for z in zones), default=0)
        for i in range(depth):
            for z in zones:
                if i < len(z):
                    out.append(z[i])
        return out

    # -- pods -------------------------------------------------------------------------------------------------

    def _node_info_for(self, node_name: str) -> NodeInfo:
        ni = self.nodes.get(node_name)
        if ni is None:
            ni = self.nodes[node_name] = NodeInfo()  # pods may arrive before their node
        return ni

    def _add_pod(self, pod: Pod, assumed: bool) -> None:
        node_name = pod["spec"]["nodeName"]
        self._node_info_for(node_name).add_pod(PodInfo(pod))
        uid = pod["metadata"]["uid"]
        self.pod_states[uid] = PodState(pod, node_name)
        if assumed:
            self.assumed.add(uid)
        self._touch(node_name)

    def _remove_pod(self, pod: Pod, node_name: str) -> None:
        ni = self.nodes.get(node_name)
        if ni is not None:
            ni.remove_pod(pod)
            if ni.node is None and not ni.pods:
                del self.nodes[node_name]
            self._touch(node_name)
        uid = pod["metadata"]["uid"]
        self.pod_states.pop(uid, None)
        self.assumed.discard(uid)

    def assume_pod(self, pod: Pod) -> None:
        """Count `pod` (with spec.nodeName set to the chosen node) on its node before the binding lands."""
        uid = pod["metadata"]["uid"]
        if uid in self.pod_states:
            raise ValueError(f"pod {pod['metadata'].get('namespace')}/{pod['metadata'].get('name')} is in the cache, "
                             "so can't be assumed")  # fmt: skip
        self._add_pod(pod, assumed=True)

    def finish_binding(self, pod: Pod) -> None:
        uid = pod["metadata"]["uid"]
        ps = self.pod_states.get(uid)
        if ps is not None and uid in self.assumed:
            ps.binding_finished = True
            if self.ttl > 0:
                ps.deadline = self.clock() + self.ttl

    def forget_pod(self, pod: Pod) -> None:
        """Undo `assume_pod` (binding failed)."""
        uid = pod["metadata"]["uid"]
        ps = self.pod_states.get(uid)
        if ps is None or uid not in self.assumed:
            return
        self._remove_pod(ps.pod, ps.node_name)

    def is_assumed_pod(self, pod: Pod) -> bool:
        return pod["metadata"].get("uid") in self.assumed

    def get_pod(self, pod: Pod) -> Pod | None:
        ps = self.pod_states.get(pod["metadata"].get("uid", ""))
        return None if ps is None else ps.pod

    def add_pod(self, pod: Pod) -> None:
        """An assigned pod from the informer: confirms an assumed pod (moving it if it landed elsewhere)."""
        uid = pod["metadata"]["uid"]
        ps = self.pod_states.get(uid)
        if ps is not None and uid in self.assumed:
            if ps.node_name != pod["spec"]["nodeName"]:
                log.warning("pod %s was assumed on %s but assigned to %s", uid, ps.node_name, pod["spec"]["nodeName"])
            self._remove_pod(ps.pod, ps.node_name)
            self._add_pod(pod, assumed=False)
        elif ps is None:
            self._add_pod(pod, assumed=False)
        else:
            self.update_pod(ps.pod, pod)

    def update_pod(self, old: Pod, new: Pod) -> None:
        uid = new["metadata"]["uid"]
        ps = self.pod_states.get(uid)
        if ps is None:
            self._add_pod(new, assumed=False)
            return
        if uid in self.assumed:
            # An update of an assumed pod before its add was seen: take it as the add.
            self.add_pod(new)
            return
        self._remove_pod(ps.pod, ps.node_name)
        self._add_pod(new, assumed=False)

    def remove_pod(self, pod: Pod) -> None:
        ps = self.pod_states.get(pod["metadata"]["uid"])
        if ps is None:
            return
        self._remove_pod(ps.pod, ps.node_name)

    def cleanup_assumed_pods(self) -> list[Pod]:
        """Expire assumed pods whose binding finished more than TTL ago without the informer confirming."""
        now = self.clock()
        expired = []
        for uid in list(self.assumed):
            ps = self.pod_states[uid]
            if ps.binding_finished and ps.deadline is not None and now >= ps.deadline:
                log.warning("assumed pod %s on %s expired", uid, ps.node_name)
                expired.append(ps.pod)
                self._remove_pod(ps.pod, ps.node_name)
        return expired

    # -- snapshot ---------------------------------------------------------------------------------------------

    def _touch(self, node_name: str, node_object: bool = False) -> None:
        self.generation += 1
        self._dirty.add(node_name)
        if node_object:
            self._node_object_dirty.add(node_name)

    def _snapshot_copy(self, ni: NodeInfo) -> NodeInfo:
        c = ni.clone()
        if ni.node is not None:
            c.image_states = self._images.summaries(ni.node)
        return c

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring `snapshot` up to date with the cache, copying only the nodes that changed."""
        if snapshot.generation == self.generation and not self._membership_changed:
            return
        if self._membership_changed or snapshot.num_nodes() != self._num_nodes_with_objects():
            snapshot.set_nodes([self._snapshot_copy(self.nodes[name]) for name in self.node_names_in_tree_order()])
            self._membership_changed = False
        else:
            for name in self._dirty:
                ni = self.nodes.get(name)
                if ni is not None and ni.node is not None and name in snapshot.positions:
                    snapshot.replace(self._snapshot_copy(ni), node_changed=name in self._node_object_dirty)
        self._dirty.clear()
        self._node_object_dirty.clear()
        snapshot.generation = self.generation

    def _num_nodes_with_objects(self) -> int:
        return len(self._zone_of)

    def dump(self) -> dict[str, Any]:
        return {
            "nodes": {n: [p.key for p in ni.pods] for n, ni in self.nodes.items()},
            "assumed": sorted(self.assumed),
        }
