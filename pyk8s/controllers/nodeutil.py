"""What the node controllers share about Nodes and the pods on them (upstream: pkg/controller/util/node and the
taint helpers of pkg/controller/controller_utils.go): node conditions, taints swapped with a compare-and-swap
retry, the node events, and marking a not-ready node's pods NotReady.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..api import errors, meta
from ..client.event_recorder import CoreEventRecorder
from ..client.rest import RESTClient

log = logging.getLogger(__name__)

Node = Mapping[str, Any]
Taint = Mapping[str, Any]

TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
# Upstream retries a taint write this many times, reading the node again after a conflict.
UPDATE_RETRIES = 5


def get_condition(node: Node, condition_type: str) -> dict[str, Any] | None:
    for c in (node.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == condition_type:
            return c
    return None


def is_ready(node: Node) -> bool:
    c = get_condition(node, "Ready")
    return c is not None and c.get("status") == "True"


def taints_of(node: Node) -> list[dict[str, Any]]:
    return [t for t in (node.get("spec") or {}).get("taints") or () if isinstance(t, dict)]


def match_taint(a: Taint, b: Taint) -> bool:
    """Upstream Taint.MatchTaint: the same key and effect (the value does not matter)."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def taint_exists(taints: Iterable[Taint], taint: Taint) -> bool:
    return any(match_taint(t, taint) for t in taints)


def zone_key(node: Node) -> str:
    """Upstream nodetopology.GetZoneKey: region and zone from the stable (else beta) labels; "" without both."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    region = labels.get("topology.kubernetes.io/region") or labels.get("failure-domain.beta.kubernetes.io/region", "")
    zone = labels.get("topology.kubernetes.io/zone") or labels.get("failure-domain.beta.kubernetes.io/zone", "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


async def swap_node_controller_taint(
    client: RESTClient, add: Sequence[Taint], remove: Sequence[Taint], node: Node
) -> bool:
    """Add `add` (stamped with timeAdded now) and take away `remove`, in one compare-and-swap write retried on
    conflict with the node read again (upstream SwapNodeControllerTaint). False if it could not be written."""
    now = meta.rfc3339()
    current: Node = node
    for attempt in range(UPDATE_RETRIES):
        if attempt:
            try:
                current = await client.get("nodes", current["metadata"]["name"])
            except errors.NotFound:
                return True
            except (errors.StatusError, ConnectionError) as err:
                log.info("could not read node %s: %s", current["metadata"]["name"], err)
                continue
        old = taints_of(current)
        new = [t for t in old if not taint_exists(remove, t)]
        for t in add:
            if not taint_exists(new, t):
                new.append({**t, "timeAdded": now})
        if new == old:
            return True
        patch = {"metadata": {"resourceVersion": current["metadata"].get("resourceVersion")}, "spec": {"taints": new}}
        try:
            await client.patch("nodes", current["metadata"]["name"], patch, patch_type="merge")
            return True
        except errors.NotFound:
            return True
        except errors.Conflict:
            continue
        except (errors.StatusError, ConnectionError) as err:
            log.info("could not update the taints of node %s: %s", current["metadata"]["name"], err)
    return False


def node_reference(name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}


def record_node_event(recorder: CoreEventRecorder, name: str, uid: str, type_: str, reason: str, event: str) -> None:
    """Upstream RecordNodeEvent."""
    recorder.eventf(node_reference(name, uid), type_, reason, "Node %s event: %s", name, event)


def record_node_status_change(recorder: CoreEventRecorder, node: Node, new_status: str) -> None:
    """Upstream RecordNodeStatusChange (its reference carries the node's name as the uid, as upstream's does)."""
    name = node["metadata"]["name"]
    recorder.eventf(node_reference(name, name), "Normal", new_status, "Node %s status is now: %s", name, new_status)


async def mark_pods_not_ready(
    client: RESTClient, recorder: CoreEventRecorder, pods: Iterable[Mapping[str, Any]], node_name: str
) -> list[Exception]:
    """Set the Ready condition of the node's pods to False (upstream MarkPodsNotReady), with a NodeNotReady event
    for each pod changed. Returns the errors (a pod gone meanwhile is not one)."""
    problems: list[Exception] = []
    for p in pods:
        if (p.get("spec") or {}).get("nodeName") != node_name:
            continue
        pod = meta.json_copy(dict(p))
        ready = next((c for c in (pod.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"), None)
        if ready is None:
            continue
        changed = meta.set_condition(pod, {**ready, "status": "False", "lastTransitionTime": meta.rfc3339()})
        if not changed:
            continue
        try:
            await client.update_status("pods", pod)
        except errors.NotFound:
            continue
        except (errors.StatusError, ConnectionError) as err:
            problems.append(err)
            continue
        recorder.event(pod, "Warning", "NodeNotReady", "Node is not ready")
    return problems


NODE_NAME_INDEX = "spec.nodeName"


def _node_name_index(obj: Any) -> list[str]:
    name = (obj.get("spec") or {}).get("nodeName") if isinstance(obj, dict) else None
    return [name] if name else []


def pods_by_node(informer: Any) -> Callable[[str], list[dict[str, Any]]]:
    """The pods of a shared pod informer bound to a node, by an index on spec.nodeName added once whoever asks
    first (upstream: the nodeNameKeyIndex the node controllers add)."""
    indexer = informer.indexer
    if NODE_NAME_INDEX not in indexer.get_indexers():
        indexer.add_indexers({NODE_NAME_INDEX: _node_name_index})
    return lambda node_name: indexer.by_index(NODE_NAME_INDEX, node_name)
