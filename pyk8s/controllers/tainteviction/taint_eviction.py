"""The taint-eviction controller (upstream: pkg/controller/tainteviction, `taint-eviction-controller`, its own
controller in kube-controller-manager since v1.29's SeparateTaintEvictionController).

A pod on a node with NoExecute taints it does not all tolerate is deleted at once; one that tolerates them all
is deleted after the smallest `tolerationSeconds` among the tolerations used (none set: it stays forever). The
pod first gets the condition DisruptionTarget (reason DeletionByTaintManager), and a TaintManagerEviction event
says so; the eviction is cancelled (with an event) when the taints go or the pod's tolerations change to cover
them. The node lifecycle controller places the not-ready/unreachable taints this acts on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ...api import errors, meta
from ...client.cache import SharedInformerFactory
from ...client.cache.indexer import split_meta_namespace_key
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import Queue, process_items
from ...scheduler.plugins.helper import tolerates
from .. import nodeutil
from ..workers import run_workers
from .timed_workers import TimedWorkerQueue

log = logging.getLogger(__name__)

CONTROLLER_NAME = "taint-eviction-controller"
DELETE_RETRIES = 5


def no_execute_taints(taints: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [t for t in taints if t.get("effect") == "NoExecute"]


def get_matching_tolerations(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> tuple[bool, list[Mapping[str, Any]]]:
    """(all tolerated, the first toleration found for each taint): upstream GetMatchingTolerations."""
    if not taints:
        return True, []
    used: list[Mapping[str, Any]] = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(dict(t), dict(taint))), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def get_min_toleration_time(tolerations: Sequence[Mapping[str, Any]]) -> float:
    """Seconds before eviction: the smallest tolerationSeconds (0 or less: now); -1 when none is bounded (never);
    0 with no tolerations at all (upstream getMinTolerationTime)."""
    if not tolerations:
        return 0.0
    bounded = [t["tolerationSeconds"] for t in tolerations if isinstance(t.get("tolerationSeconds"), int)]
    if not bounded:
        return -1.0
    return float(max(0, min(bounded)))


class TaintEvictionController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory) -> None:
        self.client = client
        self.broadcaster = EventBroadcaster(client)
        self.recorder = self.broadcaster.new_core_recorder(CONTROLLER_NAME)
        self.nodes = factory.informer_for("nodes")
        self.pods = factory.informer_for("pods")
        self.pods_on = nodeutil.pods_by_node(self.pods)
        self.tainted_nodes: dict[str, list[Mapping[str, Any]]] = {}
        self.evictions = TimedWorkerQueue(self._delete_pod)
        self.node_queue: Queue[str] = Queue(name="noexec_taint_node")
        self.pod_queue: Queue[tuple[str, str]] = Queue(name="noexec_taint_pod")
        self.pods.add_event_handler(
            on_add=lambda p, _i: self.pod_updated(None, p),
            on_update=self.pod_updated,
            on_delete=lambda p: self.pod_updated(getattr(p, "obj", p), None),
        )
        self.nodes.add_event_handler(
            on_add=lambda n, _i: self.node_updated(None, n),
            on_update=self.node_updated,
            on_delete=lambda n: self.node_updated(getattr(n, "obj", n), None),
        )

    def pod_updated(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        obj = new if new is not None else old
        if not isinstance(obj, Mapping):
            return
        if old is not None and new is not None:
            same_node = (old.get("spec") or {}).get("nodeName") == (new.get("spec") or {}).get("nodeName")
            if same_node and (old.get("spec") or {}).get("tolerations") == (new.get("spec") or {}).get("tolerations"):
                return
        md = obj.get("metadata") or {}
        self.pod_queue.add(
            (f"{md.get('namespace', '')}/{md.get('name', '')}", (obj.get("spec") or {}).get("nodeName") or "")
        )

    def node_updated(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        obj = new if new is not None else old
        if not isinstance(obj, Mapping):
            return
        if old is not None and new is not None:
            if no_execute_taints(nodeutil.taints_of(old)) == no_execute_taints(nodeutil.taints_of(new)):
                return
        self.node_queue.add(obj["metadata"]["name"])

    async def run(self) -> None:
        await asyncio.gather(self.nodes.wait_for_sync(), self.pods.wait_for_sync())
        tasks = [asyncio.create_task(self._node_worker()), asyncio.create_task(self._pod_worker())]
        await run_workers(tasks, [self.node_queue, self.pod_queue, self.evictions], self.broadcaster)

    async def _node_worker(self) -> None:
        await process_items(self.node_queue, self.handle_node_update, "taint eviction: node")

    async def _pod_worker(self) -> None:
        await process_items(self.pod_queue, lambda item: self.handle_pod_update(*item), "taint eviction: pod")

    # -- decisions (no awaits: each runs whole) --------------------------------------------------------

    def handle_node_update(self, name: str) -> None:
        node = self.nodes.indexer.get_by_key(name)
        if node is None:
            self.tainted_nodes.pop(name, None)
            return
        taints = no_execute_taints(nodeutil.taints_of(node))
        if taints:
            self.tainted_nodes[name] = taints
        else:
            self.tainted_nodes.pop(name, None)
        pods = self.pods_on(name)
        now = time.time()
        for pod in pods:
            key = f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"
            if not taints:
                self.cancel_work_with_event(key)
            else:
                self.process_pod_on_node(key, (pod.get("spec") or {}).get("tolerations") or [], taints, now)

    def handle_pod_update(self, key: str, node_name: str) -> None:
        pod = self.pods.indexer.get_by_key(key)
        if pod is None:
            self.cancel_work_with_event(key)
            return
        if (pod.get("spec") or {}).get("nodeName") != node_name or not node_name:
            return
        taints = self.tainted_nodes.get(node_name)
        if not taints:
            return
        self.process_pod_on_node(key, (pod.get("spec") or {}).get("tolerations") or [], taints, time.time())

    def process_pod_on_node(
        self, key: str, tolerations: Sequence[Mapping[str, Any]], taints: Sequence[Mapping[str, Any]], now: float
    ) -> None:
        if not taints:
            self.cancel_work_with_event(key)
            return
        all_tolerated, used = get_matching_tolerations(taints, tolerations)
        if not all_tolerated:
            log.info("not all taints are tolerated by pod %s; deleting it", key)
            self.cancel_work_with_event(key)
            self.evictions.add_work(key, now, now)
            return
        seconds = get_min_toleration_time(used)
        if seconds < 0:
            self.cancel_work_with_event(key)  # tolerated forever
            return
        start, trigger = now, now + seconds
        scheduled = self.evictions.get_worker(key)
        if scheduled is not None:
            start = scheduled.created_at
            if start + seconds < trigger:
                return
            self.cancel_work_with_event(key)
        self.evictions.add_work(key, start, trigger)

    def cancel_work_with_event(self, key: str) -> None:
        if self.evictions.cancel_work(key):
            self._event(key, f"Cancelling deletion of Pod {key}")

    def _event(self, key: str, message: str) -> None:
        ns, name = split_meta_namespace_key(key)
        ref = {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": ns}
        self.recorder.event(ref, "Normal", "TaintManagerEviction", message)

    # -- the eviction ----------------------------------------------------------------------------------

    async def _delete_pod(self, key: str, fire_at: float) -> None:
        log.info("deleting pod %s", key)
        self._event(key, f"Marking for deletion Pod {key}")
        ns, name = split_meta_namespace_key(key)
        last: Exception | None = None
        for _ in range(DELETE_RETRIES):
            try:
                await self._add_condition_and_delete(ns, name)
                return
            except errors.NotFound:
                return
            except (errors.StatusError, ConnectionError) as err:
                last = err
            await asyncio.sleep(0.01)
        raise RuntimeError(f"could not delete pod {key}: {last}")

    async def _add_condition_and_delete(self, namespace: str, name: str) -> None:
        pod = await self.client.get("pods", name, namespace)
        condition = {
            "type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint", "lastTransitionTime": meta.rfc3339(),
        }  # fmt: skip
        updated = meta.json_copy(pod)
        if meta.set_condition(updated, condition):
            patch = {"metadata": {"uid": pod["metadata"]["uid"]}, "status": {"conditions": [updated_cond(updated)]}}
            await self.client.patch("pods", name, patch, namespace, subresource="status")
        await self.client.delete("pods", name, namespace)


def updated_cond(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return next(c for c in pod["status"]["conditions"] if c.get("type") == "DisruptionTarget")
