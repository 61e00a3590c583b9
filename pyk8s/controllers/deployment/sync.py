"""What every Deployment sync shares (upstream: pkg/controller/deployment/sync.go): finding or creating the new
ReplicaSet (named `<deployment>-<pod-template-hash>`, its revision one above the old ones), resizing ReplicaSets
with the `ScalingReplicaSet` event, proportional scaling when a Deployment is resized mid-rollout, removing old
ReplicaSets beyond `revisionHistoryLimit`, and the status computed from the ReplicaSets.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.meta import json_copy, owner_reference
from . import util
from .util import Object

if TYPE_CHECKING:
    from .deployment_controller import DeploymentController

log = logging.getLogger(__name__)

RS = "replicasets.apps"


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


async def get_all_replica_sets_and_sync_revision(dc: DeploymentController, d: dict[str, Any], rss: list[Object],
                                                 create: bool) -> tuple[Object | None, list[Object]]:  # fmt: skip
    """(the new ReplicaSet, created if `create` and missing; every old one)."""
    _, old = util.find_old_replica_sets(d, rss)
    new = await get_new_replica_set(dc, d, rss, old, create)
    return new, old


async def get_new_replica_set(dc: DeploymentController, d: dict[str, Any], rss: list[Object], old: list[Object],
                              create: bool) -> Object | None:  # fmt: skip
    existing = util.find_new_replica_set(d, rss)
    new_revision = str(util.max_revision(old) + 1)
    spec = d.get("spec") or {}
    md = d["metadata"]
    if existing is not None:
        rs = json_copy(existing)
        changed = util.set_new_replica_set_annotations(d, rs, new_revision, True)
        min_ready = int(spec.get("minReadySeconds") or 0)
        if changed or int(rs["spec"].get("minReadySeconds") or 0) != min_ready:
            rs["spec"]["minReadySeconds"] = min_ready
            return await dc.client.update(RS, rs, md["namespace"])
        needs_update = util.set_deployment_revision(d, util.annotations_of(rs).get(util.REVISION_ANNOTATION, ""))
        status = d.setdefault("status", {})
        if util.has_progress_deadline(d) and util.get_condition(status, "Progressing") is None:
            cond = util.new_condition("Progressing", "True", util.FOUND_NEW_RS,
                                      f'Found new replica set "{rs["metadata"]["name"]}"', now())  # fmt: skip
            util.set_condition(status, cond)
            needs_update = True
        if needs_update:
            await dc.update_status(d)
        return rs
    if not create:
        return None
    template = json_copy(spec.get("template") or {})
    collision_count = (d.get("status") or {}).get("collisionCount")
    pod_hash = util.compute_hash(template, collision_count)
    tmd = template.setdefault("metadata", {})
    tmd["labels"] = {**(tmd.get("labels") or {}), util.POD_TEMPLATE_HASH_LABEL: pod_hash}
    selector = json_copy(spec.get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), util.POD_TEMPLATE_HASH_LABEL: pod_hash}
    name = f"{md['name']}-{pod_hash}"
    new_rs: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": md["namespace"], "ownerReferences": [owner_reference(d)],
                     "labels": dict(tmd["labels"])},
        "spec": {"replicas": 0, "minReadySeconds": int(spec.get("minReadySeconds") or 0), "selector": selector,
                 "template": template},
    }  # fmt: skip
    replicas = util.new_rs_new_replicas(d, [*old, new_rs], new_rs)
    new_rs["spec"]["replicas"] = replicas
    util.set_new_replica_set_annotations(d, new_rs, new_revision, False)
    already_exists = False
    try:
        created: Object = await dc.client.create(RS, new_rs, md["namespace"])
    except errors.AlreadyExists:
        already_exists = True
        found = dc.rss.indexer.get_by_key(f"{md['namespace']}/{name}")
        if found is None:
            raise
        ref = next((r for r in (found.get("metadata") or {}).get("ownerReferences") or () if r.get("controller")), None)
        if (ref is not None and ref.get("uid") == md.get("uid")
                and util.equal_ignore_hash(spec.get("template") or {}, (found.get("spec") or {}).get("template") or {})):  # fmt: skip
            created = found
        else:
            # Another ReplicaSet has that name: a hash collision. The next sync hashes with a higher count.
            status = d.setdefault("status", {})
            status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
            try:
                await dc.update_status(d)
                log.info("deployment %s/%s: hash collision, collisionCount now %d", md["namespace"], md["name"],
                         status["collisionCount"])  # fmt: skip
            except errors.StatusError:
                pass
            raise
    except errors.StatusError as err:
        if errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
            raise
        msg = f'Failed to create new replica set "{name}": {err.message}'
        if util.has_progress_deadline(d):
            status = d.setdefault("status", {})
            util.set_condition(status, util.new_condition("Progressing", "False", util.FAILED_RS_CREATE, msg, now()))
            try:
                await dc.update_status(d)
            except errors.StatusError:
                pass  # the creation failure is the news
        dc.recorder.event(d, "Warning", util.FAILED_RS_CREATE, msg)
        raise
    if not already_exists and replicas > 0:
        dc.recorder.event(d, "Normal", "ScalingReplicaSet",
                          f"Scaled up replica set {created['metadata']['name']} from 0 to {replicas}")  # fmt: skip
    needs_update = util.set_deployment_revision(d, new_revision)
    if not already_exists and util.has_progress_deadline(d):
        status = d.setdefault("status", {})
        cond = util.new_condition("Progressing", "True", util.NEW_REPLICA_SET,
                                  f'Created new replica set "{created["metadata"]["name"]}"', now())  # fmt: skip
        util.set_condition(status, cond)
        needs_update = True
    if needs_update:
        await dc.update_status(d)
    return created


async def scale_replica_set(dc: DeploymentController, rs: Object, new_scale: int, d: Object,
                            operation: str) -> tuple[bool, Object]:  # fmt: skip
    """Resize `rs` (and refresh its desired/max-replicas annotations); the event says from what to what."""
    replicas = util.spec_replicas(d)
    max_replicas = replicas + util.max_surge(d)
    size_changes = util.spec_replicas(rs) != new_scale
    if not size_changes and not util.replicas_annotations_need_update(rs, replicas, max_replicas):
        return False, rs
    old_scale = util.spec_replicas(rs)
    copy = json_copy(rs)
    copy["spec"]["replicas"] = new_scale
    util.set_replicas_annotations(copy, replicas, max_replicas)
    updated = await dc.client.update(RS, copy, copy["metadata"]["namespace"])
    if size_changes:
        verb = "up" if operation == "up" else "down"
        dc.recorder.event(d, "Normal", "ScalingReplicaSet",
                          f"Scaled {verb} replica set {updated['metadata']['name']} from {old_scale} to {new_scale}")  # fmt: skip
    return size_changes, updated


async def scale_and_record(dc: DeploymentController, rs: Object, new_scale: int, d: Object) -> tuple[bool, Object]:
    if util.spec_replicas(rs) == new_scale:
        return False, rs
    return await scale_replica_set(dc, rs, new_scale, d, "up" if util.spec_replicas(rs) < new_scale else "down")


async def scale(dc: DeploymentController, d: Object, new_rs: Object | None, old: list[Object]) -> None:
    """Resize the ReplicaSets to a new `spec.replicas` (upstream: scale): the only active one takes it all; a
    saturated new one leaves the old ones nothing; otherwise, mid-rollout, the change is shared in proportion to
    each ReplicaSet's size, the remainder going to the largest."""
    latest = util.find_active_or_latest(new_rs, old)
    if latest is not None:
        if util.spec_replicas(latest) != util.spec_replicas(d):
            await scale_and_record(dc, latest, util.spec_replicas(d), d)
        return
    if util.is_saturated(d, new_rs):
        for rs in util.active(old):
            await scale_and_record(dc, rs, 0, d)
        return
    if not util.is_rolling_update(d):
        return
    live, sizes, operation = util.proportional_sizes(d, util.active([*old, new_rs]))
    for rs, size in zip(live, sizes, strict=True):
        await scale_replica_set(dc, rs, size, d, operation)


async def cleanup_deployment(dc: DeploymentController, old: list[Object], d: Object) -> None:
    """Delete the oldest revisions beyond revisionHistoryLimit, among the old ReplicaSets that are scaled to zero
    and settled (upstream: cleanupDeployment)."""
    if not util.has_revision_history_limit(d):
        return
    alive = [rs for rs in old if not (rs.get("metadata") or {}).get("deletionTimestamp")]
    diff = len(alive) - int((d.get("spec") or {}).get("revisionHistoryLimit") or 0)
    if diff <= 0:
        return
    for rs in util.by_revision(alive)[:diff]:
        md = rs.get("metadata") or {}
        if (util.status_int(rs, "replicas") != 0 or util.spec_replicas(rs) != 0
                or int(md.get("generation") or 0) > util.status_int(rs, "observedGeneration")):  # fmt: skip
            continue
        try:
            await dc.client.delete(RS, str(md.get("name")), str(md.get("namespace")))
        except errors.NotFound:
            pass


def calculate_status(all_rss: list[Object | None], new_rs: Object | None, d: Object) -> dict[str, Any]:
    """The Deployment's status from its ReplicaSets, with the Available condition (upstream: calculateStatus)."""
    available = util.available_count(all_rss)
    unavailable = max(0, util.replica_count(all_rss) - available)
    old = d.get("status") or {}
    status: dict[str, Any] = {"observedGeneration": int((d.get("metadata") or {}).get("generation") or 0)}
    counts = {"replicas": util.actual_count(all_rss), "updatedReplicas": util.actual_count([new_rs]),
              "readyReplicas": util.ready_count(all_rss), "availableReplicas": available,
              "unavailableReplicas": unavailable}  # fmt: skip
    status.update({k: v for k, v in counts.items() if v})  # the Go types omit zero counts
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if old.get("conditions"):
        status["conditions"] = [dict(c) for c in old["conditions"]]
    if available >= util.spec_replicas(d) - util.max_unavailable(d):
        cond = util.new_condition("Available", "True", util.MINIMUM_REPLICAS_AVAILABLE,
                                  "Deployment has minimum availability.", now())  # fmt: skip
    else:
        cond = util.new_condition("Available", "False", util.MINIMUM_REPLICAS_UNAVAILABLE,
                                  "Deployment does not have minimum availability.", now())  # fmt: skip
    util.set_condition(status, cond)
    return status


async def sync_deployment_status(dc: DeploymentController, all_rss: list[Object | None], new_rs: Object | None,
                                 d: dict[str, Any]) -> None:  # fmt: skip
    status = calculate_status(all_rss, new_rs, d)
    if status == (d.get("status") or {}):
        return
    d["status"] = status
    await dc.update_status(d)


async def sync(dc: DeploymentController, d: dict[str, Any], rss: list[Object]) -> None:
    """A paused Deployment, or one being resized: scale, clean up old revisions when paused, and report status
    (upstream: sync)."""
    new_rs, old = await get_all_replica_sets_and_sync_revision(dc, d, rss, False)
    await scale(dc, d, new_rs, old)
    if (d.get("spec") or {}).get("paused"):
        await cleanup_deployment(dc, old, d)
    await sync_deployment_status(dc, [*old, new_rs], new_rs, d)


async def is_scaling_event(dc: DeploymentController, d: dict[str, Any], rss: list[Object]) -> bool:
    """Whether an active ReplicaSet was sized for another `spec.replicas` (its desired-replicas annotation)."""
    new_rs, old = await get_all_replica_sets_and_sync_revision(dc, d, rss, False)
    for rs in util.active([*old, new_rs]):
        raw = util.annotations_of(rs).get(util.DESIRED_REPLICAS_ANNOTATION)
        if raw is None:
            continue
        try:
            if int(raw) != util.spec_replicas(d):
                return True
        except ValueError:
            continue
    return False
