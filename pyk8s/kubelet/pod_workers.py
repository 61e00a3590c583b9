"""The pod side of the simulated kubelets: every pod bound to one of this process's nodes is started, and every
such pod being deleted is confirmed gone (upstream: pkg/kubelet/pod_workers.go, the status manager).

One informer serves all the process's nodes: a watch of the pods bound to any node (`spec.nodeName!=`),
filtered here by node name, rather than one watch per node. A pod of ours goes through a work queue to one of
`workers` tasks, which writes its status as the kubelet would (`pod_status`): ContainerCreating first, then
Running. A pod with a deletionTimestamp has its containers stopped and is deleted with grace period 0 and its
UID as precondition: the confirmation kube-apiserver waits for before the pod disappears.

With `events` on (the default; density runs turn them off), each node writes the core/v1 Events its kubelet
would, from source `kubelet` on the node's host, about each container (`fieldPath spec.containers{name}`):
`Pulling`/`Pulled` the first time a node needs an image, "already present on machine" after that; `Created`,
`Started`; and `Killing` when the pod is deleted.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..api import errors
from ..api.meta import rfc3339
from ..client.cache.factory import SharedInformerFactory
from ..client.cache.indexer import meta_namespace_key
from ..client.cache.shared_informer import drop_managed_fields
from ..client.events import CoreEventRecorder, EventBroadcaster
from ..client.rest import RESTClient
from ..client.workqueue import RateLimitingQueue, ShutDown
from .admission import admit
from .pod_status import creating_status, pod_ip, running_status

if TYPE_CHECKING:
    from .hollow_nodes import HollowNode

log = logging.getLogger(__name__)

POD_WORKERS = 16
_TERMINAL = ("Succeeded", "Failed")


class PodWorkers:
    """Runs the pods bound to `nodes` (by node name) through `client`."""

    def __init__(
        self, client: RESTClient, nodes: Mapping[str, HollowNode], *, workers: int = POD_WORKERS, events: bool = True
    ) -> None:
        self.client = client
        self.nodes = nodes
        self.workers = workers
        self.broadcaster = EventBroadcaster(client) if events else None
        self._recorders: dict[str, CoreEventRecorder] = {}
        self._images: dict[str, set[str]] = {}  # per node, the images it has pulled
        self.factory = SharedInformerFactory(client, transform=drop_managed_fields)
        self.informer = self.factory.informer_for("pods", field_selector="spec.nodeName!=")
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="pods")
        self.informer.add_event_handler(
            on_add=lambda pod, _initial: self._enqueue(pod),
            on_update=lambda _old, pod: self._enqueue(pod),
            on_delete=self._forget,
        )
        # Per node, the pods its kubelet admitted and has not seen end: what a new pod must fit beside.
        self._admitted: dict[str, dict[str, Mapping[str, Any]]] = {name: {} for name in nodes}
        # Pods whose containers this process started: the informer may still hand over an older state of such a
        # pod (its own ContainerCreating write), which must not start it a second time.
        self._started: set[str] = set()

    def _forget(self, pod: Any) -> None:
        obj = getattr(pod, "obj", pod)  # a tombstone carries the last state it knew
        if isinstance(obj, Mapping):
            node = (obj.get("spec") or {}).get("nodeName") or ""
            key = meta_namespace_key(obj)
            self._admitted.get(node, {}).pop(key, None)
            self._started.discard(key)

    def _enqueue(self, pod: Mapping[str, Any]) -> None:
        if (pod.get("spec") or {}).get("nodeName") in self.nodes:
            self.queue.add(meta_namespace_key(pod))

    async def run(self) -> None:
        self.factory.start()
        if self.broadcaster is not None:
            self.broadcaster.start()
        try:
            await self.factory.wait_for_cache_sync()
            await asyncio.gather(*(self._worker() for _ in range(self.workers)))
        finally:
            self.queue.shut_down()
            await self.factory.shutdown()
            if self.broadcaster is not None:
                await self.broadcaster.shutdown(timeout=5.0)

    def _event(self, node: str, pod: Mapping[str, Any], field_path: str, type_: str, reason: str, message: str) -> None:
        if self.broadcaster is None:
            return
        recorder = self._recorders.get(node)
        if recorder is None:
            recorder = self._recorders[node] = self.broadcaster.new_core_recorder("kubelet", node)
        md = pod["metadata"]
        ref = {
            "apiVersion": "v1", "kind": "Pod", "namespace": md.get("namespace"), "name": md.get("name"),
            "uid": md.get("uid"), "resourceVersion": md.get("resourceVersion"), "fieldPath": field_path,
        }  # fmt: skip
        recorder.event(ref, type_, reason, message)

    def _containers(self, pod: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
        """(fieldPath, container) of the init containers in order, then the app containers."""
        spec = pod.get("spec") or {}
        return [
            *((f"spec.initContainers{{{c.get('name', '')}}}", c) for c in spec.get("initContainers") or ()),
            *((f"spec.containers{{{c.get('name', '')}}}", c) for c in spec.get("containers") or ()),
        ]

    def _started_events(self, node: str, pod: Mapping[str, Any]) -> None:
        pulled = self._images.setdefault(node, set())
        for path, c in self._containers(pod):
            image, name = c.get("image", ""), c.get("name", "")
            if image in pulled:
                self._event(
                    node, pod, path, "Normal", "Pulled", f'Container image "{image}" already present on machine'
                )
            else:
                pulled.add(image)
                self._event(node, pod, path, "Normal", "Pulling", f'Pulling image "{image}"')
                self._event(node, pod, path, "Normal", "Pulled", f'Successfully pulled image "{image}" in 0s (0s including waiting). Image size: {_image_size(image)} bytes.')  # fmt: skip
            self._event(node, pod, path, "Normal", "Created", f"Created container: {name}")
            self._event(node, pod, path, "Normal", "Started", f"Started container {name}")

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self.sync(key)
                self.queue.forget(key)
            except (errors.StatusError, ConnectionError) as err:
                log.warning("syncing pod %s: %s", key, err)
                self.queue.add_rate_limited(key)
            except Exception:
                log.exception("syncing pod %s failed", key)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    async def sync(self, key: str) -> None:
        """Bring the pod `key` one step closer to what its node would make of it."""
        pod = self.informer.indexer.get_by_key(key)
        if pod is None:
            return
        node = self.nodes.get((pod.get("spec") or {}).get("nodeName") or "")
        if node is None:
            return
        md = pod["metadata"]
        status = pod.get("status") or {}
        if md.get("deletionTimestamp"):
            # The containers are stopped at once (nothing runs); then the node confirms the deletion.
            if status.get("phase") == "Running" or key in self._started:
                for path, c in self._containers(pod):
                    if path.startswith("spec.containers") or c.get("restartPolicy") == "Always":
                        self._event(
                            node.spec.name, pod, path, "Normal", "Killing", f"Stopping container {c.get('name')}"
                        )
            try:
                await self.client.delete(
                    "pods", md["name"], md.get("namespace"), grace_period_seconds=0, preconditions={"uid": md["uid"]}
                )
            except (errors.NotFound, errors.Conflict):
                pass  # gone already, or a new pod of the same name: not ours to delete
            self._admitted[node.spec.name].pop(key, None)
            self._started.discard(key)
            return
        admitted = self._admitted[node.spec.name]
        phase = status.get("phase")
        if phase in _TERMINAL:
            admitted.pop(key, None)
            self._started.discard(key)
            return
        if phase == "Running" or key in self._started:
            admitted[key] = pod  # started by us, or by this node's previous process
            return
        if key not in admitted:
            # Checked and recorded with no await in between, so two pods cannot both take the last room.
            rejection = admit(pod, node.node or {}, admitted.values())
            if rejection is not None:
                reason, message = rejection
                self._event(node.spec.name, pod, "", "Warning", reason, message)
                await self._write_status(
                    pod, {"phase": "Failed", "reason": reason, "message": f"Pod was rejected: {message}"}
                )
                return
            admitted[key] = pod
        self._started.add(key)
        try:
            host_ip = node.spec.address
            await self._write_status(pod, creating_status(pod, host_ip, rfc3339()))
            ip = pod_ip(node.index, node.next_pod_number(), node.pod_cidr())
            await self._write_status(pod, running_status(pod, host_ip, ip, rfc3339()))
        except BaseException:
            self._started.discard(key)  # to be tried again from the start
            raise
        self._started_events(node.spec.name, pod)

    async def _write_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> None:
        md = pod["metadata"]
        # A merge patch replaces the lists (conditions, container statuses) whole, as the status manager's does.
        patch = {"status": status}
        await self.client.patch(
            "pods", md["name"], patch, md.get("namespace"), patch_type="merge", subresource="status"
        )


def _image_size(image: str) -> int:
    """A plausible, stable size for an image (tens of MB), as the Pulled event reports one."""
    return 10_000_000 + int(hashlib.sha256(image.encode()).hexdigest()[:8], 16) % 90_000_000
