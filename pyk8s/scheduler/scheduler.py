"""The Scheduler object (upstream: pkg/scheduler/scheduler.go and eventhandlers.go): profiles, cache, queue and
the informer handlers that keep them current, and the loop that schedules one pod after another.

Informer events are routed as upstream routes them: assigned pods go to the cache, unassigned pods of our
profiles to the queue; node changes and changes to volumes, namespaces and the rest become cluster events
that may move unschedulable pods back to the active queue.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from collections.abc import Coroutine
from typing import Any

from ..api.meta import rfc3339
from ..api.quantity import parse_quantity
from ..client.cache import DeletedFinalStateUnknown, SharedInformerFactory
from ..client.cache.shared_informer import drop_managed_fields
from ..client.events import EventBroadcaster
from ..client.rest import RESTClient
from ..gc_policy import freeze_long_lived
from . import metrics
from . import queue_events as qe
from .cache import SchedulerCache
from .config import SchedulerConfig, default_config
from .extender import apply_ignored_resources, build_extenders
from .framework.features import set_process_gates
from .framework.handle import FrameworkHandle
from .framework.interface import ActionType, ClusterEvent, Pod
from .framework.runtime import Framework
from .framework.snapshot import Snapshot
from .plugins.registry import build_frameworks
from .queue import PriorityQueue
from .schedule_one import ScheduleAlgorithm, schedule_one

log = logging.getLogger(__name__)

API_CONCURRENCY = 64  # bindings and status updates in flight at once

# Resources the scheduler watches besides nodes and pods: read by plugins, and events for the queue.
WATCHED = {
    "namespaces": "Namespace",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "persistentvolumes": "PersistentVolume",
    "storageclasses": "storage.k8s.io/StorageClass",
    "csinodes": "storage.k8s.io/CSINode",
    "csidrivers": "storage.k8s.io/CSIDriver",
    "csistoragecapacities": "storage.k8s.io/CSIStorageCapacity",
    "services": "Service",
    "replicasets": "apps/ReplicaSet",
    "statefulsets": "apps/StatefulSet",
    "replicationcontrollers": "ReplicationController",
    "poddisruptionbudgets": "policy/PodDisruptionBudget",
}
CLUSTER_SCOPED = {"namespaces", "persistentvolumes", "storageclasses", "csinodes", "csidrivers"}
# Only these are cluster events in upstream's sense; the others are read through listers only.
EVENT_RESOURCES = {
    "persistentvolumeclaims", "persistentvolumes", "storageclasses", "csinodes", "csidrivers", "namespaces",
    "csistoragecapacities",
}  # fmt: skip


class InformerLister:
    """`handle.objects` over the scheduler's informers (the Lister protocol of the framework)."""

    def __init__(self, factory: SharedInformerFactory) -> None:
        self.listers = {r: factory.lister_for(r) for r in WATCHED}

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        lister = self.listers.get(resource)
        if lister is None:
            return None
        return lister.get(name if resource in CLUSTER_SCOPED or not namespace else f"{namespace}/{name}")

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        lister = self.listers.get(resource)
        if lister is None:
            return []
        if namespace is None or resource in CLUSTER_SCOPED:
            return lister.list()
        return lister.by_namespace(namespace).list()


def default_identity() -> str:
    """A leader-election identity unique to this process (upstream: hostname plus a UUID)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def assigned(pod: Pod) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def terminal(pod: Pod) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _quantities(resources: dict[str, Any] | None) -> dict[str, Any]:
    """Resource amounts compared by value ("1" equals "1000m"), as upstream's semantic equality does."""
    out: dict[str, Any] = {}
    for name, text in (resources or {}).items():
        try:
            out[name] = parse_quantity(str(text))
        except ValueError:
            out[name] = text
    return out


def node_update_events(old: dict[str, Any], new: dict[str, Any]) -> list[ClusterEvent]:
    """Which scheduling-relevant properties of a node changed (upstream: nodeSchedulingPropertiesChange)."""
    out: list[ClusterEvent] = []
    os_, ns_ = old.get("spec") or {}, new.get("spec") or {}
    ost, nst = old.get("status") or {}, new.get("status") or {}
    omd, nmd = old.get("metadata") or {}, new.get("metadata") or {}
    # Only a node becoming schedulable can help a pod (upstream: extractNodeSpecUnschedulableChange).
    if bool(os_.get("unschedulable")) != bool(ns_.get("unschedulable")) and not ns_.get("unschedulable"):
        out.append(qe.NODE_SPEC_UNSCHEDULABLE_CHANGE)
    if _quantities(ost.get("allocatable")) != _quantities(nst.get("allocatable")):
        out.append(qe.NODE_ALLOCATABLE_CHANGE)
    if (omd.get("labels") or {}) != (nmd.get("labels") or {}):
        out.append(qe.NODE_LABEL_CHANGE)
    if (os_.get("taints") or []) != (ns_.get("taints") or []):
        out.append(qe.NODE_TAINT_CHANGE)

    def conditions(st: dict[str, Any]) -> dict[str, str]:
        return {c.get("type", ""): c.get("status", "") for c in st.get("conditions") or ()}

    if conditions(ost) != conditions(nst):
        out.append(qe.NODE_CONDITION_CHANGE)
    if (omd.get("annotations") or {}) != (nmd.get("annotations") or {}):
        out.append(qe.NODE_ANNOTATION_CHANGE)
    return list(dict.fromkeys(out))


class Scheduler:
    def __init__(
        self,
        client: RESTClient | None,
        config: SchedulerConfig | None = None,
        *,
        feature_gates: dict[str, bool] | None = None,
        identity: str | None = None,
        clock: Any = time.monotonic,
    ) -> None:
        self.client = client
        self.config = config or default_config()
        self.identity = identity or default_identity()
        # NodeInfo's accounting and the queue's reading of pod updates use the process's gates, as upstream's do
        set_process_gates(feature_gates or {})
        self.factory = SharedInformerFactory(client, transform=drop_managed_fields) if client is not None else None
        self.objects = InformerLister(self.factory) if self.factory is not None else None
        self.cache = SchedulerCache()
        self.snapshot = Snapshot()
        self.queue_clock = clock
        apply_ignored_resources(self.config)  # extenders' ignoredByScheduler resources: NodeResourcesFit skips them
        self.frameworks: dict[str, Framework] = build_frameworks(
            self.config,
            lambda: FrameworkHandle(
                self.snapshot, self.objects, feature_gates=feature_gates, client=client,
                parallelism=self.config.parallelism,
            ),
        )  # fmt: skip
        first = next(iter(self.frameworks.values()))
        self.queue = PriorityQueue(
            first.queue_sort_less(),
            pre_enqueue_plugins={name: fw.pre_enqueue_plugins() for name, fw in self.frameworks.items()},
            queueing_hint_map={
                name: [(ev.event, plugin, ev.hint) for ev, plugin in fw.events_to_register()]
                for name, fw in self.frameworks.items()
            },
            clock=clock,
            pod_initial_backoff=float(self.config.pod_initial_backoff_seconds),
            pod_max_backoff=float(self.config.pod_max_backoff_seconds),
            queueing_hints_enabled=first.handle.feature_gates.get("SchedulerQueueingHints", True),
            pod_getter=self.pod_lister_get,
            namespace_labels=first.handle.namespace_labels,
        )
        for fw in self.frameworks.values():
            fw.handle.nominator = self.queue
        self.algorithm = ScheduleAlgorithm(self.cache, self.snapshot, self.config.percentage_of_nodes_to_score or 0)
        self.algorithm.extenders = build_extenders(self.config.extenders, self.queue)
        for fw in self.frameworks.values():
            fw.handle.extenders = self.algorithm.extenders
        self.broadcaster = EventBroadcaster(client) if client is not None else None
        self.recorders = {
            name: self.broadcaster.new_recorder(name) for name in self.frameworks
        } if self.broadcaster is not None else {}  # fmt: skip
        for name, fw in self.frameworks.items():
            fw.handle.recorder = self.recorders.get(name)
        self._background: set[asyncio.Task[None]] = set()
        self._api_slots = asyncio.Semaphore(API_CONCURRENCY)
        self._pods_lister: Any = None
        self.ready = asyncio.Event()

    # -- what schedule_one uses -------------------------------------------------------------------------------

    def framework_for_pod(self, pod: Pod) -> Framework | None:
        return self.frameworks.get((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")

    def run_in_background(self, coro: Coroutine[Any, Any, None], operation: str) -> None:
        """Run a binding cycle or an API round trip (a status update) without holding up the next pod; counted
        under upstream's goroutines metric by operation. Status updates take an API slot; a binding cycle takes
        one itself, only around PreBind and Bind (a pod waiting at Permit must not hold one)."""
        task = asyncio.create_task(coro if operation == "binding" else self._with_api_slot(coro))
        self._background.add(task)
        gauge = metrics.child(metrics.goroutines, operation)
        gauge.inc()

        def done(t: asyncio.Task[None]) -> None:
            self._background.discard(t)
            gauge.dec()
            if not t.cancelled() and t.exception() is not None:
                log.error("%s failed", operation, exc_info=t.exception())

        task.add_done_callback(done)

    def api_slot(self) -> asyncio.Semaphore:
        # HTTP/1.1 has one request per connection at a time (client-go multiplexes over HTTP/2): without a cap
        # a burst of bindings would open a TLS connection each, and both ends would spend their time in
        # handshakes. A bounded set of kept-alive connections carries them instead.
        return self._api_slots

    async def _with_api_slot(self, coro: Coroutine[Any, Any, None]) -> None:
        async with self._api_slots:
            await coro

    def on_binding_failed(self, pod: Pod, exclude_uid: str | None = None) -> None:
        """The room an assumed pod held is free again: an AssignedPodDelete event, optionally not moving the pod
        itself (upstream: handleBindingCycleError)."""
        precheck = None if exclude_uid is None else (lambda p: p["metadata"].get("uid") != exclude_uid)
        self.queue.move_all_to_active_or_backoff_queue(qe.ASSIGNED_POD_DELETE, pod, None, precheck)

    def pod_lister_get(self, namespace: str, name: str) -> Pod | None:
        if self._pods_lister is None:
            return None
        return self._pods_lister.get(f"{namespace}/{name}")

    def record_event(self, fw: Framework, pod: Pod, type_: str, reason: str, action: str, note: str) -> None:
        fw.handle.record_event(pod, None, type_, reason, action, note)

    async def update_pod_status(self, pod: Pod, reason: str, message: str, nominating: Any) -> None:
        """PodScheduled=False with the reason and message, and status.nominatedNodeName as preemption decided
        (a ModeOverride result sets it, or clears it with an empty name); nothing is written when nothing
        changes (upstream: updatePod)."""
        if self.client is None:
            return
        status = pod.get("status") or {}
        old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        patch: dict[str, Any] = {}
        if nominating is not None and getattr(nominating, "mode", "ModeNoop") == "ModeOverride":
            want = nominating.nominated_node_name or None
            if (status.get("nominatedNodeName") or None) != want:
                patch["nominatedNodeName"] = want
        same = old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (
            "False",
            reason,
            message,
        )
        if not same:
            kept = old is not None and old.get("status") == "False"
            patch["conditions"] = [{
                "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": old.get("lastTransitionTime") if kept and old else rfc3339(),
            }]  # fmt: skip
        if not patch:
            return
        md = pod["metadata"]
        try:
            await self.client.patch(
                "pods", md["name"], {"status": patch}, md.get("namespace"), patch_type="strategic",
                subresource="status",
            )  # fmt: skip
        except Exception as e:  # the pod may be gone; the next attempt writes again
            log.info("updating the status of pod %s/%s: %s", md.get("namespace"), md["name"], e)

    # -- informer handlers ------------------------------------------------------------------------------------

    def _responsible(self, pod: Pod) -> bool:
        return ((pod.get("spec") or {}).get("schedulerName") or "default-scheduler") in self.frameworks

    # Pods in a terminal phase are invisible to the scheduler, as upstream's pod informer filters them out: a pod
    # turning terminal is its delete. Assigned pods go to the cache, unassigned ones of our profiles to the queue;
    # a pod becoming assigned leaves the queue and enters the cache (upstream's two filtered handlers).

    def _on_pod_add(self, pod: Pod, _initial: bool = False) -> None:
        if not terminal(pod):
            self._pod_added(pod)

    def _on_pod_update(self, old: Pod, new: Pod) -> None:
        if terminal(old):
            if not terminal(new):
                self._pod_added(new)
            return
        if terminal(new):
            self._pod_deleted(new, tombstone=False)
            return
        if old["metadata"].get("uid") != new["metadata"].get("uid"):
            self._pod_deleted(old, tombstone=False)
            self._pod_added(new)
            return
        if assigned(old) and assigned(new):
            self.cache.update_pod(old, new)
            for ev in qe.pod_scheduling_properties_change(new, old):
                self.queue.assigned_pod_updated(old, new, ev)
        elif assigned(new):
            self._unscheduled_pod_gone(old)
            self.cache.add_pod(new)
            self.queue.assigned_pod_added(new)
        elif assigned(old):  # unbinding does not happen through the API; take it as a delete and an add
            self._pod_deleted(old, tombstone=False)
            self._pod_added(new)
        elif self._responsible(new):
            self.queue.update(old, new)

    def _on_pod_delete(self, pod: Any) -> None:
        if isinstance(pod, DeletedFinalStateUnknown):
            self._pod_deleted(pod.obj, tombstone=True)
        elif not terminal(pod) or self.cache.get_pod(pod) is not None:
            self._pod_deleted(pod, tombstone=False)

    def _pod_added(self, pod: Pod) -> None:
        if assigned(pod):
            self.cache.add_pod(pod)
            self.queue.assigned_pod_added(pod)
        elif self._responsible(pod):
            self.queue.add(pod)

    def _pod_deleted(self, pod: Pod, tombstone: bool) -> None:
        # A tombstone's object may be stale, so whether it was assigned is not trusted: clean up both sides.
        if assigned(pod) or tombstone:
            known = self.cache.get_pod(pod) is not None
            self.cache.remove_pod(pod)
            if known or assigned(pod):
                self.queue.move_all_to_active_or_backoff_queue(qe.ASSIGNED_POD_DELETE, pod, None)
        if not assigned(pod) or tombstone:
            self._unscheduled_pod_gone(pod)

    def _unscheduled_pod_gone(self, pod: Pod) -> None:
        self.queue.delete(pod)
        uid = pod["metadata"].get("uid", "")
        for fw in self.frameworks.values():
            wp = fw.waiting_pods.get(uid)
            if wp is not None:
                wp.reject("", "removed")

    def _on_node_add(self, node: dict[str, Any], _initial: bool = False) -> None:
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff_queue(qe.NODE_ADD, None, node)

    def _on_node_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.cache.update_node(old, new)
        for ev in node_update_events(old, new):
            self.queue.move_all_to_active_or_backoff_queue(ev, old, new)

    def _on_node_delete(self, node: Any) -> None:
        if isinstance(node, DeletedFinalStateUnknown):
            node = node.obj
        self.cache.remove_node(node)

    def _other_handlers(self, resource: str) -> dict[str, Any]:
        kind = WATCHED[resource]

        def emit(action: ActionType, old: Any, new: Any) -> None:
            if isinstance(old, DeletedFinalStateUnknown):
                old = old.obj
            self.queue.move_all_to_active_or_backoff_queue(ClusterEvent(kind, action), old, new)

        return {
            "on_add": lambda obj, _i=False: emit(ActionType.ADD, None, obj),
            "on_update": lambda old, new: emit(ActionType.UPDATE, old, new),
            "on_delete": lambda obj: emit(ActionType.DELETE, obj, None),
        }

    # -- running ----------------------------------------------------------------------------------------------

    def _register_informers(self) -> None:
        assert self.factory is not None
        pods = self.factory.informer_for("pods")
        self._pods_lister = self.factory.lister_for("pods")
        pods.add_event_handler(on_add=self._on_pod_add, on_update=self._on_pod_update, on_delete=self._on_pod_delete)
        nodes = self.factory.informer_for("nodes")
        nodes.add_event_handler(
            on_add=self._on_node_add, on_update=self._on_node_update, on_delete=self._on_node_delete
        )
        for resource in WATCHED:
            informer = self.factory.informer_for(resource)
            if resource in EVENT_RESOURCES:
                informer.add_event_handler(**self._other_handlers(resource))

    async def run(self) -> None:
        """Schedule pods until cancelled."""
        assert self.factory is not None
        self._register_informers()
        self.factory.start()
        if self.broadcaster is not None:
            self.broadcaster.start()
        background = [asyncio.create_task(self._supervised(self.queue.run, "queue flushing")),
                      asyncio.create_task(self._supervised(self._cleanup_assumed, "assumed pod expiry"))]  # fmt: skip
        try:
            await self.factory.wait_for_cache_sync()
            # The informers' objects live as long as the process: keep them out of the cyclic collector's
            # sight, so its full collections stop rescanning the whole cluster between pods.
            freeze_long_lived()
            self.ready.set()
            log.info("scheduler %s: caches synced, scheduling", self.identity)
            while True:
                qpi = await self.queue.pop()
                if qpi is None:
                    return
                try:
                    await schedule_one(self, qpi)
                    await asyncio.sleep(0)  # let informer events and binding tasks run between pods
                except Exception:
                    log.exception("scheduling pod %s failed unexpectedly", qpi.pod["metadata"].get("name"))
                    self.queue.done(qpi.pod["metadata"].get("uid", ""))
        finally:
            self.ready.clear()
            self.queue.close()
            for t in background:
                t.cancel()
            for t in list(self._background):
                t.cancel()
            await asyncio.gather(*background, *self._background, return_exceptions=True)
            if self.broadcaster is not None:
                await self.broadcaster.shutdown()
            for ext in self.algorithm.extenders:
                await ext.close()
            await self.factory.shutdown()

    async def _supervised(self, run: Any, what: str) -> None:
        """Keep a background loop alive: a bug in one pass is logged, and the loop starts again."""
        while True:
            try:
                await run()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s failed; restarting it", what)
                await asyncio.sleep(1.0)

    async def _cleanup_assumed(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.cache.cleanup_assumed_pods()
