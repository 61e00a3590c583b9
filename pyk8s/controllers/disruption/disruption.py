"""The disruption controller (upstream: pkg/controller/disruption/disruption.go, `disruption-controller`): keeps
each PodDisruptionBudget's status, which the API server's `pods/eviction` decides on.

For the pods its selector matches (policy/v1: an empty selector matches the whole namespace): `expectedPods` and
`desiredHealthy` come from `minAvailable` as a number (the pods there are, and that number), or from a percentage
or `maxUnavailable` against the replicas their controllers want (ReplicationController, ReplicaSet — its
Deployment's when it has one — or StatefulSet), percentages rounded up; `currentHealthy` counts the Ready pods not
being deleted nor just evicted (`disruptedPods`, which an eviction fills and which empties once the pod is seen
going, or after two minutes); `disruptionsAllowed` is what is healthy beyond the desired, never below 0. The
DisruptionAllowed condition says whether an eviction may proceed (SufficientPods / InsufficientPods). A pod whose
controller cannot be found makes the budget allow nothing (SyncFailed), as upstream fails safe.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Mapping
from typing import Any

from ...api import errors
from ...api.intstr import scaled_value
from ...api.meta import controller_of, json_copy, parse_time, rfc3339
from ...api.selectors import SelectorError, label_selector_from_object
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..podutil import is_pod_ready
from ..workers import queue_workers, run_workers

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
PDBS = "poddisruptionbudgets.policy"
DELETION_TIMEOUT = 120.0  # seconds an evicted pod stays in disruptedPods without being seen going


class NoController(Exception):
    """A pod the budget covers has no controller whose scale is known."""


class DisruptionController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory) -> None:
        self.client = client
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="disruption")
        self.pdbs = factory.informer_for(PDBS)
        self.pods = factory.informer_for("pods")
        self.scalers = {
            "ReplicationController": factory.informer_for("replicationcontrollers"),
            "ReplicaSet": factory.informer_for("replicasets.apps"),
            "StatefulSet": factory.informer_for("statefulsets.apps"),
            "Deployment": factory.informer_for("deployments.apps"),
        }
        self.pdbs.add_event_handler(
            on_add=lambda p, _initial: self.queue.add(meta_namespace_key(p)),
            on_update=lambda _o, p: self.queue.add(meta_namespace_key(p)),
        )
        self.pods.add_event_handler(
            on_add=lambda p, _initial: self._pod_changed(p),
            on_update=lambda _o, p: self._pod_changed(p),
            on_delete=lambda p: self._pod_changed(deleted_object(p)),
        )

    def _pod_changed(self, pod: Object) -> None:
        md = pod.get("metadata") or {}
        for pdb in self.pdbs.indexer.by_index("namespace", str(md.get("namespace") or "")):
            try:
                selector = label_selector_from_object((pdb.get("spec") or {}).get("selector"))
            except SelectorError:
                continue
            if selector.matches(md.get("labels") or {}):
                self.queue.add(meta_namespace_key(pdb))

    async def run(self) -> None:
        await asyncio.gather(self.pdbs.wait_for_sync(), self.pods.wait_for_sync(),
                             *(i.wait_for_sync() for i in self.scalers.values()))  # fmt: skip
        await run_workers(queue_workers(self.queue, self.sync, "sync pod disruption budget"), [self.queue])

    def _expected_scale(self, namespace: str, pods: list[Object]) -> int:
        """Σ the replicas the pods' controllers want, each controller once (upstream: getExpectedScale)."""
        seen: dict[str, int] = {}
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                continue  # an unmanaged pod: upstream leaves it out of the expected scale (and warns)
            owner = self._owner(namespace, ref)
            if owner is None:
                raise NoController(f"found no controllers for pod {(pod.get('metadata') or {}).get('name')!r}")
            if ref.get("kind") == "ReplicaSet":
                # A Deployment's ReplicaSets share its scale.
                dref = controller_of(owner)
                deployment = self._owner(namespace, dref) if dref is not None else None
                if deployment is not None:
                    owner = deployment
            seen[str((owner.get("metadata") or {}).get("uid"))] = int((owner.get("spec") or {}).get("replicas", 1))
        return sum(seen.values())

    def _owner(self, namespace: str, ref: Object) -> Object | None:
        informer = self.scalers.get(str(ref.get("kind")))
        if informer is None:
            return None
        owner = informer.indexer.get_by_key(f"{namespace}/{ref.get('name')}")
        if owner is None or (owner.get("metadata") or {}).get("uid") != ref.get("uid"):
            return None
        return owner

    async def sync(self, key: str) -> None:
        cached = self.pdbs.indexer.get_by_key(key)
        if cached is None:
            return
        pdb: dict[str, Any] = json_copy(cached)
        md, spec = pdb["metadata"], pdb.get("spec") or {}
        namespace = str(md.get("namespace") or "")
        now = dt.datetime.now(dt.UTC)
        try:
            selector = label_selector_from_object(spec.get("selector"))
        except SelectorError:
            selector = None
        pods = [] if selector is None else [
            p for p in self.pods.indexer.by_index("namespace", namespace)
            if selector.matches((p.get("metadata") or {}).get("labels") or {})
        ]  # fmt: skip
        status: dict[str, Any] = {}
        try:
            if spec.get("maxUnavailable") is not None:
                expected = self._expected_scale(namespace, pods)
                desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected, True))
            elif isinstance(spec.get("minAvailable"), int):
                expected, desired = len(pods), int(spec["minAvailable"])
            elif spec.get("minAvailable") is not None:
                expected = self._expected_scale(namespace, pods)
                desired = scaled_value(spec["minAvailable"], expected, True)
            else:
                expected, desired = len(pods), 0
        except (NoController, ValueError) as err:
            log.info("pod disruption budget %s: %s", key, err)
            status = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0,
                      "observedGeneration": int(md.get("generation") or 0)}  # fmt: skip
            self._condition(status, pdb, "False", "SyncFailed", str(err), now)
            await self._write(pdb, status)
            return
        disrupted, recheck = self._disrupted(pdb, pods, now)
        healthy = sum(1 for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")
                      and (p.get("metadata") or {}).get("name") not in disrupted and is_pod_ready(p))  # fmt: skip
        allowed = max(0, healthy - desired)
        status = {"currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
                  "disruptionsAllowed": allowed, "observedGeneration": int(md.get("generation") or 0)}  # fmt: skip
        if disrupted:
            status["disruptedPods"] = disrupted
        if allowed > 0:
            self._condition(status, pdb, "True", "SufficientPods", "", now)
        else:
            self._condition(status, pdb, "False", "InsufficientPods", "", now)
        await self._write(pdb, status)
        if recheck is not None:
            self.queue.add_after(key, recheck)

    def _disrupted(self, pdb: Object, pods: list[Object], now: dt.datetime) -> tuple[dict[str, str], float | None]:
        """The evicted pods still expected to go, and when the oldest of them times out."""
        by_name = {str((p.get("metadata") or {}).get("name")): p for p in pods}
        keep: dict[str, str] = {}
        recheck: float | None = None
        for name, when in ((pdb.get("status") or {}).get("disruptedPods") or {}).items():
            pod = by_name.get(name)
            if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
                continue  # seen going
            left = DELETION_TIMEOUT - (now - parse_time(str(when))).total_seconds()
            if left <= 0:
                log.info("pod %s was expected to be deleted after its eviction but was not", name)
                continue
            keep[name] = when
            recheck = left if recheck is None else min(recheck, left)
        return keep, recheck

    @staticmethod
    def _condition(status: dict[str, Any], pdb: Object, value: str, reason: str, message: str,
                   now: dt.datetime) -> None:  # fmt: skip
        old = next((c for c in (pdb.get("status") or {}).get("conditions") or () if c.get("type") == "DisruptionAllowed"),
                   None)  # fmt: skip
        since = old.get("lastTransitionTime") if old is not None and old.get("status") == value else rfc3339(now)
        status["conditions"] = [{"type": "DisruptionAllowed", "status": value, "reason": reason, "message": message,
                                 "lastTransitionTime": since,
                                 "observedGeneration": status.get("observedGeneration", 0)}]  # fmt: skip

    async def _write(self, pdb: dict[str, Any], status: dict[str, Any]) -> None:
        if status == (pdb.get("status") or {}):
            return
        pdb["status"] = status
        try:
            await self.client.update_status(PDBS, pdb, pdb["metadata"]["namespace"])
        except errors.NotFound:
            pass
