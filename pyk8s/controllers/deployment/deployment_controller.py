"""The Deployment controller (upstream: pkg/controller/deployment/deployment_controller.go): rolls a Deployment's
pod template out through ReplicaSets, one per template (`<name>-<pod-template-hash>`), the ReplicaSet controller
keeping their pods.

Each sync of a Deployment (by `namespace/name` from a rate-limited queue): claim its ReplicaSets (adopt matching
orphans, release strays); a Deployment being deleted only gets its status; pausing and resuming set the
Progressing condition (Unknown, DeploymentPaused/DeploymentResumed); a paused Deployment, or one whose
`spec.replicas` changed, is scaled (sync.py); otherwise its strategy rolls it out (rolling.py, recreate.py) and
its progress is reported (progress.py). ReplicaSet events wake their Deployment; the deletion of the last pod of a
Recreate Deployment wakes it, as the new ReplicaSet waits for the old pods to be gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from ...api.meta import controller_of, json_copy, owner_reference
from ...api.selectors import LabelSelector, SelectorError, label_selector_from_object
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..controller_ref_manager import (
    POD_CONTROLLER_UID_INDEX,
    ControllerRefManager,
    add_pod_controller_uid_indexer,
    recheck_deletion,
)
from ..workers import queue_workers, run_workers
from . import sync as deployment_sync
from . import util
from .recreate import rollout_recreate
from .rolling import rollout_rolling
from .sync import get_all_replica_sets_and_sync_revision, is_scaling_event, now, sync_deployment_status
from .util import Object

log = logging.getLogger(__name__)

DEPLOYMENTS = "deployments.apps"
COMPONENT = "deployment-controller"


def _selector(d: Object) -> LabelSelector:
    return label_selector_from_object((d.get("spec") or {}).get("selector"), "spec.selector")


class DeploymentController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5) -> None:
        self.client = client
        self.workers = workers
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="deployment")
        self.broadcaster = EventBroadcaster(client)
        self.recorder = self.broadcaster.new_core_recorder(COMPONENT)
        self.deployments = factory.informer_for(DEPLOYMENTS)
        self.rss = factory.informer_for("replicasets.apps")
        self.pods = factory.informer_for("pods")
        add_pod_controller_uid_indexer(self.pods.indexer)
        self.deployments.add_event_handler(
            on_add=lambda d, _initial: self.enqueue(d),
            on_update=lambda _old, d: self.enqueue(d),
            on_delete=lambda d: self.enqueue(deleted_object(d)),
        )
        self.rss.add_event_handler(
            on_add=lambda rs, _initial: self._add_replica_set(rs),
            on_update=self._update_replica_set,
            on_delete=self._delete_replica_set,
        )
        self.pods.add_event_handler(on_delete=self._delete_pod)

    async def run(self) -> None:
        await asyncio.gather(self.deployments.wait_for_sync(), self.rss.wait_for_sync(), self.pods.wait_for_sync())
        tasks = queue_workers(self.queue, self.sync, "sync deployment", self.workers)
        await run_workers(tasks, [self.queue], self.broadcaster)

    # -- queue ----------------------------------------------------------------------------------------

    def enqueue(self, d: Object) -> None:
        self.queue.add(meta_namespace_key(d))

    def enqueue_after(self, d: Object, seconds: float) -> None:
        self.queue.add_after(meta_namespace_key(d), seconds)

    def enqueue_rate_limited(self, d: Object) -> None:
        self.queue.add_rate_limited(meta_namespace_key(d))

    # -- event handlers ---------------------------------------------------------------------------------

    def _resolve(self, namespace: str, ref: Object) -> Object | None:
        if ref.get("kind") != "Deployment":
            return None
        d = self.deployments.indexer.get_by_key(f"{namespace}/{ref.get('name')}")
        if d is None or (d.get("metadata") or {}).get("uid") != ref.get("uid"):
            return None
        return d

    def _deployments_matching(self, rs: Object) -> list[Object]:
        md = rs.get("metadata") or {}
        labels = md.get("labels") or {}
        out = []
        for d in self.deployments.indexer.by_index("namespace", str(md.get("namespace") or "")):
            try:
                selector = _selector(d)
            except SelectorError:
                continue
            if not selector.empty and selector.matches(labels):
                out.append(d)
        return out

    def _add_replica_set(self, rs: Object) -> None:
        md = rs.get("metadata") or {}
        if md.get("deletionTimestamp"):
            self._delete_replica_set(rs)
            return
        ref = controller_of(rs)
        if ref is not None:
            d = self._resolve(str(md.get("namespace") or ""), ref)
            if d is not None:
                self.enqueue(d)
            return
        for d in self._deployments_matching(rs):
            self.enqueue(d)

    def _update_replica_set(self, old: Object, cur: Object) -> None:
        omd, cmd = old.get("metadata") or {}, cur.get("metadata") or {}
        if omd.get("resourceVersion") == cmd.get("resourceVersion"):
            return
        namespace = str(cmd.get("namespace") or "")
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            d = self._resolve(namespace, old_ref)
            if d is not None:
                self.enqueue(d)
        if cur_ref is not None:
            d = self._resolve(namespace, cur_ref)
            if d is not None:
                self.enqueue(d)
            return
        if ref_changed or (omd.get("labels") or {}) != (cmd.get("labels") or {}):
            for d in self._deployments_matching(cur):
                self.enqueue(d)

    def _delete_replica_set(self, obj: Any) -> None:
        rs = deleted_object(obj)
        ref = controller_of(rs)
        if ref is None:
            return
        d = self._resolve(str((rs.get("metadata") or {}).get("namespace") or ""), ref)
        if d is not None:
            self.enqueue(d)

    def _delete_pod(self, obj: Any) -> None:
        """A Recreate Deployment waits for its old pods to be gone: the last one's deletion wakes it."""
        pod = deleted_object(obj)
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.rss.indexer.get_by_key(f"{namespace}/{ref.get('name')}")
        if rs is None or (rs.get("metadata") or {}).get("uid") != ref.get("uid"):
            return
        rs_ref = controller_of(rs)
        d = self._resolve(namespace, rs_ref) if rs_ref is not None else None
        if d is None or util.strategy_type(d) != "Recreate":
            return
        rss = self._owned_replica_sets(d)
        if not any(self._pod_map(d, rss).values()):
            self.enqueue(d)

    # -- sync -----------------------------------------------------------------------------------------

    async def update_status(self, d: dict[str, Any]) -> None:
        """Write the Deployment's status (and, as upstream's status strategy lets through, its annotations: the
        revision); `d` takes the stored resourceVersion so that later writes of this sync build on it."""
        md = d["metadata"]
        stored = await self.client.update_status(DEPLOYMENTS, d, md["namespace"])
        md["resourceVersion"] = stored["metadata"].get("resourceVersion")

    def _owned_replica_sets(self, d: Object) -> list[Object]:
        uid = (d.get("metadata") or {}).get("uid")
        namespace = str((d.get("metadata") or {}).get("namespace") or "")
        return [rs for rs in self.rss.indexer.by_index("namespace", namespace)
                if (ref := controller_of(rs)) is not None and ref.get("uid") == uid]  # fmt: skip

    def _pod_map(self, d: Object, rss: Sequence[Object]) -> dict[str, list[Object]]:
        """The pods of each of `rss` (by ReplicaSet UID) that the Deployment's selector matches."""
        try:
            selector = _selector(d)
        except SelectorError:
            return {}
        out: dict[str, list[Object]] = {}
        for rs in rss:
            uid = str((rs.get("metadata") or {}).get("uid"))
            # The pods whose controller is this ReplicaSet (the shared controller-UID index), not the namespace's.
            out[uid] = [p for p in self.pods.indexer.by_index(POD_CONTROLLER_UID_INDEX, uid)
                        if selector.matches((p.get("metadata") or {}).get("labels") or {})]  # fmt: skip
        return out

    async def _claim_replica_sets(self, d: Object, selector: LabelSelector) -> list[Object]:
        md = d.get("metadata") or {}
        name, namespace = str(md.get("name")), str(md.get("namespace") or "")

        async def fresh() -> Object:
            return await self.client.get(DEPLOYMENTS, name, namespace)

        async def patch(ns: str, rs_name: str, body: dict[str, Any]) -> Any:
            return await self.client.patch("replicasets.apps", rs_name, body, ns)

        manager = ControllerRefManager(patch, d, owner_reference(d), selector,
                                       recheck_deletion(fresh, "Deployment", d))  # fmt: skip
        return await manager.claim(self.rss.indexer.by_index("namespace", namespace))

    async def sync(self, key: str) -> None:
        cached = self.deployments.indexer.get_by_key(key)
        if cached is None:
            return
        d: dict[str, Any] = json_copy(cached)
        md = d["metadata"]
        spec = d.get("spec") or {}
        selector_spec = spec.get("selector")
        if selector_spec == {} or (isinstance(selector_spec, dict) and not selector_spec.get("matchLabels")
                                   and not selector_spec.get("matchExpressions")):  # fmt: skip
            self.recorder.event(d, "Warning", "SelectingAll",
                                "This deployment is selecting all pods. A non-empty selector is required.")  # fmt: skip
            status = d.setdefault("status", {})
            if int(status.get("observedGeneration") or 0) < int(md.get("generation") or 0):
                status["observedGeneration"] = int(md.get("generation") or 0)
                await self.update_status(d)
            return
        try:
            selector = _selector(d)
        except SelectorError as err:
            log.error("deployment %s: invalid selector: %s", key, err)
            return
        rss = await self._claim_replica_sets(d, selector)
        if md.get("deletionTimestamp"):
            new_rs, old = await get_all_replica_sets_and_sync_revision(self, d, rss, False)
            await sync_deployment_status(self, [*old, new_rs], new_rs, d)
            return
        await self._check_paused_conditions(d)
        if spec.get("paused"):
            await deployment_sync.sync(self, d, rss)
            return
        if await is_scaling_event(self, d, rss):
            await deployment_sync.sync(self, d, rss)
            return
        if util.strategy_type(d) == "Recreate":
            # Only Recreate looks at the pods (whether old ones still run), so only it pays for finding them.
            await rollout_recreate(self, d, rss, self._pod_map(d, rss))
        else:
            await rollout_rolling(self, d, rss)

    async def _check_paused_conditions(self, d: dict[str, Any]) -> None:
        """Pausing or resuming shows in the Progressing condition (Unknown) unless the deadline already passed."""
        if not util.has_progress_deadline(d):
            return
        status = d.setdefault("status", {})
        cond = util.get_condition(status, "Progressing")
        if cond is not None and cond.get("reason") == util.TIMED_OUT:
            return
        paused_shown = cond is not None and cond.get("reason") == util.PAUSED
        paused = bool((d.get("spec") or {}).get("paused"))
        if paused and not paused_shown:
            util.set_condition(status, util.new_condition("Progressing", "Unknown", util.PAUSED, "Deployment is paused",
                                                          now()))  # fmt: skip
        elif not paused and paused_shown:
            util.set_condition(status, util.new_condition("Progressing", "Unknown", util.RESUMED,
                                                          "Deployment is resumed", now()))  # fmt: skip
        else:
            return
        await self.update_status(d)
