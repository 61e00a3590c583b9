"""The pod garbage collector (upstream: pkg/controller/podgc/gc_controller.go, `pod-garbage-collector-controller`).

Every 20 s it force-deletes (grace 0) the pods no kubelet will ever finish:
- terminated pods (Succeeded/Failed) above `--terminated-pod-gc-threshold` (12500; 0 turns this off), evicted
  ones first, then the oldest;
- terminating pods on a node that is not Ready and carries the `node.kubernetes.io/out-of-service` taint;
- pods bound to a node that no longer exists, once the node has stayed missing for a 40 s quarantine and a GET
  confirms it is gone (they get the condition DisruptionTarget, reason DeletionByPodGC);
- terminating pods never scheduled.
A pod not yet terminal is first moved to phase Failed (the status its missing kubelet would never write).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ..api import errors, meta
from ..client.cache import SharedInformerFactory
from ..client.rest import RESTClient
from ..client.workqueue import DelayingQueue
from . import nodeutil

log = logging.getLogger(__name__)

GC_CHECK_PERIOD = 20.0
QUARANTINE_TIME = 40.0
DEFAULT_TERMINATED_POD_GC_THRESHOLD = 12500

Pod = Mapping[str, Any]


def is_pod_terminated(pod: Pod) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Pending", "Running", "Unknown")


def is_evicted(pod: Pod) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


def eviction_and_creation_order(pod: Pod) -> tuple[bool, str, str]:
    """Upstream byEvictionAndCreationTimestamp: evicted pods first, then the oldest, then by name."""
    md = pod.get("metadata") or {}
    return (not is_evicted(pod), str(md.get("creationTimestamp") or ""), str(md.get("name") or ""))


def terminated_to_delete(pods: Sequence[Pod], threshold: int) -> list[Pod]:
    """The terminated pods over `threshold`, in the order they go."""
    terminated = [p for p in pods if is_pod_terminated(p)]
    excess = len(terminated) - threshold
    if threshold <= 0 or excess <= 0:
        return []
    return sorted(terminated, key=eviction_and_creation_order)[:excess]


class PodGCController:
    def __init__(
        self,
        client: RESTClient,
        factory: SharedInformerFactory,
        *,
        terminated_pod_threshold: int = DEFAULT_TERMINATED_POD_GC_THRESHOLD,
        gc_check_period: float = GC_CHECK_PERIOD,
        quarantine_time: float = QUARANTINE_TIME,
    ) -> None:
        self.client = client
        self.terminated_pod_threshold = terminated_pod_threshold
        self.gc_check_period = gc_check_period
        self.quarantine_time = quarantine_time
        self.pods = factory.informer_for("pods")
        self.nodes = factory.informer_for("nodes")
        self.node_queue: DelayingQueue[str] = DelayingQueue(name="orphaned_pods_nodes")

    async def run(self) -> None:
        await asyncio.gather(self.pods.wait_for_sync(), self.nodes.wait_for_sync())
        try:
            while True:
                try:
                    await self.gc()
                except Exception:
                    log.exception("pod gc: pass failed")
                await asyncio.sleep(self.gc_check_period)
        finally:
            self.node_queue.shut_down()

    async def gc(self) -> None:
        pods: list[dict[str, Any]] = self.pods.indexer.list()
        nodes: list[dict[str, Any]] = self.nodes.indexer.list()
        if self.terminated_pod_threshold > 0:
            await self._delete_all(terminated_to_delete(pods, self.terminated_pod_threshold))
        await self.gc_terminating(pods)
        await self.gc_orphaned(pods, nodes)
        await self.gc_unscheduled_terminating(pods)

    async def _delete_all(self, pods: Sequence[Pod], condition: dict[str, Any] | None = None) -> None:
        results = await asyncio.gather(
            *(self.mark_failed_and_delete_pod(p, condition) for p in pods), return_exceptions=True
        )
        for p, r in zip(pods, results, strict=True):
            if isinstance(r, BaseException):
                log.info("pod gc: deleting %s/%s: %s", p["metadata"].get("namespace"), p["metadata"]["name"], r)

    async def gc_terminating(self, pods: Sequence[Pod]) -> None:
        """Terminating pods on not-ready nodes an administrator has marked out of service."""
        out: list[Pod] = []
        for p in pods:
            if not p["metadata"].get("deletionTimestamp"):
                continue
            node = self.nodes.indexer.get_by_key((p.get("spec") or {}).get("nodeName") or "")
            if node is None:
                continue
            taints = nodeutil.taints_of(node)
            if not nodeutil.is_ready(node) and any(t.get("key") == nodeutil.TAINT_OUT_OF_SERVICE for t in taints):
                out.append(p)
        await self._delete_all(sorted(out, key=eviction_and_creation_order))

    async def gc_orphaned(self, pods: Sequence[Pod], nodes: Sequence[Mapping[str, Any]]) -> None:
        existing = {n["metadata"]["name"] for n in nodes}
        for p in pods:
            node = (p.get("spec") or {}).get("nodeName")
            if node and node not in existing:
                self.node_queue.add_after(node, self.quarantine_time)
        deleted = await self._discover_deleted_nodes(existing)
        orphans = [p for p in pods if (p.get("spec") or {}).get("nodeName") in deleted]
        for p in orphans:
            log.info("pod gc: pod %s/%s is bound to deleted node %s", p["metadata"].get("namespace"),
                     p["metadata"]["name"], p["spec"]["nodeName"])  # fmt: skip
        condition = {
            "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists",
        }  # fmt: skip
        await self._delete_all(orphans, condition)

    async def _discover_deleted_nodes(self, existing: set[str]) -> set[str]:
        deleted: set[str] = set()
        while len(self.node_queue) > 0:
            name = await self.node_queue.get()
            try:
                if name not in existing:
                    try:
                        await self.client.get("nodes", name)
                    except errors.NotFound:
                        deleted.add(name)
                    except (errors.StatusError, ConnectionError) as err:
                        log.info("pod gc: getting node %s: %s", name, err)  # queued again next pass if needed
            finally:
                self.node_queue.done(name)
        return deleted

    async def gc_unscheduled_terminating(self, pods: Sequence[Pod]) -> None:
        await self._delete_all(
            [p for p in pods if p["metadata"].get("deletionTimestamp") and not (p.get("spec") or {}).get("nodeName")]
        )

    async def mark_failed_and_delete_pod(self, pod: Pod, condition: dict[str, Any] | None = None) -> None:
        md = pod["metadata"]
        log.info("pod gc: force deleting pod %s/%s", md.get("namespace"), md["name"])
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            status: dict[str, Any] = {"phase": "Failed"}
            if condition is not None:
                updated = meta.json_copy(dict(pod))
                meta.set_condition(updated, {**condition, "lastTransitionTime": meta.rfc3339()})
                status["conditions"] = [
                    c for c in updated["status"]["conditions"] if c.get("type") == condition["type"]
                ]
            patch = {"metadata": {"uid": md.get("uid")}, "status": status}
            try:
                await self.client.patch("pods", md["name"], patch, md.get("namespace"), subresource="status")
            except errors.NotFound:
                return
        try:
            await self.client.delete("pods", md["name"], md.get("namespace"), grace_period_seconds=0)
        except errors.NotFound:
            pass
