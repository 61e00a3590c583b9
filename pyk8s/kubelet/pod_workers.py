"""The pod side of the simulated kubelets: every pod bound to one of this process's nodes is run through its
life (`pod_lifecycle`), and every such pod being deleted is confirmed gone (upstream: pkg/kubelet/pod_workers.go,
the status manager).

One informer serves all the process's nodes: a watch of the pods bound to any node (`spec.nodeName!=`),
filtered here by node name, rather than one watch per node. Nodes with identities of their own (each its own
client, as `system:node:<name>`) each watch their own pods instead (`spec.nodeName=<name>`, all the Node
authorizer lets a node list), and each node's writes go through its own client. A pod of ours goes through a work queue to one of
`workers` tasks, which admits it as the kubelet would, then writes the status `pod_lifecycle.sync_pod` computes
(ContainerCreating first, then the sandbox and the containers started: two writes for a pod whose containers
run until deleted) and queues the pod again for the time of its next transition (a container exiting, a restart
after its back-off, a readiness delay, the active deadline). A pod with nothing due costs nothing until it
changes. A pod with a deletionTimestamp has its containers stopped, its final status written (Failed or
Succeeded, as a terminal pod's) and is deleted with grace period 0 and its UID as precondition: the confirmation
kube-apiserver waits for before the pod disappears.

With `events` on (the default; density runs turn them off), each node writes the core/v1 Events its kubelet
would, from source `kubelet` on the node's host, about each container (`fieldPath spec.containers{name}`):
`Pulling`/`Pulled` the first time a node needs an image, "already present on machine" after that (and on every
restart); `Created`, `Started`; `BackOff` when a restart waits; `Killing` when containers are stopped;
`DeadlineExceeded` past `activeDeadlineSeconds`.

A pod with PersistentVolumeClaims starts once they are Bound (`volume_manager`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..api import errors
from ..client.cache.factory import SharedInformerFactory
from ..client.cache.indexer import meta_namespace_key
from ..client.cache.shared_informer import SharedIndexInformer
from ..client.events import CoreEventRecorder, EventBroadcaster
from ..client.workqueue import RateLimitingQueue, process_items
from ..gc_policy import freeze_long_lived
from .admission import AdmittedPods, admit
from .container_model import annotation_error
from .pod_lifecycle import DEADLINE_MESSAGE, DEADLINE_REASON, Action, PodSync, needs_pod_ip, sync_pod
from .pod_status import pod_ip
from .volume_manager import MOUNT_RETRY, claim_names, unmountable

if TYPE_CHECKING:
    from .hollow_nodes import HollowNode

log = logging.getLogger(__name__)

# Status writes in flight at most. Each real kubelet writes its pods' statuses on its own; one process of simulated
# nodes needs enough workers that its writes get their share of a busy API server beside the other clients (with
# 16, pods created at 300/s waited for their kubelet while its writes queued: 200 nodes x 40 pods, p99 16-20 s
# against 11.8 s with 64), and few enough that the API server, which has no priority and fairness yet, still
# answers the nodes' Lease renewals in time (1,000 nodes x 30 pods at 300/s: with 100 workers the stalest Lease
# was 27 s old, with 64 13 s; a node is unreachable at 40 s).
POD_WORKERS = 64


_TERMINAL = ("Succeeded", "Failed")
# Writes one sync may make when transitions are due at once (ContainerCreating, then the sandbox and the
# containers); anything later is queued for its time.
_STEPS_PER_SYNC = 4


class PodWorkers:
    """Runs the pods bound to `nodes` (by node name), each node's through its own client (`HollowNode.client`)."""

    def __init__(
        self,
        nodes: Mapping[str, HollowNode],
        factory: SharedInformerFactory,
        *,
        workers: int = POD_WORKERS,
        events: bool = True,
        node_factories: Mapping[str, SharedInformerFactory] | None = None,
    ) -> None:
        """`factory` is the process's informer factory (its owner shuts it down); the pods informer joins it.
        With `node_factories` (per node, a factory on the node's own client) each node watches its own pods
        there instead, and writes through its own client (`HollowNode.client`)."""
        self.nodes = nodes
        self.workers = workers
        self.events = events
        self._broadcasters: dict[int, EventBroadcaster] = {}  # per client: each node's events go through its own
        self._recorders: dict[str, CoreEventRecorder] = {}
        self._images: dict[str, set[str]] = {}  # per node, the images it has pulled
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="pods")
        self.factories = [factory] if node_factories is None else list(node_factories.values())
        self._by_node: dict[str, SharedIndexInformer] = {}
        self._where: dict[str, str] = {}  # with per-node informers: which node's informer holds a pod key
        self.informer: SharedIndexInformer | None = None
        if node_factories is None:
            self.informer = factory.informer_for("pods", field_selector="spec.nodeName!=")
            informers = [self.informer]
        else:
            self._by_node = {
                name: f.informer_for("pods", field_selector=f"spec.nodeName={name}")
                for name, f in node_factories.items()
            }
            informers = list(self._by_node.values())
        for informer in informers:
            informer.add_event_handler(
                on_add=lambda pod, _initial: self._enqueue(pod),
                on_update=lambda _old, pod: self._enqueue(pod),
                on_delete=self._forget,
            )
        # Per node, the pods its kubelet admitted and has not seen end: what a new pod must fit beside.
        self._admitted: dict[str, AdmittedPods] = {name: AdmittedPods() for name in nodes}
        # Per pod this process synced: the resourceVersion of its last write (or of the state it last looked at)
        # and when the pod is next due. The informer may still hand over an older state of such a pod (its own
        # ContainerCreating write), which must not start it a second time; and a pod seen again unchanged
        # before its next transition costs nothing.
        self._synced: dict[str, tuple[str, float | None]] = {}
        # The UIDs of pods being deleted whose containers this process stopped: a pod a finalizer holds is seen
        # again at each update, and is stopped (Killing, the final status) once.
        self._stopped: set[str] = set()
        self._mount_waits: dict[str, str] = {}  # pods waiting for their claims, and why (logged once per reason)

    def _forget(self, pod: Any) -> None:
        obj = getattr(pod, "obj", pod)  # a tombstone carries the last state it knew
        if isinstance(obj, Mapping):
            node = (obj.get("spec") or {}).get("nodeName") or ""
            key = meta_namespace_key(obj)
            self._where.pop(key, None)
            if node in self._admitted:
                self._admitted[node].remove(key)
            self._synced.pop(key, None)
            self._stopped.discard(str((obj.get("metadata") or {}).get("uid")))
            self._mount_waits.pop(key, None)

    def _enqueue(self, pod: Mapping[str, Any]) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node in self.nodes:
            key = meta_namespace_key(pod)
            if self._by_node:
                self._where[key] = node
            self.queue.add(key)

    def pod(self, key: str) -> dict[str, Any] | None:
        """The pod `key` ("namespace/name") as the informers last saw it."""
        if self.informer is not None:
            return self.informer.indexer.get_by_key(key)
        informer = self._by_node.get(self._where.get(key, ""))
        return informer.indexer.get_by_key(key) if informer is not None else None

    async def run(self) -> None:
        for f in self.factories:
            f.start()
        try:
            await asyncio.gather(*(f.wait_for_cache_sync() for f in self.factories))
            freeze_long_lived()  # the informers hold every pod of these nodes for good: see gc_policy
            await asyncio.gather(*(self._worker() for _ in range(self.workers)))
        finally:
            self.queue.shut_down()
            await asyncio.gather(*(b.shutdown(timeout=5.0) for b in self._broadcasters.values()))

    def _event(self, node: str, pod: Mapping[str, Any], field_path: str, type_: str, reason: str, message: str) -> None:
        if not self.events:
            return
        recorder = self._recorders.get(node)
        if recorder is None:
            client = self.nodes[node].client
            broadcaster = self._broadcasters.get(id(client))
            if broadcaster is None:
                broadcaster = self._broadcasters[id(client)] = EventBroadcaster(client)
                broadcaster.start()
            recorder = self._recorders[node] = broadcaster.new_core_recorder("kubelet", node)
        md = pod["metadata"]
        ref = {
            "apiVersion": "v1", "kind": "Pod", "namespace": md.get("namespace"), "name": md.get("name"),
            "uid": md.get("uid"), "resourceVersion": md.get("resourceVersion"), "fieldPath": field_path,
        }  # fmt: skip
        recorder.event(ref, type_, reason, message)

    def _report(self, node: str, pod: Mapping[str, Any], actions: list[Action]) -> None:
        """The events of what the kubelet did: image pulls the first time the node needs an image, then each
        container created and started (a restart finds its image present), back-offs, stops and deadlines."""
        if not self.events:
            return
        pulled = self._images.setdefault(node, set())
        md = pod.get("metadata") or {}
        pod_ref = f"{md.get('name', '')}_{md.get('namespace', '')}({md.get('uid', '')})"
        for a in actions:
            path, image, name = a.field_path, a.image, a.name
            if a.kind == "start":
                if image in pulled or a.restart:  # a restarted container's image is on the node, whoever pulled it
                    self._event(
                        node, pod, path, "Normal", "Pulled", f'Container image "{image}" already present on machine'
                    )
                else:
                    pulled.add(image)
                    self._event(node, pod, path, "Normal", "Pulling", f'Pulling image "{image}"')
                    self._event(node, pod, path, "Normal", "Pulled", f'Successfully pulled image "{image}" in 0s (0s including waiting). Image size: {_image_size(image)} bytes.')  # fmt: skip
                self._event(node, pod, path, "Normal", "Created", f"Created container: {name}")
                self._event(node, pod, path, "Normal", "Started", f"Started container {name}")
            elif a.kind == "backoff":
                self._event(
                    node, pod, path, "Warning", "BackOff",
                    f"Back-off restarting failed container {name} in pod {pod_ref}",
                )  # fmt: skip
            elif a.kind == "kill":
                self._event(node, pod, path, "Normal", "Killing", f"Stopping container {name}")
            elif a.kind == "deadline":
                # Normal, as upstream's activeDeadlineHandler records it.
                self._event(node, pod, "", "Normal", DEADLINE_REASON, DEADLINE_MESSAGE)

    async def _worker(self) -> None:
        await process_items(
            self.queue, self.sync, "syncing pod", retry=True, expected=(errors.StatusError, ConnectionError)
        )

    async def sync(self, key: str) -> None:
        """Bring the pod `key` up to date with what its node would have made of it by now."""
        pod = self.pod(key)
        if pod is None:
            return
        node = self.nodes.get((pod.get("spec") or {}).get("nodeName") or "")
        if node is None:
            return
        md = pod["metadata"]
        status = pod.get("status") or {}
        if md.get("deletionTimestamp"):
            await self._confirm_deletion(node, key, pod)
            return
        admitted = self._admitted[node.spec.name]
        if status.get("phase") in _TERMINAL:
            admitted.remove(key)
            self._synced.pop(key, None)
            return
        synced = self._synced.get(key)
        if synced is not None:
            rv, next_at = synced
            if _older(md.get("resourceVersion"), rv):
                return  # the informer has not caught up with our own write yet; it will hand it over
            if md.get("resourceVersion") == rv:
                if next_at is None:
                    return  # nothing is due until the pod changes
                if next_at > time.time():
                    self.queue.add_after(key, next_at - time.time())
                    return
        if key not in admitted:
            if not status.get("startTime"):
                # Checked and recorded with no await in between, so two pods cannot both take the last room.
                rejection = admit(pod, node.node or {}, admitted)
                if rejection is not None:
                    reason, message = rejection
                    self._event(node.spec.name, pod, "", "Warning", reason, message)
                    await self._write_status(
                        node, pod, {"phase": "Failed", "reason": reason, "message": f"Pod was rejected: {message}"}
                    )
                    return
                # An annotation the model cannot read is ignored (the containers follow their commands); say so
                # once, where the user looks (`kubectl describe pod`).
                problem = annotation_error(pod)
                if problem is not None:
                    self._event(node.spec.name, pod, "", "Warning", "InvalidSimulation", f"ignored: {problem}")
            admitted.add(key, pod)  # admitted now, or by this node's previous process
        if not status.get("startTime") and claim_names(pod):
            problem = await unmountable(node.client, pod)
            if problem is not None:
                # Not started until its claims are Bound (the pod stays Pending); the kubelet looks again.
                if self._mount_waits.get(key) != problem:
                    self._mount_waits[key] = problem
                    log.info("pod %s waits for its volumes: %s", key, problem)
                self.queue.add_after(key, MOUNT_RETRY)
                return
            self._mount_waits.pop(key, None)
        host_ip = node.spec.address
        result: PodSync | None = None
        for _ in range(_STEPS_PER_SYNC):
            ip = None
            if needs_pod_ip(pod):
                ip = pod_ip(node.index, node.next_pod_number(), node.pod_cidr())
            now = time.time()
            result = sync_pod(pod, now, host_ip, ip)
            if result.status != (pod.get("status") or {}):
                pod = await self._write_status(node, pod, result.status)
            self._synced[key] = (pod["metadata"].get("resourceVersion", ""), result.next_at)
            self._report(node.spec.name, pod, result.actions)
            if result.next_at is None or result.next_at > time.time():
                break
        if result is not None and result.next_at is not None:
            self.queue.add_after(key, max(0.0, result.next_at - time.time()))

    async def _confirm_deletion(self, node: HollowNode, key: str, pod: Mapping[str, Any]) -> None:
        """The containers are stopped at once (nothing runs) and the pod's final status written, as the kubelet's
        SyncTerminatingPod does (a pod a finalizer holds shows Failed or Succeeded); then the node confirms the
        deletion."""
        md = pod["metadata"]
        uid = str(md.get("uid"))
        if uid not in self._stopped:
            result = sync_pod(pod, time.time(), node.spec.address, stopping=True)
            if result.status != (pod.get("status") or {}):
                try:
                    await self._write_status(node, pod, result.status)
                except errors.NotFound:
                    result.actions.clear()  # gone meanwhile: nothing was left to stop
            self._stopped.add(uid)
            self._report(node.spec.name, pod, result.actions)
        try:
            await node.client.delete(
                "pods", md["name"], md.get("namespace"), grace_period_seconds=0, preconditions={"uid": md["uid"]}
            )
        except (errors.NotFound, errors.Conflict):
            pass  # gone already, or a new pod of the same name: not ours to delete
        self._admitted[node.spec.name].remove(key)
        self._synced.pop(key, None)

    async def _write_status(
        self, node: HollowNode, pod: Mapping[str, Any], status: Mapping[str, Any]
    ) -> dict[str, Any]:
        md = pod["metadata"]
        # A merge patch replaces the lists (conditions, container statuses) whole, as the status manager's does;
        # fields the new status no longer has are cleared.
        old = pod.get("status") or {}
        patch = {"status": {**{k: None for k in old if k not in status}, **status}}
        written: dict[str, Any] = await node.client.patch(
            "pods", md["name"], patch, md.get("namespace"), patch_type="merge", subresource="status"
        )
        return written


def _older(rv: Any, than: str) -> bool:
    """Whether resourceVersion `rv` is older than `than` (both etcd revisions, as every API server writes them)."""
    try:
        return int(rv) < int(than)
    except (TypeError, ValueError):
        return False


def _image_size(image: str) -> int:
    """A plausible, stable size for an image (tens of MB), as the Pulled event reports one."""
    return 10_000_000 + int(hashlib.sha256(image.encode()).hexdigest()[:8], 16) % 90_000_000
