"""The StatefulSet controller (upstream: pkg/controller/statefulset: stateful_set.go, stateful_set_control.go,
stateful_set_utils.go, stateful_pod_control.go; `statefulset-controller`): pods with stable names and storage.

Pod `<set>-<ordinal>` for ordinals `ordinals.start` … +replicas-1, with `hostname` its name, `subdomain` the
set's serviceName, and the labels `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
`controller-revision-hash`; each volumeClaimTemplate gives it a PersistentVolumeClaim `<template>-<set>-<ordinal>`
created before the pod, owned as `persistentVolumeClaimRetentionPolicy` says (stateful_set_utils.py).
OrderedReady creates the lowest missing ordinal and waits for it to be Running and Ready (and available after
minReadySeconds) before the next, and removes the highest surplus ordinal first, one at a time; Parallel does
all at once. Failed pods are replaced. RollingUpdate deletes, from the highest ordinal down to `partition`, the
first pod not at the update revision, one at a time, once the others are Ready; OnDelete waits for the user.
Revisions are ControllerRevisions (history.py); status has currentRevision/updateRevision and the counts.
Events: "create Pod x in StatefulSet y successful" and the like, as upstream words them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Mapping
from typing import Any

from ...api import errors
from ...api.meta import controller_of, json_copy, owner_reference
from ...api.selectors import SelectorError, label_selector_from_object
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..controller_ref_manager import (
    ControllerRefManager,
    add_pod_controller_uid_indexer,
    pods_by_owner,
    recheck_deletion,
)
from ..history import CONTROLLER_REVISION_HASH_LABEL, REVISIONS, max_revision, new_revision, revision_data
from ..pod_control import pod_from_template
from ..podutil import is_pod_available, is_pod_ready
from ..workers import queue_workers, run_workers
from .stateful_set_utils import claim_owner_refs

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
STATEFULSETS = "statefulsets.apps"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal_of(set_name: str, pod: Object) -> int | None:
    name = str((pod.get("metadata") or {}).get("name") or "")
    prefix = f"{set_name}-"
    rest = name[len(prefix) :] if name.startswith(prefix) else ""
    return int(rest) if rest.isdigit() else None


def claim_name(template: Object, set_name: str, ordinal: int) -> str:
    return f"{(template.get('metadata') or {}).get('name')}-{set_name}-{ordinal}"


def _running_and_ready(pod: Object, min_ready: int, now: dt.datetime) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and is_pod_available(pod, min_ready, now)


class StatefulSetController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5) -> None:
        self.client = client
        self.workers = workers
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="statefulset")
        self.broadcaster = EventBroadcaster(client)
        self.recorder = self.broadcaster.new_core_recorder("statefulset-controller")
        self.sets = factory.informer_for(STATEFULSETS)
        self.pods = factory.informer_for("pods")
        self.revisions = factory.informer_for(REVISIONS)
        self.claims = factory.informer_for("persistentvolumeclaims")
        add_pod_controller_uid_indexer(self.pods.indexer)
        self.sets.add_event_handler(
            on_add=lambda s, _initial: self.queue.add(meta_namespace_key(s)),
            on_update=lambda _o, s: self.queue.add(meta_namespace_key(s)),
            on_delete=lambda s: self.queue.add(meta_namespace_key(deleted_object(s))),
        )
        self.pods.add_event_handler(
            on_add=lambda p, _initial: self._pod_changed(p),
            on_update=lambda _o, p: self._pod_changed(p),
            on_delete=lambda p: self._pod_changed(deleted_object(p)),
        )

    def _pod_changed(self, pod: Object) -> None:
        ref = controller_of(pod)
        if ref is not None and ref.get("kind") == "StatefulSet":
            self.queue.add(f"{(pod.get('metadata') or {}).get('namespace')}/{ref.get('name')}")

    async def run(self) -> None:
        await asyncio.gather(*(i.wait_for_sync() for i in (self.sets, self.pods, self.revisions, self.claims)))
        tasks = queue_workers(self.queue, self.sync, "sync stateful set", self.workers)
        await run_workers(tasks, [self.queue], self.broadcaster)

    # -- revisions ------------------------------------------------------------------------------------

    async def _revisions(self, sts: Object) -> tuple[Object, Object]:
        """(the current revision, the update revision), the latter created for the template when new."""
        md = sts.get("metadata") or {}
        namespace = str(md.get("namespace") or "")
        owned = [r for r in self.revisions.indexer.by_index("namespace", namespace)
                 if (controller_of(r) or {}).get("uid") == md.get("uid")]  # fmt: skip
        template = (sts.get("spec") or {}).get("template") or {}
        data = revision_data(template)
        update = next((r for r in owned if r.get("data") == data), None)
        if update is None:
            body = new_revision(sts, owner_reference(sts), template, max_revision(owned) + 1,
                                (sts.get("status") or {}).get("collisionCount"))  # fmt: skip
            try:
                update = await self.client.create(REVISIONS, body, namespace)
            except errors.AlreadyExists:
                update = await self.client.get(REVISIONS, body["metadata"]["name"], namespace)
            owned.append(update)
        elif int(update.get("revision") or 0) < max_revision(owned):
            # Back to an earlier template (a rollback): it becomes the newest revision again.
            bumped = json_copy(update)
            bumped["revision"] = max_revision(owned) + 1
            update = await self.client.update(REVISIONS, bumped, namespace)
            owned = [update if r["metadata"]["name"] == update["metadata"]["name"] else r for r in owned]
        current_name = (sts.get("status") or {}).get("currentRevision")
        current = next((r for r in owned if r["metadata"]["name"] == current_name), update)
        limit = int((sts.get("spec") or {}).get("revisionHistoryLimit", 10))
        keep = {current["metadata"]["name"], update["metadata"]["name"]}
        olds = sorted(
            (r for r in owned if r["metadata"]["name"] not in keep), key=lambda r: int(r.get("revision") or 0)
        )
        for r in olds[: max(0, len(olds) - limit)]:
            try:
                await self.client.delete(REVISIONS, r["metadata"]["name"], namespace)
            except errors.NotFound:
                pass
        return current, update

    # -- pods -----------------------------------------------------------------------------------------

    def _pod(self, sts: Object, ordinal: int, revision: Object) -> dict[str, Any]:
        md = sts.get("metadata") or {}
        name = f"{md.get('name')}-{ordinal}"
        template = json_copy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
        template.pop("$patch", None)
        tmd = template.setdefault("metadata", {})
        tmd["labels"] = {**(tmd.get("labels") or {}), POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal),
                         CONTROLLER_REVISION_HASH_LABEL: revision["metadata"]["name"]}  # fmt: skip
        pod = pod_from_template(template, sts, owner_reference(sts))
        pod["metadata"].pop("generateName", None)
        pod["metadata"]["name"] = name
        spec = pod["spec"]
        spec["hostname"] = name
        if (sts.get("spec") or {}).get("serviceName"):
            spec["subdomain"] = sts["spec"]["serviceName"]
        volumes = [v for v in spec.get("volumes") or ()
                   if v.get("name") not in {(t.get("metadata") or {}).get("name")
                                            for t in (sts.get("spec") or {}).get("volumeClaimTemplates") or ()}]  # fmt: skip
        for t in (sts.get("spec") or {}).get("volumeClaimTemplates") or ():
            tname = (t.get("metadata") or {}).get("name")
            volumes.append(
                {"name": tname, "persistentVolumeClaim": {"claimName": claim_name(t, str(md.get("name")), ordinal)}}
            )
        if volumes:
            spec["volumes"] = volumes
        return pod

    async def _ensure_claims(self, sts: Object, ordinal: int, pod_name: str) -> None:
        md = sts.get("metadata") or {}
        namespace = str(md.get("namespace") or "")
        spec = sts.get("spec") or {}
        selector_labels = ((spec.get("selector") or {}).get("matchLabels")) or {}
        for t in spec.get("volumeClaimTemplates") or ():
            name = claim_name(t, str(md.get("name")), ordinal)
            if self.claims.indexer.get_by_key(f"{namespace}/{name}") is not None:
                continue
            claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                     "metadata": {"name": name, "labels": {**((t.get("metadata") or {}).get("labels") or {}),
                                                           **selector_labels}},
                     "spec": json_copy(t.get("spec") or {})}  # fmt: skip
            refs = claim_owner_refs(claim, sts, None, ordinal)
            if refs:
                claim["metadata"]["ownerReferences"] = refs
            try:
                await self.client.create("persistentvolumeclaims", claim, namespace)
            except errors.AlreadyExists:
                continue
            except errors.StatusError as err:
                self.recorder.event(sts, "Warning", "FailedCreate", f"create Claim {name} for Pod {pod_name} in "
                                    f"StatefulSet {md.get('name')} failed error: {err.message}")  # fmt: skip
                raise
            self.recorder.event(sts, "Normal", "SuccessfulCreate",
                                f"create Claim {name} Pod {pod_name} in StatefulSet {md.get('name')} success")  # fmt: skip

    async def _retain_claims(self, sts: Object, pod: Object, ordinal: int) -> None:
        """Give the pod's claims the owners the retention policy wants (upstream: UpdatePodClaimForRetentionPolicy)."""
        md = sts.get("metadata") or {}
        namespace = str(md.get("namespace") or "")
        for t in (sts.get("spec") or {}).get("volumeClaimTemplates") or ():
            name = claim_name(t, str(md.get("name")), ordinal)
            claim = self.claims.indexer.get_by_key(f"{namespace}/{name}")
            if claim is None or (claim.get("metadata") or {}).get("deletionTimestamp"):
                continue
            refs = claim_owner_refs(claim, sts, pod, ordinal)
            if refs is None:
                continue
            patch = {"metadata": {"ownerReferences": refs, "resourceVersion": claim["metadata"].get("resourceVersion")}}
            try:
                await self.client.patch("persistentvolumeclaims", name, patch, namespace, patch_type="merge")
            except errors.NotFound:
                continue
            except errors.StatusError as err:
                self.recorder.event(sts, "Warning", "FailedUpdate", f"update Claim {name} for Pod "
                                    f"{pod['metadata']['name']} in StatefulSet {md.get('name')} failed error: {err.message}")  # fmt: skip
                raise

    async def _create(self, sts: Object, ordinal: int, revision: Object) -> None:
        pod = self._pod(sts, ordinal, revision)
        name = pod["metadata"]["name"]
        set_name = (sts.get("metadata") or {}).get("name")
        await self._ensure_claims(sts, ordinal, name)
        try:
            await self.client.create("pods", pod, str(sts["metadata"]["namespace"]))
        except errors.AlreadyExists:
            return
        except errors.StatusError as err:
            if not errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
                self.recorder.event(sts, "Warning", "FailedCreate",
                                    f"create Pod {name} in StatefulSet {set_name} failed error: {err.message}")  # fmt: skip
            raise
        self.recorder.event(
            sts, "Normal", "SuccessfulCreate", f"create Pod {name} in StatefulSet {set_name} successful"
        )

    async def _delete(self, sts: Object, pod: Object) -> None:
        name = str(pod["metadata"]["name"])
        set_name = (sts.get("metadata") or {}).get("name")
        try:
            await self.client.delete("pods", name, str(sts["metadata"]["namespace"]))
        except errors.NotFound:
            return
        except errors.StatusError as err:
            self.recorder.event(sts, "Warning", "FailedDelete",
                                f"delete Pod {name} in StatefulSet {set_name} failed error: {err.message}")  # fmt: skip
            raise
        self.recorder.event(
            sts, "Normal", "SuccessfulDelete", f"delete Pod {name} in StatefulSet {set_name} successful"
        )

    # -- sync -----------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cached = self.sets.indexer.get_by_key(key)
        if cached is None:
            return
        sts: dict[str, Any] = json_copy(cached)
        md, spec = sts["metadata"], sts.get("spec") or {}
        try:
            selector = label_selector_from_object(spec.get("selector"), "spec.selector")
        except SelectorError as err:
            log.error("stateful set %s: invalid selector: %s", key, err)
            return
        set_name, namespace = str(md.get("name")), str(md.get("namespace") or "")

        async def fresh() -> Object:
            return await self.client.get(STATEFULSETS, set_name, namespace)

        def mine(pod: Object) -> bool:  # upstream's isMemberOf: the name says which set the pod belongs to
            return ordinal_of(set_name, pod) is not None

        manager = ControllerRefManager(lambda ns, n, body: self.client.patch("pods", n, body, ns), sts,
                                       owner_reference(sts), selector, recheck_deletion(fresh, "StatefulSet", sts))  # fmt: skip
        pods = await manager.claim(pods_by_owner(self.pods.indexer, sts, include_orphans=True), mine)
        if md.get("deletionTimestamp"):
            return
        current, update = await self._revisions(sts)
        await self._update_replicas(sts, pods, current, update)
        await self._update_status(sts, current, update)

    async def _update_replicas(self, sts: Object, pods: list[Object], current: Object, update: Object) -> None:
        spec = sts.get("spec") or {}
        set_name = str(sts["metadata"]["name"])
        start = int(((spec.get("ordinals") or {}).get("start")) or 0)
        replicas = int(spec.get("replicas", 1))
        parallel = spec.get("podManagementPolicy") == "Parallel"
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = dt.datetime.now(dt.UTC)
        by_ordinal = {o: p for p in pods if (o := ordinal_of(set_name, p)) is not None}
        wanted = range(start, start + replicas)
        strategy = spec.get("updateStrategy") or {}
        partition = int(((strategy.get("rollingUpdate") or {}).get("partition")) or 0)
        update_name = update["metadata"]["name"]

        def revision_for(ordinal: int) -> Object:
            if strategy.get("type", "RollingUpdate") == "RollingUpdate" and ordinal - start < partition:
                return current
            return update

        if spec.get("volumeClaimTemplates"):
            # A changed policy, or a scale back up, re-decides the owners of the claims of live pods.
            for ordinal, live in by_ordinal.items():
                if ordinal in wanted and not live["metadata"].get("deletionTimestamp"):
                    await self._retain_claims(sts, live, ordinal)
        # Replicas: failed pods go, missing ones come, lowest first.
        for ordinal in wanted:
            pod = by_ordinal.get(ordinal)
            if (
                pod is not None
                and (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")
                and not (pod["metadata"].get("deletionTimestamp"))
            ):
                await self._delete(sts, pod)
                if not parallel:
                    return
                continue
            if pod is None:
                await self._create(sts, ordinal, revision_for(ordinal))
                if not parallel:
                    return
                continue
            if not parallel and (
                pod["metadata"].get("deletionTimestamp") or not _running_and_ready(pod, min_ready, now)
            ):
                return  # OrderedReady: the next waits for this one
        condemned = sorted((o for o in by_ordinal if o not in wanted), reverse=True)
        for ordinal in condemned:
            pod = by_ordinal[ordinal]
            if pod["metadata"].get("deletionTimestamp"):
                if not parallel:
                    return
                continue
            await self._retain_claims(sts, pod, ordinal)  # whenScaled: Delete hands the claims to the pod first
            await self._delete(sts, pod)
            if not parallel:
                return
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        # RollingUpdate: the highest ordinal not at the update revision goes, once every other pod is Ready.
        if any(not _running_and_ready(p, min_ready, now) or p["metadata"].get("deletionTimestamp")
               for o, p in by_ordinal.items() if o in wanted):  # fmt: skip
            return
        for ordinal in sorted(wanted, reverse=True):
            if ordinal - start < partition:
                break
            pod = by_ordinal.get(ordinal)
            labels = ((pod or {}).get("metadata") or {}).get("labels") or {}
            if pod is not None and labels.get(CONTROLLER_REVISION_HASH_LABEL) != update_name:
                await self._delete(sts, pod)
                return

    async def _update_status(self, sts: dict[str, Any], current: Object, update: Object) -> None:
        spec = sts.get("spec") or {}
        set_name = str(sts["metadata"]["name"])
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = dt.datetime.now(dt.UTC)
        uid = sts["metadata"].get("uid")
        pods = [p for p in pods_by_owner(self.pods.indexer, sts, include_orphans=False)
                if (controller_of(p) or {}).get("uid") == uid and ordinal_of(set_name, p) is not None]  # fmt: skip
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        update_name, current_name = update["metadata"]["name"], current["metadata"]["name"]
        hashes = [(p["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) for p in live]
        status: dict[str, Any] = {"observedGeneration": int(sts["metadata"].get("generation") or 0),
                                  "replicas": len(live),
                                  "readyReplicas": sum(1 for p in live if is_pod_ready(p)),
                                  "availableReplicas": sum(1 for p in live if is_pod_available(p, min_ready, now)),
                                  "currentReplicas": sum(1 for h in hashes if h == current_name),
                                  "updatedReplicas": sum(1 for h in hashes if h == update_name),
                                  "currentRevision": current_name, "updateRevision": update_name}  # fmt: skip
        replicas = int(spec.get("replicas", 1))
        if (status["updatedReplicas"] == replicas and status["readyReplicas"] == replicas
                and status["replicas"] == replicas):  # fmt: skip
            # The rollout is complete: the update revision becomes the current one.
            status["currentRevision"] = update_name
            status["currentReplicas"] = status["updatedReplicas"]
        old = sts.get("status") or {}
        if old.get("collisionCount") is not None:
            status["collisionCount"] = old["collisionCount"]
        for k in ("readyReplicas", "currentReplicas", "updatedReplicas"):
            if not status[k]:
                status.pop(k)  # as the Go type encodes them: omitted at 0 (availableReplicas is not)
        if min_ready > 0 and status.get("availableReplicas", 0) != status.get("readyReplicas", 0):
            # Ready pods become available after minReadySeconds with no event to say so: look again then.
            self.queue.add_after(meta_namespace_key(sts), float(min_ready))
        if status == old:
            return
        sts["status"] = status
        try:
            await self.client.update_status(STATEFULSETS, sts, sts["metadata"]["namespace"])
        except errors.NotFound:
            pass
