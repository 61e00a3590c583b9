"""The DaemonSet controller (upstream: pkg/controller/daemon: daemon_controller.go, update.go, util/,
`daemonset-controller`): one pod of a DaemonSet on every node it should run on.

A node should run the pod when the template names no other node, its nodeSelector and required node affinity
match the node, and every NoSchedule/NoExecute taint is tolerated (with the tolerations every daemon pod gets: not
ready and unreachable NoExecute without a limit, the pressure and unschedulable NoSchedule ones). Node readiness
does not matter. A pod already there may stay under an untolerated NoSchedule taint, not under NoExecute.

Each sync: the current template's ControllerRevision (`<ds>-<hash>`; history.py) is found or created, and older
ones beyond revisionHistoryLimit go; nodes missing a pod get one (at most 250 a sync, in slow-start batches), made
from the template with the revision's `controller-revision-hash` label and a required node affinity on
`metadata.name` (the default scheduler binds it, as upstream); extra pods on a node (oldest kept), pods on nodes
that should not run them, and failed pods (FailedDaemonPod) are deleted. RollingUpdate with maxSurge 0 replaces old
pods on at most maxUnavailable nodes at a time, unavailable ones first; with maxSurge it starts the new pod beside
the old one on at most maxSurge nodes at a time and deletes the old one once the new one is available; OnDelete
waits for the user. Then the
status (desired/current/misscheduled/ready/updated/available/unavailable numbers).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...api import errors
from ...api.intstr import scaled_value
from ...api.meta import controller_of, json_copy, owner_reference
from ...api.selectors import SelectorError, label_selector_from_object
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ...scheduler.plugins.helper import required_node_affinity_matches, tolerates
from ..active_pods import is_pod_active
from ..controller_ref_manager import (
    ControllerRefManager,
    add_pod_controller_uid_indexer,
    pods_by_owner,
    recheck_deletion,
)
from ..expectations import UIDTrackingControllerExpectations
from ..history import (
    CONTROLLER_REVISION_HASH_LABEL,
    REVISIONS,
    equal_revision,
    max_revision,
    new_revision,
    revision_data,
)
from ..pod_control import SLOW_START_INITIAL_BATCH_SIZE, PodControl, pod_from_template, slow_start_batch
from ..podutil import is_pod_available, is_pod_ready, pod_key
from ..workers import queue_workers, run_workers

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
DAEMONSETS = "daemonsets.apps"
BURST_REPLICAS = 250
FAILED_POD_BACKOFF_INITIAL = 1.0
FAILED_POD_BACKOFF_MAX = 15 * 60.0

# The tolerations every daemon pod gets (upstream: AddOrUpdateDaemonPodTolerations).
_DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
_HOST_NETWORK_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def daemon_tolerations(spec: Object) -> list[dict[str, Any]]:
    """The pod spec's tolerations plus the daemon ones it lacks."""
    out = [dict(t) for t in spec.get("tolerations") or ()]
    extra = [*_DAEMON_TOLERATIONS, *([_HOST_NETWORK_TOLERATION] if spec.get("hostNetwork") else [])]
    for t in extra:
        if not any(x.get("key") == t["key"] and x.get("effect") == t["effect"] and x.get("operator") == "Exists"
                   for x in out):  # fmt: skip
            out.append(dict(t))
    return out


def with_node_affinity(spec: dict[str, Any], node_name: str) -> None:
    """Pin the pod to `node_name` through required node affinity on metadata.name, replacing any such field term
    (upstream: ReplaceDaemonSetPodNodeNameNodeAffinity)."""
    field = {"key": "metadata.name", "operator": "In", "values": [node_name]}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        terms = [{"matchFields": [field]}]
    else:
        terms = [{**t, "matchFields": [*(f for f in t.get("matchFields") or () if f.get("key") != "metadata.name"),
                                       field]} for t in terms]  # fmt: skip
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}


def node_should_run(ds: Object, node: Object) -> tuple[bool, bool]:
    """(whether the daemon pod should run on `node`, whether one already there may keep running) (upstream:
    NodeShouldRunDaemonPod)."""
    template_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    name = (node.get("metadata") or {}).get("name")
    if template_spec.get("nodeName") and template_spec["nodeName"] != name:
        return False, False
    pod = {"spec": {**template_spec, "tolerations": daemon_tolerations(template_spec)}}
    if not required_node_affinity_matches(pod, dict(node)):
        return False, False
    tolerations = pod["spec"]["tolerations"]
    should_run = keep = True
    for taint in (node.get("spec") or {}).get("taints") or ():
        if taint.get("effect") not in ("NoSchedule", "NoExecute") or any(tolerates(t, taint) for t in tolerations):
            continue
        should_run = False
        if taint.get("effect") == "NoExecute":
            keep = False
    return should_run, keep


def allows_surge(ds: Object) -> bool:
    """A RollingUpdate whose maxSurge is not 0 (upstream: util.AllowsSurge, scaled against one node)."""
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return False
    return scaled_value(((strategy.get("rollingUpdate") or {}).get("maxSurge")) or 0, 1, True) != 0


def _target_node(pod: Object) -> str | None:
    """The node a daemon pod is for: where it runs, or where its node affinity pins it."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})  # fmt: skip
    for term in required.get("nodeSelectorTerms") or ():
        for f in term.get("matchFields") or ():
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or ()) == 1:
                return str(f["values"][0])
    return None


class DaemonSetsController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 2,
                 burst_replicas: int = BURST_REPLICAS) -> None:  # fmt: skip
        self.client = client
        self.workers = workers
        self.burst_replicas = burst_replicas
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="daemonset")
        self.broadcaster = EventBroadcaster(client)
        self.recorder = self.broadcaster.new_core_recorder("daemonset-controller")
        self.pod_control = PodControl(client, self.recorder)
        self.expectations = UIDTrackingControllerExpectations()
        self._backoff: dict[str, tuple[float, float]] = {}  # `<ds uid>/<node>` -> (last delay, not before)
        self.daemonsets = factory.informer_for(DAEMONSETS)
        self.pods = factory.informer_for("pods")
        self.nodes = factory.informer_for("nodes")
        self.revisions = factory.informer_for(REVISIONS)
        add_pod_controller_uid_indexer(self.pods.indexer)
        self.daemonsets.add_event_handler(
            on_add=lambda d, _initial: self._enqueue(d),
            on_update=lambda _o, d: self._enqueue(d),
            on_delete=self._ds_deleted,
        )
        self.pods.add_event_handler(
            on_add=lambda p, _initial: self._pod_event(p, added=True),
            on_update=lambda _o, p: self._pod_event(p),
            on_delete=lambda p: self._pod_event(deleted_object(p), deleted=True),
        )
        # Any node change may change where daemons run: every DaemonSet looks again.
        self.nodes.add_event_handler(
            on_add=lambda _n, _initial: self._enqueue_all(), on_update=self._node_updated,
            on_delete=lambda _n: self._enqueue_all(),
        )  # fmt: skip

    def _enqueue(self, ds: Object) -> None:
        self.queue.add(meta_namespace_key(ds))

    def _enqueue_all(self) -> None:
        for ds in self.daemonsets.indexer.list():
            self._enqueue(ds)

    def _node_updated(self, old: Object, cur: Object) -> None:
        keys = ("labels", "taints", "unschedulable")
        o = {**(old.get("metadata") or {}), **(old.get("spec") or {})}
        c = {**(cur.get("metadata") or {}), **(cur.get("spec") or {})}
        if any(o.get(k) != c.get(k) for k in keys):
            self._enqueue_all()

    def _ds_deleted(self, obj: Any) -> None:
        key = meta_namespace_key(deleted_object(obj))
        self.expectations.delete(key)
        self.queue.add(key)

    def _pod_event(self, pod: Object, *, added: bool = False, deleted: bool = False) -> None:
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != "DaemonSet":
            return
        md = pod.get("metadata") or {}
        key = f"{md.get('namespace')}/{ref.get('name')}"
        ds = self.daemonsets.indexer.get_by_key(key)
        if ds is None or (ds.get("metadata") or {}).get("uid") != ref.get("uid"):
            return
        if added and not md.get("deletionTimestamp"):
            self.expectations.creation_observed(key)
        if deleted or md.get("deletionTimestamp"):
            self.expectations.deletion_observed(key, pod_key(pod))
        self.queue.add(key)

    async def run(self) -> None:
        await asyncio.gather(*(i.wait_for_sync() for i in (self.daemonsets, self.pods, self.nodes, self.revisions)))
        tasks = queue_workers(self.queue, self.sync, "sync daemon set", self.workers)
        await run_workers(tasks, [self.queue], self.broadcaster)

    # -- sync -----------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cached = self.daemonsets.indexer.get_by_key(key)
        if cached is None:
            self.expectations.delete(key)
            return
        ds: dict[str, Any] = json_copy(cached)
        md, spec = ds["metadata"], ds.get("spec") or {}
        try:
            selector = label_selector_from_object(spec.get("selector"), "spec.selector")
        except SelectorError as err:
            log.error("daemon set %s: invalid selector: %s", key, err)
            return
        if selector.empty:
            self.recorder.event(ds, "Warning", "SelectingAll",
                                "This daemon set is selecting all pods. A non-empty selector is required.")  # fmt: skip
            return
        pods = await self._claim(ds, selector)
        if md.get("deletionTimestamp"):
            return
        revision_hash = await self._sync_history(ds)
        if self.expectations.satisfied(key):
            await self._manage(key, ds, pods, revision_hash)
            if (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate":
                await self._rolling_update(key, ds, self._pods_now(ds), revision_hash)
        await self._update_status(ds, self._pods_now(ds), revision_hash)

    def _pods_now(self, ds: Object) -> list[Object]:
        return pods_by_owner(self.pods.indexer, ds, include_orphans=False)

    async def _claim(self, ds: Object, selector: Any) -> list[Object]:
        md = ds.get("metadata") or {}
        name, namespace = str(md.get("name")), str(md.get("namespace") or "")

        async def fresh() -> Object:
            return await self.client.get(DAEMONSETS, name, namespace)

        manager = ControllerRefManager(self.pod_control.patch_pod, ds, owner_reference(ds), selector,
                                       recheck_deletion(fresh, "DaemonSet", ds))  # fmt: skip
        return await manager.claim(pods_by_owner(self.pods.indexer, ds, include_orphans=True))

    async def _sync_history(self, ds: Object) -> str:
        """The current template's revision hash, its ControllerRevision created (or renumbered) and the old ones
        beyond revisionHistoryLimit removed."""
        md = ds.get("metadata") or {}
        namespace = str(md.get("namespace") or "")
        owned = [r for r in self.revisions.indexer.by_index("namespace", namespace)
                 if (controller_of(r) or {}).get("uid") == md.get("uid")]  # fmt: skip
        template = (ds.get("spec") or {}).get("template") or {}
        data = revision_data(template)
        current = next((r for r in owned if r.get("data") == data), None)
        top = max_revision(owned)
        collision = (ds.get("status") or {}).get("collisionCount")
        if current is None:
            body = new_revision(ds, owner_reference(ds), template, top + 1, collision)
            try:
                current = await self.client.create(REVISIONS, body, namespace)
            except errors.AlreadyExists:
                found = await self.client.get(REVISIONS, body["metadata"]["name"], namespace)
                if not equal_revision(found, body):
                    raise
                current = found
        elif int(current.get("revision") or 0) < top:
            bumped = json_copy(current)
            bumped["revision"] = top + 1
            current = await self.client.update(REVISIONS, bumped, namespace)
        limit = int((ds.get("spec") or {}).get("revisionHistoryLimit", 10))
        in_use = {(p.get("metadata") or {}).get("labels", {}).get(CONTROLLER_REVISION_HASH_LABEL)
                  for p in self._pods_now(ds)}  # fmt: skip
        olds = sorted((r for r in owned if r["metadata"]["name"] != current["metadata"]["name"]
                       and r["metadata"].get("labels", {}).get(CONTROLLER_REVISION_HASH_LABEL) not in in_use),
                      key=lambda r: int(r.get("revision") or 0))  # fmt: skip
        for r in olds[: max(0, len(olds) - limit)]:
            try:
                await self.client.delete(REVISIONS, r["metadata"]["name"], namespace)
            except errors.NotFound:
                pass
        return str(current["metadata"].get("labels", {}).get(CONTROLLER_REVISION_HASH_LABEL, ""))

    def _pod(self, ds: Object, node: str, revision_hash: str) -> dict[str, Any]:
        template = json_copy((ds.get("spec") or {}).get("template") or {})
        template.setdefault("metadata", {}).setdefault("labels", {})[CONTROLLER_REVISION_HASH_LABEL] = revision_hash
        pod = pod_from_template(template, ds, owner_reference(ds))
        pod["spec"]["tolerations"] = daemon_tolerations(pod["spec"])
        with_node_affinity(pod["spec"], node)
        return pod

    async def _manage(self, key: str, ds: Object, pods: list[Object], revision_hash: str) -> None:
        by_node: dict[str, list[Object]] = {}
        for p in pods:
            target = _target_node(p)
            if target is not None:
                by_node.setdefault(target, []).append(p)
        create: list[str] = []
        delete: list[Object] = []
        for node in self.nodes.indexer.list():
            name = str((node.get("metadata") or {}).get("name"))
            should_run, keep = node_should_run(ds, node)
            here = by_node.pop(name, [])
            live = [p for p in here if not (p.get("metadata") or {}).get("deletionTimestamp")]
            if should_run:
                failed = [p for p in live if (p.get("status") or {}).get("phase") in ("Failed", "Succeeded")]
                if any(p["status"]["phase"] == "Failed" for p in failed):
                    wait = self._failed_pod_backoff(f"{ds['metadata'].get('uid')}/{name}")
                    if wait > 0:
                        # A pod that keeps failing here is replaced ever more slowly (1 s doubling to 15 min).
                        self.queue.add_after(key, wait)
                        continue
                for p in failed:
                    if p["status"]["phase"] == "Failed":
                        self.recorder.event(ds, "Warning", "FailedDaemonPod",
                                            f"Found failed daemon pod {pod_key(p)} on node {name}, will try to kill it")  # fmt: skip
                    else:
                        self.recorder.event(ds, "Normal", "SucceededDaemonPod",
                                            f"Found succeeded daemon pod {pod_key(p)} on node {name}, will try to delete it")  # fmt: skip
                delete += failed
                running = [p for p in live if p not in failed]
                if not running and not [p for p in here if p not in live]:
                    create.append(name)
                elif len(running) > 1:
                    delete += self._excess(ds, running, revision_hash)
            elif not keep:
                delete += live
        for orphaned in by_node.values():  # pods for nodes that are gone
            delete += [p for p in orphaned if not (p.get("metadata") or {}).get("deletionTimestamp")]
        await self._sync_nodes(key, ds, delete, create, revision_hash)

    async def _sync_nodes(
        self, key: str, ds: Object, delete: list[Object], create: list[str], revision_hash: str
    ) -> None:
        """Create a pod on each of the `create` nodes and delete `delete`, at most burst_replicas of each, under
        expectations (upstream: syncNodes)."""
        create, delete = create[: self.burst_replicas], delete[: self.burst_replicas]
        namespace = str(ds["metadata"]["namespace"])
        if delete:
            self.expectations.expect_deletions(key, [pod_key(p) for p in delete])
        self.expectations.expect_creations(key, len(create))
        pending = iter(create)

        async def make() -> None:
            await self.pod_control.create_pod(namespace, self._pod(ds, next(pending), revision_hash), ds)

        created, err = await slow_start_batch(len(create), SLOW_START_INITIAL_BATCH_SIZE, make)
        for _ in range(len(create) - created):
            self.expectations.creation_observed(key)
        await self._delete(key, ds, delete)
        if err is not None:
            raise err

    @staticmethod
    def _excess(ds: Object, running: list[Object], revision_hash: str) -> list[Object]:
        """Which of a node's several running pods go (upstream: podsShouldBeOnNode). Without surge, all but one (a
        scheduled one first, then the oldest); with surge, an old and a new pod may share the node while the new
        one becomes available, the old one going as soon as it is available or the old one is not ready."""
        running = sorted(running, key=lambda p: (not (p.get("spec") or {}).get("nodeName"),
                                                 str(p["metadata"].get("creationTimestamp") or ""), p["metadata"]["name"]))  # fmt: skip
        if not allows_surge(ds):
            return running[1:]
        excess: list[Object] = []
        oldest_new: Object | None = None
        oldest_old: Object | None = None
        for p in running:
            if (p["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) == revision_hash:
                if oldest_new is None:
                    oldest_new = p
                    continue
            elif oldest_old is None:
                oldest_old = p
                continue
            excess.append(p)
        if oldest_new is not None and oldest_old is not None:
            min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
            if not is_pod_ready(oldest_old) or is_pod_available(oldest_new, min_ready, dt.datetime.now(dt.UTC)):
                excess.append(oldest_old)
        return excess

    def _failed_pod_backoff(self, key: str) -> float:
        """Seconds to wait before replacing a failed pod on a node again, 0 when it may be replaced now (and the
        next wait doubles) (upstream: failedPodsBackoff, 1 s to 15 min)."""
        now = time.monotonic()
        delay, until = self._backoff.get(key, (0.0, 0.0))
        if now < until:
            return until - now
        if now - until > 2 * FAILED_POD_BACKOFF_MAX:
            delay = 0.0  # quiet for long enough: start over
        delay = min(max(2 * delay, FAILED_POD_BACKOFF_INITIAL), FAILED_POD_BACKOFF_MAX)
        self._backoff[key] = (delay, now + delay)
        return 0.0

    async def _delete(self, key: str, ds: Object, pods: Sequence[Object]) -> None:
        await self.pod_control.delete_pods(str(ds["metadata"]["namespace"]), pods, ds,
                                           lambda pod: self.expectations.deletion_observed(key, pod_key(pod)))  # fmt: skip

    async def _rolling_update(self, key: str, ds: Object, pods: list[Object], revision_hash: str) -> None:
        """Replace old pods (upstream: rollingUpdate). maxSurge 0: delete old pods, unavailable ones always,
        available ones while fewer than maxUnavailable nodes lack an available pod, and let the manage loop
        create their replacements. maxSurge > 0: create the new pod beside the old one first, at once where the
        old one is unavailable and on at most maxSurge other nodes at a time; the old pod goes once the new one
        is available."""
        desired = [n for n in self.nodes.indexer.list() if node_should_run(ds, n)[0]]
        ru = (((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate")) or {}
        max_surge = scaled_value(ru.get("maxSurge", 0), len(desired), True)
        max_unavailable = scaled_value(ru.get("maxUnavailable", 1), len(desired), True)
        if max_unavailable == 0 and max_surge == 0:
            max_unavailable = 1
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = dt.datetime.now(dt.UTC)
        by_node: dict[str, list[Object]] = {}
        for p in pods:
            if is_pod_active(p) and (t := _target_node(p)) is not None:
                by_node.setdefault(t, []).append(p)

        def is_new(p: Object) -> bool:
            return (p["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) == revision_hash

        if max_surge > 0:
            await self._surge(key, ds, desired, by_node, max_surge, is_new, min_ready, now, revision_hash)
            return
        unavailable = 0
        old_available: list[Object] = []
        doomed: list[Object] = []
        for node in desired:
            here = by_node.get(str(node["metadata"]["name"]), [])
            if not any(is_pod_available(p, min_ready, now) for p in here):
                unavailable += 1
            for p in here:
                if is_new(p):
                    continue
                if is_pod_available(p, min_ready, now):
                    old_available.append(p)
                else:
                    doomed.append(p)  # old and unavailable: replacing it costs nothing
        for p in old_available:
            if unavailable >= max_unavailable:
                break
            doomed.append(p)
            unavailable += 1
        if doomed:
            self.expectations.expect_deletions(key, [pod_key(p) for p in doomed])
            await self._delete(key, ds, doomed)

    async def _surge(
        self, key: str, ds: Object, desired: list[Object], by_node: dict[str, list[Object]], max_surge: int,
        is_new: Callable[[Object], bool], min_ready: int, now: dt.datetime, revision_hash: str,
    ) -> None:  # fmt: skip
        old_to_delete: list[Object] = []
        allowed: list[str] = []  # nodes whose old pod is unavailable: a new one may start at once
        candidates: list[str] = []  # nodes whose old pod is available: a new one within maxSurge
        surging = 0
        for node in desired:
            name = str(node["metadata"]["name"])
            here = by_node.get(name, [])
            new = [p for p in here if is_new(p)]
            old = [p for p in here if not is_new(p)]
            if len(new) > 1 or len(old) > 1:
                surging += 1  # the manage loop tidies this node; count it as surging meanwhile
                continue
            if not old:
                continue  # nothing to replace (a node without a pod is the manage loop's)
            if not new:
                (candidates if is_pod_available(old[0], min_ready, now) else allowed).append(name)
            elif not is_pod_available(new[0], min_ready, now):
                surging += 1  # waiting for the new pod to become available
            else:
                old_to_delete.append(old[0])
        create = allowed + candidates[: max(0, min(max_surge - surging, len(candidates)))]
        await self._sync_nodes(key, ds, old_to_delete, create, revision_hash)

    async def _update_status(self, ds: dict[str, Any], pods: list[Object], revision_hash: str) -> None:
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = dt.datetime.now(dt.UTC)
        by_node: dict[str, list[Object]] = {}
        for p in pods:
            if is_pod_active(p) and (t := _target_node(p)) is not None:
                by_node.setdefault(t, []).append(p)
        desired = current = misscheduled = ready = updated = available = 0
        for node in self.nodes.indexer.list():
            should_run, _ = node_should_run(ds, node)
            here = by_node.get(str(node["metadata"]["name"]), [])
            if should_run:
                desired += 1
                if here:
                    current += 1
                    newest = max(here, key=lambda p: str(p["metadata"].get("creationTimestamp") or ""))
                    if is_pod_ready(newest):
                        ready += 1
                        if is_pod_available(newest, min_ready, now):
                            available += 1
                    if (newest["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) == revision_hash:
                        updated += 1
            elif here:
                misscheduled += 1
        counts = {"currentNumberScheduled": current, "numberMisscheduled": misscheduled,
                  "desiredNumberScheduled": desired, "numberReady": ready, "updatedNumberScheduled": updated,
                  "numberAvailable": available, "numberUnavailable": desired - available}  # fmt: skip
        old = ds.get("status") or {}
        status: dict[str, Any] = {k: v for k, v in old.items() if k in ("collisionCount", "conditions")}
        for k, v in counts.items():
            # As the Go type encodes them: the first four always, the rest only when not zero.
            if v or k in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"):
                status[k] = v
        status["observedGeneration"] = int(ds["metadata"].get("generation") or 0)
        if min_ready > 0 and ready != available:
            # Ready pods become available after minReadySeconds with no event to say so: look again then.
            self.queue.add_after(meta_namespace_key(ds), float(min_ready))
        if status == old:
            return
        ds["status"] = status
        try:
            await self.client.update_status(DAEMONSETS, ds, ds["metadata"]["namespace"])
        except errors.NotFound:
            pass
