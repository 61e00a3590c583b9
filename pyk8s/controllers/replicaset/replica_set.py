"""The ReplicaSet controller (upstream: pkg/controller/replicaset/replica_set.go); with `REPLICATION_CONTROLLER`
it is also the ReplicationController manager, as upstream runs one implementation for both.

Each sync of an owner (a ReplicaSet or ReplicationController, by `namespace/name` from a rate-limited queue):
1. claims its pods: the active ones it controls that its selector matches, adopting matching orphans and
   releasing pods that stopped matching (controller_ref_manager);
2. if its expectations are met (expectations.py) and it is not being deleted, creates the missing pods from its
   template (at most `burst_replicas` per sync, in slow-start batches) or deletes the surplus, chosen by
   upstream's ranking (active_pods.deletion_order) among the pods of its controller family;
3. writes its status (replica_set_utils).
Pod events wake the owner through its controller reference; an orphan's changes wake every owner whose
selector matches it. A pod that became Ready wakes its owner again after `minReadySeconds`, when it becomes
available.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...api import errors
from ...api.meta import controller_of, owner_reference
from ...api.selectors import LabelSelector, SelectorError, label_selector_from_object
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..active_pods import RANK_FACTS, colocation_ranks, deletion_order, rank_facts, related_pods_per_node
from ..controller_ref_manager import (
    POD_STATE_TALLY,
    ControllerRefManager,
    PodState,
    add_pod_controller_uid_indexer,
    add_pod_state_tally,
    orphans_of_namespace,
    pods_by_owner,
    recheck_deletion,
)
from ..expectations import UIDTrackingControllerExpectations
from ..pod_control import SLOW_START_INITIAL_BATCH_SIZE, PodControl, slow_start_batch
from ..podutil import POD_FACTS, is_pod_ready, pod_facts, pod_key
from ..workers import queue_workers, run_workers
from .replica_set_utils import PodCounts, calculate_status, update_status

log = logging.getLogger(__name__)

Object = Mapping[str, Any]

# Upstream's BurstReplicas: the most pods one sync creates or deletes.
BURST_REPLICAS = 500
CONTROLLER_UID_INDEX = "controllerUID"  # owners by their own controller's UID (a Deployment's ReplicaSets)


def _replica_set_selector(rs: Object) -> LabelSelector:
    return label_selector_from_object((rs.get("spec") or {}).get("selector"), "spec.selector")


def _rc_selector(rc: Object) -> LabelSelector:
    # A ReplicationController's selector is a plain map (required non-empty by validation).
    return label_selector_from_object({"matchLabels": (rc.get("spec") or {}).get("selector") or {}})


@dataclass(frozen=True)
class OwnerKind:
    """What differs between the ReplicaSet controller and the ReplicationController manager."""

    resource: str
    api_version: str
    kind: str
    component: str  # the event source
    queue_name: str
    selector: Callable[[Object], LabelSelector]


REPLICA_SET = OwnerKind("replicasets", "apps/v1", "ReplicaSet", "replicaset-controller", "replicaset",
                        _replica_set_selector)  # fmt: skip
REPLICATION_CONTROLLER = OwnerKind("replicationcontrollers", "v1", "ReplicationController", "replication-controller",
                                   "replicationmanager", _rc_selector)  # fmt: skip


def _owners_by_controller_uid(obj: Object) -> list[str]:
    ref = controller_of(obj)
    return [str(ref.get("uid"))] if ref is not None and ref.get("uid") else []


class ReplicaSetController:
    def __init__(
        self,
        client: RESTClient,
        factory: SharedInformerFactory,
        *,
        kind: OwnerKind = REPLICA_SET,
        workers: int = 5,
        burst_replicas: int = BURST_REPLICAS,
    ) -> None:
        self.client = client
        self.kind = kind
        self.workers = workers
        self.burst_replicas = burst_replicas
        self.expectations = UIDTrackingControllerExpectations()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name=kind.queue_name)
        self.broadcaster = EventBroadcaster(client)
        self.pod_control = PodControl(client, self.broadcaster.new_core_recorder(kind.component))
        self.owners = factory.informer_for(kind.resource)
        if CONTROLLER_UID_INDEX not in self.owners.indexer.get_indexers():
            self.owners.indexer.add_indexers({CONTROLLER_UID_INDEX: _owners_by_controller_uid})
        self.pods = factory.informer_for("pods")
        add_pod_controller_uid_indexer(self.pods.indexer)
        add_pod_state_tally(self.pods.indexer)
        self.pod_facts = self.pods.indexer.derived(POD_FACTS, pod_facts)
        self.rank_facts = self.pods.indexer.derived(RANK_FACTS, rank_facts)
        self.owners.add_event_handler(
            on_add=lambda o, _initial: self._enqueue(o),
            on_update=self._update_owner,
            on_delete=self._delete_owner,
        )
        self.pods.add_event_handler(
            on_add=lambda p, _initial: self._add_pod(p),
            on_update=self._update_pod,
            on_delete=self._delete_pod,
        )

    async def run(self) -> None:
        await asyncio.gather(self.owners.wait_for_sync(), self.pods.wait_for_sync())
        tasks = queue_workers(self.queue, self.sync, f"sync {self.kind.kind}", self.workers)
        await run_workers(tasks, [self.queue], self.broadcaster)

    # -- event handlers ---------------------------------------------------------------------------------

    def _enqueue(self, owner: Object) -> None:
        self.queue.add(meta_namespace_key(owner))

    def _update_owner(self, old: Object, cur: Object) -> None:
        if (old.get("metadata") or {}).get("uid") != (cur.get("metadata") or {}).get("uid"):
            # Deleted and re-created under the same name between two observations: the old one's
            # expectations must not hold the new one back.
            self._delete_owner(old)
        self._enqueue(cur)

    def _delete_owner(self, obj: Any) -> None:
        owner = deleted_object(obj)
        key = meta_namespace_key(owner)
        self.expectations.delete(key)
        self.queue.add(key)

    def _resolve(self, namespace: str, ref: Object) -> Object | None:
        """The owner a controller reference names, if it is of our kind and still the same object."""
        if ref.get("kind") != self.kind.kind:
            return None
        owner = self.owners.indexer.get_by_key(f"{namespace}/{ref.get('name')}")
        if owner is None or (owner.get("metadata") or {}).get("uid") != ref.get("uid"):
            return None
        return owner

    def _owners_matching(self, pod: Object) -> list[Object]:
        """The owners in the pod's namespace whose selector matches it (upstream: GetPodReplicaSets); an empty
        selector matches nothing here."""
        md = pod.get("metadata") or {}
        labels = md.get("labels") or {}
        out = []
        for owner in self.owners.indexer.by_index("namespace", str(md.get("namespace") or "")):
            try:
                selector = self.kind.selector(owner)
            except SelectorError:
                continue
            if not selector.empty and selector.matches(labels):
                out.append(owner)
        return out

    def _add_pod(self, pod: Object) -> None:
        md = pod.get("metadata") or {}
        if md.get("deletionTimestamp"):
            # A restarted controller may see a pod already being deleted: count it as deleted now.
            self._delete_pod(pod)
            return
        ref = controller_of(pod)
        if ref is not None:
            owner = self._resolve(str(md.get("namespace") or ""), ref)
            if owner is not None:
                key = meta_namespace_key(owner)
                self.expectations.creation_observed(key)
                self.queue.add(key)
            return
        for owner in self._owners_matching(pod):
            self._enqueue(owner)

    def _update_pod(self, old: Object, cur: Object) -> None:
        omd, cmd = old.get("metadata") or {}, cur.get("metadata") or {}
        if omd.get("resourceVersion") == cmd.get("resourceVersion"):
            return  # a periodic resync: nothing changed
        label_changed = (omd.get("labels") or {}) != (cmd.get("labels") or {})
        if cmd.get("deletionTimestamp"):
            # Graceful deletion: the replacement starts now, not when the kubelet is done.
            self._delete_pod(cur)
            if label_changed:
                self._delete_pod(old)
            return
        namespace = str(cmd.get("namespace") or "")
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            owner = self._resolve(namespace, old_ref)
            if owner is not None:
                self._enqueue(owner)
        if cur_ref is not None:
            owner = self._resolve(namespace, cur_ref)
            if owner is None:
                return
            self._enqueue(owner)
            min_ready = int((owner.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                # Available once Ready for minReadySeconds; the extra second absorbs clock rounding.
                self.queue.add_after(meta_namespace_key(owner), min_ready + 1.0)
            return
        if label_changed or ref_changed:
            for owner in self._owners_matching(cur):
                self._enqueue(owner)

    def _delete_pod(self, obj: Any) -> None:
        pod = deleted_object(obj)
        ref = controller_of(pod)
        if ref is None:
            return
        owner = self._resolve(str((pod.get("metadata") or {}).get("namespace") or ""), ref)
        if owner is None:
            return
        key = meta_namespace_key(owner)
        self.expectations.deletion_observed(key, pod_key(pod))
        self.queue.add(key)

    # -- sync -----------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        owner = self.owners.indexer.get_by_key(key)
        if owner is None:
            self.expectations.delete(key)
            return
        needs_sync = self.expectations.satisfied(key)
        try:
            selector = self.kind.selector(owner)
        except SelectorError as err:
            log.error("%s %s: invalid selector: %s", self.kind.kind, key, err)
            return
        md = owner.get("metadata") or {}
        facts = self.pod_facts
        manage = needs_sync and not md.get("deletionTimestamp")
        manage_error: BaseException | None = None
        counted = self._count_without_reading(owner, selector)
        if counted is not None and not (
            manage and counted.replicas > int((owner.get("spec") or {}).get("replicas", 1))
        ):
            # Nothing to adopt, release or choose among: the counts are the whole story.
            if manage:
                try:
                    await self.create_missing(counted.replicas, owner, key)
                except (errors.StatusError, ConnectionError, ValueError) as err:
                    manage_error = err
            pods_or_counts: Sequence[Object] | PodCounts = counted
        else:
            pods = [p for p in pods_by_owner(self.pods.indexer, owner, include_orphans=True) if facts(p).active]
            pods = await self._claim(owner, selector, pods)
            if manage:
                try:
                    await self.manage_replicas(pods, owner, key)
                except (errors.StatusError, ConnectionError, ValueError) as err:
                    manage_error = err
            pods_or_counts = pods
        now = dt.datetime.now(dt.UTC)
        try:
            updated = await update_status(self.client, self.kind.resource, owner,
                                          calculate_status(owner, pods_or_counts, manage_error, now, facts))  # fmt: skip
        except errors.NotFound:
            return
        spec, status = updated.get("spec") or {}, updated.get("status") or {}
        replicas = int(spec.get("replicas", 1))
        min_ready = int(spec.get("minReadySeconds") or 0)
        if (manage_error is None and min_ready > 0 and int(status.get("readyReplicas") or 0) == replicas
                and int(status.get("availableReplicas") or 0) != replicas):  # fmt: skip
            # A last line of defence against clock skew: look again once the Ready pods should be available.
            self.queue.add_after(key, float(min_ready))
        if manage_error is not None:
            raise manage_error

    def _count_without_reading(self, owner: Object, selector: LabelSelector) -> PodCounts | None:
        """The owner's active pods counted from the pod informer's tally, when the counts are all a sync needs:
        no orphan it could adopt, none of its pods to release, no minReadySeconds (which needs each pod's time).
        None when the pods must be read one by one (the claim and status below do that). A sync that deletes
        reads them as well, to choose which go."""
        spec = owner.get("spec") or {}
        if int(spec.get("minReadySeconds") or 0) > 0:
            return None
        md = owner.get("metadata") or {}
        for orphan in orphans_of_namespace(self.pods.indexer, str(md.get("namespace") or "")):
            if self.pod_facts(orphan).active and selector.matches((orphan.get("metadata") or {}).get("labels")):
                return None
        wanted = dict(((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}).items()
        active = fully_labeled = ready = 0
        for state, n in self.pods.indexer.tally(POD_STATE_TALLY, str(md.get("uid") or "")).items():
            assert isinstance(state, PodState)
            if not state.active:
                continue
            labels = dict(state.labels)
            if not selector.matches(labels):
                return None  # owned, but no longer selected: to be released
            active += n
            if wanted <= labels.items():
                fully_labeled += n
            if state.ready:
                ready += n
        return PodCounts(active, fully_labeled, ready, ready)

    async def _claim(self, owner: Object, selector: LabelSelector, pods: Sequence[Object]) -> list[Object]:
        md = owner.get("metadata") or {}
        name, namespace = str(md.get("name")), str(md.get("namespace") or "")

        async def fresh() -> Object:
            return await self.client.get(self.kind.resource, name, namespace)

        manager = ControllerRefManager(
            self.pod_control.patch_pod, owner, owner_reference(owner), selector,
            recheck_deletion(fresh, self.kind.kind, owner),
        )  # fmt: skip
        return await manager.claim(pods)

    async def manage_replicas(self, pods: Sequence[Object], owner: Object, key: str) -> None:
        """Create or delete pods until `pods` (the active ones it owns) number spec.replicas."""
        spec = owner.get("spec") or {}
        namespace = str((owner.get("metadata") or {}).get("namespace") or "")
        diff = len(pods) - int(spec.get("replicas", 1))
        if diff < 0:
            await self.create_missing(len(pods), owner, key)
        elif diff > 0:
            n = min(diff, self.burst_replicas)
            log.info("%s %s: too many replicas, need %s, deleting %d", self.kind.kind, key, spec.get("replicas", 1), n)
            doomed = self._pods_to_delete(owner, pods, n)
            self.expectations.expect_deletions(key, [pod_key(p) for p in doomed])

            await self.pod_control.delete_pods(namespace, doomed, owner,
                                               lambda pod: self.expectations.deletion_observed(key, pod_key(pod)))  # fmt: skip

    async def create_missing(self, active: int, owner: Object, key: str) -> None:
        """Create pods from the template while the owner has fewer than spec.replicas (`active` now), at most
        `burst_replicas` in slow-start batches."""
        spec = owner.get("spec") or {}
        namespace = str((owner.get("metadata") or {}).get("namespace") or "")
        diff = active - int(spec.get("replicas", 1))
        if diff < 0:
            n = min(-diff, self.burst_replicas)
            self.expectations.expect_creations(key, n)
            log.info("%s %s: too few replicas, need %s, creating %d", self.kind.kind, key, spec.get("replicas", 1), n)
            template = spec.get("template") or {}
            ref = owner_reference(owner)

            async def create() -> None:
                try:
                    await self.pod_control.create_pods(namespace, template, owner, ref)
                except errors.StatusError as err:
                    # Nothing can be created in a namespace being deleted; not worth a retry.
                    if not errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
                        raise

            created, err = await slow_start_batch(n, SLOW_START_INITIAL_BATCH_SIZE, create)
            for _ in range(n - created):
                # Never attempted (or failed): the informer will not see them.
                self.expectations.creation_observed(key)
            if err is not None:
                raise err

    def _pods_to_delete(self, owner: Object, pods: Sequence[Object], n: int) -> list[Object]:
        if n >= len(pods):
            return list(pods)[:n]
        ranks = colocation_ranks(pods, self._related_pods_per_node(owner))
        return deletion_order(pods, ranks, dt.datetime.now(dt.UTC), self.rank_facts, first=n)

    def _related_pods_per_node(self, owner: Object) -> dict[str, int]:
        """How many active pods each node holds of every owner with the same controller as `owner` (a
        Deployment's ReplicaSets), found by those owners' selectors (upstream: getIndirectlyRelatedPods, then
        getPodsRankedByRelatedPodsOnSameNode); empty for an owner no one controls. One pass over the namespace's
        pods."""
        ref = controller_of(owner)
        if ref is None:
            return {}
        selectors = []
        for related in self.owners.indexer.by_index(CONTROLLER_UID_INDEX, str(ref.get("uid"))):
            try:
                selectors.append(self.kind.selector(related))
            except SelectorError:
                continue
        namespace = str((owner.get("metadata") or {}).get("namespace") or "")
        facts = self.pod_facts
        return related_pods_per_node(self.pods.indexer.by_index("namespace", namespace), selectors,
                                     lambda p: facts(p).active)  # fmt: skip
